"""An axis whose ticks are token pieces (used by the heatmaps and the attention grid).

Labels never overlap: elided on the left, vertical on the top or bottom when the cells are
narrow, and only every k-th drawn when the cells are narrower than a line of text (a long input;
the read-outs under the mouse name every piece); the current step's label is drawn bold in the
theme's highlight colour, in place of its neighbours less than k away. Pieces are shown
with :func:`attnviz.core.data.pieces.display_piece` (the word-start mark as ``␣``), and the pieces
of one word are joined by a light bracket between the ticks and the labels.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnviz.core.data.pieces import display_pieces, word_spans
from attnviz.qt.widgets.colormaps import Theme, ui_font

_ALIGN = QtCore.Qt.AlignmentFlag
_CENTER = int(_ALIGN.AlignCenter)


def readable(label: str) -> str:
    """A label of one or two narrow punctuation marks (``.``, ``'``, ``,``: a dot of 2 px on
    their own) between ‹ › so it reads as a token; any other label as it is."""
    narrow = 0 < len(label) <= 2 and all(unicodedata.category(c)[0] == "P" and unicodedata.east_asian_width(c) in "NaH" for c in label)
    return f"‹{label}›" if narrow else label


def labels_every(pitch: float, line_h: float) -> int:
    """Every how many rows ``pitch`` pixels apart a label ``line_h`` tall can be drawn (labels 0.95
    of a line apart: the boxes' edges may touch, their letters do not)."""
    need = 0.95 * line_h
    if not math.isfinite(pitch) or pitch <= 0 or pitch >= need:
        return 1
    return int(math.ceil(need / pitch))


def thinned(n: int, step: int, keep: Sequence[int] = ()) -> list[int]:
    """The indices of ``n`` labels drawn when only every ``step``-th fits: those, and the ones in
    ``keep`` (the current step, a focused token) in place of the others less than a step from them."""
    if step <= 1:
        return list(range(n))
    keep = sorted({i for i in keep if 0 <= i < n})
    out = [i for i in range(0, n, step) if all(abs(i - j) >= step for j in keep)]
    return sorted(out + keep)


MIN_TICK_GAP = 3.0  # px between the tick marks drawn (the ticks of narrower cells are thinned out)


def ticks_every(pitch: float) -> int:
    """Draw every n-th tick of ticks ``pitch`` px apart: ticks closer than :data:`MIN_TICK_GAP`
    read as one bar and cost a line each (an FFN's thousands of units)."""
    return max(1, math.ceil(MIN_TICK_GAP / pitch)) if pitch > 0 and math.isfinite(pitch) else 1


UNROTATE_ROOM = 1.5  # vertical labels turn back only where the ticks are this many times as far apart as a label needs


def labels_rotated(rotated: bool, need: float, pitch: float) -> bool:
    """Whether labels that need ``need`` px each along the axis are drawn vertically, ``pitch``
    px apart, when they are ``rotated`` now. Vertical labels turn back only with room to spare:
    turning them changes the axis's height, and in a plot of square cells the pitch with it, so
    one threshold would flip them on every layout (a paint that never ends)."""
    return need > pitch if not rotated else need * UNROTATE_ROOM > pitch


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
        self._extent: float | None = None  # the widest label's width (_label_extent)
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
            self._extent = None
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
        """The widest label's width, up to ``MAX_EXTENT`` (measured once per set of labels)."""
        if not self._labels or not self._show_labels:
            return 0.0
        if self._extent is None:
            fm = QtGui.QFontMetricsF(self._bold)
            self._extent = min(max(fm.horizontalAdvance(s) for s in self._shown), self.MAX_EXTENT)
        return self._extent

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
        return labels_every(self._pitch(), QtGui.QFontMetricsF(self._bold).height())

    def _fit(self) -> None:
        extent = self._label_extent()
        ticks = 4.0 + 5.0
        if self._horizontal():
            fm = QtGui.QFontMetricsF(self._bold)
            rotated = self._show_labels and labels_rotated(self._rotated, extent + self._GAP, self._pitch())
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
            positions = positions[::ticks_every(self._pitch())]
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
        places = self._placements()
        if not places:
            return
        p.save()
        p.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        text_pen = QtGui.QPen(QtGui.QColor(self._theme.foreground))
        hi_pen = QtGui.QPen(QtGui.QColor(self._theme.highlight))
        top = self.orientation == "top"
        for text, bold, box in places:
            p.setFont(self._bold if bold else self._font)
            p.setPen(hi_pen if bold else text_pen)
            if not self._rotated or not self._horizontal():
                p.drawText(box, _CENTER, text)
                continue
            p.save()  # text runs upwards, from just above a top axis or ending just below a bottom one
            p.translate(box.center().x(), box.bottom() if top else box.top())
            p.rotate(-90)
            length, line_h = box.height(), box.width()
            p.drawText(QtCore.QRectF(0 if top else -length, -line_h / 2, length, line_h), _CENTER, text)
            p.restore()
        p.restore()

    # which labels, where ----------------------------------------------------------
    def shown_indices(self) -> list[int]:
        """The labels drawn when every one does not fit: every ``label_step()``-th, and the
        highlighted one in place of those less than a step from it (so none overlaps it)."""
        return thinned(len(self._shown), self.label_step(), () if self._highlight is None else (self._highlight,))

    def _text(self, index: int, bold: bool) -> str:
        """Label ``index`` as drawn: punctuation marked (:func:`readable`), elided to ``MAX_EXTENT``."""
        label = readable(self._shown[index])
        text = self._elided.get((label, bold))
        if text is None:
            fm = QtGui.QFontMetricsF(self._bold if bold else self._font)
            text = self._elided[(label, bold)] = fm.elidedText(label, QtCore.Qt.TextElideMode.ElideRight, self.MAX_EXTENT)
        return text

    def _placements(self) -> list[tuple[str, bool, QtCore.QRectF]]:
        """(text, bold, box in this item's coordinates) of each label drawn; a rotated label's box
        is the rotated text's. Labels outside the axis (a zoomed view) are left out, and so are
        those that would stick out past its ends into a neighbour's (the current step's is moved in
        instead, and the labels it then covers are left out)."""
        positions = self._positions() if self._show_labels and self.linkedView() is not None else None
        if positions is None:
            return []
        bounds = self.boundingRect()
        line_h = QtGui.QFontMetricsF(self._bold).height()
        out = []
        for i in self.shown_indices():
            bold = i == self._highlight
            text = self._text(i, bold)
            width = QtGui.QFontMetricsF(self._bold if bold else self._font).horizontalAdvance(text)
            box = self._label_box(float(positions[i]), width, line_h, bounds)
            box = box if box is None else self._inside(box, bounds, line_h / 4, move=bold)
            if box is not None:
                out.append((text, bold, box))
        kept = [box for _, bold, box in out if bold]
        return [(t, bold, box) for t, bold, box in out if bold or not any(box.intersects(k.adjusted(1, 1, -1, -1)) for k in kept)]

    def _inside(self, box: QtCore.QRectF, bounds: QtCore.QRectF, room: float, move: bool) -> QtCore.QRectF | None:
        """``box`` if it sticks out past the axis's ends by at most ``room``; else moved in (``move``) or ``None``."""
        lo, hi = (bounds.left(), bounds.right()) if self._horizontal() else (bounds.top(), bounds.bottom())
        start, end = (box.left(), box.right()) if self._horizontal() else (box.top(), box.bottom())
        shift = max(lo - room - start, 0.0) + min(hi + room - end, 0.0)
        if not shift:
            return box
        if not move:
            return None
        return box.translated(shift, 0.0) if self._horizontal() else box.translated(0.0, shift)

    def _label_box(self, pos: float, width: float, line_h: float, bounds: QtCore.QRectF) -> QtCore.QRectF | None:
        """The box of a label ``width`` wide centred on ``pos`` along the axis, 9 px from the plot."""
        offset = 4.0 + 5.0
        if not self._horizontal():
            if pos < bounds.top() - 1 or pos > bounds.bottom() + 1:
                return None
            x = bounds.right() - offset - width if self.orientation == "left" else bounds.left() + offset
            return QtCore.QRectF(x, pos - line_h / 2, width, line_h)
        if pos < bounds.left() - 1 or pos > bounds.right() + 1:
            return None
        top = self.orientation == "top"
        edge = bounds.bottom() - offset if top else bounds.top() + offset
        if self._rotated:
            return QtCore.QRectF(pos - line_h / 2, edge - width if top else edge, line_h, width)
        return QtCore.QRectF(pos - width / 2, edge - line_h if top else edge, width, line_h)

    def label_boxes(self) -> list[tuple[str, QtCore.QRectF]]:
        """Each label drawn now and its box in scene coordinates (what a layout check compares)."""
        return [(text, self.mapRectToScene(box)) for text, _bold, box in self._placements()]
