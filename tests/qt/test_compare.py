"""The compare view: what it draws equals the encoder run here on both sources, with and without PE."""

from __future__ import annotations

import numpy as np
import torch

from attnviz.core.model.sites import AttentionSite
from attnviz.qt.selection import ViewChoice

from inside_fixtures import bundle
from story_helpers import APPLES, OTHER, encode

SRC = APPLES


# -- compare ------------------------------------------------------------------------------------
def test_compare_view_shows_the_permutation_without_pe(loaded, qtbot):
    spec, view, session, ok = loaded("compare")
    assert ok and view.other_text() == OTHER
    src = bundle().src_tokenizer
    a, b = src.encode(SRC), src.encode(OTHER)
    perm = [b.index(t) for t in a]
    for positional in (True, False):
        view.set_positional(positional)
        ca, cb = encode(a, positional), encode(b, positional)
        np.testing.assert_allclose(view.panels["out_a"].raw_matrix(), ca, atol=1e-5)
        np.testing.assert_allclose(view.panels["out_b"].raw_matrix(), cb, atol=1e-5)
        diff = view.panels["out_diff"].raw_matrix()
        np.testing.assert_allclose(diff, ca - cb[perm], atol=1e-5)
        assert (np.abs(diff).max() < 1e-5) == (not positional)
    assert view.pe_off.isChecked()
    t, legend = view.translations(), view.title.legend()  # one legend entry with PE, one without
    assert len(legend) == 2 and legend[0][0] != legend[1][0] and legend[1][2].startswith(f"A → {t[('A', False)]}   B → {t[('B', False)]}")
    assert f"{view.comparison().max_deviation:.2g}" in view.summary() and view.summary() in view.title.plain_text()  # the number without PE
    # the selected head's attention, as the model records it
    view.apply(ViewChoice(kind="cross", layer=1, head=2, mode="head"))
    assert (view.layer(), view.head()) == (1, 2)
    view.set_positional(True)
    _, trace = bundle().model.run_with_trace(torch.tensor([b]), torch.tensor([[2]]), names=["*self_attn.weights"])
    np.testing.assert_allclose(view.panels["att_b"].raw_matrix(), trace[AttentionSite("encoder", 1).name("weights")][2], atol=1e-5)


def test_compare_view_takes_any_second_sentence(loaded, qtbot):
    _, view, _, _ = loaded("compare")
    view.other_edit.setText("我是学生。")
    view.other_edit.editingFinished.emit()
    assert view.comparison().b.text == "我是学生。"
    assert view.panels["out_b"].raw_matrix().shape[0] == len(bundle().src_tokenizer.encode("我是学生。"))
    view.set_other("")  # back to the default
    assert view.comparison().b.text == OTHER
    view.set_other("   ")
    assert view.has_data()
    requests = []
    view.chose.connect(requests.append)
    view.head_combo.setCurrentIndex(3)
    assert requests[-1] == dict(kind="encoder", layer=0, head=3, mode="head")


def test_word_order_reaches_the_output_only_with_pe():
    """Both sentences decoded with and without the encoder's PE, against decodings written here;
    on the default model 猫吃鱼。 and 鱼吃猫。 translate alike without PE and differ with it."""
    from attnviz.core.analysis.compare import compare_both
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.session import DecodingSession
    from attnviz.core.model.interventions import NoPositional
    from attnviz.paths import default_model

    b = load_bundle(default_model())
    frame = compare_both(b.model, b.src_tokenizer, "猫吃鱼。", "鱼吃猫。", True, b.tgt_tokenizer)
    for label, text in (("A", "猫吃鱼。"), ("B", "鱼吃猫。")):
        for pe in (True, False):
            run = DecodingSession.from_bundle(b, text, interventions=() if pe else (NoPositional(),))
            run.run()
            assert frame.translations[(label, pe)] == run.translation()
    assert frame.translations[("A", False)] == frame.translations[("B", False)]
    assert frame.translations[("A", True)] != frame.translations[("B", True)]
    a0, b0 = (DecodingSession.from_bundle(b, text, interventions=(NoPositional(),)).peek().topk for text in ("猫吃鱼。", "鱼吃猫。"))
    assert [t[1] for t in a0] == [t[1] for t in b0]
    np.testing.assert_allclose([t[2] for t in a0], [t[2] for t in b0], atol=1e-6)  # the first step's distribution too, not only the argmax


def test_the_view_writes_both_translations_each_way(loaded, qtbot):
    _, view, _, ok = loaded("compare")
    t = view.translations()
    assert ok
    assert set(t) == {("A", True), ("A", False), ("B", True), ("B", False)}
    legend = " ".join(text for _, _, text in view.title.legend())
    assert all(v in legend for v in t.values())


def test_the_word_order_pair_is_marked_right_or_wrong_against_its_accepted_translations(qtbot):
    """The default on 猫吃鱼。/鱼吃猫。: each translation with PE is marked right or wrong against the
    translations the examples accept, as the model's own greedy decoding, checked here, is."""
    from attnviz.core.analysis.compare import compare_both
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.session import DecodingSession
    from attnviz.paths import default_model
    from attnviz.qt.views.compare import QtCompareView

    accepted = {"猫吃鱼。": ("the cat eats fish", "the cat eats the fish", "the cat is eating fish", "the cat is eating the fish",
                            "cats eat fish", "the cat eats a fish"),
                "鱼吃猫。": ("the fish eats the cat", "the fish eats a cat", "the fish is eating the cat", "the fish is eating a cat",
                            "fish eat cats", "a fish eats the cat")}
    b = load_bundle(default_model())
    view = QtCompareView()
    qtbot.addWidget(view)
    view.set_data(compare_both(b.model, b.src_tokenizer, "猫吃鱼。", "鱼吃猫。", True, b.tgt_tokenizer))
    expected = {}
    for label, text in (("A", "猫吃鱼。"), ("B", "鱼吃猫。")):
        run = DecodingSession.from_bundle(b, text)
        run.run()
        expected[label] = run.translation().rstrip(".").lower() in accepted[text]
    assert view.verdicts() == expected and expected["A"]
    legend = view.translation_legend()[0][2]
    assert legend.count("✓") == sum(expected.values()) and legend.count("✗") == 2 - sum(expected.values())
    if not expected["B"]:
        assert "The fish eats the cat." in legend  # the right translation beside the wrong one; data, not UI text
