"""The input bar knows the open model: its examples and placeholder, UNK by its own tokenizer (a
prominent plain-text warning), the character → piece tooltip, and the confidence cue."""

from __future__ import annotations

import json
import math

import pytest
from PySide6 import QtWidgets

from attnviz.core.bundle import load_bundle
from attnviz.core.data.examples import hints_for
from attnviz.paths import models_dir
from attnviz.qt.decode_panel import QtInputBar, placeholder_text
from attnviz.qt.session import Session
from attnviz.qt.source_info import confidence_summary, reason_text, seen_text

TIMEOUT_MS = 120000  # the first look-up builds the corpus index of the mix (seconds on a loaded machine)


@pytest.fixture(scope="module")
def reverse_bundle():
    return load_bundle(models_dir() / "reverse")


@pytest.fixture(scope="module")
def hsk_bundle():
    return load_bundle(models_dir() / "hsk-only-zh-en")  # its corpus: the HSK pairs


def make_bar(qtbot, bundle, source: str = "") -> QtInputBar:
    session = Session()
    bar = QtInputBar(session)
    qtbot.addWidget(bar)
    bar.resize(1024, 160)
    bar.show()
    session.set_bundle(bundle, source=source)
    qtbot.waitUntil(lambda: not bar.hints_pending(), timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: bar.example_combo.count() > 1, timeout=TIMEOUT_MS)
    return bar


def type_source(qtbot, bar: QtInputBar, text: str) -> None:
    bar.source_edit.clear()
    if text.isascii():
        qtbot.keyClicks(bar.source_edit, text)
    else:  # QTest cannot type characters outside the BMP
        bar.source_edit.setText(text)
    qtbot.keyClick(bar.source_edit, "\r")
    assert bar.session.source == text


def run_to_end(qtbot, bar: QtInputBar) -> None:
    s = bar.session
    s.run_to_end()
    qtbot.waitUntil(lambda: s.decoding is not None and s.decoding.finished, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: not bar.source_info.lookup_pending(), timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: "looking it up" not in bar.source_info.confidence_label.text(), timeout=TIMEOUT_MS)


def test_the_reverse_model_brings_digit_examples_and_warns_about_a_number_written_as_one_word(qtbot, reverse_bundle):
    bar = make_bar(qtbot, reverse_bundle)
    examples = [bar.example_combo.itemData(i) for i in range(1, bar.example_combo.count())]
    assert examples and all(set(e.source) <= set("0123456789 ") and " " in e.source for e in examples)
    assert {e.split for e in examples} >= {"train", "test"}
    hints = hints_for(dict(reverse_bundle.meta), reverse_bundle.path)
    assert hints.subject[0] == "symbols" and bar.source_edit.placeholderText() == placeholder_text(hints)  # symbols separated by spaces
    assert examples[0].source in bar.source_edit.placeholderText()

    type_source(qtbot, bar, "3141592")
    banner = bar.source_info.unk_banner
    assert banner.isVisible() and banner.textFormat().name == "PlainText"
    assert "3141592 → UNK" in banner.text() and "1 of 1 tokens" in banner.text()
    assert bar.source_info.placeholder and bar.source_info.placeholder.rstrip(".") in banner.text()  # what the model reads
    assert "3141592 → UNK" in bar.source_edit.toolTip()

    type_source(qtbot, bar, "3 1 4 1 5 9 2")
    assert not banner.isVisible()
    assert "UNK" not in bar.source_edit.toolTip().split("UNK = unknown")[1]


def test_emoji_and_merged_unknown_runs_are_shown_by_code_point(qtbot, hsk_bundle):
    bar = make_bar(qtbot, hsk_bundle)
    type_source(qtbot, bar, "😀😀x猫")
    banner = bar.source_info.unk_banner
    assert banner.isVisible()
    assert "U+1F600" in banner.text()  # a box never stands for the emoji
    tip = bar.source_edit.toolTip()
    assert "U+1F600×2 x → UNK" in tip and "猫 → 猫" in tip
    type_source(qtbot, bar, "<b>猫</b>😀")  # untrusted text stays plain in the tooltip
    assert "&lt;b&gt;" in bar.source_edit.toolTip()


def test_an_example_of_another_model_is_replaced_when_the_new_model_cannot_read_it(qtbot, hsk_bundle, reverse_bundle):
    bar = make_bar(qtbot, hsk_bundle)
    first = bar.example_combo.itemData(1)
    bar.example_combo.activated.emit(1)
    assert bar.session.source == first.source
    bar.session.set_bundle(reverse_bundle)
    qtbot.waitUntil(lambda: bar.session.source != first.source, timeout=TIMEOUT_MS)
    assert set(bar.session.source) <= set("0123456789 ")
    assert not bar.source_info.unk_banner.isVisible()


def test_confidence_of_a_training_sentence(qtbot, hsk_bundle):
    bar = make_bar(qtbot, hsk_bundle)
    train = next(bar.example_combo.itemData(i) for i in range(1, bar.example_combo.count()) if bar.example_combo.itemData(i).split == "train")
    type_source(qtbot, bar, train.source)
    run_to_end(qtbot, bar)
    steps = bar.session.decoding.steps
    expected = sum(math.log(st.prob) for st in steps) / len(steps)
    conf = bar.source_info.confidence
    assert conf.seen == "train" and conf.unk_share == 0.0
    assert conf.mean_log_prob == pytest.approx(expected)
    text = bar.source_info.confidence_label.text()
    assert f"{expected:.2f}" in text and text.endswith(seen_text("train")) and confidence_summary(conf) in text
    assert not bar.source_info.unsure_note.isVisible()


def test_an_unsure_model_says_so_and_points_to_real_models(qtbot, hsk_bundle):
    bar = make_bar(qtbot, hsk_bundle)
    type_source(qtbot, bar, "猫吃鱼。")  # the tutorial's example: not in the corpus, translated badly
    run_to_end(qtbot, bar)
    conf = bar.source_info.confidence
    assert conf.seen == "new" and conf.unsure
    note = bar.source_info.unsure_note
    reasons = conf.reason_codes()
    assert note.isVisible() and reasons and all(reason_text(code, value) in note.text() for code, value in reasons) and "opus-mt" in note.text()
    assert bar.source_info.confidence_label.text().endswith(seen_text("new"))


def test_a_held_out_sentence_is_named_so(qtbot, hsk_bundle):
    bar = make_bar(qtbot, hsk_bundle)
    held = next(bar.example_combo.itemData(i) for i in range(1, bar.example_combo.count()) if bar.example_combo.itemData(i).split == "test")
    type_source(qtbot, bar, held.source.rstrip("。？！") + "  ")  # typed a little differently
    run_to_end(qtbot, bar)
    assert bar.source_info.confidence.seen == "test"
    assert bar.source_info.confidence_label.text().endswith(seen_text("test"))


def test_an_imported_model_gets_everyday_examples(qtbot, tmp_path):
    from attnviz.core.data.examples import hints_for

    hints = hints_for({"imported_from": str(tmp_path / "opus-mt-zh-en")}, tmp_path / "opus-mt-zh-en")
    assert "猫吃鱼。" in [e.source for e in hints.examples] and "中文" in hints.placeholder
    hints = hints_for({"imported_from": "x"}, tmp_path / "opus-mt-de-en")
    assert all(e.split == "" and "everyday" in e.label for e in hints.examples)
    assert "Deutsch" in hints.placeholder
    own = tmp_path / "bundle"
    own.mkdir()
    (own / "examples.json").write_text(json.dumps({"placeholder": "Words, e.g. a b", "examples": [{"text": "a b"}]}), encoding="utf-8")
    hints = hints_for({}, own)
    assert [e.source for e in hints.examples] == ["a b"] and hints.placeholder == "Words, e.g. a b"


def test_the_examples_placeholder_is_never_elided(qtbot, reverse_bundle):
    """In the narrowest window the combo still shows its placeholder in full."""
    bar = make_bar(qtbot, reverse_bundle)
    bar.resize(460, 160)
    qtbot.wait(10)
    combo = bar.example_combo
    assert combo.itemText(0) == "Examples…"
    room = combo.style().subControlRect(QtWidgets.QStyle.ComplexControl.CC_ComboBox, _combo_option(combo),
                                        QtWidgets.QStyle.SubControl.SC_ComboBoxEditField, combo)
    assert combo.fontMetrics().horizontalAdvance(combo.itemText(0)) <= room.width()


def _combo_option(combo):
    opt = QtWidgets.QStyleOptionComboBox()
    combo.initStyleOption(opt)
    return opt


def test_an_unsure_bundled_model_names_the_best_bundled_one_first_and_opens_it(qtbot):
    from attnviz.core.data.examples import bundled_score

    best = max((p for p in models_dir().iterdir() if bundled_score(p) is not None), key=bundled_score)
    assert best.name == "zh-en"  # the default: chrF 44.6 on the HSK test pairs; the small model 40.3, the HSK-only model 25.7
    bar = make_bar(qtbot, load_bundle(models_dir() / "hsk-only-zh-en"))
    type_source(qtbot, bar, "我爱你。")  # held out of every training set; the HSK-only model gets it wrong
    run_to_end(qtbot, bar)
    info = bar.source_info
    assert info.confidence.unsure and info.better_model == models_dir() / best.name
    note, button = info.unsure_note.text(), bar.findChild(QtWidgets.QPushButton, "openBetterModelButton")
    assert button.isVisible() and best.name in button.text()
    assert note.index(best.name) < note.index("opus-mt")  # the bundled model first, real models next
    button.click()
    qtbot.waitUntil(lambda: bar.session.bundle.path == models_dir() / best.name, timeout=TIMEOUT_MS)
    assert bar.session.source == "我爱你。"


@pytest.mark.parametrize(("name", "better"), [("zh-en-small", "zh-en"), ("zh-en", None)])
def test_the_small_model_names_the_default_and_the_best_names_none(qtbot, name, better):
    bar = make_bar(qtbot, load_bundle(models_dir() / name))
    type_source(qtbot, bar, "血液在血管里流。")  # an HSK 6 sentence both translate badly
    run_to_end(qtbot, bar)
    info = bar.source_info
    assert info.confidence.unsure and info.better_model == (None if better is None else models_dir() / better)
    button = bar.findChild(QtWidgets.QPushButton, "openBetterModelButton")
    assert button.isVisible() == (better is not None) and "opus-mt" in info.unsure_note.text()
