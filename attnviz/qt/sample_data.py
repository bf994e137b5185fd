"""Synthetic attention for previews, benchmarks and tests (numpy only, deterministic).

The arrays have the shapes and invariants of real ones: rows sum to 1, decoder
self-attention is lower-triangular with exact zeros above the diagonal, the look-ahead
mask is 0 / −∞. No model is involved.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz.core.analysis.figure_data import AttentionData, MaskData

SOURCE = ("我", "爱", "吃", "鱼", "。")
TARGET = ("SOS", "▁I", "▁love", "▁eating", "▁fish", ".")


def _softmax(x: np.ndarray) -> np.ndarray:
    x = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def look_ahead(n: int) -> np.ndarray:
    """``[n, n]`` M: 0 on and below the diagonal, −inf above."""
    return np.where(np.tril(np.ones((n, n), dtype=bool)), 0.0, -np.inf).astype(np.float32)


def pieces(n: int, prefix: str = "▁w", first: str | None = None) -> tuple[str, ...]:
    """``n`` made-up token pieces (``first`` replaces the first, e.g. "SOS")."""
    out = [f"{prefix}{i}" for i in range(n)]
    if first is not None and n:
        out[0] = first
    return tuple(out)


def sample_attention(
    kind: str,
    n_layers: int = 3,
    n_heads: int = 4,
    source: Sequence[str] = SOURCE,
    target: Sequence[str] = TARGET,
    step: int | None = None,
    seed: int = 0,
) -> AttentionData:
    """``AttentionData`` of ``kind`` with random but valid weights.

    ``step`` is the highlighted query row (default: the last target row; encoder: none).
    """
    rng = np.random.default_rng(seed)
    nq = len(source) if kind == "encoder" else len(target)
    nk = len(target) if kind == "decoder" else len(source)
    scores = rng.normal(0.0, 1.6, (n_layers, n_heads, nq, nk)).astype(np.float32)
    if kind == "decoder":
        scores = scores + look_ahead(nq)
    weights = _softmax(scores).astype(np.float32)
    queries = source if kind == "encoder" else target
    keys = target if kind == "decoder" else source
    highlight = None if kind == "encoder" else (nq - 1 if step is None else step)
    mean = weights.mean(axis=1)
    rollout = None
    if nq == nk:
        eye = np.eye(nq, dtype=np.float32)
        rollout = eye
        for layer in range(n_layers):
            a = 0.5 * mean[layer] + 0.5 * eye
            rollout = (a / a.sum(axis=-1, keepdims=True)) @ rollout
    return AttentionData(kind, weights, tuple(queries), tuple(keys), highlight, head_mean=mean, rollout=rollout)


def sample_attention_sets(**kw) -> dict[str, AttentionData]:
    """All three kinds, as the views' ``set_data`` accepts them."""
    return {kind: sample_attention(kind, **kw) for kind in ("encoder", "decoder", "cross")}


def sample_masks(
    n_layers: int = 3,
    n_heads: int = 4,
    target: Sequence[str] = TARGET,
    source: Sequence[str] = SOURCE,
    step: int | None = None,
    seed: int = 1,
) -> MaskData:
    """``MaskData`` for decoder self-attention over ``target`` (no padding)."""
    rng = np.random.default_rng(seed)
    n = len(target)
    m = look_ahead(n)
    scaled = rng.normal(0.0, 2.0, (n_layers, n_heads, n, n)).astype(np.float32)
    weights = _softmax(scaled + m).astype(np.float32)
    return MaskData(
        tuple(target), tuple(target), m, scaled, weights,
        tgt_padding=np.zeros(n, dtype=np.float32),
        src_padding=np.zeros(len(source), dtype=np.float32), src_labels=tuple(source),
        step=n - 1 if step is None else step,
    )
