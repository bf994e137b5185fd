"""The decoding controls as a learner uses them: the keys step from anywhere (Alt + the key in a
text field), Enter decodes, a new strategy re-decodes the kept sentence, and the strategy's
parameters never squeeze a dock."""

from __future__ import annotations

import pytest
from PySide6 import QtCore, QtWidgets
from window_helpers import wait_idle

ALT = QtCore.Qt.KeyboardModifier.AltModifier
KEY = QtCore.Qt.Key


pytestmark = pytest.mark.window_size(1024, 700)  # the window fixture's size (tests/qt/conftest.py)


def test_the_keys_step_from_the_source_field(qtbot, window):
    s = window.session
    edit = window.findChild(QtWidgets.QLineEdit, "sourceEdit")
    edit.setFocus()
    qtbot.waitUntil(edit.hasFocus)
    n = len(s.decoding.steps)
    edit.setCursorPosition(2)
    qtbot.keyClick(edit, KEY.Key_Left)  # the field keeps the plain key for its cursor
    assert edit.cursorPosition() == 1 and len(s.decoding.steps) == n
    qtbot.keyClick(edit, KEY.Key_Left, ALT)
    assert len(s.decoding.steps) == n - 1
    qtbot.keyClick(edit, KEY.Key_Home, ALT)
    assert len(s.decoding.steps) == 0
    qtbot.keyClick(edit, KEY.Key_Right, ALT)
    assert len(s.decoding.steps) == 1
    qtbot.keyClick(edit, KEY.Key_Return)  # Enter on the kept sentence decodes it to the end
    wait_idle(qtbot, window)
    assert s.decoding.finished and len(s.decoding.steps) == n
    action = window.findChild(QtWidgets.QWidget, "stepButton").defaultAction()
    assert "Alt+Right" in action.toolTip()


def test_a_new_strategy_decodes_the_kept_sentence_again(qtbot, window):
    s = window.session
    combo = window.step_bar.strategy_combo
    combo.setCurrentIndex(combo.findData("beam"))
    wait_idle(qtbot, window)
    assert s.decoding.strategy.describe().startswith("beam") and s.decoding.finished
    assert window.grid.has_data()  # not blank: the views show the new decoding
    window.set_decode_as_you_type(False)
    combo.setCurrentIndex(combo.findData("greedy"))
    wait_idle(qtbot, window)
    assert len(s.decoding.steps) == 0 and s.can_step()  # without decode-as-you-type it waits at SOS for Step


def test_choosing_a_strategy_never_squeezes_a_dock(qtbot, window):
    combo = window.step_bar.strategy_combo
    right = window.docks["headDetailDock"]

    def layout():
        QtWidgets.QApplication.processEvents()
        qtbot.wait(20)
        return right.width(), window.centralWidget().width()

    before = layout()
    for mode in ("sample", "beam", "sample", "greedy"):
        combo.setCurrentIndex(combo.findData(mode))
        wait_idle(qtbot, window)
        assert abs(layout()[0] - before[0]) <= 2, mode
        if mode == "beam":
            fm = combo.fontMetrics()
            assert combo.width() >= fm.horizontalAdvance(combo.currentText())  # "Beam search" is not cut
    assert layout() == before


def test_one_click_teacher_forces_the_examples_reference(qtbot, window):
    bar = window.input_bar
    button = window.findChild(QtWidgets.QToolButton, "useReferenceButton")
    combo = window.findChild(QtWidgets.QComboBox, "exampleCombo")
    index = next(i for i in range(1, combo.count()) if combo.itemData(i).reference)
    example = combo.itemData(index)
    combo.setCurrentIndex(index)
    combo.activated.emit(index)
    wait_idle(qtbot, window)
    assert button.isEnabled() and window.session.forced is None
    button.click()
    wait_idle(qtbot, window)
    assert window.session.target == example.reference and window.session.forced is not None
    assert not button.isEnabled()  # the reference is in already
    bar.source_edit.setText("一个不在例子里的句子")
    assert not button.isEnabled()


def test_the_panels_speak_the_installed_language(qtbot):
    """English shows the core's own words; zh_CN the catalog's (placeholder, example, captions)."""
    from dataclasses import replace

    from attnviz.core.data.examples import ExampleSentence, InputHints
    from attnviz.qt.decode_panel import QtTokenChips, QtTopKPanel, example_label, placeholder_text
    from attnviz.qt.i18n import install

    example = ExampleSentence("1 2 3", "", "", "train")
    hints = InputHints((example,), "Symbols (123) separated by spaces, e.g. 1 2 3", ("symbols", "123"))
    assert placeholder_text(hints) == hints.placeholder and example_label(example) == example.label
    try:
        install("zh_CN")
        panel, chips = QtTopKPanel(), QtTokenChips()
        qtbot.addWidget(panel)
        qtbot.addWidget(chips)
        chips.set_tokens(())
        assert panel.caption.text() == "第 t 步的前 k 个候选：P(y_t | y_<t, x)" and "还没有词元" in chips.text()
        assert placeholder_text(hints) == "以空格分隔的符号（123），例如 1 2 3"
        assert example_label(example) == "1 2 3  —  训练中见过"
        assert placeholder_text(replace(hints, subject=("own", ""))) == hints.placeholder  # a bundle's words, as written
    finally:
        install("en")
