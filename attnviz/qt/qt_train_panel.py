"""The Train panel: train a model bundle inside the app and watch it learn.

Choose the data (HSK zh→en, a synthetic task, a TSV file), the model size, LayerNorm or
BatchNorm, the number of epochs; start, pause, resume, stop. The ``Trainer``
(``attnviz.core.training``) runs in a worker thread (``workers.FunctionWorker``, in a pool of
the panel's own) and reports through its plain callbacks; they only append to a queue, which
the panel drains ten times a second on the GUI thread, so a fast training loop never floods the
event loop.

Keeping the window responsive while a CPU-bound Python thread trains (``bench/bench_ui.py``
measures it): the curves are redrawn at most once a second and their axes keep their ranges
until the data leave them (an unchanged axis repaints from its cache); the training thread runs
at a lower OS priority, so the GUI thread gets a CPU first when it needs the GIL back; and the
app's long-lived objects are frozen out of the garbage collector's full passes.

Live: loss / token accuracy / BLEU / chrF curves, the learning rate, tokens per second, a
progress bar with ETA, the probe sentence's cross-attention as the model learns (a slider
scrubs through the snapshots of the run) and the normalization statistics over training.
Errors (a NaN loss, a full disk) are shown in the panel; the output folder keeps the last
good checkpoint (the trainer writes it atomically). When the run has finished, "Open in
attnviz" emits ``bundleReady(path)``.

Widgets here never import torch: the worker's function imports the core inside the worker.
"""

from __future__ import annotations

import collections
import gc
import math
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from .colormaps import Theme, ui_font
from .heatmap import HeatmapPlot, TitleItem
from .view_base import FigureViewBase
from .view_data import FigureData
from .workers import FunctionWorker

#: Model sizes offered in the panel (TransformerConfig fields).
MODEL_SIZES: dict[str, tuple[str, dict[str, Any]]] = {
    "tiny": ("Tiny · d_model 32, 2 heads, 1+1 layers", dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64)),
    "small": ("Small · d_model 64, 4 heads, 2+2 layers", dict(d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=256)),
    "base": ("Base · d_model 128, 4 heads, 3+3 layers", dict(d_model=128, n_heads=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=512)),
    "large": ("Large · d_model 256, 8 heads, 3+3 layers", dict(d_model=256, n_heads=8, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024)),
}
DATA_CHOICES: dict[str, str] = {
    "hsk-zh-en": "HSK zh→en (4,354 sentence pairs)  汉英句子",
    "copy": "Synthetic · copy digits",
    "reverse": "Synthetic · reverse digits",
    "sort": "Synthetic · sort digits",
    "tsv": "TSV file (source<TAB>target)…",
}
STATE_TEXT = {
    "idle": "Ready", "preparing": "Preparing data and tokenizers…", "running": "Training", "paused": "Paused",
    "stopping": "Stopping: saving a checkpoint…", "finished": "Finished", "stopped": "Stopped", "failed": "Failed",
}
ACTIVE_STATES = ("preparing", "running", "paused", "stopping")


@dataclass
class TrainRequest:
    """Everything one run needs; built from the form (``TrainPanel.request()``) or by hand."""

    data: str = "reverse"  # "hsk-zh-en", "copy", "reverse", "sort" or "tsv"
    tsv_path: str = ""  # for data == "tsv"
    n_examples: int = 2000  # synthetic tasks: how many pairs
    size: str = "small"  # a key of MODEL_SIZES
    norm: str = "layer"  # "layer" | "batch"
    placement: str = "pre"  # "pre" | "post"
    epochs: int = 10
    lr: float = 1e-3
    warmup: int = 400
    batch_tokens: int = 500
    dropout: float = 0.1
    threads: int = 1
    out_dir: str = ""
    seed: int = 0
    max_len: int = 64
    extra_options: dict[str, Any] = field(default_factory=dict)  # further TrainOptions fields

    @property
    def synthetic(self) -> bool:
        return self.data in ("copy", "reverse", "sort")

    def describe(self) -> str:
        norm = "LayerNorm" if self.norm == "layer" else "BatchNorm"
        return f"{self.data} · {self.size} · {norm} ({self.placement}-norm) · {self.epochs} epochs"


# ---------------------------------------------------------------------------------------------
# The part that runs in the worker thread (imports the core there)
# ---------------------------------------------------------------------------------------------
def summarize_norm_stats(norm_stats: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, float]]:
    """One number per statistic and norm site, for curves over training.

    LayerNorm sites (``mean``/``var`` per probe token): ``token_std`` (mean of √var: how large the
    activations entering the norm are) and ``token_abs_mean`` (mean |mean|). BatchNorm sites:
    ``running_std`` and ``batch_std`` (means over the features of √running_var and √batch_var)
    and ``running_mean_abs``/``batch_mean_abs``."""
    out: dict[str, dict[str, float]] = {}
    for site, fields in norm_stats.items():
        s: dict[str, float] = {}
        if "var" in fields:
            s["token_std"] = float(np.mean(np.sqrt(np.maximum(fields["var"], 0.0)))) if fields["var"].size else math.nan
            s["token_abs_mean"] = float(np.mean(np.abs(fields["mean"]))) if "mean" in fields and fields["mean"].size else math.nan
        for kind in ("running", "batch"):
            if f"{kind}_var" in fields:
                s[f"{kind}_std"] = float(np.mean(np.sqrt(np.maximum(fields[f"{kind}_var"], 0.0))))
            if f"{kind}_mean" in fields:
                s[f"{kind}_mean_abs"] = float(np.mean(np.abs(fields[f"{kind}_mean"])))
        out[site] = s
    return out


TRAINING_NICENESS = 10  # how much lower than the GUI thread the training thread is scheduled


def _lower_thread_priority() -> None:
    """Schedule the calling (training) thread after the GUI thread when the CPUs are busy.

    The GUI thread needs the GIL back from the training thread many times per redraw; each
    hand-over waits for the training thread to be given a CPU. At a lower priority it yields the
    CPU to the GUI thread first. Linux schedules threads by their own nice value; elsewhere
    this does nothing. (The panel runs training in a pool of its own, so no other work inherits it.)
    """
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), TRAINING_NICENESS))
    except (AttributeError, OSError):
        pass


def _load_dataset(req: TrainRequest):
    from attnviz.core import data as D

    if req.data == "hsk-zh-en":
        return D.load_hsk()
    if req.synthetic:
        return D.synthetic(req.data, n=int(req.n_examples), seed=int(req.seed))
    if req.data == "tsv":
        if not req.tsv_path:
            raise D.DataError("choose a TSV file of source<TAB>target lines")
        return D.load_tsv(req.tsv_path)
    raise D.DataError(f"unknown data choice {req.data!r}")


class _Run:
    """State shared between the GUI thread and the worker thread of one run."""

    def __init__(self, request: TrainRequest, callbacks: list[tuple[str, Any]]):
        self.request = request
        self.events: collections.deque = collections.deque()  # (event name, payload); deque appends are thread-safe
        self.trainer: Any = None
        self.stop_requested = False
        self.pause_requested = False
        self.callbacks = list(callbacks)

    def post(self, name: str, payload: Any) -> None:
        self.events.append((name, payload))

    def work(self) -> Any:
        """Build the data, tokenizers and model, then ``Trainer.fit()`` (runs in the worker)."""
        from attnviz.core import training as T
        from attnviz.core.config import TransformerConfig

        req = self.request
        _lower_thread_priority()
        self.post("prepare", f"loading {req.data} data")
        dataset = _load_dataset(req)
        if self.stop_requested:
            return None
        size = dict(MODEL_SIZES[req.size][1])
        cfg = TransformerConfig(src_vocab_size=8, tgt_vocab_size=8, dropout=req.dropout, max_len=req.max_len, norm=req.norm,
                                norm_placement=req.placement, **size)
        opts = dict(epochs=req.epochs, lr=req.lr, warmup=req.warmup, batch_tokens=req.batch_tokens, seed=req.seed, threads=req.threads)
        opts.update(req.extra_options)
        options = T.TrainOptions(**opts)
        vocab = (64, 64) if req.synthetic else (3000, 2000)
        kind = "word" if req.synthetic else "unigram"
        self.post("prepare", "training the tokenizers")
        # (dataset, config, options, out_dir, src_vocab, tgt_vocab, src tokenizer type, tgt tokenizer type, command)
        trainer = T.Trainer.create(dataset, cfg, options, req.out_dir or None, vocab[0], vocab[1], kind, kind,
                                   f"attnviz (Train panel): {req.describe()}")
        for event in T.EVENTS:
            trainer.add_callback(event, lambda payload, e=event: self._on_event(e, payload))
        for event, fn in self.callbacks:
            trainer.add_callback(event, fn)
        self.trainer = trainer
        if self.pause_requested:
            trainer.pause()
        if self.stop_requested:
            trainer.stop()
        return trainer.fit()

    def _on_event(self, name: str, payload: Any) -> None:
        """Trainer thread: keep it cheap; summarize big arrays here, off the GUI thread."""
        if name == "eval":
            self.post("eval", (payload, summarize_norm_stats(payload.norm_stats)))
        else:
            self.post(name, payload)


# ---------------------------------------------------------------------------------------------
# The figure: curves, probe attention, norm statistics
# ---------------------------------------------------------------------------------------------
def _pen(color: str | QtGui.QColor, width: float = 1.6, style: QtCore.Qt.PenStyle = QtCore.Qt.PenStyle.SolidLine) -> QtGui.QPen:
    pen = pg.mkPen(color, width=width, style=style)
    pen.setCosmetic(True)
    return pen


class TrainingFigure(FigureViewBase):
    """The Train panel's plots (one canvas, exportable like every view)."""

    snapshotChanged = QtCore.Signal(int)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self.setObjectName("trainingFigure")
        ci = self.canvas.ci
        ci.layout.setHorizontalSpacing(8)
        ci.layout.setVerticalSpacing(6)
        self.loss_plot = self._plot("Loss (nats)", "step")
        self.acc_plot = self._plot("Valid token accuracy (%)", "step")
        self.bleu_plot = self._plot("Valid BLEU / chrF", "step")
        self.lr_plot = self._plot("Learning rate", "step")
        self.norm_plot = self._plot("Norm statistics", "step")
        th = self.theme
        self.loss_plot.addLegend(offset=(-4, 4), labelTextSize="8pt", labelTextColor=th.foreground)
        self.train_curve = self.loss_plot.plot([], [], pen=_pen(th.head_color(0)), name="train (running)")
        self.valid_curve = self.loss_plot.plot([], [], pen=_pen(th.head_color(1), 2.0), symbol="o", symbolSize=6,
                                               symbolBrush=th.head_color(1), symbolPen=None, name="valid")
        self.acc_curve = self.acc_plot.plot([], [], pen=_pen(th.head_color(2), 2.0), symbol="o", symbolSize=6,
                                            symbolBrush=th.head_color(2), symbolPen=None)
        self.bleu_plot.addLegend(offset=(4, 4), labelTextSize="8pt", labelTextColor=th.foreground)  # scores rise to the right
        self.bleu_curve = self.bleu_plot.plot([], [], pen=_pen(th.head_color(3), 2.0), symbol="o", symbolSize=6,
                                              symbolBrush=th.head_color(3), symbolPen=None, name="BLEU")
        self.chrf_curve = self.bleu_plot.plot([], [], pen=_pen(th.head_color(4), 2.0), symbol="s", symbolSize=6,
                                              symbolBrush=th.head_color(4), symbolPen=None, name="chrF")
        self.lr_curve = self.lr_plot.plot([], [], pen=_pen(th.head_color(5)))
        self.norm_plot.addLegend(offset=(-4, 4), labelTextSize="8pt", labelTextColor=th.foreground)
        self.norm_a = self.norm_plot.plot([], [], pen=_pen(th.head_color(6), 2.0), symbol="o", symbolSize=5, symbolBrush=th.head_color(6),
                                          symbolPen=None, name="a")
        self.norm_b = self.norm_plot.plot([], [], pen=_pen(th.head_color(7), 2.0, QtCore.Qt.PenStyle.DashLine), symbol="t", symbolSize=6,
                                          symbolBrush=th.head_color(7), symbolPen=None, name="b")
        self.acc_plot.setYRange(0, 100)
        self.lr_plot.getAxis("left").enableAutoSIPrefix(False)
        self.probe_title = TitleItem(self.theme)
        self.probe = HeatmapPlot(self.theme, colormap=self.colormap(), colorbar_label="weight", annotate=False, aspect_locked=False,
                                 label_point_size=8.5)
        self.probe.set_axis_titles("output (rows)", "source (columns)")
        ci.addItem(self.loss_plot, row=0, col=0)
        ci.addItem(self.acc_plot, row=0, col=1)
        ci.addItem(self.bleu_plot, row=0, col=2)
        ci.addItem(self.lr_plot, row=1, col=0)
        ci.addItem(self.norm_plot, row=1, col=1)
        probe_box = ci.addLayout(row=1, col=2)
        probe_box.addItem(self.probe_title, row=0, col=0)
        probe_box.addItem(self.probe, row=1, col=0)
        probe_box.layout.setRowStretchFactor(1, 1)
        self._yranges: dict[int, tuple[float, float]] = {}
        self._probe_matrix: np.ndarray | None = None
        self._probe_labels: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self.probe_title.set_title("Probe sentence: cross-attention", "updates after every epoch")
        self._apply_theme()

    def _plot(self, title: str, xlabel: str) -> pg.PlotItem:
        p = pg.PlotItem(enableMenu=False)
        p.setMenuEnabled(False)
        p.hideButtons()
        p.setTitle(title, size="9.5pt")
        p.setLabel("bottom", xlabel)
        p.showGrid(x=True, y=True, alpha=0.15)
        p.getViewBox().setMouseEnabled(x=False, y=False)
        for name in ("left", "bottom"):
            p.getAxis(name).setStyle(tickFont=ui_font(8))
        p.setMinimumSize(220, 150)
        return p

    def _apply_theme(self) -> None:
        th = self.theme
        for p in (self.loss_plot, self.acc_plot, self.bleu_plot, self.lr_plot, self.norm_plot):
            for name in ("left", "bottom"):
                ax = p.getAxis(name)
                ax.setPen(_pen(th.muted, 1.0))
                ax.setTextPen(_pen(th.foreground, 1.0))
                if ax.label is not None:
                    ax.label.setDefaultTextColor(QtGui.QColor(th.muted))
            p.titleLabel.setText(p.titleLabel.text, color=th.foreground, size="9.5pt")
            if p.legend is not None:
                p.legend.setLabelTextColor(th.foreground)
                for _sample, label in p.legend.items:
                    label.setText(label.text, color=th.foreground)
        self.probe.apply_theme(th)
        self.probe_title.apply_theme(th)

    def _on_theme_changed(self) -> None:
        self._apply_theme()
        if self._colormap is None:
            self.probe.set_colormap(self.theme.colormap)

    def _on_colormap_changed(self) -> None:
        self.probe.set_colormap(self.colormap())

    # updates ------------------------------------------------------------------------
    def show_history(self, steps: np.ndarray, evals: list[dict[str, Any]]) -> None:
        """``steps`` ``[n, 3]``: step, loss, lr; ``evals``: one dict per evaluation (step + metrics)."""
        if len(steps):
            self.train_curve.setData(steps[:, 0], steps[:, 1])
            self.lr_curve.setData(steps[:, 0], steps[:, 2])
        else:
            self.train_curve.setData([], [])
            self.lr_curve.setData([], [])
        x = np.asarray([e["step"] for e in evals], float)

        def col(key: str, scale: float = 1.0) -> np.ndarray:
            return np.asarray([e.get(key, math.nan) * scale for e in evals], float)

        self.valid_curve.setData(x, col("valid_loss"))
        self.acc_curve.setData(x, col("valid_token_accuracy", 100.0))
        has_bleu = bool(evals) and "valid_bleu" in evals[-1]
        self.bleu_curve.setData(x if has_bleu else [], col("valid_bleu") if has_bleu else [])
        self.chrf_curve.setData(x if has_bleu else [], col("valid_chrf") if has_bleu else [])
        self._fit_y(self.loss_plot, steps[:, 1] if len(steps) else [], col("valid_loss"))
        self._fit_y(self.lr_plot, steps[:, 2] if len(steps) else [], floor=0.0)
        if has_bleu:
            self._fit_y(self.bleu_plot, col("valid_bleu"), col("valid_chrf"), floor=0.0)

    def _fit_y(self, plot: pg.PlotItem, *arrays: Any, floor: float | None = None) -> None:
        """Set a plot's y range only when the data leave it or fill under 40% of it. An unchanged
        range keeps the axis's cached drawing: a redraw then only repaints the curves."""
        vals = np.concatenate([np.asarray(a, float).ravel() for a in arrays]) if arrays else np.zeros(0)
        vals = vals[np.isfinite(vals)]
        if not vals.size:
            return
        lo, hi = float(vals.min()), float(vals.max())
        cur = self._yranges.get(id(plot))
        if cur is not None and cur[0] <= lo and hi <= cur[1] and (hi - lo) >= 0.4 * (cur[1] - cur[0]):
            return
        pad = 0.12 * ((hi - lo) or abs(hi) or 1.0)
        new = (lo - pad if floor is None else max(floor, lo - pad), hi + pad)
        plot.enableAutoRange(axis="y", enable=False)
        plot.setYRange(*new, padding=0)
        self._yranges[id(plot)] = new

    def set_step_range(self, total_steps: int) -> None:
        """Fix the step axes to the whole run: adding points then never moves an axis (no tick relayout)."""
        for p in (self.loss_plot, self.acc_plot, self.bleu_plot, self.lr_plot, self.norm_plot):
            p.enableAutoRange(axis="x", enable=False)
            p.setXRange(0, max(1, total_steps), padding=0.02)

    def show_norm_curves(self, steps: np.ndarray, a: np.ndarray, b: np.ndarray, names: tuple[str, str], title: str) -> None:
        self.norm_a.setData(steps, a)
        self.norm_b.setData(steps, b)
        legend = self.norm_plot.legend
        if legend is not None:
            for sample, label in legend.items:
                item = sample.item
                if item is self.norm_a:
                    label.setText(names[0])
                elif item is self.norm_b:
                    label.setText(names[1])
        self.norm_plot.setTitle(title, size="9.5pt", color=self.theme.foreground)

    def show_probe(self, matrix: np.ndarray | None, rows: tuple[str, ...], cols: tuple[str, ...], title: str, formula: str) -> None:
        self.probe_title.set_title(title, formula)
        if matrix is None or not matrix.size:
            return
        self._probe_matrix = np.asarray(matrix)
        self._probe_labels = (rows, cols)
        self.probe.set_matrix(matrix, rows, cols, levels=(0.0, 1.0))

    def clear(self) -> None:
        self._yranges.clear()
        for p in (self.loss_plot, self.acc_plot, self.bleu_plot, self.lr_plot, self.norm_plot):
            p.enableAutoRange(axis="x", enable=True)
            if p is not self.acc_plot:
                p.enableAutoRange(axis="y", enable=True)
        self.show_history(np.zeros((0, 3)), [])
        self.norm_a.setData([], [])
        self.norm_b.setData([], [])
        self._probe_matrix = None
        self.probe_title.set_title("Probe sentence: cross-attention", "updates after every epoch")

    # figure protocol ---------------------------------------------------------------------
    def figure_title(self) -> str:
        return "Training curves"

    def has_data(self) -> bool:
        x, _ = self.train_curve.getData()
        return x is not None and len(x) > 0

    def figure_data(self) -> FigureData:
        x, loss = self.train_curve.getData()
        _, lr = self.lr_curve.getData()
        if x is None or not len(x):
            raise ValueError("no training steps yet")
        extras: dict[str, np.ndarray] = {}
        vx, vl = self.valid_curve.getData()
        if vx is not None and len(vx):
            extras["eval_step"] = np.asarray(vx)
            extras["valid_loss"] = np.asarray(vl)
            extras["valid_token_accuracy_percent"] = np.asarray(self.acc_curve.getData()[1])
            bx, bleu = self.bleu_curve.getData()
            if bx is not None and len(bx):
                extras["valid_bleu"] = np.asarray(bleu)
                extras["valid_chrf"] = np.asarray(self.chrf_curve.getData()[1])
        if self._probe_matrix is not None:
            extras["probe_cross_attention"] = self._probe_matrix
        return FigureData(self.figure_title(), ("log_step",), {"step": np.asarray(x), "train_loss": np.asarray(loss), "lr": np.asarray(lr)},
                          {}, extras)


# ---------------------------------------------------------------------------------------------
# The panel
# ---------------------------------------------------------------------------------------------
def _fmt_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "–"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _site_label(site: str) -> str:
    """``decoder.layers.1.norm2`` → ``decoder layer 2 · norm2``."""
    parts = site.split(".")
    if len(parts) == 4 and parts[1] == "layers" and parts[2].isdigit():
        return f"{parts[0]} layer {int(parts[2]) + 1} · {parts[3]}"
    return site.replace(".", " · ").replace("_", " ")


def default_runs_dir() -> Path:
    base = QtCore.QStandardPaths.writableLocation(QtCore.QStandardPaths.StandardLocation.AppLocalDataLocation)
    return Path(base or Path.home() / ".attnviz") / "runs"


class TrainPanel(QtWidgets.QWidget):
    """Train a model in the app (see the module docstring).

    Signals: ``stateChanged(state)`` (``idle``, ``preparing``, ``running``, ``paused``,
    ``stopping``, ``finished``, ``stopped``, ``failed``); ``trainingFinished(status, path)`` once
    per run (``path`` is the output folder, empty when nothing was written);
    ``bundleReady(path)`` when the user clicks "Open in attnviz" after a run; ``progressed(step,
    total)``; ``snapshotAdded(count)`` after each evaluation.
    """

    stateChanged = QtCore.Signal(str)
    trainingFinished = QtCore.Signal(str, str)
    bundleReady = QtCore.Signal(str)
    progressed = QtCore.Signal(int, int)
    snapshotAdded = QtCore.Signal(int)

    DRAIN_MS = 100
    REDRAW_S = 1.0

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent)
        self.setObjectName("trainPanel")
        self._state = "idle"
        self._run: _Run | None = None
        self._worker: FunctionWorker | None = None
        self._callbacks: list[tuple[str, Any]] = []
        self._result_path = ""
        self._reset_history()

        self.figure = TrainingFigure(theme=theme)
        self._build_form()
        self._build_status()

        right = QtWidgets.QVBoxLayout()
        right.setContentsMargins(0, 0, 0, 0)
        right.setSpacing(4)
        right.addLayout(self.status_row)
        right.addWidget(self.error_banner)
        right.addWidget(self.figure, 1)
        right.addLayout(self.scrub_row)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.form_box)
        layout.addLayout(right, 1)

        self._pool = QtCore.QThreadPool(self)  # training's own thread: its lowered priority stays with it
        self._pool.setMaxThreadCount(1)
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(self.DRAIN_MS)
        self._timer.timeout.connect(self._drain)
        self._update_form()
        self._set_state("idle")

    # -- construction -----------------------------------------------------------------------
    def _build_form(self) -> None:
        box = QtWidgets.QGroupBox("Training run  训练")
        box.setObjectName("trainForm")
        box.setMinimumWidth(300)
        box.setMaximumWidth(380)
        form = QtWidgets.QFormLayout(box)
        form.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)

        self.data_combo = QtWidgets.QComboBox(objectName="trainDataCombo")
        for key, text in DATA_CHOICES.items():
            self.data_combo.addItem(text, key)
        self.data_combo.setCurrentIndex(self.data_combo.findData("hsk-zh-en"))
        self.data_combo.setToolTip("What to learn: HSK Chinese→English sentences, a synthetic task whose right attention is known, or your own pairs")
        form.addRow("Data", self.data_combo)
        self.tsv_edit = QtWidgets.QLineEdit(objectName="trainTsvEdit")
        self.tsv_edit.setPlaceholderText("source<TAB>target file")
        tsv_btn = QtWidgets.QToolButton(text="…", objectName="trainTsvBrowse")
        tsv_btn.clicked.connect(self._browse_tsv)
        tsv_row = QtWidgets.QHBoxLayout()
        tsv_row.addWidget(self.tsv_edit, 1)
        tsv_row.addWidget(tsv_btn)
        self.tsv_label = QtWidgets.QLabel("TSV file")
        form.addRow(self.tsv_label, tsv_row)
        self._tsv_widgets = (self.tsv_label, self.tsv_edit, tsv_btn)
        self.examples_spin = QtWidgets.QSpinBox(objectName="trainExamplesSpin", minimum=20, maximum=200000, singleStep=500, value=2000)
        self.examples_spin.setToolTip("How many random strings the synthetic task has (90% train, 5% valid, 5% test)")
        self.examples_label = QtWidgets.QLabel("Pairs")
        form.addRow(self.examples_label, self.examples_spin)

        self.size_combo = QtWidgets.QComboBox(objectName="trainSizeCombo")
        for key, (text, _) in MODEL_SIZES.items():
            self.size_combo.addItem(text, key)
        self.size_combo.setCurrentIndex(self.size_combo.findData("base"))
        form.addRow("Model", self.size_combo)
        self.norm_combo = QtWidgets.QComboBox(objectName="trainNormCombo")
        self.norm_combo.addItem("LayerNorm (per token)", "layer")
        self.norm_combo.addItem("BatchNorm (per feature)", "batch")
        self.norm_combo.setToolTip("LayerNorm normalizes the features of each token; BatchNorm each feature over the batch's tokens")
        form.addRow("Norm", self.norm_combo)
        self.placement_combo = QtWidgets.QComboBox(objectName="trainPlacementCombo")
        self.placement_combo.addItem("Pre-norm: x + Sublayer(Norm(x))", "pre")
        self.placement_combo.addItem("Post-norm: Norm(x + Sublayer(x))", "post")
        self.placement_combo.setToolTip("Post-norm is the paper's; pre-norm trains more easily on small data")
        form.addRow("Placement", self.placement_combo)
        self.epochs_spin = QtWidgets.QSpinBox(objectName="trainEpochsSpin", minimum=1, maximum=1000, value=30)
        form.addRow("Epochs", self.epochs_spin)
        self.lr_spin = QtWidgets.QDoubleSpinBox(objectName="trainLrSpin", decimals=5, minimum=1e-5, maximum=1.0, singleStep=1e-4, value=1e-3)
        self.lr_spin.setToolTip("Peak learning rate, reached at the end of the warm-up")
        form.addRow("Learning rate", self.lr_spin)
        self.warmup_spin = QtWidgets.QSpinBox(objectName="trainWarmupSpin", minimum=0, maximum=100000, singleStep=50, value=400)
        form.addRow("Warm-up steps", self.warmup_spin)
        self.batch_spin = QtWidgets.QSpinBox(objectName="trainBatchSpin", minimum=50, maximum=100000, singleStep=100, value=500)
        self.batch_spin.setToolTip("Padded tokens per batch")
        form.addRow("Batch tokens", self.batch_spin)
        self.threads_spin = QtWidgets.QSpinBox(objectName="trainThreadsSpin", minimum=1, maximum=max(1, QtCore.QThread.idealThreadCount()), value=1)
        self.threads_spin.setToolTip("CPU threads for training; 1 keeps the app responsive")
        form.addRow("Threads", self.threads_spin)

        self.out_edit = QtWidgets.QLineEdit(objectName="trainOutEdit")
        self.out_edit.setToolTip("The model bundle folder the run writes (a checkpoint after every epoch)")
        out_btn = QtWidgets.QToolButton(text="…", objectName="trainOutBrowse")
        out_btn.clicked.connect(self._browse_out)
        out_row = QtWidgets.QHBoxLayout()
        out_row.addWidget(self.out_edit, 1)
        out_row.addWidget(out_btn)
        form.addRow("Output folder", out_row)

        buttons = QtWidgets.QGridLayout()
        self.start_button = QtWidgets.QPushButton("Start  开始", objectName="trainStartButton")
        self.pause_button = QtWidgets.QPushButton("Pause  暂停", objectName="trainPauseButton")
        self.stop_button = QtWidgets.QPushButton("Stop  停止", objectName="trainStopButton")
        self.open_button = QtWidgets.QPushButton("Open in attnviz  打开模型", objectName="trainOpenButton")
        self.start_button.setDefault(True)
        self.stop_button.setToolTip("Stop after the current step and save a checkpoint")
        self.open_button.setToolTip("Open the trained model bundle in the main window")
        buttons.addWidget(self.start_button, 0, 0)
        buttons.addWidget(self.pause_button, 0, 1)
        buttons.addWidget(self.stop_button, 1, 0)
        buttons.addWidget(self.open_button, 1, 1)
        form.addRow(buttons)
        self.start_button.clicked.connect(lambda: self.start(confirm=True))
        self.pause_button.clicked.connect(self._toggle_pause)
        self.stop_button.clicked.connect(self.stop)
        self.open_button.clicked.connect(self._open)

        self.log = QtWidgets.QPlainTextEdit(objectName="trainLog")
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(500)
        self.log.setFont(ui_font(8.5))
        self.log.setPlaceholderText("Messages of the run")
        form.addRow(self.log)

        self.data_combo.currentIndexChanged.connect(self._update_form)
        for w in (self.data_combo, self.size_combo, self.norm_combo, self.placement_combo):
            w.currentIndexChanged.connect(self._suggest_out_dir)
        self._out_auto = True
        self.out_edit.textEdited.connect(lambda _t: setattr(self, "_out_auto", False))
        self.form_box = box
        self._suggest_out_dir()

    def _build_status(self) -> None:
        self.status_row = QtWidgets.QHBoxLayout()
        self.state_label = QtWidgets.QLabel(objectName="trainStateLabel")
        self.state_label.setMinimumWidth(120)
        f = ui_font(9.5, bold=True)
        self.state_label.setFont(f)
        self.progress = QtWidgets.QProgressBar(objectName="trainProgress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%p%")
        self.eta_label = QtWidgets.QLabel("", objectName="trainEtaLabel")
        self.rate_label = QtWidgets.QLabel("", objectName="trainRateLabel")
        self.lr_label = QtWidgets.QLabel("", objectName="trainLrLabel")
        self.status_row.addWidget(self.state_label)
        self.status_row.addWidget(self.progress, 1)
        for w in (self.eta_label, self.rate_label, self.lr_label):
            w.setFont(ui_font(9))
            self.status_row.addWidget(w)
        self.error_banner = QtWidgets.QLabel(objectName="trainErrorBanner")
        self.error_banner.setWordWrap(True)
        self.error_banner.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_banner.setStyleSheet("QLabel { background: #fff0e6; color: #a61e00; border: 1px solid #ffc9a8; border-radius: 3px; padding: 5px; }")
        self.error_banner.setVisible(False)

        self.scrub_row = QtWidgets.QHBoxLayout()
        self.scrub_label = QtWidgets.QLabel("Snapshot", objectName="trainScrubLabel")
        self.scrub = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal, objectName="trainScrubSlider")
        self.scrub.setToolTip("Scrub through the probe sentence's cross-attention, epoch by epoch")
        self.scrub.setRange(0, 0)
        self.scrub.setEnabled(False)
        self.scrub.valueChanged.connect(self._on_scrub)
        self.probe_layer = QtWidgets.QComboBox(objectName="trainProbeLayerCombo")
        self.probe_layer.setToolTip("Which decoder layer's cross-attention (mean over heads)")
        self.probe_layer.currentIndexChanged.connect(lambda _i: self._show_snapshot(self.scrub.value()))
        self.norm_site = QtWidgets.QComboBox(objectName="trainNormSiteCombo")
        self.norm_site.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.norm_site.setToolTip("Which normalization's statistics are plotted over training")
        self.norm_site.currentIndexChanged.connect(lambda _i: self._update_norm_curves())
        self.scrub_row.addWidget(self.scrub_label)
        self.scrub_row.addWidget(self.scrub, 1)
        self.scrub_row.addWidget(QtWidgets.QLabel("Layer"))
        self.scrub_row.addWidget(self.probe_layer)
        self.scrub_row.addSpacing(12)
        self.scrub_row.addWidget(QtWidgets.QLabel("Norm"))
        self.scrub_row.addWidget(self.norm_site)

    def _reset_history(self) -> None:
        self.steps: list[tuple[int, float, float]] = []  # step, loss, lr
        self.evals: list[dict[str, Any]] = []  # step, epoch, metrics
        self.snapshots: list[dict[str, Any]] = []  # epoch, step, probes (ProbeSnapshot list)
        self.norm_history: list[tuple[int, dict[str, dict[str, float]]]] = []  # step, site -> summary
        self.total_steps = 0
        self.last_checkpoint = ""
        self.end_event: Any = None
        self.messages: list[tuple[str, str]] = []
        self._curves_dirty = False
        self._last_redraw = 0.0

    # -- form -------------------------------------------------------------------------------
    def _update_form(self) -> None:
        data = self.data_combo.currentData()
        synthetic = data in ("copy", "reverse", "sort")
        for w in self._tsv_widgets:
            w.setVisible(data == "tsv")
        self.examples_label.setVisible(synthetic)
        self.examples_spin.setVisible(synthetic)

    def _suggest_out_dir(self) -> None:
        if not self._out_auto:
            return
        name = f"{self.data_combo.currentData()}-{self.size_combo.currentData()}-{self.norm_combo.currentData()}norm"
        self.out_edit.setText(str(default_runs_dir() / name))

    def _browse_tsv(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Parallel corpus (source<TAB>target)", "", "TSV files (*.tsv *.txt);;All files (*)")
        if path:
            self.tsv_edit.setText(path)

    def _browse_out(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Output folder for the model bundle", self.out_edit.text())
        if path:
            self.out_edit.setText(path)
            self._out_auto = False

    def request(self) -> TrainRequest:
        """The run the form describes."""
        return TrainRequest(
            data=self.data_combo.currentData(), tsv_path=self.tsv_edit.text().strip(), n_examples=self.examples_spin.value(),
            size=self.size_combo.currentData(), norm=self.norm_combo.currentData(), placement=self.placement_combo.currentData(),
            epochs=self.epochs_spin.value(), lr=self.lr_spin.value(), warmup=self.warmup_spin.value(), batch_tokens=self.batch_spin.value(),
            threads=self.threads_spin.value(), out_dir=self.out_edit.text().strip(),
        )

    def set_request(self, req: TrainRequest) -> None:
        """Fill the form from ``req``."""
        self.data_combo.setCurrentIndex(self.data_combo.findData(req.data))
        self.tsv_edit.setText(req.tsv_path)
        self.examples_spin.setValue(req.n_examples)
        self.size_combo.setCurrentIndex(self.size_combo.findData(req.size))
        self.norm_combo.setCurrentIndex(self.norm_combo.findData(req.norm))
        self.placement_combo.setCurrentIndex(self.placement_combo.findData(req.placement))
        self.epochs_spin.setValue(req.epochs)
        self.lr_spin.setValue(req.lr)
        self.warmup_spin.setValue(req.warmup)
        self.batch_spin.setValue(req.batch_tokens)
        self.threads_spin.setValue(req.threads)
        if req.out_dir:
            self.out_edit.setText(req.out_dir)
            self._out_auto = False

    def add_trainer_callback(self, event: str, fn: Any) -> None:
        """Register a plain callback on every run's ``Trainer`` (called on the training thread)."""
        self._callbacks.append((event, fn))

    # -- control ------------------------------------------------------------------------------
    def state(self) -> str:
        return self._state

    def is_running(self) -> bool:
        """A run is in progress (preparing, running, paused or stopping)."""
        return self._state in ACTIVE_STATES

    @property
    def trainer(self) -> Any:
        """The current run's ``Trainer`` (None before it is built)."""
        return self._run.trainer if self._run is not None else None

    def start(self, request: TrainRequest | None = None, confirm: bool = False) -> bool:
        """Start a run (the form's, or ``request``); False if one is already running, the form is
        incomplete, or (``confirm``) the user would rather keep the bundle already in the output folder."""
        if self.is_running():
            return False
        req = request or self.request()
        if not req.out_dir:
            self._show_error("Choose an output folder for the model bundle.")
            return False
        out = Path(req.out_dir)
        if out.exists() and not out.is_dir():
            self._show_error(f"{out} is a file, not a folder.")
            return False
        if confirm and (out / "meta.json").exists():
            answer = QtWidgets.QMessageBox.question(
                self, "Replace the model?", f"{out} already holds a model bundle. Train a new one in its place?",
                QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.No,
                QtWidgets.QMessageBox.StandardButton.No)
            if answer != QtWidgets.QMessageBox.StandardButton.Yes:
                return False
        self._reset_history()
        self.figure.clear()
        self.log.clear()
        self.error_banner.setVisible(False)
        self.scrub.setEnabled(False)
        self.scrub.setRange(0, 0)
        self._result_path = ""
        self._run = _Run(req, self._callbacks)
        worker = FunctionWorker(self._run.work, inference=False, pool=self._pool)  # training needs autograd in the worker thread
        worker.returned.connect(self._on_returned)
        worker.errored.connect(self._on_errored)
        worker.finished.connect(self._on_worker_finished)
        self._worker = worker
        self._log("info", f"starting: {req.describe()} → {req.out_dir}")
        self._set_state("preparing")
        # The training loop allocates fast and triggers the collector's full passes, which hold the GIL
        # (and so the event loop) for as long as they take: ~150 ms over the app's heap. Frozen, the
        # long-lived objects (modules, widgets) are no longer traversed, and those passes stay short.
        gc.collect()
        gc.freeze()
        self._timer.start()
        worker.start()
        return True

    def pause(self) -> None:
        if self._run is None or self._state not in ("preparing", "running"):
            return
        self._run.pause_requested = True
        if self._run.trainer is not None:
            self._run.trainer.pause()

    def resume(self) -> None:
        if self._run is None or self._state not in ("paused", "preparing", "running"):
            return
        self._run.pause_requested = False
        if self._run.trainer is not None:
            self._run.trainer.resume()

    def stop(self) -> None:
        """Stop after the current step; the trainer saves a checkpoint first."""
        if self._run is None or not self.is_running():
            return
        self._run.stop_requested = True
        if self._run.trainer is not None:
            self._run.trainer.stop()
        if self._state != "preparing":
            self._set_state("stopping")

    def shutdown(self, timeout_s: float = 60.0) -> bool:
        """Stop a run and wait for its worker (for the main window's ``closeEvent``).
        True when no worker is left running."""
        if self._run is not None and self.is_running():
            self.stop()
        ok = True
        if self._worker is not None:
            ok = self._worker.wait(timeout_s)
        self._timer.stop()
        if ok:
            QtCore.QCoreApplication.sendPostedEvents()  # deliver the worker's last signals while the panel is alive
            self._drain()
        return ok

    def _toggle_pause(self) -> None:
        if self._state == "paused" or (self._run is not None and self._run.pause_requested):
            self.resume()
        else:
            self.pause()
        self._update_buttons()

    def _open(self) -> None:
        if self._result_path:
            self.bundleReady.emit(self._result_path)

    # -- worker results -------------------------------------------------------------------------
    def _on_returned(self, result: Any) -> None:
        self._drain()
        if result is None:  # stopped before the trainer existed
            self._finish("stopped", "stopped before training began", "")
            return
        path = str(result.path) if result.path is not None else ""
        if result.status == "failed":
            extra = f" The last good checkpoint is kept in {self.last_checkpoint}." if self.last_checkpoint else ""
            self._show_error(result.message + ("" if "checkpoint" in result.message else extra))
        self._finish(result.status, result.message, path if (path and Path(path).is_dir()) else "")

    def _on_errored(self, exc: BaseException) -> None:
        self._drain()
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if self.last_checkpoint:
            msg += f" — the last good checkpoint is kept in {self.last_checkpoint}"
        self._show_error(msg)
        self._finish("failed", msg, self.last_checkpoint)

    def _on_worker_finished(self) -> None:
        self._drain()

    def _finish(self, status: str, message: str, path: str) -> None:
        self._timer.stop()
        gc.unfreeze()  # what was frozen at the start can be collected again once it is garbage
        self._redraw_curves(force=True)
        self._result_path = path if status in ("finished", "stopped") else ""
        self._log("error" if status == "failed" else "info", f"{status}: {message}")
        self._set_state(status)
        self.trainingFinished.emit(status, path)

    # -- events from the trainer (GUI thread) -------------------------------------------------------
    def _drain(self) -> None:
        run = self._run
        if run is None:
            return
        changed = False
        evals_changed = False
        latest_step = None
        while run.events:
            name, payload = run.events.popleft()
            if name == "prepare":
                self._log("info", payload)
            elif name == "start":
                self.total_steps = int(payload.total_steps)
                self.progress.setRange(0, max(1, self.total_steps))
                self.figure.set_step_range(self.total_steps)
                d = payload.data
                self._log("info", f"{payload.n_parameters:,} parameters on {payload.device}; {d.get('name')}: "
                                  f"{d['sizes']['train']} train / {d['sizes']['valid']} valid pairs; {payload.epochs} epochs × {payload.steps_per_epoch} steps")
            elif name == "step":
                self.steps.append((int(payload.step), float(payload.loss), float(payload.lr)))
                latest_step = payload
                changed = True
            elif name == "eval":
                ev, norms = payload
                self.evals.append({"step": int(ev.step), "epoch": int(ev.epoch) + 1, **{k: float(v) for k, v in ev.metrics.items()}})
                self.snapshots.append({"epoch": int(ev.epoch) + 1, "step": int(ev.step), "probes": tuple(ev.probes)})
                self.norm_history.append((int(ev.step), norms))
                m = ev.metrics
                text = f"epoch {ev.epoch + 1}: train loss {m.get('train_loss', math.nan):.3f}, valid loss {m.get('valid_loss', math.nan):.3f}"
                if "valid_bleu" in m:
                    text += f", BLEU {m['valid_bleu']:.1f}, chrF {m['valid_chrf']:.1f}"
                if ev.probes:
                    text += f" | {ev.probes[0].source} → {ev.probes[0].hypothesis}"
                self._log("info", text)
                evals_changed = changed = True
            elif name == "checkpoint":
                self.last_checkpoint = str(payload.path)
                self._log("info", f"checkpoint ({payload.reason}) at step {payload.step}: {payload.path}")
            elif name == "state":
                self._set_state(payload.state)
            elif name == "message":
                self._log(payload.level, payload.text)
                if payload.level == "error":
                    self._show_error(payload.text)
            elif name == "end":
                self.end_event = payload
        if latest_step is not None:
            if self._state == "running" and run.trainer is not None:
                self.state_label.setText(f"Training · epoch {latest_step.epoch + 1}/{run.trainer.options.epochs}")
            self.progress.setValue(min(self.progress.maximum(), latest_step.step))
            self.eta_label.setText(f"ETA {_fmt_duration(latest_step.eta_s)}")
            self.rate_label.setText(f"{latest_step.tokens_per_s:,.0f} tok/s")
            self.lr_label.setText(f"lr {latest_step.lr:.2e}")
            self.progressed.emit(int(latest_step.step), int(self.total_steps))
        self._curves_dirty |= changed
        self._redraw_curves(force=evals_changed)
        if evals_changed:
            self._update_snapshot_controls()
            self._update_norm_sites()
            self._update_norm_curves()
            self.snapshotAdded.emit(len(self.snapshots))

    def _redraw_curves(self, force: bool = False) -> None:
        """Redraw the curves at most every ``REDRAW_S``: a redraw is Python painting that competes with
        the training thread for the GIL (the numbers and the progress bar stay live meanwhile)."""
        now = time.monotonic()
        if self._curves_dirty and (force or now - self._last_redraw >= self.REDRAW_S):
            self.figure.show_history(np.asarray(self.steps, float).reshape(-1, 3), self.evals)
            self._curves_dirty = False
            self._last_redraw = now

    def _update_snapshot_controls(self) -> None:
        n = len(self.snapshots)
        follow = self.scrub.value() >= self.scrub.maximum()
        blocked = self.scrub.blockSignals(True)
        self.scrub.setRange(0, max(0, n - 1))
        if follow:
            self.scrub.setValue(n - 1)
        self.scrub.blockSignals(blocked)
        self.scrub.setEnabled(n > 1)
        probes = self.snapshots[-1]["probes"] if n else ()
        layers = sorted(probes[0].cross_attention) if probes else []
        if self.probe_layer.count() != len(layers):
            blocked = self.probe_layer.blockSignals(True)
            self.probe_layer.clear()
            for i in layers:
                self.probe_layer.addItem(str(i + 1), i)
            self.probe_layer.setCurrentIndex(len(layers) - 1)
            self.probe_layer.blockSignals(blocked)
        self._show_snapshot(self.scrub.value())

    def _on_scrub(self, index: int) -> None:
        self._show_snapshot(index)

    def probe_matrix(self, index: int | None = None, layer: int | None = None) -> np.ndarray | None:
        """The probe's cross-attention (mean over heads) ``[out, src]`` of snapshot ``index``."""
        if not self.snapshots:
            return None
        index = self.scrub.value() if index is None else index
        probes = self.snapshots[index]["probes"]
        if not probes:
            return None
        att = probes[0].cross_attention
        layer = self.probe_layer.currentData() if layer is None else layer
        if layer is None or layer not in att:
            layer = max(att)
        return np.asarray(att[layer]).mean(0)

    def _show_snapshot(self, index: int) -> None:
        if not self.snapshots:
            return
        index = min(max(0, index), len(self.snapshots) - 1)
        snap = self.snapshots[index]
        probes = snap["probes"]
        self.scrub_label.setText(f"Snapshot: epoch {snap['epoch']} of {len(self.snapshots)}")
        if not probes:
            return
        p = probes[0]
        layer = self.probe_layer.currentData()
        m = self.probe_matrix(index, layer)
        self.figure.show_probe(m, tuple(p.out_pieces), tuple(p.src_pieces),
                               f"Probe · epoch {snap['epoch']} · decoder layer {(layer if layer is not None else max(p.cross_attention)) + 1}",
                               f"{p.source} → {p.hypothesis or '(nothing yet)'}")

    def _update_norm_sites(self) -> None:
        if not self.norm_history:
            return
        sites = list(self.norm_history[-1][1])
        existing = [self.norm_site.itemData(i) for i in range(self.norm_site.count())]
        if existing != sites:
            blocked = self.norm_site.blockSignals(True)
            current = self.norm_site.currentData()
            self.norm_site.clear()
            for s in sites:
                self.norm_site.addItem(_site_label(s), s)
            i = self.norm_site.findData(current)
            self.norm_site.setCurrentIndex(i if i >= 0 else 0)
            self.norm_site.blockSignals(blocked)

    def norm_curves(self, site: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, str]]:
        """(steps, a, b, names) of the plotted norm statistics of ``site`` (the chosen one)."""
        site = site or self.norm_site.currentData()
        steps = np.asarray([s for s, _ in self.norm_history], float)
        rows = [h.get(site, {}) for _, h in self.norm_history]
        if rows and "token_std" in rows[-1]:
            keys, names = ("token_std", "token_abs_mean"), ("std of a token's features", "|mean| of a token's features")
        else:
            keys, names = ("running_std", "batch_std"), ("running std (eval)", "batch std (probe tokens)")
        a = np.asarray([r.get(keys[0], math.nan) for r in rows], float)
        b = np.asarray([r.get(keys[1], math.nan) for r in rows], float)
        return steps, a, b, names

    def _update_norm_curves(self) -> None:
        site = self.norm_site.currentData()
        if not self.norm_history or site is None:
            return
        steps, a, b, names = self.norm_curves(site)
        self.figure.show_norm_curves(steps, a, b, names, f"Entering {_site_label(site)} (probe tokens)")

    # -- state and messages ---------------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        if state == "running" and self._run is not None and self._run.stop_requested:
            state = "stopping"
        changed = state != self._state
        self._state = state
        text = STATE_TEXT.get(state, state)
        if state == "running" and self._run is not None and self._run.trainer is not None:
            t = self._run.trainer
            text = f"Training · epoch {min(t.epoch + 1, t.options.epochs)}/{t.options.epochs}"
        self.state_label.setText(text)
        colors = {"failed": "#c92a2a", "finished": "#2f9e44", "paused": "#e8590c"}
        self.state_label.setStyleSheet(f"color: {colors[state]};" if state in colors else "")
        self._update_buttons()
        if changed:
            self.stateChanged.emit(state)

    def _update_buttons(self) -> None:
        active = self.is_running()
        for w in (self.data_combo, self.tsv_edit, self.examples_spin, self.size_combo, self.norm_combo, self.placement_combo,
                  self.epochs_spin, self.lr_spin, self.warmup_spin, self.batch_spin, self.threads_spin, self.out_edit):
            w.setEnabled(not active)
        self.start_button.setEnabled(not active)
        self.pause_button.setEnabled(self._state in ("running", "paused"))
        paused = self._state == "paused" or (self._run is not None and self._run.pause_requested and active)
        self.pause_button.setText("Resume  继续" if paused else "Pause  暂停")
        self.stop_button.setEnabled(active and self._state != "stopping")
        self.open_button.setEnabled(not active and bool(self._result_path))

    def _log(self, level: str, text: str) -> None:
        self.messages.append((level, text))
        stamp = time.strftime("%H:%M:%S")
        prefix = {"warning": "warning: ", "error": "error: "}.get(level, "")
        self.log.appendPlainText(f"{stamp}  {prefix}{text}")

    def _show_error(self, text: str) -> None:
        self.error_banner.setText(text)
        self.error_banner.setVisible(True)

    def error_text(self) -> str:
        return "" if self.error_banner.isHidden() else self.error_banner.text()

    def result_path(self) -> str:
        """The bundle folder of the last finished or stopped run ("" if none)."""
        return self._result_path

    # -- the figure, as the other views offer it (theme, colour map, export) --------------------------
    @property
    def theme(self) -> Theme:
        return self.figure.theme

    def set_theme(self, theme: Theme | str) -> None:
        self.figure.set_theme(theme)

    def set_colormap(self, name: str) -> None:
        self.figure.set_colormap(name)

    def figure_canvas(self) -> QtWidgets.QGraphicsView:
        return self.figure.figure_canvas()

    def figure_title(self) -> str:
        return self.figure.figure_title()

    def figure_data(self) -> FigureData:
        return self.figure.figure_data()

    def export_mode(self):
        return self.figure.export_mode()

    def has_data(self) -> bool:
        return self.figure.has_data()

    def export_figure_dialog(self) -> None:
        self.figure.export_figure_dialog()

    def export_data_dialog(self) -> None:
        self.figure.export_data_dialog()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # a floating panel closed on its own
        self.shutdown()
        super().closeEvent(event)


__all__ = ["TrainPanel", "TrainRequest", "TrainingFigure", "MODEL_SIZES", "DATA_CHOICES", "summarize_norm_stats"]
