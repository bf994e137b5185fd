"""The doors: ``attnviz`` without a display says so clearly; the app's error hook shows messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

ROOT = Path(__file__).resolve().parents[2]


def test_gui_without_a_display_is_a_clear_message():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    for cmd in ([sys.executable, "-m", "attnviz"], [sys.executable, str(ROOT / "main.py")]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 2, r.stderr
        assert "needs a display" in r.stderr and "Traceback" not in r.stderr


def test_help_lists_every_command():
    r = subprocess.run([sys.executable, "-m", "attnviz", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    for cmd in ("gui", "train", "translate", "trace", "export"):
        assert cmd in r.stdout


@pytest.mark.slow
def test_unexpected_errors_become_window_messages(qtbot, tmp_path, monkeypatch):
    from attnviz.qt.app import install_error_hook
    from attnviz.qt.main_window import MainWindow

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    w = MainWindow(settings=QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    qtbot.waitUntil(lambda: w.session.bundle is not None, timeout=30000)
    monkeypatch.setattr(QtWidgets.QApplication.instance(), "_attnviz_window", w, raising=False)  # as run_app sets it (another test's window may be there)
    install_error_hook(w)
    try:
        raise RuntimeError("boom in a slot")
    except RuntimeError:
        sys.excepthook(*sys.exc_info())
    assert w.message_bar.property("level") == "error" and "boom in a slot" in w.message_bar.text()  # data, not UI text
    w.session.stop_run()
    w.session.wait_for_workers(5000)
