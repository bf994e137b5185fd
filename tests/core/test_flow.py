"""Attention flow (core/analysis/flow.py) against max-flows computed here another way (minimum cuts
enumerated, a linear program), against rollout (a lower bound), and on cases worked by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from attnviz.core.analysis.flow import decoder_flow, encoder_flow, max_flows, trace_flow
from attnviz.core.analysis.rollout import decoder_rollout, rollout
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.core.model.sites import AttentionSite

TOL = 1e-5  # capacities are rounded to 1e-6 (flow.SCALE); a cut of a few edges moves by a few 1e-7


def attention(rng, layers, heads, q, k, causal=False):
    """Random ``[layer, head, q, k]`` weights whose rows sum to 1 (lower-triangular when ``causal``)."""
    a = rng.random((layers, heads, q, k)) ** 3  # peaked rows, some near 0
    if causal:
        a = np.tril(a)
    return a / a.sum(-1, keepdims=True)


def graph_by_hand(weights):
    """Ã = rownorm(0.5 · mean_h A + 0.5 · I) of ``[head, n, n]``, written out element by element."""
    heads, n, _ = weights.shape
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.5 * sum(weights[h, i, j] for h in range(heads)) / heads + (0.5 if i == j else 0.0)
        out[i] /= out[i].sum()
    return out


def min_cut(capacity, s, t):
    """The smallest total capacity of the edges leaving a node set that holds ``s`` and not ``t``,
    over every such set (max-flow = min-cut)."""
    n = len(capacity)
    others = [v for v in range(n) if v not in (s, t)]
    best = np.inf
    for bits in itertools.product((False, True), repeat=len(others)):
        inside = np.zeros(n, dtype=bool)
        inside[s] = True
        inside[[v for v, b in zip(others, bits) if b]] = True
        best = min(best, capacity[inside][:, ~inside].sum())
    return best


def lp_max_flow(capacity, s, t):
    """Maximum flow ``s -> t`` as a linear program: one variable per edge, 0 <= f_e <= c_e,
    conservation at every other node, maximise what leaves ``s``."""
    edges = list(zip(*np.nonzero(capacity)))
    n = len(capacity)
    conserve = np.zeros((n, len(edges)))
    for e, (u, v) in enumerate(edges):
        conserve[u, e] += 1.0
        conserve[v, e] -= 1.0
    inner = [v for v in range(n) if v not in (s, t)]
    gain = -conserve[s]  # linprog minimises: - (out of s - into s)
    res = linprog(gain, A_eq=conserve[inner], b_eq=np.zeros(len(inner)), bounds=[(0, capacity[e]) for e in edges], method="highs")
    assert res.status == 0
    return -res.fun


def stack_capacity(layers):
    """The layered graph of a self-attention stack built here: node l·n + p is position p at boundary l."""
    n, depth = layers[0].shape[-1], len(layers)
    cap = np.zeros(((depth + 1) * n, (depth + 1) * n))
    for layer, weights in enumerate(layers):
        cap[(layer + 1) * n:(layer + 2) * n, layer * n:(layer + 1) * n] = graph_by_hand(weights)
    return cap


# -- max_flows against other max-flow computations ----------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_max_flows_equal_the_minimum_cut_on_small_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 9))
    cap = rng.random((n, n)) * (rng.random((n, n)) < 0.5)  # about half the edges, both directions possible
    np.fill_diagonal(cap, 0.0)
    sources, sinks = [0, 1], [n - 1, n - 2]
    got = max_flows(cap, sources, sinks)
    want = np.array([[min_cut(cap, s, t) for t in sinks] for s in sources])
    np.testing.assert_allclose(got, want, atol=TOL)


@pytest.mark.parametrize("seed", range(3))
def test_encoder_flow_equals_a_linear_program_on_the_layered_graph(seed):
    rng = np.random.default_rng(10 + seed)
    layers = attention(rng, 3, 2, 4, 4)
    cap, n = stack_capacity(layers), 4
    want = np.array([[lp_max_flow(cap, 3 * n + i, j) for j in range(n)] for i in range(n)])
    np.testing.assert_allclose(encoder_flow(layers), want, atol=TOL)
    assert not np.allclose(want, rollout(layers), atol=1e-3)  # flow is not rollout under another name


# -- bounds: rollout <= flow <= 1 -----------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_flow_lies_between_rollout_and_one_on_random_attention(seed):
    rng = np.random.default_rng(20 + seed)
    n, t = int(rng.integers(2, 9)), int(rng.integers(1, 7))
    enc = attention(rng, 3, 4, n, n)
    flow, roll = encoder_flow(enc), rollout(enc)
    assert (roll <= flow + TOL).all() and (flow <= 1 + TOL).all()
    dec, cross = attention(rng, 2, 4, t, t, causal=True), attention(rng, 2, 4, t, n)
    for e_layers, e_roll in ((None, None), (enc, roll)):
        got = decoder_flow(dec, cross, e_layers)["source"]
        assert (decoder_rollout(dec, cross, e_roll)["source"] <= got + TOL).all() and (got <= 1 + TOL).all()


@pytest.fixture(scope="module")
def forced(bundle):
    """A teacher-forced pass over the greedy translation: every attention block's weights."""
    text = "我明天去北京。"
    session = DecodingSession.from_bundle(bundle, text, capture=False)
    session.run()
    return teacher_forced_from_bundle(bundle, text, session.translation(), names=["*.weights"])


def weights(trace, kind):
    return [trace[AttentionSite(kind, i).name("weights")] for i in range(3)]


def test_flow_lies_between_rollout_and_one_on_the_default_model(forced):
    enc, dec, cross = (weights(forced.trace, k) for k in ("encoder", "decoder", "cross"))
    flow, roll = encoder_flow(enc), rollout(enc)
    assert (roll <= flow + TOL).all() and (flow <= 1 + TOL).all()
    assert (flow - roll).max() > 0.05  # widest routes carry more than the products of the weights
    got = decoder_flow(dec, cross, enc)["source"]
    assert (decoder_rollout(dec, cross, roll)["source"] <= got + TOL).all() and (got <= 1 + TOL).all()


# -- cases worked by hand ------------------------------------------------------------------------------
def test_one_layer_flow_is_that_layer_s_graph():
    a = np.array([[[1.0, 0.0], [0.5, 0.5]]])  # Ã = 0.5 A + 0.5 I = [[1, 0], [0.25, 0.75]]: one edge per pair
    np.testing.assert_allclose(encoder_flow([a]), [[1.0, 0.0], [0.25, 0.75]], atol=TOL)
    layer = attention(np.random.default_rng(3), 1, 4, 6, 6)
    np.testing.assert_allclose(encoder_flow(layer), graph_by_hand(layer[0]), atol=TOL)
    np.testing.assert_allclose(encoder_flow(layer), rollout(layer), atol=TOL)  # one path: flow = rollout


def test_two_layer_flow_is_the_sum_of_the_narrowest_edge_of_each_route():
    a = np.array([[[1.0, 0.0], [0.5, 0.5]]])
    # i -> k -> j, one route per middle node k: Σ_k min(Ã[i, k], Ã[k, j]) with Ã = [[1, 0], [0.25, 0.75]]
    # row 1: min(0.25, 1) + min(0.75, 0.25) = 0.5 and min(0.25, 0) + min(0.75, 0.75) = 0.75 (rollout: 0.4375, 0.5625)
    np.testing.assert_allclose(encoder_flow([a, a]), [[1.0, 0.0], [0.5, 0.75]], atol=TOL)
    layers = attention(np.random.default_rng(4), 2, 3, 5, 5)
    g1, g2 = graph_by_hand(layers[0]), graph_by_hand(layers[1])
    want = np.array([[sum(min(g2[i, k], g1[k, j]) for k in range(5)) for j in range(5)] for i in range(5)])
    np.testing.assert_allclose(encoder_flow(layers), want, atol=TOL)


def test_decoder_flow_shapes_normalised_rows_and_a_one_position_case_by_hand():
    c1, c2 = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    self_a, cross = np.ones((2, 1, 1, 1)), np.array([[[c1]], [[c2]]])  # t = 1, s = 2, one head, two layers
    got = decoder_flow(self_a, cross)
    # top -> source j: 0.5 c2[j] straight, plus 0.5 (residual) -> layer 1, which sends min(0.5, 0.5 c1[j]) = 0.5 c1[j]
    np.testing.assert_allclose(got["source"], [0.5 * c1 + 0.5 * c2], atol=TOL)
    np.testing.assert_allclose(decoder_rollout(self_a, cross)["source"], [0.25 * c1 + 0.5 * c2])  # rollout: 0.5 · 0.5 c1
    np.testing.assert_allclose(got["source_normalized"], [(c1 + c2) / 2], atol=TOL)
    rng = np.random.default_rng(5)
    dec, cr = attention(rng, 3, 4, 6, 6, causal=True), attention(rng, 3, 4, 6, 9)
    out = decoder_flow(dec, cr, attention(rng, 2, 4, 9, 9))
    assert out["source"].shape == out["source_normalized"].shape == (6, 9)
    np.testing.assert_allclose(out["source_normalized"].sum(-1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match="as many self- as cross-attention layers"):
        decoder_flow(dec, cr[:2])


def test_decoder_flow_through_one_encoder_layer_by_hand():
    rng = np.random.default_rng(6)
    dec, cross, enc = attention(rng, 1, 2, 3, 3, causal=True), attention(rng, 1, 2, 3, 4), attention(rng, 1, 2, 4, 4)
    e = graph_by_hand(enc[0])
    c = cross[0].mean(0)
    # one decoder layer: target i reaches the sources only through its own cross-attention edges
    # (0.5 c[i, k]) to encoder output k, then k's edge Ã_enc[k, j] to token j: Σ_k min(0.5 c[i, k], Ã_enc[k, j])
    want = np.array([[sum(min(0.5 * c[i, k], e[k, j]) for k in range(4)) for j in range(4)] for i in range(3)])
    np.testing.assert_allclose(decoder_flow(dec, cross, enc)["source"], want, atol=TOL)
    np.testing.assert_allclose(decoder_flow(dec, cross)["source"], 0.5 * c, atol=TOL)


# -- trace_flow ----------------------------------------------------------------------------------------
def test_trace_flow_reads_every_stack_of_a_teacher_forced_trace(forced):
    enc, dec, cross = (weights(forced.trace, k) for k in ("encoder", "decoder", "cross"))
    got = trace_flow(forced.trace)
    s, t = len(forced.source.ids), len(forced.input_ids)
    assert set(got) == {"encoder", "source", "source_normalized"}
    assert got["encoder"].shape == (s, s) and got["source"].shape == (t, s)
    np.testing.assert_array_equal(got["encoder"], encoder_flow(enc))
    np.testing.assert_array_equal(got["source"], decoder_flow(dec, cross, enc)["source"])


def test_trace_flow_leaves_out_a_missing_stack_and_refuses_a_batch_axis(bundle, forced):
    session = DecodingSession.from_bundle(bundle, "我明天去北京。", capture=["*.weights"])
    assert set(trace_flow(session.encoder_trace)) == {"encoder"}
    np.testing.assert_array_equal(trace_flow(session.encoder_trace)["encoder"], trace_flow(forced.trace)["encoder"])
    batched = {n: forced.trace[n][None] for n in forced.trace}
    with pytest.raises(ValueError, match=r"encoder.layers.0.self_attn.weights as \[head, query, key\]"):
        trace_flow(batched)
