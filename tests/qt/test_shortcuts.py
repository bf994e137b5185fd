"""Help → Keyboard Shortcuts lists every action's key, read from the window's actions (a new
action's key cannot be missing), and the keys no action carries."""

from __future__ import annotations

import pytest
from PySide6 import QtGui, QtWidgets
from window_helpers import close_window, open_window

from attnviz.qt.help import OTHER_KEYS, shortcut_rows, show_shortcuts

pytestmark = pytest.mark.slow  # the whole main window


def native(text: str) -> str:
    return QtGui.QKeySequence(text).toString(QtGui.QKeySequence.SequenceFormat.NativeText)


def test_the_list_holds_every_action_s_key_and_the_other_keys(qtbot, tmp_path, monkeypatch):
    window = open_window(qtbot, tmp_path)
    try:
        rows = shortcut_rows(window)
        keys = " / ".join(k for k, _ in rows).split(" / ")
        for text in ("Ctrl+S", "Ctrl+Shift+O", "Ctrl+O", "Ctrl+E", "Ctrl+Shift+E"):  # Quit: the platform's own key
            assert native(text) in keys, text
        with_keys = [a for a in window.findChildren(QtGui.QAction) if not a.shortcut().isEmpty()]
        assert len(with_keys) >= 9 and all(a.shortcut().toString(QtGui.QKeySequence.SequenceFormat.NativeText) in keys for a in with_keys)
        assert len(rows) == len(with_keys) + len(OTHER_KEYS)
        shown = []
        monkeypatch.setattr(QtWidgets.QMessageBox, "information", lambda parent, title, text: shown.append(text))
        show_shortcuts(window)
        assert shown and shown[0].count("<tr>") == len(rows)
    finally:
        close_window(window)
