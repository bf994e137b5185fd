"""Analyses: head statistics, alignment, rollout, norm statistics (against torch's own norms),
positional encoding, and HSK alignment scoring."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnviz.core.analysis import stats as an
from attnviz.core.analysis.alignment import (
    alignment_accuracy,
    english_words,
    evaluate_hsk_alignment,
    gloss_words,
    hsk_records,
    normalize_word,
    piece_spans,
    reference_pairs,
)
from attnviz.core.analysis.rollout import decoder_rollout, rollout
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced
from attnviz.core.model.modules import sinusoidal_encoding
from attnviz.paths import default_model

from decoding_fixtures import random_bundle, random_model, tokenizers

# A 4x4 asymmetric attention matrix: every row has a different argmax and max.
A4 = np.array([
    [0.70, 0.10, 0.10, 0.10],
    [0.05, 0.05, 0.80, 0.10],
    [0.25, 0.25, 0.25, 0.25],
    [0.00, 0.60, 0.00, 0.40],
])


# -- head statistics and alignment ------------------------------------------------------------------
def test_head_statistics_on_hand_made_heads():
    one_hot = np.eye(4)[[1, 0, 3, 3]]  # rows attend to keys 1, 0, 3, 3
    uniform = np.full((4, 4), 0.25)
    stats = an.head_statistics(np.stack([one_hot, uniform, A4]))
    assert stats["entropy"].shape == (3,)
    assert stats["entropy"][0] == 0.0
    assert stats["entropy"][1] == pytest.approx(math.log(4))
    row_h = [-(0.7 * math.log(0.7) + 3 * 0.1 * math.log(0.1)), -(2 * 0.05 * math.log(0.05) + 0.8 * math.log(0.8) + 0.1 * math.log(0.1)),
             math.log(4), -(0.6 * math.log(0.6) + 0.4 * math.log(0.4))]
    assert stats["entropy"][2] == pytest.approx(np.mean(row_h))
    # distances |q - k|: one-hot rows 1, 1, 1, 0 -> 0.75; uniform: mean over rows of mean |q - k|
    assert stats["distance"][0] == pytest.approx(0.75)
    assert stats["distance"][1] == pytest.approx(np.mean([np.mean(np.abs(q - np.arange(4))) for q in range(4)]))
    assert stats["max_weight"][0] == 1.0 and stats["max_weight"][1] == 0.25
    assert stats["max_weight"][2] == pytest.approx((0.7 + 0.8 + 0.25 + 0.6) / 4)
    # a decoder step row (query at position 3, keys 0..3)
    assert an.mean_distance(A4[3:], query_offset=3) == pytest.approx(0.6 * 2 + 0.4 * 0)


def test_alignment_picks_the_argmax_key_of_each_query():
    assert an.alignment(A4).tolist() == [0, 2, 0, 1]
    pairs = an.alignment_pairs(A4, ["SOS", "I", "am", "EOS"], ["我", "是", "学生", "。"])
    assert pairs == [("SOS", "我", 0.7), ("I", "学生", 0.8), ("am", "我", 0.25), ("EOS", "是", 0.6)]
    assert an.alignment(np.stack([A4, A4.T])).shape == (2, 4)


def test_alignment_accuracy_of_a_hand_made_attention():
    # two heads, 3 target rows, 4 source keys
    head0 = np.array([[0.9, 0.1, 0, 0], [0, 0.2, 0.7, 0.1], [0.1, 0.1, 0.1, 0.7]])  # argmax 0, 2, 3
    head1 = np.array([[0, 0, 0, 1.0], [0.6, 0.4, 0, 0], [0, 0.5, 0.4, 0.1]])  # argmax 3, 0, 1
    w = np.stack([head0, head1])
    pairs = [(0, {0}), (1, {1, 2}), (2, {1}, "word")]
    acc = alignment_accuracy(w, pairs)
    assert acc.tolist() == pytest.approx([2 / 3, 1 / 3])
    # the "fed" rows: target position p is read at row p + 1 (the last pair has no such row)
    assert alignment_accuracy(w, pairs, row_shift=1).tolist() == pytest.approx([0.0, 1.0])
    assert alignment_accuracy(w[None], pairs).shape == (1, 2)
    assert np.isnan(alignment_accuracy(w, [])).all()


# -- rollout -------------------------------------------------------------------------------------------
def test_rollout_by_hand_on_two_tokens():
    a = np.array([[[1.0, 0.0], [0.5, 0.5]]])  # one head
    # Ã = 0.5 A + 0.5 I = [[1, 0], [0.25, 0.75]];  Ã·Ã = [[1, 0], [0.25 + 0.1875, 0.5625]]
    assert np.allclose(rollout([a]), [[1.0, 0.0], [0.25, 0.75]])
    assert np.allclose(rollout([a, a]), [[1.0, 0.0], [0.4375, 0.5625]])


def test_rollout_equals_a_direct_reference_computation():
    rng = np.random.default_rng(0)
    layers = rng.random((3, 2, 4, 4))
    layers /= layers.sum(-1, keepdims=True)
    ref = np.eye(4)
    for layer in layers:  # written out element by element
        mean = np.zeros((4, 4))
        for h in range(2):
            mean += layer[h] / 2
        mixed = np.zeros((4, 4))
        for i in range(4):
            for j in range(4):
                mixed[i, j] = 0.5 * mean[i, j] + (0.5 if i == j else 0.0)
            mixed[i] /= mixed[i].sum()
        out = np.zeros((4, 4))
        for i in range(4):
            for j in range(4):
                out[i, j] = sum(mixed[i, k] * ref[k, j] for k in range(4))
        ref = out
    got = rollout(layers)
    assert np.allclose(got, ref) and np.allclose(got.sum(-1), 1.0)
    assert not np.allclose(rollout(layers[::-1]), ref)  # the order of the layers matters


def test_decoder_rollout_by_hand_and_its_rows_sum_to_one():
    self_a = np.ones((1, 1, 1, 1))
    cross = np.array([[[[0.2, 0.8]]]])
    r = decoder_rollout(self_a, cross)
    # R = 0.5 [1 | 0 0] + 0.5 [0 | 0.2 0.8]
    assert np.allclose(r["target"], [[0.5]]) and np.allclose(r["source"], [[0.1, 0.4]])
    assert np.allclose(r["source_normalized"], [[0.2, 0.8]])
    enc = np.array([[0.5, 0.5], [0.0, 1.0]])
    assert np.allclose(decoder_rollout(self_a, cross, enc)["source"], 0.5 * cross[0, 0] @ enc)
    rng = np.random.default_rng(1)
    s_layers = np.tril(rng.random((2, 3, 5, 5)))
    s_layers /= s_layers.sum(-1, keepdims=True)
    c_layers = rng.random((2, 3, 5, 7))
    c_layers /= c_layers.sum(-1, keepdims=True)
    e = rollout(rng.random((2, 3, 7, 7)))
    r = decoder_rollout(s_layers, c_layers, e)
    assert np.allclose(r["source"].sum(-1) + r["target"].sum(-1), 1.0)
    assert np.allclose(np.triu(r["target"], 1), 0.0)  # no relevance from future target tokens
    # two layers written out: self, cross, self, cross
    R = np.hstack([np.eye(5), np.zeros((5, 7))])
    for sa, ca in zip(s_layers, c_layers):
        m = 0.5 * sa.mean(0) + 0.5 * np.eye(5)
        R = (m / m.sum(-1, keepdims=True)) @ R
        R = 0.5 * R + 0.5 * np.hstack([np.zeros((5, 5)), ca.mean(0) @ e])
    assert np.allclose(r["source"], R[:, 5:])


# -- normalization -------------------------------------------------------------------------------------
def test_layer_norm_statistics_equal_torch_layer_norm():
    m = random_model("layer", "post", seed=2)
    src, tgt = tokenizers()
    tf = teacher_forced(m, src, tgt, "我是学生。", "I am a student.")
    sites = an.norm_sites(tf.trace)
    assert sites[:2] == ["encoder.layers.0.norm1", "encoder.layers.0.norm2"] and len(sites) == 2 * 2 + 2 * 3
    for site in sites:
        st = an.norm_statistics(tf.trace, site)
        x = torch.tensor(tf.trace[f"{site}.input"], dtype=torch.float64)
        assert st.kind == "layer" and st.input_mean.shape == (x.shape[0],)
        assert np.allclose(st.input_mean, x.mean(-1).numpy()) and np.allclose(st.input_std, x.std(-1, unbiased=False).numpy())
        module = m.get_submodule(site)  # module paths are trace prefixes
        ln = torch.nn.LayerNorm(x.shape[-1], eps=m.config.norm_eps, dtype=torch.float64)
        with torch.no_grad():
            ln.weight.copy_(module.weight)
            ln.bias.copy_(module.bias)
            y = ln(x)
        assert np.allclose(tf.trace[f"{site}.output"], y.numpy(), atol=1e-5)
        assert np.allclose(st.output_mean, y.mean(-1).numpy(), atol=1e-5) and np.allclose(st.output_std, y.std(-1, unbiased=False).numpy(), atol=1e-5)


def test_batch_norm_statistics_equal_torch_batch_norm():
    m = random_model("batch", "pre", seed=3)
    s = DecodingSession(m, *tokenizers(), "我是学生。", max_len=8)
    s.run()
    for site in ("encoder.layers.1.norm2", "decoder.layers.0.norm2"):
        arrays = {k: s.accumulated(f"{site}.{k}") for k in ("input", "output", "batch_mean", "batch_var", "running_mean", "running_var")}
        st = an.norm_statistics({f"{site}.{k}": v for k, v in arrays.items()}, site)
        assert st.kind == "batch"
        x = torch.tensor(arrays["input"], dtype=torch.float64)  # [tokens, d_model]
        ref = torch.nn.BatchNorm1d(x.shape[1], eps=m.config.norm_eps, momentum=1.0, dtype=torch.float64).train()
        module = m.get_submodule(site)  # module paths are trace prefixes
        with torch.no_grad():
            ref.weight.copy_(module.weight)
            ref.bias.copy_(module.bias)
            ref(x)  # momentum 1: running statistics become this batch's (mean; unbiased var)
        n = x.shape[0]
        assert np.allclose(st.batch_mean, ref.running_mean.numpy(), atol=1e-5)
        assert np.allclose(st.batch_var * n / (n - 1), ref.running_var.numpy(), atol=1e-4)
        assert np.allclose(st.running_mean, module.running_mean.numpy()) and np.allclose(st.running_var, module.running_var.numpy())
        ev = torch.nn.BatchNorm1d(x.shape[1], eps=m.config.norm_eps, dtype=torch.float64).eval()
        with torch.no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                getattr(ev, name).copy_(getattr(module, name))
            y = ev(x)
        assert np.allclose(arrays["output"], y.numpy(), atol=1e-5)  # the model normalizes with running statistics
        assert st.output_mean.shape == (m.config.d_model,)
        assert np.allclose(st.output_mean, y.mean(0).numpy(), atol=1e-5)


def test_compare_norms_gives_torch_layer_norm_and_batch_norm_of_the_same_activations():
    rng = np.random.default_rng(4)
    x = rng.normal(2.0, 3.0, (7, 16))
    valid = np.array([1, 1, 1, 1, 1, 0, 0], bool)
    c = an.compare_norms(x, valid)
    t = torch.tensor(x)
    ln = torch.nn.LayerNorm(16, elementwise_affine=False, dtype=torch.float64)
    bn = torch.nn.BatchNorm1d(16, affine=False, momentum=1.0, dtype=torch.float64).train()
    assert np.allclose(c.layer_output, ln(t).numpy())
    assert np.allclose(c.batch_output[valid], bn(t[torch.tensor(valid)]).detach().numpy())
    assert c.layer_mean.shape == (7,) and c.batch_mean.shape == (16,)  # the two axes
    assert np.allclose(c.batch_mean, bn.running_mean.numpy())
    assert np.allclose(c.batch_std ** 2 * 5 / 4, bn.running_var.numpy())
    assert np.allclose(c.layer_output.mean(-1), 0) and np.allclose(c.batch_output[valid].mean(0), 0)
    with pytest.raises(ValueError):
        an.compare_norms(x[None])


# -- positional encoding ---------------------------------------------------------------------------------
def test_positional_encoding_analyses():
    pe = an.positional_encoding(20, 16)
    assert np.allclose(pe, sinusoidal_encoding(20, 16).numpy(), atol=1e-6)
    assert pe[3, 4] == pytest.approx(math.sin(3 / 10000 ** (4 / 16)))
    curves = an.positional_curves(pe, [0, 5])
    assert curves.shape == (2, 20) and np.array_equal(curves[1], pe[:, 5])
    sim = an.positional_similarity(pe)
    assert sim.shape == (20, 20) and np.allclose(sim, sim.T) and np.allclose(np.diag(sim), 8.0)
    assert sim[0, 1] > sim[0, 10]  # nearby positions are more alike
    assert np.allclose(np.diag(an.positional_similarity(pe, cosine=True)), 1.0)
    s = DecodingSession(random_model(), *tokenizers(), "我是学生。")
    tokens, pos = s.accumulated("encoder.embed.tokens"), s.accumulated("encoder.embed.positional")
    r = an.embedding_positional_ratio(tokens, pos)
    assert np.allclose(r["ratio"], np.linalg.norm(pos, axis=-1) / np.linalg.norm(tokens, axis=-1))
    assert np.allclose(r["positional_norm"], math.sqrt(16))  # sqrt(d_model / 2), d_model 32


# -- HSK alignment ---------------------------------------------------------------------------------------
def test_word_helpers():
    assert normalize_word("Teachers") == normalize_word("teacher")
    assert normalize_word("liked") == normalize_word("likes") == normalize_word("like")
    assert normalize_word("watches") == normalize_word("watch")
    assert gloss_words("you (courteous, as opposed to informal 你[ni3])") == {"you"}
    assert gloss_words("to go; to leave") == {"go", "leav"}
    assert gloss_words("see 延長縣|延长县[Yan2 chang2 Xian4]") == set()
    assert [w for w, _, _ in english_words("He went to the school.")] == ["he", "went", "school"]
    assert piece_spans("Hello, teacher!", ["▁He", "llo", ",", "▁teacher", "!"]) == [(0, 2), (2, 5), (5, 6), (7, 14), (14, 15)]
    assert piece_spans("老师X您好", ["老师", "<unk>", "您", "好"]) == [(0, 2), (2, 3), (3, 4), (4, 5)]


def test_reference_pairs_from_glosses():
    src, tgt = tokenizers()
    record = {
        "chinese": "老师，您好！",
        "translation": {"en": "Hello, teacher!"},
        "tokens": [
            {"word": "老师", "gloss_en": "teacher"},
            {"word": "您", "gloss_en": "you (courteous)"},
            {"word": "好", "gloss_en": "good; well; hello"},
        ],
    }
    ref = reference_pairs(record, src, tgt)
    sp, tp = src.encode_pieces(record["chinese"]), tgt.encode_pieces(record["translation"]["en"])
    got = {(tp[p], "".join(sp[i] for i in sorted(allowed)), w) for p, allowed, w in ref.pairs}
    hello = {(tp[i], "好", "hello") for i, piece in enumerate(tp) if piece.replace("▁", "") in "Hello" and piece.strip("▁")}
    teacher = {(tp[i], "老师", "teacher") for i, piece in enumerate(tp) if piece.strip("▁") and piece.replace("▁", "") in "teacher" and i > 2}
    assert got == hello | teacher
    # scoring a hand-made cross-attention for this sentence: right everywhere, then wrong everywhere
    w = np.zeros((len(tp) + 1, len(sp)))
    for p, allowed, _ in ref.pairs:
        w[p, min(allowed)] = 1.0
    assert alignment_accuracy(w, ref.pairs) == 1.0
    assert sp[:2] == ["老", "师"] or sp[0] == "老师"
    assert alignment_accuracy(np.roll(w, 2, axis=1), ref.pairs) == 0.0


def test_hsk_alignment_evaluation_on_the_default_model_or_a_stand_in():
    path = default_model()
    if (path / "model.safetensors").is_file() and (path / "meta.json").is_file():
        bundle = load_bundle(path)  # the bundled default
    else:
        bundle = random_bundle(seed=1)  # a stand-in with the same interface
    records = hsk_records("test")
    assert 150 < len(records) < 300  # 5 % of 4,354
    from attnviz.core.data.corpora import split_of

    assert all(split_of(r["id"]) == "test" for r in records)
    report = evaluate_hsk_alignment(bundle, records[:12])
    cfg = bundle.config
    assert report["sentences"] > 0
    for rows in ("predicting", "fed"):
        r = report[rows]
        assert r["pairs"] > 0
        per_head = np.array(r["per_head"])
        assert per_head.shape == (cfg.n_decoder_layers, cfg.n_heads)
        assert ((per_head >= 0) & (per_head <= 1)).all()
        assert r["best"]["accuracy"] == per_head.max()
        assert per_head[r["best"]["layer"], r["best"]["head"]] == per_head.max()
        for key in ("mean", "rollout", "chance", "diagonal"):
            assert 0.0 <= r[key] <= 1.0
        assert len(r["layer_mean"]) == cfg.n_decoder_layers
