"""The session's ablation plans: the interventions every run on a sentence takes. A zero or
uniform ablation's plan is made at once; a mean ablation's needs the clean model's decode of the
sentence (its mean over those positions), so it is made in a worker and kept, and the session
runs the sentence when it arrives (:class:`AblationPlans`)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6 import QtCore

from attnviz.core.analysis.ablation import HeadSet, ablation_plan
from attnviz.qt.workers import LatestRun


class AblationPlans(QtCore.QObject):
    """``plan(bundle, heads, source, target)``: the plan, or ``None`` while a worker makes it
    (``ready`` is emitted when it is kept; ``failed(message)`` when it could not be made). Only the
    latest request counts; the last plan made is kept."""

    ready = QtCore.Signal(object)  # the move kept for when the plan came (wait), or None
    failed = QtCore.Signal(str)

    def __init__(self, pool: QtCore.QThreadPool, workers: list, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._run = LatestRun(pool, workers, self)  # the session's pool and workers: its close waits for them
        self._run.returned.connect(self._done)
        self._run.errored.connect(lambda exc: self.failed.emit(str(exc) or type(exc).__name__))
        self._kept: tuple[tuple, list] | None = None
        self._asked: tuple | None = None  # the key of the plan being made
        self._then: Callable[[], object] | None = None  # a move asked for while it is made

    @staticmethod
    def _key(bundle, heads: HeadSet, source: str, target: str) -> tuple:
        return (id(bundle), bundle, heads, source, target.strip())

    def plan(self, bundle, heads: HeadSet, source: str, target: str) -> list | None:
        self._then = None  # a new action: a move kept for an earlier one is dropped
        if not heads or heads.kind != "mean":
            return ablation_plan(bundle, heads, source, target)
        key = self._key(bundle, heads, source, target)
        if self._kept is not None and self._kept[0] == key:
            return self._kept[1]
        if not (self.pending and self._asked == key):  # not already being made
            self._asked = key
            self._run.start(ablation_plan, bundle, heads, source, target)
        return None

    @property
    def pending(self) -> bool:
        return self._run.pending

    def drop(self) -> None:
        """Forget the request under way (a new model, or the ablation taken off)."""
        self._run.drop()
        self._then = None

    def wait(self, move: Callable[[], object]) -> bool:
        """While a plan is made, keep ``move`` for when it comes (True); else False."""
        if not self.pending:
            return False
        self._then = move
        return True

    def _done(self, plan: list) -> None:
        self._kept, move, self._then = (self._asked, plan), self._then, None
        self.ready.emit(move)
