"""The analyses that call the model, run off the UI thread: :class:`Analysis` (a function and its
arguments, all frozen: a frozen decoding result, token ids, texts) and :class:`Analyses`, which
runs one per view in a worker, drops a superseded one's result, and hands the latest to the view.

A view's spec returns an :class:`Analysis` where its data needs the model (a comparison of two
sources, a teacher-forced pass against a free one, the logit lens, one head's walkthrough, a
batch through the norms); the :class:`~attnviz.qt.views.registry.ViewSet` submits it here and
shows its result when it arrives. ``attnviz export`` has no event loop to wait in: it runs an
analysis inline (:meth:`Analysis.run`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6 import QtCore

from attnviz.qt.turns import Turns
from attnviz.qt.workers import FunctionWorker, while_alive


@dataclass(frozen=True)
class Analysis:
    """``fn(*args)``: work whose result a view shows, then ``finish(result)`` (in the UI thread:
    cheap, e.g. pairing it with the frame's cursor). The arguments must not change while it runs
    (a frozen result, tuples, strings, the model's weights). ``gradients``: it differentiates
    (attributions), so its worker runs outside torch's inference mode."""

    fn: Callable[..., Any]
    args: tuple = ()
    finish: Callable[[Any], Any] | None = None
    gradients: bool = False

    def run(self) -> Any:
        return self.done(self.fn(*self.args))

    def done(self, result: Any) -> Any:
        return result if self.finish is None else self.finish(result)

    def same_work(self, other: Analysis) -> bool:
        """``other`` computes the same: the same function of the same arguments (objects by
        identity, plain values by equality)."""
        return self.fn is other.fn and len(self.args) == len(other.args) and all(map(_same, self.args, other.args))


def _same(a: object, b: object) -> bool:
    return a is b or (type(a) is type(b) and isinstance(a, (str, int, float, bool, tuple)) and a == b)


class Analyses(QtCore.QObject):
    """One worker per key (a view's name): a new submission supersedes the running one, whose
    result is dropped when it arrives. The last result of each key is kept: the same work
    submitted again (a new step that leaves its inputs as they were) is answered at once.
    ``counts`` says how many were submitted, reused, shown, dropped and failed.

    Results that arrive together are handed to their views over several turns of the event loop
    (one, then more within the turn's budget: :class:`~attnviz.qt.turns.Turns`), so that the views
    drawing them do not hold the keyboard and the paint up all at once."""

    failed = QtCore.Signal(str, str)  # key, one-line message

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._latest: dict[object, FunctionWorker] = {}
        self._kept: dict[object, tuple[Analysis, Any]] = {}  # each key's last work and its result
        self._arrived: dict[object, Callable[[], None]] = {}  # results not handed over yet, in arrival order
        self._turns = Turns(self, self._hand_over)
        self.counts: Counter[str] = Counter()

    def submit(self, key: object, analysis: Analysis, done: Callable[[Any], None]) -> FunctionWorker | None:
        """Run ``analysis`` in a worker; ``done(data)`` in the UI thread, unless another
        submission with ``key`` came meanwhile (``None``: answered at once from the kept result)."""
        old = self._latest.pop(key, None)
        if old is not None:
            old.quit()
        if self._arrived.pop(key, None) is not None:  # an older result not handed over yet: superseded too
            self.counts["dropped"] += 1
        self.counts["submitted"] += 1
        kept = self._kept.get(key)
        if kept is not None and kept[0].same_work(analysis):
            self.counts["reused"] += 1
            done(analysis.done(kept[1]))
            return None
        worker = FunctionWorker(analysis.fn, *analysis.args, inference=not analysis.gradients)
        self._latest[key] = worker
        worker.returned.connect(while_alive(self, lambda result: self._returned(key, worker, analysis, result, done)))
        worker.errored.connect(while_alive(self, lambda exc: self._errored(key, worker, exc)))
        worker.aborted.connect(while_alive(self, lambda: self._dropped(key, worker)))
        return worker.start()

    def _current(self, key: object, worker: FunctionWorker) -> bool:
        if self._latest.get(key) is not worker:
            self.counts["dropped"] += 1
            return False
        del self._latest[key]
        return True

    def _returned(self, key: object, worker: FunctionWorker, analysis: Analysis, result: Any, done: Callable[[Any], None]) -> None:
        if self._current(key, worker):
            self.counts["shown"] += 1
            self._kept[key] = (analysis, result)
            self._arrived[key] = lambda: done(analysis.done(result))
            self._turns.later()

    def _hand_over(self) -> None:
        """Hand the arrived results to their views: one, then more while this turn is within budget."""
        self._turns.begin()
        while self._arrived:
            key = next(iter(self._arrived))
            self._arrived.pop(key)()
            if self._arrived and self._turns.spent():
                self._turns.later()
                return

    def _errored(self, key: object, worker: FunctionWorker, exc: BaseException) -> None:
        if self._current(key, worker):
            self.counts["failed"] += 1
            self.failed.emit(str(key), f"{type(exc).__name__}: {exc}")

    def _dropped(self, key: object, worker: FunctionWorker) -> None:
        if self._latest.get(key) is worker:
            del self._latest[key]
        self.counts["dropped"] += 1

    def pending(self) -> bool:
        """An analysis is still running or its result is not shown yet."""
        return bool(self._latest or self._arrived)

    def cancel(self) -> None:
        """Drop every running analysis's result and every kept one (a new model, a closing window)."""
        for worker in self._latest.values():
            worker.quit()
        self._kept.clear()
        self._arrived.clear()

    def wait(self, timeout_s: float = 60.0) -> bool:
        """Run the event loop until every result is shown (True) or ``timeout_s`` passed (False):
        for tests, exports and scripted screenshots."""
        deadline = time.monotonic() + timeout_s
        app = QtCore.QCoreApplication.instance()
        while self.pending() and time.monotonic() < deadline:
            for worker in list(self._latest.values()):
                worker.wait(0.005)
            app.processEvents()
        return not self.pending()
