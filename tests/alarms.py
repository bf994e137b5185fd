"""A test that could block on a read (a FIFO, a pipe opened for reading) fails after a while
instead of hanging the suite: ``with fails_after(60, "blocked on a read"): ...``."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def fails_after(seconds: int, message: str) -> Iterator[None]:
    """Raise ``TimeoutError(message)`` in the main thread once the block has run ``seconds``; the previous SIGALRM handler back after."""
    def expire(signum, frame):
        raise TimeoutError(message)

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
