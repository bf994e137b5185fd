"""The 简体中文 interface through Qt's own translation system: the catalog holds every string the
code marks (what ``pyside6-lupdate`` extracts now), each one translated; the shipped ``.qm`` is
built from the ``.ts`` as it is; View → Language rebuilds the window in the other language and
keeps its state; and, in zh_CN, no visible text of the window, its docks, its views or the tour
holds an English word that is not a token, a formula or a proper name."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets
from window_helpers import TIMEOUT_MS, close_window, scene_texts, wait_idle

from attnviz.core.analysis.norm_pair import default_other
from attnviz.core.bundle import load_bundle
from attnviz.paths import models_dir
from attnviz.qt.i18n import LANGUAGES, SETTING, catalog_path, current_language, install
from attnviz.qt.main_window import MainWindow
from attnviz.qt.views.registry import VIEWS

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def messages(ts: Path) -> dict[tuple[str, str], ET.Element]:
    """(context, source) -> the message's <translation> element."""
    out = {}
    for context in ET.parse(ts).getroot().iter("context"):
        name = context.findtext("name")
        for m in context.iter("message"):
            out[(name, m.findtext("source"))] = m.find("translation")
    return out


def extracted(tmp_path: Path) -> dict[tuple[str, str], ET.Element]:
    """What lupdate finds in attnviz/qt now."""
    files = sorted(str(p) for p in (ROOT / "attnviz" / "qt").rglob("*.py"))
    out = tmp_path / "now_zh_CN.ts"
    subprocess.run([str(BIN / "pyside6-lupdate"), "-silent", "-locations", "none", *files, "-ts", str(out)], check=True)
    return messages(out)


def test_catalog_translates_every_marked_string(tmp_path):
    shipped = messages(catalog_path("zh_CN", ".ts"))
    now = extracted(tmp_path)
    missing = sorted(set(now) - set(shipped))
    assert not missing, f"{len(missing)} strings are not in the catalog (run make translations), e.g. {missing[:5]}"
    untranslated = sorted(k for k in now if not (shipped[k].text or "").strip() or shipped[k].get("type") == "unfinished")
    assert not untranslated, f"{len(untranslated)} strings have no Chinese, e.g. {untranslated[:5]}"
    placeholders = [k for k in now if set(re.findall(r"\{[^}]*\}", k[1])) != set(re.findall(r"\{[^}]*\}", shipped[k].text))]
    assert not placeholders, f"translations that lose or add a {{placeholder}}: {placeholders[:5]}"


def test_shipped_qm_is_built_from_the_ts(tmp_path):
    built = tmp_path / "built.qm"
    subprocess.run([str(BIN / "pyside6-lrelease"), "-silent", str(catalog_path("zh_CN", ".ts")), "-qm", str(built)], check=True)
    assert built.read_bytes() == catalog_path("zh_CN").read_bytes(), "resources/i18n/*.qm is stale: run make translations"


def test_install_translates_and_falls_back(qapp):
    try:
        assert install("zh_CN") == "zh_CN"
        source = next(iter(messages(catalog_path("zh_CN", ".ts")).items()))
        (context, text), translation = source
        assert QtCore.QCoreApplication.translate(context, text) == translation.text
        assert install("klingon") == "en"  # unknown: the source language, nothing installed
        assert QtCore.QCoreApplication.translate(context, text) == text
    finally:
        install("en")


# -- the window ---------------------------------------------------------------------------------
@pytest.fixture
def settings(tmp_path):
    return QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)


def opened(qtbot, settings, **kw) -> MainWindow:
    w = MainWindow(settings=settings, **kw)
    qtbot.addWidget(w)
    w.resize(1366, 768)
    w.show()
    qtbot.waitUntil(lambda: w.session.bundle is not None, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: w.session.decoding is not None and w.session.decoding.finished, timeout=TIMEOUT_MS)
    wait_idle(qtbot, w)
    return w


@pytest.mark.slow
def test_language_menu_rebuilds_the_window_and_keeps_its_state(qtbot, settings):
    w = opened(qtbot, settings, src="猫吃鱼。")
    w.session.back()
    tokens = list(w.session.decoding.tgt_ids)
    try:
        w.findChild(QtWidgets.QMenu, "languageMenu")  # the menu exists under its objectName
        action = next(a for a in w.menus.language_group.actions() if a.objectName() == "language_zh_CN")
        action.trigger()
        new = QtWidgets.QApplication.instance()._attnviz_window
        assert new is not w and current_language() == "zh_CN"
        qtbot.addWidget(new)
        qtbot.waitUntil(lambda: new.session.decoding is not None and list(new.session.decoding.tgt_ids) == tokens, timeout=TIMEOUT_MS)
        assert new.session.source == "猫吃鱼。"
        assert settings.value(SETTING) == "zh_CN"
        menu = new.findChild(QtWidgets.QMenu, "languageMenu")
        assert menu.title() == QtCore.QCoreApplication.translate("main_window", "&Language") != "&Language"
        assert not w.isVisible()
        wait_idle(qtbot, new)
        close_window(new)
    finally:
        install("en")


# -- no English left in zh_CN ---------------------------------------------------------------------
# Words that stay as they are in the Chinese interface: proper names, formats, the tutorial's
# notation (its formulas' names and symbols) and units.
KEPT = {
    "attnviz", "HSK", "Tatoeba", "CC", "CEDICT", "Marian", "opus", "mt", "PyTorch", "Qt", "PySide", "pyqtgraph", "Hugging", "Face",
    "PNG", "SVG", "PDF", "CSV", "NPZ", "GIF", "MP", "HTML", "JSON", "TSV", "UTF",
    "LayerNorm", "BatchNorm", "LN", "BN", "FFN", "SOS", "EOS", "PAD", "UNK", "PE", "softmax", "Softmax", "ReLU", "GELU", "SiLU",
    "relu", "gelu", "silu", "sin", "cos", "pos", "max", "min", "log", "exp", "sqrt", "argmax", "Concat", "Norm", "Sublayer", "Linear",
    "QK", "KV", "Dropout", "mean", "var", "std", "ms", "px", "nats", "logit", "logits", "Ctrl", "Alt", "Shift", "Esc", "Enter",
    "Home", "End", "Left", "Right", "Up", "Down", "PgUp", "PgDown", "Space", "Tab", "Del", "Backspace", "GPU", "CPU", "IG", "top",
    "post", "pre", "dk", "dv", "ff", "model", "viridis", "magma", "inferno", "plasma", "cividis", "gray", "turbo", "blues", "greys",
    "BLEU", "chrF", "xW", "hW", "Logit", "MASK", "CLS", "SEP",
    "EAP", "ALTI", "PCA", "Python",  # methods' names (edge attribution patching, ALTI+, principal components) and the language
}
# The tutorial's symbols with their subscripts and superscripts run together in plain text
# (Q_i → "Qi", W_i^Q → "WiQ", b^O → "bO"): a word with a capital after its first letter, or a
# capital and one index letter, is notation.
NOTATION = re.compile(r"^(?=.*[a-z])[A-Za-z]+[A-Z][A-Za-z]*$|^[A-Z]{2}$|^[A-Z][ihjklt]$|^[qkvz][ijt]$")  # … and q_i, k_j, v_j, z_i
WORD = re.compile(r"[A-Za-z]{2,}")


def english_words(text: str, allowed: set[str]) -> list[str]:
    text = re.sub(r"<[^>]*>|&\w+;", " ", text)  # rich text's tags and entities are not shown
    words = WORD.findall(re.sub(r"[A-Za-z_]+_[A-Za-z_]+|\b[A-Za-z]\w*\(", " ", text))  # d_model, W_i, f(…) are notation
    return [w for w in words if w not in KEPT and w not in allowed and not NOTATION.match(w)]


def strings_in(data, depth: int = 0) -> list[str]:
    """Every string inside a view's data (dataclasses, mappings, sequences): tokens, translations."""
    if isinstance(data, str):
        return [data]
    if depth > 6 or data is None or isinstance(data, (int, float, bytes, np.ndarray)):
        return []
    if dataclasses.is_dataclass(data):
        data = [getattr(data, f.name) for f in dataclasses.fields(data)]
    elif isinstance(data, dict):
        data = [*data.keys(), *data.values()]
    elif not isinstance(data, (list, tuple, set, frozenset)):
        return []
    return [text for item in data for text in strings_in(item, depth + 1)]


@pytest.fixture
def fed(monkeypatch) -> list:
    """What every view is given to draw (its data is data: the model's tokens and translations)."""
    seen = []
    for spec in VIEWS:
        original = spec.cls.set_data

        def recording(self, data, *rest, _original=original):
            seen.append(data)
            return _original(self, data, *rest)

        monkeypatch.setattr(spec.cls, "set_data", recording)
    return seen


def data_words(w: MainWindow, fed: list) -> set[str]:
    """Words that are data, not interface: the sentences, the examples, the models' folders,
    every piece of the open vocabularies, and the strings of what the views were given."""
    s = w.session
    texts = [s.source, s.target, str(s.bundle.path), *(p.name for p in models_dir().iterdir()), *w.window_settings.recent_models(), *strings_in(fed)]
    combo = w.findChild(QtWidgets.QComboBox, "exampleCombo")
    texts += [combo.itemText(i) for i in range(combo.count())] if combo is not None else []
    other = load_bundle(default_other(s.bundle.config))  # the norm-batch view draws its pieces beside the open model's
    for tok in (s.bundle.src_tokenizer, s.bundle.tgt_tokenizer, other.src_tokenizer, other.tgt_tokenizer):
        texts += tok.pieces(range(tok.vocab_size))
    words = {word for text in texts for word in WORD.findall(text)}
    return words | {word[:n] for word in words for n in range(2, len(word))}  # a token axis elides long labels: "▁ea…"


def widget_texts(root: QtWidgets.QWidget) -> list[tuple[str, str]]:
    """(where, text) for every visible string of the widgets under ``root``."""
    out = []
    for widget in [root, *root.findChildren(QtWidgets.QWidget)]:
        name = widget.objectName() or type(widget).__name__
        if widget.toolTip():
            out.append((f"{name} tooltip", widget.toolTip()))
        if not widget.isVisibleTo(root):
            continue
        typed = isinstance(widget, (QtWidgets.QLineEdit, QtWidgets.QTextEdit, QtWidgets.QPlainTextEdit))  # the user's text
        for attr in ("placeholderText",) if typed else ("text", "title", "placeholderText", "windowTitle"):
            value = _read(widget, attr)
            if value.strip():
                out.append((f"{name} {attr}", value))
        if isinstance(widget, QtWidgets.QComboBox):
            out += [(f"{name} item", widget.itemText(i)) for i in range(widget.count())]
        if isinstance(widget, QtWidgets.QTabBar):
            out += [(f"{name} tab", widget.tabText(i)) for i in range(widget.count())]
    return out


def _read(widget: QtWidgets.QWidget, attr: str) -> str:
    getter = getattr(widget, attr, None)
    try:
        value = getter() if callable(getter) else ""
    except TypeError:  # a method of that name that wants arguments
        return ""
    return value if isinstance(value, str) else ""


def action_texts(w: MainWindow) -> list[tuple[str, str]]:
    out = []
    for action in w.findChildren(QtWidgets.QWidgetAction) + w.actions() + w.menuBar().actions():
        out += [(f"action {action.objectName()}", action.text()), (f"action {action.objectName()} tip", action.toolTip())]
    for menu in w.menuBar().findChildren(QtWidgets.QMenu):
        out.append((f"menu {menu.objectName()}", menu.title()))
        out += [(f"menu item {a.objectName()}", a.text()) for a in menu.actions() if a.objectName() not in ("language_en",)]
    return [(where, text) for where, text in out if text]


def view_texts(w: MainWindow, qtbot) -> list[tuple[str, str]]:
    """Every dock raised in turn: its widgets' texts and its views' scene texts."""
    out = []
    for name, dock in w.docks.items():
        dock.show()
        dock.raise_()
        wait_idle(qtbot, w)
        qtbot.wait(50)
        out += widget_texts(dock)
        for view in dock.findChildren(QtWidgets.QGraphicsView):
            if view.scene() is not None:
                out += [(f"{name} scene", box.text) for box in scene_texts(view, w)]
    return out


@pytest.mark.slow
def test_chinese_interface_has_no_english_left(qtbot, settings, fed):
    from attnviz.qt.tour import start_tour

    install("zh_CN")
    try:
        w = opened(qtbot, settings, src="猫吃鱼。")
        texts = action_texts(w) + widget_texts(w) + view_texts(w, qtbot)
        allowed = data_words(w, fed)
        panel = start_tour(w, "zh_CN")
        qtbot.waitUntil(lambda: panel.ready, timeout=TIMEOUT_MS)
        texts += widget_texts(panel)
        problems = sorted({f"{where}: {text[:80]!r} ({', '.join(sorted(set(bad)))})"
                           for where, text in texts if (bad := english_words(text, allowed))})
        close_window(w)
        assert not problems, f"{len(problems)} English texts in the Chinese interface:\n" + "\n".join(problems[:60])
    finally:
        install("en")


def test_every_language_has_a_catalog():
    for code in LANGUAGES:
        if code != "en":
            assert catalog_path(code).is_file() and catalog_path(code, ".ts").is_file()
