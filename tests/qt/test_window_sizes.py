"""The three-size test: the main window at 1024×700, 1366×768 and 1920×1080, in each mode
(greedy, sampling, beam search, teacher-forced), with every dock raised in turn: no two texts of
a view overlap, none is cut off by what shows the view, and every label of the window fits.

Offscreen, the window has the size it is given (there is no real screen to fit)."""

from __future__ import annotations

import pytest
from PySide6 import QtCore, QtWidgets
from window_helpers import TIMEOUT_MS, close_window, layout_problems, open_window, wait_idle

pytestmark = pytest.mark.slow  # the whole main window

SIZES = ((1024, 700), (1366, 768), (1920, 1080))
MODES = ("greedy", "sample", "beam", "teacher-forced")
TARGET = "Hello, teacher!"


def settle(qtbot) -> None:
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
        qtbot.wait(20)


def set_mode(qtbot, window, mode: str) -> None:
    """Switch the window to ``mode`` through its controls and decode the sentence to the end."""
    bar = window.input_bar
    if mode == "teacher-forced":
        bar.target_edit.setText(TARGET)
        bar.target_edit.returnPressed.emit()
        qtbot.waitUntil(lambda: window.session.forced is not None, timeout=TIMEOUT_MS)
        wait_idle(qtbot, window)  # the views' analyses of the forced target drawn too
        return
    if window.session.forced is not None:
        bar.target_edit.clear()
        bar.target_edit.returnPressed.emit()
    combo = window.step_bar.strategy_combo
    combo.setCurrentIndex(combo.findData(mode))
    window.session.reset()
    window.session.run_to_end()
    wait_idle(qtbot, window)
    assert window.session.decoding is not None and window.session.decoding.finished


def my_labels(window) -> set[QtWidgets.QWidget]:
    """The window's own widgets (decoding controls, chips, top-k list, status bar, messages)."""
    return {window.step_bar, window.chips, window.topk_panel, window.statusBar(), window.message_bar}


def own_problems(window, problems: dict[str, list[str]]) -> list[str]:
    names = {w.objectName() for w in my_labels(window)} | {c.objectName() for w in my_labels(window)
                                                           for c in w.findChildren(QtWidgets.QWidget)}
    names |= {"emptyState", "topkPanel"}
    return [p for p in problems.get("labels", []) if p.split(":")[0] in names - {""}]


def check_every_dock(qtbot, window, where: str) -> dict[str, list[str]]:
    """Raise every dock in turn and collect the problems of what shows."""
    found: dict[str, list[str]] = {}
    for dock in window.findChildren(QtWidgets.QDockWidget):
        if dock.isHidden() and not window.tabifiedDockWidgets(dock):
            continue
        dock.raise_()
        settle(qtbot)
        assert window.session.analyses.wait(TIMEOUT_MS / 1000)  # a raised view's analysis, drawn (in a later turn)
        settle(qtbot)
        for owner, problems in layout_problems(window).items():
            found.setdefault(f"{where} · {owner}", [])
            found[f"{where} · {owner}"].extend(p for p in problems if p not in found[f"{where} · {owner}"])
    return found


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_window_reads_at_every_size_in_every_mode(qtbot, tmp_path, size):
    window = open_window(qtbot, tmp_path, size)
    try:
        found: dict[str, list[str]] = {}
        mine: list[str] = []
        for mode in MODES:
            set_mode(qtbot, window, mode)
            window.resize(*size)
            settle(qtbot)
            assert (window.width(), window.height()) == size, f"{mode}: the window does not fit {size}"
            hint = window.minimumSizeHint()
            assert hint.width() <= 1024 and hint.height() <= 700, f"{mode}: minimum size {hint.width()}x{hint.height()}"
            problems = check_every_dock(qtbot, window, f"{size[0]}x{size[1]} {mode}")
            found.update(problems)
            mine += [p for key, ps in problems.items() if key.endswith("labels") for p in own_problems(window, {"labels": ps})]
        assert not mine, "\n".join(mine)
        assert not found, "\n".join(f"{k}: {len(v)} problems, e.g. {v[:3]}" for k, v in sorted(found.items()))
    finally:
        close_window(window)


def test_the_window_opens_inside_the_screen(qtbot, tmp_path):
    """No saved geometry: the window fits the screen's available geometry; a saved geometry
    that no longer fits (a larger screen then) is not restored."""
    from attnviz.qt.main_window import MainWindow

    path = str(tmp_path / "s.ini")
    w = MainWindow(settings=QtCore.QSettings(path, QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    room = w.screen().availableGeometry()
    assert room.contains(w.frameGeometry()) and w.width() <= room.width() and w.height() <= room.height()
    w.resize(room.width() + 900, room.height() + 600)
    w.close()
    w.session.wait_for_workers(5000)
    w2 = MainWindow(settings=QtCore.QSettings(path, QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w2)
    assert room.contains(w2.frameGeometry())
    w2.session.wait_for_workers(5000)
