"""The app's state in one place: the open model, the decoding of the current sentence, and what
the user selected. Views subscribe to its signals and render the data objects it builds; they
never touch the model.

Two modes:

* **stepping** (no target typed): a ``DecodingSession`` drives step / back / force / run / reset;
  the current step is the last one decoded.
* **teacher-forced** (a target typed): one pass over "SOS + y" gives every position at once;
  step / back move the highlighted position instead of decoding.

What the views render is asked of ``current``, the ``DecodingResult`` of either mode.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
from PySide6 import QtCore

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.analysis.figure_data import AttentionData, MaskData, ScoreForm
from attnviz.core.analysis.rollout import decoder_rollout, rollout
from attnviz.core.bundle import Bundle, load_bundle
from attnviz.core.data.pieces import display_piece
from attnviz.core.decoding.masked import MaskedPrediction, masked_prediction_from_bundle
from attnviz.core.decoding.result import DecodingResult, TopK
from attnviz.core.decoding.session import DecodeStep, DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, DecodingError, Greedy, Sampling
from attnviz.core.decoding.teacher_forcing import TeacherForced, teacher_forced_from_bundle
from attnviz.core.model.interventions import InterventionError
from attnviz.core.model.sites import attention_sites, n_layers, position_biased
from attnviz.errors import AttnvizError
from attnviz.paths import bundled_replacement
from attnviz.qt.ablation_plans import AblationPlans
from attnviz.qt.analyses import Analyses
from attnviz.qt.frame_key import FRAME_PARTS, FrameKey
from attnviz.qt.i18n import translate

MAX_MESSAGE = 500  # characters of a message shown in the window


def _positioned(decoding: DecodingSession, steps: int | None) -> bool:
    """Whether ``decoding`` is already ``steps`` free steps from SOS (``None``: finished)."""
    if any(step.forced for step in decoding.steps):
        return False
    n = len(decoding.steps)
    return decoding.finished if steps is None else n == steps or (decoding.finished and n < steps)


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line (control characters and line breaks become spaces), cut at ``limit``."""
    flat = "".join(" " if (ch.isspace() or not ch.isprintable()) else ch for ch in str(text))
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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
        self._masked_worker = None  # the FunctionWorker of the prediction whose result will be shown
        self.forced_cursor = 0
        self.source = ""
        self.target = ""
        self.strategy = Greedy()
        self._run_timer = QtCore.QTimer(self, interval=0)
        self._run_timer.timeout.connect(self._run_tick)
        self._pool = QtCore.QThreadPool(self)
        self._workers: list = []
        self._load = None  # the FunctionWorker of the load whose result will be applied
        self.loading_path: Path | None = None
        self.error: str | None = None
        self.decode_as_you_type = True  # a new sentence (typed or chosen) is decoded to the end at once
        self._frame: tuple = ()  # what the cached derived data is of (see _frame_token)
        self._derived: dict[object, object] = {}  # derived data of the current frame, built once each
        self.builds: Counter[str] = Counter()  # how often each kind of derived data was built
        self.analyses = Analyses(self)  # the views' analyses that call the model, in workers
        self._per_model: tuple[object, dict[str, object]] = (None, {})  # what is kept while one bundle is open
        self._per_source: tuple[object, dict[str, object]] = (None, {})  # what is kept while one decoding result is current
        self.ablation = HeadSet()  # heads ablated in every run the views show (none: the model as trained)
        self._sos: tuple[tuple, DecodingResult] | None = None  # the SOS row shown at step 0 (see current)
        self.plans = AblationPlans(self._pool, self._workers, self)  # a mean ablation's plan is made in a worker
        self.plans.ready.connect(self._on_plan_ready)
        self.plans.failed.connect(self._on_plan_failed)
        self._to_end = True  # whether the sentence waiting for its plan is decoded to the end when it comes
        self._after_plan: Callable[[], object] | None = None  # a move asked for while the plan was made, done when it comes

    # -- model ------------------------------------------------------------------------------
    def open_model(self, path: str | Path, source: str | None = None, target: str | None = None, **inputs) -> None:
        """Load a bundle in a worker thread; ``modelChanged`` (or an error message) follows. Given,
        ``source``, ``target`` and ``inputs`` (``strategy``, ``ablation``) are what it runs first.

        Only the latest request counts: a load still running when another begins (or when
        :meth:`cancel_load` is called) is dropped, so its bundle never reaches the views.
        """
        from attnviz.qt.workers import FunctionWorker

        self.cancel_load(quiet=True)
        path, asked = Path(path), Path(path)
        path = bundled_replacement(asked) or asked
        worker = FunctionWorker(load_bundle, path, pool=self._pool, inference=False)  # parameters must stay normal tensors
        self._load, self.loading_path = worker, path
        self._workers.append(worker)
        self.busyChanged.emit(True, translate("session", "Opening {name}…").format(name=path.name))

        def done(bundle: Bundle) -> None:
            if self._end_load(worker):
                self.set_bundle(bundle, source=source, target=target, **inputs)
                if path != asked:
                    self.message.emit("info", translate("session", "{old} is no longer bundled: opened {new} instead").format(old=asked, new=path))

        def failed(exc: BaseException) -> None:
            if self._end_load(worker):
                text = str(exc) if isinstance(exc, AttnvizError) else f"{path}: {type(exc).__name__}: {exc}"
                self.message.emit("error", one_line(translate("session", "Could not open the model: {why}").format(why=text)))

        def finished() -> None:
            if worker in self._workers:
                self._workers.remove(worker)

        worker.returned.connect(done)
        worker.errored.connect(failed)
        worker.finished.connect(finished)
        worker.start()

    @property
    def loading(self) -> bool:
        """A model load is in progress (and will be applied unless cancelled or superseded)."""
        return self._load is not None

    def cancel_load(self, quiet: bool = False) -> None:
        """Drop the load in progress: whatever it returns is ignored; the open model stays."""
        worker, path = self._load, self.loading_path
        if worker is None:
            return
        worker.quit()
        self._end_load(worker)
        if not quiet and path is not None:
            self.message.emit("info", translate("session", "Opening {name} was cancelled; the open model is kept").format(name=path.name))

    def _end_load(self, worker) -> bool:
        """True when ``worker`` is the current load (which ends now); False for a dropped one."""
        if worker is not self._load:
            return False
        self._load, self.loading_path = None, None
        self.busyChanged.emit(False, "")
        return True

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
        self.masked, self._masked_worker = None, None
        self.plans.drop()
        self._after_plan, self._to_end = None, self.decode_as_you_type
        self.modelChanged.emit(bundle)
        self._take(source, target, strategy, ablation)
        if self.source:
            self._rebuild()
            if self.decode_as_you_type and self.decoding is not None:
                self.decode_to_end()  # the kept sentence, decoded by the new model
        else:
            self.decodingChanged.emit()

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
        self.plans.drop()
        self._after_plan, self._to_end = None, self.decode_as_you_type
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

    def _interventions(self) -> list | None:
        """The ablation as interventions for this source; ``None`` while a mean ablation's plan is
        made in a worker (the sentence runs when it comes: ``_on_plan_ready``)."""
        return self.plans.plan(self.bundle, self.ablation, self.source, self.target)

    @property
    def preparing(self) -> bool:
        """A mean ablation's plan is being made: the sentence runs when it comes."""
        return self.plans.pending

    def _on_plan_ready(self) -> None:
        move, self._after_plan = self._after_plan, None
        self._rebuild()
        if move is not None:
            move()
        elif self._to_end and self.decoding is not None:
            self.decode_to_end()

    def _later(self, move: Callable[[], object]) -> bool:
        """While a plan is made, keep ``move`` for when it comes (True); else False."""
        if not self.preparing:
            return False
        self._after_plan = move
        return True

    def _on_plan_failed(self, message: str) -> None:
        self.error = one_line(message)
        self.message.emit("warning", self.error)
        self.decodingChanged.emit()

    def n_layers(self, kind: str) -> int:
        if self.bundle is None:
            return 0
        return n_layers(self.bundle.config, kind)

    # -- inputs -----------------------------------------------------------------------------
    def set_inputs(self, source: str, target: str, *, strategy: Greedy | Sampling | BeamSearch | None = None,
                   ablation: HeadSet | None = None, to_end: bool | None = None) -> None:
        """New sentences (and, given, a strategy and an ablation): re-encode, and decode to the end
        at once when ``to_end`` (default: ``decode_as_you_type``)."""
        self.actionStarted.emit()
        self._take(source, target, strategy, ablation)
        self._to_end = self.decode_as_you_type if to_end is None else to_end
        self._after_plan = None
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
        self.decodingChanged.emit()
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
        self.masked, self._masked_worker = None, None
        self.error = None
        if self.bundle is None:
            self.decodingChanged.emit()
            return
        self._fit_ablation(self.bundle)
        try:
            plan = self._interventions()
            if plan is None:  # a mean ablation's plan is on its way
                self.decodingChanged.emit()
                return
            if self.bundle.config.kind == "encoder-only":  # no decoder: a masked-token prediction instead
                self._predict_masked(plan)
                notices = ()
            elif self.target.strip():
                self.forced = teacher_forced_from_bundle(self.bundle, self.source, self.target, interventions=plan)
                self.forced_cursor = len(self.forced.steps) - 1
                notices = self.forced.notices
            else:
                self.decoding = DecodingSession.from_bundle(self.bundle, self.source, strategy=self.strategy, interventions=plan)
                notices = tuple(self.decoding.notices)
        except DecodingError as exc:
            self.error = one_line(str(exc))
            self.message.emit("warning", self.error)
            self.decodingChanged.emit()
            return
        for n in notices:
            self.message.emit("info", n)
        self.decodingChanged.emit()

    def _predict_masked(self, plan: list) -> None:
        """An encoder-only model's one pass over the source (the user types [MASK] where a token is
        hidden), in a worker: ``masked`` and ``decodingChanged`` when it returns; only the latest counts."""
        from attnviz.qt.workers import FunctionWorker

        worker = FunctionWorker(masked_prediction_from_bundle, self.bundle, self.source, interventions=plan, pool=self._pool)
        self._masked_worker = worker
        self._workers.append(worker)

        def done(result: MaskedPrediction) -> None:
            if worker is self._masked_worker:
                self.masked, self._masked_worker = result, None
                for n in result.notices:
                    self.message.emit("info", n)
                self.decodingChanged.emit()

        def failed(exc: BaseException) -> None:
            if worker is self._masked_worker:
                self._masked_worker = None
                self.error = one_line(str(exc) if isinstance(exc, AttnvizError) else f"{type(exc).__name__}: {exc}")
                self.message.emit("warning", self.error)
                self.decodingChanged.emit()

        worker.returned.connect(done)
        worker.errored.connect(failed)
        worker.finished.connect(lambda: worker in self._workers and self._workers.remove(worker))
        worker.start()

    def finish_prediction(self, msecs: int = 60000) -> None:
        """Wait for the work under way that the current result waits for (a mean ablation's plan,
        then the sentence's masked-token prediction) and take its result (no event loop to wait
        in: ``attnviz export``)."""
        for _ in range(2):  # the plan, then a prediction the plan started
            if self._masked_worker is None and not self.plans.pending:
                return
            self._pool.waitForDone(msecs)
            QtCore.QCoreApplication.sendPostedEvents()

    @property
    def predicting(self) -> bool:
        """A masked-token prediction is running (its result will be shown)."""
        return self._masked_worker is not None

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
            self.decodingChanged.emit()

    def go_to(self, steps: int | None) -> str | None:
        """``steps`` tokens decoded from SOS (``None``: to the end); teacher-forced, the cursor at
        position ``steps`` (1-based). One ``decodingChanged`` for the whole move, none where it is
        already there; a decoding error is said in one line and returned."""
        self.stop_run()
        if self._later(lambda: self.go_to(steps)):
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
        if self._later(lambda: self.replay(tokens, forced, cursor)):
            return None
        if self.forced is not None and cursor is not None:
            self.forced_cursor = max(0, min(cursor, len(self.forced.steps) - 1))
        elif self.decoding is not None and tokens:
            d = self.decoding
            return self._move(lambda: d.replay(list(tokens), forced), translate(
                "session_file", "The session's tokens could not all be decoded again: {error}"))
        self.decodingChanged.emit()
        return None

    def _move(self, fn, wording: str = "{error}") -> str | None:
        """``fn()`` on the decoding, then one ``decodingChanged``; its error said (in ``wording``) and returned."""
        error = None
        try:
            fn()
        except DecodingError as exc:
            error = wording.format(error=exc)
            self.message.emit("warning", error)
        self.decodingChanged.emit()
        return error

    def reset(self) -> None:
        self.actionStarted.emit()
        self.stop_run()
        if self.forced is not None:
            self.forced_cursor = 0
            self.decodingChanged.emit()
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
            self.decodingChanged.emit()
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
        self.decodingChanged.emit()
        return result if result is not None else True

    # -- what the views render --------------------------------------------------------------
    @property
    def current(self) -> DecodingResult | None:
        """The result the views show: the teacher-forced pass, the decoding session, or (an
        encoder-only model) the masked-token prediction. At step 0 the decoding's first row: the
        SOS row, whose attention gives P(y₁ | SOS) that the top-k list shows (:meth:`_sos_row`)."""
        if self.forced is not None:
            return self.forced
        d = self.decoding
        if d is not None:
            return self._sos_row(d) if not d.steps and d.can_step else d
        return self.masked

    def _sos_row(self, d: DecodingSession) -> DecodingResult:
        """``d`` one step on, frozen, with ``d`` itself left at step 0 (the step its top-k was
        peeked for; a sampled token drawn again the same, as ``back`` restores the generator);
        kept while ``d`` and its strategy are the same."""
        key = (d, d.strategy)
        if self._sos is None or self._sos[0] != key:
            try:
                d.step()
                row = d.prefix(1)
                d.back()
            except DecodingError:
                return d
            self._sos = (key, row)
        return self._sos[1]

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

    # -- the frame: what the views draw now, each derived datum built once ---------------------
    def _frame_token(self) -> tuple:
        """What the current frame is of: the result, its step count, its last step and the
        cursor. Cached data of another token is stale (the objects are held, so ids stay unique)."""
        cur = self.current
        if cur is None:
            return (self.bundle,)
        return (self.bundle, cur, len(cur.steps), cur.steps[-1] if cur.steps else None, self.forced_cursor)

    def frame_key(self, parts: Iterable[str]) -> FrameKey:
        """What the data of a view that changes with ``parts`` (of :data:`FRAME_PARTS`) is of now:
        always the bundle and the ablation; ``"source"``: the decoding result (a new sentence, target
        or ablation makes a new one; stepping keeps it: the encoder ran once); ``"step"``: also the
        frame's steps and cursor. ``()``: the model alone."""
        parts = tuple(parts)
        unknown = set(parts) - set(FRAME_PARTS)
        if unknown:
            raise ValueError(f"unknown frame parts {sorted(unknown)} (of {FRAME_PARTS})")
        cur = self.current
        if "step" in parts and cur is not None:
            last = cur.steps[-1] if cur.steps else None
            return FrameKey((self.bundle, cur, last), (self.ablation, len(cur.steps), self.forced_cursor))
        if "source" in parts or "step" in parts:
            return FrameKey((self.bundle, cur), (self.ablation,))
        return FrameKey((self.bundle,), (self.ablation,))

    def derived(self, key: object, build):
        """``build()`` once per frame and ``key``: every view of a step shares one result."""
        token = self._frame_token()
        if len(token) != len(self._frame) or any(a is not b for a, b in zip(token, self._frame)):
            self._frame, self._derived = token, {}
        if key not in self._derived:
            self.builds[key if isinstance(key, str) else ":".join(map(str, key))] += 1
            self._derived[key] = build()
        return self._derived[key]

    def per_model(self, key: str, build):
        """``build()`` once per open bundle and ``key``: what analyses keep from step to step."""
        if self._per_model[0] is not self.bundle:
            self._per_model = (self.bundle, {})
        kept = self._per_model[1]
        if key not in kept:
            kept[key] = build()
        return kept[key]

    def per_source(self, key: str, build):
        """``build()`` once per decoding result (a new sentence, target, model or ablation makes a new
        one; a step keeps it): what the encoder computed, which a long source makes costly."""
        if self._per_source[0] is not self.current:
            self._per_source = (self.current, {})
        kept = self._per_source[1]
        if key not in kept:
            self.builds[key] += 1
            kept[key] = build()
        return kept[key]

    def frozen(self) -> DecodingResult | None:
        """The current result as it stands at this frame, unchanged by later steps: what an
        analysis running in a worker reads (built once per frame)."""
        return self.derived("frozen", lambda: self.current.frozen() if self.current is not None else None)

    def attention_data(self, kind: str) -> AttentionData | None:
        """The current frame's attention of ``kind`` (built once per frame)."""
        return self.derived(("attention", kind), lambda: self._build_attention_data(kind))

    def mask_data(self) -> MaskData | None:
        """The current frame's masks and scores of the decoder self-attention (built once per frame)."""
        return self.derived("mask", self._build_mask_data)

    def _build_attention_data(self, kind: str) -> AttentionData | None:
        cur = self.current
        if cur is None or self.n_layers(kind) == 0:  # a model without layers of this kind has nothing to show
            return None
        if kind == "encoder":  # the encoder ran once for the sentence: its data is built once, not at every step
            return self.per_source("encoder attention", lambda: self._attention_data(cur, kind))
        return self._attention_data(cur, kind)

    def _attention_data(self, cur: DecodingResult, kind: str) -> AttentionData:
        """``kind``'s attention of the current frame; its rollout is computed when first shown."""
        weights = cur.all_attention(kind)
        src, tgt = self.src_pieces(), self.input_pieces()
        rows, cols = (src if kind == "encoder" else tgt), (tgt if kind == "decoder" else src)
        highlight = None if kind == "encoder" else self.current_row()
        form = ScoreForm.of(cur.config, kind)
        if weights.shape[2] == 0:
            return AttentionData(kind, weights, rows, cols, highlight=None, form=form)
        if kind == "cross":  # this frame's rows (the session steps on) through the encoder's rollout, computed once per sentence
            lazy = partial(_rollout, _cross_rollout, self.attention_data("decoder"), weights, self._build_attention_data("encoder"))
        else:
            lazy = partial(_rollout, rollout, weights)
        return AttentionData(kind, weights, rows, cols, highlight=highlight, rollout=lazy, form=form)

    def _build_mask_data(self) -> MaskData | None:
        cur = self.current
        sites = attention_sites(cur.config, "decoder") if cur is not None else []
        if not sites or self.n_rows() == 0:
            return None
        scaled = np.stack([cur.accumulated(site.name("scaled_scores")) for site in sites])
        masked = np.stack([cur.accumulated(site.name("masked_scores")) for site in sites])
        weights = np.stack([cur.accumulated(site.name("weights")) for site in sites])
        bias = np.stack([cur.accumulated(site.name("position_bias")) for site in sites]) if position_biased(cur.config, "decoder") else None
        mask = cur.accumulated(sites[0].name("mask"))
        look_ahead = cur.accumulated("masks.look_ahead")
        tgt_pad = cur.accumulated("masks.tgt_padding")
        src_pad = cur.accumulated("masks.src_padding") if cur.config.cross_attention else None  # a decoder-only model reads no source
        tgt = self.input_pieces()
        return MaskData(
            tgt, tgt, look_ahead, scaled, weights, masked_scores=masked, mask=mask, tgt_padding=tgt_pad,
            src_padding=src_pad, src_labels=self.src_pieces() if src_pad is not None else (), step=self.current_row(),
            position_bias=bias, scaled=cur.config.scale_scores,
        )

    def current_step(self) -> DecodeStep | None:
        if self.decoding is None or not self.decoding.steps:
            return None
        return self.decoding.steps[-1]

    def next_topk(self) -> TopK:
        """The distribution of the next position, P(y_t | y_<t, x), that the user can force from.

        Stepping mode: the session's ``peek()`` (the state is left as it is; the next step reuses
        its model call). Finished decoding: the last step's distribution. Teacher-forced mode: the
        cursor's position.
        """
        if self.forced is not None:
            return self.forced.steps[self.forced_cursor].topk
        d = self.decoding
        if d is None:  # nothing decoded, or a masked-token prediction: no next token
            return ()
        if not d.can_step:
            return d.steps[-1].topk if d.steps else ()
        try:
            return self.decoding.peek().topk
        except DecodingError:
            return ()


def _cross_rollout(decoder: AttentionData | None, cross: np.ndarray, encoder: AttentionData | None) -> np.ndarray | None:
    """Rollout through the decoder down to the source tokens, rows rescaled to sum to 1."""
    enc = encoder.rollout_matrix() if encoder is not None else None
    if enc is None or decoder is None:
        return None
    return decoder_rollout(decoder.weights, cross, enc)["source_normalized"]


def _rollout(compute, *args) -> np.ndarray | None:
    """``compute(*args)``: an attention rollout, or ``None`` when it cannot be computed."""
    try:
        return compute(*args)
    except Exception:  # noqa: BLE001 - a summary that cannot be computed is left out, not fatal
        return None
