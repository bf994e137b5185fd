"""Session files in the window: saved, reopened in a new window (or with ``attnviz --session``),
the window is restored exactly — state and pixels; a missing model is asked for; a bad file
changes nothing."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets
from window_helpers import TIMEOUT_MS, close_window, wait_idle

from attnviz.cli import main as cli_main
from attnviz.paths import default_model
from attnviz.qt.main_window import MainWindow
from attnviz.qt.session_file import capture
from attnviz.qt.state import SessionFileError, load_state
from attnviz.qt.views.registry import on_screen

SIZE = (1366, 768)


def _image(widget) -> np.ndarray:
    img = widget.grab().toImage()
    ptr = img.constBits()
    return np.frombuffer(ptr, np.uint8, img.sizeInBytes()).copy()


def _reopen(qtbot, tmp_path, path) -> MainWindow:
    settings = QtCore.QSettings(str(tmp_path / "other.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings=settings, session_file=path)
    qtbot.addWidget(w)
    w.resize(*SIZE)
    w.show()
    with qtbot.waitSignal(w.session_files.restored, timeout=TIMEOUT_MS):
        pass
    wait_idle(qtbot, w)
    return w


def _settle(qtbot) -> None:
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
        qtbot.wait(20)


pytestmark = pytest.mark.window_size(*SIZE)  # the window fixture's size (tests/qt/conftest.py)


def _make_choices(qtbot, window) -> None:
    """A state worth saving: beam search, a forced token, a step back, an unlinked view, a dark theme."""
    s = window.session
    combo = window.step_bar.strategy_combo
    combo.setCurrentIndex(combo.findData("beam"))
    wait_idle(qtbot, window)
    s.back()
    s.back()
    s.force(int(s.frames.next_topk()[1][1]))
    s.step()
    window.views.selection.update(kind="decoder", layer=1, head=2, mode="head")
    window.views.set_linked("lines", False)
    window.views.selection.update(kind="encoder", layer=0, head=1)
    window.set_theme("dark")
    _settle(qtbot)


def test_a_session_round_trips_state_and_pixels(qtbot, window, tmp_path):
    _make_choices(qtbot, window)
    saved = window.session_files.save(tmp_path / "lesson")
    assert saved == tmp_path / "lesson.attnviz"
    before = capture(window)
    assert before.forced and before.tokens and before.own["lines"]["kind"] == "decoder"
    other = _reopen(qtbot, tmp_path, saved)
    try:
        for w in (window, other):  # "Session saved" and the like take room above the grid
            w.clear_message()
        qtbot.waitUntil(lambda: not other.input_bar.hints_pending(), timeout=TIMEOUT_MS)
        _settle(qtbot)
        after = capture(other)
        for field in ("model_path", "model_hash", "source", "target", "strategy", "tokens", "forced", "selection", "own", "theme", "options"):
            assert getattr(after, field) == getattr(before, field), field
        shown = [n for n, v in window.views.views.items() if on_screen(v)]
        assert shown and shown == [n for n, v in other.views.views.items() if on_screen(v)]
        for name in shown:
            a, b = window.views[name], other.views[name]
            assert a.size() == b.size(), name
            assert np.array_equal(_image(a), _image(b)), f"{name} differs after reopening"
    finally:
        close_window(other)


def test_a_missing_model_is_asked_for_and_a_bad_file_changes_nothing(qtbot, window, tmp_path, monkeypatch):
    model = shutil.copytree(default_model(), tmp_path / "model")
    window.open_model(model)
    qtbot.waitUntil(lambda: window.session.bundle.path.resolve() == model.resolve(), timeout=TIMEOUT_MS)
    wait_idle(qtbot, window)
    saved = window.session_files.save(tmp_path / "s.attnviz")
    moved = model.rename(tmp_path / "moved")
    asked = []
    monkeypatch.setattr(MainWindow, "ask_model_folder", lambda self: asked.append(1) or str(moved))
    with qtbot.waitSignal(window.session_files.restored, timeout=TIMEOUT_MS):
        assert window.session_files.open(saved)
    assert asked and window.session.bundle.path.resolve() == moved.resolve()
    assert "missing" in window.message_bar.text()
    source = window.session.source
    bad = tmp_path / "bad.attnviz"
    bad.write_text('{"format": "attnviz-session", "version": 7}', encoding="utf-8")
    assert not window.session_files.open(bad)
    with pytest.raises(SessionFileError) as newer:
        load_state(bad)  # a newer version: the file's own reading of why
    assert window.message_bar.property("level") == "error" and window.message_bar.text() == str(newer.value)
    assert window.session.source == source


def test_the_command_line_refuses_a_bad_session_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.attnviz"
    bad.write_text("{", encoding="utf-8")
    assert cli_main(["--session", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "damaged JSON" in err and len(err.splitlines()) == 1  # the CLI's stderr: data, not UI text


def test_a_dropped_session_file_is_restored(qtbot, window, tmp_path):
    from PySide6 import QtGui

    window.views.selection.update(kind="encoder", layer=2, head=3, mode="head")
    saved = window.session_files.save(tmp_path / "drop.attnviz")
    window.views.selection.update(kind="cross", layer=0, head=0)
    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(str(saved))])
    pos = QtCore.QPointF(window.rect().center())
    drop = QtGui.QDropEvent(pos, QtCore.Qt.DropAction.CopyAction, mime, QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.session_files.restored, timeout=TIMEOUT_MS):
        window.dropEvent(drop)
    assert window.views.selection.value().kind == "encoder" and window.views.selection.value().layer == 2


def test_a_session_or_setting_naming_an_old_bundled_folder_opens_the_one_that_replaced_it(qtbot, window, tmp_path):
    import json

    from attnviz.paths import RENAMED_BUNDLES, bundled_replacement, models_dir

    old = models_dir() / "hsk-zh-en"  # the default before the Tatoeba-trained one
    assert not old.exists() and bundled_replacement(old) == default_model() and RENAMED_BUNDLES["hsk-zh-en"] == default_model().name
    assert bundled_replacement(models_dir() / "hsk-zh-en-hsk-only") == models_dir() / "hsk-only-zh-en"
    assert bundled_replacement(tmp_path / "hsk-zh-en") is None  # only the bundled folder is redirected
    saved = window.session_files.save(tmp_path / "old")
    state = json.loads(saved.read_text(encoding="utf-8"))
    state["model_path"] = str(old)
    saved.write_text(json.dumps(state), encoding="utf-8")
    window.open_model(models_dir() / "hsk-only-zh-en")
    qtbot.waitUntil(lambda: window.session.bundle.path.name == "hsk-only-zh-en", timeout=TIMEOUT_MS)
    with qtbot.waitSignal(window.session_files.restored, timeout=TIMEOUT_MS):
        assert window.session_files.open(saved)
    assert window.session.bundle.path == default_model()
    assert window.message_bar.property("level") == "info" and str(old) in window.message_bar.text()
    window.open_model(models_dir() / "hsk-tatoeba-zh-en")  # a recent-models entry written before the rename
    qtbot.waitUntil(lambda: "hsk-tatoeba-zh-en" in window.message_bar.text(), timeout=TIMEOUT_MS)
    assert window.session.bundle.path == default_model() and window.message_bar.property("level") == "info"
