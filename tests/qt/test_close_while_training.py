"""Closing the window while a training run is in its final evaluation: after "Stop it and
quit?" the window asks the run to stop and waits at most a second."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6 import QtWidgets
from window_helpers import TIMEOUT_MS, close_window, open_window

import attnviz.core.training.trainer as trainer_module
from attnviz.qt.main_window import CLOSE_WAIT_S
from attnviz.qt.train.run import TrainRequest
from attnviz.qt.workers import active_workers

pytestmark = pytest.mark.slow  # the whole main window


@pytest.fixture
def window(qtbot, tmp_path):
    w = open_window(qtbot, tmp_path)
    yield w
    close_window(w)


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
