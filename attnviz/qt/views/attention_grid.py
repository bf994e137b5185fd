"""The model view: every layer × head of one kind of attention as small heatmaps.

All tiles are ONE ``ImageItem``: the ``[layer, head, query, key]`` weights are laid out
into a single image with one-cell gaps (NaN, transparent) between tiles, so an update is
one ``setImage`` whatever the number of heads (48 separate items cost ~13× more per frame).
Layer and head labels are axes; the current step's row, the selected tile and the hovered
tile are outlines drawn on top. Clicking a tile (or Enter on the selected one) chooses it
(``chose``) and emits ``tileClicked(layer, head)``; with "Ablate" on, a click (or A on the
selected tile) asks for that head to be ablated or given back instead (``headToggled``), and
each ablated head carries a cross.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame, FigureData
from attnviz.core.model.interventions import ABLATION_KINDS
from attnviz.core.model.sites import KINDS
from attnviz.qt.core_text import ablation_name, kind_formula, kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice, query_axis
from attnviz.qt.views.base import (
    CURRENT_ROW_LEGEND,
    AttentionSetsMixin,
    ExportAllHeadsMixin,
    FigureViewBase,
    make_combo,
    piece_text,
    set_combo_items,
    word_start_legend,
)
from attnviz.qt.views.spec import ATTENTION_SELECTORS, CROSS_FIRST, ViewSpec, attention_frame, encoder_side
from attnviz.qt.widgets.colormaps import Theme, get_colormap, lookup_table, ui_font
from attnviz.qt.widgets.heatmap import quiet_axes, setup_matrix_plot, slim_colorbar
from attnviz.qt.widgets.matrix_image import MatrixImageItem
from attnviz.qt.widgets.token_axis import TokenAxis


@dataclass(frozen=True)
class GridHoverInfo:
    layer: int
    head: int
    row: int
    col: int
    value: float
    row_label: str
    col_label: str


MAX_TILE_PIXELS = 128  # a tile's side in image pixels at most: a longer input's blocks of cells are pooled


def tile_layout(n_query: int, n_key: int) -> int:
    """Gap between tiles, in (pooled) cells."""
    return 1 if max(n_query, n_key) <= 24 else 2


def pool_factor(n: int) -> int:
    """Cells per image pixel along an axis of ``n`` cells: 1 up to ``MAX_TILE_PIXELS``."""
    return max(1, math.ceil(n / MAX_TILE_PIXELS))


def pooled(weights: np.ndarray, fq: int, fk: int) -> np.ndarray:
    """``weights`` [layer, head, query, key] with each ``fq``×``fk`` block of cells as one pixel, the
    block's largest weight (a strong weight stays visible however long the input)."""
    return _max_every(_max_every(weights, fq, 2), fk, 3)  # the rows first: whole rows at a time, and fewer left for the keys


def extends(old: np.ndarray, new: np.ndarray) -> bool:
    """Whether read-only ``new`` [layer, head, query, key] holds read-only ``old`` as its first rows
    and keys, in the very same memory (a decoding's next step: a longer view of the buffer its rows
    grow in). Read-only memory that is not written again is then ``old``'s values, unread."""
    if old.ndim != 4 or new.ndim != 4 or old.shape[:2] != new.shape[:2] or old.strides != new.strides:
        return False
    if new.shape[2] < old.shape[2] or new.shape[3] < old.shape[3] or old.flags.writeable or new.flags.writeable:
        return False
    return old.__array_interface__["data"][0] == new.__array_interface__["data"][0]


def pool_into(store: np.ndarray, weights: np.ndarray, pool: tuple[int, int], done: tuple[int, int] = (0, 0)) -> np.ndarray:
    """:func:`pooled` of ``weights`` by ``pool``, written into ``store`` [layer, head, ≥ its rows,
    ≥ its keys] and returned as the view of ``store`` that holds it. ``store`` already holds the
    pooling of ``weights``' first ``done`` (rows, keys): only the blocks holding a cell outside
    those are pooled again, so a decoding's next row costs its own block, not every row before it."""
    fq, fk = pool
    nq, nk = weights.shape[2:]
    out = store[:, :, : -(-nq // fq), : -(-nk // fk)]
    bq, bk = done[0] // fq, done[1] // fk  # blocks wholly inside the rows and keys done
    out[:, :, bq:] = pooled(weights[:, :, bq * fq :], fq, fk)
    if bq and bk < out.shape[3]:
        out[:, :, :bq, bk:] = pooled(weights[:, :, : bq * fq, bk * fk :], fq, fk)
    return out


def _max_every(a: np.ndarray, f: int, axis: int) -> np.ndarray:
    """The largest of each ``f`` neighbours along ``axis`` (the last group may be shorter): element-
    wise maxima of strided views written into the result, much faster than a reduction over a
    short inner axis."""
    if f == 1:
        return a

    def along(x: np.ndarray, s: slice) -> np.ndarray:
        pick = [slice(None)] * x.ndim
        pick[axis] = s
        return x[tuple(pick)]

    n = a.shape[axis]
    full, rest = divmod(n, f)
    shape = list(a.shape)
    shape[axis] = full + (1 if rest else 0)
    out = np.empty(shape, np.float32)
    head = along(out, slice(0, full))
    np.maximum(along(a, slice(0, full * f, f)), along(a, slice(1, full * f, f)), out=head)
    for j in range(2, f):
        np.maximum(head, along(a, slice(j, full * f, f)), out=head)
    if rest:
        along(out, slice(full, full + 1))[...] = along(a, slice(full * f, n)).max(axis=axis, keepdims=True)
    return out


def tile_image(weights: np.ndarray, gap: int, out: np.ndarray | None = None) -> np.ndarray:
    """Lay ``weights`` [layer, head, query, key] out as one image, NaN in the gaps.

    Tile (l, h) occupies rows ``l*(query+gap) … +query`` and columns ``h*(key+gap) … +key``.
    ``out`` is reused when it has the image's width and at least its rows (a previous result, or
    a store with spare rows: the image is its first rows); its gaps are made NaN again.
    """
    n_layers, n_heads, nq, nk = weights.shape
    shape = (n_layers * (nq + gap) - gap, n_heads * (nk + gap) - gap)
    if out is None or out.shape[1] != shape[1] or out.shape[0] < shape[0]:
        out = np.full(shape, np.nan, dtype=np.float32)
    elif out.shape[0] != shape[0]:
        out = out[: shape[0]]
    for layer in range(n_layers):
        r0 = layer * (nq + gap)
        out[r0 + nq : r0 + nq + gap] = np.nan
        for head in range(n_heads):
            c0 = head * (nk + gap)
            out[r0 : r0 + nq, c0 : c0 + nk] = weights[layer, head]
            out[r0 : r0 + nq, c0 + nk : c0 + nk + gap] = np.nan
    return out


class _GridPlot(pg.PlotItem):
    def __init__(self, theme: Theme):
        self.left_axis = TokenAxis("left", theme)
        self.top_axis = TokenAxis("top", theme)
        super().__init__(axisItems={"left": self.left_axis, "top": self.top_axis}, enableMenu=False)
        setup_matrix_plot(self)


class QtAttentionGridView(AttentionSetsMixin, ExportAllHeadsMixin, FigureViewBase):
    """All layers × heads of one kind of attention; click a tile to open it.

    ``set_data(data)`` takes an :class:`AttentionFrame` (every kind's [layer, head, query, key]
    weights; with several kinds a kind selector appears), or one kind's :class:`AttentionData`
    or a mapping kind → AttentionData. ``apply(choice)`` takes its kind, layer and head. Its
    "Words" switch (``groupWords``) tiles the matrices between words, its "Content" switch
    (``contentOnly``) over content keys only (:class:`AttentionSetsMixin`).
    Signals: ``chose`` (a tile: its layer and head; the kind selector: the kind),
    ``tileClicked(layer, head)`` (0-based) when a tile is opened, ``hovered(GridHoverInfo | None)``.
    """

    tileClicked = QtCore.Signal(int, int)
    hovered = QtCore.Signal(object)
    headToggled = QtCore.Signal(str, int, int)  # kind, layer, head (0-based): ablate it, or give it back
    ablationKindChosen = QtCore.Signal(str)  # zero, mean or uniform

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.StrongFocus)
        self._datasets: dict[str, AttentionData] = {}
        self._kind: str | None = None
        self._selected: tuple[int, int] = (0, 0)
        self._hover_tile: tuple[int, int] | None = None
        self._geometry = (0, 0, 0, 0, 1)  # layers, heads, query, key (pixels of a tile), gap
        self._pool = (1, 1)  # cells per pixel along the query and the key axis (pool_factor)
        self._pooled: tuple[AttentionData | None, np.ndarray | None] = (None, None)  # the data pooled last, and its tiles
        self._tile_store: np.ndarray | None = None  # [layer, head, MAX_TILE_PIXELS, MAX_TILE_PIXELS]: the tiles live in its corner
        self._buffer: np.ndarray | None = None
        self._ablated: frozenset[tuple[str, int, int]] = frozenset()

        self.kind_combo = self._add_control("", make_combo("gridKindCombo", translate("attention_grid", "Which attention: encoder self, decoder masked self or cross")))
        self._add_ablation_controls()
        self._add_control("", self._stacked(self._group_words_box(), self._content_only_box()))
        self.controls.addStretch(1)
        self.kind_combo.currentIndexChanged.connect(self._on_kind_combo)

        self.plot = _GridPlot(self.theme)
        self.canvas.addItem(self.plot, row=1, col=0)
        self.canvas.ci.layout.setRowStretchFactor(1, 1)
        self.plot.left_axis.set_title(translate("attention_grid", "layers"))
        self.plot.top_axis.set_title(translate("attention_grid", "heads"))
        self.plot.left_axis.set_line_visible(False)
        self.plot.top_axis.set_line_visible(False)

        self.image = MatrixImageItem(masked_color=None)
        self.image.setLookupTable(lookup_table(self.colormap()))
        self.plot.addItem(self.image)
        self.colorbar = pg.ColorBarItem(
            values=(0.0, 1.0), colorMap=get_colormap(self.colormap()), interactive=False, width=12,
            colorMapMenu=False, label=translate("attention_grid", "attention weight"),
        )
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.colorbar.axis.setWidth(38)
        slim_colorbar(self.colorbar)
        quiet_axes(self.plot, self.colorbar)

        # outlines, in image-pixel coordinates (children of the image)
        self.step_rows = QtWidgets.QGraphicsPathItem(self.image)
        self.step_rows.setZValue(10)
        self.selected_outline = QtWidgets.QGraphicsRectItem(self.image)
        self.selected_outline.setZValue(12)
        self.hover_outline = QtWidgets.QGraphicsRectItem(self.image)
        self.hover_outline.setZValue(11)
        self.hover_outline.setVisible(False)
        self.linked_rows = QtWidgets.QGraphicsPathItem(self.image)  # a query row hovered in another view
        self.linked_rows.setZValue(9)
        self._linked_row: int | None = None
        self.ablated_marks = QtWidgets.QGraphicsPathItem(self.image)  # a cross over each ablated head
        self.ablated_marks.setZValue(13)
        for item in (self.step_rows, self.selected_outline, self.hover_outline, self.linked_rows, self.ablated_marks):
            item.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
        self.image.sigHovered.connect(self._on_pixel_hovered)
        self.image.sigClicked.connect(self._on_pixel_clicked)
        self.plot.getViewBox().sigResized.connect(self._fit_range)
        self._on_theme_changed()
        self._set_title()

    # data -------------------------------------------------------------------------
    def render(self, data: AttentionFrame | AttentionData | Mapping[str, AttentionData]) -> None:
        """Show new weights (updates the one tiled image in place)."""
        frame = AttentionFrame.of(data)
        self._take_frame(frame)
        self._ablated = frame.ablated
        set_combo_items(self.ablation_combo, [(ablation_name(k), k) for k in ABLATION_KINDS], frame.ablation)
        if self._kind not in self._datasets:
            self._kind = next(iter(self._datasets))
        set_combo_items(self.kind_combo, [(kind_title(k), k) for k in self._datasets], self._kind)
        self.kind_combo.setVisible(len(self._datasets) > 1)
        self._refresh()

    def set_kind(self, kind: str) -> None:
        self._require_kind(kind)
        if kind != self._kind:
            self._kind = kind
            set_combo_items(self.kind_combo, [(kind_title(k), k) for k in self._datasets], kind)
            self._refresh()
            self.chose.emit({"kind": kind})

    def apply(self, choice: ViewChoice) -> None:
        if self.given_kind(choice) is not None:
            self.set_kind(choice.kind)
        if choice.layer is not None or choice.head is not None:
            layer, head = self.selected()
            self.set_selected(layer if choice.layer is None else choice.layer, head if choice.head is None else choice.head)

    def selected(self) -> tuple[int, int]:
        """The selected tile (layer, head), 0-based."""
        return self._selected

    def set_selected(self, layer: int, head: int) -> None:
        d = self.data()
        if d is not None:
            layer = min(max(int(layer), 0), d.n_layers - 1)
            head = min(max(int(head), 0), d.n_heads - 1)
        self._selected = (layer, head)
        self._update_outlines()

    def tiled_image(self) -> np.ndarray | None:
        """The single image the grid draws ([layers·(query+gap)−gap, heads·(key+gap)−gap]; a long
        input's query and key are pooled to at most ``MAX_TILE_PIXELS``, :func:`pooled`)."""
        return self.image.values()

    def pool(self) -> tuple[int, int]:
        """Cells per pixel of the tiled image along the query and the key axis (1, 1: none pooled)."""
        return self._pool

    def tile_center_in_scene(self, layer: int, head: int) -> QtCore.QPointF:
        return self.plot.getViewBox().mapViewToScene(QtCore.QPointF(float(head), float(layer)))

    def tile_on_screen(self, layer: int, head: int) -> QtCore.QRect:
        """Where tile ``(layer, head)`` is drawn, in the canvas's pixels."""
        box = self.image.mapRectToScene(self._tile_rect(layer, head))
        return self.canvas.mapFromScene(box).boundingRect()

    def tile_of_pixel(self, row: int, col: int) -> tuple[int, int, int, int] | None:
        """(layer, head, query, key) of an image pixel, or None in a gap. A pooled pixel gives the
        cell of its block with the largest weight: the one whose colour it shows."""
        n_layers, n_heads, nq, nk, gap = self._geometry
        layer, q = divmod(row, nq + gap)
        head, k = divmod(col, nk + gap)
        if q >= nq or k >= nk or layer >= n_layers or head >= n_heads:
            return None
        (fq, fk), d = self._pool, self.data()
        if (fq, fk) == (1, 1) or d is None:
            return layer, head, q, k
        block = d.weights[layer, head, q * fq : (q + 1) * fq, k * fk : (k + 1) * fk]
        bq, bk = np.unravel_index(int(np.argmax(block)), block.shape)
        return layer, head, q * fq + int(bq), k * fk + int(bk)

    def ablated(self) -> frozenset[tuple[str, int, int]]:
        """The heads the shown run ablates: ``(kind, layer, head)``, 0-based."""
        return self._ablated

    # ablation -----------------------------------------------------------------------
    @staticmethod
    def _stacked(*boxes: QtWidgets.QWidget) -> QtWidgets.QWidget:
        """``boxes`` one above the other: the controls' row keeps to a projector's width (1024 px)."""
        stack = QtWidgets.QWidget(objectName="gridSwitches")
        column = QtWidgets.QVBoxLayout(stack)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        for box in boxes:
            column.addWidget(box)
        return stack

    def _add_ablation_controls(self) -> None:
        self.ablate_button = QtWidgets.QToolButton(objectName="gridAblateButton", text=translate("attention_grid", "Ablate"), checkable=True)
        self.ablate_button.setToolTip(translate("attention_grid", "Ablate heads: a click on a tile (or A) takes that head out of the model, "
                                                "a second click gives it back; decoding runs again with the change"))
        self.ablation_combo = make_combo("gridAblationKind", translate("attention_grid", "How an ablated head is taken out: zero (Z_i = 0 before W^O), "
                                         "mean (Z_i = its mean over this sentence) or uniform (equal attention to every key)"))
        set_combo_items(self.ablation_combo, [(ablation_name(k), k) for k in ABLATION_KINDS], ABLATION_KINDS[0])
        self.ablation_combo.activated.connect(lambda _i: self.ablationKindChosen.emit(self.ablation_combo.currentData()))
        self._add_control("", self.ablate_button)
        self._add_control("", self.ablation_combo)
        fixed = QtWidgets.QSizePolicy.Policy.Fixed
        for w in (self.kind_combo, self.ablate_button, self.ablation_combo):  # never cut: the caption gives way
            w.setSizePolicy(fixed, fixed)

    def _update_ablated_marks(self) -> None:
        path = QtGui.QPainterPath()
        for kind, layer, head in self._ablated:
            if kind == self._kind and layer < self._geometry[0] and head < self._geometry[1]:
                r = self._tile_rect(layer, head)
                path.addRect(r)
                path.moveTo(r.topLeft())
                path.lineTo(r.bottomRight())
                path.moveTo(r.topRight())
                path.lineTo(r.bottomLeft())
        self.ablated_marks.setPath(path)

    def _toggle(self, layer: int, head: int) -> None:
        if self._kind is not None:
            self.headToggled.emit(self._kind, layer, head)

    # internals --------------------------------------------------------------------
    def _on_kind_combo(self) -> None:
        kind = self.kind_combo.currentData()
        if kind and kind != self._kind:
            self._kind = kind
            self._refresh()
            self.chose.emit({"kind": kind})

    def _refresh(self) -> None:
        d = self.data()
        self._set_title()
        if d is None:
            return
        n_layers, n_heads = d.weights.shape[:2]
        tiles = self._tiles(d)
        nq, nk = tiles.shape[2:]
        gap = tile_layout(nq, nk)
        geometry = (n_layers, n_heads, nq, nk, gap)
        self.image.set_matrix(tile_image(tiles, gap, self._canvas(n_layers, n_heads * (nk + gap) - gap)), (0.0, 1.0))
        if geometry != self._geometry:
            self._geometry = geometry
            # image pixels → view units where tile (l, h) is centred on (h, l)
            sx, sy = 1.0 / (nk + gap), 1.0 / (nq + gap)
            self.image.setTransform(QtGui.QTransform(sx, 0, 0, 0, sy, 0, -nk * sx / 2, -nq * sy / 2, 1))
            self._fit_range()
            self.plot.left_axis.set_labels([translate("attention_grid", "layer {n}").format(n=i + 1) for i in range(n_layers)])
            self.plot.top_axis.set_labels([translate("attention_grid", "head {n}").format(n=i + 1) for i in range(n_heads)])
            self._selected = (min(self._selected[0], n_layers - 1), min(self._selected[1], n_heads - 1))
            self._hover_tile = None
            self.hover_outline.setVisible(False)
        self._update_step_rows(d)
        self._update_linked_rows()
        self._update_outlines()
        self._update_ablated_marks()

    def _tiles(self, d: AttentionData) -> np.ndarray:
        """``d``'s weights as the tiles show them: pooled when long (:func:`pooled`), once per data,
        into one store kept from data to data; weights that extend the ones pooled last
        (:func:`extends`: the next step of a decoding) pool only their new blocks (:func:`pool_into`)."""
        last, tiles = self._pooled
        if last is d:
            return tiles
        w = d.weights
        pool = (pool_factor(w.shape[2]), pool_factor(w.shape[3]))
        if self._tile_store is None or self._tile_store.shape[:2] != w.shape[:2]:
            self._tile_store, last = np.empty(w.shape[:2] + (MAX_TILE_PIXELS, MAX_TILE_PIXELS), np.float32), None
        done = last.weights.shape[2:] if last is not None and pool == self._pool and extends(last.weights, w) else (0, 0)
        tiles = pool_into(self._tile_store, w, pool, done)
        self._pool, self._pooled = pool, (d, tiles)
        return tiles

    def _canvas(self, n_layers: int, width: int) -> np.ndarray:
        """The store the tiled image is laid out in, kept from step to step: ``width`` columns and
        rows for the tallest tiles (``MAX_TILE_PIXELS``); the image is its first rows."""
        rows = n_layers * (MAX_TILE_PIXELS + 2)
        if self._buffer is None or self._buffer.shape != (rows, width):
            self._buffer = np.full((rows, width), np.nan, np.float32)
        return self._buffer

    def _fit_range(self) -> None:
        """Square cells, tiles at the top under their head labels (spare height goes below)."""
        n_layers, n_heads, nq, nk, gap = self._geometry
        if not n_layers:
            return
        vb = self.plot.getViewBox()
        sx, sy = 1.0 / (nk + gap), 1.0 / (nq + gap)
        mx, my = 0.6 * sx, 0.6 * sy  # room for the selected tile's outline (0.45 cells outside it)
        x0, x1 = -nk * sx / 2 - mx, n_heads - 1 + nk * sx / 2 + mx
        y0, y1 = -nq * sy / 2 - my, n_layers - 1 + nq * sy / 2 + my
        w_px, h_px = max(vb.width(), 1.0), max(vb.height(), 1.0)
        ratio = (nk + gap) / (nq + gap)  # pixels per x unit over pixels per y unit, for square cells
        scale = min(h_px / (y1 - y0), w_px / ((x1 - x0) * ratio))  # pixels per y unit
        width = w_px / (scale * ratio)
        cx = (x0 + x1) / 2
        vb.setRange(xRange=(cx - width / 2, cx + width / 2), yRange=(y0, y0 + h_px / scale), padding=0.0)

    def _tile_rect(self, layer: int, head: int, grow: float = 0.0) -> QtCore.QRectF:
        _, _, nq, nk, gap = self._geometry
        return QtCore.QRectF(head * (nk + gap) - grow, layer * (nq + gap) - grow, nk + 2 * grow, nq + 2 * grow)

    def _row_path(self, row: int | None) -> QtGui.QPainterPath:
        """Query row ``row`` (its pixel row, when pooled) outlined in every tile (an empty path for ``None``)."""
        path = QtGui.QPainterPath()
        n_layers, n_heads, nq, nk, gap = self._geometry
        pixel = None if row is None else row // self._pool[0]
        if pixel is not None and 0 <= pixel < nq:
            for layer in range(n_layers):
                for head in range(n_heads):
                    path.addRect(QtCore.QRectF(head * (nk + gap), layer * (nq + gap) + pixel, nk, 1.0))
        return path

    def _update_step_rows(self, d: AttentionData) -> None:
        self.step_rows.setPath(self._row_path(d.highlight))

    def _update_linked_rows(self) -> None:
        self.linked_rows.setPath(self._row_path(self._linked_row))

    def show_linked_query(self, axis: str, row: int) -> None:
        """Outline query ``row`` (dashed) in every tile when this grid's rows are ``axis`` pieces."""
        row_or_none = self._word_row(row) if row >= 0 and query_axis(self._kind) == axis else None
        if row_or_none != self._linked_row:
            self._linked_row = row_or_none
            self._update_linked_rows()

    def linked_row(self) -> int | None:
        return self._linked_row

    def _update_outlines(self) -> None:
        if self.data() is None:
            self.selected_outline.setVisible(False)
            return
        self.selected_outline.setRect(self._tile_rect(*self._selected, grow=0.45))
        self.selected_outline.setVisible(True)
        if self._hover_tile is not None:
            self.hover_outline.setRect(self._tile_rect(*self._hover_tile, grow=0.25))

    def _set_title(self) -> None:
        d = self.data()
        if d is None:
            self.title.set_title(translate("attention_grid", "No attention to show yet"))
            return
        formula = kind_formula(d.kind, d.form).replace("A =", "A_i =", 1)
        self.title.set_title(self._what(d), formula)
        self._set_legend(d)

    def _set_legend(self, d: AttentionData) -> None:
        t = self.theme
        legend = [("▭", t.selection, translate("attention_grid", "selected head"))]
        if d.highlight is not None:
            legend.insert(0, ("▭", t.highlight, translate("base", CURRENT_ROW_LEGEND)))
        if any(kind == d.kind for kind, _, _ in self._ablated):
            legend.append(("✕", t.ablated, translate("attention_grid", "ablated head")))
        self.title.set_legend((*legend, *word_start_legend(d.query_labels, d.key_labels), *self._switch_legend(d.weights)))

    def _on_pixel_hovered(self, cell) -> None:
        d = self.data()
        hit = self.tile_of_pixel(*cell) if (cell is not None and d is not None) else None
        if hit is None:
            self._hover_tile = None
            self.hover_outline.setVisible(False)
            self.readout.setText(" ")
            self.hovered.emit(None)
            self.queryHovered.emit(self._kind or "", -1)
            return
        layer, head, q, k = hit
        self._hover_tile = (layer, head)
        self.hover_outline.setRect(self._tile_rect(layer, head, grow=0.25))
        self.hover_outline.setVisible(True)
        value = float(d.weights[layer, head, q, k])
        info = GridHoverInfo(layer, head, q, k, value, d.query_labels[q], d.key_labels[k])
        original = self._original(lambda source: source.weights[layer, head])
        self.readout.setText(translate("attention_grid", "layer {layer} · head {head}:  {query}  ·  key {key}     weight = {value:.4f}").format(
            layer=layer + 1, head=head + 1, query=self._query_text(q), key=piece_text(d.key_labels, k), value=value)
            + ("" if original is None else self._before_text(value, float(original[q, k]))))
        self.hovered.emit(info)
        self.queryHovered.emit(d.kind, self._piece_row(q))

    def _on_pixel_clicked(self, cell, _button) -> None:
        hit = self.tile_of_pixel(*cell)
        if hit is None:
            return
        self.set_selected(hit[0], hit[1])
        if self.ablate_button.isChecked():
            self._toggle(hit[0], hit[1])
        else:
            self._open(hit[0], hit[1])

    def _open(self, layer: int, head: int) -> None:
        """The user opened tile (layer, head): it is chosen, then opened."""
        self.chose.emit({"layer": layer, "head": head, "mode": "head"})
        self.tileClicked.emit(layer, head)

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:
        d = self.data()
        if d is None:
            return super().keyPressEvent(event)
        layer, head = self._selected
        key = event.key()
        moves = {
            QtCore.Qt.Key.Key_Left: (0, -1),
            QtCore.Qt.Key.Key_Right: (0, 1),
            QtCore.Qt.Key.Key_Up: (-1, 0),
            QtCore.Qt.Key.Key_Down: (1, 0),
        }
        if key in moves:
            dl, dh = moves[key]
            self.set_selected(layer + dl, head + dh)
        elif key in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter, QtCore.Qt.Key.Key_Space):
            self._open(layer, head)
        elif key == QtCore.Qt.Key.Key_A:
            self._toggle(layer, head)
        else:
            super().keyPressEvent(event)

    # settings -------------------------------------------------------------------------
    def _on_theme_changed(self) -> None:
        t = self.theme
        self.plot.left_axis.apply_theme(t)
        self.plot.top_axis.apply_theme(t)
        for item, colour, width, style in (
            (self.step_rows, t.highlight, 1.0, QtCore.Qt.PenStyle.SolidLine),
            (self.selected_outline, t.selection, 2.5, QtCore.Qt.PenStyle.SolidLine),
            (self.hover_outline, t.muted, 1.5, QtCore.Qt.PenStyle.SolidLine),
            (self.linked_rows, t.selection, 1.0, QtCore.Qt.PenStyle.DashLine),
            (self.ablated_marks, t.ablated, 2.0, QtCore.Qt.PenStyle.SolidLine),
        ):
            pen = pg.mkPen(colour, width=width, style=style)
            pen.setCosmetic(True)
            item.setPen(pen)
        if self.data() is not None:
            self._set_legend(self.data())
        for name in ("left", "right", "top", "bottom"):
            ax = self.colorbar.getAxis(name)
            ax.setPen(pg.mkPen(t.muted))
            ax.setTextPen(pg.mkPen(t.foreground))
            ax.setStyle(tickFont=ui_font(8))
        if self._colormap is None:
            self._on_colormap_changed()

    def _on_colormap_changed(self) -> None:
        self.colorbar.setColorMap(get_colormap(self.colormap()))
        self.image.setLookupTable(lookup_table(self.colormap()))

    # figure protocol -------------------------------------------------------------------
    @staticmethod
    def _what(d: AttentionData) -> str:
        return translate("attention_grid", "{kind} · {layers} layers × {heads} heads").format(
            kind=kind_title(d.kind), layers=d.n_layers, heads=d.n_heads)

    def figure_title(self) -> str:
        d = self.data()
        return translate("attention_grid", "Attention grid") if d is None else self._what(d)

    def figure_data(self) -> FigureData:
        d = self.data()
        if d is None:
            raise ValueError("the view shows no data yet")
        return FigureData(
            title=self.figure_title(),
            dims=("layer", "head", "query", "key"),
            values={"weight": d.weights},
            coords={
                "layer": tuple(str(i + 1) for i in range(d.n_layers)),
                "head": tuple(str(i + 1) for i in range(d.n_heads)),
                "query": d.query_labels,
                "key": d.key_labels,
            },
        )

    def transient_items(self):
        return [self.hover_outline, self.linked_rows]


SPEC = ViewSpec("grid", QtAttentionGridView, "", "central", ATTENTION_SELECTORS, data=attention_frame,
                kinds=KINDS, head_modes=("all",), opening=CROSS_FIRST, depends_on=encoder_side)
