"""Workers: signals, inference mode in the worker thread, quit, and a PySide6 guard."""

from __future__ import annotations

import sys
import threading

import pytest
import torch
from PySide6 import QtCore

from attnviz.qt.workers import FunctionWorker, active_workers


def test_function_worker_returns_in_the_gui_thread(qtbot):
    seen = {}

    def on_returned(value):
        seen["value"] = value
        seen["gui_thread"] = QtCore.QThread.currentThread() is QtCore.QCoreApplication.instance().thread()

    worker = FunctionWorker(lambda a, b: (a + b, threading.current_thread() is threading.main_thread()), 2, b=3)
    worker.returned.connect(on_returned)
    with qtbot.waitSignal(worker.finished, timeout=5000):
        worker.start()
    assert seen["value"] == (5, False)  # computed off the main thread
    assert seen["gui_thread"] is True  # reported in the GUI thread
    qtbot.wait_until(lambda: worker not in active_workers())


def test_errors_are_reported_not_raised(qtbot):
    def boom():
        raise ValueError("bad bundle")

    worker = FunctionWorker(boom)
    with qtbot.waitSignal(worker.errored, timeout=5000) as blocker:
        worker.start()
    assert isinstance(blocker.args[0], ValueError) and "bad bundle" in str(blocker.args[0])  # data, not UI text


def test_inference_mode_is_entered_in_the_worker_thread(qtbot):
    def probe():
        x = torch.ones(2, requires_grad=True)
        return torch.is_inference_mode_enabled(), (x * 2).requires_grad

    worker = FunctionWorker(probe)
    with qtbot.waitSignal(worker.returned, timeout=5000) as blocker:
        worker.start()
    assert blocker.args[0] == (True, False)
    assert not torch.is_inference_mode_enabled()  # the GUI thread is untouched

    plain = FunctionWorker(probe, inference=False)
    with qtbot.waitSignal(plain.returned, timeout=5000) as blocker:
        plain.start()
    assert blocker.args[0] == (False, True)


def test_quit_drops_the_result(qtbot):
    release = threading.Event()

    def slow():
        release.wait(5)
        return "late"

    worker = FunctionWorker(slow)
    returned = []
    worker.returned.connect(returned.append)
    with qtbot.waitSignal(worker.started, timeout=5000):
        worker.start()
    with qtbot.waitSignals([worker.aborted, worker.finished], timeout=5000):
        worker.quit()
        release.set()
    assert worker.abort_requested and worker.is_done and returned == []


def test_active_workers_are_those_still_running(qtbot):
    gate = threading.Event()
    workers = [FunctionWorker(gate.wait, 5).start() for _ in range(3)]
    assert all(w in active_workers() for w in workers)
    gate.set()
    assert all(w.wait(5) for w in workers)
    assert not any(w in active_workers() for w in workers)


def test_a_worker_starts_once(qtbot):
    worker = FunctionWorker(lambda: 1)
    with qtbot.waitSignal(worker.finished, timeout=5000):
        worker.start()
    with pytest.raises(RuntimeError):
        worker.start()


class _Emitter(QtCore.QObject):
    flag = QtCore.Signal(bool)


def test_signal_emits_keep_references_to_true(qtbot):
    """PySide6 6.12.0 drops a reference to True on every emit and aborts after ~1,000."""
    emitter = _Emitter()
    received = []
    emitter.flag.connect(received.append)
    before = sys.getrefcount(True)
    for _ in range(10_000):
        emitter.flag.emit(True)
    del received[:]
    after = sys.getrefcount(True)
    assert after >= before - 100, f"refcount of True fell from {before} to {after}"


def test_a_result_for_a_deleted_widget_is_dropped(qtbot):
    from PySide6 import QtWidgets

    from attnviz.qt.workers import while_alive

    widget, release, seen = QtWidgets.QLabel(), threading.Event(), []
    worker = FunctionWorker(lambda: release.wait(5) and "late")
    worker.returned.connect(while_alive(widget, lambda text: seen.append(widget.setText(text))))
    worker.start()
    widget.deleteLater()
    QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    with qtbot.waitSignal(worker.finished, timeout=5000):
        release.set()
    qtbot.wait(50)
    assert seen == []  # setText on the deleted label would have raised "already deleted"
    kept = QtWidgets.QLabel()
    again = FunctionWorker(lambda: "kept")
    again.returned.connect(while_alive(kept, kept.setText))
    with qtbot.waitSignal(again.finished, timeout=5000):
        again.start()
    qtbot.wait_until(lambda: kept.text() == "kept")
