"""A seeded random walk over every family's tiny model (issue: every family on every path): the
window opens it, every view is raised, 60 random user actions run, and the interface switches
language, with no exception anywhere."""

from __future__ import annotations

import pytest
from random_gui import RandomUser, recording_excepthook
from window_helpers import TIMEOUT_MS, close_window, wait_idle

from attnviz.qt.i18n import current_language, install

pytestmark = pytest.mark.slow  # the whole main window

FAMILIES = ("bart", "mbart", "t5", "t5-v1.1", "gpt2", "bert")


def _open(qtbot, window, path) -> None:
    window.open_model(path)
    qtbot.waitUntil(lambda: window.session.bundle is not None and window.session.bundle.path == path, timeout=TIMEOUT_MS)
    wait_idle(qtbot, window)


def _raise_every_view(qtbot, window) -> None:
    for dock in window.docks.values():
        dock.show()
        dock.raise_()
        wait_idle(qtbot, window)


@pytest.mark.parametrize("family", FAMILIES)
def test_random_actions_on_every_family_raise_nothing(qtbot, window, tiny_family, tmp_path, family):
    path = tiny_family(family).path
    with recording_excepthook() as errors:
        _open(qtbot, window, path)
        _raise_every_view(qtbot, window)
        user = RandomUser(window, sum(map(ord, family)), tmp_path, [], lambda: wait_idle(qtbot, window))
        user.run(60)
        wait_idle(qtbot, window)
    assert not errors, errors[0]
    assert sum(user.counts.values()) == 60
    assert window.session.bundle.path == path and window.message_bar.text().count("\n") == 0


def test_a_family_model_survives_a_language_switch(qtbot, window, tiny_family):
    path = tiny_family("t5").path
    before = current_language()
    with recording_excepthook() as errors:
        _open(qtbot, window, path)
        successor = window.switch_language("zh_CN" if before != "zh_CN" else "en")
        try:
            assert successor is not None
            qtbot.addWidget(successor)
            qtbot.waitUntil(lambda: successor.session.bundle is not None, timeout=TIMEOUT_MS)
            wait_idle(qtbot, successor)
            _raise_every_view(qtbot, successor)
            assert successor.session.bundle.path == path
        finally:
            if successor is not None:
                close_window(successor)
            install(before)
    assert not errors, errors[0]


@pytest.mark.window_size(1366, 768)
def test_after_a_language_switch_no_stray_tab_bar_is_left(qtbot, window):
    """Qt can leave a copy of a tabified dock group's tab bar over the menus or the status bar once
    a layout is restored (the window is built again in the new language): every tab bar shown sits
    inside the dock area, and no two show the same tabs."""
    from PySide6 import QtWidgets

    before = current_language()
    successor = window.switch_language("zh_CN" if before != "zh_CN" else "en")
    try:
        qtbot.addWidget(successor)
        qtbot.waitUntil(lambda: successor.session.bundle is not None, timeout=TIMEOUT_MS)
        wait_idle(qtbot, successor)
        qtbot.wait(400)  # the second tidy, once the restored layout has settled
        bars = [b for b in successor.findChildren(QtWidgets.QTabBar) if b.parent() is successor and b.isVisibleTo(successor)]
        menus, status = successor.menuBar().geometry(), successor.statusBar().geometry()
        assert bars and not [b.geometry() for b in bars if b.geometry().intersects(menus) or b.geometry().intersects(status)]
        tabs = [tuple(b.tabText(i) for i in range(b.count())) for b in bars]
        assert len(set(tabs)) == len(tabs), tabs
    finally:
        close_window(successor)
        install(before)
