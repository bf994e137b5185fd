"""Presentation mode (View → Presentation, F11): one view fills a full-screen window in larger
type with the step controls; leaving puts it back where it was, the window's layout unchanged."""

from __future__ import annotations

import pytest
from PySide6 import QtGui, QtWidgets
from window_helpers import wait_idle

from attnviz.qt.presentation import FONT_SCALE

pytestmark = [pytest.mark.slow, pytest.mark.window_size(1024, 700)]  # the whole main window, at a projector's size


def _presentation() -> QtWidgets.QWidget | None:
    return next((w for w in QtWidgets.QApplication.topLevelWidgets() if w.objectName() == "presentation" and w.isVisible()), None)


def test_the_grid_is_presented_stepped_and_put_back(qtbot, window, tmp_path):
    frame = window.frames["grid"]
    layout_before = bytes(window.layout_state())
    central = frame.parentWidget()
    index = central.layout().indexOf(frame)
    window.session.reset()
    wait_idle(qtbot, window)
    window.findChild(QtGui.QAction, "presentationAction").trigger()
    shown = _presentation()
    assert shown is not None and frame.parentWidget() is shown and frame.isVisible()
    assert shown.font().pointSizeF() == pytest.approx(window.font().pointSizeF() * FONT_SCALE)
    canvas = window.grid.canvas
    qtbot.waitUntil(lambda: canvas.transform().m11() == pytest.approx(FONT_SCALE, rel=0.05))  # the figure drawn larger, its text too
    steps = len(window.session.decoding.steps)
    shown.findChild(QtWidgets.QToolButton, "presentation_step").click()
    wait_idle(qtbot, window)
    assert len(window.session.decoding.steps) == steps + 1
    label = shown.findChild(QtWidgets.QLabel, "presentationStep")
    assert label.text() == window.status.step_label.text() and str(steps + 1) in label.text()
    shown.grab().save(str(tmp_path / "presentation.png"))
    shown.close()
    qtbot.waitUntil(lambda: _presentation() is None)
    assert frame.parentWidget() is central and central.layout().indexOf(frame) == index and frame.isVisible()
    assert canvas.transform().m11() == pytest.approx(1.0)
    assert bytes(window.layout_state()) == layout_before


def test_a_dock_view_goes_back_to_its_dock(qtbot, window):
    dock = window.docks["positionalDock"]
    frame = window.frames["pe"]
    shown = window.presentation.enter("pe")
    assert shown is not None and frame.parentWidget() is shown
    assert window.presentation.enter("grid") is None  # one at a time
    window.acts.presentation.trigger()  # F11 again leaves
    qtbot.waitUntil(lambda: _presentation() is None)
    assert dock.widget() is frame
