"""Overview and zoom, for a matrix too large to show cell by cell (a long input).

``MatrixOverview`` is a small plot of the whole matrix with a rectangle, the region, that the user
drags or resizes by its corner (snapped to whole cells; a click on the overview centres it there).
``ZoomedHeatmap`` puts it beside a :class:`~attnviz.qt.widgets.heatmap.HeatmapPlot`: while the whole
matrix's cells are at least ``MIN_CELL_PX`` on screen the heatmap shows all of it and there is no
overview; below that the heatmap shows the region alone, with its token labels and, where they fit,
the cells' values. The region follows the current step's row when a step moves it out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnviz.core.data.pieces import display_piece
from attnviz.qt.i18n import translate
from attnviz.qt.widgets.colormaps import Theme, lookup_table
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, setup_matrix_plot
from attnviz.qt.widgets.matrix_image import MatrixImageItem
from attnviz.qt.widgets.plots import pen

MIN_CELL_PX = 4.0  # a cell narrower or shorter than this is too small to read: the overview and the region take over
LEAVE_CELL_PX = 5.0  # the whole matrix comes back once its cells would be this large (no flicker at the edge)
ZOOM_CELLS = 16  # rows and columns the region spans at first
OVERVIEW_WIDTH = 200  # px: the overview's widest

Region = tuple[int, int, int, int]  # row0, row1, col0, col1: the rows row0..row1-1 and columns col0..col1-1


def clamped(rows: tuple[int, int], cols: tuple[int, int], shape: tuple[int, int]) -> Region:
    """``rows`` × ``cols`` moved (then cut) to lie in a matrix of ``shape``, at least one cell each way."""
    out = []
    for (a, b), n in zip((rows, cols), shape):
        size = min(max(int(b) - int(a), 1), n)
        start = min(max(int(a), 0), n - size)
        out += [start, start + size]
    return out[0], out[1], out[2], out[3]


class MatrixOverview(pg.PlotItem):
    """The whole matrix, small, and the region another plot shows: a rectangle snapped to whole
    cells that the user drags, resizes by its corner, or centres with a click.
    ``regionChanged(region)`` when it moves (:data:`Region`)."""

    regionChanged = QtCore.Signal(object)

    def __init__(self, theme: Theme, lut: np.ndarray):
        super().__init__(enableMenu=False)
        setup_matrix_plot(self)
        self.hideAxis("top")
        self.hideAxis("left")
        self.image = MatrixImageItem(theme.masked)
        self.image.setTransform(QtGui.QTransform())  # cell (r, c) covers [c, c + 1] × [r, r + 1]: the region snaps to whole cells
        self.image.setLookupTable(lut)
        self.addItem(self.image)
        self.roi = pg.RectROI((0, 0), (1, 1), translateSnap=True, scaleSnap=True, snapSize=1.0, rotatable=False)
        self.roi.setZValue(10)
        self.addItem(self.roi)
        self.setMaximumWidth(OVERVIEW_WIDTH)
        self._shape = (0, 0)
        self._region: Region = (0, 0, 0, 0)
        self._wanted = (ZOOM_CELLS, ZOOM_CELLS)  # rows, columns the region was given: it grows back to them with the matrix
        self.roi.sigRegionChanged.connect(self._on_roi_changed)
        self.image.sigClicked.connect(self._on_clicked)
        self.apply_theme(theme)

    def apply_theme(self, theme: Theme) -> None:
        self.setTitle(translate("overview", "whole matrix · drag the box"), size="8pt", color=theme.muted)
        self.image.set_masked_color(theme.masked)
        self.roi.setPen(pen(theme.selection, 2))

    def set_lut(self, lut: np.ndarray) -> None:
        self.image.setLookupTable(lut)

    def set_matrix(self, matrix: np.ndarray, levels: tuple[float, float]) -> None:
        """Show ``matrix`` [row, col] whole; the region stays, moved into it if need be."""
        self.image.set_matrix(matrix, levels)
        shape = matrix.shape
        if shape != self._shape:
            self._shape = shape
            self.getViewBox().setRange(xRange=(0, shape[1]), yRange=(0, shape[0]), padding=0.0)
            self.roi.maxBounds = QtCore.QRectF(0, 0, shape[1], shape[0])
            r0, _, c0, _ = self._region
            self._place((r0, r0 + self._wanted[0]), (c0, c0 + self._wanted[1]))

    def region(self) -> Region:
        return self._region

    def set_region(self, rows: tuple[int, int], cols: tuple[int, int]) -> None:
        """Put the region over ``rows`` × ``cols`` (half-open; moved and cut to fit the matrix, and
        grown back to that size when the matrix grows, a step at a time)."""
        self._wanted = (max(int(rows[1]) - int(rows[0]), 1), max(int(cols[1]) - int(cols[0]), 1))
        self._place(rows, cols)

    def _place(self, rows: tuple[int, int], cols: tuple[int, int]) -> None:
        if not all(self._shape):
            return
        r0, r1, c0, c1 = clamped(rows, cols, self._shape)
        blocked = self.roi.blockSignals(True)
        self.roi.setPos((c0, r0), update=False)
        self.roi.setSize((c1 - c0, r1 - r0), update=False)
        self.roi.stateChanged(finish=True)
        self.roi.blockSignals(blocked)
        self._set((r0, r1, c0, c1))

    def _on_roi_changed(self, *_args) -> None:
        """The user dragged or resized the box: its cells, and the size it keeps."""
        pos, size = self.roi.pos(), self.roi.size()
        c0, r0 = round(pos.x()), round(pos.y())
        self._wanted = (max(round(size.y()), 1), max(round(size.x()), 1))
        if all(self._shape):
            self._set(clamped((r0, r0 + self._wanted[0]), (c0, c0 + self._wanted[1]), self._shape))

    def _set(self, region: Region) -> None:
        if region != self._region:
            self._region = region
            self.regionChanged.emit(region)

    def _on_clicked(self, cell, _button) -> None:
        r0, r1, c0, c1 = self._region
        h, w = r1 - r0, c1 - c0
        self.set_region((cell[0] - h // 2, cell[0] - h // 2 + h), (cell[1] - w // 2, cell[1] - w // 2 + w))


class ZoomedHeatmap(QtCore.QObject):
    """A :class:`HeatmapPlot` in ``body`` (a layout's row) that shows a whole matrix while its cells
    are at least ``MIN_CELL_PX``, and otherwise the region chosen on a :class:`MatrixOverview` put
    beside it. Feed it with :meth:`set_matrix` instead of the plot; ``zoomChanged(bool)`` when the
    overview comes or goes. Indices the plot reports (hover, rows) are of the region:
    :meth:`origin` is its first row and column in the whole matrix."""

    zoomChanged = QtCore.Signal(bool)
    sigHovered = QtCore.Signal(object)  # HoverInfo of the whole matrix's cell under the mouse (plot or overview), or None

    def __init__(self, plot: HeatmapPlot, body: pg.GraphicsLayout, theme: Theme):
        super().__init__()
        self.plot = plot
        self._body = body
        self.overview = MatrixOverview(theme, plot.lut())
        self.overview.hide()
        body.addItem(plot, row=0, col=1)
        self._zoomed = False
        self._full: np.ndarray | None = None
        self._labels: tuple[Sequence[str], Sequence[str]] = ((), ())
        self._levels: tuple[float, float] | None = None  # as given (None: the plot's own)
        self._highlight: int | None = None
        self._linked: int | None = None
        self.overview.regionChanged.connect(self._draw)
        plot.getViewBox().sigResized.connect(self.refit)
        plot.sigHovered.connect(self._on_plot_hovered)
        self.overview.image.sigHovered.connect(self._on_overview_hovered)

    # what is shown ---------------------------------------------------------------------
    def set_matrix(self, matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str],
                   highlight_row: int | None = None, levels: tuple[float, float] | None = None) -> None:
        """Show ``matrix`` [row, col] (whole, or its region when its cells would be too small)."""
        m = np.asarray(matrix)
        if m.ndim != 2:
            raise ValueError(f"a heatmap shows a 2-D matrix, got shape {m.shape}")
        if len(row_labels) != m.shape[0] or len(col_labels) != m.shape[1]:
            raise ValueError(f"{len(row_labels)}×{len(col_labels)} labels for a {m.shape[0]}×{m.shape[1]} matrix")
        self._full, self._labels = m, (tuple(row_labels), tuple(col_labels))
        self._levels = levels if levels is not None else self._levels
        if self._zoomed:
            self._quietly(self.overview.set_matrix, m, self._levels or self.plot.levels())
        self._follow(highlight_row)
        self._highlight = highlight_row
        self.refit(draw=False)
        self._draw()

    def zoomed(self) -> bool:
        """The overview is shown and the plot holds the region alone."""
        return self._zoomed

    def region(self) -> Region:
        """The rows and columns the plot shows: all of them when not zoomed."""
        if self._zoomed:
            return self.overview.region()
        rows, cols = self._full.shape if self._full is not None else (0, 0)
        return 0, rows, 0, cols

    def origin(self) -> tuple[int, int]:
        """The whole matrix's row and column of the plot's cell (0, 0)."""
        r0, _, c0, _ = self.region()
        return r0, c0

    def set_region(self, rows: tuple[int, int], cols: tuple[int, int]) -> None:
        """Zoom on ``rows`` × ``cols`` (as dragging the overview's rectangle does; shown when zoomed)."""
        self.overview.set_region(rows, cols)

    def _on_plot_hovered(self, info: HoverInfo | None) -> None:
        """A cell of the plot: the whole matrix's row and column."""
        r0, c0 = self.origin()
        self.sigHovered.emit(None if info is None else dataclasses.replace(info, row=info.row + r0, col=info.col + c0))

    def _on_overview_hovered(self, cell: tuple[int, int] | None) -> None:
        if cell is None or self._full is None:
            self.sigHovered.emit(None)
            return
        (r, c), (rows, cols) = cell, self._labels
        self.sigHovered.emit(HoverInfo(r, c, float(self._full[r, c]), display_piece(str(rows[r])), display_piece(str(cols[c]))))

    def set_linked_row(self, row: int | None) -> None:
        """Outline the whole matrix's row ``row`` (where the plot shows it)."""
        self._linked = row
        r0, r1, _, _ = self.region()
        self.plot.set_linked_row(row - r0 if row is not None and r0 <= row < r1 else None)

    def set_colormap(self, name: str) -> None:
        self.plot.set_colormap(name)
        self.overview.set_lut(lookup_table(name))

    def apply_theme(self, theme: Theme) -> None:
        self.plot.apply_theme(theme)
        self.overview.apply_theme(theme)

    # internals -------------------------------------------------------------------------
    def _cell_px(self) -> float | None:
        """How large a cell of the whole matrix would be on screen (``None``: not laid out yet)."""
        vb = self.plot.getViewBox()
        w, h = vb.width(), vb.height()
        if self._full is None or w < 2 or h < 2 or not self._full.size:
            return None
        if self._zoomed:
            w += self.overview.width()
        rows, cols = self._full.shape
        return min(w / cols, h / rows)

    def refit(self, *_args, draw: bool = True) -> None:
        """Show the overview when the whole matrix's cells would be under ``MIN_CELL_PX``, take it
        away when they would be ``LEAVE_CELL_PX`` or more."""
        cell = self._cell_px()
        if cell is None:
            return
        zoom = cell < (LEAVE_CELL_PX if self._zoomed else MIN_CELL_PX)
        if zoom == self._zoomed:
            return
        self._zoomed = zoom
        if zoom:
            self._body.addItem(self.overview, row=0, col=0)
            self.overview.show()
            self._quietly(self.overview.set_matrix, self._full, self._levels or self.plot.levels())
            self._quietly(self.overview.set_region, *self._first_region())
        else:
            self._body.removeItem(self.overview)
            self.overview.hide()
        if draw:
            self._draw()
        self.zoomChanged.emit(zoom)

    def _first_region(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """``ZOOM_CELLS`` rows and columns: the last rows up to the current step's, else the first."""
        last = (self._highlight + 1) if self._highlight is not None else ZOOM_CELLS
        return (last - ZOOM_CELLS, last), (0, ZOOM_CELLS)

    def _follow(self, highlight: int | None) -> None:
        """A step whose row leaves the region moves it down (or up) to keep the row in it."""
        if not self._zoomed or highlight is None or highlight == self._highlight:
            return
        r0, r1, c0, c1 = self.overview.region()
        if r0 <= highlight < r1 or (self._highlight is not None and not r0 <= self._highlight < r1):
            return
        shift = highlight - (r1 - 1) if highlight >= r1 else highlight - r0
        self._quietly(self.overview.set_region, (r0 + shift, r1 + shift), (c0, c1))

    def _quietly(self, change, *args) -> None:
        """``change(*args)`` on the overview without its ``regionChanged`` (the caller draws once after)."""
        blocked = self.overview.blockSignals(True)
        try:
            change(*args)
        finally:
            self.overview.blockSignals(blocked)

    def _draw(self, *_args) -> None:
        """The plot: the whole matrix, or the region."""
        m = self._full
        if m is None:
            return
        rows, cols = self._labels
        r0, r1, c0, c1 = self.region()
        hi = self._highlight
        self.plot.set_matrix(m[r0:r1, c0:c1], rows[r0:r1], cols[c0:c1], hi - r0 if hi is not None and r0 <= hi < r1 else None,
                             levels=self._levels)
        self.set_linked_row(self._linked)
