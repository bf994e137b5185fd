"""Export → Animation and Export → Web Page in the window: the active view over every step of the
sentence on screen, written where the user chose, the window's own decoding left as it was."""

from __future__ import annotations

import pytest
from PIL import Image
from PySide6 import QtGui, QtWidgets
from window_helpers import close_window, open_window

pytestmark = pytest.mark.slow  # a whole window


def test_export_animation_writes_the_active_view_and_leaves_the_window_alone(qtbot, tmp_path, monkeypatch):
    w = open_window(qtbot, tmp_path)
    try:
        steps_before = len(w.session.decoding.steps)
        out = tmp_path / "grid.gif"
        monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
        w.grid.setFocus()
        action = w.findChild(QtGui.QAction, "exportAnimationAction")
        assert action is not None and action.isEnabled()
        action.trigger()
        assert Image.open(out).n_frames == steps_before
        assert len(w.session.decoding.steps) == steps_before and w.session.decoding.finished
        assert str(out) in w.message_bar.text()
        folder = tmp_path / "page"
        monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(folder), ""))
        page = w.findChild(QtGui.QAction, "exportWebPageAction")
        assert page is not None and page.isEnabled()
        page.trigger()
        html = (folder / "index.html").read_text(encoding="utf-8")
        assert html.count('data-step-item="1"') >= 1 and f'max="{steps_before}"' in html
        assert len(w.session.decoding.steps) == steps_before
    finally:
        close_window(w)


def test_export_training_animation_draws_one_frame_per_snapshot(qtbot, tmp_path, monkeypatch):
    """File → Export Training Animation: the bundled model's first probe sentence at each of the
    training snapshots its meta.json keeps, one GIF frame each."""
    w = open_window(qtbot, tmp_path)
    try:
        out = tmp_path / "training.gif"
        monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
        action = w.findChild(QtGui.QAction, "exportTrainingAnimationAction")
        assert action is not None and action.isEnabled()
        action.trigger()
        assert Image.open(out).n_frames == len(w.session.bundle.meta["snapshots"])
        assert str(out) in w.message_bar.text()
    finally:
        close_window(w)
