"""The app's start as a user meets it (a real process, ``python -m attnviz``): a small window says
what is happening before the heavy imports, then the main window, the model and the first decoded
view follow, in that order (``ATTNVIZ_TIMELINE`` records the moments and quits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from PySide6 import QtWidgets

from attnviz.qt.app import TIMELINE_ENV, show_splash

pytestmark = pytest.mark.slow  # a whole app process


def test_the_start_shows_a_window_first_then_the_decoded_model(tmp_path):
    out = tmp_path / "timeline.json"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", TIMELINE_ENV: str(out), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "HOME": str(tmp_path)}
    started = time.time()
    done = subprocess.run([sys.executable, "-m", "attnviz", "--src", "我爱你。"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    t = json.loads(out.read_text())
    assert started < t["splash"] < t["window"] <= t["loaded"] <= t["decoded"]


def test_the_splash_is_painted_at_once_with_its_text(qapp):
    splash = show_splash(qapp)
    try:
        assert splash.objectName() == "startSplash" and splash.isVisible() and splash.text().strip()
        assert splash.grab().width() > 100
    finally:
        splash.close()
    assert isinstance(splash, QtWidgets.QLabel)
