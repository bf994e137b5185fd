"""What a user meets in the first minute: the two losses of teacher forcing have two names, in
both languages; a strategy change that drops forced tokens says so; the export dialogs start in
the last export's folder and the web page may go to a new folder; the patching view shows the
other sentence it uses; and ``attnviz export --view compare`` takes the view's PE toggle, its data
carrying the translations the figure shows."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets
from window_helpers import TIMEOUT_MS, wait_idle

from attnviz.cli import main
from attnviz.core.analysis.compare import swap_ends, translations_with_and_without_pe
from attnviz.core.bundle import load_bundle
from attnviz.core.data.pieces import display_piece
from attnviz.core.outputs import is_ours
from attnviz.paths import default_model
from attnviz.qt.export import dialogs
from attnviz.qt.i18n import install
from attnviz.qt.views.registry import view_spec

pytestmark = pytest.mark.slow  # the window, and the command line's drawing

SRC = "猫吃鱼。"
TGT = "The cat is eating fish."
TRANSLATION_KEYS = ("translation_a_with_pe", "translation_a_without_pe", "translation_b_with_pe", "translation_b_without_pe")


# -- 1. the mean loss and the loss at one position -----------------------------------------------------
def loss_name(text: str, loss: float) -> str:
    """The word or two that ``loss`` (3 decimals, as shown) follows in ``text``: its name there."""
    found = re.findall(r"([^\s·,，;；:：]+(?: [^\s·,，;；:：]+)?) " + re.escape(f"{loss:.3f}"), text)
    assert found, f"{loss:.3f} is not named in {text!r}"
    return found[-1]


def loss_names(window) -> tuple[str, str]:
    """The status bar's name of the mean loss and the top-k caption's of the loss at the cursor."""
    s = window.session
    step = window.findChild(QtWidgets.QLabel, "stepLabel")
    caption = window.findChild(QtWidgets.QLabel, "topkCaption")
    position = s.forced.steps[s.forced_cursor]
    return loss_name(step.text(), s.forced.loss), loss_name(caption.text(), position.loss)


def test_the_mean_loss_and_the_loss_here_have_two_names_in_both_languages(qtbot, window):
    s = window.session
    s.set_inputs(SRC, TGT)
    s.finish_runs()
    wait_idle(qtbot, window)
    assert s.forced is not None and s.forced_cursor == len(s.forced.steps) - 1
    mean, here = loss_names(window)
    assert mean != here
    try:
        install("zh_CN")
        s.back()  # the status bar and the caption are written again, in Chinese
        QtWidgets.QApplication.processEvents()
        mean_zh, here_zh = loss_names(window)
        assert mean_zh != here_zh and {mean_zh, here_zh}.isdisjoint({mean, here})
    finally:
        install("en")


# -- 2. forced tokens dropped by a new strategy ---------------------------------------------------------
def test_a_strategy_change_that_drops_forced_tokens_says_so(qtbot, window):
    s = window.session
    said: list[tuple[str, str]] = []
    s.message.connect(lambda level, text: said.append((level, text)))
    s.reset()
    topk = window.findChild(QtWidgets.QListWidget, "topkList")
    item = topk.item(2)
    qtbot.mouseClick(topk.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=topk.visualItemRect(item).center())
    wait_idle(qtbot, window)
    forced = [st for st in s.decoding.steps if st.forced]
    assert len(forced) == 1
    piece = display_piece(forced[0].piece)
    said.clear()
    combo = window.findChild(QtWidgets.QComboBox, "strategyCombo")
    combo.setCurrentIndex(combo.findData("beam"))
    wait_idle(qtbot, window)
    assert not any(st.forced for st in s.decoding.steps)
    assert len(said) == 1 and said[0][0] == "info" and piece in said[0][1] and "\n" not in said[0][1]
    bar = window.findChild(QtWidgets.QLabel, "messageBar")
    assert bar.isVisible() and bar.property("level") == "info" and piece in bar.text()
    said.clear()
    combo.setCurrentIndex(combo.findData("greedy"))  # nothing forced now: nothing to say
    wait_idle(qtbot, window)
    assert said == []


# -- 3. the export dialogs' folder -------------------------------------------------------------------------
class SaveDialog:
    """``QFileDialog.getSaveFileName`` as a test answers it: records where each dialog started and
    returns ``answer``."""

    def __init__(self):
        self.starts: list[Path] = []
        self.answer: Path | None = None

    def __call__(self, parent=None, caption="", directory="", *rest, **kw) -> tuple[str, str]:
        self.starts.append(Path(kw.get("dir", directory)))
        return str(self.answer), ""


def test_export_dialogs_start_in_the_last_export_folder_and_a_page_makes_a_new_one(qtbot, window, tmp_path, monkeypatch):
    settings = QtCore.QSettings(str(tmp_path / "exports.ini"), QtCore.QSettings.Format.IniFormat)
    monkeypatch.setattr(dialogs, "_settings", lambda: settings)
    ask = SaveDialog()
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", ask)
    exports = tmp_path / "exports"
    exports.mkdir()

    ask.answer = exports / "grid.gif"
    window.findChild(QtGui.QAction, "exportAnimationAction").trigger()
    assert ask.starts[-1].parent == dialogs.default_export_dir() and ask.starts[-1].suffix == ".gif"
    assert is_ours(exports / "grid.gif") and settings.value(dialogs.LAST_DIR_KEY) == str(exports)

    ask.answer = exports / "page"  # a folder that is not there yet
    window.findChild(QtGui.QAction, "exportWebPageAction").trigger()
    assert ask.starts[-1].parent == exports and not ask.starts[-1].exists()
    assert is_ours(exports / "page" / "index.html") and window.message_bar.property("level") == "info"

    ask.answer = exports / "grid.csv"
    window.findChild(QtGui.QAction, "exportDataAction").trigger()
    assert ask.starts[-1].parent == exports and is_ours(exports / "grid.csv")

    foreign = tmp_path / "site"
    foreign.mkdir()
    (foreign / "index.html").write_text("<p>mine</p>\n", encoding="utf-8")
    ask.answer = foreign
    window.findChild(QtGui.QAction, "exportWebPageAction").trigger()
    assert window.message_bar.property("level") == "error"
    assert (foreign / "index.html").read_text(encoding="utf-8") == "<p>mine</p>\n"


# -- 4. the patching view's other sentence -------------------------------------------------------------
def test_the_patching_view_shows_the_other_sentence_it_uses(qtbot, window):
    dock = window.findChild(QtWidgets.QDockWidget, view_spec("patching").dock_name)
    dock.show()
    dock.raise_()
    view = window.views["patching"]
    edit = view.findChild(QtWidgets.QLineEdit, "patchOtherEdit")
    window.session.set_inputs(SRC, "")
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: view.has_data() and "".join(view.pair().map.corrupt_pieces) == SRC, timeout=TIMEOUT_MS)
    assert edit.text() == "" and edit.placeholderText() == swap_ends(SRC) != SRC
    assert "".join(view.pair().map.clean_pieces) == edit.placeholderText()  # the sentence the map patches in
    tokenizer = window.session.bundle.src_tokenizer
    unpaired = "我爱你。"  # its ends swapped, it has another number of tokens: the view says so, the field still shows it
    assert len(tokenizer.pieces(tokenizer.encode(unpaired))) != len(tokenizer.pieces(tokenizer.encode(swap_ends(unpaired))))
    window.session.set_inputs(unpaired, "")
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: edit.placeholderText() == swap_ends(unpaired), timeout=TIMEOUT_MS)
    assert not view.has_data() and window.message_bar.property("level") != "error"


# -- 5. attnviz export --view compare --------------------------------------------------------------------
def exported(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    assert main(["export", "--view", "compare", "--src", SRC, *args, "--out", str(out)]) == 0
    return next(out.iterdir())


def test_export_compare_takes_the_pe_toggle_and_its_data_carries_the_translations(tmp_path, capsys):
    b = load_bundle(default_model())
    expected = translations_with_and_without_pe(b.model, b.src_tokenizer, b.tgt_tokenizer, SRC, swap_ends(SRC))
    by_key = {f"translation_{w.lower()}_{'with' if pe else 'without'}_pe": text for (w, pe), text in expected.items()}
    assert sorted(by_key) == sorted(TRANSLATION_KEYS)
    off = np.load(exported(tmp_path, "off", "--no-pe", "--format", "npz"))
    on = np.load(exported(tmp_path, "on", "--format", "npz"))
    assert not bool(off["positional"]) and bool(on["positional"])
    assert float(off["max_deviation"]) < 1e-5 < float(on["max_deviation"])  # without PE, B's vectors are A's reordered
    for key in TRANSLATION_KEYS:
        assert str(off[key]) == str(on[key]) == by_key[key]
        assert f"{key}: {by_key[key]}" in off["metadata"].tolist()
    csv = exported(tmp_path, "csv", "--no-pe", "--format", "csv").read_text(encoding="utf-8")
    comments = dict(line[2:].split(": ", 1) for line in csv.splitlines() if line.startswith("# ") and ": " in line)
    assert {key: comments[key] for key in TRANSLATION_KEYS} == by_key
    capsys.readouterr()
    assert main(["export", "--view", "grid", "--src", SRC, "--no-pe", "--out", str(tmp_path / "no")]) == 2
    assert "--no-pe" in capsys.readouterr().err and not (tmp_path / "no").exists()
