"""Scaling view: why attention divides the scores by √d_k.

For the selected head, softmax(QKᵀ/√d_k + M) beside softmax(QKᵀ + M), with each row's largest
weight and entropy; per layer the same two statistics (mean over heads and rows); and an
experiment on random q, k with unit-variance entries: Var(q·k) grows as d_k, and without the
scaling softmax saturates (one weight near 1) as d_k grows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtWidgets

from attnviz.core.analysis.figure_data import KIND_TITLES, FigureData
from attnviz.core.analysis.scaling import LayerScaling, RandomScaling, ScalingComparison, ScalingFrame, random_scaling, result_scaling
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import KINDS
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.series_plot import SeriesPlot
from attnviz.qt.views.spec import ATTENTION_SELECTORS, ViewSpec
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo

if TYPE_CHECKING:
    from attnviz.qt.session import Session

SCALED, UNSCALED = "softmax(QKᵀ/√d_k)", "softmax(QKᵀ)"
MIN_CANVAS = (780, 1120)  # px: the smallest size at which every panel's labels read
WITH, WITHOUT = "÷√d_k", "without"


class QtScalingView(FigureViewBase):
    """softmax with and without ÷√d_k, on the model and on random vectors.

    ``set_data(ScalingFrame(sites, labels, highlight))``: ``sites`` kind → one
    :class:`ScalingComparison` per layer (``[head, query, key]``), ``labels`` kind → (query
    labels, key labels); ``select(kind=, layer=, head=)`` (0-based); ``chose`` says what the user picked.
    """


    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme, title_span=2)
        self._sites: dict[str, tuple[ScalingComparison, ...]] = {}
        self._labels: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._highlight: int | None = None
        self._kind = "encoder"
        self._layer = 0
        self._head = 0
        self.experiment: RandomScaling = random_scaling()
        self.kind_combo = self._add_control("Kind", make_combo("scalingKindCombo", "Attention kind"))
        self.layer_combo = self._add_control("Layer", make_combo("scalingLayerCombo", "Layer"))
        self.head_combo = self._add_control("Head", make_combo("scalingHeadCombo", "Head i"))
        self.controls.addStretch(1)
        for combo in (self.kind_combo, self.layer_combo, self.head_combo):
            combo.currentIndexChanged.connect(self._on_controls_changed)
        self._build_canvas()
        self._show_experiment()

    def _build_canvas(self) -> None:
        t = self.theme
        self.heat_scaled = HeatmapPlot(t, colormap=self.colormap(), colorbar_label="weight")
        self.heat_unscaled = HeatmapPlot(t, colormap=self.colormap(), colorbar_label="weight")
        self.heat_scaled.set_panel_title(f"{SCALED} (the model's)")
        self.heat_unscaled.set_panel_title(f"{UNSCALED} (no ÷√d_k)")
        names = (WITH, WITHOUT)
        self.row_max = SeriesPlot(t, "largest weight per row", names, x_label="query")
        self.row_entropy = SeriesPlot(t, "entropy per row (nats)", names, x_label="query")
        self.layer_max = SeriesPlot(t, "per layer: mean largest weight", names, x_label="layer")
        self.layer_entropy = SeriesPlot(t, "per layer: mean entropy (nats)", names, x_label="layer")
        self.exp_var = SeriesPlot(t, "random q, k: Var(score)", ("q·k/√d_k", "q·k"), x_label="d_k")
        self.exp_var.setLogMode(x=False, y=True)
        self.exp_max = SeriesPlot(t, "random q, k: mean largest weight", names, x_label="d_k")
        items = (self.heat_scaled, self.heat_unscaled, self.row_max, self.row_entropy,
                 self.layer_max, self.layer_entropy, self.exp_var, self.exp_max)
        for i, item in enumerate(items):  # two panels a row: the heatmaps, then the pairs of curves
            self.canvas.addItem(item, row=1 + i // 2, col=i % 2)
        self.canvas.ci.layout.setRowStretchFactor(1, 3)
        for row in (2, 3, 4):
            self.canvas.ci.layout.setRowStretchFactor(row, 2)
        self.canvas.ci.layout.setHorizontalSpacing(12)
        self.canvas.setMinimumSize(*MIN_CANVAS)  # eight panels stay readable; a smaller dock scrolls
        self._scroll_canvas()  # the controls stay in view
        for plot in (self.heat_scaled, self.heat_unscaled):
            plot.sigHovered.connect(self._on_plot_hovered)
        self._set_title()

    # data ---------------------------------------------------------------------------------
    def set_data(self, frame: ScalingFrame) -> None:
        self._sites = {k: tuple(v) for k, v in frame.sites.items() if v}
        self._labels = {k: (tuple(map(display_piece, q)), tuple(map(display_piece, c))) for k, (q, c) in frame.labels.items()}
        self._highlight = frame.highlight
        self._clamp()
        self._update_controls()
        self._refresh()

    def has_data(self) -> bool:
        return bool(self._sites)

    def apply(self, choice: ViewChoice) -> None:
        """The selected kind (where the view has it), layer and head."""
        self.select(kind=choice.kind, layer=choice.layer, head=choice.head)

    def select(self, kind: str | None = None, layer: int | None = None, head: int | None = None) -> None:
        if kind is not None and (kind in self._sites or not self._sites):
            self._kind = kind
        if layer is not None:
            self._layer = int(layer)
        if head is not None:
            self._head = int(head)
        self._clamp()
        self._update_controls()
        self._refresh()

    def kind(self) -> str:
        return self._kind

    def layer(self) -> int:
        return self._layer

    def head(self) -> int:
        return self._head

    def comparison(self) -> ScalingComparison | None:
        """The shown site's comparison (every head)."""
        layers = self._sites.get(self._kind)
        return layers[self._layer] if layers else None

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
        set_combo_items(self.kind_combo, [(KIND_TITLES[k], k) for k in self._sites], self._kind)
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

    def _refresh(self) -> None:
        self._set_title()
        c = self.comparison()
        if c is None:
            return
        rows, cols = self._labels.get(self._kind, ((), ()))
        h = self._head
        highlight = None if self._kind == "encoder" else self._highlight
        self.heat_scaled.set_matrix(c.scaled[h], rows, cols, highlight, levels=(0.0, 1.0))
        self.heat_unscaled.set_matrix(c.unscaled[h], rows, cols, highlight, levels=(0.0, 1.0))
        self.heat_scaled.set_axis_titles("queries (rows)", "keys (columns)")
        x = np.arange(len(rows))
        for plot, a, b in ((self.row_max, c.max_scaled[h], c.max_unscaled[h]), (self.row_entropy, c.entropy_scaled[h], c.entropy_unscaled[h])):
            plot.set_series(WITH, x, a)
            plot.set_series(WITHOUT, x, b)
            plot.set_ticks(rows)
        stats = self.layer_stats()
        x = np.arange(1, len(stats.max_scaled) + 1)
        for plot, a, b in ((self.layer_max, stats.max_scaled, stats.max_unscaled), (self.layer_entropy, stats.entropy_scaled, stats.entropy_unscaled)):
            plot.set_series(WITH, x, a)
            plot.set_series(WITHOUT, x, b)
            plot.set_ticks([str(i) for i in x], x)

    def _show_experiment(self) -> None:
        e = self.experiment
        x = np.log2(e.dims)
        self.exp_var.set_series("q·k/√d_k", x, e.var_scaled)
        self.exp_var.set_series("q·k", x, e.var_unscaled)
        self.exp_max.set_series(WITH, x, e.max_scaled)
        self.exp_max.set_series(WITHOUT, x, e.max_unscaled)
        for plot in (self.exp_var, self.exp_max):
            plot.set_ticks([str(int(d)) for d in e.dims], x)
            plot.getAxis("bottom").setLabel(f"d_k ({e.n_keys} keys, seeded)", color=self.theme.muted)

    def summary(self) -> str:
        """The selected layer's numbers: largest weight and entropy with → without ÷√d_k."""
        stats = self.layer_stats()
        if stats is None:
            return ""
        i, e = self._layer, self.experiment
        return (f"layer {i + 1} (mean over heads and rows): largest weight {stats.max_scaled[i]:.2f} → {stats.max_unscaled[i]:.2f}, "
                f"entropy {stats.entropy_scaled[i]:.2f} → {stats.entropy_unscaled[i]:.2f} nats without ÷√d_k;  "
                f"random q, k at d_k = {int(e.dims[-1])}: Var(q·k) = {e.var_unscaled[-1]:.0f}, Var(q·k/√d_k) = {e.var_scaled[-1]:.2f}")

    def _set_title(self) -> None:
        c = self.comparison()
        if c is None:
            self.title.set_title("Why ÷√d_k: no attention to show yet", "Var(q·k) = d_k for unit-variance q, k; ÷√d_k brings it back to 1")
            return
        self.title.set_title(
            f"Why ÷√d_k · {KIND_TITLES[self._kind]} · layer {self._layer + 1} · head {self._head + 1} · d_k = {c.d_k}",
            self.summary(),
        )

    def _on_plot_hovered(self, info: HoverInfo | None) -> None:
        which = SCALED if self.sender() is self.heat_scaled else UNSCALED
        if info is None:
            self.readout.setText(" ")
        else:
            self.readout.setText(f"{which}:  query “{info.row_label}” (position {info.row + 1})  →  key “{info.col_label}” (position {info.col + 1})     weight = {info.value:.4g}")

    def _plots(self) -> tuple[SeriesPlot, ...]:
        return (self.row_max, self.row_entropy, self.layer_max, self.layer_entropy, self.exp_var, self.exp_max)

    def _on_theme_changed(self) -> None:
        for plot in (self.heat_scaled, self.heat_unscaled):
            plot.apply_theme(self.theme)
        for series in self._plots():
            series.apply_theme(self.theme)
        if self._colormap is None:
            self._on_colormap_changed()
        self._show_experiment()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        for plot in (self.heat_scaled, self.heat_unscaled):
            plot.set_colormap(self.colormap())

    # figure protocol --------------------------------------------------------------------------
    def figure_title(self) -> str:
        if self.comparison() is None:
            return "Why ÷√d_k"
        return f"Why ÷√d_k · {KIND_TITLES[self._kind]} · layer {self._layer + 1} · head {self._head + 1}"

    def figure_data(self) -> FigureData:
        c = self.comparison()
        if c is None:
            raise ValueError("the view shows no data yet")
        h, e, stats = self._head, self.experiment, self.layer_stats()
        rows, cols = self._labels[self._kind]
        return FigureData(
            title=self.figure_title(),
            dims=("query",),
            values={"max_weight_scaled": c.max_scaled[h], "max_weight_unscaled": c.max_unscaled[h],
                    "entropy_scaled": c.entropy_scaled[h], "entropy_unscaled": c.entropy_unscaled[h]},
            coords={"query": rows},
            extras={
                "weights_scaled": c.scaled[h], "weights_unscaled": c.unscaled[h], "keys": np.array(cols),
                "layer_max_scaled": stats.max_scaled, "layer_max_unscaled": stats.max_unscaled,
                "layer_entropy_scaled": stats.entropy_scaled, "layer_entropy_unscaled": stats.entropy_unscaled,
                "random_d_k": e.dims, "random_var_unscaled": e.var_unscaled, "random_var_scaled": e.var_scaled,
                "random_max_unscaled": e.max_unscaled, "random_max_scaled": e.max_scaled,
                "random_entropy_unscaled": e.entropy_unscaled, "random_entropy_scaled": e.entropy_scaled,
            },
        )

    def transient_items(self):
        return [self.heat_scaled.hover_marker, self.heat_unscaled.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def scaling_data(session: Session, choice: ViewChoice) -> ScalingFrame | None:
    """Every attention site of the session's current result, with and without ÷√d_k (from the
    recorded QKᵀ and M: no model call)."""
    cur = session.current
    if cur is None:
        return None
    src, tgt = session.src_pieces(), session.input_pieces()
    return ScalingFrame(result_scaling(cur), {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}, session.current_row())


SPEC = ViewSpec("scaling", QtScalingView, "Why ÷√d_k", "bottom", ATTENTION_SELECTORS, data=scaling_data, kinds=KINDS)
