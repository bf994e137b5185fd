"""The one-head walkthrough: every recomputed step equals the array the model recorded."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnviz.core import Transformer, TransformerConfig
from attnviz.core.analysis.walkthrough import CHECKED, STAGES, WalkthroughError, attention_parameters, head_walkthrough
from attnviz.core.data.tokenizer import BOS_ID
from attnviz.core.model.sites import AttentionSite

VARIANTS = [
    dict(norm="layer", norm_placement="post"),
    dict(norm="layer", norm_placement="pre"),
    dict(norm="batch", norm_placement="post"),
]
SRC = [[5, 6, 7, 8, 9, 10]]
TGT = [[BOS_ID, 11, 12, 13, 4]]


def make_model(seed: int = 0, **kw) -> Transformer:
    torch.manual_seed(seed)
    cfg = TransformerConfig(src_vocab_size=30, tgt_vocab_size=20, d_model=24, n_heads=3, n_encoder_layers=2, n_decoder_layers=2,
                            d_ff=32, max_len=32, **kw)
    model = Transformer(cfg)
    if cfg.norm == "batch":  # running statistics that are not the initial 0/1
        model.train()
        with torch.no_grad():
            model(torch.randint(4, 30, (4, 7)), torch.randint(4, 20, (4, 6)))
    return model.eval()


def full_trace(model: Transformer, src=SRC, tgt=TGT):
    with torch.inference_mode():
        _, trace = model.run_with_trace(torch.tensor(src), torch.tensor(tgt))
    return trace


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v['norm']}-{v['norm_placement']}")
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_every_recomputed_step_equals_the_recorded_one(variant, kind):
    model = make_model(**variant)
    trace = full_trace(model)
    cfg = model.config
    for layer in range(2):
        prefix = AttentionSite(kind, layer).path
        for head in range(cfg.n_heads):
            w = head_walkthrough(model, trace, kind, layer, head)
            w.verify(1e-5)
            assert set(w.errors) == set(CHECKED) and max(w.errors.values()) < 1e-5
            tol = dict(rtol=1e-4, atol=1e-5)
            np.testing.assert_array_equal(w.x, trace[f"{prefix}.input"])
            np.testing.assert_array_equal(w.x_kv, trace[f"{prefix}.memory"] if kind == "cross" else trace[f"{prefix}.input"])
            for name in ("q", "k", "v", "scores", "scaled_scores", "weights", "z"):
                np.testing.assert_allclose(getattr(w, name), trace[f"{prefix}.{name}"][head], **tol, err_msg=name)
            masked = trace[f"{prefix}.masked_scores"][head]
            assert np.array_equal(np.isinf(w.masked_scores), np.isinf(masked))
            np.testing.assert_allclose(w.masked_scores[np.isfinite(masked)], masked[np.isfinite(masked)], **tol)
            np.testing.assert_array_equal(w.mask, trace[f"{prefix}.mask"])
            np.testing.assert_allclose(w.concat, trace[f"{prefix}.concat"], **tol)
            np.testing.assert_allclose(w.output, trace[f"{prefix}.output"], **tol)
            # Z_i sits in columns i*d_k..(i+1)*d_k of the concat, which meet the same rows of W^O
            lo, hi = w.head_columns
            assert (lo, hi) == (head * cfg.d_k, (head + 1) * cfg.d_k)
            np.testing.assert_allclose(w.concat[:, lo:hi], w.z, rtol=1e-6, atol=1e-7)
            np.testing.assert_array_equal(w.w_o_head, w.w_o[lo:hi])
            np.testing.assert_allclose(w.head_output, w.z @ w.w_o_head, rtol=1e-5, atol=1e-6)
            # the head's slices of the weights, in the tutorial's orientation (Q_i = X W_i^Q)
            attn = AttentionSite(kind, layer).module(model)
            np.testing.assert_array_equal(w.w_q, attn.w_q.weight.detach().numpy()[lo:hi].T)
            np.testing.assert_array_equal(w.b_v, attn.w_v.bias.detach().numpy()[lo:hi])
            assert w.scale == pytest.approx(math.sqrt(cfg.d_k))


def test_the_heads_shares_add_up_to_the_output():
    model = make_model()
    trace = full_trace(model)
    walks = [head_walkthrough(model, trace, "cross", 1, h) for h in range(3)]
    total = sum(w.head_output.astype(np.float64) for w in walks) + walks[0].b_o
    np.testing.assert_allclose(total, trace["decoder.layers.1.cross_attn.output"], rtol=1e-4, atol=1e-5)


def test_softmax_rows_and_the_look_ahead_mask():
    model = make_model()
    w = head_walkthrough(model, full_trace(model), "decoder", 0, 1)
    n = len(TGT[0])
    np.testing.assert_allclose(w.weights.sum(-1), 1.0, atol=1e-6)
    upper = np.triu(np.ones((n, n), bool), 1)
    assert np.all(w.weights[upper] == 0.0) and np.all(np.isneginf(w.mask[upper])) and np.all(w.mask[~upper] == 0.0)
    assert np.all(np.isneginf(w.masked_scores[upper]))
    assert np.all(np.isfinite(w.scores))  # QKᵀ itself is computed everywhere
    assert w.query == n - 1 and np.array_equal(w.query_row, w.weights[-1])
    np.testing.assert_allclose(w.xx_t, w.x.astype(np.float64) @ w.x_kv.T.astype(np.float64), rtol=1e-5, atol=1e-5)
    assert [n for n, _ in STAGES if n != "position_bias"] == [n for n, _, _ in w.stages()]  # B: only a model with a position bias


def test_a_decoding_session_gives_the_full_pass_numbers():
    """The cached, step-by-step decoder (KV cache) and a full pass over the same tokens agree."""
    from attnviz.core.decoding.session import DecodingSession

    from decoding_fixtures import random_bundle

    bundle = random_bundle()
    session = DecodingSession.from_bundle(bundle, "我喜欢吃苹果。", max_len=6)
    for _ in range(4):
        session.step()
    model = bundle.model
    trace = full_trace(model, [list(session.src_ids)], [list(session.tgt_ids[:-1])])
    from attnviz.core.analysis.walkthrough import session_walkthrough

    for kind in ("encoder", "decoder", "cross"):
        stepwise = session_walkthrough(model, session, kind, 1, 2)
        stepwise.verify(1e-5)
        full = head_walkthrough(model, trace, kind, 1, 2)
        for name in ("x", "q", "k", "v", "z", "output"):
            np.testing.assert_allclose(getattr(stepwise, name), getattr(full, name), rtol=1e-4, atol=1e-5, err_msg=f"{kind} {name}")
        np.testing.assert_allclose(stepwise.weights, full.weights, atol=1e-6)
        assert stepwise.query_labels == (session.src_pieces if kind == "encoder" else session.input_pieces)
        assert stepwise.key_labels == (session.input_pieces if kind == "decoder" else session.src_pieces)
        assert stepwise.query == len(stepwise.query_labels) - 1


def test_a_changed_weight_is_caught():
    model = make_model()
    trace = full_trace(model)
    with torch.no_grad():
        model.decoder.layers[0].cross_attn.w_k.weight[4, 0] += 0.5  # head 1 of 3 (d_k = 8) owns rows 0..7
    with pytest.raises(WalkthroughError, match="step k differs"):
        head_walkthrough(model, trace, "cross", 0, 0).verify()
    other = head_walkthrough(model, trace, "cross", 0, 1)  # its own steps still match; the concat (head 1's Z) does not
    assert max(other.errors[n] for n in ("q", "k", "v", "weights", "z")) < 1e-5
    assert other.errors["concat"] > 1e-4
    with pytest.raises(WalkthroughError, match="step concat differs"):
        other.verify()
    params = attention_parameters(model, "cross", 0)
    assert params["w_k"].shape == (24, 24) and params["b_o"].shape == (24,)


def test_bad_requests_have_one_line_errors():
    model = make_model()
    trace = full_trace(model)
    with pytest.raises(WalkthroughError, match="kind"):
        head_walkthrough(model, trace, "self", 0, 0)
    with pytest.raises(WalkthroughError, match="head 3 does not exist"):
        head_walkthrough(model, trace, "encoder", 0, 3)
    with pytest.raises(WalkthroughError, match="layer 5 does not exist"):
        head_walkthrough(model, trace, "encoder", 5, 0)
    with pytest.raises(WalkthroughError, match="query row 9"):
        head_walkthrough(model, trace, "encoder", 0, 0, query=9)
    with pytest.raises(WalkthroughError, match="was it captured"):
        head_walkthrough(model, trace.select("encoder.*"), "cross", 0, 0)
    # one cached decoding step holds one query row and not the earlier inputs
    from attnviz.core.decoding.session import DecodingSession

    from decoding_fixtures import random_bundle

    b = random_bundle()
    s = DecodingSession.from_bundle(b, "我是学生。", max_len=5)
    s.step()
    step = s.step()
    with pytest.raises(WalkthroughError, match="single cached step"):
        head_walkthrough(b.model, step.trace, "decoder", 0, 0)
    w = head_walkthrough(model, trace, "encoder", 0, 0, query=2)
    assert w.with_query(4).query == 4 and w.with_query(4).q is w.q
    with pytest.raises(WalkthroughError):
        w.with_query(6)
