"""What the views of :class:`AttentionData` by kind share (grid, head detail, lines).

- :class:`AttentionSetsMixin`: the shown data, over ``self._datasets`` (kind → data) and
  ``self._kind``;
- :class:`ExportAllHeadsMixin`: the "Export all heads…" context-menu entry.
"""

from __future__ import annotations

from PySide6 import QtWidgets

from attnviz.qt.views.data import AttentionData


class AttentionSetsMixin:
    """``has_data``, ``data`` and ``kind`` for a view holding ``_datasets`` and ``_kind``."""

    _datasets: dict[str, AttentionData]
    _kind: str | None

    def has_data(self) -> bool:
        return bool(self._datasets)

    def data(self) -> AttentionData | None:
        return self._datasets.get(self._kind) if self._kind else None

    def kind(self) -> str | None:
        return self._kind

    def _require_kind(self, kind: str) -> None:
        """Raise ``ValueError`` unless ``kind`` was given to this view."""
        if kind not in self._datasets:
            raise ValueError(f"no {kind!r} attention was given to this view")


class ExportAllHeadsMixin:
    """Adds "Export all heads…" (one figure per layer and head of :meth:`data`) to the context menu."""

    def _extend_context_menu(self, menu: QtWidgets.QMenu) -> None:
        act = menu.addAction("Export all heads…")
        act.setObjectName("exportAllHeadsAction")
        act.setStatusTip("Write one figure per layer and head")
        act.setEnabled(self.has_data())
        act.triggered.connect(self._export_all_heads_dialog)

    def _export_all_heads_dialog(self) -> None:
        from attnviz.qt.export.dialogs import export_all_heads_dialog

        d = self.data()
        if d is not None:
            export_all_heads_dialog(self, d, theme=self.theme, colormap=self._colormap)
