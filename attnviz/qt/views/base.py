"""What every view shares: a controls row, a pyqtgraph canvas, a readout line, theme/colour-map
settings and the "Export figure…" / "Export data…" context menu (:class:`FigureViewBase`); and
what the views of :class:`AttentionData` by kind share (grid, head detail, lines):

- :class:`AttentionSetsMixin`: the shown data, over ``_datasets`` (kind → data) and ``_kind``;
- :class:`ExportAllHeadsMixin`: the "Export all heads…" context-menu entry.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.qt.export.files import HeadFigure, HeadFigureFactory
from attnviz.qt.views.data import AttentionData, FigureData
from attnviz.qt.widgets.colormaps import Theme, get_theme, ui_font
from attnviz.qt.widgets.plain_text import plain_label


class FigureViewBase(QtWidgets.QWidget):
    """Base of the views: ``controls`` (a row of selectors) above ``canvas`` (the figure),
    ``readout`` (value under the mouse) below.

    Subclasses fill the canvas once in ``__init__`` and implement ``figure_title`` and
    ``figure_data``; ``transient_items`` lists items hidden while exporting.
    """

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent)
        self.theme = get_theme(theme)
        self._colormap: str | None = None  # None: the theme's default
        self.controls = QtWidgets.QHBoxLayout()
        self.controls.setContentsMargins(6, 4, 6, 0)
        self.controls.setSpacing(6)
        self.canvas = pg.GraphicsLayoutWidget()
        self.canvas.setObjectName("figureCanvas")
        self.canvas.ci.layout.setContentsMargins(6, 6, 6, 6)
        self.canvas.setMinimumSize(160, 120)
        self.canvas.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.readout = plain_label(" ", "readout")  # shows token pieces
        self.readout.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readout.setFont(ui_font(9))
        self.readout.setContentsMargins(8, 2, 8, 4)
        self.readout.setMinimumWidth(10)
        self.readout.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(self.controls)
        layout.addWidget(self.canvas, 1)
        layout.addWidget(self.readout)
        self.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.DefaultContextMenu)
        self._apply_canvas_theme()

    # helpers for subclasses ----------------------------------------------------
    def _add_control(self, label: str, widget: QtWidgets.QWidget) -> QtWidgets.QWidget:
        if label:
            lab = QtWidgets.QLabel(label)
            lab.setBuddy(widget)
            self.controls.addWidget(lab)
        self.controls.addWidget(widget)
        return widget

    def _apply_canvas_theme(self) -> None:
        self.canvas.setBackground(self.theme.background)
        self.readout.setStyleSheet(f"color: {self.theme.muted};")

    # settings ------------------------------------------------------------------
    def set_theme(self, theme: Theme | str) -> None:
        """Switch light/dark (``"light"``, ``"dark"`` or a ``Theme``)."""
        self.theme = get_theme(theme)
        self._apply_canvas_theme()
        self._on_theme_changed()

    def _on_theme_changed(self) -> None:
        """Subclasses re-style their items."""

    def colormap(self) -> str:
        return self._colormap or self.theme.colormap

    def set_colormap(self, name: str) -> None:
        """The sequential colour map for weights (see ``colormaps.SEQUENTIAL_COLORMAPS``)."""
        self._colormap = name
        self._on_colormap_changed()

    def _on_colormap_changed(self) -> None:
        """Subclasses apply ``self.colormap()``."""

    # figure protocol ------------------------------------------------------------
    def figure_canvas(self) -> QtWidgets.QGraphicsView:
        return self.canvas

    def figure_title(self) -> str:
        raise NotImplementedError

    def figure_data(self) -> FigureData:
        raise NotImplementedError

    def transient_items(self) -> list[QtWidgets.QGraphicsItem]:
        return []

    @contextlib.contextmanager
    def export_mode(self) -> Iterator[None]:
        items = [i for i in self.transient_items() if i is not None]
        states = [(i, i.isVisible()) for i in items]
        for i in items:
            i.setVisible(False)
        try:
            yield
        finally:
            for i, visible in states:
                i.setVisible(visible)

    def has_data(self) -> bool:
        raise NotImplementedError

    # context menu -----------------------------------------------------------------
    def build_context_menu(self) -> QtWidgets.QMenu:
        """The view's context menu ("Export figure…", "Export data…", and any extras)."""
        menu = QtWidgets.QMenu(self)
        fig = menu.addAction("Export figure…  导出图像")
        fig.setObjectName("exportFigureAction")
        fig.setStatusTip("Save this view as PNG, SVG or PDF")
        fig.triggered.connect(self.export_figure_dialog)
        data = menu.addAction("Export data…  导出数据")
        data.setObjectName("exportDataAction")
        data.setStatusTip("Save the numbers behind this view as CSV or NPZ")
        data.triggered.connect(self.export_data_dialog)
        enabled = self.has_data()
        fig.setEnabled(enabled)
        data.setEnabled(enabled)
        self._extend_context_menu(menu)
        return menu

    def _extend_context_menu(self, menu: QtWidgets.QMenu) -> None:
        """Subclasses add entries."""

    def contextMenuEvent(self, event: QtGui.QContextMenuEvent) -> None:
        menu = self.build_context_menu()
        menu.setObjectName("figureContextMenu")
        menu.aboutToHide.connect(menu.deleteLater)
        menu.popup(event.globalPos())
        event.accept()

    def export_figure_dialog(self) -> None:
        from attnviz.qt.export.dialogs import export_figure_dialog

        export_figure_dialog(self, self)

    def export_data_dialog(self) -> None:
        from attnviz.qt.export.dialogs import export_data_dialog

        export_data_dialog(self, self)


def make_combo(object_name: str, tooltip: str) -> QtWidgets.QComboBox:
    combo = QtWidgets.QComboBox()
    combo.setObjectName(object_name)
    combo.setToolTip(tooltip)
    combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
    return combo


def set_combo_items(combo: QtWidgets.QComboBox, items: list[tuple[str, object]], current_data: object) -> None:
    """Replace a combo's items only when they differ; keep ``current_data`` selected. No signals."""
    existing = [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())]
    blocked = combo.blockSignals(True)
    try:
        if existing != items:
            combo.clear()
            for text, data in items:
                combo.addItem(text, data)
        idx = combo.findData(current_data)
        combo.setCurrentIndex(idx if idx >= 0 else 0)
    finally:
        combo.blockSignals(blocked)


class AttentionSetsMixin:
    """``has_data``, ``data`` and ``kind`` of a view of attention by kind. The state is the
    mixin's own: ``_datasets`` (kind → data, in ``KINDS`` order) and ``_kind`` (the one shown),
    which its hosts set in ``__init__`` and ``set_data``."""

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
    """Adds "Export all heads…" (one figure per layer and head of :meth:`data`) to the context menu.

    Each head is drawn by a view ``head_figure`` builds (the registry gives the head-detail view's
    class); a view that draws one head itself draws them with its own class when none is given.
    """

    head_figure: HeadFigureFactory | None = None

    def all_heads_figure(self) -> HeadFigureFactory | None:
        """What draws each head of "Export all heads…"; ``None``: nothing can."""
        if self.head_figure is not None:
            return self.head_figure
        return type(self) if isinstance(self, HeadFigure) else None

    def _extend_context_menu(self, menu: QtWidgets.QMenu) -> None:
        act = menu.addAction("Export all heads…")
        act.setObjectName("exportAllHeadsAction")
        act.setStatusTip("Write one figure per layer and head")
        act.setEnabled(self.has_data() and self.all_heads_figure() is not None)
        act.triggered.connect(self.export_all_heads_dialog)

    def export_all_heads_dialog(self) -> None:
        from attnviz.qt.export.dialogs import export_all_heads_dialog

        d, make_view = self.data(), self.all_heads_figure()
        if d is not None and make_view is not None:
            export_all_heads_dialog(self, make_view, d, theme=self.theme, colormap=self.colormap())
