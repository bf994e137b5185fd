"""The app's state in one place: the open model, the decoding of the current sentence, and what
the user selected. Views subscribe to its signals and render the data objects it builds; they
never touch the model.

Two modes:

* **stepping** (no target typed): a ``DecodingSession`` drives step / back / force / run / reset;
  the current step is the last one decoded.
* **teacher-forced** (a target typed): one pass over "SOS + y" gives every position at once;
  step / back move the highlighted position instead of decoding. The pass runs in a worker
  (``runs.forcing``); a move asked for meanwhile waits for it, and ``decodingChanged`` comes with it.

What the views render is asked of ``current``, the ``DecodingResult`` of either mode.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from PySide6 import QtCore

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.bundle import Bundle
from attnviz.core.data.pieces import display_piece
from attnviz.core.decoding.masked import MaskedPrediction, masked_prediction_from_bundle
from attnviz.core.decoding.result import DecodingResult
from attnviz.core.decoding.session import DecodeStep, DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, DecodingError, Greedy, Sampling
from attnviz.core.decoding.teacher_forcing import TeacherForced, teacher_forced_from_bundle
from attnviz.core.model.interventions import InterventionError
from attnviz.core.model.sites import n_layers
from attnviz.errors import AttnvizError, one_line
from attnviz.qt.analyses import Analyses
from attnviz.qt.frame_cache import FrameCache
from attnviz.qt.i18n import translate
from attnviz.qt.model_loader import ModelLoader
from attnviz.qt.session_runs import SessionRuns


def _positioned(decoding: DecodingSession, steps: int | None) -> bool:
    """Whether ``decoding`` is already ``steps`` free steps from SOS (``None``: finished)."""
    if any(step.forced for step in decoding.steps):
        return False
    n = len(decoding.steps)
    return decoding.finished if steps is None else n == steps or (decoding.finished and n < steps)


class Session(QtCore.QObject):
    """Owns the current model and its decoding; emits a signal on every change. (What the views
    show of it, the selection, is the views' own: :class:`attnviz.qt.selection.LinkedSelection`.)"""

    modelChanged = QtCore.Signal(object)  # Bundle | None
    decodingChanged = QtCore.Signal()  # tokens, current step or mode changed
    busyChanged = QtCore.Signal(bool, str)  # busy, what
    message = QtCore.Signal(str, str)  # level ("info" | "warning" | "error"), one-line text
    runFinished = QtCore.Signal()
    actionStarted = QtCore.Signal()  # the user changed an input or acted: earlier messages are done
    ablationChanged = QtCore.Signal()  # the heads ablated (``ablation``) changed

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.bundle: Bundle | None = None
        self.decoding: DecodingSession | None = None
        self.forced: TeacherForced | None = None
        self.masked: MaskedPrediction | None = None  # an encoder-only model's result: one masked-token prediction of the source
        self.forced_cursor = 0
        self.source = ""
        self.target = ""
        self.strategy = Greedy()
        self._run_timer = QtCore.QTimer(self, interval=0)
        self._run_timer.timeout.connect(self._run_tick)
        self._pool = QtCore.QThreadPool(self)
        self._workers: list = []
        self.loader = ModelLoader(self._pool, self._workers, self)
        self.loader.loaded.connect(lambda bundle, inputs: self.set_bundle(bundle, **inputs))
        self.loader.failed.connect(lambda line: self.message.emit("error", line))
        self.loader.note.connect(lambda line: self.message.emit("info", line))
        self.loader.busyChanged.connect(self.busyChanged)
        self.runs = SessionRuns(self._pool, self._workers, self)  # what the current result waits for, in workers
        self.runs.prediction.returned.connect(self._on_masked)
        self.runs.forcing.returned.connect(self._on_forced)
        for run in (self.runs.prediction, self.runs.forcing):
            run.errored.connect(self._on_run_failed)
        self.runs.plans.ready.connect(self._on_plan_ready)
        self.runs.plans.failed.connect(self._on_plan_failed)
        self.error: str | None = None
        self.decode_as_you_type = True  # a new sentence (typed or chosen) is decoded to the end at once
        self.frames = FrameCache(self)  # what is derived from the frame the views draw, built once each
        self.analyses = Analyses(self)  # the views' analyses that call the model, in workers
        self.ablation = HeadSet()  # heads ablated in every run the views show (none: the model as trained)
        self._to_end = True  # whether the sentence waiting for its plan is decoded to the end when it comes
        self._holds = 0  # how many one_change blocks the moves are inside
        self._held = False  # a change made inside them, whose signal waits for their end

    # -- model ------------------------------------------------------------------------------
    def open_model(self, path: str | Path, source: str | None = None, target: str | None = None, **inputs) -> None:
        """Load a bundle in a worker thread; ``modelChanged`` (or an error message) follows. Given,
        ``source``, ``target`` and ``inputs`` (``strategy``, ``ablation``) are what it runs first.
        Only the latest request counts (:class:`~attnviz.qt.model_loader.ModelLoader`)."""
        self.loader.open(path, dict(inputs, source=source, target=target))

    @property
    def loading(self) -> bool:
        """A model load is in progress (and will be applied unless cancelled or superseded)."""
        return self.loader.loading

    def cancel_load(self, quiet: bool = False) -> None:
        """Drop the load in progress: whatever it returns is ignored; the open model stays."""
        self.loader.cancel(quiet)

    def wait_for_workers(self, msecs: int = 10000) -> bool:
        self.cancel_load(quiet=True)
        for w in list(self._workers):
            if hasattr(w, "quit"):
                w.quit()
        return self._pool.waitForDone(msecs)

    def set_bundle(self, bundle: Bundle, source: str | None = None, target: str | None = None, *,
                   strategy: Greedy | Sampling | BeamSearch | None = None, ablation: HeadSet | None = None) -> None:
        """Show ``bundle``; given, the sentences, strategy and ablation it runs (an ablation of heads
        the model has not is cleared, said in one line)."""
        self.stop_run()
        self.analyses.cancel()  # results of the previous model are not shown
        self.bundle = bundle
        self.decoding = None
        self.forced = None
        self.masked = None
        self.runs.drop()
        self.runs.plans.drop()
        self._to_end = self.decode_as_you_type
        self.modelChanged.emit(bundle)
        self._take(source, target, strategy, ablation)
        if self.source:
            self._rebuild()
            if self.decode_as_you_type and self.decoding is not None:
                self.decode_to_end()  # the kept sentence, decoded by the new model
        else:
            self._changed()

    # -- ablation ---------------------------------------------------------------------------
    def set_ablation(self, heads: HeadSet) -> None:
        """Ablate ``heads`` in every run from now on: decoding restarts (and, with
        ``decode_as_you_type``, runs to the end); a head the model has not is refused in one line."""
        if self.bundle is not None:
            try:
                heads.check(self.bundle.config)
            except InterventionError as exc:
                self.message.emit("warning", one_line(str(exc)))
                return
        quiet = not heads and not self.ablation  # no head before or after: nothing runs again
        self.runs.plans.drop()
        self._to_end = self.decode_as_you_type
        self.ablation = heads
        self.ablationChanged.emit()
        if quiet or not self.source:  # no sentence yet: the next one runs with it
            return
        self.actionStarted.emit()
        self._rebuild()
        if self.decode_as_you_type and self.decoding is not None:
            self.decode_to_end()

    def set_ablation_kind(self, kind: str) -> None:
        """Ablate the same heads another way (zero, mean or uniform)."""
        if kind != self.ablation.kind:
            self.set_ablation(HeadSet(self.ablation.heads, kind))

    def toggle_head(self, kind: str, layer: int, head: int) -> None:
        """Ablate head ``(kind, layer, head)`` (0-based), or give it back when it is ablated."""
        self.set_ablation(self.ablation.toggled(kind, layer, head))

    def _fit_ablation(self, bundle: Bundle) -> None:
        """A new model keeps the ablation when it has those heads; otherwise none, said in one line."""
        try:
            self.ablation.check(bundle.config)
        except InterventionError:
            self.message.emit("info", translate("session", "The ablation ({heads}) was cleared: this model has no such heads").format(
                heads=self.ablation.text()))
            self.ablation = HeadSet()
            self.ablationChanged.emit()

    @property
    def preparing(self) -> bool:
        """A mean ablation's plan is being made: the sentence runs when it comes."""
        return self.runs.plans.pending

    def _on_plan_ready(self, move: Callable[[], object] | None) -> None:
        """The plan has come: the sentence runs, then the move asked for meanwhile (or to the end)."""
        self._rebuild()
        if move is not None:
            move()
        elif self._to_end and self.decoding is not None:
            self.decode_to_end()

    def _on_plan_failed(self, message: str) -> None:
        self.error = one_line(message)
        self.message.emit("warning", self.error)
        self._changed()

    def n_layers(self, kind: str) -> int:
        if self.bundle is None:
            return 0
        return n_layers(self.bundle.config, kind)

    # -- one change ---------------------------------------------------------------------------
    def _changed(self) -> None:
        """The frame changed: ``decodingChanged`` now, or once at the end of :meth:`one_change`."""
        if self._holds:
            self._held = True
        else:
            self.decodingChanged.emit()

    @contextlib.contextmanager
    def one_change(self) -> Iterator[None]:
        """Moves made inside reach the views as one change: one ``decodingChanged`` at the end
        of the outermost block."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds and self._held:
                self._held = False
                self.decodingChanged.emit()

    def apply(self, source: str, target: str, *, strategy: Greedy | Sampling | BeamSearch | None = None,
              ablation: HeadSet | None = None, steps: int | None = None, tokens: Sequence[int] = (),
              forced: Iterable[int] = (), cursor: int | None = None) -> str | None:
        """The sentences and where their decoding stands, as one change: ``steps`` tokens decoded
        (``None``: to the end), or ``tokens`` decoded again (forced at ``forced``), or teacher-forced,
        the ``cursor``. What session files, tour stops, animations and exports restore; a decoding
        error is said in one line and returned."""
        with self.one_change():
            self.set_inputs(source, target, strategy=strategy, ablation=ablation, to_end=False)
            if tokens or cursor is not None:
                return self.replay(tokens, forced, cursor)
            return self.go_to(steps)

    # -- inputs -----------------------------------------------------------------------------
    def set_inputs(self, source: str, target: str, *, strategy: Greedy | Sampling | BeamSearch | None = None,
                   ablation: HeadSet | None = None, to_end: bool | None = None) -> None:
        """New sentences (and, given, a strategy and an ablation): re-encode, and decode to the end
        at once when ``to_end`` (default: ``decode_as_you_type``)."""
        self.actionStarted.emit()
        self._take(source, target, strategy, ablation)
        self._to_end = self.decode_as_you_type if to_end is None else to_end
        self._rebuild()
        if self._to_end and self.decoding is not None:
            self.decode_to_end()

    def _take(self, source: str | None, target: str | None, strategy, ablation: HeadSet | None) -> None:
        """The inputs given (``None``: kept) in place, before the next rebuild runs them."""
        self.source = self.source if source is None else source
        self.target = self.target if target is None else target
        self.strategy = self.strategy if strategy is None else strategy
        if ablation is not None and ablation != self.ablation:
            self.ablation = ablation
            self.ablationChanged.emit()

    def keep_inputs(self, source: str, target: str) -> None:
        """The sentences the next model opened runs (nothing runs now)."""
        self.source, self.target = source, target

    def set_decode_as_you_type(self, on: bool) -> None:
        """Whether a new sentence, model or strategy is decoded to the end at once."""
        self.decode_as_you_type = bool(on)

    def set_strategy(self, strategy: Greedy | Sampling | BeamSearch) -> None:
        """A new strategy (or new parameters): decoding restarts from SOS, and the tokens the user
        forced are dropped, said in one line; with ``decode_as_you_type`` the kept sentence is
        decoded to the end at once."""
        self.actionStarted.emit()
        self.strategy = strategy
        if self.decoding is None:
            return
        self.stop_run()
        dropped = self.decoding.set_strategy(strategy)
        self._changed()
        if dropped:
            pieces = " ".join(display_piece(s.piece) for s in dropped)
            self.message.emit("info", one_line(translate("session", "Decoding restarts with the new strategy, without the tokens you forced ({pieces})")
                                               .format(pieces=pieces)))
        if self.decode_as_you_type:
            self.decode_to_end()

    def _rebuild(self) -> None:
        """Re-encode the source (and target) and restart decoding."""
        self.stop_run()
        self.decoding = None
        self.forced = None
        self.masked = None
        self.runs.drop()
        self.error = None
        if self.bundle is None:
            self._changed()
            return
        self._fit_ablation(self.bundle)
        try:
            plan = self.runs.plans.plan(self.bundle, self.ablation, self.source, self.target)
            if plan is None:  # a mean ablation's plan is on its way
                self._changed()
                return
            if self.bundle.config.kind == "encoder-only":  # no decoder: a masked-token prediction instead
                self.runs.prediction.start(masked_prediction_from_bundle, self.bundle, self.source, interventions=plan)
                notices = ()
            elif self.target.strip():  # the pass reports to _on_forced, decodingChanged with it
                self.runs.forcing.start(teacher_forced_from_bundle, self.bundle, self.source, self.target, interventions=plan)
                return
            else:
                self.decoding = DecodingSession.from_bundle(self.bundle, self.source, strategy=self.strategy, interventions=plan)
                notices = tuple(self.decoding.notices)
        except DecodingError as exc:
            self.error = one_line(str(exc))
            self.message.emit("warning", self.error)
            self._changed()
            return
        for n in notices:
            self.message.emit("info", n)
        self._changed()

    def _on_forced(self, result: TeacherForced) -> None:
        """The typed target's pass has come (only the latest counts): the cursor on its last
        position, or the move asked for meanwhile; one ``decodingChanged``."""
        move = self.runs.take_move()
        with self.one_change():
            self.forced, self.forced_cursor = result, len(result.steps) - 1
            for n in result.notices:
                self.message.emit("info", n)
            self._changed()
            if move is not None:
                move()

    def _on_masked(self, result: MaskedPrediction) -> None:
        """An encoder-only model's one pass over the source (the user types [MASK] where a token is
        hidden) has returned from its worker (only the latest counts)."""
        self.masked = result
        for n in result.notices:
            self.message.emit("info", n)
        self._changed()

    def _on_run_failed(self, exc: BaseException) -> None:
        self.error = one_line(str(exc) if isinstance(exc, AttnvizError) else f"{type(exc).__name__}: {exc}")
        self.message.emit("warning", self.error)
        self._changed()

    def finish_runs(self, msecs: int = 60000) -> None:
        """Wait for the work under way that the current result waits for (a mean ablation's plan,
        then the sentence's teacher-forced pass or masked-token prediction) and take its result (no
        event loop to wait in: ``attnviz export``, an animation's frames)."""
        self.runs.finish(msecs)

    @property
    def pending(self) -> bool:
        """The current result waits for a worker: a plan, a teacher-forced pass or a prediction."""
        return self.runs.pending

    # -- stepping ---------------------------------------------------------------------------
    def can_step(self) -> bool:
        if self.forced is not None:
            return self.forced_cursor < len(self.forced.steps) - 1
        return self.decoding is not None and self.decoding.can_step

    def can_back(self) -> bool:
        if self.forced is not None:
            return self.forced_cursor > 0
        return self.decoding is not None and self.decoding.can_back

    def step(self) -> DecodeStep | None:
        self.actionStarted.emit()
        if self.forced is not None:
            self.set_cursor(self.forced_cursor + 1)  # at the last position: no move, no signal
            return None
        if self.decoding is None or not self.decoding.can_step:
            return None
        return self._guard(self.decoding.step)

    def back(self) -> None:
        self.actionStarted.emit()
        self.stop_run()
        if self.forced is not None:
            self.set_cursor(self.forced_cursor - 1)  # at the first position: no move, no signal
            return
        if self.decoding is not None and self.decoding.can_back:
            self._guard(self.decoding.back)

    def force(self, token: str | int) -> DecodeStep | None:
        self.actionStarted.emit()
        self.stop_run()
        if self.decoding is None:
            return None
        if self.decoding.finished:
            self.message.emit("warning", translate("session", "Decoding has finished: go back a step before forcing a token"))
            return None
        return self._guard(lambda: self.decoding.force(token))

    def set_cursor(self, position: int) -> None:
        """Teacher-forced: the highlighted position ``position`` (0-based, clamped to the target);
        one ``decodingChanged`` when it moves."""
        if self.forced is None:
            return
        cursor = max(0, min(position, len(self.forced.steps) - 1))
        if cursor != self.forced_cursor:
            self.forced_cursor = cursor
            self._changed()

    def go_to(self, steps: int | None) -> str | None:
        """``steps`` tokens decoded from SOS (``None``: to the end); teacher-forced, the cursor at
        position ``steps`` (1-based). One ``decodingChanged`` for the whole move, none where it is
        already there; a decoding error is said in one line and returned."""
        self.stop_run()
        if self.runs.wait(lambda: self.go_to(steps)):
            return None
        if self.forced is not None:
            n = len(self.forced.steps)
            self.set_cursor(n - 1 if steps is None else min(steps, n) - 1)
            return None
        d = self.decoding
        if d is None or _positioned(d, steps):
            return None
        return self._move(lambda: d.go_to(steps))

    def replay(self, tokens: Sequence[int], forced: Iterable[int] = (), cursor: int | None = None) -> str | None:
        """A saved position again: teacher-forced, the cursor at ``cursor`` (0-based); otherwise
        ``tokens`` decoded again, forced at the indices in ``forced``. One ``decodingChanged``."""
        if self.runs.wait(lambda: self.replay(tokens, forced, cursor)):
            return None
        if self.forced is not None and cursor is not None:
            self.forced_cursor = max(0, min(cursor, len(self.forced.steps) - 1))
        elif self.decoding is not None and tokens:
            d = self.decoding
            return self._move(lambda: d.replay(list(tokens), forced), translate(
                "session_file", "The session's tokens could not all be decoded again: {error}"))
        self._changed()
        return None

    def _move(self, fn, wording: str = "{error}") -> str | None:
        """``fn()`` on the decoding, then one ``decodingChanged``; its error said (in ``wording``) and returned."""
        error = None
        try:
            fn()
        except DecodingError as exc:
            error = wording.format(error=exc)
            self.message.emit("warning", error)
        self._changed()
        return error

    def reset(self) -> None:
        self.actionStarted.emit()
        self.stop_run()
        if self.forced is not None:
            self.forced_cursor = 0
            self._changed()
        elif self.decoding is not None:
            self._guard(self.decoding.reset)

    def run_to_end(self) -> None:
        """Step until EOS or the maximum length, one step per event-loop turn (the UI stays live)."""
        self.actionStarted.emit()
        self.decode_to_end()

    def decode_to_end(self) -> None:
        """:meth:`run_to_end` as part of the action under way (a new model or sentence): the
        messages that action gave stay."""
        if self.forced is not None:
            self.forced_cursor = len(self.forced.steps) - 1
            self._changed()
            self.runFinished.emit()
            return
        if self.decoding is None or not self.decoding.can_step:
            self.runFinished.emit()
            return
        self._run_timer.start()

    @property
    def running(self) -> bool:
        return self._run_timer.isActive()

    def stop_run(self) -> None:
        if self._run_timer.isActive():
            self._run_timer.stop()
            self.runFinished.emit()

    def _run_tick(self) -> None:
        if self.decoding is None or not self.decoding.can_step:
            self._run_timer.stop()
            self.runFinished.emit()
            return
        if self._guard(self.decoding.step) is None:
            self._run_timer.stop()
            self.runFinished.emit()

    def _guard(self, fn):
        try:
            result = fn()
        except DecodingError as exc:
            self.message.emit("warning", str(exc))
            return None
        self._changed()
        return result if result is not None else True

    # -- what the views render --------------------------------------------------------------
    @property
    def current(self) -> DecodingResult | None:
        """The result the views show: the teacher-forced pass, the decoding session, or (an
        encoder-only model) the masked-token prediction. At step 0 the decoding's first row: the
        SOS row, whose attention gives P(y₁ | SOS) that the top-k list shows (``DecodingSession.first_row``)."""
        if self.forced is not None:
            return self.forced
        d = self.decoding
        if d is not None and not d.steps and d.can_step:
            try:
                return d.first_row()
            except DecodingError:
                return d
        return d if d is not None else self.masked

    def n_rows(self) -> int:
        """Decoder rows (fed tokens) available now."""
        cur = self.current
        return len(cur.steps) if cur is not None else 0

    def current_row(self) -> int | None:
        if self.forced is not None:
            return self.forced_cursor
        n = self.n_rows()
        return n - 1 if n else None

    def src_pieces(self) -> tuple[str, ...]:
        cur = self.current
        return tuple(cur.src_pieces) if cur is not None else ()

    def input_pieces(self) -> tuple[str, ...]:
        """Decoder inputs, one per row: SOS, y1, ... (fed tokens)."""
        cur = self.current
        return tuple(cur.input_pieces) if cur is not None else ()

    def output_pieces(self) -> tuple[str, ...]:
        """What each row produced: the decoded tokens, or the targets y + EOS."""
        cur = self.current
        return tuple(cur.output_pieces) if cur is not None else ()

    def current_step(self) -> DecodeStep | None:
        if self.decoding is None or not self.decoding.steps:
            return None
        return self.decoding.steps[-1]

