"""The story views' numbers, checked against computations written out here: word order without
positional encoding, softmax with and without ÷√d_k, teacher forcing next to the inference loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnviz.core.analysis.compare import compare_texts, match_tokens, swap_ends
from attnviz.core.analysis.scaling import SCALED, UNSCALED, LayerScaling, random_scaling, result_scaling
from attnviz.core.analysis.teacher_free import teacher_vs_free
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced
from attnviz.core.model.modules import sinusoidal_encoding
from attnviz.core.model.sites import AttentionSite
from attnviz.paths import default_model

from tiny_models import random_model, tokenizers

SRC = "我喜欢吃苹果。"
TGT = "I like eating apples."


def _encode(model, ids, positional=True, rec=None):
    with torch.inference_mode():
        return model.encode(torch.tensor([ids]), rec, positional=positional).memory[0].numpy()


# -- the PE switch ------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_the_default_encoder_pass_keeps_its_positional_encoding(norm):
    model = random_model(norm)
    ids = [5, 6, 7, 8, 9]
    default = _encode(model, ids)
    np.testing.assert_array_equal(default, _encode(model, ids, positional=True))
    with torch.inference_mode():  # the first layer's input, written out: token embedding·√d_model + PE
        logits_default = model(torch.tensor([ids]), torch.tensor([[model.config.bos_id, 7]]))
        logits_named = model.project(model.decode(torch.tensor([[model.config.bos_id, 7]]), model.encode(torch.tensor([ids]), positional=True)))
    torch.testing.assert_close(logits_default, logits_named, rtol=0, atol=0)
    _, trace = model.run_with_trace(torch.tensor([ids]), torch.tensor([[model.config.bos_id]]), names=["encoder.embed.sum"])
    d = model.config.d_model
    tokens = model.encoder.embed.table.weight.detach()[ids].numpy() * math.sqrt(d)
    pe = sinusoidal_encoding(len(ids), d, layout=model.config.positional_layout).numpy()
    np.testing.assert_allclose(trace["encoder.embed.sum"], tokens + pe, atol=1e-5)


def test_without_pe_the_encoder_input_is_the_token_embedding_alone():
    from attnviz.core.model.trace import Recorder

    model = random_model()
    ids = [5, 6, 7, 8]
    rec = Recorder(["encoder.embed.sum"])
    _encode(model, ids, positional=False, rec=rec)
    tokens = model.encoder.embed.table.weight.detach()[ids].numpy() * math.sqrt(model.config.d_model)
    np.testing.assert_allclose(rec.trace()["encoder.embed.sum"], tokens, atol=1e-6)
    assert np.abs(_encode(model, ids, positional=False) - _encode(model, ids)).max() > 1e-2


# -- word order -----------------------------------------------------------------------------------
def test_swap_ends_turns_the_tutorials_pair_around():
    assert swap_ends("猫吃鱼。") == "鱼吃猫。"
    assert swap_ends("cats eat fish.") == "fish eat cats."
    assert swap_ends("猫") == "猫"
    np.testing.assert_array_equal(match_tokens((5, 6, 5, 7), (5, 7, 6, 5, 9)), [0, 2, 3, 1])
    np.testing.assert_array_equal(match_tokens((5, 8), (6,)), [-1, -1])


@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_without_pe_a_reordered_source_gives_reordered_encoder_outputs(norm):
    """The permutation property, written out: C_B[π(i)] = C_A[i] for the π that matches tokens."""
    model = random_model(norm)
    a, b = [5, 6, 7, 8, 9, 10], [10, 6, 8, 7, 9, 5]
    perm = [b.index(t) for t in a]
    for positional, holds in ((False, True), (True, False)):
        ca, cb = _encode(model, a, positional), _encode(model, b, positional)
        deviation = np.abs(ca - cb[perm]).max()
        assert (deviation < 1e-5) == holds, (positional, deviation)


def test_compare_texts_matches_the_encoder_written_out():
    model = random_model()
    src, _ = tokenizers()
    other = swap_ends(SRC)
    ids_a, ids_b = src.encode(SRC), src.encode(other)
    perm = [ids_b.index(t) for t in ids_a]  # every piece of this sentence is distinct
    assert len(set(ids_a)) == len(ids_a)
    for positional in (False, True):
        c = compare_texts(model, src, SRC, other, positional)
        ca, cb = _encode(model, ids_a, positional), _encode(model, ids_b, positional)
        np.testing.assert_allclose(c.a.output, ca, atol=1e-6)
        np.testing.assert_allclose(c.difference, ca - cb[perm], atol=1e-6)
        cos = np.sum(ca * cb[perm], 1) / np.linalg.norm(ca, axis=1) / np.linalg.norm(cb[perm], axis=1)
        np.testing.assert_allclose(c.cosine, cos, atol=1e-5)
        assert c.is_permutation
        assert (c.max_deviation < 1e-5) == (not positional)
        _, trace = model.run_with_trace(torch.tensor([ids_b]), torch.tensor([[model.config.bos_id]]), names=["*"])
        if positional:  # B's own attention as the model records it, put in A's order
            wb = trace[AttentionSite("encoder", 1).name("weights")][2]
            np.testing.assert_allclose(c.attention_difference[1, 2], c.a.weights[1, 2] - wb[np.ix_(perm, perm)], atol=1e-6)
        else:
            assert np.nanmax(np.abs(c.attention_difference)) < 1e-5


def test_two_unrelated_sentences_compare_where_their_tokens_meet():
    c = compare_texts(random_model(), tokenizers()[0], SRC, "我是学生。")
    assert not c.is_permutation
    assert np.isnan(c.cosine).any() and np.isfinite(c.cosine).any()
    assert np.isfinite(c.max_deviation)


def test_the_tutorials_pair_on_the_default_model():
    """猫吃鱼。 vs 鱼吃猫。: exact permutations without PE; clearly different vectors with it."""
    bundle = load_bundle(default_model())
    off = compare_texts(bundle.model, bundle.src_tokenizer, "猫吃鱼。", "鱼吃猫。", positional=False)
    on = compare_texts(bundle.model, bundle.src_tokenizer, "猫吃鱼。", "鱼吃猫。", positional=True)
    assert off.is_permutation and off.max_deviation < 1e-5
    assert on.max_deviation > 1.0
    assert on.cosine[0] < 0.95  # 猫 at position 1 vs 猫 at position 3


# -- ÷√d_k ----------------------------------------------------------------------------------------
def _softmax(x):
    x = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_scaling_statistics_recomputed_from_q_and_k(kind):
    model = random_model()
    src, tgt = tokenizers()
    session = DecodingSession(model, src, tgt, SRC, max_len=6)
    session.run()
    sites = result_scaling(session)
    d_k = model.config.d_model // model.config.n_heads
    for layer, cmp in enumerate(sites[kind]):
        site = AttentionSite(kind, layer)
        q, k = session.accumulated(site.name("q")), session.accumulated(site.name("k"))  # [head, n, d_k]
        scores = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64))
        mask = np.triu(np.full(scores.shape[1:], -np.inf), 1) if kind == "decoder" else 0.0
        scaled, unscaled = _softmax(scores / math.sqrt(d_k) + mask), _softmax(scores + mask)
        np.testing.assert_allclose(cmp.scaled, scaled, atol=1e-5)
        np.testing.assert_allclose(cmp.scaled, session.accumulated(site.name("weights")), atol=1e-5)
        np.testing.assert_allclose(cmp.unscaled, unscaled, atol=1e-5)
        np.testing.assert_allclose(cmp.max_weight[UNSCALED], unscaled.max(-1), atol=1e-5)
        ent = -np.sum(np.where(scaled > 0, scaled * np.log(np.where(scaled > 0, scaled, 1)), 0), -1)
        np.testing.assert_allclose(cmp.entropy[SCALED], ent, atol=1e-5)
    stats = LayerScaling.of(sites[kind])
    np.testing.assert_allclose(stats.max_weight[SCALED], [c.scaled.max(-1).mean() for c in sites[kind]], atol=1e-9)


def test_the_random_experiment_is_seeded_and_shows_saturation():
    a, b = random_scaling(), random_scaling(n_queries=499)
    assert a is random_scaling()  # computed once
    np.testing.assert_allclose(a.var[UNSCALED] / a.dims, 1.0, atol=0.15)  # Var(q·k) = d_k
    np.testing.assert_allclose(a.var[SCALED], 1.0, atol=0.15)  # Var(q·k/√d_k) = 1
    assert np.all(np.diff(a.max_weight[UNSCALED]) > 0) and a.max_weight[UNSCALED][-1] > 0.9  # saturates without ÷√d_k
    assert np.ptp(a.max_weight[SCALED]) < 0.05  # and does not with it
    assert not np.array_equal(a.max_weight[UNSCALED], b.max_weight[UNSCALED])


# -- teacher forcing vs the loop ----------------------------------------------------------------------
def _greedy(model, src_ids, max_len):
    """The inference loop written out: full passes over the prefix, argmax, never PAD or SOS."""
    cfg = model.config
    ids = [cfg.bos_id]
    with torch.inference_mode():
        while len(ids) <= max_len:
            logits = model(torch.tensor([src_ids]), torch.tensor([ids]))[0, -1].clone()
            logits[[cfg.pad_id, cfg.bos_id]] = -math.inf
            ids.append(int(torch.argmax(logits)))
            if ids[-1] == cfg.eos_id:
                break
    return ids


@pytest.mark.parametrize("seed", [0, 1])
def test_teacher_vs_free_against_full_passes_and_greedy_decoding(seed):
    model = random_model(seed=seed)
    src, tgt = tokenizers()
    forced = teacher_forced(model, src, tgt, SRC, TGT)
    r = teacher_vs_free(model, src, tgt, forced)
    cfg = model.config
    y = tgt.encode(TGT)
    assert r.teacher.fed_ids == (cfg.bos_id, *y) and r.reference_ids == (*y, cfg.eos_id)
    with torch.inference_mode():
        logits = model(torch.tensor([src.encode(SRC)]), torch.tensor([[cfg.bos_id, *y]]))[0]
    assert r.teacher.predicted_ids == tuple(int(i) for i in logits.argmax(-1))
    path = _greedy(model, src.encode(SRC), min(cfg.max_len, 2 * len(src.encode(SRC)) + 10))
    assert r.free.fed_ids == tuple(path[:-1]) and r.free.predicted_ids == tuple(path[1:])
    ref, free = r.reference_ids, r.free.predicted_ids
    departs = next((i for i, (a, b) in enumerate(zip(ref, free)) if a != b), None)
    if departs is None and len(ref) != len(free):
        departs = min(len(ref), len(free))
    assert r.departure == departs
    if departs is not None and departs < len(free):  # the same prefix up to there: the same argmax (the loop bans PAD, SOS)
        assert r.teacher.predicted_ids[departs] in (free[departs], cfg.pad_id, cfg.bos_id)
    with torch.inference_mode():
        _, trace = model.run_with_trace(torch.tensor([src.encode(SRC)]), torch.tensor([path[:-1]]), names=["*cross_attn.weights"])
    np.testing.assert_allclose(r.free.cross[1], trace[AttentionSite("cross", 1).name("weights")], atol=1e-5)
