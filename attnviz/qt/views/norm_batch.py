"""LayerNorm vs BatchNorm, side by side on the same sentence, in a real batch.

The session's sentence and a few example sentences of other lengths, padded with PAD, go as one
batch through two models: the open one and another bundle beside it (by default the other of the
two bundled models: ``zh-en-small``, LayerNorm, and ``zh-en-small-batchnorm``, BatchNorm; the view's
option ``normBatchOtherEdit``, typed or chosen with *Browse…*; ``attnviz export --other-model
DIR``). The LayerNorm side is drawn on the left, the BatchNorm side on the right. LN normalizes
each token over its features; BN each feature over the batch's tokens. For the chosen
normalization, in each side's column:

* top: the batch, one row per sentence, one column per position, each cell labelled with its
  piece; PAD cells are drawn in the masked colour. The LayerNorm side colours each cell by the
  token's σ (one number per token: what LayerNorm divides by), the BatchNorm side by the chosen
  feature of the norm's input (BatchNorm's μ_j, σ²_j run over every real cell of that feature);
* LayerNorm: per token of the first sentence, the mean and σ of its features before the norm,
  after the normalization (mean 0, std 1) and after the learned γ, β; the same sentence alone
  gives the same numbers (LayerNorm does not look at the batch);
* BatchNorm: per feature, the batch's mean and variance with the PAD positions left out (what
  training uses) and counted, the running statistics evaluation uses, and the first sentence
  alone (batch size 1). The batch goes through a training-mode pass: every BatchNorm normalizes
  with its batch's statistics, so a deep site's input comes from layers normalized as in training
  (dropout off, the running statistics neither used nor updated, the model left as it is). A
  button measures the teacher-forced token accuracy this costs on training pairs (batch vs
  running statistics, and batch size 1) in a worker. A BatchNorm model trained on several
  processes (``attnviz train --nproc N``) learned with per-process batch statistics: each process
  normalized over its own rows of the batch (plain DDP), and the running statistics are rank 0's.

The view renders :class:`attnviz.core.analysis.norm_pair.NormBatchFrame`, built in a worker by
:func:`~attnviz.core.analysis.norm_pair.norm_pair_frame` (each model's builder keeps what a step
of the same source can reuse); the accuracy is measured by the ``measure(n, progress,
should_stop)`` callable the frame gives it. One side's column is a :class:`NormColumn`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.ffn import stack_of
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.norm_batch import ACCURACY_PAIRS, AccuracyGap, NormSiteBatch, norm_batch_builder
from attnviz.core.analysis.norm_pair import (
    OTHER_BUNDLES,
    NormBatchFrame,
    NormSide,
    OtherBundle,
    default_other,
    default_other_name,
    folder_key,
    norm_pair_frame,
)
from attnviz.core.data.pieces import display_piece
from attnviz.paths import models_dir
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import kind_name
from attnviz.qt.i18n import translate
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
OTHER_OPTION = "normBatchOtherEdit"  # the option holding the other bundle's folder ("": the other bundled model)
NORM_NAMES = {"layer": "LayerNorm", "batch": "BatchNorm", "rms": "RMSNorm"}
# the plots' series (shown as translate("norm_batch", name))
BN_SERIES = (QT_TRANSLATE_NOOP("norm_batch", "batch, PAD left out"), QT_TRANSLATE_NOOP("norm_batch", "PAD counted"),
             QT_TRANSLATE_NOOP("norm_batch", "running (evaluation)"), QT_TRANSLATE_NOOP("norm_batch", "sentence 1 alone"))
LN_SERIES = (QT_TRANSLATE_NOOP("norm_batch", "before LN"), QT_TRANSLATE_NOOP("norm_batch", "normalized (x − μ)/σ"),
             QT_TRANSLATE_NOOP("norm_batch", "after γ, β"), QT_TRANSLATE_NOOP("norm_batch", "sentence 1 alone"))
FEATURE_WINDOW = 24  # features drawn at once in the per-feature plots (the chosen one's block)
MEASURE, MEASURING = QT_TRANSLATE_NOOP("norm_batch", "Measure accuracy"), QT_TRANSLATE_NOOP("norm_batch", "Measuring…")  # the button's two texts
MIN_HEIGHT = 660  # px of canvas before the dock scrolls


def site_label(site: str) -> str:
    """``encoder.layers.0.norm1`` → ``encoder layer 1 · norm1``; ``decoder.final_norm`` → ``decoder · final norm``."""
    parts = site.split(".")
    if parts[1] == "final_norm":
        return translate("norm_batch", "{stack} · final norm").format(stack=kind_name(parts[0]))
    norm = translate("norm_batch", "norm{index}").format(index=parts[3].removeprefix("norm"))
    return translate("norm_batch", "{stack} layer {layer} · {norm}").format(stack=kind_name(parts[0]), layer=int(parts[2]) + 1, norm=norm)


def ordered_sides(sides: tuple[NormSide, ...]) -> list[NormSide]:
    """The sides left to right: BatchNorm last, else as given (the open model's first)."""
    return sorted(sides, key=lambda s: s.batch.norm == "batch")


def bn_series(site: NormSiteBatch) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """(mean, variance) per feature of each of ``BN_SERIES`` (None: the model has no running statistics)."""
    out = [(s.mean, s.var) for s in (site.without_pad(), site.with_pad())]
    out.append(None if site.running is None else (site.running.mean, site.running.var))
    one = site.batch_size_one()
    out.append((one.mean, one.var))
    return out


def ln_series(site: NormSiteBatch) -> list[tuple[np.ndarray, np.ndarray]]:
    """(mean, std) per token of sentence 1 for each of ``LN_SERIES``."""
    n = int(site.valid[0].sum())
    stages = site.layer_norm_stages(site.x[0, :n])
    alone = site.layer_norm_stages(site.alone[:n])["before"]
    return [*stages.values(), alone]


def side_arrays(side: NormSide, site: NormSiteBatch) -> dict[str, np.ndarray]:
    """The numbers one side's plots draw, by name (a BatchNorm side's per feature, a LayerNorm side's per token)."""
    if side.batch.norm == "batch":
        keys = ("mean_without_pad", "var_without_pad", "mean_with_pad", "var_with_pad", "running_mean", "running_var",
                "mean_batch_size_1", "var_batch_size_1")
        return dict(zip(keys, [a for s in bn_series(site) for a in (s if s is not None else (np.full(site.x.shape[-1], np.nan),) * 2)]))
    keys = ("mean_before", "std_before", "mean_normalized", "std_normalized", "mean_after_gamma_beta", "std_after_gamma_beta",
            "mean_alone", "std_alone")
    return dict(zip(keys, [a for s in ln_series(site) for a in s]))


class NormColumn:
    """One side's column of the canvas (``col``): the batch as a heatmap with its pieces, and the
    per-token (LayerNorm) or per-feature (BatchNorm) mean and spread plots."""

    def __init__(self, view: QtNormBatchView, col: int):
        self.view = view
        theme = view.theme
        self.heatmap = HeatmapPlot(theme, colorbar=True, annotate=False, masked=True, label_point_size=8.5)
        self.heatmap.set_axis_titles(translate("norm_batch", "sentence"), translate("norm_batch", "position"))
        self.heatmap.sigHovered.connect(self._on_hovered)
        self.labels = CellLabels(self.heatmap)
        self.mean_plot, self.spread_plot = small_plot(), small_plot()
        for row, item in enumerate((self.heatmap, self.mean_plot, self.spread_plot), start=1):
            view.canvas.ci.addItem(item, row=row, col=col)
        self.mean_lines = [series(self.mean_plot, theme, i, "", dashed=i == 3) for i in range(4)]
        self.spread_lines = [series(self.spread_plot, theme, i, "", dashed=i == 3) for i in range(4)]
        self.side: NormSide | None = None
        self.site: NormSiteBatch | None = None

    def show(self, side: NormSide | None, site: str | None) -> None:
        """Draw ``side``'s ``site`` (nothing where the side is missing or has no such norm)."""
        self.side = side
        self.site = None if side is None or site is None else side.batch.get(site)
        for item in (self.heatmap, self.mean_plot, self.spread_plot):
            item.setVisible(self.site is not None)
        if self.site is None:
            self.labels.show([], None)
            return
        self._draw_batch()
        self._draw_batch_norm() if side.batch.norm == "batch" else self._draw_layer_norm()

    def heading(self) -> str:
        """``BatchNorm · zh-en-small-batchnorm (open)``: the side's norm and bundle."""
        s = self.side
        if s is None:
            return ""
        return f"{NORM_NAMES.get(s.batch.norm, s.batch.norm)} · {s.name}" + (translate("norm_batch", " (open)") if s.opened else "")

    def _draw_batch(self) -> None:
        site, batch, feature = self.site, self.side.batch, self.view.feature()
        if batch.norm == "batch":
            values, what = site.x[..., feature].astype(np.float64), translate("norm_batch", "feature {feature} of its input").format(feature=feature)
        else:
            values, what = site.x.std(-1).astype(np.float64), translate("norm_batch", "σ of each token's features")
        shown = np.where(site.valid, values, -np.inf)
        m = float(np.abs(values[site.valid]).max()) if site.valid.any() else 1.0
        rows = [str(i + 1) for i in range(len(site.valid))]  # its tokens and PAD: in the cells and the hover
        levels = (-(m or 1.0), m or 1.0) if batch.norm == "batch" else (0.0, m or 1.0)
        self.heatmap.set_matrix(shown, rows, [str(j + 1) for j in range(site.x.shape[1])], levels=levels)
        self.heatmap.colorbar.axis.setLabel(translate("norm_batch", "feature {feature}").format(feature=feature) if batch.norm == "batch" else "σ")
        pieces = batch.pieces(site.stack)
        self.labels.show([[display_piece(p) for p in row] for row in pieces], np.where(site.valid, values, np.nan))
        self.heatmap.set_panel_title(translate("norm_batch", "{side} · colour: {what}").format(side=self.heading(), what=what),
                                     color=self.view.theme.foreground, size="9pt")

    def feature_window(self) -> range:
        """The features the per-feature plots draw: the block of ``FEATURE_WINDOW`` holding the chosen one."""
        start = (self.view.feature() // FEATURE_WINDOW) * FEATURE_WINDOW
        return range(start, min(start + FEATURE_WINDOW, self.site.x.shape[-1]))

    def _draw_batch_norm(self) -> None:
        window, theme = self.feature_window(), self.view.theme
        j = np.array(window)
        shown = []
        for i, s in enumerate(bn_series(self.site)):
            self.mean_lines[i].setData(j + 0.0, s[0][j]) if s is not None else self.mean_lines[i].setData([], [])
            self.spread_lines[i].setData(j + 0.0, s[1][j]) if s is not None else self.spread_lines[i].setData([], [])
            if s is not None:
                shown.append((i, translate("norm_batch", BN_SERIES[i])))
        legend_title(self.mean_plot, "μ_j", shown, theme)
        legend_title(self.spread_plot, translate("norm_batch", "σ²_j per feature j"), [], theme)
        for p in (self.mean_plot, self.spread_plot):
            p.setLabel("bottom", translate("norm_batch", "feature j ({first}–{last} of 0–{end})").format(
                first=window.start, last=window.stop - 1, end=self.site.x.shape[-1] - 1))
            p.getAxis("bottom").setTicks(None)  # a numeric axis again (the LayerNorm side set token numbers)
            p.enableAutoRange()

    def _draw_layer_norm(self) -> None:
        ser = ln_series(self.site)
        t = np.arange(1, len(ser[0][0]) + 1, dtype=float)
        for i, (mean, std) in enumerate(ser):
            self.mean_lines[i].setData(t, mean)
            self.spread_lines[i].setData(t, std)
        legend_title(self.mean_plot, "μ", [(i, translate("norm_batch", name)) for i, name in enumerate(LN_SERIES)], self.view.theme)
        legend_title(self.spread_plot, translate("norm_batch", "σ per token of sentence 1"), [], self.view.theme)
        for p in (self.mean_plot, self.spread_plot):
            p.setLabel("bottom", translate("norm_batch", "token of sentence 1"))
            p.getAxis("bottom").setTicks([[(v, f"{v:.0f}") for v in t]])  # tokens are counted: no 1.5
            p.enableAutoRange()

    def apply_theme(self) -> None:
        self.heatmap.apply_theme(self.view.theme)
        for p in (self.mean_plot, self.spread_plot):
            apply_plot_theme(p, self.view.theme)

    def _on_hovered(self, info: HoverInfo | None) -> None:
        site = self.site
        if info is None or site is None:
            self.view.readout.setText(" ")
            return
        piece = self.side.batch.pieces(site.stack)[info.row][info.col]
        if not site.valid[info.row, info.col]:
            what = translate("norm_batch", "PAD: left out of the statistics")
        elif self.side.batch.norm == "batch":
            feature = self.view.feature()
            what = translate("norm_batch", "feature {feature} = {value:.4f}").format(feature=feature, value=site.x[info.row, info.col, feature])
        else:
            what = translate("norm_batch", "σ over its features = {value:.4f}").format(value=site.x[info.row, info.col].std())
        real = int(site.valid[info.row].sum())
        self.view.readout.setText(translate(
            "norm_batch", "{side} · sentence {sentence} ({tokens} tokens + {pad} PAD), position {position}, “{piece}”: {what}").format(
            side=self.heading(), sentence=info.row + 1, tokens=real, pad=site.valid.shape[1] - real, position=info.col + 1,
            piece=display_piece(piece), what=what))


class QtNormBatchView(FigureViewBase):
    """``set_data(NormBatchFrame)``; ``select(stack, layer)`` picks the stack and layer whose norms
    the combo offers; ``measured(AccuracyGap)`` after a measurement; ``optionsChanged`` when the
    other bundle's folder changes (computed again)."""

    given: NormBatchFrame | None  # the data set_data was given (FigureViewBase)

    measured = QtCore.Signal(object)  # AccuracyGap
    progressed = QtCore.Signal(int, int)  # done, total (emitted from the worker thread)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)  # below it the figure scrolls (a short dock)
        self._scroll_canvas()
        self._model: object = None  # the model of the frame drawn last: _gap is of it
        self._site: str | None = None
        self._stack, self._layer = "encoder", 0
        self._feature = 0
        self._gap: AccuracyGap | None = None
        self._worker: FunctionWorker | None = None
        self._build_controls()
        self._build_other_row()
        self.columns = [NormColumn(self, 0), NormColumn(self, 1)]  # left: the LayerNorm side
        ci = self.canvas.ci
        for row, stretch in ((1, 3), (2, 2), (3, 2)):
            ci.layout.setRowStretchFactor(row, stretch)
        self.progressed.connect(self._on_progress)
        self._apply_theme()
        self._refresh()

    def _build_controls(self) -> None:
        self.site_combo = self._add_control(translate("norm_batch", "Norm"), make_combo(
            "normBatchSiteCombo", translate("norm_batch", "Which normalization's input the batch shows")))
        self.batch_norm_controls = QtWidgets.QWidget(objectName="normBatchBnControls")  # shown where a side is a BatchNorm model
        row = QtWidgets.QHBoxLayout(self.batch_norm_controls)
        row.setContentsMargins(0, 0, 0, 0)
        self.feature_spin = QtWidgets.QSpinBox(objectName="normBatchFeatureSpin", minimum=0, maximum=0)
        self.feature_spin.setToolTip(translate("norm_batch", "The feature (column of d_model, counted from 0 as in every view) "
                                                             "the BatchNorm side's heatmap shows"))
        self.pairs_spin = QtWidgets.QSpinBox(objectName="normBatchPairsSpin", minimum=10, maximum=5000, singleStep=50)
        self.pairs_spin.setValue(ACCURACY_PAIRS)
        self.pairs_spin.setToolTip(translate("norm_batch", "How many training pairs the accuracy is measured on"))
        self.measure_button = QtWidgets.QPushButton(translate("norm_batch", MEASURE), objectName="normBatchMeasureButton")
        self.measure_button.setToolTip(translate("norm_batch", "The BatchNorm model's teacher-forced token accuracy on training pairs "
                                                               "with batch vs running statistics (runs in the background)"))
        self.measure_button.setMinimumWidth(self.measure_button.sizeHint().width() + 8)  # "Measuring…" is shorter
        self.progress = QtWidgets.QProgressBar(objectName="normBatchProgress", minimum=0, maximum=1)
        self.progress.setMaximumWidth(140)
        self.progress.setVisible(False)
        for label, widget in ((translate("norm_batch", "Feature"), self.feature_spin), (translate("norm_batch", "Pairs"), self.pairs_spin),
                              ("", self.measure_button), ("", self.progress)):
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

    def _build_other_row(self) -> None:
        """The row under the controls: the bundle beside the open one, and why it cannot be shown."""
        self.other_edit = QtWidgets.QLineEdit(objectName=OTHER_OPTION)
        self.other_edit.setPlaceholderText(translate("norm_batch", "the other bundled model"))
        self.other_edit.setToolTip(translate("norm_batch", "The bundle folder drawn beside the open model on the same sentence "
                                                           "(empty: the other of the bundled models {models}). Press Enter.").format(
            models=" / ".join(sorted(OTHER_BUNDLES.values()))))
        self.other_edit.editingFinished.connect(self.optionsChanged.emit)
        self.browse_button = QtWidgets.QToolButton(objectName="normBatchBrowseButton", text=translate("norm_batch", "Browse…"))
        self.browse_button.setToolTip(translate("norm_batch", "Choose the bundle folder drawn beside the open model"))
        self.browse_button.clicked.connect(self.choose_folder)
        self.problem_label = ElidedLabel("", "normBatchOtherProblem")  # why the other bundle is not drawn
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(6, 0, 6, 0)
        row.setSpacing(6)
        label = QtWidgets.QLabel(translate("norm_batch", "Beside it:"), buddy=self.other_edit)
        for widget, stretch in ((label, 0), (self.other_edit, 2), (self.browse_button, 0), (self.problem_label, 3)):
            row.addWidget(widget, stretch)
        self.layout().insertLayout(1, row)

    # data and selection ----------------------------------------------------------------------------
    def render(self, frame: NormBatchFrame) -> None:
        """Show ``frame``'s sides; ``frame.measure`` measures the accuracy gap of ``frame.model``
        (``None``: it cannot); another ``frame.model`` than the last drops the measured numbers."""
        if frame.model is not self._model:
            self._stop_worker()
            self._gap = None
        self._model = frame.model
        opened = frame.sides[0].batch.norm
        self.other_edit.setPlaceholderText(translate("norm_batch", "{name} (the other bundled model)").format(name=default_other_name(opened)))
        if self._site is None or frame.sides[0].batch.get(self._site) is None:
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
        if self.given is None or self.given.sides[0].batch.get(site) is None:
            raise ValueError(f"no normalization {site!r} in the batch")
        self._site = site
        self._update_controls()
        self._refresh()

    def _drawable(self, frame: NormBatchFrame) -> bool:
        """The open model has a normalization (then one is always chosen: :meth:`site`)."""
        return bool(frame.sides[0].batch.sites)

    def site(self) -> NormSiteBatch | None:
        """The open model's chosen normalization."""
        return None if self.given is None or self._site is None else self.given.sides[0].batch.get(self._site)

    def column(self, norm: str) -> NormColumn | None:
        """The column drawing the side whose model normalizes with ``norm`` ("layer" or "batch")."""
        return next((c for c in self.columns if c.side is not None and c.side.batch.norm == norm), None)

    def feature(self) -> int:
        """The BatchNorm side's chosen feature (0-based)."""
        return self._feature

    def gap(self) -> AccuracyGap | None:
        return self._gap

    def problem(self) -> str:
        """Why no bundle is beside the open one ("" when one is)."""
        return self.given.problem if self.given is not None else ""

    def _sites_of_layer(self) -> list[str]:
        if self.given is None:
            return []
        sites = self.given.sides[0].batch.sites
        prefix = f"{self._stack}.layers.{self._layer}."
        return [s.site for s in sites if s.site.startswith(prefix)] + [s.site for s in sites if s.site == f"{self._stack}.final_norm"]

    def _default_site(self) -> str | None:
        sites = self.given.sides[0].batch.sites if self.given is not None else ()
        names = self._sites_of_layer() or [s.site for s in sites[:1]]
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
        self._feature = self.feature_spin.value()
        self.feature_spin.blockSignals(blocked)
        batch_norm = self.given is not None and any(s.batch.norm == "batch" for s in self.given.sides)
        self.batch_norm_controls.setVisible(batch_norm)  # no BatchNorm side: no feature to pick, nothing to measure
        running = self._worker is not None
        measure = self.given.measure if self.given is not None else None
        self.measure_button.setEnabled(measure is not None and not running)
        self.measure_button.setText(translate("norm_batch", MEASURING if running else MEASURE))
        problem = self.problem()
        self.problem_label.set_full_text(translate("norm_batch", "nothing beside it: {reason}").format(reason=problem) if problem else "")
        if not batch_norm:
            self.result_label.set_full_text(" ")
        elif self._gap is not None:
            g = self._gap
            self.result_label.set_full_text(translate(
                "norm_batch", "accuracy ({pairs} pairs): batch statistics {batch:.1%} · running {running:.1%} · batch size 1 {single:.1%}").format(
                pairs=g.pairs, batch=g.batch, running=g.running, single=g.single))
        elif not running:
            self.result_label.set_full_text(" " if measure is not None else translate("norm_batch", "the BatchNorm model's training data is unknown"))

    def gap_text(self) -> str:
        g = self._gap
        if g is None:
            return ""
        return translate("norm_batch", "BatchNorm's token accuracy on {pairs} training pairs: {batch:.1%} with batch statistics, "
                                       "{running:.1%} with running ones, {single:.1%} at batch size 1").format(
            pairs=g.pairs, batch=g.batch, running=g.running, single=g.single)

    def _refresh(self) -> None:
        sides = ordered_sides(self.given.sides) if self.given is not None else []
        for i, column in enumerate(self.columns):
            column.show(sides[i] if i < len(sides) else None, self._site)
        if self.site() is None:
            self.title.set_title(translate("norm_batch", "LayerNorm vs BatchNorm on the same sentence"),
                                 translate("norm_batch", "decode a sentence to see its batch"))
            self.title.set_legend(())
            return
        self.title.set_title(self.figure_title(), translate(
            "norm_batch", "LN normalizes each token over its features (one μ, σ per token: per cell) · "
                          "BN normalizes each feature over the batch's tokens (one μ_j, σ²_j per feature: over every real cell)"))
        self.title.set_legend(tuple(("", "", line) for line in self.notes()))

    def notes(self) -> list[str]:
        """The caption's lines under the formulas: where BatchNorm's batch statistics come from and
        this site's numbers, what LayerNorm's do not depend on, and the measured accuracy."""
        out = [translate("norm_batch", "{side}: no {site} in this model").format(side=c.heading(), site=site_label(self._site))
               for c in self.columns if c.side is not None and c.site is None]
        bn = self.column("batch")
        if bn is not None and bn.site is not None:
            out.append(self._batch_norm_note(bn))
        if self.column("layer") is not None:
            out.append(translate("norm_batch", "LN: sentence 1 alone gives the numbers it has in the batch"))
        if self._gap is not None:
            out.append(self.gap_text())
        return out

    def _batch_norm_note(self, bn: NormColumn) -> str:
        site = bn.site
        sv, sp = site.without_pad(), site.with_pad()
        where = (translate("norm_batch", "from a training-mode pass: every BatchNorm before this one used its batch's statistics too "
                                         "(dropout off, running statistics untouched)") if bn.side.batch.batch_statistics
                 else translate("norm_batch", "from an evaluation pass (the BatchNorms before this one used their running statistics)"))
        text = translate("norm_batch", "BN: μ_j, σ²_j over {tokens} tokens (+ {pad} PAD left out) {where}; counting PAD would move μ_j by {shift:.3f}").format(
            tokens=sv.n, pad=sp.n - sv.n, where=where, shift=np.mean(np.abs(sv.mean - sp.mean)))
        if site.running is not None:
            text += translate("norm_batch", "; mean |μ_batch − μ_running| = {shift:.3f}").format(shift=np.mean(np.abs(sv.mean - site.running.mean)))
        return text

    def _apply_theme(self) -> None:
        for column in self.columns:
            column.apply_theme()

    def _on_theme_changed(self) -> None:
        self._apply_theme()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        for column in self.columns:
            column.heatmap.set_colormap(self.colormap())
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

    def choose_folder(self) -> None:
        """Ask for the bundle folder drawn beside the open model; a chosen one is drawn at once."""
        current = self.other_edit.text().strip()
        start = str(Path(current).parent if current else models_dir())
        path = QtWidgets.QFileDialog.getExistingDirectory(self, translate("norm_batch", "Choose a bundle to draw beside the open model"), start)
        if path:
            self.other_edit.setText(path)
            self.optionsChanged.emit()

    # measuring ------------------------------------------------------------------------------------------
    def start_measuring(self) -> FunctionWorker | None:
        """Measure the accuracy gap in a worker (``measured`` follows); ``None`` when it cannot."""
        from attnviz.qt.workers import FunctionWorker, while_alive

        measure = self.given.measure if self.given is not None else None
        if measure is None or self._worker is not None:
            return None
        n = self.pairs_spin.value()
        worker = FunctionWorker(measure, n, self.progressed.emit, lambda: worker.abort_requested)
        worker.returned.connect(self._on_measured)
        worker.errored.connect(self._on_measure_failed)
        worker.finished.connect(while_alive(self, lambda: self._on_worker_finished(worker)))
        self._worker = worker
        self.progress.setVisible(True)
        self.progress.setValue(0)
        self.result_label.set_full_text(translate("norm_batch", "measuring on {n} training pairs…").format(n=n))
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
        self.result_label.set_full_text(translate("norm_batch", "could not measure: {error}").format(error=" ".join(str(exc).split())[:200]))

    def _on_worker_finished(self, worker: FunctionWorker) -> None:
        if worker is self._worker:
            self._worker = None
            self.progress.setVisible(False)
            self._update_controls()

    # figure protocol ------------------------------------------------------------------------------------
    def figure_title(self) -> str:
        site = self.site()
        title = translate("norm_batch", "LayerNorm vs BatchNorm on the same sentence")
        return f"{title} · {site_label(site.site)}" if site else title

    def figure_data(self) -> FigureData:
        """The open model's side as values (per token for LayerNorm, per feature for BatchNorm); the
        other side's, its input and its PAD mask as ``other_…`` extras (NPZ)."""
        site = self.site()
        if site is None:
            raise ValueError("the view shows no data yet")
        opened = self.given.sides[0]
        values = side_arrays(opened, site)
        if opened.batch.norm == "batch":
            dims, coords = ("feature",), {}
        else:
            dims, coords = ("token",), {"token": opened.batch.pieces(site.stack)[0][: int(site.valid[0].sum())]}
        extras = {"x": site.x, "valid": site.valid.astype(np.float32)}
        other = next((c for c in self.columns if c.side is not None and not c.side.opened and c.site is not None), None)
        if other is not None:
            extras.update({f"other_{k}": v for k, v in side_arrays(other.side, other.site).items()})
            extras.update({"other_x": other.site.x, "other_valid": other.site.valid.astype(np.float32)})
        if self._gap is not None:
            extras["token_accuracy_batch_running_single"] = np.array([self._gap.batch, self._gap.running, self._gap.single])
        return FigureData(self.figure_title(), dims, values, coords, extras)

    def transient_items(self):
        return [c.heatmap.hover_marker for c in self.columns]


# -- the registry's entry ----------------------------------------------------------------------
def norm_batch_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | None:
    """The frame's sentence in a batch with a few examples, through the open model and the bundle
    in the view's option (empty: the other bundled model) in a worker (each model's builder keeps
    what a new step of the same source can reuse; nothing runs while the inputs stay the same)."""
    bundle, frozen = session.bundle, session.frames.frozen()
    if bundle is None or frozen is None:
        return None
    builder = session.frames.derive("norm-batch", scope="model", build=lambda: norm_batch_builder(bundle))
    other = session.frames.derive("norm-batch-other", scope="model", build=lambda: OtherBundle(bundle))
    typed = str(options.get(OTHER_OPTION) or "").strip()
    path = str(Path(typed).expanduser()) if typed and "\x00" not in typed else typed or str(default_other(bundle.config))
    return Analysis(norm_pair_frame, (builder, other, frozen.source.text, tuple(frozen.src_ids), tuple(frozen.input_ids),
                                      path, folder_key(path)))


SPEC = ViewSpec("norm-batch", QtNormBatchView, QT_TRANSLATE_NOOP("views", "LN vs BN side by side"), "bottom", ("kind", "layer"), data=norm_batch_data,
                reads_options=True, kinds=("encoder", "decoder"), stack_view=True, needs=("decoder",),
                empty="no normalization to show: the model has no encoder layers, no decoder layers and no final norm")
