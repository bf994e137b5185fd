"""Analyses of captured arrays: plain numpy functions, no model and no Qt. Attention rollout
lives in ``rollout`` and the HSK alignment evaluation (which runs a bundle's model in
teacher-forced passes) in ``alignment``; their names are re-exported here.

Shapes follow the trace contract: attention weights are ``[..., head, query, key]`` (any
leading axes, e.g. ``[layer, head, query, key]`` from ``DecodingSession.all_attention``).

* Per head: ``head_statistics`` (entropy, mean attention distance, maximum weight);
  ``alignment`` (argmax key per query) and ``alignment_pairs`` (as pieces).
* ``rollout`` (Abnar & Zuidema 2020) for the encoder, and ``decoder_rollout`` through the
  decoder to the source (formulation in its docstring).
* ``norm_statistics`` per norm site (LayerNorm: per-token mean/std; BatchNorm: per-feature
  batch and running statistics) and ``compare_norms``: both normalizations of the same
  activations, to show their axes (LN over the features of one token, BN over the tokens of
  one feature).
* Positional encoding: ``positional_encoding``, ``positional_curves``,
  ``positional_similarity``, ``embedding_positional_ratio``.
* Alignment quality on HSK: ``reference_pairs`` from the data set's word glosses,
  ``alignment_accuracy`` of attention against them, ``evaluate_hsk_alignment(bundle, records)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


# -- attention per head ----------------------------------------------------------------------
def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy (nats) of every attention row: ``[..., query, key]`` -> ``[..., query]`` (0·log 0 = 0)."""
    w = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    return terms.sum(-1)


def mean_distance(weights: np.ndarray, query_offset: int = 0) -> np.ndarray:
    """Mean attention distance per head: the average over queries of ``sum_k w[q, k] |q - k|``
    (positions; query ``q`` sits at ``q + query_offset``). ``[..., head, query, key]`` -> ``[..., head]``.
    Meaningful for self-attention; for cross-attention it compares target with source positions."""
    w = np.asarray(weights, dtype=np.float64)
    nq, nk = w.shape[-2:]
    dist = np.abs(np.arange(nq)[:, None] + query_offset - np.arange(nk)[None, :])  # [query, key]
    return (w * dist).sum(-1).mean(-1) if nq else np.zeros(w.shape[:-2])


def head_statistics(weights: np.ndarray, query_offset: int = 0) -> dict[str, np.ndarray]:
    """Per head, averaged over the query rows: ``entropy`` (nats), ``distance`` (see
    ``mean_distance``) and ``max_weight`` (the mean of each row's largest weight: 1 = always one
    key). ``[..., head, query, key]`` -> each ``[..., head]``."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape[-2] == 0:
        z = np.zeros(w.shape[:-2])
        return {"entropy": z, "distance": z.copy(), "max_weight": z.copy()}
    return {
        "entropy": row_entropy(w).mean(-1),
        "distance": mean_distance(w, query_offset),
        "max_weight": w.max(-1).mean(-1),
    }


def alignment(weights: np.ndarray) -> np.ndarray:
    """The key each query attends to most: ``[..., query, key]`` -> ``[..., query]`` (int)."""
    return np.asarray(weights).argmax(-1)


def alignment_pairs(weights: np.ndarray, query_pieces: Sequence[str], key_pieces: Sequence[str]) -> list[tuple[str, str, float]]:
    """For a ``[query, key]`` matrix (one head, or a head mean): per query row
    ``(query piece, key piece it attends to most, that weight)``."""
    w = np.asarray(weights)
    if w.ndim != 2:
        raise ValueError(f"alignment_pairs needs one [query, key] matrix, not shape {w.shape}")
    best = w.argmax(-1)
    return [(query_pieces[i], key_pieces[int(j)], float(w[i, j])) for i, j in enumerate(best)]


# -- normalization ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormStats:
    """Statistics of one normalization site (a trace prefix such as ``encoder.layers.0.norm1``).

    LayerNorm (``kind == "layer"``): ``input_mean``/``input_std``/``output_mean``/``output_std``
    are per token over the features, ``[pos]``. BatchNorm (``kind == "batch"``): they are per
    feature over the tokens, ``[d_model]``, and ``batch_mean``/``batch_var`` (the tokens' own
    statistics) and ``running_mean``/``running_var`` (what the model normalizes with in
    evaluation) are ``[d_model]``. RMSNorm (``kind == "rms"``): per token, as LayerNorm, and
    ``rms`` ``[pos]``, what it divides by. Standard deviations are biased (divide by n), as the norms use.
    """

    site: str
    kind: str
    input_mean: np.ndarray
    input_std: np.ndarray
    output_mean: np.ndarray
    output_std: np.ndarray
    batch_mean: np.ndarray | None = None
    batch_var: np.ndarray | None = None
    running_mean: np.ndarray | None = None
    running_var: np.ndarray | None = None
    rms: np.ndarray | None = None  # RMSNorm (``kind == "rms"``): per token sqrt(mean_square), what it divides by, [pos]


def norm_sites(trace: Mapping[str, np.ndarray]) -> list[str]:
    """The normalization prefixes present in ``trace`` (in trace order)."""
    out = []
    for name in trace:
        if name.endswith((".mean", ".running_mean", ".mean_square")) and (".norm" in name or ".final_norm" in name):
            site = name.rsplit(".", 1)[0]
            if site not in out and f"{site}.input" in trace:
                out.append(site)
    return out


def norm_statistics(trace: Mapping[str, np.ndarray], site: str) -> NormStats:
    """``NormStats`` of ``site`` from a trace (or ``DecodingSession.accumulated`` values in a dict)."""
    x = np.asarray(trace[f"{site}.input"], dtype=np.float64)  # [pos, d_model]
    y = np.asarray(trace[f"{site}.output"], dtype=np.float64)
    if f"{site}.running_mean" in trace:
        bm = trace[f"{site}.batch_mean"] if f"{site}.batch_mean" in trace else x.mean(0)
        bv = trace[f"{site}.batch_var"] if f"{site}.batch_var" in trace else x.var(0)
        return NormStats(
            site, "batch", x.mean(0), x.std(0), y.mean(0), y.std(0),
            np.asarray(bm), np.asarray(bv), np.asarray(trace[f"{site}.running_mean"]), np.asarray(trace[f"{site}.running_var"]),
        )
    if f"{site}.mean_square" in trace:  # RMSNorm: x / sqrt(mean(x²) + eps), no mean taken away
        rms = np.sqrt(np.asarray(trace[f"{site}.mean_square"], dtype=np.float64))
        return NormStats(site, "rms", x.mean(-1), x.std(-1), y.mean(-1), y.std(-1), rms=rms)
    return NormStats(site, "layer", x.mean(-1), x.std(-1), y.mean(-1), y.std(-1))


@dataclass(frozen=True)
class NormComparison:
    """Both normalizations (no learned scale/shift) of the same activations ``x`` ``[pos, d_model]``.

    LayerNorm normalizes the features of one token: ``layer_mean``/``layer_std`` ``[pos]``.
    BatchNorm normalizes one feature over the tokens: ``batch_mean``/``batch_std`` ``[d_model]``
    (over the ``valid`` tokens only). ``layer_output``/``batch_output`` are ``[pos, d_model]``.
    """

    layer_mean: np.ndarray
    layer_std: np.ndarray
    layer_output: np.ndarray
    batch_mean: np.ndarray
    batch_std: np.ndarray
    batch_output: np.ndarray


def compare_norms(x: np.ndarray, valid: np.ndarray | None = None, eps: float = 1e-5) -> NormComparison:
    """What LayerNorm and BatchNorm (training-mode batch statistics) make of the same ``x``."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"compare_norms needs [pos, d_model] activations, not shape {x.shape}")
    lm = x.mean(-1)
    lv = x.var(-1)
    tokens = x if valid is None else x[np.asarray(valid, bool)]
    bm = tokens.mean(0)
    bv = tokens.var(0)
    return NormComparison(
        lm, np.sqrt(lv), (x - lm[:, None]) / np.sqrt(lv[:, None] + eps),
        bm, np.sqrt(bv), (x - bm[None, :]) / np.sqrt(bv[None, :] + eps),
    )


# -- positional encoding ----------------------------------------------------------------------------
def positional_encoding(n_positions: int, d_model: int, layout: str = "interleaved") -> np.ndarray:
    """The model's sinusoidal encoding (``sinusoidal_encoding``, in the config's ``positional_layout``)
    as float64 numpy: ``[pos, d_model]``."""
    import torch

    from attnviz.core.model.modules import sinusoidal_encoding

    return sinusoidal_encoding(n_positions, d_model, torch.float64, layout).numpy()


def positional_curves(pe: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """Chosen dimensions of a PE matrix as curves over the positions: ``[len(dims), pos]``."""
    pe = np.asarray(pe)
    return np.stack([pe[:, int(d)] for d in dims]) if len(dims) else np.zeros((0, pe.shape[0]))


def positional_similarity(pe: np.ndarray, cosine: bool = False) -> np.ndarray:
    """PE·PEᵀ ``[pos, pos]`` (the dot product of every pair of positions); with ``cosine``,
    divided by the norms (every PE row has norm sqrt(d_model/2), so only the scale differs)."""
    pe = np.asarray(pe, dtype=np.float64)
    sim = pe @ pe.T
    if cosine:
        n = np.linalg.norm(pe, axis=-1)
        sim = sim / np.outer(n, n)
    return sim


def embedding_positional_ratio(tokens: np.ndarray, positional: np.ndarray) -> dict[str, np.ndarray | float]:
    """How large PE is next to the (scaled) token embeddings it is added to: per position the
    norms ``token_norm`` and ``positional_norm`` ``[pos]``, ``ratio = positional / token``, and
    ``mean_ratio``. Inputs: ``embed.tokens`` and ``embed.positional`` ``[pos, d_model]``."""
    t = np.linalg.norm(np.asarray(tokens, dtype=np.float64), axis=-1)
    p = np.linalg.norm(np.asarray(positional, dtype=np.float64), axis=-1)
    ratio = p / np.where(t > 0, t, np.nan)
    return {"token_norm": t, "positional_norm": p, "ratio": ratio, "mean_ratio": float(np.nanmean(ratio)) if ratio.size else float("nan")}
