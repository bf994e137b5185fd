"""LayerNorm / BatchNorm statistics of one layer, and LN vs BN on the same activations.

For every sublayer's normalization of the chosen layer (columns: ``norm1``, ``norm2``, …):

* LayerNorm models: per token, the mean and the standard deviation of its features before
  the norm, after normalizing and before the learned γ, β (mean 0, std 1), and after γ, β
  (the norm's output);
* BatchNorm models: per feature, this batch's mean and variance over the tokens next to the
  running mean and variance the model normalizes with in evaluation;
* a histogram of the activations before and after the norm.

Below, **LN vs BN on the same activations**: one pre-norm matrix ``x`` ``[token, d_model]``
and what each normalization makes of it, with the axis each one normalizes over drawn on the
matrix: LayerNorm along a row (the features of one token), BatchNorm down a column (one
feature over the tokens). Click a cell to move the marked row and column.

The view renders :class:`NormSiteData` built from ``attnviz.core.analysis.stats``
(``norm_sites``, ``norm_statistics``, ``compare_norms``) and the trace's ``<site>.input`` and
``<site>.output``; it only bins the activations for the histograms.

The title says which formula the open model follows (pre-norm ``x + Sublayer(LN(x))`` or
post-norm ``LN(x + Sublayer(x))``; BN for a BatchNorm model). In a short dock the figure keeps a
readable height and scrolls (:data:`MIN_HEIGHT`).

The data and its helpers are in :mod:`attnviz.core.analysis.norms`; one site's column of plots
is a :class:`SiteColumn`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.norms import (
    NormSiteData,
    NormSites,
    histogram,
    norm_site_data_for,
    placement_formula,
    row_rms,
    site_formula,
    sublayer_kind,
    tutorial_formula,
)
from attnviz.core.data.pieces import WORD_START, display_piece
from attnviz.core.model.config import NORM_NAMES
from attnviz.qt.core_text import kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.spec import TourAsk, ViewSpec, encoder_side
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP, Theme, ui_font
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo
from attnviz.qt.widgets.plots import SpacedAxis, curve, pen, quiet_plot, set_title
from attnviz.qt.widgets.regions import Region, items_region
from attnviz.qt.widgets.title_item import TitleItem
from attnviz.qt.widgets.token_axis import TokenAxis

if TYPE_CHECKING:
    from attnviz.qt.session import Session

MIN_HEIGHT = 640  # px of the figure: below it, the view scrolls
CMP_MIN_HEIGHT = 190  # px of the LN vs BN matrices, their axes and colour bar
NORMALIZED = QT_TRANSLATE_NOOP("norm_stats", "LN(x) before γ, β")  # the third series of a LayerNorm site
_SUBLAYERS = {  # by sublayer kind (attnviz.core.analysis.norms.sublayer_kind)
    "encoder": QT_TRANSLATE_NOOP("norm_stats", "self-attention"),
    "decoder": QT_TRANSLATE_NOOP("norm_stats", "masked self-attention"),
    "cross": QT_TRANSLATE_NOOP("norm_stats", "cross-attention"),
    "ffn": QT_TRANSLATE_NOOP("norm_stats", "FFN"),
    "": QT_TRANSLATE_NOOP("norm_stats", "sublayer"),
}


def group_title(group: tuple[str, int]) -> str:
    """``Encoder layer 2``, ``Decoder final norm``: a layer's normalizations (layer 0-based, -1: the final norm)."""
    stack, layer = group
    if layer < 0:
        return translate("norm_stats", "{stack} final norm").format(stack=kind_name(stack).capitalize())
    return translate("norm_stats", "{stack} layer {layer}").format(stack=kind_name(stack).capitalize(), layer=layer + 1)


def site_name(site: NormSiteData) -> str:
    """``norm1``, ``final norm``: a site's short name."""
    if site.group[1] < 0:
        return translate("norm_stats", "final norm")
    return translate("norm_stats", "norm{index}").format(index=site.index)


def site_title(site: NormSiteData, placement: str) -> tuple[str, str]:
    """(``norm1 · after self-attention``, its formula) for a site."""
    stack, layer = site.group
    formula = site_formula(site, placement)
    if layer < 0:
        return site_name(site), translate("norm_stats", "{formula} after the last layer").format(formula=formula)
    sub = translate("norm_stats", _SUBLAYERS[sublayer_kind(stack, site.index)])
    text = translate("norm_stats", "{norm} · before {sublayer}") if placement == "pre" else translate("norm_stats", "{norm} · after {sublayer}")
    return text.format(norm=site_name(site), sublayer=sub), formula


def _translucent(color: QtGui.QColor, alpha: int = 70) -> QtGui.QColor:
    c = QtGui.QColor(color)
    c.setAlpha(alpha)
    return c


def _group_key(group: tuple[str, int]) -> str:
    """A layer group as a combo item's data: ``"encoder:0"``."""
    return f"{group[0]}:{group[1]}"


def _parse_group_key(key: str) -> tuple[str, int]:
    stack, _, layer = str(key).partition(":")
    return stack, int(layer)


class SiteColumn:
    """The three plots of one site: means, spreads, histogram (built once, updated in place)."""

    def __init__(self, theme: Theme, layout: pg.GraphicsLayout, col: int):
        th = theme
        self.title = TitleItem(th)
        layout.addItem(self.title, row=0, col=col)
        self.mean_axis = TokenAxis("bottom", th, 8.0)
        self.std_axis = TokenAxis("bottom", th, 8.0)
        self.mean_plot = quiet_plot({"bottom": self.mean_axis}, tick_pt=7.5)
        self.std_plot = quiet_plot({"bottom": self.std_axis}, tick_pt=7.5)
        self.hist_plot = quiet_plot({}, tick_pt=7.5)
        for r, p in enumerate((self.mean_plot, self.std_plot, self.hist_plot), start=1):
            layout.addItem(p, row=r, col=col)
        c0, c1 = th.head_color(0), th.head_color(1)
        self.mean_a = curve(self.mean_plot, pen=pen(c0), symbol="o", symbolSize=4, symbolBrush=c0, symbolPen=None, name="a")
        self.mean_b = curve(self.mean_plot, pen=pen(c1, 1.6, QtCore.Qt.PenStyle.DashLine), symbol="s", symbolSize=4,
                                          symbolBrush=c1, symbolPen=None, name="b")
        self.std_a = curve(self.std_plot, pen=pen(c0), symbol="o", symbolSize=4, symbolBrush=c0, symbolPen=None, name="a")
        self.std_b = curve(self.std_plot, pen=pen(c1, 1.6, QtCore.Qt.PenStyle.DashLine), symbol="s", symbolSize=4,
                                        symbolBrush=c1, symbolPen=None, name="b")
        c2 = th.head_color(2)  # LayerNorm only: normalized, before the learned γ, β
        self.mean_n = curve(self.mean_plot, pen=pen(c2, 1.4, QtCore.Qt.PenStyle.DotLine), symbol="t", symbolSize=5,
                                          symbolBrush=c2, symbolPen=None, name="n")
        self.std_n = curve(self.std_plot, pen=pen(c2, 1.4, QtCore.Qt.PenStyle.DotLine), symbol="t", symbolSize=5,
                                        symbolBrush=c2, symbolPen=None, name="n")
        self.hist_before = curve(self.hist_plot, stepMode="center", fillLevel=0, pen=pen(c0), brush=_translucent(c0), name="before")
        self.hist_after = curve(self.hist_plot, stepMode="center", fillLevel=0, pen=pen(c1), brush=_translucent(c1), name="after")
        self.hist_plot.setLabel("bottom", translate("norm_stats", "activation value"))
        self.items = (self.title, self.mean_plot, self.std_plot, self.hist_plot)
        self.site: NormSiteData | None = None
        self._axis_kind = "layer"

    def _use_axes(self, kind: str, theme: Theme) -> None:
        """Tokens along x for LayerNorm (piece labels), feature indices for BatchNorm (a numeric axis)."""
        if kind == self._axis_kind:
            return
        for attr, plot in (("mean_axis", self.mean_plot), ("std_axis", self.std_plot)):
            if kind != "batch":  # LayerNorm, RMSNorm: per token
                axis: pg.AxisItem = TokenAxis("bottom", theme, 8.0)
            else:
                axis = SpacedAxis("bottom")
                axis.setStyle(tickFont=ui_font(7.5))
                axis.enableAutoSIPrefix(False)
                axis.setPen(pen(theme.muted, 1.0))
                axis.setTextPen(pen(theme.foreground, 1.0))
            plot.setAxisItems({"bottom": axis})
            setattr(self, attr, axis)
        self._axis_kind = kind

    def set_visible(self, visible: bool) -> None:
        for item in self.items:
            item.setVisible(visible)

    @staticmethod
    def _titled(plot: pg.PlotItem, text: str, theme: Theme) -> None:
        """A short plot title; the series' colours are explained once, in the view's legend line."""
        set_title(plot, text, size="8.5pt", color=theme.foreground)

    def show(self, site: NormSiteData, placement: str, theme: Theme) -> None:
        self.site = site
        st = site.stats
        title, formula = site_title(site, placement)
        self.title.set_title(title, formula)
        self._use_axes(site.kind, theme)
        if site.kind != "batch":
            x = np.arange(len(site.pieces), dtype=float)
            self.mean_a.setData(x, np.asarray(st.input_mean, float))
            self.mean_b.setData(x, np.asarray(st.output_mean, float))
            n_mean, n_std = site.normalized_stats
            self.mean_n.setData(x, n_mean)
            self.mean_axis.set_labels(site.pieces)
            self.std_axis.set_labels(site.pieces)
            self._titled(self.mean_plot, translate("norm_stats", "per-token mean"), theme)
            if site.kind == "rms":  # what RMSNorm divides by: each token's root mean square
                self.std_a.setData(x, np.asarray(st.rms, float))
                self.std_b.setData(x, row_rms(site.x_out))
                self.std_n.setData(x, row_rms(site.normalized))
                self.mean_n.setData(x, site.normalized.mean(-1))
                self._titled(self.std_plot, translate("norm_stats", "per-token RMS"), theme)
            else:
                self.std_a.setData(x, np.asarray(st.input_std, float))
                self.std_b.setData(x, np.asarray(st.output_std, float))
                self.std_n.setData(x, n_std)
                self._titled(self.std_plot, translate("norm_stats", "per-token std"), theme)
            for p in (self.mean_plot, self.std_plot):
                p.getAxis("bottom").setLabel(None)
            self.mean_plot.setXRange(-0.5, len(x) - 0.5, padding=0)
            self.std_plot.setXRange(-0.5, len(x) - 0.5, padding=0)
        else:
            d = np.arange(site.x_in.shape[1], dtype=float)
            self.mean_n.setData([], [])
            self.std_n.setData([], [])
            self.mean_a.setData(d, np.asarray(st.batch_mean, float))
            self.mean_b.setData(d, np.asarray(st.running_mean, float))
            self.std_a.setData(d, np.asarray(st.batch_var, float))
            self.std_b.setData(d, np.asarray(st.running_var, float))
            self._titled(self.mean_plot, translate("norm_stats", "per-feature mean ({n} tokens)").format(n=len(site.pieces)), theme)
            self._titled(self.std_plot, translate("norm_stats", "per-feature variance"), theme)
            self.mean_plot.setXRange(-0.5, len(d) - 0.5, padding=0)
            self.std_plot.setXRange(-0.5, len(d) - 0.5, padding=0)
        for p in (self.mean_plot, self.std_plot):
            p.enableAutoRange(axis="y")
        edges, before, after = histogram(site.x_in, site.x_out)
        self.hist_before.setData(edges, before.astype(float))
        self.hist_after.setData(edges, after.astype(float))
        self._titled(self.hist_plot, translate("norm_stats", "histogram of the values"), theme)
        self.hist_plot.enableAutoRange()
        self.hist_plot.getAxis("left").setTicks([_count_ticks(max(float(before.max(initial=0)), float(after.max(initial=0))))])


def _count_ticks(top: float) -> list[tuple[float, str]]:
    """0 and one round count near the top: a short histogram's count axis never crowds its labels."""
    if top < 1:
        return [(0.0, "0")]
    step = 10 ** np.floor(np.log10(top))
    nice = float(np.floor(top / step) * step)
    return [(0.0, "0"), (nice, f"{nice:g}")]


class QtNormStatsView(FigureViewBase):
    """Normalization statistics of the chosen layer (see the module docstring).

    ``set_data(NormSites(sites, norm, placement))``: ``sites`` are :class:`NormSiteData` for
    every normalization of the current pass (any order); the view groups them by layer and
    shows the chosen group. ``norm`` and ``placement`` are the model's (``TransformerConfig``).
    ``apply(choice)`` shows the choice's layer (of its kind's stack).
    """

    given: NormSites | None  # the data set_data was given (FigureViewBase)

    groupChanged = QtCore.Signal(str, int)

    MAX_SITES = 3

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self._group: tuple[str, int] | None = None
        self._compare: int = 0  # index of the compared site within the group
        self._row: int | None = None  # marked token (LN axis); None: the last one
        self._col: int | None = None  # marked feature (BN axis); None: a third of the way in

        self.group_combo = self._add_control(translate("norm_stats", "Layer"),
                                             make_combo("normLayerCombo", translate("norm_stats", "Which layer's normalizations")))
        self.compare_combo = self._add_control(translate("norm_stats", "LN vs BN on"), make_combo(
            "normCompareCombo", translate("norm_stats", "Which pre-norm activations both normalizations are applied to")))
        for combo in (self.group_combo, self.compare_combo):  # whole names, never "Encoder la…"
            combo.setSizePolicy(QtWidgets.QSizePolicy.Policy.Fixed, QtWidgets.QSizePolicy.Policy.Fixed)
        self.controls.addStretch(1)
        self.group_combo.currentIndexChanged.connect(self._on_group_changed)
        self.compare_combo.currentIndexChanged.connect(self._on_compare_changed)

        ci = self.canvas.ci
        ci.layout.setVerticalSpacing(4)
        grid = ci.addLayout(row=1, col=0)
        grid.layout.setHorizontalSpacing(10)
        grid.layout.setVerticalSpacing(2)
        self.columns = [SiteColumn(self.theme, grid, c) for c in range(self.MAX_SITES)]

        self.cmp_title = TitleItem(self.theme)
        ci.addItem(self.cmp_title, row=2, col=0)
        cmp = ci.addLayout(row=3, col=0)
        cmp.layout.setHorizontalSpacing(8)
        self.cmp_plots: dict[str, HeatmapPlot] = {}
        for col, (key, title) in enumerate((("x", "x"), ("layer", "LayerNorm(x)"), ("batch", "BatchNorm(x)"))):
            p = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, colorbar=(col == 2), colorbar_label=translate("norm_stats", "value"),
                            annotate=False, aspect_locked=False, masked=False, label_point_size=8.5)
            p.setTitle(title, size="9.5pt")
            p.set_axis_titles(translate("norm_stats", "token") if col == 0 else None,  # short: the panels can be narrow
                              translate("norm_stats", "feature (d_model)") if col == 0 else translate("norm_stats", "feature"))
            if col:
                p.set_row_labels_visible(False)
            cmp.addItem(p, row=0, col=col)
            p.sigCellClicked.connect(self._on_cell_clicked)
            p.sigHovered.connect(self._on_plot_hovered)
            self.cmp_plots[key] = p
        # the normalization axes drawn on the matrices
        self.axis_items: dict[str, list[QtWidgets.QGraphicsItem]] = {}
        for key in self.cmp_plots:
            items = []
            if key in ("x", "layer"):
                items += [self._band(key, "row"), self._arrow(key, "row"), self._label(key, "row", "LN →")]
            if key in ("x", "batch"):
                items += [self._band(key, "col"), self._arrow(key, "col"), self._label(key, "col", "BN ↓")]
            self.axis_items[key] = items
        ci.layout.setRowStretchFactor(1, 3)
        ci.layout.setRowStretchFactor(3, 2)
        ci.layout.setRowMinimumHeight(3, CMP_MIN_HEIGHT)  # the colour bar's ticks need room
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._scroll_canvas()
        self._apply_theme_to_items()
        self._refresh()

    # construction helpers -----------------------------------------------------------------
    def _band(self, key: str, kind: str) -> QtWidgets.QGraphicsRectItem:
        item = QtWidgets.QGraphicsRectItem()
        item.setZValue(12)
        item.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
        item.setData(0, kind)
        self.cmp_plots[key].addItem(item)
        return item

    def _arrow(self, key: str, kind: str) -> pg.ArrowItem:
        # head at the end of the normalized axis (right end of the row, bottom of the column)
        arrow = pg.ArrowItem(angle=180 if kind == "row" else -90, headLen=14, tipAngle=35, tailLen=0, pen=None)
        arrow.setZValue(13)
        arrow.setData(0, kind)
        self.cmp_plots[key].addItem(arrow)
        return arrow

    def _label(self, key: str, kind: str, text: str) -> pg.TextItem:
        item = pg.TextItem(text, anchor=(1.0, 1.0) if kind == "row" else (0.0, 1.0))
        item.setFont(ui_font(8.5, bold=True))
        item.setZValue(14)
        item.setData(0, kind)
        self.cmp_plots[key].addItem(item)
        return item

    # data ------------------------------------------------------------------------------------
    def render(self, data: NormSites) -> None:
        """Show the current pass's normalizations; keeps the chosen layer if it still exists."""
        groups = self.groups()
        if self._group not in groups:
            self._group = groups[0] if groups else None
            self._compare = 0
        self._update_controls()
        self._refresh()

    def _sites(self) -> tuple[NormSiteData, ...]:
        """Every site given (none before the data)."""
        return () if self.given is None else self.given.sites

    def groups(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for s in self._sites():
            if s.group not in out:
                out.append(s.group)
        order = {"encoder": 0, "decoder": 1}
        return sorted(out, key=lambda g: (order.get(g[0], 2), g[1] if g[1] >= 0 else 10**6))

    def group(self) -> tuple[str, int]:
        """The (stack, layer) shown; layer -1: the final norm."""
        return self._group

    def group_sites(self) -> list[NormSiteData]:
        """The sites of the chosen layer, in sublayer order."""
        return sorted((s for s in self._sites() if s.group == self._group), key=lambda s: s.index)

    def select(self, stack: str, layer: int) -> None:
        """Show ``stack``'s ``layer`` (0-based; -1: the final norm)."""
        if (stack, layer) not in self.groups():
            raise ValueError(f"no normalizations of {stack} layer {layer} in the data")
        self._group = (stack, layer)
        self._compare = min(self._compare, max(0, len(self.group_sites()) - 1))
        self._update_controls()
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """The chosen layer's norms; cross-attention sits in the decoder's layers."""
        if choice.kind is not None and choice.layer is not None:
            stack = "decoder" if choice.kind == "cross" else choice.kind
            if (stack, choice.layer) in self.groups():
                self.select(stack, choice.layer)

    def mark(self, row: int | None = None, col: int | None = None) -> None:
        """Move the LN row / BN column drawn on the matrices."""
        if row is not None:
            self._row = int(row)
        if col is not None:
            self._col = int(col)
        self._place_axes()

    def _drawable(self, data: NormSites) -> bool:
        return bool(data.sites)

    def compared_site(self) -> NormSiteData | None:
        sites = self.group_sites()
        return sites[min(self._compare, len(sites) - 1)] if sites else None

    def marked(self) -> tuple[int, int]:
        site = self.compared_site()
        n = len(site.pieces) if site is not None else 1
        d = site.x_in.shape[1] if site is not None else 1
        row = n - 1 if self._row is None else min(max(0, self._row), n - 1)
        col = d // 3 if self._col is None else self._col
        return row, min(max(0, col), d - 1)

    # drawing ----------------------------------------------------------------------------------
    def _update_controls(self) -> None:
        set_combo_items(self.group_combo, [(group_title(g), _group_key(g)) for g in self.groups()], _group_key(self._group) if self._group else None)
        sites = self.group_sites()
        # the sites by their short names (norm1, norm2, …): the columns below say where each one is
        set_combo_items(self.compare_combo, [(site_name(s), i) for i, s in enumerate(sites)], self._compare)
        self.group_combo.setEnabled(bool(sites))
        self.compare_combo.setEnabled(len(sites) > 1)

    def _refresh(self) -> None:
        sites = self.group_sites()
        if not sites:
            self.title.set_title(translate("norm_stats", "Normalization statistics"),
                                 translate("norm_stats", "LayerNorm normalizes the features of one token; BatchNorm one feature over the batch"))
            for c in self.columns:
                c.set_visible(False)
            self._set_comparison_visible(False)
            return
        self._set_comparison_visible(True)
        norm, placement = self.given.norm, self.given.placement
        what = {"layer": translate("norm_stats", "per token: its features' mean and std before, normalized, after γ, β"),
                "rms": translate("norm_stats", "per token: x / RMS(x) · γ, RMS(x) = √(mean(x²) + ε), no mean taken away (no β)"),
                }.get(norm, translate("norm_stats", "per feature: this batch's statistics beside the running ones"))
        title = translate("norm_stats", "{layer} · {norm} · {placement}: every sublayer is {formula} · {n} tokens").format(
            layer=group_title(self._group), norm=NORM_NAMES[norm], formula=placement_formula(norm, placement), n=len(sites[0].pieces),
            placement=translate("norm_stats", "pre-norm") if placement == "pre" else translate("norm_stats", "post-norm"))
        self.title.set_title(title, f"{tutorial_formula(norm, placement)} · {what}")
        self.title.set_legend(self._legend())
        for i, c in enumerate(self.columns):
            if i < len(sites):
                c.set_visible(True)
                c.show(sites[i], placement, self.theme)
            else:
                c.set_visible(False)
        grid = self.columns[0].title.parentLayoutItem()
        if grid is not None:
            for i in range(self.MAX_SITES):
                grid.setColumnStretchFactor(i, 1 if i < len(sites) else 0)
                grid.setColumnMaximumWidth(i, 1e6 if i < len(sites) else 0)
        self._refresh_comparison()

    def _legend(self) -> tuple[tuple[str, str, str], ...]:
        """The series' marks in their colours (every site's plots), and the word-start mark."""
        th = self.theme
        names = {"layer": (translate("norm_stats", "x before"), translate("norm_stats", "after γ, β (output)"), translate("norm_stats", NORMALIZED)),
                 "rms": (translate("norm_stats", "x before"), translate("norm_stats", "after γ (output)"), translate("norm_stats", "x / RMS(x) before γ")),
                 }.get(self.given.norm, (translate("norm_stats", "batch"), translate("norm_stats", "running")))
        series = tuple((mark, th.head_color(i).name(), name) for i, (mark, name) in enumerate(zip(("●", "■", "▲"), names)))
        return series + ((WORD_START, th.muted, translate("norm_stats", "= start of a word")),)

    def _set_comparison_visible(self, visible: bool) -> None:
        self.cmp_title.setVisible(visible)
        for p in self.cmp_plots.values():
            p.setVisible(visible)

    def _refresh_comparison(self) -> None:
        site = self.compared_site()
        if site is None:
            return
        c = site.comparison
        mats = {"x": site.x_in, "layer": np.asarray(c.layer_output), "batch": np.asarray(c.batch_output)}
        d = site.x_in.shape[1]
        cols = [str(i) for i in range(d)]
        m_x = float(np.max(np.abs(site.x_in))) or 1.0
        m_n = float(max(np.max(np.abs(mats["layer"])), np.max(np.abs(mats["batch"])), 1.0))
        for key, p in self.cmp_plots.items():
            m = m_x if key == "x" else m_n
            p.set_matrix(mats[key], site.pieces, cols, levels=(-m, m))
        title, formula = site_title(site, self.given.placement)
        uses = NORM_NAMES[site.kind]
        self.cmp_title.set_title(
            translate("norm_stats", "LN vs BN on the same activations · {site} · this model uses {norm}").format(site=title, norm=uses),
            translate("norm_stats", "LayerNorm: each token (row) → mean 0, std 1 over its {d} features · BatchNorm: each feature (column) "
                                    "→ mean 0, std 1 over the {n} tokens · learned γ, β left out").format(d=d, n=len(site.pieces)),
        )
        self._place_axes()

    def _place_axes(self) -> None:
        site = self.compared_site()
        if site is None:
            return
        n, d = site.x_in.shape
        row, col = self.marked()
        for items in self.axis_items.values():
            for item in items:
                kind = item.data(0)
                if isinstance(item, QtWidgets.QGraphicsRectItem):
                    rect = QtCore.QRectF(-0.5, row - 0.5, d, 1.0) if kind == "row" else QtCore.QRectF(col - 0.5, -0.5, 1.0, n)
                    item.setRect(rect)
                elif isinstance(item, pg.TextItem):  # the label sits just inside the marked row / column
                    item.setPos(d - 1.5, row - 0.5) if kind == "row" else item.setPos(col + 0.6, n - 0.5)
                else:
                    item.setPos(d - 0.5, row) if kind == "row" else item.setPos(col, n - 0.5)
                item.setVisible(True)

    def _apply_theme_to_items(self) -> None:
        th = self.theme
        self.cmp_title.apply_theme(th)
        for c in self.columns:
            c.title.apply_theme(th)
            for p in (c.mean_plot, c.std_plot, c.hist_plot):
                for name in ("left", "bottom"):
                    ax = p.getAxis(name)
                    if isinstance(ax, TokenAxis):
                        ax.apply_theme(th)
                        continue
                    ax.setPen(pen(th.muted, 1.0))
                    ax.setTextPen(pen(th.foreground, 1.0))
                    if ax.label is not None:
                        ax.label.setDefaultTextColor(QtGui.QColor(th.muted))
        for p in self.cmp_plots.values():
            p.apply_theme(th)
            p.titleLabel.setText(p.titleLabel.text, color=th.foreground, size="9.5pt")
        ln, bn = th.highlight, th.selection
        for items in self.axis_items.values():
            for item in items:
                color = ln if item.data(0) == "row" else bn
                if isinstance(item, QtWidgets.QGraphicsRectItem):
                    item.setPen(pen(color, 2.5))
                    item.setBrush(QtGui.QBrush(_translucent(QtGui.QColor(color), 45)))
                elif isinstance(item, pg.TextItem):
                    item.setColor(color)
                else:
                    item.setStyle(brush=pg.mkBrush(color), pen=pg.mkPen(color))

    def _on_theme_changed(self) -> None:
        self._apply_theme_to_items()
        self._refresh()

    def _on_group_changed(self) -> None:
        key = self.group_combo.currentData()
        g = _parse_group_key(key) if key else None
        if g is not None and g != self._group:
            self._group = g
            self._compare = min(self._compare, max(0, len(self.group_sites()) - 1))
            self._update_controls()
            self._refresh()
            self.groupChanged.emit(self._group[0], self._group[1])

    def _on_compare_changed(self) -> None:
        i = self.compare_combo.currentData()
        if i is not None and int(i) != self._compare:
            self._compare = int(i)
            self._refresh_comparison()

    def _on_cell_clicked(self, row: int, col: int) -> None:
        self.mark(row, col)

    def _on_plot_hovered(self, info: HoverInfo | None) -> None:
        # a bound method, not a lambda holding the view: the view can be freed before the app
        sender = self.sender()
        self._on_hovered(next(k for k, p in self.cmp_plots.items() if p is sender), info)

    def _on_hovered(self, key: str, info: HoverInfo | None) -> None:
        site = self.compared_site()
        if info is None or site is None:
            self.readout.setText(" ")
            return
        c = site.comparison
        r, j = info.row, info.col
        self.readout.setText(
            translate("norm_stats", "token {row} “{piece}”, feature {col}:").format(row=r + 1, piece=display_piece(site.pieces[r]), col=j) +
            f"  x = {site.x_in[r, j]:.4f}   "
            f"LN: (x − {c.layer_mean[r]:.3f}) / {c.layer_std[r]:.3f} = {np.asarray(c.layer_output)[r, j]:.4f}   "
            f"BN: (x − {c.batch_mean[j]:.3f}) / {c.batch_std[j]:.3f} = {np.asarray(c.batch_output)[r, j]:.4f}"
        )

    # figure protocol --------------------------------------------------------------------------
    def figure_title(self) -> str:
        title = translate("norm_stats", "Normalization statistics")
        return f"{title} · {group_title(self._group)}" if self._group else title

    def figure_data(self) -> FigureData:
        site = self.compared_site()
        if site is None:
            raise ValueError("the view shows no data yet")
        c = site.comparison
        values = {"x": site.x_in, "layer_norm": np.asarray(c.layer_output), "batch_norm": np.asarray(c.batch_output), "model_output": site.x_out}
        extras: dict[str, np.ndarray] = {}
        for s in self.group_sites():
            st = s.stats
            for f in ("input_mean", "input_std", "output_mean", "output_std", "batch_mean", "batch_var", "running_mean", "running_var"):
                v = getattr(st, f, None)
                if v is not None:
                    extras[f"{s.site}.{f}"] = np.asarray(v)
        return FigureData(self.figure_title(), ("token", "feature"), values, {"token": site.pieces}, extras)

    def transient_items(self):
        return [p.hover_marker for p in self.cmp_plots.values()]


def norm_sites(session: Session, choice: ViewChoice) -> NormSites | None:
    """Every normalization of the current frame's pass, with the model's norm and placement."""
    cur, bundle = session.current, session.bundle
    if cur is None or bundle is None:
        return None
    cfg = bundle.config
    return NormSites(norm_site_data_for(cur, cfg), cfg.norm, cfg.norm_placement)


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("norm_token", "norm_ln_mean", "norm_ln_std", "norm_feature", "norm_bn_mean", "norm_bn_std", "norm_tokens")


def tour_measures(view: QtNormStatsView, ask: TourAsk) -> dict[str, Any]:
    """The marked token's mean and σ over its features (LN) and the marked feature's over the
    tokens (BN), at the compared site."""
    site = view.compared_site()
    if site is None:
        return {}
    row, col = view.marked()
    c = site.comparison
    return {"norm_token": display_piece(site.pieces[row]), "norm_ln_mean": float(c.layer_mean[row]), "norm_ln_std": float(c.layer_std[row]),
            "norm_feature": col, "norm_bn_mean": float(c.batch_mean[col]), "norm_bn_std": float(c.batch_std[col]),
            "norm_tokens": len(site.pieces)}


def region_compare(view: QtNormStatsView, ask: TourAsk) -> Region | None:
    """The LN and BN heatmaps side by side (``None`` before they are drawn)."""
    plots = list(view.cmp_plots.values())
    return items_region(*plots) if plots else None


SPEC = ViewSpec("norm", QtNormStatsView, QT_TRANSLATE_NOOP("views", "LayerNorm / BatchNorm"), "bottom", ("kind", "layer"), data=norm_sites,
                kinds=("encoder", "decoder"), stack_view=True, depends_on=encoder_side,
                measures=tour_measures, measure_names=TOUR_MEASURES, regions={"norm-compare": region_compare})
