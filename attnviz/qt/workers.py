"""Long work off the UI thread: ``QRunnable`` workers that report through signals.

The shape follows superqt's ``FunctionWorker``::

    worker = FunctionWorker(load_bundle, path, pool=pool)     # a function and its arguments
    worker.returned.connect(on_done)                          # the return value
    worker.errored.connect(show_error)                        # the exception
    worker.finished.connect(cleanup)                          # always, last
    worker.start()                                            # runs in QThreadPool
    worker.quit()                                             # drop the result: ``aborted`` instead

Signals are emitted from the pool thread and delivered in the thread of the receiver
(the GUI thread for widgets). A function cannot be interrupted: after ``quit()`` it runs to its
end and its result is dropped (long work that must stop early has its own stop request, like
the ``Trainer``'s ``stop()``). A worker still running when Python exits is waited for.

Grad mode is per thread: with ``inference=True`` (the default) the work runs inside
``torch.inference_mode()`` entered in the worker thread itself; torch is imported only
then, so widgets can import this module without torch.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6 import QtCore


class WorkerSignals(QtCore.QObject):
    """The signals of a worker (a QRunnable is not a QObject)."""

    started = QtCore.Signal()
    returned = QtCore.Signal(object)
    errored = QtCore.Signal(object)  # the exception (its __traceback__ attached)
    aborted = QtCore.Signal()
    finished = QtCore.Signal()

    def __init__(self, worker: "FunctionWorker"):
        super().__init__()
        self._worker = worker
        self.finished.connect(self._on_finished)  # queued: runs in the thread that made the worker

    @QtCore.Slot()
    def _on_finished(self) -> None:
        worker = self._worker
        # Let go of the worker on a later turn of the event loop, never inside its own signal.
        QtCore.QTimer.singleShot(0, lambda: _forget(worker))


def while_alive(owner: QtCore.QObject, slot: Callable[..., Any]) -> Callable[..., None]:
    """``slot``, skipped once ``owner``'s C++ object is deleted: a worker may report after the
    widget that asked for its result is gone (a closed window, a replaced panel)."""

    def call(*args: Any) -> None:
        if shiboken6.isValid(owner):
            slot(*args)

    return call


def _emit(signal: QtCore.SignalInstance, *args: Any) -> None:
    """``signal.emit(*args)``, unless the signals' object is already gone (Python shutting down)."""
    try:
        signal.emit(*args)
    except RuntimeError:
        pass


def _forget(worker: "FunctionWorker") -> None:
    with _LIVE_LOCK:
        _LIVE.discard(worker)


_LIVE: set["FunctionWorker"] = set()
_LIVE_LOCK = threading.Lock()


def _inference_context(enabled: bool) -> contextlib.AbstractContextManager:
    if not enabled:
        return contextlib.nullcontext()
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency; stay usable without it
        return contextlib.nullcontext()
    return torch.inference_mode()


class FunctionWorker(QtCore.QRunnable):
    """Runs ``func(*args, **kwargs)`` in a ``QThreadPool`` thread and reports through ``self.signals``:
    ``returned(result)`` or ``errored(exc)`` (``aborted`` after ``quit()``), then ``finished``.

    The signals are also reachable as attributes (``worker.finished.connect(...)``).
    A started worker keeps itself alive until it has finished.
    """

    def __init__(self, func: Callable[..., Any], *args: Any, inference: bool = True,
                 pool: QtCore.QThreadPool | None = None, **kwargs: Any):
        super().__init__()
        self._func, self._args, self._kwargs = func, args, kwargs
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
    def start(self) -> "FunctionWorker":
        """Queue the worker in its pool (the global pool unless one was given)."""
        if self._started:
            raise RuntimeError("a worker can only be started once")
        self._started = True
        with _LIVE_LOCK:
            _LIVE.add(self)
        (self._pool or QtCore.QThreadPool.globalInstance()).start(self)
        return self

    def quit(self) -> None:
        """Ask the worker to stop: it emits ``aborted`` instead of ``returned`` (a function that
        has begun still runs to its end)."""
        self._abort.set()

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
    def run(self) -> None:  # called in the pool thread
        self._running.set()
        try:
            _emit(self.signals.started)
            if self._abort.is_set():
                _emit(self.signals.aborted)
                return
            with _inference_context(self._inference):
                result = self._func(*self._args, **self._kwargs)
            if self._abort.is_set():
                _emit(self.signals.aborted)
            else:
                _emit(self.signals.returned, result)
        except Exception as exc:  # reported, never raised into Qt
            _emit(self.signals.errored, exc)
        finally:
            self._running.clear()
            self._done.set()
            _emit(self.signals.finished)


class LatestRun(QtCore.QObject):
    """One kind of work where only the latest request counts (a model opened, a sentence's
    prediction, an ablation's plan): :meth:`start` runs it in a worker and supersedes the one under
    way; ``returned(value)`` / ``errored(exc)`` come for the latest alone. ``workers`` is the
    owner's list of workers under way (its close quits and waits for them)."""

    returned = QtCore.Signal(object)
    errored = QtCore.Signal(object)

    def __init__(self, pool: QtCore.QThreadPool, workers: list, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._pool, self._workers = pool, workers
        self.worker: FunctionWorker | None = None  # the latest, until it reports

    def start(self, func: Callable[..., Any], *args: Any, inference: bool = True, **kwargs: Any) -> FunctionWorker:
        worker = FunctionWorker(func, *args, inference=inference, pool=self._pool, **kwargs)
        self.worker = worker
        self._workers.append(worker)
        worker.returned.connect(lambda value: self._report(worker, self.returned, value))
        worker.errored.connect(lambda exc: self._report(worker, self.errored, exc))
        worker.finished.connect(lambda: worker in self._workers and self._workers.remove(worker))
        return worker.start()

    @property
    def pending(self) -> bool:
        return self.worker is not None

    def drop(self, quit: bool = False) -> None:
        """Forget the request under way (``quit``: ask its worker to stop too)."""
        if quit and self.worker is not None:
            self.worker.quit()
        self.worker = None

    def _report(self, worker: FunctionWorker, signal: QtCore.SignalInstance, value: Any) -> None:
        if worker is self.worker:
            self.worker = None
            signal.emit(value)


def active_workers() -> list[FunctionWorker]:
    """Workers started and not yet finished."""
    with _LIVE_LOCK:
        return [w for w in _LIVE if not w.is_done]


def stop_workers(timeout_s: float) -> bool:
    """Ask every running worker to stop and wait for them (``timeout_s`` in all); True when all ended."""
    workers = active_workers()
    for worker in workers:
        worker.quit()
    deadline = time.monotonic() + timeout_s
    return all(worker.wait(max(0.0, deadline - time.monotonic())) for worker in workers)


@atexit.register
def _join_at_exit() -> None:
    """A script that ends while a worker runs must not tear Python down under it."""
    stop_workers(5.0)
