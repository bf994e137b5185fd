"""The matrix image of a heatmap and the cell values written over it.

``MatrixImageItem`` draws one matrix row-major (cell (r, c) centred on view point (c, r)),
reports the hovered and clicked cells and paints masked cells in their own colour;
``CellTextItem`` writes each cell's value when the cells are large enough. On SVG/PDF
devices both are vector (see ``attnviz.qt.widgets.figures``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnviz.qt.widgets.colormaps import ui_font
from attnviz.qt.widgets.figures import VECTOR_CELL_LIMIT, is_vector_painter, paint_cells_vector, paint_qimage_unsmoothed

Signal = QtCore.Signal


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
        infinite = np.isinf(a)  # NaN is shown masked as it is: only ±inf is replaced (a copy)
        if infinite.any():
            a = np.where(infinite, np.float32(np.nan), a)
        a = np.ascontiguousarray(a)
        self._values = a
        self.setImage(a, autoLevels=False, levels=levels)

    def render(self, *args, **kwargs) -> None:
        """pyqtgraph's image, converted once to the format the raster engine paints fastest
        (an indexed or non-premultiplied image is converted again on every paint)."""
        super().render(*args, **kwargs)
        fast = QtGui.QImage.Format.Format_ARGB32_Premultiplied
        if self.qimage is not None and self.qimage.format() != fast:
            self.qimage = self.qimage.convertToFormat(fast)

    def values(self) -> np.ndarray | None:
        return self._values

    def hovered_cell(self) -> tuple[int, int] | None:
        """The cell under the mouse as last reported, or None."""
        return self._last_hover

    def set_hovered_cell(self, cell: tuple[int, int] | None) -> None:
        """Take ``cell`` as the one under the mouse (reported again only when the mouse leaves it)."""
        self._last_hover = cell

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
        self._dark_color = QtGui.QColor("#111111")
        self._light_color = QtGui.QColor("#ffffff")
        self._static: dict[str, QtGui.QStaticText] = {}
        self.setZValue(5)
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)

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
        probes = [float(finite.min()), float(finite.max()), float(finite[finite.size // 2])] if finite.size else []  # the extremes and one typical value
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

    def shown(self) -> bool:
        """The values are written in the cells now: there are some, and a cell holds the widest."""
        return bool(self._values.size) and self.fits(self.sceneTransform())

    def _scene_painting(self, p: QtGui.QPainter) -> QtGui.QTransform:
        """Switch ``p`` to scene coordinates (text keeps its on-screen size in any export);
        returns the item → scene transform."""
        to_scene = self.sceneTransform()
        inverse, ok = to_scene.inverted()
        p.setWorldTransform(inverse * p.worldTransform() if ok else p.worldTransform())
        return to_scene if ok else QtGui.QTransform()

    def paint(self, p, *args):
        if self._values.size == 0:
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
