"""Positional encoding: where each position's "address" comes from and how big it is.

    PE(pos, 2i) = sin(pos / 10000^(2i/d_model))      PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))

Four panels, all for the current sentence lengths:

* the PE matrix, position × dimension (low dimensions oscillate fast, high ones slowly);
* chosen dimensions as curves over the positions (the sine/cosine pairs);
* PE·PEᵀ, the dot product of every pair of positions: near positions are alike, and the
  similarity depends on the distance more than on the position (why "猫吃鱼" and "鱼吃猫"
  differ to the model);
* the current tokens' embeddings (× √d_model), their PE rows and the sum the first layer reads,
  side by side, with the norm of each row.

The view renders :class:`PositionalData` built from ``attnviz.core.analysis.stats``
(``positional_encoding``, ``positional_similarity``, ``embedding_positional_ratio``) and the
trace's ``<stack>.embed.tokens / positional / sum``; it computes nothing but a row norm when one
is not given.

A model with a learned table (BART, GPT-2's ``wpe``) shows its own rows: the PE matrix and the
curves are the table's values, named by column only (no sin/cos pair, no formula), and the
colour and curve scales follow them rather than ±1.

The tutorial's ``i`` is the index of a sin/cos *pair*: column ``2i`` holds the sine and column
``2i+1`` the cosine of the same frequency. Axes, legend and read-outs name a column by its index
and say which of the two it is and what its ``i`` is (column 5 = 2i+1 with i = 2). Positions are
1-based on screen, as everywhere in the app; the formula's ``pos`` is the position − 1.

In a short dock the figure keeps a readable height and scrolls (:data:`MIN_HEIGHT`).

The data classes are in :mod:`attnviz.core.analysis.positional`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.positional import PositionalData, column_pair, positional_data_for
from attnviz.core.data.pieces import WORD_START, display_piece
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP, Theme, ui_font
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo
from attnviz.qt.widgets.plots import curve
from attnviz.qt.widgets.title_item import TitleItem
from attnviz.qt.widgets.token_axis import TokenAxis

if TYPE_CHECKING:
    from attnviz.qt.session import Session

def default_dimensions(d_model: int) -> list[int]:
    """Two sine/cosine pairs from the fast end and one from the middle: 0, 1, 2, 3, d/2, d/2+1."""
    dims = [0, 1, 2, 3, d_model // 2, d_model // 2 + 1]
    return sorted({d for d in dims if 0 <= d < d_model})


MAX_DIMENSIONS = 12  # curves drawn at most
MIN_HEIGHT = 700  # px of the figure: below it, the view scrolls
MAX_DIMENSIONS_TEXT = 200  # characters of the Dimensions box


def _dimension_range(part: str) -> tuple[int, int] | None:
    """``"4-7"`` → (4, 7), ``"3"`` → (3, 3); None when malformed (digits only, at most 9 each)."""
    lo, sep, hi = part.partition("-")
    lo, hi = lo.strip(), (hi.strip() if sep else lo.strip())
    if not (lo.isascii() and lo.isdigit() and hi.isascii() and hi.isdigit()) or len(lo) > 9 or len(hi) > 9:
        return None
    return int(lo), int(hi)


def read_dimensions(text: str, d_model: int) -> tuple[list[int], str]:
    """``"0, 1, 4-7"`` → ([0, 1, 4, 5, 6, 7], ""): the dimensions typed, in order, and a one-line
    note on what was left out (malformed or out-of-range entries, more than 12 dimensions).

    A range is clipped to ``0 … d_model - 1`` and walked only until 12 dimensions are kept, so
    ``0-999999999`` costs no more than ``0-11``.
    """
    out: list[int] = []
    left_out, capped = 0, len(text) > MAX_DIMENSIONS_TEXT
    for part in text[:MAX_DIMENSIONS_TEXT].replace(";", ",").split(","):
        if not part.strip():
            continue
        bounds = _dimension_range(part)
        if bounds is None or bounds[0] >= d_model:
            left_out += 1
            continue
        for d in range(bounds[0], min(bounds[1], d_model - 1) + 1):
            if d in out:
                continue
            if len(out) == MAX_DIMENSIONS:
                capped = True
                break
            out.append(d)
    notes = []
    if left_out:
        text = (translate("positional", "1 entry left out (use numbers from 0 to {last}, or ranges like 4-7)") if left_out == 1 else
                translate("positional", "{n} entries left out (use numbers from 0 to {last}, or ranges like 4-7)"))
        notes.append(text.format(n=left_out, last=d_model - 1))
    if capped:
        notes.append(translate("positional", "at most {n} dimensions are drawn").format(n=MAX_DIMENSIONS))
    return out, translate("positional", "Dimensions: {notes}").format(notes="; ".join(notes)) if notes else ""


def _dim_labels(n: int) -> list[str]:
    """Column indices; the axis itself draws every k-th one when the cells are narrow."""
    return [str(i) for i in range(n)]


def column_role(column: int, d_model: int, layout: str = "interleaved", *, full: bool = True, translated: bool = True) -> str:
    """``"2i+1 with i = 2, cos"`` for column 5: which member of its sin/cos pair a column is
    (``full=False``: ``"2i+1 with i = 2"``); ``translated=False``: in English, for data files."""
    i, sine = column_pair(column, d_model, layout)
    if layout == "halves":
        text = QT_TRANSLATE_NOOP("positional", "sin of pair i = {i}") if sine else QT_TRANSLATE_NOOP("positional", "cos of pair i = {i}")
    else:
        text = QT_TRANSLATE_NOOP("positional", "2i with i = {i}") if sine else QT_TRANSLATE_NOOP("positional", "2i+1 with i = {i}")
    text = (translate("positional", text) if translated else text).format(i=i)
    return text + (", sin" if sine else ", cos") if full and layout != "halves" else text


def column_formula(column: int, d_model: int, layout: str = "interleaved", pos: str = "pos") -> str:
    """``cos(pos/10000^(4/128))`` for column 5 of d_model 128 (the exponent is 2i/d_model)."""
    i, sine = column_pair(column, d_model, layout)
    return f"{'sin' if sine else 'cos'}({pos}/10000^({2 * i}/{d_model}))"


def pe_extent(d: PositionalData) -> float:
    """The largest |PE value| the PE matrix and the curves span: 1 for sin/cos, a learned table's own."""
    if d.kind != "learned" or not d.pe.size:
        return 1.0
    return float(np.max(np.abs(d.pe))) or 1.0


def curve_label(column: int, d: PositionalData) -> str:
    """A curve's legend: ``column 5`` of a learned table; of sin/cos, its pair and formula on two lines
    (the legend column stays narrow beside the curves)."""
    if d.kind == "learned":
        return translate("positional", "column {column}").format(column=column)
    return translate("positional", "column {column} = {role}:<br>{formula}").format(
        column=column, role=column_role(column, d.d_model, d.layout, full=False), formula=column_formula(column, d.d_model, d.layout))


def column_name(column: int, d: PositionalData) -> str:
    """A column as data files name it (English): its index in a learned table, else its sin/cos role."""
    return str(column) if d.kind == "learned" else column_role(column, d.d_model, d.layout, full=False, translated=False)


# shown as translate("positional", FORMULA), translate("positional", NOTE), translate("positional", COLUMN_AXIS)
FORMULA = QT_TRANSLATE_NOOP("positional", "PE(pos, 2i) = sin(pos/10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos/10000^(2i/d_model)):  "
                                          "i numbers the sin/cos pairs")
NOTE = QT_TRANSLATE_NOOP("positional", "low columns turn fast, high ones slowly; PE·PEᵀ depends on the distance between positions")
LEARNED_FORMULA = QT_TRANSLATE_NOOP("positional", "a learned table: row pos is added to the embedding of the token at pos (no sin/cos formula)")
COLUMN_AXIS = QT_TRANSLATE_NOOP("positional", "column 2i (sin) · 2i+1 (cos)")
SIDES = {"source": QT_TRANSLATE_NOOP("positional", "Source"), "target": QT_TRANSLATE_NOOP("positional", "Target")}  # the Tokens combo
MATRICES = {"tokens": QT_TRANSLATE_NOOP("positional", "embedding"), "positional": QT_TRANSLATE_NOOP("positional", "PE"),
            "summed": QT_TRANSLATE_NOOP("positional", "sum")}  # the embedding panels, in the read-out


class QtPositionalView(FigureViewBase):
    """Positional encoding panels (see the module docstring).

    ``set_data(data: PositionalData)``; view settings: the dimensions drawn as curves
    (``set_dimensions``) and which side's tokens are shown (``set_side``).
    """

    given: PositionalData | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme, title_span=2)
        self._dims: list[int] | None = None  # None: default_dimensions
        self._side = "source"
        self._legend_key: tuple | None = None
        self._build_controls()
        ci = self.canvas.ci
        ci.layout.setHorizontalSpacing(10)
        ci.layout.setVerticalSpacing(6)
        self._build_encoding_plots(ci)
        self._build_curve_plot(ci)
        self._build_embedding_plots(ci.addLayout(row=3, col=0, colspan=2))
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._scroll_canvas()
        ci.layout.setRowStretchFactor(1, 3)
        ci.layout.setRowStretchFactor(2, 2)
        ci.layout.setRowStretchFactor(3, 3)
        for p in (self.pe_plot, self.sim_plot, *self.emb_plots.values()):
            p.sigHovered.connect(self._on_plot_hovered)
        self._apply_theme_to_items()
        self._refresh()

    # construction -----------------------------------------------------------------------------
    def _build_controls(self) -> None:
        """The dimensions drawn as curves and whose tokens are shown."""
        self.dims_edit = QtWidgets.QLineEdit(objectName="peDimsEdit")
        self.dims_edit.setPlaceholderText(translate("positional", "e.g. 0, 1, 4-7"))
        self.dims_edit.setToolTip(translate("positional", "Columns drawn as curves over the positions (column 2i: sin, column 2i+1: cos, i = the pair)"))
        self.dims_edit.setMaximumWidth(150)
        self.dims_edit.setMaxLength(MAX_DIMENSIONS_TEXT)
        self._add_control(translate("positional", "Columns"), self.dims_edit)
        self.dims_edit.editingFinished.connect(self._on_dims_edited)
        self.side_combo = self._add_control(translate("positional", "Tokens"), make_combo(
            "peSideCombo", translate("positional", "Whose embeddings: the source (encoder) or the target (decoder)")))
        self.side_combo.currentIndexChanged.connect(self._on_side_changed)
        self.controls.addStretch(1)

    def _build_encoding_plots(self, ci: pg.GraphicsLayout) -> None:
        """PE(pos, i) and the similarity of positions PE·PEᵀ, side by side."""
        self.pe_plot = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, levels=(-1.0, 1.0), colorbar_label=translate("positional", "PE value"),
                                   annotate=False, aspect_locked=False, masked=False, label_point_size=8.0)
        self.pe_plot.setTitle(translate("positional", "PE(pos, column)"), size="9.5pt")
        self.pe_plot.set_axis_titles(translate("positional", "position = pos + 1"), translate("positional", COLUMN_AXIS))
        self.sim_plot = HeatmapPlot(self.theme, colormap=self.colormap(), colorbar_label="PE·PEᵀ", annotate=False, aspect_locked=True,
                                    masked=False, label_point_size=8.0)
        self.sim_plot.setTitle(translate("positional", "PE·PEᵀ: similarity"), size="9.5pt")
        self.sim_plot.set_axis_titles(translate("positional", "position"), translate("positional", "position"))
        ci.addItem(self.pe_plot, row=1, col=0)
        ci.addItem(self.sim_plot, row=1, col=1)

    def _build_curve_plot(self, ci: pg.GraphicsLayout) -> None:
        """The chosen dimensions as curves over the positions, with their legend beside the plot."""
        self.curve_plot = pg.PlotItem(enableMenu=False)
        self.curve_plot.setMenuEnabled(False)
        self.curve_plot.hideButtons()
        self.curve_plot.getViewBox().setMouseEnabled(x=False, y=False)
        self.curve_plot.setTitle(translate("positional", "chosen columns"), size="9.5pt")
        self.curve_plot.setLabel("bottom", translate("positional", "position = pos + 1"))
        self.curve_plot.setLabel("left", translate("positional", "PE(pos, column)"))
        self.curve_plot.showGrid(x=True, y=True, alpha=0.15)
        self.curve_plot.setYRange(-1.1, 1.1, padding=0)
        self.curve_legend = pg.LegendItem(labelTextSize="8.5pt", colCount=1)  # beside the plot, never over the curves
        self.curves: list[pg.PlotDataItem] = []
        ci.addItem(self.curve_plot, row=2, col=0)
        ci.addItem(self.curve_legend, row=2, col=1)

    def _build_embedding_plots(self, emb: pg.GraphicsLayout) -> None:
        """Token embedding, PE and their sum as matrices, and the norms of the three as bars."""
        emb.layout.setHorizontalSpacing(4)
        self.emb_title = TitleItem(self.theme)
        emb.addItem(self.emb_title, row=0, col=0, colspan=4)
        self.emb_plots: dict[str, HeatmapPlot] = {}
        titles = (translate("positional", "emb.·√d_model"), "+ PE", translate("positional", "= input"))
        for col, (key, title) in enumerate(zip(("tokens", "positional", "summed"), titles)):
            p = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, colorbar=False, annotate=False, aspect_locked=False, masked=False,
                            label_point_size=8.5)
            p.setTitle(title, size="9.5pt")
            p.set_axis_titles(translate("positional", "token") if col == 0 else None, translate("positional", "column"))
            if col:
                p.set_row_labels_visible(False)
            emb.addItem(p, row=1, col=col)
            self.emb_plots[key] = p
        self._norm_axis = TokenAxis("left", self.theme, 8.5)
        self.norm_plot = pg.PlotItem(axisItems={"left": self._norm_axis}, enableMenu=False)
        self.norm_plot.setMenuEnabled(False)
        self.norm_plot.hideButtons()
        self.norm_plot.getViewBox().setMouseEnabled(x=False, y=False)
        self.norm_plot.getViewBox().invertY(True)
        self.norm_plot.setLabel("bottom", translate("positional", "L2 norm ‖·‖"))
        self.norm_bars: dict[str, pg.BarGraphItem] = {}
        for i, key in enumerate(("token_norm", "positional_norm", "sum_norm")):
            bar = pg.BarGraphItem(x0=[], y=[], height=0.26, width=[], brush=self.theme.head_color(i), pen=pg.mkPen(None))
            self.norm_plot.addItem(bar)
            self.norm_bars[key] = bar
        self.norm_plot.setMaximumWidth(260)
        emb.addItem(self.norm_plot, row=1, col=3)
        emb.layout.setColumnStretchFactor(0, 3)
        emb.layout.setColumnStretchFactor(1, 3)
        emb.layout.setColumnStretchFactor(2, 3)
        emb.layout.setColumnStretchFactor(3, 2)

    # data ------------------------------------------------------------------------------------
    def render(self, data: PositionalData) -> None:
        sides = [e.side for e in data.embeddings]
        if self._side not in sides and sides:
            self._side = sides[0]
        set_combo_items(self.side_combo, [(translate("positional", SIDES[s]) if s in SIDES else s, s) for s in sides], self._side)
        self.side_combo.setEnabled(len(sides) > 1)
        self._refresh()

    def data(self) -> PositionalData | None:
        return self.given

    def dimensions(self) -> list[int]:
        d = self.given.d_model if self.given is not None else 0
        dims = self._dims if self._dims is not None else default_dimensions(d)
        return [x for x in dims if x < d]

    def set_dimensions(self, dims: Sequence[int]) -> None:
        self._dims = [int(x) for x in dims]
        self._refresh()

    def set_side(self, side: str) -> None:
        self._side = side
        set_combo_items(self.side_combo, [(self.side_combo.itemText(i), self.side_combo.itemData(i)) for i in range(self.side_combo.count())], side)
        self._refresh()

    def side(self) -> str:
        return self._side

    def curve_data(self) -> np.ndarray:
        """``[len(dims), pos]``: the curves drawn (y values)."""
        ys = [c.getData()[1] for c in self.curves if c.isVisible()]
        return np.asarray(ys) if ys else np.zeros((0, 0))

    def norm_values(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(b.opts.get("width")) for k, b in self.norm_bars.items()}

    # drawing -----------------------------------------------------------------------------------
    def _set_content_visible(self, visible: bool) -> None:
        for item in (self.pe_plot, self.sim_plot, self.curve_plot, self.curve_legend, self.emb_title, self.norm_plot, *self.emb_plots.values()):
            item.setVisible(visible)

    def _refresh(self) -> None:
        d = self.given
        self._set_titles()
        self._set_content_visible(d is not None and d.kind != "relative")
        if d is None or d.kind == "relative":
            return
        n, dm = d.pe.shape
        pos_labels = [str(i + 1) for i in range(n)]  # positions 1-based, as on screen everywhere
        top = pe_extent(d)
        self.pe_plot.set_matrix(d.pe, pos_labels, _dim_labels(dm), levels=(-top, top))
        self.pe_plot.set_axis_titles(None, translate("positional", "column") if d.kind == "learned" else translate("positional", COLUMN_AXIS))
        sim = d.similarity
        self.sim_plot.set_matrix(sim, pos_labels, pos_labels, levels=(float(np.min(sim)), float(np.max(sim))))
        self._refresh_curves()
        self._refresh_embeddings()
        self.dims_edit.setText(", ".join(str(x) for x in self.dimensions()))

    def _refresh_curves(self) -> None:
        d = self.given
        dims = self.dimensions()
        n = d.n_positions
        while len(self.curves) < len(dims):
            c = curve(self.curve_plot, symbol="o", symbolSize=5)
            self.curves.append(c)
        x = np.arange(n, dtype=float)
        legend_key = (tuple(dims), d.d_model, d.layout, d.kind, self.theme.name)
        relabel = legend_key != self._legend_key  # the legend is rebuilt only when its entries change
        if relabel:
            self.curve_legend.clear()
            self._legend_key = legend_key
        for i, c in enumerate(self.curves):
            if i < len(dims):
                dim = dims[i]
                color = self.theme.head_color(i)
                sine = d.kind == "learned" or d.column_pair(dim)[1]  # a learned table's columns are no sin/cos pairs: all solid
                pen = pg.mkPen(color, width=1.8, style=QtCore.Qt.PenStyle.SolidLine if sine else QtCore.Qt.PenStyle.DashLine)
                pen.setCosmetic(True)
                c.setData(x + 1.0, d.pe[:, dim].astype(float))  # at positions 1…n
                c.setPen(pen)
                c.setSymbolBrush(color)
                c.setSymbolPen(None)
                c.setVisible(True)
                if relabel:
                    self.curve_legend.addItem(c, curve_label(dim, d))
            else:
                c.setData([], [])
                c.setVisible(False)
        self.curve_plot.setXRange(0.7, max(2, n) + 0.3, padding=0)
        top = pe_extent(d)
        self.curve_plot.setYRange(-1.1 * top, 1.1 * top, padding=0)
        step = max(1, int(np.ceil(n / 12)))
        self.curve_plot.getAxis("bottom").setTickSpacing(major=step, minor=step)

    def _refresh_embeddings(self) -> None:
        d = self.given
        e = d.side(self._side)
        if e is None:
            for p in self.emb_plots.values():
                p.setVisible(False)
            self.norm_plot.setVisible(False)
            self.emb_title.set_title(translate("positional", "No tokens yet"), translate("positional", "enter a sentence: its embeddings appear here"))
            return
        for p in self.emb_plots.values():
            p.setVisible(True)
        self.norm_plot.setVisible(True)
        dm = e.tokens.shape[1]
        m = float(max(np.max(np.abs(e.tokens)), np.max(np.abs(e.summed)), 1.0))
        for key, p in self.emb_plots.items():
            p.set_matrix(getattr(e, key), e.pieces, _dim_labels(dm), levels=(-m, m))
        k = len(e.pieces)
        y = np.arange(k, dtype=float)
        for j, (key, bar) in enumerate(self.norm_bars.items()):
            bar.setOpts(x0=np.zeros(k), y=y + (j - 1) * 0.27, height=0.26, width=getattr(e, key))
        self._norm_axis.set_labels(e.pieces)
        top = float(max(e.token_norm.max(initial=0), e.positional_norm.max(initial=0), e.sum_norm.max(initial=0), 1.0))
        self.norm_plot.getViewBox().setRange(xRange=(0, top * 1.05), yRange=(-0.6, k - 0.4), padding=0)
        ratio = float(np.mean(e.positional_norm / np.where(e.token_norm > 0, e.token_norm, np.nan))) if k else float("nan")
        self.emb_title.set_legend(((WORD_START, self.theme.muted, translate("positional", "= start of a word")),))
        title = (translate("positional", "Target tokens: embedding + PE = what the first layer reads") if self._side == "target" else
                 translate("positional", "Source tokens: embedding + PE = what the first layer reads"))
        if self.given.kind == "learned":
            norms = translate("positional", "‖PE‖ differs from row to row of the learned table; on average ‖PE‖ / ‖embedding‖ = {ratio:.2f}")
        else:
            norms = translate("positional", "‖PE‖ = √(d_model/2) = {norm:.2f} at every position; on average ‖PE‖ / ‖embedding‖ = {ratio:.2f}")
        self.emb_title.set_title(title, norms.format(norm=np.sqrt(dm / 2), ratio=ratio))

    def _set_titles(self) -> None:
        d = self.given
        formula = translate("positional", FORMULA)
        if d is None:
            self.title.set_title(translate("positional", "Positional encoding"), formula)
            self.emb_title.set_title(translate("positional", "Token embeddings and PE"), "")
            return
        if d.kind == "relative":
            self.title.set_title(translate("positional", "No positional encoding: this model adds a relative position bias B to the attention scores"),
                                 translate("positional", "softmax(QKᵀ + B + M): B is learned per head for each bucketed key − query distance; "
                                                         "the walkthrough and the mask view show it"))
            self.title.set_legend(())
            return
        if d.kind == "learned":
            formula = translate("positional", LEARNED_FORMULA)
        self.title.set_title(translate("positional", "Positional encoding · {n} positions × d_model {d}").format(n=d.n_positions, d=d.d_model), formula)
        self.title.set_legend((("", "", translate("positional", NOTE)),) if d.kind == "sinusoidal" else ())

    def _apply_theme_to_items(self) -> None:
        th = self.theme
        for p in (self.pe_plot, self.sim_plot, *self.emb_plots.values()):
            p.apply_theme(th)
            p.titleLabel.setText(p.titleLabel.text, color=th.foreground, size="9.5pt")
        swatch = lambda i, name: f"<span style='color:{th.head_colors[i % len(th.head_colors)]}'>■</span> {name}"  # noqa: E731
        names = (translate("positional", "emb."), "PE", translate("positional", "sum"))
        self.norm_plot.setTitle("‖·‖ " + " ".join(swatch(i, n) for i, n in enumerate(names)), size="9pt")
        for p in (self.curve_plot, self.norm_plot):
            p.titleLabel.setText(p.titleLabel.text, color=th.foreground, size="9.5pt" if p is self.curve_plot else "9pt")
            for name in ("left", "bottom"):
                ax = p.getAxis(name)
                if isinstance(ax, TokenAxis):
                    ax.apply_theme(th)
                    continue
                pen = pg.mkPen(th.muted)
                pen.setCosmetic(True)
                ax.setPen(pen)
                ax.setTextPen(pg.mkPen(th.foreground))
                ax.setStyle(tickFont=ui_font(8))
                if ax.label is not None:
                    ax.label.setDefaultTextColor(QtGui.QColor(th.muted))
            if p.legend is not None:
                p.legend.setLabelTextColor(th.foreground)
        self.curve_legend.setLabelTextColor(th.foreground)
        for i, bar in enumerate(self.norm_bars.values()):
            bar.setOpts(brush=th.head_color(i))
        self.emb_title.apply_theme(th)

    def _on_theme_changed(self) -> None:
        self._apply_theme_to_items()
        if self._colormap is None:
            self.sim_plot.set_colormap(self.theme.colormap)
        self._refresh()

    def _on_colormap_changed(self) -> None:
        self.sim_plot.set_colormap(self.colormap())

    def _on_dims_edited(self) -> None:
        d = self.given.d_model if self.given is not None else 10**9
        dims, note = read_dimensions(self.dims_edit.text(), d)
        if dims:
            self.set_dimensions(dims)
        self.readout.setText(note or " ")

    def _on_side_changed(self) -> None:
        side = self.side_combo.currentData()
        if side and side != self._side:
            self._side = side
            self._refresh()

    def _on_plot_hovered(self, info: HoverInfo | None) -> None:
        # a bound method, not a lambda holding the view: the view can be freed before the app
        self._on_hovered(self.sender(), info)

    def _on_hovered(self, plot: HeatmapPlot, info: HoverInfo | None) -> None:
        if info is None:
            self.readout.setText(" ")
            return
        if plot is self.pe_plot and self.given.kind == "learned":
            self.readout.setText(translate("positional", "position {position}, column {column}: row {pos} of the learned table = {value:.4f}").format(
                position=info.row + 1, column=info.col, pos=info.row, value=info.value))
        elif plot is self.pe_plot:
            c, d = info.col, self.given
            self.readout.setText(translate("positional", "position {position}, column {column} = {role}:  PE(pos {pos}, {column}) = "
                                                         "{formula} = {value:.4f}   (pos = position − 1)").format(
                position=info.row + 1, column=c, role=column_role(c, d.d_model, d.layout), pos=info.row,
                formula=column_formula(c, d.d_model, d.layout, str(info.row)), value=info.value))
        elif plot is self.sim_plot:
            self.readout.setText(translate("positional", "PE(position {a})·PE(position {b}) = {value:.3f}   (distance {distance})").format(
                a=info.row + 1, b=info.col + 1, value=info.value, distance=abs(info.row - info.col)))
        else:
            name = translate("positional", MATRICES[{v: k for k, v in self.emb_plots.items()}[plot]])
            self.readout.setText(translate("positional", "{matrix}[“{piece}” at position {position}, column {column}] = {value:.4f}").format(
                matrix=name, piece=display_piece(info.row_label), position=info.row + 1, column=info.col, value=info.value))

    # figure protocol ----------------------------------------------------------------------------
    def figure_title(self) -> str:
        d = self.given
        if d is None:
            return translate("positional", "Positional encoding")
        return translate("positional", "Positional encoding ({n} positions, d_model {d})").format(n=d.n_positions, d=d.d_model)

    def figure_data(self) -> FigureData:
        d = self.given
        if d is None:
            raise ValueError("the view shows no data yet")
        extras: dict[str, np.ndarray] = {"similarity": d.similarity, "curve_dims": np.asarray(self.dimensions())}
        for e in d.embeddings:
            for key in ("tokens", "positional", "summed", "token_norm", "positional_norm", "sum_norm"):
                extras[f"{e.side}_{key}"] = np.asarray(getattr(e, key))
        return FigureData(self.figure_title(), ("position", "column"), {"pe": d.pe},
                          {"position": tuple(str(i + 1) for i in range(d.n_positions)),
                           "column": tuple(column_name(c, d) for c in range(d.d_model))}, extras)

    def transient_items(self):
        return [p.hover_marker for p in (self.pe_plot, self.sim_plot, *self.emb_plots.values())]


def positional_frame(session: Session, choice: ViewChoice) -> PositionalData | None:
    """The positional encoding, the embeddings and their sums of the current frame."""
    return positional_data_for(session.current) if session.current is not None else None


SPEC = ViewSpec("pe", QtPositionalView, QT_TRANSLATE_NOOP("views", "Positional encoding"), "bottom", (), data=positional_frame)
