"""An axis whose ticks are token pieces (used by the heatmaps and the attention grid).

Labels never overlap: elided on the left, vertical on the top or bottom when the cells are
narrow; the current step's label is drawn bold in the theme's highlight colour. Pieces are shown
with :func:`attnviz.core.data.pieces.display_piece` (the word-start mark as ``␣``), and the pieces
of one word are joined by a light bracket between the ticks and the labels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnviz.core.data.pieces import display_pieces, word_spans
from attnviz.qt.widgets.colormaps import Theme, ui_font

_ALIGN = QtCore.Qt.AlignmentFlag
_RIGHT_VCENTER = int(_ALIGN.AlignRight | _ALIGN.AlignVCenter)
_LEFT_VCENTER = int(_ALIGN.AlignLeft | _ALIGN.AlignVCenter)
_HCENTER_BOTTOM = int(_ALIGN.AlignHCenter | _ALIGN.AlignBottom)
_HCENTER_TOP = int(_ALIGN.AlignHCenter | _ALIGN.AlignTop)


# ---------------------------------------------------------------------------
# Axis with token pieces
# ---------------------------------------------------------------------------
class TokenAxis(pg.AxisItem):
    """An axis whose ticks are token pieces at integer positions.

    Labels never overlap: on the left they are elided to a maximum width; on the top or
    bottom they turn vertical when the cells are narrower than the widest label. The
    highlighted index (the current step) is drawn bold in the theme's highlight colour.
    """

    MAX_EXTENT = 130.0  # px: longest label before eliding
    _GAP = 4.0

    _ready = False  # the base constructor calls resizeEvent before ours has run

    def __init__(self, orientation: str, theme: Theme, point_size: float = 9.0):
        super().__init__(orientation)
        self._theme = theme
        self._font = ui_font(point_size)
        self._bold = ui_font(point_size, bold=True)
        self._labels: tuple[str, ...] = ()
        self._shown: tuple[str, ...] = ()  # the labels as drawn (display_piece)
        self._words: list[tuple[int, int]] = []  # [start, stop) of the words of several pieces
        self._highlight: int | None = None
        self._rotated = False
        self._show_labels = True
        self._show_line = True
        self._elided: dict[tuple[str, bool], str] = {}
        self.setStyle(tickLength=-4, tickTextOffset=3, autoExpandTextSpace=False, showValues=True)
        self.setStyle(tickFont=self._font)
        self.enableAutoSIPrefix(False)  # token positions have no units; avoids relabelling on every range change
        self._ready = True
        self.apply_theme(theme)

    # public -----------------------------------------------------------------
    def set_line_visible(self, visible: bool) -> None:
        """Show or hide the axis line and its tick marks (the labels stay)."""
        self._show_line = visible
        self.apply_theme(self._theme)

    def apply_theme(self, theme: Theme) -> None:
        self._theme = theme
        self.setPen(pg.mkPen(theme.muted if self._show_line else None, width=1))
        self.setTextPen(pg.mkPen(theme.foreground))
        if self.label is not None:
            self.label.setDefaultTextColor(QtGui.QColor(theme.muted))
        self.picture = None
        self.update()

    def set_title(self, text: str) -> None:
        """The axis title, e.g. "queries (rows)"."""
        if getattr(self, "_title_text", None) == text:
            return
        self._title_text = text
        self.setLabel(text)
        self.label.setFont(ui_font(8.5))
        self.label.setDefaultTextColor(QtGui.QColor(self._theme.muted))
        self._fit()

    def set_labels(self, labels: Sequence[str], highlight: int | None = None) -> None:
        labels = tuple(labels)
        if labels == self._labels and highlight == self._highlight:
            return
        changed = labels != self._labels
        self._labels = labels
        self._shown = display_pieces(labels)
        self._words = word_spans(labels)
        self._highlight = highlight
        if changed:
            if len(self._elided) > 2048:
                self._elided.clear()
            self.setTicks([[(float(i), "") for i in range(len(labels))], []])
            self._fit()
        self.picture = None
        self.update()

    def set_labels_visible(self, visible: bool) -> None:
        self._show_labels = visible
        self._fit()
        self.picture = None
        self.update()

    def labels(self) -> tuple[str, ...]:
        """The pieces given (sentencepiece's form)."""
        return self._labels

    def shown_labels(self) -> tuple[str, ...]:
        """The labels as drawn: each piece through ``display_piece``."""
        return self._shown

    def word_groups(self) -> list[tuple[int, int]]:
        """``[start, stop)`` of each word of several pieces, joined by a bracket on the axis."""
        return list(self._words)

    def highlight(self) -> int | None:
        """The index of the label drawn in bold (the current step), if any."""
        return self._highlight

    @property
    def rotated(self) -> bool:
        return self._rotated

    # geometry ---------------------------------------------------------------
    def _horizontal(self) -> bool:
        return self.orientation in ("top", "bottom")

    def _label_extent(self) -> float:
        if not self._labels or not self._show_labels:
            return 0.0
        fm = QtGui.QFontMetricsF(self._bold)
        return min(max(fm.horizontalAdvance(s) for s in self._shown), self.MAX_EXTENT)

    def _title_extent(self) -> float:
        if self.label is None or not self.label.isVisible():
            return 0.0
        return self.label.boundingRect().height() * 0.85

    def _positions(self) -> np.ndarray | None:
        """Each label's coordinate along the axis, in this item's coordinates (one mapping, then affine)."""
        vb = self.linkedView()
        if vb is None or not self._labels:
            return None
        a = self.mapFromScene(vb.mapViewToScene(QtCore.QPointF(0.0, 0.0)))
        b = self.mapFromScene(vb.mapViewToScene(QtCore.QPointF(1.0, 1.0)))
        if self._horizontal():
            start, step = a.x(), b.x() - a.x()
        else:
            start, step = a.y(), b.y() - a.y()
        return start + step * np.arange(len(self._labels), dtype=np.float64)

    def _pitch(self) -> float:
        """Pixels between neighbouring ticks along the axis."""
        vb = self.linkedView()
        if vb is None or len(self._labels) < 2:
            return float("inf")
        a = self.mapFromScene(vb.mapViewToScene(QtCore.QPointF(0.0, 0.0)))
        b = self.mapFromScene(vb.mapViewToScene(QtCore.QPointF(1.0, 1.0)))
        return abs(b.x() - a.x()) if self._horizontal() else abs(b.y() - a.y())

    def label_step(self) -> int:
        """Draw every n-th label when the cells are shorter than a line of text."""
        if self._horizontal() and not self._rotated:
            return 1
        pitch = self._pitch()
        line_h = QtGui.QFontMetricsF(self._bold).height() * 0.9
        if not math.isfinite(pitch) or pitch <= 0 or pitch >= line_h:
            return 1
        return int(math.ceil(line_h / pitch))

    def _fit(self) -> None:
        extent = self._label_extent()
        ticks = 4.0 + 5.0
        if self._horizontal():
            fm = QtGui.QFontMetricsF(self._bold)
            rotated = self._show_labels and extent + self._GAP > self._pitch()
            self._rotated = bool(rotated)
            text = (extent if rotated else fm.height()) if self._show_labels and self._labels else 0.0
            h = math.ceil(text + ticks + self._title_extent() + 2)
            if abs(self.height() - h) > 0.5 or self.fixedHeight != h:
                self.setHeight(h)
        else:
            w = math.ceil(extent + ticks + self._title_extent() + 2)
            if self.fixedWidth != w:
                self.setWidth(w)
        self.picture = None

    def resizeEvent(self, ev=None):
        super().resizeEvent(ev)
        if self._ready and self._horizontal():
            self._fit()

    def linkedViewChanged(self, view, newRange=None):
        super().linkedViewChanged(view, newRange)
        if self._ready and self._horizontal():
            rotated = self._rotated
            self._fit()
            if rotated != self._rotated:
                self.picture = None
                self.update()

    # painting ---------------------------------------------------------------
    def generateDrawSpecs(self, p):
        """Only the axis line and one tick per token (labels are drawn in ``paint``)."""
        bounds = self.mapRectFromParent(self.geometry())
        pen = self.pen()
        o = self.orientation
        edge = {"left": bounds.right(), "right": bounds.left(), "top": bounds.bottom(), "bottom": bounds.top()}[o]
        out = {"left": -1.0, "right": 1.0, "top": -1.0, "bottom": 1.0}[o] * 4.0
        if self._horizontal():
            axis = (pen, pg.Point(bounds.left(), edge), pg.Point(bounds.right(), edge))
        else:
            axis = (pen, pg.Point(edge, bounds.top()), pg.Point(edge, bounds.bottom()))
        ticks = []
        positions = self._positions() if self._show_line else None
        if positions is not None:
            if self._horizontal():
                lo, hi = bounds.left() - 0.5, bounds.right() + 0.5
                ticks = [(pen, pg.Point(x, edge), pg.Point(x, edge + out)) for x in positions.tolist() if lo <= x <= hi]
            else:
                lo, hi = bounds.top() - 0.5, bounds.bottom() + 0.5
                ticks = [(pen, pg.Point(edge, y), pg.Point(edge + out, y)) for y in positions.tolist() if lo <= y <= hi]
        return axis, ticks, []

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs):
        """Axis line, ticks and the token labels, recorded once into pyqtgraph's cached picture
        (re-recorded when the labels, the highlight or the view range change)."""
        super().drawPicture(p, axisSpec, tickSpecs, textSpecs)
        p.setClipping(False)
        self._draw_word_groups(p)
        self._draw_labels(p)

    def _draw_word_groups(self, p) -> None:
        """A light bar across the pieces of each word, between the ticks and the labels."""
        positions = self._positions() if self._words and self._show_labels else None
        if positions is None:
            return
        pitch = self._pitch()
        half = 0.42 * pitch if math.isfinite(pitch) else 4.0
        bounds = self.boundingRect()
        inset = 6.5  # px from the plot's edge: past the 4 px ticks, before the labels at 9 px
        color = QtGui.QColor(self._theme.muted)
        color.setAlpha(150)
        pen = QtGui.QPen(color, 2.0)
        pen.setCapStyle(QtCore.Qt.PenCapStyle.FlatCap)
        p.save()
        p.setPen(pen)
        edge = {"left": bounds.right() - inset, "right": bounds.left() + inset,
                "top": bounds.bottom() - inset, "bottom": bounds.top() + inset}[self.orientation]
        for start, stop in self._words:
            a, b = positions[start], positions[stop - 1]
            lo, hi = min(a, b) - half, max(a, b) + half
            if self._horizontal():
                p.drawLine(QtCore.QPointF(lo, edge), QtCore.QPointF(hi, edge))
            else:
                p.drawLine(QtCore.QPointF(edge, lo), QtCore.QPointF(edge, hi))
        p.restore()

    def _draw_labels(self, p) -> None:
        vb = self.linkedView()
        if vb is None or not self._labels or not self._show_labels:
            return
        p.save()
        p.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        fm = QtGui.QFontMetricsF(self._bold)
        line_h = fm.height()
        offset = 4.0 + 5.0
        bounds = self.boundingRect()
        text_pen = QtGui.QPen(QtGui.QColor(self._theme.foreground))
        hi_pen = QtGui.QPen(QtGui.QColor(self._theme.highlight))
        step = self.label_step()
        positions = self._positions().tolist()
        for i, label in enumerate(self._shown):
            if i % step and i != self._highlight:
                continue
            pos = QtCore.QPointF(positions[i], positions[i])
            bold = i == self._highlight
            p.setFont(self._bold if bold else self._font)
            p.setPen(hi_pen if bold else text_pen)
            text = self._elided.get((label, bold))
            if text is None:
                fm_label = QtGui.QFontMetricsF(self._bold if bold else self._font)
                text = self._elided[(label, bold)] = fm_label.elidedText(label, QtCore.Qt.TextElideMode.ElideRight, self.MAX_EXTENT)
            if self.orientation == "left":
                y = pos.y()
                if y < bounds.top() - 1 or y > bounds.bottom() + 1:
                    continue
                right = bounds.right() - offset
                rect = QtCore.QRectF(right - self.MAX_EXTENT, y - line_h / 2, self.MAX_EXTENT, line_h)
                p.drawText(rect, _RIGHT_VCENTER, text)
            elif self.orientation == "right":
                y = pos.y()
                if y < bounds.top() - 1 or y > bounds.bottom() + 1:
                    continue
                rect = QtCore.QRectF(bounds.left() + offset, y - line_h / 2, self.MAX_EXTENT, line_h)
                p.drawText(rect, _LEFT_VCENTER, text)
            else:
                x = pos.x()
                if x < bounds.left() - 1 or x > bounds.right() + 1:
                    continue
                top = self.orientation == "top"
                edge = bounds.bottom() - offset if top else bounds.top() + offset
                if self._rotated:
                    p.save()
                    p.translate(x, edge)
                    p.rotate(-90)
                    if top:  # text runs upwards from just above the axis
                        rect = QtCore.QRectF(0, -line_h / 2, self.MAX_EXTENT, line_h)
                        flags = _LEFT_VCENTER
                    else:  # text ends just below the axis
                        rect = QtCore.QRectF(-self.MAX_EXTENT, -line_h / 2, self.MAX_EXTENT, line_h)
                        flags = _RIGHT_VCENTER
                    p.drawText(rect, flags, text)
                    p.restore()
                else:
                    w = self.MAX_EXTENT
                    y = edge - line_h if top else edge
                    flags = _HCENTER_BOTTOM if top else _HCENTER_TOP
                    p.drawText(QtCore.QRectF(x - w / 2, y, w, line_h), flags, text)
        p.restore()
