"""LayerNorm vs BatchNorm on a real batch.

The session's sentence and a few example sentences of other lengths, padded with PAD, go
through the model as one batch. For the chosen normalization:

* top: the batch, one row per sentence, one column per position, each cell labelled with its
  piece; PAD cells are drawn in the masked colour. A BatchNorm model colours the cells by the
  chosen feature of the norm's input, a LayerNorm model by each token's σ;
* BatchNorm model: per feature, the batch's mean and variance with the PAD positions left out
  (what training uses) and counted, the running statistics evaluation uses, and the first
  sentence alone (batch size 1); and a button that measures the teacher-forced token accuracy
  this costs on training pairs (batch vs running statistics, and batch size 1) in a worker;
* LayerNorm model: per token of the first sentence, the mean and σ of its features before the
  norm, after the normalization (mean 0, std 1) and after the learned γ, β; the same sentence
  alone gives the same numbers (LayerNorm does not look at the batch). BatchNorm needs a
  BatchNorm model (``models/hsk-zh-en-batchnorm``); the feature, pairs and measure controls show
  for a BatchNorm model only.

The view renders :class:`attnviz.core.analysis.norm_batch.NormBatch`, built step after step by
the view's :class:`~attnviz.core.analysis.norm_batch.NormBatchBuilder` (a step of the same
source runs only the decoder on the session's sentence); the accuracy is measured by the
``measure(n, progress, should_stop)`` callable its loader gives it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.ffn import stack_of
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.norm_batch import ACCURACY_PAIRS, AccuracyGap, NormBatch, NormBatchBuilder, NormBatchFrame, NormSiteBatch, norm_batch_frame
from attnviz.core.data.pieces import display_piece
from attnviz.qt.analyses import Analysis
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.small_plots import CellLabels, apply_plot_theme, legend_title, series, small_plot
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo
from attnviz.qt.widgets.plain_text import ElidedLabel

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session
    from attnviz.qt.workers import FunctionWorker

Measure = Callable[[int, Callable[[int, int], None], Callable[[], bool]], "AccuracyGap | None"]
BN_BUNDLE = "models/hsk-zh-en-batchnorm"
BN_SERIES = ("batch, PAD left out", "batch, PAD counted", "running (evaluation)", "sentence 1 alone (batch size 1)")
FEATURE_WINDOW = 24  # features drawn at once in the per-feature plots (the chosen one's block)
MEASURE, MEASURING = "Measure accuracy", "Measuring…"  # the button's two texts
LN_SERIES = ("x before LN", "normalized (x − μ)/σ", "after γ, β", "sentence 1 alone: x before LN")


def site_label(site: str) -> str:
    """``encoder.layers.0.norm1`` → ``encoder layer 1 · norm1``; ``decoder.final_norm`` → ``decoder · final norm``."""
    parts = site.split(".")
    if parts[1] == "final_norm":
        return f"{parts[0]} · final norm"
    return f"{parts[0]} layer {int(parts[2]) + 1} · {parts[3]}"

MIN_HEIGHT = 620  # px of canvas before the dock scrolls

class QtNormBatchView(FigureViewBase):
    """``set_data(NormBatch, measure=None, model_key=None)``; ``select(stack, layer)`` picks the
    stack and layer whose norms the combo offers; ``measured(AccuracyGap)`` after a measurement."""

    measured = QtCore.Signal(object)  # AccuracyGap
    progressed = QtCore.Signal(int, int)  # done, total (emitted from the worker thread)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)  # below it the figure scrolls (a short dock)
        self._scroll_canvas()
        self._batch: NormBatch | None = None
        self._site: str | None = None
        self._stack, self._layer = "encoder", 0
        self._feature = 0
        self._colour_meaning = ""  # what the batch heatmap's colour shows
        self._measure: Measure | None = None
        self._model_key: object = None
        self._gap: AccuracyGap | None = None
        self._worker: FunctionWorker | None = None
        self._build_controls()
        ci = self.canvas.ci
        self.heatmap = HeatmapPlot(self.theme, colorbar=True, annotate=False, masked=True, label_point_size=8.5)
        self.heatmap.set_axis_titles("sentence", "position")
        self.heatmap.sigHovered.connect(self._on_hovered)
        ci.addItem(self.heatmap, row=1, col=0, colspan=2)
        self.labels = CellLabels(self.heatmap)
        self.mean_plot, self.spread_plot = small_plot(), small_plot()
        ci.addItem(self.mean_plot, row=2, col=0)
        ci.addItem(self.spread_plot, row=2, col=1)
        self.mean_lines = [series(self.mean_plot, self.theme, i, n, dashed=i == 3) for i, n in enumerate(BN_SERIES)]
        self.spread_lines = [series(self.spread_plot, self.theme, i, n, dashed=i == 3) for i, n in enumerate(BN_SERIES)]
        ci.layout.setRowStretchFactor(1, 2)
        ci.layout.setRowStretchFactor(2, 3)
        self.progressed.connect(self._on_progress)
        self._apply_theme()
        self._refresh()

    def _build_controls(self) -> None:
        self.site_combo = self._add_control("Norm", make_combo("normBatchSiteCombo", "Which normalization's input the batch shows"))
        self.batch_norm_controls = QtWidgets.QWidget(objectName="normBatchBnControls")  # shown for a BatchNorm model only
        row = QtWidgets.QHBoxLayout(self.batch_norm_controls)
        row.setContentsMargins(0, 0, 0, 0)
        self.feature_spin = QtWidgets.QSpinBox(objectName="normBatchFeatureSpin", minimum=0, maximum=0)
        self.feature_spin.setToolTip("The feature (column of d_model, counted from 0 as in every view) the batch heatmap shows (BatchNorm)")
        self.pairs_spin = QtWidgets.QSpinBox(objectName="normBatchPairsSpin", minimum=10, maximum=5000, singleStep=50)
        self.pairs_spin.setValue(ACCURACY_PAIRS)
        self.pairs_spin.setToolTip("How many training pairs the accuracy is measured on")
        self.measure_button = QtWidgets.QPushButton(MEASURE, objectName="normBatchMeasureButton")
        self.measure_button.setToolTip("Teacher-forced token accuracy on training pairs with batch vs running statistics "
                                       "(runs in the background)")
        self.measure_button.setMinimumWidth(self.measure_button.sizeHint().width() + 8)  # "Measuring…" is shorter
        self.progress = QtWidgets.QProgressBar(objectName="normBatchProgress", minimum=0, maximum=1)
        self.progress.setMaximumWidth(140)
        self.progress.setVisible(False)
        for label, widget in (("Feature", self.feature_spin), ("Pairs", self.pairs_spin), ("", self.measure_button), ("", self.progress)):
            if label:
                row.addWidget(QtWidgets.QLabel(label, buddy=widget))
            row.addWidget(widget)
        self.controls.addWidget(self.batch_norm_controls)
        self.batch_norm_controls.setVisible(False)
        self.result_label = ElidedLabel(" ", "normBatchResult")  # the whole text in its tooltip
        self.controls.addWidget(self.result_label, 1)
        self.site_combo.currentIndexChanged.connect(self._on_site_changed)
        self.feature_spin.valueChanged.connect(self._on_feature_changed)
        self.measure_button.clicked.connect(self.start_measuring)

    # data and selection ----------------------------------------------------------------------------
    def set_data(self, frame: NormBatchFrame) -> None:
        """Show ``frame.batch``; ``frame.measure`` measures the accuracy gap of its model (``None``:
        it cannot); another ``frame.model`` than the last drops the measured numbers."""
        if frame.model is not self._model_key:
            self._stop_worker()
            self._gap = None
        self._batch, self._measure, self._model_key = frame.batch, frame.measure, frame.model
        if self._site is None or frame.batch.get(self._site) is None:
            self._site = self._default_site()
        self._update_controls()
        self._refresh()

    def select(self, stack: str | None = None, layer: int | None = None) -> None:
        """Offer the norms of ``stack``'s ``layer`` (0-based) and show its first one."""
        self._stack = stack if stack is not None else self._stack
        self._layer = layer if layer is not None else self._layer
        self._site = self._default_site()
        self._update_controls()
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """The selected kind's stack (cross-attention sits in the decoder) and layer."""
        if choice.kind is not None or choice.layer is not None:
            self.select(None if choice.kind is None else stack_of(choice.kind), choice.layer)

    def set_site(self, site: str) -> None:
        if self._batch is None or self._batch.get(site) is None:
            raise ValueError(f"no normalization {site!r} in the batch")
        self._site = site
        self._update_controls()
        self._refresh()

    def has_data(self) -> bool:
        return self.site() is not None

    def site(self) -> NormSiteBatch | None:
        return None if self._batch is None or self._site is None else self._batch.get(self._site)

    def gap(self) -> AccuracyGap | None:
        return self._gap

    def _sites_of_layer(self) -> list[str]:
        if self._batch is None:
            return []
        prefix = f"{self._stack}.layers.{self._layer}."
        names = [s.site for s in self._batch.sites if s.site.startswith(prefix)]
        return names + [s.site for s in self._batch.sites if s.site == f"{self._stack}.final_norm"]

    def _default_site(self) -> str | None:
        names = self._sites_of_layer() or ([self._batch.sites[0].site] if self._batch and self._batch.sites else [])
        return names[0] if names else None

    # drawing ------------------------------------------------------------------------------------------
    def _update_controls(self) -> None:
        names = self._sites_of_layer()
        if self._site and self._site not in names:
            names = [self._site, *names]
        set_combo_items(self.site_combo, [(site_label(n), n) for n in names], self._site)
        site = self.site()
        d = site.x.shape[-1] if site is not None else 1
        blocked = self.feature_spin.blockSignals(True)
        self.feature_spin.setMaximum(max(0, d - 1))
        self.feature_spin.setValue(min(self._feature, d - 1))
        self.feature_spin.blockSignals(blocked)
        batch_norm = self._batch is not None and self._batch.norm == "batch"
        self.batch_norm_controls.setVisible(batch_norm)  # a LayerNorm model has no feature to pick, nothing to measure
        self.feature_spin.setEnabled(batch_norm)
        running = self._worker is not None
        self.measure_button.setEnabled(self._measure is not None and batch_norm and not running)
        self.measure_button.setText(MEASURING if running else MEASURE)
        if not batch_norm:
            self.result_label.set_full_text(" ")  # the title says what BatchNorm needs
        elif self._gap is not None:
            g = self._gap
            self.result_label.set_full_text(f"accuracy ({g.pairs} pairs): batch statistics {g.batch:.1%} · running {g.running:.1%} · batch size 1 {g.single:.1%}")
        elif not running:
            self.result_label.set_full_text(" " if self._measure is not None else "this model's training data is unknown")

    def gap_text(self) -> str:
        g = self._gap
        if g is None:
            return ""
        return (f"token accuracy on {g.pairs} training pairs: {g.batch:.1%} with batch statistics, "
                f"{g.running:.1%} with running ones, {g.single:.1%} at batch size 1")

    def _refresh(self) -> None:
        site = self.site()
        for item in (self.heatmap, self.mean_plot, self.spread_plot):
            item.setVisible(site is not None)
        if site is None:
            self.title.set_title("LayerNorm vs BatchNorm on a real batch", "decode a sentence to see its batch")
            self.labels.show([], None)
            return
        self._draw_batch(site)
        if self._batch.norm == "batch":
            self._draw_batch_norm(site)
        else:
            self._draw_layer_norm(site)

    def _draw_batch(self, site: NormSiteBatch) -> None:
        pieces = self._batch.pieces(site.stack)
        if self._batch.norm == "batch":
            values, what = site.x[..., self._feature].astype(np.float64), f"feature {self._feature} (0-based) of the norm's input"
        else:
            values, what = site.x.std(-1).astype(np.float64), "σ of each token's features (what LayerNorm divides by)"
        shown = np.where(site.valid, values, -np.inf)
        finite = np.abs(values[site.valid]) if site.valid.any() else np.ones(1)
        m = float(finite.max()) or 1.0
        rows = [f"{i + 1} · {int(v.sum())} + {int((~v).sum())} PAD" for i, v in enumerate(site.valid)]
        levels = (-m, m) if self._batch.norm == "batch" else (0.0, m)
        self.heatmap.set_matrix(shown, rows, [str(j + 1) for j in range(site.x.shape[1])], levels=levels)
        self.heatmap.colorbar.axis.setLabel(f"feature {self._feature + 1}" if self._batch.norm == "batch" else "σ")
        self.labels.show([[display_piece(p) for p in row] for row in pieces], np.where(site.valid, values, np.nan))
        self.heatmap.setTitle(f"{len(pieces)} sentences, padded to {site.x.shape[1]}", size="8.5pt", color=self.theme.foreground)
        self._colour_meaning = what

    def bn_series(self, site: NormSiteBatch) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """(mean, variance) per feature of each of ``BN_SERIES`` (None: the model has no running statistics)."""
        out = [(s.mean, s.var) for s in (site.without_pad(), site.with_pad())]
        out.append(None if site.running is None else (site.running.mean, site.running.var))
        one = site.batch_size_one()
        out.append((one.mean, one.var))
        return out

    def feature_window(self, site: NormSiteBatch) -> range:
        """The features the per-feature plots draw: the block of ``FEATURE_WINDOW`` holding the chosen one."""
        start = (self._feature // FEATURE_WINDOW) * FEATURE_WINDOW
        return range(start, min(start + FEATURE_WINDOW, site.x.shape[-1]))

    def _draw_batch_norm(self, site: NormSiteBatch) -> None:
        window = self.feature_window(site)
        j = np.array(window)
        shown = []
        for i, s in enumerate(self.bn_series(site)):
            self.mean_lines[i].setData(j + 1.0, s[0][j]) if s is not None else self.mean_lines[i].setData([], [])
            self.spread_lines[i].setData(j + 1.0, s[1][j]) if s is not None else self.spread_lines[i].setData([], [])
            if s is not None:
                shown.append((i, BN_SERIES[i]))
        self._legend(shown)
        legend_title(self.mean_plot, "mean μ_j", [], self.theme)
        legend_title(self.spread_plot, "variance σ²_j", [], self.theme)
        for p in (self.mean_plot, self.spread_plot):
            p.setLabel("bottom", f"feature j ({window.start + 1}–{window.stop} of {site.x.shape[-1]})")
            p.enableAutoRange()
        sv, sp = site.without_pad(), site.with_pad()
        shift = float(np.mean(np.abs(sv.mean - sp.mean)))
        run = f" · mean |μ_batch − μ_running| = {np.mean(np.abs(sv.mean - site.running.mean)):.3f}" if site.running is not None else ""
        measured = f"{self.gap_text()} · " if self._gap else ""
        self.title.set_title(
            f"BatchNorm on a real batch · {site_label(site.site)} · {sv.n} tokens + {sp.n - sv.n} PAD",
            f"{measured}BN: (x − μ_j)/√(σ²_j + ε) over the batch's tokens · counting PAD moves μ_j by {shift:.3f} on average{run}"
            f" · batch (sentence 1: this one): {self._colour_meaning}, PAD greyed",
        )

    def ln_series(self, site: NormSiteBatch) -> list[tuple[np.ndarray, np.ndarray]]:
        """(mean, std) per token of sentence 1 for each of ``LN_SERIES``."""
        n = int(site.valid[0].sum())
        stages = site.layer_norm_stages(site.x[0, :n])
        alone = site.layer_norm_stages(site.alone[:n])["before"]
        return [*stages.values(), alone]

    def _draw_layer_norm(self, site: NormSiteBatch) -> None:
        ser = self.ln_series(site)
        t = np.arange(1, len(ser[0][0]) + 1, dtype=float)
        for i, (mean, std) in enumerate(ser):
            self.mean_lines[i].setData(t, mean)
            self.spread_lines[i].setData(t, std)
        self._legend(list(enumerate(LN_SERIES)))
        legend_title(self.mean_plot, "mean per token", [], self.theme)
        legend_title(self.spread_plot, "std per token", [], self.theme)
        for p in (self.mean_plot, self.spread_plot):
            p.setLabel("bottom", "token of sentence 1")
            p.enableAutoRange()
        self.title.set_title(
            f"LayerNorm on a real batch · {site_label(site.site)} · the statistics do not depend on the batch",
            f"LN: (x − μ)/√(σ² + ε) over each token's features, then γ, β · normalized: mean 0, std 1 · "
            f"sentence 1 alone draws over sentence 1 in the batch: the same numbers · batch (sentence 1: this one): "
            f"{self._colour_meaning}, PAD greyed · BatchNorm needs the BatchNorm bundle ({BN_BUNDLE})",
        )

    def _legend(self, shown: list[tuple[int, str]]) -> None:
        """The series of both plots, in the title's legend line (solid ●, dashed ■ for the last)."""
        marks = ["●", "●", "●", "■ - -"]
        self.title.set_legend(tuple((marks[i], self.theme.head_color(i).name(), name) for i, name in shown))

    def _apply_theme(self) -> None:
        self.heatmap.apply_theme(self.theme)
        for p in (self.mean_plot, self.spread_plot):
            apply_plot_theme(p, self.theme)

    def _on_theme_changed(self) -> None:
        self._apply_theme()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        self.heatmap.set_colormap(self.colormap())
        self._refresh()

    def _on_site_changed(self) -> None:
        site = self.site_combo.currentData()
        if site and site != self._site:
            self.set_site(site)
            parts = site.split(".")
            if parts[1] == "layers":
                self.chose.emit({"kind": parts[0], "layer": int(parts[2])})

    def _on_feature_changed(self, value: int) -> None:
        self._feature = value
        self._refresh()

    def _on_hovered(self, info: HoverInfo | None) -> None:
        site = self.site()
        if info is None or site is None:
            self.readout.setText(" ")
            return
        piece = self._batch.pieces(site.stack)[info.row][info.col]
        where = "PAD: left out of BatchNorm's statistics" if not site.valid[info.row, info.col] else f"value {site.x[info.row, info.col, self._feature]:.4f}"
        self.readout.setText(f"sentence {info.row + 1}, position {info.col + 1}, “{display_piece(piece)}”: {where}")

    # measuring ------------------------------------------------------------------------------------------
    def start_measuring(self) -> FunctionWorker | None:
        """Measure the accuracy gap in a worker (``measured`` follows); ``None`` when it cannot."""
        from attnviz.qt.workers import FunctionWorker, while_alive

        if self._measure is None or self._worker is not None:
            return None
        n = self.pairs_spin.value()
        worker = FunctionWorker(self._measure, n, self.progressed.emit, lambda: worker.abort_requested)
        worker.returned.connect(self._on_measured)
        worker.errored.connect(self._on_measure_failed)
        worker.finished.connect(while_alive(self, lambda: self._on_worker_finished(worker)))
        self._worker = worker
        self.progress.setVisible(True)
        self.progress.setValue(0)
        self.result_label.set_full_text(f"measuring on {n} training pairs…")
        self._update_controls()
        worker.start()
        return worker

    def _stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.quit()
            self._worker = None
            self.progress.setVisible(False)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setMaximum(max(1, total))
        self.progress.setValue(done)

    def _on_measured(self, gap: AccuracyGap | None) -> None:
        if gap is None:
            return
        self._gap = gap
        self._update_controls()
        self._refresh()
        self.measured.emit(gap)

    def _on_measure_failed(self, exc: BaseException) -> None:
        self.result_label.set_full_text(f"could not measure: {' '.join(str(exc).split())[:200]}")

    def _on_worker_finished(self, worker: FunctionWorker) -> None:
        if worker is self._worker:
            self._worker = None
            self.progress.setVisible(False)
            self._update_controls()

    # figure protocol ------------------------------------------------------------------------------------
    def figure_title(self) -> str:
        site = self.site()
        return f"LayerNorm vs BatchNorm on a batch · {site_label(site.site)}" if site else "LayerNorm vs BatchNorm on a batch"

    def figure_data(self) -> FigureData:
        site = self.site()
        if site is None:
            raise ValueError("the view shows no data yet")
        if self._batch.norm == "batch":
            keys = ("mean_without_pad", "var_without_pad", "mean_with_pad", "var_with_pad", "running_mean", "running_var",
                    "mean_batch_size_1", "var_batch_size_1")
            arrays = [a for s in self.bn_series(site) for a in (s if s is not None else (np.full(site.x.shape[-1], np.nan),) * 2)]
            values, dims, coords = dict(zip(keys, arrays)), ("feature",), {}
        else:
            keys = ("mean_before", "std_before", "mean_normalized", "std_normalized", "mean_after_gamma_beta", "std_after_gamma_beta",
                    "mean_alone", "std_alone")
            values = dict(zip(keys, [a for s in self.ln_series(site) for a in s]))
            n = int(site.valid[0].sum())
            dims, coords = ("token",), {"token": self._batch.pieces(site.stack)[0][:n]}
        extras = {"x": site.x, "valid": site.valid.astype(np.float32)}
        if self._gap is not None:
            extras["token_accuracy_batch_running_single"] = np.array([self._gap.batch, self._gap.running, self._gap.single])
        return FigureData(self.figure_title(), dims, values, coords, extras)

    def transient_items(self):
        return [self.heatmap.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def norm_batch_data(session: Session, choice: ViewChoice) -> Analysis | None:
    """The frame's sentence in a batch with a few examples, through the model in a worker (on a
    new step of the same source only the decoder on the session's sentence runs; nothing while
    the model and the sentence stay the same)."""
    bundle, frozen = session.bundle, session.frozen()
    if bundle is None or frozen is None:
        return None
    builder = session.per_model("norm-batch", lambda: NormBatchBuilder(bundle))
    return Analysis(norm_batch_frame, (builder, tuple(frozen.src_ids), tuple(frozen.input_ids)))


SPEC = ViewSpec("norm-batch", QtNormBatchView, "LN vs BN on a batch", "bottom", ("kind", "layer"), data=norm_batch_data,
                kinds=("encoder", "decoder"), stack_view=True,
                empty="no normalization to show: the model has no encoder layers, no decoder layers and no final norm")
