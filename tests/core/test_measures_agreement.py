"""Attention beside attribution (core/analysis/attention_vs_attribution.py): each measure against
a computation written here, the rank correlations against ranks computed here, and the tutorial's
sentence measured (where 开心 and 兴奋 rank by each measure)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

from attnviz.core.analysis.attention_vs_attribution import ATTENTION_MEASURES, finding, importance_for, rank_correlations
from attnviz.core.analysis.attribution import attribution_of
from attnviz.core.analysis.rollout import decoder_rollout, rollout
from attnviz.core.decoding.session import DecodingSession

TUTORIAL = "尽管今天下了雨，但我因为拿到了梦寐以求的工作offer而感到非常开心和兴奋。"


@pytest.fixture(scope="module")
def decoded(bundle):
    d = DecodingSession.from_bundle(bundle, "我喜欢吃苹果。")
    d.run()
    return d


def test_each_attention_measure_is_what_it_says(bundle, decoded):
    t = 2
    r = importance_for(decoded.frozen(), t, bundle.model, bundle.tgt_tokenizer, n_steps=20)
    assert r.question.position == t and r.question.token_id == decoded.output_ids[t]
    cross = np.stack([decoded.attention("cross", layer) for layer in range(decoded.n_layers("cross"))])
    np.testing.assert_allclose(r.measures["cross attention"], cross[:, :, t].mean((0, 1)), atol=1e-6)
    np.testing.assert_allclose(r.per_head, cross[:, :, t], atol=1e-6)
    enc = np.stack([decoded.attention("encoder", layer) for layer in range(decoded.n_layers("encoder"))]).astype(np.float64)
    n = enc.shape[-1]
    received = np.array([sum(enc[layer, h, :, j].sum() for layer in range(enc.shape[0]) for h in range(enc.shape[1])) for j in range(n)])
    np.testing.assert_allclose(r.measures["attention received"], received / (enc.shape[0] * enc.shape[1] * n), atol=1e-6)
    dec = np.stack([decoded.attention("decoder", layer) for layer in range(decoded.n_layers("decoder"))])[:, :, : t + 1, : t + 1]
    roll = decoder_rollout(dec, cross[:, :, : t + 1], rollout(enc))["source_normalized"][t]
    np.testing.assert_allclose(r.measures["rollout"], roll, atol=1e-6)
    assert r.measures["flow"].sum() == pytest.approx(1.0, abs=1e-6) and (r.measures["flow"] >= 0).all()


def test_each_attribution_is_the_attribution_module_s(bundle, decoded):
    r = importance_for(decoded.frozen(), 1, bundle.model, bundle.tgt_tokenizer, n_steps=20)
    for method in ("grad", "ig", "occlusion"):
        np.testing.assert_allclose(r.measures[method], attribution_of(bundle.model, r.question, method, 20).scores, atol=1e-9)
    assert r.completeness_gap is not None and r.completeness_gap < 0.05


def test_rank_correlations_are_spearman_of_the_magnitudes():
    rng = np.random.default_rng(0)
    measures = {"a": rng.normal(size=9), "b": rng.normal(size=9), "c": np.ones(9)}
    rho = rank_correlations(measures)
    ra, rb = rankdata(np.abs(measures["a"])), rankdata(np.abs(measures["b"]))
    assert rho[0, 1] == pytest.approx(np.corrcoef(ra, rb)[0, 1]) and rho[1, 0] == rho[0, 1]
    assert np.isnan(rho[0, 2]) and rho[2, 2] == 1.0  # a constant measure ranks nothing


def test_the_tutorial_sentence_measured(bundle):
    """The default model on the tutorial's sentence: for the last word it writes, where do the
    pieces of 开心 and 兴奋 rank (1 = matters most) by each measure? The figures are in the README."""
    d = DecodingSession.from_bundle(bundle, TUTORIAL)
    d.run()
    r = importance_for(d.frozen(), None, bundle.model, bundle.tgt_tokenizer)
    pieces = r.source_pieces
    feelings = [i for i, p in enumerate(pieces) if any(ch in p for ch in "开心兴奋")]
    assert len(feelings) >= 2
    ranks = {name: sorted(r.ranking(name).index(i) + 1 for i in feelings) for name in r.names}
    for name, order in ranks.items():  # the rank is the position in the magnitude order, computed here
        mags = np.abs(r.measures[name])
        assert all(int((mags > mags[i]).sum()) + 1 <= rank for i, rank in zip(sorted(feelings, key=lambda i: r.ranking(name).index(i)), order))
    print(d.translation(), r.question.token_piece, ranks)
    assert r.completeness_gap < 0.01  # integrated gradients: completeness within 1% at the default steps
    text = finding(r)
    assert pieces[r.ranking(ATTENTION_MEASURES[0])[0]] in text and "Spearman" in text
