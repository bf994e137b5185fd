"""Scaling view: why attention divides the scores by √d_k, and not by 1 or by d_k.

For the selected head, softmax(QKᵀ/c + M) for c = 1, √d_k (the model's) and d_k side by side;
the chosen query row (the current step's unless picked) under the three: its weights, largest
weight, entropy and the size of softmax's Jacobian ∂a/∂s = diag(a) − aaᵀ (‖·‖_F: near 0 when
softmax saturates, so gradients vanish); the same statistics for every row, per layer, and on
random q, k with unit-variance entries at growing d_k (Var(q·k) = d_k).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.scaling import (
    SCALINGS,
    LayerScaling,
    RandomScaling,
    RowScaling,
    ScalingComparison,
    ScalingFrame,
    random_scaling,
    result_scaling,
    softmax_jacobian,
)
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import KINDS, position_biased
from attnviz.qt.core_text import kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.series_plot import SeriesPlot
from attnviz.qt.views.spec import SELECTORS, TourAsk, ViewSpec, encoder_side
from attnviz.qt.widgets.colormaps import Theme, ui_font
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo
from attnviz.qt.widgets.plots import pen
from attnviz.qt.widgets.regions import Region, items_region

if TYPE_CHECKING:
    from attnviz.qt.session import Session

UNSCALED, SCALED, OVER_DK = SCALINGS  # "÷1", "÷√d_k", "÷d_k": the data's order
SHOWN = (SCALED, UNSCALED, OVER_DK)  # the curves' order: the model's solid in colour 0, ÷1 dashed, ÷d_k
FORMULAS = {UNSCALED: "softmax(QKᵀ + M)", SCALED: "softmax(QKᵀ/√d_k + M)", OVER_DK: "softmax(QKᵀ/d_k + M)"}
NOTES = {UNSCALED: QT_TRANSLATE_NOOP("scaling", "saturates"), SCALED: QT_TRANSLATE_NOOP("scaling", "the model's"),
         OVER_DK: QT_TRANSLATE_NOOP("scaling", "too flat")}  # shown as translate("scaling", note)
METRICS = (QT_TRANSLATE_NOOP("scaling", "max weight"), QT_TRANSLATE_NOOP("scaling", "entropy (nats)"), "‖∂a/∂s‖_F")  # translated where shown
JACOBIAN = "‖∂a/∂s‖_F = ‖diag(a) − a\u2009aᵀ‖_F"  # a aᵀ (a thin space): the outer product
MIN_CANVAS = (960, 1240)  # px: the smallest size at which every panel's labels read


class RowBars(pg.PlotItem):
    """One row's three statistics (largest weight, entropy, ‖∂a/∂s‖_F), a bar per scaling in
    the curves' colours, each bar's value written above it."""

    WIDTH = 0.26

    def __init__(self, theme: Theme):
        super().__init__(enableMenu=False)
        self.setMenuEnabled(False)
        self.hideButtons()
        self.getViewBox().setMouseEnabled(x=False, y=False)
        self.showGrid(x=False, y=True, alpha=0.15)
        self.setMinimumHeight(150)
        self.bars = {name: pg.BarGraphItem(x=[], height=[], width=self.WIDTH) for name in SHOWN}
        self.labels = {name: [pg.TextItem(anchor=(0.5, 1.0)) for _ in METRICS] for name in SHOWN}
        for name in SHOWN:
            self.addItem(self.bars[name])
            for text in self.labels[name]:
                text.setFont(ui_font(7.5))
                self.addItem(text)
        self._values: dict[str, np.ndarray] = {}
        self.apply_theme(theme)

    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        for i, name in enumerate(SHOWN):
            self.bars[name].setOpts(brush=theme.head_color(i), pen=None)
            for text in self.labels[name]:
                text.setColor(theme.foreground)
        for side in ("bottom", "left"):
            ax = self.getAxis(side)
            ax.setPen(pen(theme.muted, 1.0))
            ax.setTextPen(pen(theme.foreground, 1.0))
            ax.setStyle(tickFont=ui_font(7.5))

    def set_values(self, title: str, values: dict[str, np.ndarray], entropy: str | None = None) -> None:
        """``values`` scaling → [metric]; ``title`` above the swatches of the three scalings;
        ``entropy`` the entropy's tick (with its largest possible value; default: the metric's name)."""
        self._values = {k: np.asarray(v, np.float64) for k, v in values.items()}
        for i, name in enumerate(SHOWN):
            x = np.arange(len(METRICS)) + (i - 1) * self.WIDTH
            v = self._values[name]
            self.bars[name].setOpts(x=x, height=v, width=self.WIDTH)
            for text, xi, vi in zip(self.labels[name], x, v):
                text.setText(f"{vi:.2f}")
                text.setPos(float(xi), float(vi))
        top = max(float(np.max(v)) for v in self._values.values())
        self.setYRange(0.0, top * 1.18 or 1.0, padding=0)
        self.setXRange(-0.6, len(METRICS) - 0.4, padding=0)
        ticks = (translate("scaling", METRICS[0]), entropy or translate("scaling", METRICS[1]), METRICS[2])
        self.getAxis("bottom").setTicks([list(enumerate(ticks))])
        marks = "".join(f"  <span style='color:{self.theme.head_color(i).name()}'>■</span> {n}" for i, n in enumerate(SHOWN))
        self.setTitle(f"{title}:{marks}", size="8.5pt", color=self.theme.foreground)

    def values(self) -> dict[str, np.ndarray]:
        """scaling → [largest weight, entropy, ‖∂a/∂s‖_F] as drawn."""
        return dict(self._values)


class QtScalingView(FigureViewBase):
    """softmax ÷1, ÷√d_k and ÷d_k, on the model and on random vectors.

    ``set_data(ScalingFrame(sites, labels, highlight))``: ``sites`` kind → one
    :class:`ScalingComparison` per layer (``[scaling, head, query, key]``), ``labels`` kind → (query
    labels, key labels); ``select(kind=, layer=, head=, query=)`` (0-based; the query row defaults
    to the current step's, the last source token for the encoder); ``chose`` says what the user picked.
    """

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme, title_span=3)
        self._sites: dict[str, tuple[ScalingComparison, ...]] = {}
        self._labels: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._highlight: int | None = None
        self._scales, self._biased = True, ()  # the model divides by √d_k; the kinds with a position bias B in their scores
        self._kind, self._layer, self._head = "encoder", 0, 0
        self._query: int | None = None  # the row picked; None: the current step's
        self.experiment: RandomScaling = random_scaling()
        self.kind_combo = self._add_control(translate("scaling", "Kind"), make_combo("scalingKindCombo", translate("scaling", "Attention kind")))
        self.layer_combo = self._add_control(translate("scaling", "Layer"), make_combo("scalingLayerCombo", translate("scaling", "Layer")))
        self.head_combo = self._add_control(translate("scaling", "Head"), make_combo("scalingHeadCombo", translate("scaling", "Head i")))
        self.controls.addStretch(1)
        for combo in (self.kind_combo, self.layer_combo, self.head_combo):
            combo.currentIndexChanged.connect(self._on_controls_changed)
        self._build_canvas()
        self._show_experiment()

    def _build_canvas(self) -> None:
        self._build_heatmaps()
        self._build_curves()
        ci = self.canvas.ci
        for row, stretch in ((1, 3), (2, 2), (3, 2), (4, 2), (5, 2)):
            ci.layout.setRowStretchFactor(row, stretch)
        ci.layout.setHorizontalSpacing(12)
        self.canvas.setMinimumSize(*MIN_CANVAS)  # every panel stays readable; a smaller dock scrolls
        self._scroll_canvas()  # the controls stay in view
        self._set_title()

    def _build_heatmaps(self) -> None:
        t = self.theme
        self.heat_unscaled = HeatmapPlot(t, colormap=self.colormap(), colorbar=False)
        self.heat_scaled = HeatmapPlot(t, colormap=self.colormap(), colorbar=False)
        self.heat_over_dk = HeatmapPlot(t, colormap=self.colormap(), colorbar_label=translate("scaling", "weight"))
        for col, plot in enumerate(self.heatmaps().values()):
            plot.set_row_labels_visible(col == 0)
            plot.sigHovered.connect(self._on_plot_hovered)
            plot.sigCellClicked.connect(self._on_cell_clicked)
            self.canvas.addItem(plot, row=1, col=col)
        self.heat_unscaled.set_axis_titles(translate("scaling", "queries (rows)"), translate("scaling", "keys (columns)"))
        self._title_panels()

    def formula(self, name: str) -> str:
        """The softmax of one scaling, with the model's B where it has one: softmax(QKᵀ + B + M)."""
        return FORMULAS[name].replace(" + M)", " + B + M)") if self._kind in self._biased else FORMULAS[name]

    def note(self, name: str) -> str:
        """What a panel is: the model's, or why not (a model that does not scale uses ÷1)."""
        if not self._scales and name == UNSCALED:
            return translate("scaling", NOTES[SCALED])
        if not self._scales and name == SCALED:
            return translate("scaling", "for comparison")
        return translate("scaling", NOTES[name])

    def scaling_note(self) -> str:
        """What the model itself does, when it is not the tutorial's ÷√d_k (``""`` when it is)."""
        if self._scales:
            return ""
        return translate("scaling", "this model does not divide by √d_k: its weights are {formula} (the ÷1 panel)").format(
            formula=self.formula(UNSCALED))

    def _title_panels(self) -> None:
        for name, plot in self.heatmaps().items():
            plot.set_panel_title(f"{self.formula(name)} · {self.note(name)}", size="9pt")

    def _build_curves(self) -> None:
        t = self.theme
        key, query, layer = translate("scaling", "key"), translate("scaling", "query"), translate("scaling", "layer")
        self.row_weights = SeriesPlot(t, translate("scaling", "the row's weights"), SHOWN, x_label=key)
        self.row_bars = RowBars(t)
        self.canvas.addItem(self.row_weights, row=2, col=0, colspan=2)
        self.canvas.addItem(self.row_bars, row=2, col=2)
        self.row_max = SeriesPlot(t, translate("scaling", "largest weight per row"), SHOWN, x_label=query)
        self.row_entropy = SeriesPlot(t, translate("scaling", "entropy per row (nats)"), SHOWN, x_label=query)
        self.row_jacobian = SeriesPlot(t, translate("scaling", "‖∂a/∂s‖_F per row"), SHOWN, x_label=query)
        self.layer_max = SeriesPlot(t, translate("scaling", "per layer: mean largest weight"), SHOWN, x_label=layer)
        self.layer_entropy = SeriesPlot(t, translate("scaling", "per layer: mean entropy"), SHOWN, x_label=layer)
        self.layer_jacobian = SeriesPlot(t, translate("scaling", "per layer: mean ‖∂a/∂s‖_F"), SHOWN, x_label=layer)
        self.exp_var = SeriesPlot(t, translate("scaling", "random q, k: Var(q·k/c)"), SHOWN, x_label="d_k")
        self.exp_var.setLogMode(x=False, y=True)
        self.exp_max = SeriesPlot(t, translate("scaling", "random: mean largest weight"), SHOWN, x_label="d_k")
        self.exp_jacobian = SeriesPlot(t, translate("scaling", "random: mean ‖∂a/∂s‖_F"), SHOWN, x_label="d_k")
        for i, plot in enumerate(self._grid_plots()):
            self.canvas.addItem(plot, row=3 + i // 3, col=i % 3)
        self.row_markers = []
        for plot in (self.row_max, self.row_entropy, self.row_jacobian):
            marker = pg.InfiniteLine(angle=90, movable=False)
            plot.addItem(marker, ignoreBounds=True)
            self.row_markers.append(marker)
        self._style_markers()

    def heatmaps(self) -> dict[str, HeatmapPlot]:
        """The three heatmaps by scaling, left to right."""
        return {UNSCALED: self.heat_unscaled, SCALED: self.heat_scaled, OVER_DK: self.heat_over_dk}

    def _grid_plots(self) -> tuple[SeriesPlot, ...]:
        return (self.row_max, self.row_entropy, self.row_jacobian, self.layer_max, self.layer_entropy,
                self.layer_jacobian, self.exp_var, self.exp_max, self.exp_jacobian)

    def _style_markers(self) -> None:
        for marker in self.row_markers:
            marker.setPen(pen(self.theme.muted, 1.0, QtCore.Qt.PenStyle.DotLine))

    # data ---------------------------------------------------------------------------------
    def render(self, frame: ScalingFrame) -> None:
        self._sites = {k: tuple(v) for k, v in frame.sites.items() if v}
        self._labels = {k: (tuple(map(display_piece, q)), tuple(map(display_piece, c))) for k, (q, c) in frame.labels.items()}
        self._highlight = frame.highlight
        self._scales, self._biased = frame.scales, frame.biased
        self._clamp()
        self._update_controls()
        self._refresh()

    def _drawable(self, frame: ScalingFrame) -> bool:
        return any(frame.sites.values())

    def apply(self, choice: ViewChoice) -> None:
        """The selected kind (where the view has it), layer, head and query row."""
        self.select(kind=choice.kind, layer=choice.layer, head=choice.head, query=choice.query)

    def select(self, kind: str | None = None, layer: int | None = None, head: int | None = None, query: int | None = None) -> None:
        if kind is not None and (kind in self._sites or not self._sites):
            self._kind = kind
        if layer is not None:
            self._layer = int(layer)
        if head is not None:
            self._head = int(head)
        if query is not None:
            self._query = int(query)
        self._clamp()
        self._update_controls()
        self._refresh()

    def kind(self) -> str:
        return self._kind

    def layer(self) -> int:
        return self._layer

    def head(self) -> int:
        return self._head

    def query(self) -> int:
        """The row the row panels show: the one picked, else the current step's (the last source
        token for the encoder, which has no step)."""
        rows = len(self._labels.get(self._kind, ((),))[0])
        if self._query is not None and 0 <= self._query < rows:
            return self._query
        step = None if self._kind == "encoder" else self._highlight
        return step if step is not None and 0 <= step < rows else max(rows - 1, 0)

    def comparison(self) -> ScalingComparison | None:
        """The shown site's comparison (every head)."""
        layers = self._sites.get(self._kind)
        return layers[self._layer] if layers else None

    def row_scaling(self) -> RowScaling | None:
        """The shown row of the shown head under ÷1, ÷√d_k and ÷d_k."""
        c = self.comparison()
        return RowScaling.of(c, self._head, self.query()) if c is not None else None

    def layer_stats(self) -> LayerScaling | None:
        layers = self._sites.get(self._kind)
        return LayerScaling.of(layers) if layers else None

    # internals ------------------------------------------------------------------------------
    def _clamp(self) -> None:
        if not self._sites:
            return
        if self._kind not in self._sites:
            self._kind = "cross" if "cross" in self._sites else next(iter(self._sites))
        layers = self._sites[self._kind]
        self._layer = min(max(self._layer, 0), len(layers) - 1)
        self._head = min(max(self._head, 0), layers[self._layer].scaled.shape[0] - 1)

    def _update_controls(self) -> None:
        layers = self._sites.get(self._kind, ())
        heads = layers[0].scaled.shape[0] if layers else 0
        set_combo_items(self.kind_combo, [(kind_title(k), k) for k in self._sites], self._kind)
        set_combo_items(self.layer_combo, [(str(i + 1), i) for i in range(len(layers))], self._layer)
        set_combo_items(self.head_combo, [(str(i + 1), i) for i in range(heads)], self._head)

    def _on_controls_changed(self) -> None:
        kind = self.kind_combo.currentData()
        self._kind = kind if kind is not None else self._kind
        self._layer = int(self.layer_combo.currentData() or 0)
        self._head = int(self.head_combo.currentData() or 0)
        self._clamp()
        self._update_controls()
        self._refresh()
        self.chose.emit({"kind": self._kind, "layer": self._layer, "head": self._head, "mode": "head"})

    def _on_cell_clicked(self, row: int, _col: int) -> None:
        self.select(query=row)
        self.chose.emit({"kind": self._kind, "query": row})

    def _refresh(self) -> None:
        self._set_title()
        self._title_panels()  # the kind may have changed: B or not
        c = self.comparison()
        if c is None:
            return
        rows, cols = self._labels.get(self._kind, ((), ()))
        h, q = self._head, self.query()
        step = None if self._kind == "encoder" else self._highlight
        for name, plot in self.heatmaps().items():
            plot.set_matrix(c.by_scaling[SCALINGS.index(name), h], rows, cols, step, levels=(0.0, 1.0))
            plot.set_linked_row(None if q == step else q)  # the row of the panels below, dashed
        self._draw_row(self.row_scaling(), rows, cols)
        self._draw_rows(c, rows, q)
        stats = self.layer_stats()
        x = np.arange(1, stats.max_weight.shape[1] + 1)
        self._draw_series((self.layer_max, self.layer_entropy, self.layer_jacobian),
                          (stats.max_weight, stats.entropy, stats.jacobian), x, [str(i) for i in x])

    def _draw_series(self, plots, stats, x, ticks) -> None:
        """Each of ``plots`` gets its ``stats`` ``[scaling, x]``, one curve per scaling, ticks at ``x``."""
        for plot, values in zip(plots, stats):
            for name in SHOWN:
                plot.set_series(name, x, values[SCALINGS.index(name)])
            plot.set_ticks(ticks, x)

    def _draw_rows(self, c: ScalingComparison, rows: tuple[str, ...], q: int) -> None:
        h = self._head
        x = np.arange(len(rows))
        plots = (self.row_max, self.row_entropy, self.row_jacobian)
        self._draw_series(plots, (c.max_weight[:, h], c.entropy[:, h], c.jacobian[:, h]), x, rows)
        for marker in self.row_markers:
            marker.setValue(q)

    def _draw_row(self, r: RowScaling, rows: tuple[str, ...], cols: tuple[str, ...]) -> None:
        x = np.arange(len(cols))
        for name in SHOWN:
            self.row_weights.set_series(name, x, r.weights[SCALINGS.index(name)])
        self.row_weights.set_ticks(cols, x)
        piece = rows[r.row] if r.row < len(rows) else ""
        self.row_weights.set_title_text(translate("scaling", "row {row} “{piece}” (dotted in the curves below): its weights over the keys").format(
            row=r.row + 1, piece=piece))
        stats = np.stack([r.max_weight, r.entropy, r.jacobian], axis=1)  # [scaling, metric]
        self.row_bars.set_values(translate("scaling", "row {row}").format(row=r.row + 1), {name: stats[SCALINGS.index(name)] for name in SHOWN},
                                 translate("scaling", "entropy (≤ {top:.2f})").format(top=math.log(r.allowed)))

    def _show_experiment(self) -> None:
        e = self.experiment
        x = np.log2(e.dims)
        ticks = [str(int(d)) for d in e.dims]
        self._draw_series((self.exp_var, self.exp_max, self.exp_jacobian), (e.var, e.max_weight, e.jacobian), x, ticks)
        for plot in (self.exp_var, self.exp_max, self.exp_jacobian):
            plot.getAxis("bottom").setLabel(translate("scaling", "d_k ({n} keys, seeded)").format(n=e.n_keys), color=self.theme.muted)

    def summary(self) -> str:
        """The shown row's numbers under ÷1 / ÷√d_k / ÷d_k."""
        r = self.row_scaling()
        if r is None:
            return ""

        def three(values: np.ndarray) -> str:
            return " / ".join(f"{v:.2f}" for v in values)

        return translate("scaling", "row {row}, ÷1 / ÷√d_k / ÷d_k: largest weight {max}, entropy {entropy} nats, {jacobian} {norms} — "
                                    "saturated softmax passes almost no gradient (避免梯度消失); "
                                    "÷d_k flattens it toward uniform (标准化程度还需要适度)").format(
            row=r.row + 1, max=three(r.max_weight), entropy=three(r.entropy), jacobian=JACOBIAN, norms=three(r.jacobian))

    def experiment_text(self) -> str:
        e = self.experiment
        return translate("scaling", "random q, k at d_k = {d_k}: Var(q·k) = {var:.0f}, Var(q·k/√d_k) = {scaled:.2f}; "
                                    "mean {jacobian} {unscaled_norm:.3f} (÷1) vs {scaled_norm:.3f} (÷√d_k)").format(
            d_k=int(e.dims[-1]), var=e.var[0, -1], scaled=e.var[1, -1], jacobian=JACOBIAN.split(" =")[0],
            unscaled_norm=e.jacobian[0, -1], scaled_norm=e.jacobian[1, -1])

    def _set_title(self) -> None:
        c = self.comparison()
        if c is None:
            self.title.set_title(translate("scaling", "Why ÷√d_k: no attention to show yet"),
                                 translate("scaling", "Var(q·k) = d_k for unit-variance q, k; ÷√d_k brings it back to 1"))
            self.title.set_legend(())
            return
        note = self.scaling_note()
        self.title.set_title(f"{self.figure_title()} · d_k = {c.d_k}", f"{note} · {self.summary()}" if note else self.summary())
        self.title.set_legend((("", "", self.experiment_text()),))

    def _on_plot_hovered(self, info: HoverInfo | None) -> None:
        which = next(name for name, plot in self.heatmaps().items() if plot is self.sender())
        if info is None:
            self.readout.setText(" ")
        else:
            self.readout.setText(translate("scaling", "{formula}:  query “{query}” (position {q})  →  key “{key}” (position {k})     "
                                                      "weight = {weight:.4g}").format(
                formula=self.formula(which), query=info.row_label, q=info.row + 1, key=info.col_label, k=info.col + 1, weight=info.value))

    def _on_theme_changed(self) -> None:
        for plot in self.heatmaps().values():
            plot.apply_theme(self.theme)
        for series in (self.row_weights, *self._grid_plots()):
            series.apply_theme(self.theme)
        self.row_bars.apply_theme(self.theme)
        self._style_markers()
        if self._colormap is None:
            self._on_colormap_changed()
        self._show_experiment()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        for plot in self.heatmaps().values():
            plot.set_colormap(self.colormap())

    # figure protocol --------------------------------------------------------------------------
    def figure_title(self) -> str:
        if self.comparison() is None:
            return translate("scaling", "Why ÷√d_k")
        return translate("scaling", "Why ÷√d_k · {kind} · layer {layer} · head {head}").format(
            kind=kind_title(self._kind), layer=self._layer + 1, head=self._head + 1)

    def figure_data(self) -> FigureData:
        c = self.comparison()
        if c is None:
            raise ValueError("the view shows no data yet")
        h, stats, r = self._head, self.layer_stats(), self.row_scaling()
        rows, cols = self._labels[self._kind]
        values = {}
        for i, name in enumerate(("unscaled", "scaled", "over_dk")):
            values.update({f"max_weight_{name}": c.max_weight[i, h], f"entropy_{name}": c.entropy[i, h], f"jacobian_{name}": c.jacobian[i, h]})
        extras = {
            "scalings": np.array(SCALINGS), "weights_unscaled": c.unscaled[h], "weights_scaled": c.scaled[h],
            "weights_over_dk": c.over_dk[h], "keys": np.array(cols), "row": np.array(r.row), "row_weights": r.weights,
            "row_max_weight": r.max_weight, "row_entropy": r.entropy, "row_jacobian_norm": r.jacobian,
            "row_jacobian": softmax_jacobian(r.weights), "layer_max_weight": stats.max_weight,
            "layer_entropy": stats.entropy, "layer_jacobian": stats.jacobian, **self._experiment_extras(),
        }
        return FigureData(title=self.figure_title(), dims=("query",), values=values, coords={"query": rows}, extras=extras)

    def _experiment_extras(self) -> dict[str, np.ndarray]:
        e = self.experiment
        return {"random_d_k": e.dims, "random_var": e.var, "random_max_weight": e.max_weight,
                "random_entropy": e.entropy, "random_jacobian": e.jacobian}

    def transient_items(self):
        return [plot.hover_marker for plot in self.heatmaps().values()]


# -- the registry's entry ----------------------------------------------------------------------
def scaling_data(session: Session, choice: ViewChoice) -> ScalingFrame | None:
    """Every attention site of the session's current result under ÷1, ÷√d_k and ÷d_k (from the
    recorded QKᵀ and M: no model call)."""
    cur = session.current
    if cur is None:
        return None
    src, tgt = session.src_pieces(), session.input_pieces()
    cfg = cur.config
    labels = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}
    return ScalingFrame(result_scaling(cur), labels, session.current_row(), scales=cfg.scale_scores,
                        biased=tuple(k for k in KINDS if position_biased(cfg, k)))


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("scale_sqrt_dk", "scale_max_scaled", "scale_max_unscaled", "scale_entropy_scaled", "scale_entropy_unscaled")


def tour_measures(view: QtScalingView, ask: TourAsk) -> dict[str, Any]:
    """√d_k and the selected layer's mean largest weight and row entropy, with and without ÷√d_k."""
    stats, i = view.layer_stats(), view.layer()
    scaled, unscaled = SCALINGS.index(SCALED), SCALINGS.index(UNSCALED)
    return {"scale_sqrt_dk": math.sqrt(view.comparison().d_k), "scale_max_scaled": float(stats.max_weight[scaled][i]),
            "scale_max_unscaled": float(stats.max_weight[unscaled][i]), "scale_entropy_scaled": float(stats.entropy[scaled][i]),
            "scale_entropy_unscaled": float(stats.entropy[unscaled][i])}


def region_heatmaps(view: QtScalingView, ask: TourAsk) -> Region | None:
    """The two heatmaps, with ÷√d_k and without."""
    return items_region(view.heat_scaled, view.heat_unscaled)


SPEC = ViewSpec("scaling", QtScalingView, QT_TRANSLATE_NOOP("views", "Why ÷√d_k"), "bottom", SELECTORS, data=scaling_data, kinds=KINDS,
                depends_on=encoder_side, measures=tour_measures, measure_names=TOUR_MEASURES, regions={"scaling-heatmaps": region_heatmaps})
