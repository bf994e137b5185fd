"""A reusable labelled heatmap: one matrix, token pieces on both axes, a colour bar.

``HeatmapPlot`` is a ``pyqtgraph.PlotItem`` built once and updated in place:

- rows are queries (left axis, top to bottom), columns are keys (top axis), in the
  tutorial's convention; one ``MatrixImageItem`` (``axisOrder='row-major'``) draws the cells;
- the current step's row is outlined and its label drawn bold in the highlight colour;
- hovering a cell outlines it and emits ``sigHovered(HoverInfo | None)``;
- cells can carry their values as text (``−∞`` for masked scores, ``0`` for exact zeros);
- on SVG/PDF devices the cells are vector rectangles (see ``attnviz.qt.figures``).
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from .colormaps import Theme, get_colormap, lookup_table, ui_font
from .figures import VECTOR_CELL_LIMIT, is_vector_painter, lut_indices, paint_cells_vector, paint_qimage_unsmoothed

Signal = QtCore.Signal


# ---------------------------------------------------------------------------
# Value formats for cell text
# ---------------------------------------------------------------------------
MINUS = "\u2212"
_ALIGN = QtCore.Qt.AlignmentFlag
_RIGHT_VCENTER = int(_ALIGN.AlignRight | _ALIGN.AlignVCenter)
_LEFT_VCENTER = int(_ALIGN.AlignLeft | _ALIGN.AlignVCenter)
_HCENTER_BOTTOM = int(_ALIGN.AlignHCenter | _ALIGN.AlignBottom)
_HCENTER_TOP = int(_ALIGN.AlignHCenter | _ALIGN.AlignTop)


def format_weight(v: float) -> str:
    """Attention weights: exact zeros as ``0`` (masked), otherwise two decimals."""
    if v == 0.0:
        return "0"
    if v == 1.0:
        return "1"
    return f"{v:.2f}"


def format_score(v: float) -> str:
    """Scores: one decimal, a real minus sign, ``−∞`` where masked."""
    if math.isinf(v):
        return MINUS + "∞" if v < 0 else "∞"
    if math.isnan(v):
        return ""
    return f"{v:.1f}".replace("-", MINUS)


def format_mask(v: float) -> str:
    """M: ``0`` where attention is allowed, ``−∞`` where it is masked."""
    if v == 0.0:
        return "0"
    return MINUS + "∞" if (math.isinf(v) and v < 0) else format_score(v)


@dataclass(frozen=True)
class HoverInfo:
    """What the mouse is over: cell (row, col) of the shown matrix."""

    row: int
    col: int
    value: float
    row_label: str
    col_label: str


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
        return self._labels

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
        return min(max(fm.horizontalAdvance(s) for s in self._labels), self.MAX_EXTENT)

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
        self._draw_labels(p)

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
        for i, label in enumerate(self._labels):
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


# ---------------------------------------------------------------------------
# The matrix image and its cell text
# ---------------------------------------------------------------------------
class MatrixImageItem(pg.ImageItem):
    """A row-major image of one matrix; cell (r, c) is centred on view point (c, r).

    Non-finite values (masked cells, −∞) are shown in ``masked_color``. On SVG/PDF devices
    the cells are vector rectangles (up to ``VECTOR_CELL_LIMIT`` cells).
    """

    sigHovered = Signal(object)  # (row, col) or None
    sigClicked = Signal(object, object)  # (row, col), mouse button

    def __init__(self, masked_color: str | None = None):
        super().__init__(axisOrder="row-major")
        self.setTransform(QtGui.QTransform.fromTranslate(-0.5, -0.5))
        self._masked_brush = QtGui.QBrush(QtGui.QColor(masked_color)) if masked_color else None
        self._values: np.ndarray | None = None  # finite values, NaN where masked
        self._last_hover: tuple[int, int] | None = None

    def set_masked_color(self, color: str | None) -> None:
        self._masked_brush = QtGui.QBrush(QtGui.QColor(color)) if color else None
        self.update()

    def set_matrix(self, matrix: np.ndarray, levels: tuple[float, float]) -> None:
        a = np.asarray(matrix, dtype=np.float32)
        if not np.isfinite(a).all():
            a = np.where(np.isfinite(a), a, np.float32(np.nan))
        a = np.ascontiguousarray(a)
        self._values = a
        self.setImage(a, autoLevels=False, levels=levels)

    def values(self) -> np.ndarray | None:
        return self._values

    def cell_at(self, pos: QtCore.QPointF) -> tuple[int, int] | None:
        """(row, col) under ``pos`` in this item's coordinates, or None."""
        if self._values is None:
            return None
        col, row = math.floor(pos.x()), math.floor(pos.y())
        rows, cols = self._values.shape
        if 0 <= row < rows and 0 <= col < cols:
            return row, col
        return None

    def paint(self, painter, *args):
        if self.image is None or self._values is None:
            return
        rows, cols = self._values.shape
        if self._masked_brush is not None:
            painter.fillRect(QtCore.QRectF(0, 0, cols, rows), self._masked_brush)
        if is_vector_painter(painter):
            lut = self.lut if isinstance(self.lut, np.ndarray) else None
            levels = self.levels if self.levels is not None else (0.0, 1.0)
            if lut is not None and rows * cols <= VECTOR_CELL_LIMIT:
                paint_cells_vector(painter, self._values, lut, (float(levels[0]), float(levels[1])))
                return
            if self._renderRequired:
                self.render()
            if self.qimage is not None:
                paint_qimage_unsmoothed(painter, self.qimage, QtCore.QRectF(0, 0, cols, rows))
            return
        super().paint(painter, *args)

    # pyqtgraph's event API ---------------------------------------------------
    def hoverEvent(self, ev):
        cell = None if ev.isExit() else self.cell_at(ev.pos())
        if cell != self._last_hover:
            self._last_hover = cell
            self.sigHovered.emit(cell)

    def mouseClickEvent(self, ev):
        cell = self.cell_at(ev.pos())
        if cell is not None and ev.button() == QtCore.Qt.MouseButton.LeftButton:
            ev.accept()
            self.sigClicked.emit(cell, ev.button())
        else:
            ev.ignore()

    def mouseDragEvent(self, ev):
        ev.ignore()

    def raiseContextMenu(self, ev):
        return False


class CellTextItem(pg.GraphicsObject):
    """The value of each cell as text, drawn when the cells are large enough to hold it.

    Text is painted in device pixels (it does not scale with the cells) and in a dark or
    light colour chosen against each cell's colour.
    """

    def __init__(self, point_size: float = 7.5):
        super().__init__()
        self._font = ui_font(point_size)
        self._values = np.zeros((0, 0), dtype=np.float32)
        self._fmt: Callable[[float], str] = str
        self._strings: list[list[str]] | None = None
        self._dark: np.ndarray | None = None  # [row, col] True: dark text
        self._zeros: np.ndarray | None = None  # [row, col] exact zeros, dotted when text does not fit
        self._shape = (0, 0)
        self._max_text_w = 0.0
        self._enabled = True
        self._dark_color = QtGui.QColor("#111111")
        self._light_color = QtGui.QColor("#ffffff")
        self._static: dict[str, QtGui.QStaticText] = {}
        self.setZValue(5)
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)

    def set_enabled(self, enabled: bool) -> None:
        self._enabled = enabled
        self.update()

    def set_cells(
        self, values: np.ndarray, fmt: Callable[[float], str], dark: np.ndarray, zeros: np.ndarray | None = None
    ) -> None:
        """``values`` [row, col] written with ``fmt``; ``dark`` [row, col]: dark text on light cells.

        Strings are only made when the cells are large enough to show them.
        """
        self.prepareGeometryChange()
        self._values = values
        self._fmt = fmt
        self._strings = None
        self._dark = dark
        self._zeros = zeros if zeros is not None and zeros.any() else None
        self._shape = dark.shape
        self._max_text_w = self._estimate_width(values, fmt)
        self.update()

    def _estimate_width(self, values: np.ndarray, fmt: Callable[[float], str]) -> float:
        if values.size == 0:
            return 0.0
        finite = values[np.isfinite(values)]
        probes = [float(np.min(finite)), float(np.max(finite)), float(np.median(finite))] if finite.size else []
        probes += [float(v) for v in values[~np.isfinite(values)][:1]]
        if np.any(values == 0):
            probes.append(0.0)
        fm = QtGui.QFontMetricsF(self._font)
        return max(fm.horizontalAdvance(fmt(v)) for v in probes) if probes else 0.0

    def strings(self) -> list[list[str]]:
        """The text of every cell (made on first use)."""
        if self._strings is None:
            fmt = self._fmt
            self._strings = [[fmt(v) for v in row] for row in self._values.tolist()] if self._values.size else []
        return self._strings

    def clear(self) -> None:
        self.set_cells(np.zeros((0, 0), dtype=np.float32), str, np.zeros((0, 0), dtype=bool))

    def boundingRect(self) -> QtCore.QRectF:
        rows, cols = self._shape
        return QtCore.QRectF(-0.5, -0.5, cols, rows)

    def fits(self, item_to_scene: QtGui.QTransform) -> bool:
        """Whether a cell (in scene pixels, i.e. as on screen) holds the widest text."""
        cell = item_to_scene.mapRect(QtCore.QRectF(0, 0, 1, 1))
        fm = QtGui.QFontMetricsF(self._font)
        return cell.width() >= self._max_text_w + 4 and cell.height() >= fm.height() + 1

    def _scene_painting(self, p: QtGui.QPainter) -> QtGui.QTransform:
        """Switch ``p`` to scene coordinates (text keeps its on-screen size in any export);
        returns the item → scene transform."""
        to_scene = self.sceneTransform()
        inverse, ok = to_scene.inverted()
        p.setWorldTransform(inverse * p.worldTransform() if ok else p.worldTransform())
        return to_scene if ok else QtGui.QTransform()

    def paint(self, p, *args):
        if not self._enabled or self._values.size == 0:
            return
        p.save()
        t = self._scene_painting(p)
        if not self.fits(t):
            if self._zeros is not None:
                self._paint_zero_marks(p, t)
            p.restore()
            return
        p.setFont(self._font)
        fm = QtGui.QFontMetricsF(self._font)
        cell = t.mapRect(QtCore.QRectF(0, 0, 1, 1))
        origin = t.map(QtCore.QPointF(0.0, 0.0))
        dx, dy = cell.width(), cell.height()
        dark, light = self._dark_color, self._light_color
        strings = self.strings()
        if is_vector_painter(p):  # real text in SVG/PDF
            w, h = dx, max(dy, fm.height())
            flags = int(QtCore.Qt.AlignmentFlag.AlignCenter)
            for r, row in enumerate(strings):
                for c, s in enumerate(row):
                    if s:
                        p.setPen(dark if self._dark[r, c] else light)
                        x, y = origin.x() + c * dx, origin.y() + r * dy
                        p.drawText(QtCore.QRectF(x - w / 2, y - h / 2, w, h), flags, s)
        else:  # on screen and in PNGs: cached text layouts, one per distinct string
            cache = self._static
            for pen_dark in (True, False):
                p.setPen(dark if pen_dark else light)
                for r, row in enumerate(strings):
                    flags_row = self._dark[r]
                    for c, s in enumerate(row):
                        if not s or bool(flags_row[c]) != pen_dark:
                            continue
                        st = cache.get(s)
                        if st is None:
                            st = cache[s] = QtGui.QStaticText(s)
                            st.prepare(QtGui.QTransform(), self._font)
                        size = st.size()
                        p.drawStaticText(QtCore.QPointF(origin.x() + c * dx - size.width() / 2,
                                                        origin.y() + r * dy - size.height() / 2), st)
            if len(cache) > 4096:
                cache.clear()
        p.restore()

    def _paint_zero_marks(self, p, t: QtGui.QTransform) -> None:
        """A small dot in each exact-zero cell (masked weights), when numbers do not fit."""
        cell = t.mapRect(QtCore.QRectF(0, 0, 1, 1))
        radius = min(cell.width(), cell.height()) * 0.12
        if radius < 0.8:
            return
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        rows, cols = np.nonzero(self._zeros)
        for dark in (True, False):
            colour = QtGui.QColor(self._dark_color if dark else self._light_color)
            colour.setAlpha(110)
            p.setBrush(colour)
            for r, c in zip(rows, cols):
                if bool(self._dark[r, c]) == dark:
                    p.drawEllipse(t.map(QtCore.QPointF(float(c), float(r))), radius, radius)


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
        _relaxed_update_min(self)


def _relaxed_update_min(label: pg.LabelItem) -> None:
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


# ---------------------------------------------------------------------------
# The plot
# ---------------------------------------------------------------------------
def quiet_axes(*plots: pg.PlotItem | None) -> None:
    """No SI-prefix relabelling on range changes (it rewrites each axis title's HTML every step)."""
    for plot in plots:
        if plot is not None:
            for name in ("left", "right", "top", "bottom"):
                plot.getAxis(name).enableAutoSIPrefix(False)


class HeatmapPlot(pg.PlotItem):
    """A labelled matrix: queries down the left, keys along the top, a colour bar on the right.

    Build once, then call :meth:`set_matrix` for every update (it reuses every item).

    Parameters
    ----------
    theme: colours and fonts.
    colormap: colour-map name (``attnviz.qt.colormaps``); ``None``: the theme's.
    levels: the value range the colour map spans, e.g. (0, 1) for weights.
    colorbar: whether to show a colour bar (labelled ``colorbar_label``).
    annotate: write each cell's value when the cells are large enough.
    value_format: how a cell's value is written (``format_weight``, ``format_score``…).
    aspect_locked: square cells (otherwise the matrix fills the plot).
    masked: paint non-finite cells (−∞) in the theme's ``masked`` colour.
    mark_zeros: dot exact-zero cells when the numbers do not fit (masked weights).
    """

    sigHovered = Signal(object)  # HoverInfo or None
    sigCellClicked = Signal(int, int)  # row, col

    def __init__(
        self,
        theme: Theme,
        *,
        colormap: str | None = None,
        levels: tuple[float, float] = (0.0, 1.0),
        colorbar: bool = True,
        colorbar_label: str | None = None,
        annotate: bool = True,
        value_format: Callable[[float], str] = format_weight,
        aspect_locked: bool = False,
        masked: bool = True,
        mark_zeros: bool = False,
        label_point_size: float = 9.0,
    ):
        self.theme = theme
        self._left = TokenAxis("left", theme, label_point_size)
        self._top = TokenAxis("top", theme, label_point_size)
        super().__init__(axisItems={"left": self._left, "top": self._top}, enableMenu=False)
        self.setMenuEnabled(False)
        self.hideButtons()
        self.showAxis("top")
        self.hideAxis("bottom")
        self.showAxis("left")
        vb = self.getViewBox()
        vb.setMouseEnabled(x=False, y=False)
        vb.setMenuEnabled(False)
        vb.invertY(True)
        vb.setAspectLocked(aspect_locked)
        vb.setDefaultPadding(0.0)
        vb.disableAutoRange()

        self._colormap_name = colormap or theme.colormap
        self._lut = lookup_table(self._colormap_name)
        self._levels = (float(levels[0]), float(levels[1]))
        self._annotate = annotate
        self._mark_zeros = mark_zeros
        self._format = value_format
        self._shape: tuple[int, int] = (0, 0)
        self._row_labels: tuple[str, ...] = ()
        self._col_labels: tuple[str, ...] = ()
        self._highlight: int | None = None
        self._raw: np.ndarray | None = None

        self.image = MatrixImageItem(theme.masked if masked else None)
        self.image.setLookupTable(self._lut)
        self.addItem(self.image)
        self.cells = CellTextItem()
        self.addItem(self.cells)

        self.row_marker = QtWidgets.QGraphicsRectItem()
        self.row_marker.setZValue(10)
        self.row_marker.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
        self.row_marker.setVisible(False)
        self.addItem(self.row_marker)
        self.hover_marker = QtWidgets.QGraphicsRectItem()
        self.hover_marker.setZValue(11)
        self.hover_marker.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
        self.hover_marker.setVisible(False)
        self.addItem(self.hover_marker)

        self.colorbar: pg.ColorBarItem | None = None
        if colorbar:
            self.colorbar = pg.ColorBarItem(
                values=self._levels,
                colorMap=get_colormap(self._colormap_name),
                interactive=False,
                width=12,
                colorMapMenu=False,
                label=colorbar_label,
            )
            self.colorbar.setImageItem(self.image, insert_in=self)
            self.colorbar.axis.setWidth(38)
        quiet_axes(self, self.colorbar)
        self.image.sigHovered.connect(self._on_cell_hovered)
        self.image.sigClicked.connect(self._on_cell_clicked)
        self.apply_theme(theme)

    # settings ---------------------------------------------------------------
    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._left.apply_theme(theme)
        self._top.apply_theme(theme)
        args = getattr(self, "_panel_title_args", None)
        if args is not None:
            self._panel_title = None
            self.set_panel_title(args[0], color=args[1], size=args[2])
        self.image.set_masked_color(theme.masked if self.image._masked_brush is not None else None)
        pen = pg.mkPen(theme.highlight, width=2)
        pen.setCosmetic(True)
        self.row_marker.setPen(pen)
        hpen = pg.mkPen(theme.selection, width=2)
        hpen.setCosmetic(True)
        self.hover_marker.setPen(hpen)
        self.cells._dark_color = QtGui.QColor("#111111")
        self.cells._light_color = QtGui.QColor("#ffffff")
        if self.colorbar is not None:
            for name in ("left", "right", "top", "bottom"):
                ax = self.colorbar.getAxis(name)
                ax.setPen(pg.mkPen(theme.muted))
                ax.setTextPen(pg.mkPen(theme.foreground))
                ax.setStyle(tickFont=ui_font(8))
        self.update()

    def set_colormap(self, name: str) -> None:
        self._colormap_name = name
        self._lut = lookup_table(name)
        if self.colorbar is not None:
            self.colorbar.setColorMap(get_colormap(name))
        self.image.setLookupTable(self._lut)
        self._update_cells()

    def colormap_name(self) -> str:
        return self._colormap_name

    def lut(self) -> np.ndarray:
        return self._lut

    def set_levels(self, levels: tuple[float, float]) -> None:
        lo, hi = float(levels[0]), float(levels[1])
        if hi <= lo:
            hi = lo + 1e-6
        self._levels = (lo, hi)
        if self.colorbar is not None:
            self.colorbar.setLevels((lo, hi))
        self.image.setLevels((lo, hi))
        self._update_cells()

    def levels(self) -> tuple[float, float]:
        return self._levels

    def set_value_format(self, fmt: Callable[[float], str]) -> None:
        self._format = fmt
        self._update_cells()

    def set_panel_title(self, text: str, *, color: str | None = None, size: str = "10pt") -> None:
        """The plot's title; unlike ``setTitle`` it never widens the layout (it clips)."""
        label = self.titleLabel
        key = (text, color or self.theme.foreground, size)
        if getattr(self, "_panel_title", None) == key:
            return
        self._panel_title = key
        self._panel_title_args = (text, color, size)
        if not getattr(label, "_relaxed", False):
            label._relaxed = True
            label.updateMin = types.MethodType(_relaxed_update_min, label)
            label.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape, True)
        self.setTitle(text, color=color or self.theme.foreground, size=size)

    def set_axis_titles(self, rows: str | None, cols: str | None) -> None:
        if rows is not None:
            self._left.set_title(rows)
        if cols is not None:
            self._top.set_title(cols)

    def set_row_labels_visible(self, visible: bool) -> None:
        self._left.set_labels_visible(visible)

    @property
    def row_axis(self) -> TokenAxis:
        return self._left

    @property
    def col_axis(self) -> TokenAxis:
        return self._top

    # data -------------------------------------------------------------------
    def set_matrix(
        self,
        matrix: np.ndarray,
        row_labels: Sequence[str],
        col_labels: Sequence[str],
        highlight_row: int | None = None,
        levels: tuple[float, float] | None = None,
    ) -> None:
        """Show ``matrix`` [row, col] (rows = queries, columns = keys); non-finite = masked."""
        m = np.asarray(matrix)
        if m.ndim != 2:
            raise ValueError(f"a heatmap shows a 2-D matrix, got shape {m.shape}")
        rows, cols = m.shape
        if len(row_labels) != rows or len(col_labels) != cols:
            raise ValueError(f"{len(row_labels)}×{len(col_labels)} labels for a {rows}×{cols} matrix")
        if levels is not None:
            lo, hi = float(levels[0]), float(levels[1])
            self._levels = (lo, hi if hi > lo else lo + 1e-6)
            if self.colorbar is not None:
                self.colorbar.setLevels(self._levels)
        self._raw = np.array(m, dtype=np.float32)
        self.image.set_matrix(self._raw, self._levels)
        shape_changed = (rows, cols) != self._shape
        self._shape = (rows, cols)
        self._row_labels = tuple(row_labels)
        self._col_labels = tuple(col_labels)
        self._highlight = highlight_row if highlight_row is not None and 0 <= highlight_row < rows else None
        self._left.set_labels(self._row_labels, self._highlight)
        self._top.set_labels(self._col_labels, None)
        if shape_changed:
            self.getViewBox().setRange(xRange=(-0.5, cols - 0.5), yRange=(-0.5, rows - 0.5), padding=0.0)
            self.hover_marker.setVisible(False)
        if self._highlight is None:
            self.row_marker.setVisible(False)
        else:
            self.row_marker.setRect(QtCore.QRectF(-0.5, self._highlight - 0.5, cols, 1.0))
            self.row_marker.setVisible(True)
        self._update_cells()
        hover = self.image._last_hover
        if hover is not None:  # the mouse did not move, the value under it did
            inside = hover[0] < rows and hover[1] < cols
            self.image._last_hover = hover if inside else None
            self._on_cell_hovered(hover if inside else None)

    def matrix(self) -> np.ndarray | None:
        """The matrix shown (non-finite values as NaN)."""
        return self.image.values()

    def row_labels(self) -> tuple[str, ...]:
        return self._row_labels

    def col_labels(self) -> tuple[str, ...]:
        return self._col_labels

    def highlight_row(self) -> int | None:
        return self._highlight

    def cell_colors(self, matrix: np.ndarray) -> np.ndarray:
        """``[row, col, 4]`` RGBA the colour map gives ``matrix`` at the current levels."""
        return self._lut[lut_indices(np.asarray(matrix, dtype=np.float64), self._levels, len(self._lut))]

    def _update_cells(self) -> None:
        values = self.image.values()
        if not self._annotate or values is None or values.size > 48 * 48:
            self.cells.clear()
            return
        rgb = self.cell_colors(values)[..., :3].astype(np.float32) / 255.0
        luminance = 0.2126 * rgb[..., 0] + 0.7152 * rgb[..., 1] + 0.0722 * rgb[..., 2]
        masked = ~np.isfinite(values)
        masked_light = QtGui.QColor(self.theme.masked).lightnessF() > 0.5
        dark = np.where(masked, masked_light, luminance > 0.5)
        self.cells.set_cells(self._raw, self._format, dark, (self._raw == 0.0) if self._mark_zeros else None)

    def raw_matrix(self) -> np.ndarray | None:
        """The matrix as given (−∞ kept), as written in the cells and the readout."""
        return self._raw

    # hover ------------------------------------------------------------------
    def _info(self, cell: tuple[int, int]) -> HoverInfo:
        r, c = cell
        return HoverInfo(r, c, float(self._raw[r, c]), self._row_labels[r], self._col_labels[c])

    def _on_cell_hovered(self, cell) -> None:
        if cell is None:
            self.hover_marker.setVisible(False)
            self.sigHovered.emit(None)
            return
        r, c = cell
        self.hover_marker.setRect(QtCore.QRectF(c - 0.5, r - 0.5, 1.0, 1.0))
        self.hover_marker.setVisible(True)
        self.sigHovered.emit(self._info(cell))

    def _on_cell_clicked(self, cell, _button) -> None:
        self.sigCellClicked.emit(int(cell[0]), int(cell[1]))

    def hover_cell(self, row: int, col: int) -> HoverInfo:
        """Act as if the mouse were over (row, col); returns what the readout shows."""
        self.image._last_hover = (row, col)
        self._on_cell_hovered((row, col))
        return self._info((row, col))

    def cell_center_in_scene(self, row: int, col: int) -> QtCore.QPointF:
        return self.getViewBox().mapViewToScene(QtCore.QPointF(float(col), float(row)))
