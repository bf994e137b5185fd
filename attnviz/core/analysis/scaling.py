"""Why attention divides by √d_k: the same scores through softmax with and without the scaling.

The dot product q·k of two vectors with unit-variance entries has variance d_k; without
÷√d_k the scores grow with d_k, softmax saturates (one weight near 1, the rest near 0) and its
gradients vanish. :func:`site_scaling` shows it on the heads of one attention site, :class:`LayerScaling`
per layer, :func:`random_scaling` on random q, k at growing d_k. No Qt.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.core.decoding.result import DecodingResult
from attnviz.core.model.sites import KINDS, AttentionSite, n_layers

EXPERIMENT_DIMS: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512)  # d_k of the random experiment


def softmax_rows(x: np.ndarray) -> np.ndarray:
    """softmax over the last axis (−∞ entries get weight 0), in float64."""
    x = np.asarray(x, np.float64)
    top = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    return e / e.sum(axis=-1, keepdims=True)


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy of each row of ``weights`` in nats (0·log 0 = 0)."""
    w = np.asarray(weights, np.float64)
    logs = np.log(np.where(w > 0, w, 1.0))
    return -np.sum(w * logs, axis=-1)


@dataclass(frozen=True)
class ScalingComparison:
    """softmax(QKᵀ/√d_k + M) and softmax(QKᵀ + M) of one set of scores, with row statistics."""

    d_k: int
    scaled: np.ndarray  # [..., query, key]  softmax(QKᵀ/√d_k + M)
    unscaled: np.ndarray  # [..., query, key]  softmax(QKᵀ + M)

    @property
    def entropy_scaled(self) -> np.ndarray:  # [..., query] nats
        return row_entropy(self.scaled)

    @property
    def entropy_unscaled(self) -> np.ndarray:
        return row_entropy(self.unscaled)

    @property
    def max_scaled(self) -> np.ndarray:  # [..., query] the largest weight of each row
        return self.scaled.max(axis=-1)

    @property
    def max_unscaled(self) -> np.ndarray:
        return self.unscaled.max(axis=-1)


def compare_scaling(scores: np.ndarray, mask: np.ndarray | None, d_k: int) -> ScalingComparison:
    """``scores`` QKᵀ ``[..., query, key]`` and the additive mask M (0 / −∞, or ``None``)."""
    s = np.asarray(scores, np.float64)
    m = 0.0 if mask is None else np.asarray(mask, np.float64)
    return ScalingComparison(d_k, softmax_rows(s / math.sqrt(d_k) + m), softmax_rows(s + m))


def site_scaling(result: DecodingResult, site: AttentionSite) -> ScalingComparison:
    """Every head of one attention site of a decoding result: ``[head, query, key]``."""
    scores = result.accumulated(site.name("scores"))  # [head, query, key]  QKᵀ before ÷√d_k
    mask = result.accumulated(site.name("mask"))  # [query, key]
    d_k = result.config.d_model // result.config.n_heads
    return compare_scaling(scores, mask, d_k)


def result_scaling(result: DecodingResult) -> dict[str, tuple[ScalingComparison, ...]]:
    """Every attention site of ``result`` that has rows, by kind and layer (``[head, query, key]`` each)."""
    out = {}
    for kind in KINDS:
        count = n_layers(result.config, kind)
        if count and (kind == "encoder" or result.steps):
            out[kind] = tuple(site_scaling(result, AttentionSite(kind, i)) for i in range(count))
    return out


@dataclass(frozen=True)
class LayerScaling:
    """Per layer, the mean over heads and query rows of the row statistics."""

    max_scaled: np.ndarray  # [layer]
    max_unscaled: np.ndarray
    entropy_scaled: np.ndarray  # [layer] nats
    entropy_unscaled: np.ndarray

    @classmethod
    def of(cls, layers: Sequence[ScalingComparison]) -> LayerScaling:
        """From one kind's comparisons, one per layer."""

        def mean(field: str) -> np.ndarray:
            return np.array([float(np.mean(getattr(c, field))) for c in layers])

        return cls(mean("max_scaled"), mean("max_unscaled"), mean("entropy_scaled"), mean("entropy_unscaled"))


@dataclass(frozen=True)
class RandomScaling:
    """Random q, k with unit-variance entries at each d_k: the variance of q·k and how saturated
    softmax over ``n_keys`` keys is (mean largest weight, mean entropy), with and without ÷√d_k."""

    dims: np.ndarray  # [dim]  d_k
    n_keys: int
    var_unscaled: np.ndarray  # [dim]  Var(q·k) ≈ d_k
    var_scaled: np.ndarray  # [dim]  Var(q·k/√d_k) ≈ 1
    max_unscaled: np.ndarray  # [dim]
    max_scaled: np.ndarray
    entropy_unscaled: np.ndarray  # [dim] nats
    entropy_scaled: np.ndarray


@functools.lru_cache(maxsize=4)
def random_scaling(dims: tuple[int, ...] = EXPERIMENT_DIMS, n_keys: int = 10, n_queries: int = 500, seed: int = 0) -> RandomScaling:
    """The experiment, seeded: ``n_queries`` queries, each against ``n_keys`` random keys
    (computed once per argument set; the result is shared, its arrays are read-only)."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {k: [] for k in ("vu", "vs", "mu", "ms", "eu", "es")}
    for d in dims:
        q = rng.standard_normal((n_queries, 1, d))
        k = rng.standard_normal((n_queries, n_keys, d))
        scores = np.sum(q * k, axis=-1)  # [query, key]  q·k
        cmp = compare_scaling(scores, None, int(d))
        for key, value in (("vu", scores.var()), ("vs", (scores / math.sqrt(d)).var()), ("mu", cmp.max_unscaled.mean()),
                           ("ms", cmp.max_scaled.mean()), ("eu", cmp.entropy_unscaled.mean()), ("es", cmp.entropy_scaled.mean())):
            out[key].append(float(value))
    a = {k: np.array(v) for k, v in out.items()}
    for v in a.values():
        v.flags.writeable = False
    dims_array = np.array(dims)
    dims_array.flags.writeable = False
    return RandomScaling(dims_array, n_keys, a["vu"], a["vs"], a["mu"], a["ms"], a["eu"], a["es"])


@dataclass(frozen=True)
class ScalingFrame:
    """What the scaling view draws: every site's comparison by kind, each kind's (query, key)
    labels, and the row of the current step (``None``: none)."""

    sites: Mapping[str, Sequence[ScalingComparison]]
    labels: Mapping[str, tuple[Sequence[str], Sequence[str]]]
    highlight: int | None = None
