"""Attention rollout (Abnar & Zuidema 2020): ``rollout`` through the encoder and
``decoder_rollout`` through the decoder to the source (formulation in its docstring). Plain
numpy, no model and no Qt."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


# -- attention rollout ---------------------------------------------------------------------------
def _with_residual(weights: np.ndarray, residual: float) -> np.ndarray:
    """``(1 - residual) * mean_head(A) + residual * I``, rows renormalized. ``[head, q, k]`` -> ``[q, k]``."""
    a = np.asarray(weights, dtype=np.float64).mean(0)
    a = (1.0 - residual) * a + residual * np.eye(a.shape[0], a.shape[1])
    return a / a.sum(-1, keepdims=True)


def rollout(layers: Sequence[np.ndarray] | np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020) through a self-attention stack.

    ``layers``: ``[layer, head, n, n]`` (first layer first). Each layer becomes
    ``Ã_l = rownorm(0.5 · mean_h A_l + 0.5 · I)`` (the identity accounts for the residual
    connection) and ``R = Ã_L · … · Ã_1``: row ``i`` says how much each input token reaches
    position ``i`` after the last layer. Returns ``[n, n]``; rows sum to 1.
    """
    layers = [np.asarray(a) for a in layers]
    if not layers:
        raise ValueError("rollout needs at least one layer")
    r = np.eye(layers[0].shape[-1])
    for a in layers:
        r = _with_residual(a, residual) @ r
    return r


def decoder_rollout(
    self_layers: Sequence[np.ndarray] | np.ndarray,
    cross_layers: Sequence[np.ndarray] | np.ndarray,
    encoder_rollout: np.ndarray | None = None,
    residual: float = 0.5,
) -> dict[str, np.ndarray]:
    """Rollout through the decoder, down to the source tokens.

    Every decoder position carries a relevance row over the fed target tokens and the source
    tokens, ``R = [R_tgt | R_src]`` (``[t, t + s]``), starting at ``[I | 0]``. Per layer:

    * masked self-attention (with its residual): ``R <- Ã_self · R``,
      ``Ã_self = rownorm(0.5 · mean_h A_self + 0.5 · I)``;
    * cross-attention (with its residual): ``R <- 0.5 · R + 0.5 · [0 | mean_h A_cross · E]``,
      where ``E`` (``[s, s]``) is the encoder's rollout (what each encoder output carries of each
      source token; identity when ``encoder_rollout`` is None);
    * the FFN works on each position alone and leaves ``R`` unchanged.

    Rows of ``R`` sum to 1. Returns ``source`` ``[t, s]`` (the source share of each target
    position), ``source_normalized`` (rows rescaled to sum to 1: comparable with a cross-attention
    row) and ``target`` ``[t, t]``.
    """
    self_layers = [np.asarray(a, dtype=np.float64) for a in self_layers]
    cross_layers = [np.asarray(a, dtype=np.float64) for a in cross_layers]
    if len(self_layers) != len(cross_layers) or not self_layers:
        raise ValueError("decoder_rollout needs as many self- as cross-attention layers (at least one)")
    t, s = cross_layers[0].shape[-2:]
    e = np.eye(s) if encoder_rollout is None else np.asarray(encoder_rollout, dtype=np.float64)
    r = np.concatenate([np.eye(t), np.zeros((t, s))], axis=1)  # [t, t + s]
    for a_self, a_cross in zip(self_layers, cross_layers):
        r = _with_residual(a_self, residual) @ r
        bring = np.concatenate([np.zeros((t, t)), a_cross.mean(0) @ e], axis=1)
        r = (1.0 - residual) * bring + residual * r
    src = r[:, t:]
    total = src.sum(-1, keepdims=True)
    return {"source": src, "source_normalized": src / np.where(total > 0, total, 1.0), "target": r[:, :t]}
