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
from attnviz.core.model.sites import KINDS, AttentionSite, n_layers, position_biased

EXPERIMENT_DIMS: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512)  # d_k of the random experiment
SCALINGS: tuple[str, ...] = ("÷1", "÷√d_k", "÷d_k")  # what the scores are divided by, in this order everywhere
UNSCALED, SCALED, OVER_DK = range(len(SCALINGS))  # the index of each in a [scaling, ...] array


def divisors(d_k: int) -> np.ndarray:
    """[scaling] 1, √d_k and d_k: the divisors of :data:`SCALINGS`."""
    return np.array([1.0, math.sqrt(d_k), float(d_k)])


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


def softmax_jacobian(weights: np.ndarray) -> np.ndarray:
    """∂a/∂s = diag(a) − aaᵀ of each row a = softmax(s): ``[..., key]`` → ``[..., key, key]``."""
    a = np.asarray(weights, np.float64)
    return a[..., :, None] * np.eye(a.shape[-1]) - a[..., :, None] * a[..., None, :]


def jacobian_norm(weights: np.ndarray) -> np.ndarray:
    """‖diag(a) − aaᵀ‖_F of each row (``[..., key]`` → ``[...]``), without building the matrix:
    Σa_i² − 2Σa_i³ + (Σa_i²)². Near 0 when the row is one-hot (saturated: no gradient flows back
    through softmax); √(n−1)/n when it is uniform over n keys."""
    a = np.asarray(weights, np.float64)
    sq = np.sum(a * a, axis=-1)
    return np.sqrt(np.maximum(sq - 2.0 * np.sum(a**3, axis=-1) + sq * sq, 0.0))


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _row_statistics(weights: np.ndarray) -> dict[str, np.ndarray]:
    """The statistics every panel draws of ``weights`` ``[..., key]``: each row's largest weight,
    entropy (nats) and ‖∂a/∂s‖_F, each ``[...]``."""
    return {"max_weight": weights.max(axis=-1), "entropy": row_entropy(weights), "jacobian": jacobian_norm(weights)}


@dataclass(frozen=True)
class ScalingComparison:
    """softmax(QKᵀ/c + M) of one set of scores for c = 1, √d_k, d_k (:data:`SCALINGS`), with row statistics."""

    d_k: int
    by_scaling: np.ndarray  # [scaling, ..., query, key]  softmax(QKᵀ/c + M)

    @functools.cached_property
    def _stats(self) -> dict[str, np.ndarray]:
        return _row_statistics(self.by_scaling)

    @property
    def unscaled(self) -> np.ndarray:  # [..., query, key]  softmax(QKᵀ + M)
        return self.by_scaling[0]

    @property
    def scaled(self) -> np.ndarray:  # [..., query, key]  softmax(QKᵀ/√d_k + M): the model's
        return self.by_scaling[1]

    @property
    def over_dk(self) -> np.ndarray:  # [..., query, key]  softmax(QKᵀ/d_k + M)
        return self.by_scaling[2]

    @property
    def max_weight(self) -> np.ndarray:  # [scaling, ..., query]  the largest weight of each row
        return self._stats["max_weight"]

    @property
    def entropy(self) -> np.ndarray:  # [scaling, ..., query]  nats
        return self._stats["entropy"]

    @property
    def jacobian(self) -> np.ndarray:  # [scaling, ..., query]  ‖diag(a) − aaᵀ‖_F
        return self._stats["jacobian"]


def compare_scaling(scores: np.ndarray, mask: np.ndarray | None, d_k: int) -> ScalingComparison:
    """``scores`` QKᵀ ``[..., query, key]`` and the additive mask M (0 / −∞, or ``None``)."""
    s = np.asarray(scores, np.float64)
    m = 0.0 if mask is None else np.asarray(mask, np.float64)
    weights = np.stack([softmax_rows(s / c + m) for c in divisors(d_k)])
    return ScalingComparison(d_k, _frozen(weights))


def site_scaling(result: DecodingResult, site: AttentionSite) -> ScalingComparison:
    """Every head of one attention site of a decoding result: ``[head, query, key]``. A model with a
    relative position bias B adds it after the scaling, with the mask: softmax(QKᵀ/c + B + M)."""
    scores = result.accumulated(site.name("scores"))  # [head, query, key]  QKᵀ before ÷√d_k
    mask = result.accumulated(site.name("mask"))  # [query, key]
    if position_biased(result.config, site.kind):
        mask = mask + result.accumulated(site.name("position_bias"))  # [head, query, key]  B + M
    return compare_scaling(scores, mask, result.config.d_k)


def result_scaling(result: DecodingResult) -> dict[str, tuple[ScalingComparison, ...]]:
    """Every attention site of ``result`` that has rows, by kind and layer (``[head, query, key]`` each)."""
    out = {}
    for kind in KINDS:
        count = n_layers(result.config, kind)
        if count and (kind == "encoder" or result.steps):
            out[kind] = tuple(site_scaling(result, AttentionSite(kind, i)) for i in range(count))
    return out


@dataclass(frozen=True)
class RowScaling:
    """One query row of one head under each scaling: its weights, largest weight, entropy and
    the size of softmax's Jacobian there."""

    d_k: int
    head: int  # 0-based
    row: int  # 0-based query
    weights: np.ndarray  # [scaling, key]  softmax(q·k/c + M) for c = 1, √d_k, d_k

    @classmethod
    def of(cls, comparison: ScalingComparison, head: int, row: int) -> RowScaling:
        return cls(comparison.d_k, head, row, comparison.by_scaling[:, head, row])

    @property
    def max_weight(self) -> np.ndarray:  # [scaling]
        return self.weights.max(axis=-1)

    @property
    def entropy(self) -> np.ndarray:  # [scaling] nats
        return row_entropy(self.weights)

    @property
    def jacobian(self) -> np.ndarray:  # [scaling]  ‖diag(a) − aaᵀ‖_F
        return jacobian_norm(self.weights)

    @property
    def allowed(self) -> int:
        """How many keys the row may attend to (the mask leaves them a weight > 0 under ÷d_k)."""
        return int(np.count_nonzero(self.weights[-1] > 0))


@dataclass(frozen=True)
class LayerScaling:
    """Per layer, the mean over heads and query rows of the row statistics, ``[scaling, layer]`` each."""

    max_weight: np.ndarray  # [scaling, layer]
    entropy: np.ndarray  # [scaling, layer] nats
    jacobian: np.ndarray  # [scaling, layer]  ‖diag(a) − aaᵀ‖_F

    @classmethod
    def of(cls, layers: Sequence[ScalingComparison]) -> LayerScaling:
        """From one kind's comparisons, one per layer."""

        def mean(field: str) -> np.ndarray:
            per_layer = [getattr(c, field).reshape(len(SCALINGS), -1).mean(axis=1) for c in layers]
            return np.stack(per_layer, axis=1)

        return cls(mean("max_weight"), mean("entropy"), mean("jacobian"))


@dataclass(frozen=True)
class RandomScaling:
    """Random q, k with unit-variance entries at each d_k: the variance of q·k/c and how saturated
    softmax over ``n_keys`` keys is (mean largest weight, mean entropy, mean ‖∂a/∂s‖_F), for each
    divisor c of :data:`SCALINGS`; ``[scaling, dim]`` each."""

    dims: np.ndarray  # [dim]  d_k
    n_keys: int
    var: np.ndarray  # [scaling, dim]  Var(q·k/c): d_k, 1, 1/d_k
    max_weight: np.ndarray  # [scaling, dim]
    entropy: np.ndarray  # [scaling, dim] nats
    jacobian: np.ndarray  # [scaling, dim]


def _one_dim(rng: np.random.Generator, d: int, n_keys: int, n_queries: int) -> dict[str, np.ndarray]:
    """The experiment at one d_k: each statistic ``[scaling]``."""
    q = rng.standard_normal((n_queries, 1, d))
    k = rng.standard_normal((n_queries, n_keys, d))
    scores = np.sum(q * k, axis=-1)  # [query, key]  q·k
    cmp = compare_scaling(scores, None, d)
    var = np.array([(scores / c).var() for c in divisors(d)])
    return {"var": var, **{name: stat.mean(axis=-1) for name, stat in _row_statistics(cmp.by_scaling).items()}}


@functools.lru_cache(maxsize=4)
def random_scaling(dims: tuple[int, ...] = EXPERIMENT_DIMS, n_keys: int = 10, n_queries: int = 500, seed: int = 0) -> RandomScaling:
    """The experiment, seeded: ``n_queries`` queries, each against ``n_keys`` random keys
    (computed once per argument set; the result is shared, its arrays are read-only)."""
    rng = np.random.default_rng(seed)
    per_dim = [_one_dim(rng, int(d), n_keys, n_queries) for d in dims]
    stats = {name: _frozen(np.stack([p[name] for p in per_dim], axis=1)) for name in ("var", "max_weight", "entropy", "jacobian")}
    return RandomScaling(_frozen(np.array(dims)), n_keys, **stats)


@dataclass(frozen=True)
class ScalingFrame:
    """What the scaling view draws: every site's comparison by kind, each kind's (query, key)
    labels, and the row of the current step (``None``: none)."""

    sites: Mapping[str, Sequence[ScalingComparison]]
    labels: Mapping[str, tuple[Sequence[str], Sequence[str]]]
    highlight: int | None = None
    scales: bool = True  # the model divides by √d_k (``config.scale_scores``); false: its weights are the ÷1 ones (T5)
    biased: tuple[str, ...] = ()  # the kinds whose scores hold a relative position bias B: softmax(QKᵀ/c + B + M)
