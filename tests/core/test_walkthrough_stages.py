"""The walkthrough played as stages: every number a frame shows equals a computation written here
from the head's Q, K and V, and the softmax row equals the one the model recorded."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnviz.core.analysis.walkthrough import head_walkthrough
from attnviz.core.analysis.walkthrough_stages import (
    DOT_BLOCK,
    DOT_STEPS,
    KEY_STEPS,
    N_STAGES,
    bounds,
    dot_blocks,
    next_stage,
    stage_frames,
    stage_starts,
)
from attnviz.core.data.tokenizer import BOS_ID
from attnviz.core.model.sites import AttentionSite

from tiny_models import random_model

SRC = [[5, 6, 7, 8, 9, 10, 11]]
TGT = [[BOS_ID, 11, 12, 13, 14, 4]]


@pytest.fixture(scope="module")
def traced():
    model = random_model(d_model=48, n_heads=3)  # d_k = 16: the dot product takes DOT_STEPS sub-steps of 2 dimensions
    with torch.inference_mode():
        _, trace = model.run_with_trace(torch.tensor(SRC), torch.tensor(TGT))
    return model, trace


def by_stage(frames, stage):
    return [f for f in frames if f.stage == stage]


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_every_stage_equals_the_computation_from_q_k_v(traced, kind):
    model, trace = traced
    for query in (0, 3):
        w = head_walkthrough(model, trace, kind, 1, 2, query)
        q, k, v = (np.asarray(getattr(w, n), np.float64) for n in ("q", "k", "v"))
        frames = stage_frames(w, key=1)
        assert [f.stage for f in frames] == sorted(f.stage for f in frames) and {f.stage for f in frames} == set(range(N_STAGES))
        assert all(f.query == query for f in frames)
        # 1: q_i · k_j, a block of dimensions at a time, then the whole row
        dots = by_stage(frames, 0)
        assert len(dots) == len(dot_blocks(w.d_k)) + 1 == min(w.d_k, DOT_STEPS) + 1 and all(f.subs == len(dots) for f in dots)
        for f in dots[:-1]:
            lo, hi = f.dot.dims
            assert f.dot.key == 1 and f.lit == (1,)
            assert f.dot.partial == pytest.approx(sum(q[query, d] * k[1, d] for d in range(hi)), abs=1e-9)
            assert f.dot.before == pytest.approx(sum(q[query, d] * k[1, d] for d in range(lo)), abs=1e-9)
            np.testing.assert_allclose(f.dot.products, q[query, lo:hi] * k[1, lo:hi])
            assert f.row[1] == f.dot.partial and np.isnan(np.delete(f.row, 1)).all()
        assert dots[-2].dot.dims[1] == w.d_k and dots[-2].dot.partial == pytest.approx(float(q[query] @ k[1]), abs=1e-9)
        scores = q[query] @ k.T
        np.testing.assert_allclose(dots[-1].row, scores, rtol=1e-5, atol=1e-5)
        # 2: ÷ √d_k, the number from the live head
        (scaled,) = by_stage(frames, 1)
        assert scaled.scale == math.sqrt(w.d_k) == math.sqrt(q.shape[1])
        np.testing.assert_allclose(scaled.row, scores / math.sqrt(q.shape[1]), rtol=1e-5, atol=1e-5)
        # 3: the mask: the decoder's look-ahead mask sets the keys after i to −∞; the others have none here
        (masked,) = by_stage(frames, 2)
        expected = tuple(range(query + 1, k.shape[0])) if kind == "decoder" else ()
        assert masked.masked == expected and masked.look_ahead == (kind == "decoder")
        assert np.isneginf(masked.row[list(expected)]).all()
        np.testing.assert_allclose(np.delete(masked.row, expected), np.delete(scores / math.sqrt(q.shape[1]), expected), rtol=1e-5, atol=1e-5)
        # 4: softmax: sums to 1 and is the row the model recorded
        (soft,) = by_stage(frames, 3)
        recorded = trace[f"{AttentionSite(kind, 1).path}.weights"][2, query]
        assert soft.total == pytest.approx(1.0, abs=1e-6) and float(soft.row.sum()) == pytest.approx(1.0, abs=1e-6)
        np.testing.assert_allclose(soft.row, recorded, atol=1e-5)
        # 5: the weights times V's rows summed into z_i, a block of keys at a time
        outs = by_stage(frames, 4)
        assert len(outs) == min(k.shape[0], KEY_STEPS)
        a = np.asarray(soft.row, np.float64)
        for f in outs:
            lo, hi = f.out.keys
            np.testing.assert_allclose(f.out.z, a[:hi] @ v[:hi], atol=1e-9)
            np.testing.assert_allclose(f.out.weighted[:hi], a[:hi, None] * v[:hi], atol=1e-12)
            assert np.isnan(f.out.weighted[hi:]).all() and f.lit == tuple(range(lo, hi))
        np.testing.assert_allclose(outs[-1].out.z, a @ v, atol=1e-9)
        np.testing.assert_allclose(outs[-1].out.z, trace[f"{AttentionSite(kind, 1).path}.z"][2, query], atol=1e-5)


def test_default_key_is_the_most_attended_and_stages_step(traced):
    model, trace = traced
    w = head_walkthrough(model, trace, "cross", 0, 0, 2)
    frames = stage_frames(w)
    assert frames[0].dot.key == int(np.argmax(w.weights[2]))
    starts = stage_starts(frames)
    assert starts[0] == 0 and [frames[s].stage for s in starts] == list(range(N_STAGES))
    assert next_stage(frames, 0, 1) == starts[1] and next_stage(frames, 3, 1) == starts[1]  # mid-stage: the next stage's start
    assert next_stage(frames, starts[2], -1) == starts[1] and next_stage(frames, 0, -1) == 0
    assert next_stage(frames, len(frames) - 1, 1) == starts[-1]
    with pytest.raises(ValueError):
        stage_frames(w, key=99)


def test_blocks_cover_the_axis():
    for n in (1, 3, 8, 16, 30, 64):
        parts = bounds(n, DOT_STEPS)
        assert parts[0][0] == 0 and parts[-1][1] == n and len(parts) == min(n, DOT_STEPS)
        assert all(a[1] == b[0] and a[1] > a[0] for a, b in zip(parts, parts[1:]))
    for d_k in (4, 16, 64, 128, 256):
        blocks = dot_blocks(d_k)
        assert blocks[-1][1] == d_k and max(hi - lo for lo, hi in blocks) <= DOT_BLOCK and len(blocks) >= min(d_k, DOT_STEPS)
