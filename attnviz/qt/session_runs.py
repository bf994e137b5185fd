"""What a session's current result waits for, each in a worker where only the latest request
counts: a mean ablation's plan, a typed target's teacher-forced pass and an encoder-only model's
masked-token prediction; and the move asked for while one of them runs.

The session owns its fields: these objects only run the work and report it (the session connects
to ``plans``, ``forcing`` and ``prediction`` and takes their results itself).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6 import QtCore

from attnviz.qt.ablation_plans import AblationPlans
from attnviz.qt.workers import LatestRun


class SessionRuns(QtCore.QObject):
    """The passes of one session: ``plans`` (:class:`AblationPlans`), ``forcing`` and ``prediction``
    (:class:`LatestRun`), on the session's ``pool`` and list of ``workers``."""

    def __init__(self, pool: QtCore.QThreadPool, workers: list, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._pool = pool
        self.plans = AblationPlans(pool, workers, self)  # a mean ablation's plan
        self.forcing = LatestRun(pool, workers, self)  # a typed target's teacher-forced pass
        self.prediction = LatestRun(pool, workers, self)  # an encoder-only model's masked-token prediction
        self._after: Callable[[], object] | None = None  # the move asked for while the pass runs

    @property
    def pending(self) -> bool:
        """The current result waits for a worker: a plan, a teacher-forced pass or a prediction."""
        return self.plans.pending or self.forcing.pending or self.prediction.pending

    def wait(self, move: Callable[[], object]) -> bool:
        """While a plan or a teacher-forced pass is on its way, keep ``move`` for when it comes
        (True); else False."""
        if self.plans.wait(move):
            return True
        if self.forcing.pending:
            self._after = move
            return True
        return False

    def take_move(self) -> Callable[[], object] | None:
        """The move kept for the pass that has come (``None``: none), forgotten here."""
        move, self._after = self._after, None
        return move

    def drop(self) -> None:
        """Forget the passes under way and the move that waited for one (a plan is kept)."""
        self.prediction.drop()
        self.forcing.drop()
        self._after = None

    def finish(self, msecs: int = 60000) -> None:
        """Wait for the work under way and deliver its result (no event loop to wait in)."""
        for _ in range(2):  # the plan, then a pass the plan started
            if not self.pending:
                return
            self._pool.waitForDone(msecs)
            QtCore.QCoreApplication.sendPostedEvents()
