"""Figure titles that never widen the layout (a long title clips instead)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from attnviz.qt.widgets.colormaps import Theme


# ---------------------------------------------------------------------------
# Titles
# ---------------------------------------------------------------------------
class TitleItem(pg.LabelItem):
    """A figure title (bold) with an optional formula line; never widens the layout, clips instead."""

    def __init__(self, theme: Theme):
        super().__init__(justify="left")
        self.theme = theme
        self._title = ""
        self._formula = ""
        self.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape, True)

    def set_title(self, title: str, formula: str = "", *, force: bool = False) -> None:
        if (title, formula) == (self._title, self._formula) and not force:
            return
        self._title, self._formula = title, formula
        fg, muted = self.theme.foreground, self.theme.muted
        html = f"<span style='font-size:11pt; font-weight:600; color:{fg}'>{_html(title)}</span>"
        if formula:
            html += f"<br><span style='font-size:9pt; color:{muted}'>{_html(formula)}</span>"
        self.setText(html)

    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.set_title(self._title, self._formula, force=True)

    def plain_text(self) -> str:
        return self._title + (f" — {self._formula}" if self._formula else "")

    def updateMin(self):
        relaxed_update_min(self)


def relaxed_update_min(label: pg.LabelItem) -> None:
    """``LabelItem.updateMin`` without a minimum width: a long title clips, the layout keeps its size."""
    h = label.itemRect().height()
    label.setMinimumWidth(0)
    label.setMinimumHeight(h)
    label._sizeHint = {
        QtCore.Qt.SizeHint.MinimumSize: (0, h),
        QtCore.Qt.SizeHint.PreferredSize: (0, h),
        QtCore.Qt.SizeHint.MaximumSize: (-1, -1),
        QtCore.Qt.SizeHint.MinimumDescent: (0, 0),
    }
    label.updateGeometry()


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
