"""View → Python Console: a script typed in the console changes the live window through the
session's setters (the grid shows the new sentence's pieces); its helpers reach the open model;
without qtconsole the action says in one line how to install it."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtWidgets
from window_helpers import wait_idle

from attnviz.qt import console as console_module
from attnviz.qt.console import INSTALL_HINT, open_console


def run_cell(console, code: str):
    result = console.kernel_manager.kernel.shell.run_cell(code)
    assert result.success, result.error_in_exec or result.error_before_exec
    return result.result


@pytest.mark.slow
def test_a_script_in_the_console_changes_the_window(qtbot, window):
    assert window.findChild(QtWidgets.QWidget, "pythonConsoleDock") is None  # built on first use
    act = next(a for a in window.menus.view_menu.actions() if a.objectName() == "pythonConsoleAction")
    act.trigger()
    console = window.findChild(console_module.PythonConsole)
    try:
        assert console is not None and console.dock.isVisible()
        run_cell(console, 'session.set_inputs("我爱你。", "")')
        qtbot.waitUntil(lambda: window.session.decoding is not None and window.session.decoding.finished, timeout=20000)
        wait_idle(qtbot, window)
        assert window.session.source == "我爱你。"
        expected = tuple(window.session.bundle.src_tokenizer.encode_pieces("我爱你。"))
        qtbot.waitUntil(lambda: window.grid.data() is not None and tuple(window.grid.data().key_labels) == expected, timeout=20000)
        assert run_cell(console, "model is window.session.bundle.model and views['grid'] is window.grid") is True  # data, not UI text
        result = run_cell(console, 'trace("我爱你。", "I love you.")')
        assert result.all_attention("cross").shape[-1] == len(expected)
        np.testing.assert_allclose(result.all_attention("cross").sum(-1), 1.0, atol=1e-5)
        run_cell(console, 'ablate("cross:1:1")')
        assert window.session.ablation.heads == frozenset({("cross", 0, 0)})
        assert open_console(window) is console  # one console per window
    finally:
        console.shutdown()


def test_without_qtconsole_the_action_says_how_to_install_it(qtbot, monkeypatch):
    shown = []

    class Window:
        def show_message(self, level, text):
            shown.append((level, text))

    monkeypatch.setattr(console_module, "console_available", lambda: False)
    assert open_console(Window()) is None
    assert len(shown) == 1 and INSTALL_HINT in shown[0][1] and "\n" not in shown[0][1]
