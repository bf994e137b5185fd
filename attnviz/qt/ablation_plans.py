"""The session's ablation plans: the interventions every run on a sentence takes. A zero or
uniform ablation's plan is made at once; a mean ablation's needs the clean model's decode of the
sentence (its mean over those positions), so it is made in a worker and kept, and the session
runs the sentence when it arrives (:class:`AblationPlans`)."""

from __future__ import annotations

from PySide6 import QtCore

from attnviz.core.analysis.ablation import HeadSet, ablation_plan


class AblationPlans(QtCore.QObject):
    """``plan(bundle, heads, source, target)``: the plan, or ``None`` while a worker makes it
    (``ready`` is emitted when it is kept; ``failed(message)`` when it could not be made). Only the
    latest request counts; the last plan made is kept."""

    ready = QtCore.Signal()
    failed = QtCore.Signal(str)

    def __init__(self, pool: QtCore.QThreadPool, workers: list, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._pool, self._workers = pool, workers  # the session's: its close waits for them
        self._kept: tuple[tuple, list] | None = None
        self._worker = None

    @staticmethod
    def _key(bundle, heads: HeadSet, source: str, target: str) -> tuple:
        return (id(bundle), bundle, heads, source, target.strip())

    def plan(self, bundle, heads: HeadSet, source: str, target: str) -> list | None:
        if not heads or heads.kind != "mean":
            return ablation_plan(bundle, heads, source, target)
        key = self._key(bundle, heads, source, target)
        if self._kept is not None and self._kept[0] == key:
            return self._kept[1]
        self._request(key, bundle, heads, source, target)
        return None

    @property
    def pending(self) -> bool:
        return self._worker is not None

    def drop(self) -> None:
        """Forget the request under way (a new model, or the ablation taken off)."""
        self._worker = None

    def _request(self, key: tuple, bundle, heads: HeadSet, source: str, target: str) -> None:
        from attnviz.qt.workers import FunctionWorker

        if self._worker is not None and self._worker.key == key:
            return  # already being made
        worker = FunctionWorker(ablation_plan, bundle, heads, source, target, pool=self._pool)
        worker.key = key
        self._worker = worker
        self._workers.append(worker)
        worker.returned.connect(lambda plan: self._done(worker, plan))
        worker.errored.connect(lambda exc: self._failed(worker, exc))
        worker.finished.connect(lambda: worker in self._workers and self._workers.remove(worker))
        worker.start()

    def _done(self, worker, plan: list) -> None:
        if worker is self._worker:
            self._worker, self._kept = None, (worker.key, plan)
            self.ready.emit()

    def _failed(self, worker, exc: BaseException) -> None:
        if worker is self._worker:
            self._worker = None
            self.failed.emit(str(exc) or type(exc).__name__)
