"""The tour's exercises: each kind's answer and numbers against a computation written here, on a
tiny random model (LayerNorm and BatchNorm) and, where the idea needs a trained model (PE off
makes 猫吃鱼。 and 鱼吃猫。 translate alike), the bundled one; and the loader refuses an
exercise that writes its answer into the tour."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnviz.core import exercises as E
from attnviz.core.analysis.norm_batch import norm_batch_for, token_stats
from attnviz.core.data.pieces import display_piece
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced
from attnviz.core.model.interventions import NoPositional, ZeroHeads
from attnviz.core.model.sites import AttentionSite
from attnviz.core.tour_data import EXERCISE_KINDS, TourError, load_tour, parse_tour, tour_path

from tiny_models import random_model, tokenizers

SOURCE = "我喜欢吃苹果。"
TARGET = "I like eating apples."


def tiny_bundle(norm: str = "layer") -> SimpleNamespace:
    """What the exercises read of a bundle: the model, its config and its tokenizers."""
    src, tgt = tokenizers()
    model = random_model(norm=norm)
    return SimpleNamespace(model=model, config=model.config, src_tokenizer=src, tgt_tokenizer=tgt, meta={})


@pytest.fixture(scope="module")
def bundle():
    return tiny_bundle()


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def stepped(bundle, steps: int | None) -> DecodingSession:
    run = DecodingSession(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, SOURCE)
    run.go_to(steps)
    return run


def test_every_kind_of_the_tour_format_has_its_function():
    assert set(E.EXERCISES) == set(EXERCISE_KINDS)


@pytest.mark.parametrize("heads", ["selected", "mean"])
def test_cross_argmax_is_the_argmax_of_the_current_row(bundle, heads):
    q = E.Question(SOURCE, steps=3, kind="cross", layer=1, head=2)
    e = E.cross_argmax(bundle, q, heads)
    run = stepped(bundle, 3)
    a = run.accumulated("decoder.layers.1.cross_attn.weights").astype(np.float64)  # [head, query, key]
    row = (a.mean(0) if heads == "mean" else a[2])[2]  # the third step's row
    np.testing.assert_allclose(e.values, row, atol=1e-6)
    assert e.answer == int(np.argmax(row)) and len(e.choices) == len(run.src_pieces)
    assert e.numbers["row"] == 3 and e.numbers["fed"] == display_piece(run.input_pieces[2])
    assert e.is_right({e.answer}) and not e.is_right({(e.answer + 1) % len(e.choices)})


def test_next_token_offers_the_top_k_shuffled_and_the_greedy_token_is_right(bundle):
    e = E.next_token(bundle, E.Question(SOURCE, steps=2), seed=3)
    run = stepped(bundle, 2)
    with torch.no_grad():
        logits, _ = bundle.model.run_with_trace(torch.tensor([run.src_ids]), torch.tensor([run.tgt_ids]), names=[])
    p = torch.softmax(logits[0, -1].double(), -1).numpy()
    p[[bundle.config.pad_id, bundle.config.bos_id]] = 0  # never generated
    best = np.argsort(-p)[: E.NEXT_CHOICES]
    pieces = [display_piece(bundle.tgt_tokenizer.piece(int(i))) for i in best]
    assert sorted(e.choices) == sorted(pieces)
    assert e.choices[e.answer] == pieces[0] and e.numbers["prob"] == pytest.approx(p[best[0]], rel=1e-4)
    np.testing.assert_allclose(sorted(e.values), sorted(p[best]), rtol=1e-4)
    assert E.next_token(bundle, E.Question(SOURCE, steps=2), seed=3).choices == e.choices  # seeded


def test_pe_off_order_compares_the_translations_without_pe():
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model

    b = load_bundle(default_model())
    e = E.pe_off_order(b, E.Question("猫吃鱼。"))
    out = {}
    for text in ("猫吃鱼。", "鱼吃猫。"):
        run = DecodingSession(b.model, b.src_tokenizer, b.tgt_tokenizer, text, capture=False, interventions=(NoPositional(),))
        run.run()
        out[text] = run.translation()
    assert e.numbers["a_no_pe"] == out["猫吃鱼。"] and e.numbers["b_no_pe"] == out["鱼吃猫。"]
    assert e.choices[e.answer] == ("yes" if out["猫吃鱼。"] == out["鱼吃猫。"] else "no") == "yes"


def test_mask_cells_are_the_upper_triangle(bundle):
    e = E.mask_cells(bundle, E.Question(SOURCE, steps=None, kind="decoder"))
    n = min(len(stepped(bundle, None).steps), E.MAX_GRID)
    upper = np.flatnonzero(np.triu(np.ones((n, n), bool), 1))
    assert e.columns == n and len(e.choices) == n * n and list(e.answers) == list(upper)
    assert e.numbers["masked"] == n * (n - 1) // 2 and e.numbers["blocked_max"] == 0.0
    assert not e.is_right(set(e.answers) | {0}) and e.is_right(set(upper))


def test_important_head_is_the_largest_change_of_the_token_log_prob(bundle):
    q = E.Question(SOURCE, TARGET, None, "cross", 1, 0, 2)
    e = E.important_head(bundle, q)
    f = teacher_forced(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, SOURCE, TARGET)
    src, tgt_in, label = torch.tensor([f.source.ids]), torch.tensor([f.input_ids]), f.output_ids[2]

    def log_p(interventions=()) -> float:
        with torch.no_grad():
            logits, _ = bundle.model.run_with_trace(src, tgt_in, names=[], interventions=interventions)
        return float(torch.log_softmax(logits[0, 2].double(), -1)[label])

    clean = log_p()
    delta = [log_p((ZeroHeads(AttentionSite("cross", 1), (h,)),)) - clean for h in range(bundle.config.n_heads)]
    np.testing.assert_allclose(e.values, delta, atol=1e-4)
    assert e.answer == int(np.argmax(np.abs(delta))) and e.numbers["log_prob"] == pytest.approx(clean, abs=1e-4)
    assert e.numbers["token"] == display_piece(f.output_pieces[2]) and e.numbers["position"] == 3


@pytest.mark.parametrize("norm, expected", [("layer", "no"), ("batch", "yes")])
def test_norm_batch_runs_the_batch_and_the_sentence_alone(norm, expected):
    b = tiny_bundle(norm)
    e = E.norm_batch(b, E.Question(SOURCE, kind="encoder"))
    assert e.choices[e.answer] == expected
    run = stepped(b, None)
    batch = norm_batch_for(b, run.src_ids, run.input_ids)
    site = batch.get("encoder.layers.0.norm1")
    x, alone = np.asarray(site.x[0, : site.alone.shape[0]], np.float64), np.asarray(site.alone, np.float64)
    if norm == "layer":  # each token's own statistics, whatever the batch
        (m1, s1), (m2, s2) = token_stats(x), token_stats(alone)
        out1 = (x - m1[:, None]) / np.sqrt(s1[:, None] ** 2 + site.eps)
        out2 = (alone - m2[:, None]) / np.sqrt(s2[:, None] ** 2 + site.eps)
    else:  # the batch's statistics over its real tokens, against the sentence's own
        flat = np.asarray(site.x, np.float64)[np.asarray(site.valid, bool)]
        out1 = (x - flat.mean(0)) / np.sqrt(flat.var(0) + site.eps)
        out2 = (alone - alone.mean(0)) / np.sqrt(alone.var(0) + site.eps)
    change = np.abs((out1 - out2) * site.gamma).max()
    assert (change > E.NORM_TOLERANCE) == (expected == "yes") and e.numbers["change"] >= change - 1e-4
    assert e.numbers["sentences"] == len(batch.src_pieces) > 1


def test_scaling_compares_the_row_entropy_with_and_without_the_division(bundle):
    e = E.scaling(bundle, E.Question(SOURCE, kind="encoder", layer=1, head=3, query=2))
    run = stepped(bundle, None)
    s = run.accumulated("encoder.layers.1.self_attn.scores")[3, 2].astype(np.float64)  # QKᵀ before ÷√d_k
    d_k = bundle.config.d_model // bundle.config.n_heads
    scaled, unscaled = softmax(s / np.sqrt(d_k)), softmax(s)
    assert e.numbers["entropy_scaled"] == pytest.approx(entropy(scaled), abs=1e-5)
    assert e.numbers["entropy_unscaled"] == pytest.approx(entropy(unscaled), abs=1e-5)
    assert e.numbers["max_unscaled"] == pytest.approx(unscaled.max(), abs=1e-5)
    assert e.choices[e.answer] == ("sharper" if entropy(unscaled) < entropy(scaled) else "flatter")


@pytest.mark.parametrize("kind", ["cross", "decoder", "encoder"])
def test_shape_offers_the_true_shape_and_distractors(bundle, kind):
    e = E.shape(bundle, E.Question(SOURCE, TARGET, None, kind, 0, 1))
    f = teacher_forced(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, SOURCE, TARGET)
    rows = len(f.input_ids) if kind != "encoder" else len(f.source.ids)
    keys = len(f.input_ids) if kind == "decoder" else len(f.source.ids)
    assert e.choices[e.answer] == f"{rows} × {keys}" and len(set(e.choices)) == len(e.choices) == E.SHAPE_CHOICES
    assert (e.numbers["queries"], e.numbers["keys"]) == (rows, keys)


# -- the tour file -----------------------------------------------------------------------------------
def bundled_doc() -> dict:
    return json.loads(tour_path("en").read_text(encoding="utf-8"))


def with_exercise(exercise: dict, stop_id: str = "cross-attention") -> dict:
    doc = bundled_doc()
    next(s for s in doc["stops"] if s["id"] == stop_id)["exercise"] = exercise
    return doc


def test_the_bundled_tours_ask_eight_kinds():
    for language in ("en", "zh_CN"):
        kinds = [s.exercise.kind for s in load_tour(language).stops if s.exercise is not None]
        assert sorted(kinds) == sorted(EXERCISE_KINDS)


@pytest.mark.parametrize("exercise, message", [
    ({"kind": "cross-argmax", "question": "Which?", "answer": "鱼"}, "gives an answer ('answer')"),
    ({"kind": "cross-argmax", "question": "Which?", "correct": 2}, "gives an answer ('correct')"),
    ({"kind": "cross-argmax", "question": "Which?", "weight": 0.62}, "'weight' is a number to match"),
    ({"kind": "cross-argmax", "question": "Is it {head_max_weight}?"}, "quotes a measure"),
    ({"kind": "cross-argmax", "question": "Is it 0.62?"}, "writes a number (0.6…) by hand"),
    ({"kind": "guess", "question": "Which?"}, "unknown kind 'guess'"),
    ({"kind": "mask-cells", "question": "Which?"}, "asks about decoder attention, but the stop selects cross"),
    ({"kind": "shape", "question": "Which?", "heads": "mean"}, "'heads' is an option of cross-argmax"),
    ({"kind": "shape"}, "missing key 'question'"),
])
def test_an_exercise_that_holds_its_answer_is_refused(tmp_path, exercise, message):
    with pytest.raises(TourError) as info:
        parse_tour(with_exercise(exercise), tmp_path / "t.json")
    text = str(info.value)
    assert message in text and "\n" not in text and "stop 'cross-attention': exercise" in text


def test_a_translation_must_ask_the_same_exercises(tmp_path):
    from attnviz.core.tour_data import check_same_tour

    other = parse_tour(with_exercise({"kind": "cross-argmax", "question": "Which?", "heads": "mean"}), tmp_path / "zh_CN.json")
    with pytest.raises(TourError, match="its exercise differs"):
        check_same_tour(load_tour("en"), other)
