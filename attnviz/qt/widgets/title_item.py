"""Figure titles that never widen the layout (a long title wraps, or clips where it cannot)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from attnviz.qt.widgets.colormaps import Theme

# ---------------------------------------------------------------------------
# Titles
# ---------------------------------------------------------------------------
LegendEntry = tuple[str, str, str]  # (mark, colour, text), e.g. ("▭", "#e8590c", "current step"); "" mark: text only


class TitleItem(pg.LabelItem):
    """A figure title (bold) with an optional formula line and a legend line (each highlight's
    mark in its colour, and what it means); never widens the layout, clips instead."""

    def __init__(self, theme: Theme):
        super().__init__(justify="left")
        self.theme = theme
        self._title = ""
        self._formula = ""
        self._legend: tuple[LegendEntry, ...] = ()
        self.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape, True)

    def set_title(self, title: str, formula: str = "", *, force: bool = False) -> None:
        if (title, formula) == (self._title, self._formula) and not force:
            return
        self._title, self._formula = title, formula
        self._render()

    def set_legend(self, entries: tuple[LegendEntry, ...]) -> None:
        """The legend line under the formula (``()``: none)."""
        entries = tuple(entries)
        if entries != self._legend:
            self._legend = entries
            self._render()

    def legend(self) -> tuple[LegendEntry, ...]:
        return self._legend

    def _render(self) -> None:
        fg, muted = self.theme.foreground, self.theme.muted
        html = f"<span style='font-size:11pt; font-weight:600; color:{fg}'>{_html(self._title)}</span>"
        if self._formula:
            html += f"<br><span style='font-size:9pt; color:{muted}'>{_html(self._formula)}</span>"
        if self._legend:
            parts = [
                (f"<span style='color:{colour or fg}; font-weight:600'>{_html(mark)}</span> " if mark else "") + _html(text)
                for mark, colour, text in self._legend
            ]
            html += f"<br><span style='font-size:8.5pt; color:{muted}'>{'&nbsp;&nbsp;&nbsp;'.join(parts)}</span>"
        self.setText(html)

    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._render()

    def text_rect(self) -> QtCore.QRectF:
        """Where the text is, in this item's coordinates (as wide as its longest line)."""
        rect = self.itemRect()
        rect.setWidth(min(rect.width(), self.item.document().idealWidth()))
        return rect

    def plain_text(self) -> str:
        text = self._title + (f" — {self._formula}" if self._formula else "")
        return text + "".join(f"  {mark} {what}".rstrip() if mark else f"  {what}" for mark, _, what in self._legend)

    def updateMin(self):
        relaxed_update_min(self)

    def resizeEvent(self, ev):
        """Wrap the text at the width the layout gives (a narrow view gets more lines, not a clipped title)."""
        width = self.size().width()
        if width > 40 and abs(self.item.textWidth() - width) > 0.5:
            self.item.setTextWidth(width)
            if abs(self.itemRect().height() - self.minimumHeight()) > 0.5:
                self.updateMin()  # more (or fewer) lines: the layout gives the title their height
        super().resizeEvent(ev)


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
