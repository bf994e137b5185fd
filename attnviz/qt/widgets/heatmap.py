"""A reusable labelled heatmap: one matrix, token pieces on both axes, a colour bar.

``HeatmapPlot`` is a ``pyqtgraph.PlotItem`` built once and updated in place:

- rows are queries (left axis, top to bottom), columns are keys (top axis), in the
  tutorial's convention; one ``MatrixImageItem`` (``axisOrder='row-major'``) draws the cells;
- the current step's row is outlined and its label drawn bold in the highlight colour;
- hovering a cell outlines it and emits ``sigHovered(HoverInfo | None)``;
- cells can carry their values as text (``−∞`` for masked scores, ``0`` for exact zeros);
- on SVG/PDF devices the cells are vector rectangles (see ``attnviz.qt.widgets.figures``).

Its parts live in their own modules: the token axes (``token_axis``), the matrix image and
cell text (``matrix_image``) and the relaxed titles (``title_item``).
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.data.pieces import display_piece
from attnviz.qt.widgets.colormaps import Theme, get_colormap, lookup_table, ui_font
from attnviz.qt.widgets.figures import lut_indices
from attnviz.qt.widgets.matrix_image import CellTextItem, MatrixImageItem
from attnviz.qt.widgets.plots import pen
from attnviz.qt.widgets.title_item import relaxed_update_min
from attnviz.qt.widgets.token_axis import TokenAxis

Signal = QtCore.Signal


# ---------------------------------------------------------------------------
# Value formats for cell text
# ---------------------------------------------------------------------------
MINUS = "\u2212"


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


def format_change(v: float) -> str:
    """Changes (ΔA): two decimals with their sign, a real minus sign; ``0`` where under 0.005."""
    if math.isnan(v):
        return ""
    if abs(v) < 0.005:
        return "0"
    return f"{v:+.2f}".replace("-", MINUS)


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
# The plot
# ---------------------------------------------------------------------------
def quiet_axes(*plots: pg.PlotItem | None) -> None:
    """No SI-prefix relabelling on range changes (it rewrites each axis title's HTML every step)."""
    for plot in plots:
        if plot is not None:
            for name in ("left", "right", "top", "bottom"):
                plot.getAxis(name).enableAutoSIPrefix(False)


def slim_colorbar(bar: pg.ColorBarItem) -> None:
    """A colour bar without its top and bottom frame axes: two axes fewer to lay out and paint
    on every update (the bar keeps its tick axis and its label), whose tick labels never crowd
    (``readable_ticks``)."""
    for name in ("top", "bottom"):
        bar.hideAxis(name)
    readable_ticks(bar.axis)


TICK_GAP = 1.5  # tick labels at least this many text heights apart


def readable_spacing(span: float, size_px: float, text_px: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that puts ticks ``TICK_GAP`` text heights apart on an axis
    of ``size_px`` pixels showing ``span`` units."""
    need = TICK_GAP * text_px * span / max(size_px, 1.0)
    if not need > 0 or not math.isfinite(need):
        return span or 1.0
    base = 10.0 ** math.floor(math.log10(need))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= need)


def readable_ticks(axis: pg.AxisItem) -> None:
    """Let ``axis`` (a short colour-bar axis in a narrow dock) keep only the tick levels whose
    labels do not overlap; pyqtgraph always labels its top level, however crowded."""
    automatic = axis.tickSpacing

    def spacing(min_val: float, max_val: float, size: float) -> list[tuple[float, float]]:
        levels = automatic(min_val, max_val, size)
        text_px = QtGui.QFontMetricsF(axis.style.get("tickFont") or axis.font()).height()
        least = readable_spacing(abs(max_val - min_val), size, text_px)
        kept = [(step, offset) for step, offset in levels if step >= least * (1 - 1e-9)]
        return kept or [(least, 0.0)]

    axis.tickSpacing = spacing


def setup_matrix_plot(plot: pg.PlotItem, aspect_locked: bool | None = None) -> pg.ViewBox:
    """A matrix's plot: no menu or buttons, keys' axis on top, no mouse zoom or pan, rows
    downwards, no padding, no auto-range; ``aspect_locked`` (if given): square cells.
    Returns the plot's view box."""
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.showAxis("top")
    plot.hideAxis("bottom")
    plot.showAxis("left")
    vb = plot.getViewBox()
    vb.setMouseEnabled(x=False, y=False)
    vb.setMenuEnabled(False)
    vb.invertY(True)
    if aspect_locked is not None:
        vb.setAspectLocked(aspect_locked)
    vb.setDefaultPadding(0.0)
    vb.disableAutoRange()
    return vb


class HeatmapPlot(pg.PlotItem):
    """A labelled matrix: queries down the left, keys along the top, a colour bar on the right.

    Build once, then call :meth:`set_matrix` for every update (it reuses every item).

    Parameters
    ----------
    theme: colours and fonts.
    colormap: colour-map name (``attnviz.qt.widgets.colormaps``); ``None``: the theme's.
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
        setup_matrix_plot(self, aspect_locked)

        colormap = colormap or theme.colormap
        self._lut = lookup_table(colormap)
        self._levels = (float(levels[0]), float(levels[1]))
        self._annotate = annotate
        self._mark_zeros = mark_zeros
        self._format = value_format
        self._shape: tuple[int, int] = (0, 0)
        self._row_labels: tuple[str, ...] = ()
        self._col_labels: tuple[str, ...] = ()
        self._highlight: int | None = None
        self._raw: np.ndarray | None = None
        self._shown: tuple = ()  # the labels, highlight and levels of the matrix shown (``_raw``)
        self._masked = masked

        self.image = MatrixImageItem(theme.masked if masked else None)
        self.image.setLookupTable(self._lut)
        self.addItem(self.image)
        self.cells = CellTextItem()
        self.addItem(self.cells)

        self.row_marker = self._add_marker(10)  # the current step's row
        self.hover_marker = self._add_marker(11)  # the cell under the mouse
        self.linked_marker = self._add_marker(9)  # a query row hovered in another view
        self._linked_row: int | None = None

        self.colorbar: pg.ColorBarItem | None = None
        if colorbar:
            self.colorbar = pg.ColorBarItem(
                values=self._levels,
                colorMap=get_colormap(colormap),
                interactive=False,
                width=12,
                colorMapMenu=False,
                label=colorbar_label,
            )
            self.colorbar.setImageItem(self.image, insert_in=self)
            self.colorbar.axis.setWidth(38)
            if colorbar_label:  # the label's own axis, beside the bar (left to itself it may get no width and sit on the bar)
                self.colorbar.getAxis("left").setWidth(18)
                self.colorbar.layout.setColumnFixedWidth(0, 18)
            slim_colorbar(self.colorbar)
        quiet_axes(self, self.colorbar)
        self.image.sigHovered.connect(self._on_cell_hovered)
        self.image.sigClicked.connect(self._on_cell_clicked)
        self.apply_theme(theme)

    def _add_marker(self, z: float) -> QtWidgets.QGraphicsRectItem:
        """An outline drawn over the cells (hidden until placed)."""
        marker = QtWidgets.QGraphicsRectItem()
        marker.setZValue(z)
        marker.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
        marker.setVisible(False)
        self.addItem(marker)
        return marker

    # settings ---------------------------------------------------------------
    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._left.apply_theme(theme)
        self._top.apply_theme(theme)
        args = getattr(self, "_panel_title_args", None)
        if args is not None:
            self._panel_title = None
            self.set_panel_title(args[0], color=args[1], size=args[2])
        self.image.set_masked_color(theme.masked if self._masked else None)
        self.row_marker.setPen(pen(theme.highlight, 2))
        self.hover_marker.setPen(pen(theme.selection, 2))
        self.linked_marker.setPen(pen(theme.selection, 1.5, QtCore.Qt.PenStyle.DashLine))
        if self.colorbar is not None:
            for name in ("left", "right", "top", "bottom"):
                ax = self.colorbar.getAxis(name)
                ax.setPen(pg.mkPen(theme.muted))
                ax.setTextPen(pg.mkPen(theme.foreground))
                ax.setStyle(tickFont=ui_font(8))
        self.update()

    def set_colormap(self, name: str) -> None:
        self._lut = lookup_table(name)
        if self.colorbar is not None:
            self.colorbar.setColorMap(get_colormap(name))
        self.image.setLookupTable(self._lut)
        self._update_cells()

    def lut(self) -> np.ndarray:
        return self._lut

    def levels(self) -> tuple[float, float]:
        return self._levels

    def set_panel_title(self, text: str, *, color: str | None = None, size: str = "10pt") -> None:
        """The plot's title; unlike ``setTitle`` it never widens the layout (it clips)."""
        label = self.titleLabel
        key = (text, color or self.theme.foreground, size)
        if getattr(self, "_panel_title", None) == key:
            return
        self._panel_title = key
        self._panel_title_args = (text, color, size)
        if label.updateMin.__func__ is not relaxed_update_min:
            label.updateMin = types.MethodType(relaxed_update_min, label)
            label.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape, True)
            # over the whole plot (axes and colour bar), not the matrix alone: more room before it clips
            self.layout.removeItem(label)
            self.layout.addItem(label, 0, 0, 1, 6)
        self.setTitle(text, color=color or self.theme.foreground, size=size)

    def set_axis_titles(self, rows: str | None, cols: str | None) -> None:
        if rows is not None:
            self._left.set_title(rows)
        if cols is not None:
            self._top.set_title(cols)

    def set_row_labels_visible(self, visible: bool) -> None:
        self._left.set_labels_visible(visible)

    def set_col_labels_visible(self, visible: bool) -> None:
        self._top.set_labels_visible(visible)

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
            levels = (lo, hi if hi > lo else lo + 1e-6)
        raw = np.array(m, dtype=np.float32)
        shown = (tuple(row_labels), tuple(col_labels), highlight_row, levels or self._levels)
        if shown == self._shown and self._raw is not None and raw.shape == self._raw.shape and np.array_equal(raw, self._raw, equal_nan=True):
            return  # the same picture: nothing to lay out or paint again
        self._shown = shown
        if levels is not None:
            self._levels = levels
            if self.colorbar is not None:
                self.colorbar.setLevels(self._levels)
        self._raw = raw
        self.image.set_matrix(self._raw, self._levels)
        shape_changed = (rows, cols) != self._shape
        self._shape = (rows, cols)
        self._row_labels = tuple(display_piece(str(x)) for x in row_labels)
        self._col_labels = tuple(display_piece(str(x)) for x in col_labels)
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
        self._place_linked_marker()
        self._update_cells()
        hover = self.image.hovered_cell()
        if hover is not None:  # the mouse did not move, the value under it did
            inside = hover[0] < rows and hover[1] < cols
            self.image.set_hovered_cell(hover if inside else None)
            self._on_cell_hovered(hover if inside else None)

    def set_linked_row(self, row: int | None) -> None:
        """Outline row ``row`` dashed (a query hovered in another view); ``None``: none."""
        self._linked_row = row
        self._place_linked_marker()

    def linked_row(self) -> int | None:
        """The row outlined for another view's hover, if it is shown."""
        return self._linked_row if self.linked_marker.isVisible() else None

    def _place_linked_marker(self) -> None:
        rows, cols = self._shape
        row = self._linked_row
        if row is None or not 0 <= row < rows:
            self.linked_marker.setVisible(False)
            return
        self.linked_marker.setRect(QtCore.QRectF(-0.5, row - 0.5, cols, 1.0))
        self.linked_marker.setVisible(True)

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
        self.image.set_hovered_cell((row, col))
        self._on_cell_hovered((row, col))
        return self._info((row, col))

    def cell_center_in_scene(self, row: int, col: int) -> QtCore.QPointF:
        return self.getViewBox().mapViewToScene(QtCore.QPointF(float(col), float(row)))
