"""Closing the window while a training run is in its final evaluation: after "Stop it and
quit?" the window asks the run to stop and waits at most a second."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6 import QtWidgets
from window_helpers import TIMEOUT_MS

import attnviz.core.training.trainer as trainer_module
from attnviz.qt.main_window import CLOSE_WAIT_S
from attnviz.qt.train.run import TrainRequest
from attnviz.qt.workers import active_workers

pytestmark = pytest.mark.slow  # the whole main window




def test_close_during_the_final_evaluation_returns_within_a_second(qtbot, window, tmp_path, monkeypatch):
    started, release = threading.Event(), threading.Event()

    def slow_final_evaluation(*args, **kwargs):  # the campaign's 21 s final evaluation
        started.set()
        release.wait(30)
        return {}

    monkeypatch.setattr(trainer_module, "final_evaluation", slow_final_evaluation)
    monkeypatch.setattr(QtWidgets.QMessageBox, "question", lambda *a, **k: QtWidgets.QMessageBox.StandardButton.Yes)
    panel = window.train
    req = TrainRequest(data="reverse", n_examples=160, size="tiny", epochs=1, lr=3e-3, warmup=10, batch_tokens=120,
                       out_dir=str(tmp_path / "run"))
    assert panel.start(req)
    qtbot.waitUntil(started.is_set, timeout=TIMEOUT_MS * 4)
    t0 = time.perf_counter()
    try:
        assert window.close()
        elapsed = time.perf_counter() - t0
    finally:
        release.set()
        qtbot.waitUntil(lambda: not active_workers(), timeout=TIMEOUT_MS)
    assert elapsed < CLOSE_WAIT_S + 0.5, elapsed
    assert not window.isVisible()


def test_closing_the_window_stops_and_joins_a_views_own_worker(qtbot, window):
    """A view's long measurement (here the norm-batch view's) is stopped and waited for on close."""
    from attnviz.qt.workers import FunctionWorker

    started = threading.Event()

    def measure():  # a measurement that checks for a stop request, as the norm-batch one does
        started.set()
        while not worker.abort_requested:
            time.sleep(0.01)

    worker = FunctionWorker(measure)
    worker.start()
    assert started.wait(5.0)
    t0 = time.monotonic()
    window.close()
    assert time.monotonic() - t0 < CLOSE_WAIT_S * 4
    assert worker.is_done and worker not in active_workers()
