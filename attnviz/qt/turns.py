"""``Turns``: work spread over turns of the event loop, so that none holds the keyboard and the
paint up for long. Each turn does some of it, then more while it is within ``TURN_BUDGET_S``, and
leaves the rest to the next turn through a zero timer (a timer, not a queued call: the keyboard
and other timers go between)."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6 import QtCore

TURN_BUDGET_S = 0.03  # how long one turn goes on doing more of the work


class Turns:
    """``fn`` runs a turn: it calls :meth:`begin`, does a part, asks :meth:`spent`, and calls
    :meth:`later` for the rest."""

    def __init__(self, owner: QtCore.QObject, fn: Callable[[], None]):
        self._timer = QtCore.QTimer(owner, singleShot=True, interval=0)
        self._timer.timeout.connect(fn)
        self._start = 0.0

    def begin(self) -> None:
        self._start = time.perf_counter()

    def spent(self) -> bool:
        """This turn has gone on for its budget."""
        return time.perf_counter() - self._start > TURN_BUDGET_S

    def later(self) -> None:
        """Run ``fn`` again on the next turn."""
        self._timer.start()

    def pending(self) -> bool:
        return self._timer.isActive()
