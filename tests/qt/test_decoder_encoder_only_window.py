"""A decoder-only (GPT-2) and an encoder-only (BERT) Hugging Face folder open in the window with
every view that applies: GPT-2 continues its prompt with no encoder or cross-attention anywhere;
BERT has no decoding and predicts the tokens hidden by [MASK]; the attention shown is
``transformers``' own; the default model afterwards gets every dock and action back."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from PySide6 import QtCore, QtWidgets
from window_helpers import TIMEOUT_MS, close_window, wait_idle

from attnviz.paths import default_model
from attnviz.qt.main_window import MainWindow

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import build_bert, build_gpt2  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # the whole main window

PROMPT = "the cat sat"
MASKED = "the cat [MASK] on the [MASK] ."
DECODING_VIEWS = ("output", "beam-tree", "importance", "patching", "logit-lens", "attribution", "compare", "teacher-vs-free", "ablation", "mask",
                  "norm-batch", "checkpoints")


def _theirs(cls, folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls.from_pretrained(folder, attn_implementation="eager").eval()


def _window(qtbot, tmp_path, folder, src: str) -> MainWindow:
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(model=folder, src=src, tgt="", settings=settings)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.failures = []
    w.views.failed.connect(w.failures.append)
    w.show()
    qtbot.waitUntil(lambda: w.session.bundle is not None, timeout=TIMEOUT_MS)
    _settle(qtbot, w)
    return w


def _settle(qtbot, w: MainWindow) -> None:
    qtbot.waitUntil(lambda: w.session.current is not None and not w.session.pending, timeout=TIMEOUT_MS)
    wait_idle(qtbot, w)


def _kinds_offered(w: MainWindow) -> set[str]:
    combos = [c for c in w.findChildren(QtWidgets.QComboBox) if c.objectName().endswith("KindCombo")]
    return {c.itemData(i) for c in combos for i in range(c.count())}


def _every_shown_view_draws(qtbot, w: MainWindow) -> list[str]:
    """Raise each dock that is shown; the names of the views shown, each checked to have data."""
    shown = []
    for name, spec in w.views.specs.items():
        dock = w.docks.get(spec.dock_name)
        if dock is not None and dock.isHidden():
            continue
        if dock is not None:
            dock.raise_()
        QtWidgets.QApplication.processEvents()
        w.views.bring_up_to_date(w.views.frames[name])
        wait_idle(qtbot, w)
        assert w.failures == [], w.failures
        if name not in ("checkpoints", "norm-batch", "ablation", "neighbours"):  # these draw once another bundle, a head to ablate, or training data is there
            assert w.views[name].has_data(), name
        shown.append(name)
    assert w.failures == [] and w.message_bar.property("level") != "error", (w.failures, w.message_bar.text())
    return shown


def test_gpt2_continues_its_prompt_with_decoder_views_only(qtbot, tmp_path):
    folder = build_gpt2(tmp_path / "tiny-gpt2")
    w = _window(qtbot, tmp_path, folder, PROMPT)
    try:
        s = w.session
        prompt = [s.bundle.config.bos_id, *s.bundle.src_tokenizer.encode(PROMPT)]
        assert list(s.decoding.tgt_ids[: len(prompt)]) == prompt and len(s.decoding.tgt_ids) > len(prompt)
        assert w.input_bar.source_label.text() == "Prompt" and "decoder-only" in w.status.model_label.toolTip() + w.status.model_label.full_text()
        shown = _every_shown_view_draws(qtbot, w)
        assert _kinds_offered(w) == {"decoder"}
        assert {"compare", "teacher-vs-free", "attribution", "masked"}.isdisjoint(shown)
        for name in ("compare", "teacher-vs-free", "attribution", "masked"):
            assert not w.docks[w.views.specs[name].dock_name].toggleViewAction().isEnabled()
        w.acts.reset.trigger()
        assert list(s.decoding.tgt_ids) == prompt and not w.acts.back.isEnabled()
        w.acts.step.trigger()
        assert len(s.decoding.tgt_ids) == len(prompt) + 1 and w.acts.back.isEnabled()
        w.acts.back.trigger()
        assert list(s.decoding.tgt_ids) == prompt and not w.acts.back.isEnabled()
        w.acts.run.trigger()
        wait_idle(qtbot, w)
        ids = torch.tensor([list(s.decoding.input_ids)])
        with torch.no_grad():
            theirs = _theirs(transformers.GPT2LMHeadModel, folder)(ids, output_attentions=True).attentions
        shown = w.grid.figure_data().values["weight"]  # [layer, head, query, key]
        want = np.stack([a[0].numpy() for a in theirs])
        assert shown.shape == want.shape and np.abs(shown - want).max() <= 1e-5
    finally:
        close_window(w)


def test_bert_predicts_masked_tokens_and_the_default_model_gets_everything_back(qtbot, tmp_path):
    folder = build_bert(tmp_path / "tiny-bert")
    w = _window(qtbot, tmp_path, folder, MASKED)
    try:
        s = w.session
        assert s.decoding is None and s.forced is None and s.masked is not None
        assert not any(a.isEnabled() for a in (w.acts.step, w.acts.back, w.acts.run, w.acts.reset))
        assert not w.menus.decode_menu.menuAction().isEnabled() and not w.step_bar.isEnabled() and not w.input_bar.target_edit.isVisibleTo(w)
        hidden = {n for n in DECODING_VIEWS if w.docks[w.views.specs[n].dock_name].isHidden()}
        assert hidden == set(DECODING_VIEWS) and w.docks["topkDock"].isHidden() and "encoder-only" in w.status.model_label.full_text()
        assert not any(w.docks[w.views.specs[n].dock_name].toggleViewAction().isEnabled() for n in DECODING_VIEWS)
        shown = _every_shown_view_draws(qtbot, w)
        assert "masked" in shown and _kinds_offered(w) <= {"encoder"}
        ids = torch.tensor([s.bundle.src_tokenizer.encode(MASKED)])
        with torch.no_grad():
            out = _theirs(transformers.BertForMaskedLM, folder)(ids, output_attentions=True)
        probs = torch.softmax(out.logits[0].double(), -1)
        table = w.views["masked"].table
        rows = [[table.item(r, c).text() for c in range(4)] for r in range(table.rowCount())]
        masks = [i for i, t in enumerate(ids[0].tolist()) if t == s.bundle.src_tokenizer.mask_id]
        assert len(masks) == 2 and {int(r[0]) - 1 for r in rows} == set(masks)
        for position in s.masked.positions:
            want = torch.topk(probs[position.index], len(position.topk))
            assert [t[1] for t in position.topk] == want.indices.tolist()
            assert np.abs(np.array([t[2] for t in position.topk]) - want.values.numpy()).max() <= 1e-5
        shown_weights = w.grid.figure_data().values["weight"]
        want = np.stack([a[0].numpy() for a in out.attentions])
        assert shown_weights.shape == want.shape and np.abs(shown_weights - want).max() <= 1e-5
        w.open_model(default_model())
        qtbot.waitUntil(lambda: s.bundle is not None and s.bundle.config.kind == "encoder-decoder", timeout=TIMEOUT_MS)
        w.session.set_inputs("我喜欢吃鱼。", "")
        _settle(qtbot, w)
        assert not any(w.docks[w.views.specs[n].dock_name].isHidden() for n in DECODING_VIEWS if w.views.specs[n].applies(s.bundle.config))
        assert all(d.toggleViewAction().isEnabled() for n, d in w.docks.items() if n != "maskedPredictionDock")
        assert w.docks["maskedPredictionDock"].isHidden() and not w.docks["topkDock"].isHidden()
        assert w.menus.decode_menu.menuAction().isEnabled() and w.step_bar.isEnabled() and w.input_bar.target_edit.isVisibleTo(w)
        assert w.acts.back.isEnabled() and w.input_bar.source_label.text() == "Source" and w.chips.isVisibleTo(w)
    finally:
        close_window(w)
