"""The Train panel: train a model bundle inside the app and watch it learn.

Choose the data (HSK zh→en, a synthetic task, a TSV file), the model size, LayerNorm or
BatchNorm, the number of epochs (the warm-up scales to the run unless set); start, pause, resume,
stop; "Resume from…" continues a stopped run from its checkpoint bundle, as ``attnviz train --resume``. The ``Trainer``
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

Layout: the form sits beside the figure where both fit (the figure then in two or three columns)
and above it where they do not; the figure keeps the height its rows need, so a small dock
scrolls the panel (vertically, never sideways) instead of cutting a label off.

The panel is split by concept: ``run`` (the request and the worker-thread part of a run),
``figure`` (the curves and probe figure), ``controls`` (the run form and the status row),
``history`` (what the run reported, and the bar that scrubs through its snapshots) and this module
(the panel: run control and the trainer's events).

Widgets here never import torch: the worker's function imports the core inside the worker.
"""

from __future__ import annotations

import gc
import math
import time
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.qt.i18n import translate
from attnviz.qt.train.controls import TrainControls, TrainStatus
from attnviz.qt.train.figure import TrainingFigure
from attnviz.qt.train.history import SnapshotBar, TrainHistory
from attnviz.qt.train.run import ACTIVE_STATES, WARMUP_CAP, WARMUP_SHARE, TrainRequest, TrainRun, state_text
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.workers import FunctionWorker

#: What the log says instead of the core's ``continue with --resume`` (the panel's Resume from… button).
RESUME_HINT = QT_TRANSLATE_NOOP("panel", "continue it with Resume from…")


def _training_text(epoch: int, epochs: int) -> str:
    """The state of a run that trains: ``Training · epoch 2/10``."""
    return translate("panel", "Training · epoch {epoch}/{epochs}").format(epoch=epoch, epochs=epochs)


class TrainPanel(QtWidgets.QWidget):
    """Train a model in the app (see the module docstring).

    Signals: ``stateChanged(state)`` (``idle``, ``preparing``, ``running``, ``paused``,
    ``stopping``, ``finished``, ``stopped``, ``failed``); ``trainingFinished(status, path)`` once
    per run (``path`` is the output folder, empty when nothing was written);
    ``bundleReady(path)`` when the user clicks "Open in attnviz" after a run; ``progressed(step,
    total)``; ``snapshotAdded(count)`` after each evaluation.

    Parts: ``controls`` (the run form), ``status`` (state, progress, errors), ``figure``,
    ``snapshot_bar`` (below the figure) and ``history`` (what the current run has reported).
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
        self._run: TrainRun | None = None
        self._worker: FunctionWorker | None = None
        self._callbacks: list[tuple[str, Any]] = []
        self._result_path = ""
        self._curves_dirty = False
        self._last_redraw = 0.0
        self.history = TrainHistory()
        self.figure = TrainingFigure(theme=theme)
        self.controls = TrainControls()
        self.status = TrainStatus()
        self.snapshot_bar = SnapshotBar(self.history, self.figure)
        self._lay_out()
        self.controls.startRequested.connect(lambda req: self.start(req, confirm=True))
        self.controls.resumeRequested.connect(self.start)
        self.controls.pauseResumeRequested.connect(self._toggle_pause)
        self.controls.stopRequested.connect(self.stop)
        self.controls.openRequested.connect(self._open)

        self._pool = QtCore.QThreadPool(self)  # training's own thread: its lowered priority stays with it
        self._pool.setMaxThreadCount(1)
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(self.DRAIN_MS)
        self._timer.timeout.connect(self._drain)
        self._set_state("idle")

    def _lay_out(self) -> None:
        right = QtWidgets.QVBoxLayout()
        right.setContentsMargins(0, 0, 0, 0)
        right.setSpacing(4)
        right.addWidget(self.status)
        right.addWidget(self.figure, 1)
        right.addWidget(self.snapshot_bar)
        self._layout = QtWidgets.QBoxLayout(QtWidgets.QBoxLayout.Direction.LeftToRight, self)
        self._layout.setContentsMargins(4, 4, 4, 4)
        self._layout.addWidget(self.controls)
        self._layout.addLayout(right, 1)

    # -- layout: the form beside the figure where both fit, above it where they do not -----------
    def side_by_side(self) -> bool:
        """The form is beside the figure (else above it)."""
        return self._layout.direction() == QtWidgets.QBoxLayout.Direction.LeftToRight

    def _side_by_side_width(self) -> int:
        """The least width that shows the form beside a figure of one column: the live plots start
        beside the form, not under it (a 1366×768 window's Train dock is 670 px wide)."""
        m = self._layout.contentsMargins()
        return (self.controls.sizeHint().width() + self._layout.spacing() + self.figure.canvas_min_size(1).width()
                + m.left() + m.right())

    def minimumSizeHint(self) -> QtCore.QSize:
        """As narrow as the form or one column of the figure (the form then goes above the figure);
        as tall as the arrangement the width chose."""
        m = self._layout.contentsMargins()
        width = max(self.controls.minimumSizeHint().width(), self.figure.canvas_min_size(1).width()) + m.left() + m.right()
        return QtCore.QSize(width, super().minimumSizeHint().height())

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        wide = event.size().width() >= self._side_by_side_width()
        direction = QtWidgets.QBoxLayout.Direction.LeftToRight if wide else QtWidgets.QBoxLayout.Direction.TopToBottom
        if direction != self._layout.direction():
            self._layout.setDirection(direction)
            self.updateGeometry()
        super().resizeEvent(event)

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
        req = request or self.controls.request()
        if not (self._resume_ok(req) if req.resume_from else self._output_ok(req, confirm)):
            return False
        self.history.clear()
        self.figure.clear()
        self.controls.log.clear()
        self.status.clear_error()
        self.snapshot_bar.reset()
        self._result_path = ""
        self._curves_dirty = False
        self._last_redraw = 0.0
        self._run = TrainRun(req, self._callbacks)
        worker = FunctionWorker(self._run.work, inference=False, pool=self._pool)  # training needs autograd in the worker thread
        worker.returned.connect(self._on_returned)
        worker.errored.connect(self._on_errored)
        worker.finished.connect(self._drain)
        self._worker = worker
        self._log("info", translate("panel", "starting: {run} → {folder}").format(run=req.summary(), folder=req.out_dir))
        self._set_state("preparing")
        # The training loop allocates fast and triggers the collector's full passes, which hold the GIL
        # (and so the event loop) for as long as they take: ~150 ms over the app's heap. Frozen, the
        # long-lived objects (modules, widgets) are no longer traversed, and those passes stay short.
        gc.collect()
        gc.freeze()
        self._timer.start()
        worker.start()
        return True

    def _output_ok(self, req: TrainRequest, confirm: bool) -> bool:
        """The output folder can take the run's bundle: a new or empty folder, or an attnviz bundle
        (``confirm``: once the user agrees to replace it). A folder holding anything else is refused."""
        from attnviz.core.training.checkpoint import folder_kind

        if not req.out_dir:
            self.status.show_error(translate("panel", "Choose an output folder for the model bundle."), "no-output-folder")
            return False
        out = Path(req.out_dir)
        kind = folder_kind(out)
        if kind == "file":
            self.status.show_error(translate("panel", "{path} is a file, not a folder. Choose a folder for the model bundle.").format(path=out), "output-is-a-file")
            return False
        if kind == "foreign":
            self.status.show_error(translate("panel", "{path} holds files that are not an attnviz model bundle; training never replaces them. "
                                             "Choose a new or empty folder.").format(path=out), "output-not-a-bundle")
            return False
        if kind == "bundle" and confirm:
            return self._ask_to_replace(out)
        return True

    def _resume_ok(self, req: TrainRequest) -> bool:
        """``req.resume_from`` is an attnviz bundle (the trainer then checks its training state)."""
        from attnviz.core.training.checkpoint import folder_kind

        if folder_kind(Path(req.resume_from)) != "bundle":
            self.status.show_error(translate("panel", "{path} is not an attnviz model bundle: choose the output folder of a run to resume it.").format(
                path=req.resume_from), "resume-not-a-bundle")
            return False
        return True

    def _ask_to_replace(self, out: Path) -> bool:
        """Ask whether the bundle in ``out`` may be replaced by the new run (the folder name is plain text)."""
        buttons = QtWidgets.QMessageBox.StandardButton
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Question, translate("panel", "Replace the model?"),
                                    translate("panel", "{path} already holds a model bundle. Train a new one in its place?\n\n"
                                              "The bundle stays until the new run's first checkpoint is saved.").format(path=out),
                                    buttons.Yes | buttons.No, self)
        box.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        box.setProperty("key", "replace-bundle")  # what the question asks, in any language
        box.setDefaultButton(buttons.No)
        return box.exec() == buttons.Yes

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
            self._finish("stopped", translate("panel", "stopped before training began"), "")
            return
        path = str(result.path) if result.path is not None else ""
        message = result.message.replace("continue with --resume", translate("panel", RESUME_HINT))
        last = self.history.last_checkpoint
        if result.status == "failed":
            extra = translate("panel", " The last good checkpoint is kept in {path}.").format(path=last) if last else ""
            self.status.show_error(message + ("" if "checkpoint" in message else extra), "run-failed")
        self._finish(result.status, message, path if (path and Path(path).is_dir()) else "")

    def _on_errored(self, exc: BaseException) -> None:
        self._drain()
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        last = self.history.last_checkpoint
        if last:
            msg += translate("panel", " — the last good checkpoint is kept in {path}").format(path=last)
        self.status.show_error(msg, getattr(exc, "key", "") or "run-error")  # the error's own key, where it has one
        self._finish("failed", msg, last)

    def _finish(self, status: str, message: str, path: str) -> None:
        self._timer.stop()
        gc.unfreeze()  # what was frozen at the start can be collected again once it is garbage
        self._redraw_curves(force=True)
        self._result_path = path if status in ("finished", "stopped") else ""
        self._log("error" if status == "failed" else "info", translate("panel", "{state}: {message}").format(state=state_text(status), message=message))
        self._set_state(status)
        self.trainingFinished.emit(status, path)

    # -- events from the trainer (GUI thread) -------------------------------------------------------
    def _drain(self) -> None:
        run = self._run
        if run is None:
            return
        latest_step = None
        evals_added = False
        while run.events:
            name, payload = run.events.popleft()
            if name == "step":
                self.history.add_step(payload)
                latest_step = payload
            elif name == "eval":
                self._on_eval(*payload)
                evals_added = True
            else:
                self._on_event(name, payload)
        if latest_step is not None:
            self._show_step(latest_step)
        self._curves_dirty |= latest_step is not None or evals_added
        self._redraw_curves(force=evals_added)
        if evals_added:
            self.snapshot_bar.refresh()
            self.snapshotAdded.emit(len(self.history.snapshots))

    def _on_event(self, name: str, payload: Any) -> None:
        """The trainer's events other than steps and evaluations (``end`` needs nothing: the worker returns next)."""
        if name == "prepare":
            self._log("info", payload)
        elif name == "start":
            self._on_start(payload)
        elif name == "checkpoint":
            self.history.last_checkpoint = str(payload.path)
            self._log("info", translate("panel", "checkpoint ({reason}) at step {step}: {path}").format(reason=payload.reason, step=payload.step, path=payload.path))
        elif name == "state":
            self._set_state(payload.state)
        elif name == "warmup":
            steps, total, auto = payload
            self.controls.show_warmup(steps, total)
            rule = translate("panel", " (auto: min({cap}, {share:.0%} of the steps))").format(cap=WARMUP_CAP, share=WARMUP_SHARE) if auto else ""
            self._log("info", translate("panel", "warm-up: {steps} of {total} steps").format(steps=steps, total=total) + rule)
        elif name == "message":
            self._log(payload.level, payload.text)
            if payload.level == "error":
                self.status.show_error(payload.text, "run-message")

    def _on_start(self, event: Any) -> None:
        self.history.total_steps = int(event.total_steps)
        self.status.set_total_steps(self.history.total_steps)
        self.figure.set_step_range(self.history.total_steps)
        d = event.data
        self._log("info", translate("panel", "{parameters:,} parameters on {device}; {data}: {train} train / {valid} valid pairs; "
                                             "{epochs} epochs × {steps} steps").format(
            parameters=event.n_parameters, device=event.device, data=d.get("name"), train=d["sizes"]["train"], valid=d["sizes"]["valid"],
            epochs=event.epochs, steps=event.steps_per_epoch))

    def _on_eval(self, event: Any, norms: dict[str, dict[str, float]]) -> None:
        self.history.add_eval(event, norms)
        m = event.metrics
        text = translate("panel", "epoch {epoch}: train loss {train:.3f}, valid loss {valid:.3f}").format(
            epoch=event.epoch + 1, train=m.get("train_loss", math.nan), valid=m.get("valid_loss", math.nan))
        if "valid_bleu" in m:
            text += f", BLEU {m['valid_bleu']:.1f}, chrF {m['valid_chrf']:.1f}"
        if event.probes:
            text += f" | {event.probes[0].source} → {event.probes[0].hypothesis}"
        self._log("info", text)

    def _show_step(self, event: Any) -> None:
        trainer = self.trainer
        if self._state == "running" and trainer is not None:
            self.status.show_state("running", _training_text(event.epoch + 1, trainer.options.epochs))
        self.status.show_step(event)
        if self._state != "running":  # a step drained after Pause or Stop: no ETA
            self.status.clear_eta()
        self.progressed.emit(int(event.step), int(self.history.total_steps))

    def _redraw_curves(self, force: bool = False) -> None:
        """Redraw the curves at most every ``REDRAW_S``: a redraw is Python painting that competes with
        the training thread for the GIL (the numbers and the progress bar stay live meanwhile)."""
        now = time.monotonic()
        if self._curves_dirty and (force or now - self._last_redraw >= self.REDRAW_S):
            self.figure.show_history(self.history.steps_array(), self.history.evals)
            self._curves_dirty = False
            self._last_redraw = now

    # -- state and messages ---------------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        if state == "running" and self._run is not None and self._run.stop_requested:
            state = "stopping"
        changed = state != self._state
        self._state = state
        text = state_text(state)
        trainer = self.trainer
        if state == "running" and trainer is not None:
            text = _training_text(min(trainer.epoch + 1, trainer.options.epochs), trainer.options.epochs)
        self.status.show_state(state, text)
        if state != "running":
            self.status.clear_eta()
        self._update_buttons()
        if changed:
            self.stateChanged.emit(state)

    def _update_buttons(self) -> None:
        paused = self._state == "paused" or (self._run is not None and self._run.pause_requested and self.is_running())
        self.controls.set_state(self._state, paused=paused, can_open=bool(self._result_path))

    def _log(self, level: str, text: str) -> None:
        self.controls.append_log(level, text)

    def error_text(self) -> str:
        """The error the panel shows ("" when none)."""
        return self.status.error_text()

    def error_key(self) -> str:
        """Which error the panel shows, in any language ("" when none; ``TrainStatus.error_key``)."""
        return self.status.error_key()

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
