"""The interface's words for what the core names in English (:mod:`attnviz.qt.core_text`): in
English they are the core's own text, in 简体中文 they are translated; and the attention views,
the mask view and the attribution finding speak Chinese once it is installed (tokens and
formulas kept)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6 import QtWidgets

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.analysis.attention_vs_attribution import ATTENTION_MEASURES, ATTRIBUTION_MEASURES, Importance, finding
from attnviz.core.analysis.figure_data import KIND_TITLES, AttentionFrame, ScoreForm, attention_formula
from attnviz.core.analysis.head_importance import head_label
from attnviz.core.data.pieces import WORD_START_LEGEND
from attnviz.core.decoding.strategies import BeamSearch, Greedy, Sampling
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.interventions import ABLATION_KINDS
from attnviz.qt.core_text import ablation_name, head_text, heads_text, kind_formula, kind_name, kind_title, strategy_text, word_start_legend
from attnviz.qt.sample_data import SOURCE, TARGET, sample_attention_sets, sample_masks
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.attention_grid import QtAttentionGridView
from attnviz.qt.views.attention_vs_attribution import finding_text
from attnviz.qt.views.head_detail import QtHeadDetailView
from attnviz.qt.views.lines import QtLinesView
from attnviz.qt.views.masks import QtMasksView

STRATEGIES = (Greedy(), Sampling(), Sampling(0.7, 5, 0.9, 3), BeamSearch(), BeamSearch(3, 0.0))
WORD = re.compile(r"[A-Za-z]{2,}")
# what stays in Latin letters in the Chinese views: the sample's tokens and the formulas' names
KEPT = {"SOS", "EOS", "love", "eating", "fish", "softmax", "QK", "KV", "PAD", "log", "nats", "top", "cos"}


def english_words(text: str) -> set[str]:
    """Latin words of ``text`` that are not notation (``d_k``, ``C_encoder``) nor kept."""
    return set(WORD.findall(re.sub(r"\w*_\w*", " ", text))) - KEPT


def sample_importance() -> Importance:
    """Scores over four source pieces for every measure, and their correlations, written here."""
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    names = (*ATTENTION_MEASURES, *ATTRIBUTION_MEASURES)
    rho = rng.uniform(-1, 1, (len(names), len(names)))
    question = SimpleNamespace(source=SimpleNamespace(pieces=("▁猫", "吃", "鱼", "。")))
    return Importance(question, {n: rng.normal(size=4) for n in names}, (rho + rho.T) / 2, np.zeros((1, 1, 4)), 8, 0.001)


def test_in_english_the_words_are_the_cores(qapp):
    for s in STRATEGIES:
        assert strategy_text(s) == s.describe()
    assert word_start_legend() == WORD_START_LEGEND
    assert all(kind_title(k) == t for k, t in KIND_TITLES.items()) and all(kind_formula(k) == attention_formula(k) for k in KIND_TITLES)
    assert head_text("cross", 2, 1) == head_label("cross", 2, 1) == "cross:3:2"
    heads = HeadSet.parse("cross:3:2,encoder:1:1,decoder:2:4", "mean")
    assert heads_text(heads).replace(", ", ",") == heads.text()
    assert [ablation_name(k) for k in ABLATION_KINDS] == list(ABLATION_KINDS)
    r = sample_importance()
    assert finding_text(r) == finding(r)


def test_in_chinese_the_cores_names_are_translated(chinese):
    for kind in KIND_TITLES:
        assert not WORD.search(kind_title(kind)) and not WORD.search(kind_name(kind))
    assert kind_formula("cross").startswith("A = softmax(QKᵀ/√d_k)") and "来自" in kind_formula("cross")
    assert kind_formula("decoder") == attention_formula("decoder")  # a formula without words stays
    assert head_text("encoder", 0, 1) == "编码器:1:2"
    assert all(not WORD.search(ablation_name(k)) for k in ABLATION_KINDS)
    for s in STRATEGIES:
        assert english_words(strategy_text(s)) == set(), strategy_text(s)
    assert word_start_legend() == "␣ = 词首"
    r = sample_importance()
    assert english_words(finding_text(r)) == set() and f"{r.mean_rho(ATTENTION_MEASURES, ATTRIBUTION_MEASURES):+.2f}" in finding_text(r)


# the softmax each kind's weights come from, by model: the paper's (and BART's: learned positions
# change nothing in the scores), T5's (B in its self-attentions only, no ÷√d_k anywhere)
SOFTMAXES = {
    "default": {"encoder": "softmax(QKᵀ/√d_k)", "decoder": "softmax(QKᵀ/√d_k + M)", "cross": "softmax(QKᵀ/√d_k)"},
    "t5": {"encoder": "softmax(QKᵀ + B)", "decoder": "softmax(QKᵀ + B + M)", "cross": "softmax(QKᵀ)"},
}
SOFTMAXES["bart"] = SOFTMAXES["default"]
CONFIGS = {"default": {}, "t5": {"positional": "relative", "scale_scores": False}, "bart": {"positional": "learned"}}


@pytest.mark.parametrize("model", sorted(CONFIGS))
def test_the_formula_is_the_models(model):
    config = TransformerConfig(**CONFIGS[model])
    for kind, softmax in SOFTMAXES[model].items():
        form = ScoreForm.of(config, kind)
        words = ",  Q from C_decoder,  K, V from C_encoder" if kind == "cross" else ""
        assert attention_formula(kind, form) == f"A = {softmax}{words}"
        assert kind_formula(kind, form) == attention_formula(kind, form)  # in English, the core's own text
    relative_scaled = TransformerConfig(positional="relative")
    assert attention_formula("decoder", ScoreForm.of(relative_scaled, "decoder")) == "A = softmax(QKᵀ/√d_k + B + M)"
    assert attention_formula("cross", ScoreForm.of(TransformerConfig(scale_scores=False), "cross"), str.upper).endswith("K, V FROM C_ENCODER")


@pytest.mark.parametrize("model", ["default", pytest.param("t5", marks=pytest.mark.slow), pytest.param("bart", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["grid", "head", "lines"])
def test_the_attention_views_write_the_models_formula(loaded, tiny_family, model, name):
    """The caption of each kind, as the registry feeds the view from a session on the model."""
    bundle = None if model == "default" else tiny_family(model)
    spec, view, session, ok = loaded(name, model=bundle, **({} if model == "default" else {"source": "the cat sat on the mat"}))
    assert ok
    for kind, softmax in SOFTMAXES[model].items():
        view.apply(ViewChoice(kind=kind, layer=0, head=0, mode="head"))
        text = view.title.plain_text()
        assert f"= {softmax}" in text and (model != "t5" or "√d_k" not in text), (kind, text)
        assert (" + B" in text) == (model == "t5" and kind != "cross"), (kind, text)


def shown_texts(view) -> list[str]:
    """The view's title and legend, controls and context menu."""
    texts = [view.title.plain_text()]
    for w in view.findChildren(QtWidgets.QWidget):
        if isinstance(w, QtWidgets.QComboBox):
            texts += [w.itemText(i) for i in range(w.count())]
        texts += [w.toolTip(), getattr(w, "text", lambda: "")() if isinstance(w, (QtWidgets.QLabel, QtWidgets.QAbstractButton)) else ""]
    texts += [a.text() for a in view.build_context_menu().actions()]
    return [t for t in texts if t]


@pytest.mark.parametrize("cls", [QtAttentionGridView, QtHeadDetailView, QtLinesView])
def test_the_attention_views_speak_chinese(chinese, make_view, cls):
    view = make_view(cls, (900, 600), AttentionFrame(sample_attention_sets(), TARGET[1:]))
    view.apply(ViewChoice(kind="cross", layer=1, head=2, mode="head"))
    texts = shown_texts(view)
    assert any("交叉注意力" in t for t in texts) and "导出图像…" in texts
    left = {t: english_words(t) for t in texts if english_words(t)}
    assert not left, left


def test_the_mask_view_speaks_chinese(chinese, make_view, qtbot):
    view = make_view(QtMasksView, (1400, 300), sample_masks(target=TARGET, source=SOURCE, step=3), shown=True)
    qtbot.waitUntil(lambda: view.arrangement() == "row")  # the panels in a row: the padding said in the legend
    texts = shown_texts(view)
    view.resize(900, 700)
    qtbot.waitUntil(lambda: view.arrangement() == "grid")  # the padding panels drawn, with their titles
    texts += shown_texts(view) + [p.titleLabel.text for p in view.padding.values()]
    assert any("掩码 · 解码器自注意力" in t for t in texts) and any("填充掩码 M_pad" in t for t in texts)
    assert "目标句填充 · 无" in texts
    left = {t: english_words(t) for t in texts if english_words(t)}
    assert not left, left
