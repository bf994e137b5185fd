"""Long work off the UI thread: ``QRunnable`` workers that report through signals.

The shape follows superqt's ``FunctionWorker`` / ``GeneratorWorker``::

    worker = GeneratorWorker(train_epochs, model, data)      # a generator function
    worker.yielded.connect(show_progress)                     # each yielded value
    worker.returned.connect(on_done)                          # the return value
    worker.errored.connect(show_error)                        # the exception
    worker.finished.connect(cleanup)                          # always, last
    worker.start()                                            # runs in QThreadPool
    worker.quit()                                             # cooperative stop

Signals are emitted from the pool thread and delivered in the thread of the receiver
(the GUI thread for widgets). A generator worker checks for ``quit()`` between yields, so
a generator that yields often can be stopped quickly; a plain function cannot be
interrupted and runs to its end (its result is then dropped).

Grad mode is per thread: with ``inference=True`` (the default) the work runs inside
``torch.inference_mode()`` entered in the worker thread itself; torch is imported only
then, so widgets can import this module without torch.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable, Generator
from typing import Any

from PySide6 import QtCore

__all__ = [
    "WorkerSignals",
    "WorkerBase",
    "FunctionWorker",
    "GeneratorWorker",
    "create_worker",
    "active_workers",
    "quit_all_workers",
    "wait_for_workers",
]


class WorkerSignals(QtCore.QObject):
    """The signals of a worker (a QRunnable is not a QObject)."""

    started = QtCore.Signal()
    yielded = QtCore.Signal(object)
    returned = QtCore.Signal(object)
    errored = QtCore.Signal(object)  # the exception (its __traceback__ attached)
    aborted = QtCore.Signal()
    finished = QtCore.Signal()

    def __init__(self, worker: "WorkerBase"):
        super().__init__()
        self._worker = worker
        self.finished.connect(self._on_finished)  # queued: runs in the thread that made the worker

    @QtCore.Slot()
    def _on_finished(self) -> None:
        worker = self._worker
        # Let go of the worker on a later turn of the event loop, never inside its own signal.
        QtCore.QTimer.singleShot(0, lambda: _forget(worker))


def _forget(worker: "WorkerBase") -> None:
    with _LIVE_LOCK:
        _LIVE.discard(worker)


_LIVE: set["WorkerBase"] = set()
_LIVE_LOCK = threading.Lock()


def _inference_context(enabled: bool) -> contextlib.AbstractContextManager:
    if not enabled:
        return contextlib.nullcontext()
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency; stay usable without it
        return contextlib.nullcontext()
    return torch.inference_mode()


class WorkerBase(QtCore.QRunnable):
    """Runs ``work()`` in a ``QThreadPool`` thread and reports through ``self.signals``.

    The signals are also reachable as attributes (``worker.finished.connect(...)``).
    A started worker keeps itself alive until it has finished.
    """

    def __init__(self, *, inference: bool = True, pool: QtCore.QThreadPool | None = None):
        super().__init__()
        self.setAutoDelete(False)  # Python owns the worker
        self.signals = WorkerSignals(self)
        self._inference = inference
        self._pool = pool
        self._abort = threading.Event()
        self._running = threading.Event()
        self._done = threading.Event()
        self._started = False

    # signals as attributes, like superqt
    @property
    def started(self) -> QtCore.SignalInstance:
        return self.signals.started

    @property
    def yielded(self) -> QtCore.SignalInstance:
        return self.signals.yielded

    @property
    def returned(self) -> QtCore.SignalInstance:
        return self.signals.returned

    @property
    def errored(self) -> QtCore.SignalInstance:
        return self.signals.errored

    @property
    def aborted(self) -> QtCore.SignalInstance:
        return self.signals.aborted

    @property
    def finished(self) -> QtCore.SignalInstance:
        return self.signals.finished

    # control -----------------------------------------------------------------------
    def start(self) -> "WorkerBase":
        """Queue the worker in its pool (the global pool unless one was given)."""
        if self._started:
            raise RuntimeError("a worker can only be started once")
        self._started = True
        with _LIVE_LOCK:
            _LIVE.add(self)
        (self._pool or QtCore.QThreadPool.globalInstance()).start(self)
        return self

    def quit(self) -> None:
        """Ask the worker to stop (a generator stops at its next yield)."""
        self._abort.set()

    abort = quit

    @property
    def abort_requested(self) -> bool:
        return self._abort.is_set()

    @property
    def is_running(self) -> bool:
        return self._running.is_set()

    @property
    def is_done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until ``run`` has returned (True) or the timeout passed (False).

        Signals emitted meanwhile are delivered once the caller's event loop runs again.
        """
        return self._done.wait(timeout_s)

    # running -----------------------------------------------------------------------
    def work(self) -> Any:
        raise NotImplementedError

    def run(self) -> None:  # called in the pool thread
        self._running.set()
        try:
            self.signals.started.emit()
            if self._abort.is_set():
                self.signals.aborted.emit()
                return
            with _inference_context(self._inference):
                result = self.work()
            if self._abort.is_set():
                self.signals.aborted.emit()
            else:
                self.signals.returned.emit(result)
        except Exception as exc:  # reported, never raised into Qt
            self.signals.errored.emit(exc)
        finally:
            self._running.clear()
            self._done.set()
            self.signals.finished.emit()


class FunctionWorker(WorkerBase):
    """Runs ``func(*args, **kwargs)``; emits ``returned(result)`` or ``errored(exc)``."""

    def __init__(self, func: Callable[..., Any], *args: Any, inference: bool = True,
                 pool: QtCore.QThreadPool | None = None, **kwargs: Any):
        super().__init__(inference=inference, pool=pool)
        self._func, self._args, self._kwargs = func, args, kwargs

    def work(self) -> Any:
        return self._func(*self._args, **self._kwargs)


class GeneratorWorker(WorkerBase):
    """Runs a generator function; emits ``yielded(value)`` for each value and ``returned``
    with its return value. ``quit()`` stops it at the next yield (``aborted`` is emitted,
    ``returned`` is not). ``send(value)`` passes a value into the generator's next step."""

    def __init__(self, func: Callable[..., Generator], *args: Any, inference: bool = True,
                 pool: QtCore.QThreadPool | None = None, **kwargs: Any):
        super().__init__(inference=inference, pool=pool)
        self._func, self._args, self._kwargs = func, args, kwargs
        self._incoming: Any = None
        self._incoming_lock = threading.Lock()

    def send(self, value: Any) -> None:
        with self._incoming_lock:
            self._incoming = value

    def _take_incoming(self) -> Any:
        with self._incoming_lock:
            value, self._incoming = self._incoming, None
        return value

    def work(self) -> Any:
        gen = self._func(*self._args, **self._kwargs)
        if not isinstance(gen, Generator):
            raise TypeError(f"{getattr(self._func, '__name__', self._func)!r} did not return a generator")
        try:
            value = next(gen)
            while True:
                self.signals.yielded.emit(value)
                if self._abort.is_set():
                    gen.close()
                    return None
                value = gen.send(self._take_incoming())
        except StopIteration as stop:
            return stop.value


def create_worker(func: Callable[..., Any], *args: Any, _start: bool = False, **kwargs: Any) -> WorkerBase:
    """A ``GeneratorWorker`` for a generator function, else a ``FunctionWorker``."""
    import inspect

    cls = GeneratorWorker if inspect.isgeneratorfunction(func) else FunctionWorker
    worker = cls(func, *args, **kwargs)
    if _start:
        worker.start()
    return worker


def active_workers() -> list[WorkerBase]:
    """Workers started and not yet finished."""
    with _LIVE_LOCK:
        return [w for w in _LIVE if not w.is_done]


def quit_all_workers() -> None:
    for worker in active_workers():
        worker.quit()


def wait_for_workers(timeout_ms: int = 5000, *, quit: bool = True) -> bool:
    """Ask every worker to stop (``quit=True``) and wait until all have finished.

    For ``closeEvent``: returns True when every worker ended within ``timeout_ms``. Pending
    signals are then processed, so no queued emission reaches a deleted widget later.
    """
    if quit:
        quit_all_workers()
    deadline = QtCore.QDeadlineTimer(timeout_ms)
    ok = True
    for worker in list(active_workers()):
        remaining = max(0, deadline.remainingTime()) / 1000.0
        ok = worker.wait(remaining) and ok
    pools = {w._pool for w in list(_LIVE) if w._pool is not None} | {QtCore.QThreadPool.globalInstance()}
    for pool in pools:
        ok = pool.waitForDone(max(0, deadline.remainingTime())) and ok
    QtCore.QCoreApplication.sendPostedEvents()
    return ok


@atexit.register
def _join_at_exit() -> None:
    """A script that ends while a worker runs must not tear Python down under it."""
    if active_workers():
        quit_all_workers()
        for worker in active_workers():
            worker.wait(5.0)
