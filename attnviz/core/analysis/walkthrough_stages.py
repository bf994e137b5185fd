"""The one-head walkthrough played as stages: how row ``i`` of ``softmax(Q_iK_iᵀ/√d_k + M) V_i``
is computed, one frame at a time.

The five stages, in order (:data:`STAGE_NAMES`):

1. ``scores``  — one dot product ``q_i · k_j`` summed a block of dimensions at a time
   (:func:`dot_blocks`; the partial sum after sub-step ``s`` is ``Σ_{d<m_s} q_i[d] k_j[d]``),
   then the whole score row ``i`` (every key at once);
2. ``scale``   — the row divided by ``√d_k`` (a model that folds the scale into its weights, T5,
   does not divide; one with a relative position bias adds ``B`` here);
3. ``mask``    — ``+ M``: the decoder's look-ahead mask sets the keys after ``i`` to ``−∞``;
   encoder and cross-attention have none (only a padding mask, where there is one);
4. ``softmax`` — the row turned into weights that sum to 1;
5. ``output``  — the weights times ``V_i``'s rows, summed into ``z_i`` a block of keys at a time
   (:data:`KEY_STEPS` sub-steps at most).

:func:`stage_frames` is a pure function of a ``HeadWalkthrough``'s arrays (``q``, ``k``, ``v``,
``scores``, ``scaled_scores``, ``mask``, ``masked_scores``, ``weights``, ``z``, ``query``,
``position_bias``, ``scaled``, ``kind``): every number a frame shows is read or summed from them
in float64, nothing is computed from a model. Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

STAGE_NAMES: tuple[str, ...] = ("scores", "scale", "mask", "softmax", "output")
N_STAGES = len(STAGE_NAMES)
DOT_STEPS = 8  # sub-steps of the dot product q_i · k_j (one dimension each where d_k ≤ 8) …
DOT_BLOCK = 8  # … unless that would add more than this many dimensions in one

KEY_STEPS = 4  # sub-steps of Σ_j a_ij v_j at most (one key each where there are ≤ 4)


@dataclass(frozen=True, eq=False)
class DotStep:
    """One sub-step of ``q_i · k_j``: dimensions ``[lo, hi)`` added to the sum."""

    key: int  # j
    dims: tuple[int, int]  # [lo, hi) of d_k
    q: np.ndarray  # [hi − lo]  q_i[lo:hi]
    k: np.ndarray  # [hi − lo]  k_j[lo:hi]
    products: np.ndarray  # [hi − lo]  q_i[d]·k_j[d]
    before: float  # Σ_{d<lo} q_i[d] k_j[d]
    partial: float  # Σ_{d<hi} q_i[d] k_j[d]


@dataclass(frozen=True, eq=False)
class OutputStep:
    """One sub-step of ``z_i = Σ_j a_ij v_j``: keys ``[lo, hi)`` added to the sum."""

    keys: tuple[int, int]  # [lo, hi)
    weighted: np.ndarray  # [key, d_k]  a_ij v_j, rows ≥ hi NaN (not summed yet)
    z: np.ndarray  # [d_k]  Σ_{j<hi} a_ij v_j


@dataclass(frozen=True, eq=False)
class StageFrame:
    """What one frame shows. ``row`` is row ``i`` as it stands after the frame: scores, scaled,
    masked scores or weights (``NaN``: not computed yet, ``−∞``: masked); ``lit`` the keys of it
    this frame computes."""

    stage: int  # 0-based index into STAGE_NAMES
    sub: int  # 0-based sub-step of the stage
    subs: int  # the stage's sub-steps
    query: int  # i: the row being computed
    row: np.ndarray  # [key]
    lit: tuple[int, ...]
    masked: tuple[int, ...] = ()  # keys set to −∞ by the mask (stage 3 on)
    dot: DotStep | None = None  # stage 1's dot product (None on its whole-row sub-step)
    out: OutputStep | None = None  # stage 5
    scale: float | None = None  # √d_k (stage 2; None where the model does not divide)
    total: float | None = None  # Σ_j of the weights (stages 4 and 5)
    look_ahead: bool = False  # the mask is the decoder's look-ahead mask

    @property
    def name(self) -> str:
        return STAGE_NAMES[self.stage]


def bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` of ``min(n, parts)`` nearly equal blocks covering ``0..n``."""
    count = max(1, min(n, parts))
    edges = [math.ceil(s * n / count) for s in range(count + 1)]
    return [(edges[s], edges[s + 1]) for s in range(count)]


def dot_blocks(d_k: int) -> list[tuple[int, int]]:
    """The dimensions each sub-step of the dot product adds: :data:`DOT_STEPS` blocks, more where
    a block would be wider than :data:`DOT_BLOCK`."""
    return bounds(d_k, max(DOT_STEPS, math.ceil(d_k / DOT_BLOCK)))


def chosen_key(walk: Any, query: int | None = None) -> int:
    """The key of stage 1's dot product: the one row ``query`` attends to most (the first of a tie)."""
    i = walk.query if query is None else query
    return int(np.argmax(np.asarray(walk.weights[i], np.float64)))


def stage_frames(walk: Any, key: int | None = None) -> tuple[StageFrame, ...]:
    """Every frame of the played walkthrough of row ``walk.query``, stage by stage (see the
    module docstring); ``key``: stage 1's key ``j`` (default :func:`chosen_key`)."""
    i = int(walk.query)
    j = chosen_key(walk) if key is None else int(key)
    n_keys = int(np.asarray(walk.k).shape[0])
    if not 0 <= j < n_keys:
        raise ValueError(f"key {j} outside 0..{n_keys - 1}")
    mask = np.asarray(walk.mask[i], np.float64)
    masked = tuple(int(c) for c in np.flatnonzero(np.isneginf(mask)))
    weights = np.asarray(walk.weights[i], np.float64)
    total = float(weights.sum())
    every = tuple(range(n_keys))
    frames = list(_dot_frames(walk, i, j))
    frames.append(StageFrame(0, len(frames), len(frames) + 1, i, np.asarray(walk.scores[i], np.float64), every))
    frames.append(StageFrame(1, 0, 1, i, _scaled_row(walk, i), every, scale=math.sqrt(walk.d_k) if walk.scaled else None))
    frames.append(StageFrame(2, 0, 1, i, np.asarray(walk.masked_scores[i], np.float64), masked, masked, look_ahead=walk.kind == "decoder"))
    frames.append(StageFrame(3, 0, 1, i, weights, every, masked, total=total))
    frames.extend(_output_frames(walk, i, weights, masked, total))
    return tuple(frames)


def _dot_frames(walk: Any, i: int, j: int) -> list[StageFrame]:
    q = np.asarray(walk.q[i], np.float64)
    k = np.asarray(walk.k[j], np.float64)
    products = q * k
    n_keys = int(np.asarray(walk.k).shape[0])
    parts = dot_blocks(q.shape[0])
    frames = []
    for s, (lo, hi) in enumerate(parts):
        before, partial = float(products[:lo].sum()), float(products[:hi].sum())
        row = np.full(n_keys, np.nan)
        row[j] = partial
        dot = DotStep(j, (lo, hi), q[lo:hi], k[lo:hi], products[lo:hi], before, partial)
        frames.append(StageFrame(0, s, len(parts) + 1, i, row, (j,), dot=dot))  # + the whole row
    return frames


def _scaled_row(walk: Any, i: int) -> np.ndarray:
    """Row ``i`` after ÷√d_k (and + B, for a model with a relative position bias)."""
    row = np.asarray(walk.scaled_scores[i], np.float64)
    bias = getattr(walk, "position_bias", None)
    return row if bias is None else row + np.asarray(bias[i], np.float64)


def _output_frames(walk: Any, i: int, weights: np.ndarray, masked: tuple[int, ...], total: float) -> list[StageFrame]:
    v = np.asarray(walk.v, np.float64)
    terms = weights[:, None] * v  # [key, d_k]  a_ij v_j
    parts = bounds(v.shape[0], KEY_STEPS)
    frames = []
    for s, (lo, hi) in enumerate(parts):
        weighted = terms.copy()
        weighted[hi:] = np.nan
        out = OutputStep((lo, hi), weighted, terms[:hi].sum(axis=0))
        frames.append(StageFrame(4, s, len(parts), i, weights, tuple(range(lo, hi)), masked, out=out, total=total))
    return frames


def stage_starts(frames: Sequence[StageFrame]) -> list[int]:
    """The index of each stage's first frame in ``frames``."""
    return [next(n for n, f in enumerate(frames) if f.stage == s) for s in range(N_STAGES)]


def next_stage(frames: Sequence[StageFrame], at: int, step: int) -> int:
    """The frame ``step`` stages from frame ``at`` (+1: the next stage's first frame; −1: the
    previous stage's), kept within the frames."""
    starts = stage_starts(frames)
    stage = min(max(frames[at].stage + step, 0), N_STAGES - 1)
    return starts[stage]
