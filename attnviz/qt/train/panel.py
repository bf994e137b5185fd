"""The Train panel: train a model bundle inside the app and watch it learn.

Choose the data (HSK zh→en, a synthetic task, a TSV file), the model size, LayerNorm or
BatchNorm, the number of epochs; start, pause, resume, stop. The ``Trainer``
(``attnviz.core.training.trainer``) runs in a worker thread (``workers.FunctionWorker``, in a pool of
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

The panel is split by concept: ``qt_train_run`` (the request and the worker-thread part of a run),
``qt_train_figure`` (the curves and probe figure), ``qt_train_controls`` (the form and the status
rows), ``qt_train_history`` (snapshot scrubbing, norm-statistic curves) and this module (the panel:
run control and the trainer's events). The names of those modules stay importable from here.

Widgets here never import torch: the worker's function imports the core inside the worker.
"""

from __future__ import annotations

import gc
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.qt.train.controls import TrainControlsMixin
from attnviz.qt.train.figure import TrainingFigure
from attnviz.qt.train.history import TrainHistoryMixin
from attnviz.qt.train.run import (
    ACTIVE_STATES,
    DATA_CHOICES,
    MODEL_SIZES,
    STATE_TEXT,
    TrainRequest,
    _Run,
    summarize_norm_stats,
)
from attnviz.qt.views.data import FigureData
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.workers import FunctionWorker


def _fmt_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "–"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class TrainPanel(TrainControlsMixin, TrainHistoryMixin, QtWidgets.QWidget):
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

    # -- history of the run ------------------------------------------------------------------
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
