"""The one-head walkthrough: the tutorial's worked example, on the live model's own numbers.

For one attention block (``kind`` encoder | decoder | cross, ``layer``) and one head ``i``,
:func:`head_walkthrough` recomputes every step of

    Q_i = X W_i^Q + b_i^Q      K_i = X' W_i^K + b_i^K      V_i = X' W_i^V + b_i^V
    A_i = softmax(Q_i K_iᵀ / √d_k + M)                      Z_i = A_i V_i
    MultiHead(X) = Concat(Z_1 .. Z_h) W^O + b^O

from the block's recorded input and the model's weights (``X' = X`` for self-attention, the
encoder output ``C_encoder`` for cross-attention), and checks each step against the array the
model recorded while it ran (the ``Trace``): :attr:`HeadWalkthrough.errors` holds the largest
difference per step, :meth:`HeadWalkthrough.verify` raises when one is too large.

Orientation is the tutorial's: rows are positions, ``X`` is ``[position, d_model]`` and the
projections are ``[d_model, d_k]`` so that ``Q_i = X W_i^Q``. (A ``torch.nn.Linear`` stores the
transpose; head ``i`` owns rows ``i·d_k … (i+1)·d_k`` of it, and the columns
``i·d_k … (i+1)·d_k`` of ``Concat(Z_1..Z_h)``, which meet the same rows of ``W^O``.)

Pure numpy: the module does not import torch. ``model`` is read through the table of attention
sites (``AttentionSite(kind, layer).module(model).w_q.weight`` …) or given as a mapping of numpy
arrays (:func:`attention_parameters`).

The next-token distribution (top-k, entropy) and the teacher-forced "predicted vs target"
table are given by ``attnviz.core.decoding.session`` (``DecodeStep.topk`` / ``.entropy`` / ``.prob``,
``teacher_forced(...).steps``); the output view takes those objects as they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnviz.core.model.sites import KINDS, AttentionSite, check_kind, n_layers
from attnviz.errors import AttnvizError

PARAMETER_NAMES = ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o")

#: The steps, in order, with the tutorial's notation (used for labels, CSV/NPZ names and checks).
STAGES: tuple[tuple[str, str], ...] = (
    ("x", "X"),
    ("x_kv", "X (keys, values)"),
    ("xx_t", "X·Xᵀ"),
    ("w_q", "W_i^Q"),
    ("w_k", "W_i^K"),
    ("w_v", "W_i^V"),
    ("q", "Q_i = XW_i^Q"),
    ("k", "K_i = XW_i^K"),
    ("v", "V_i = XW_i^V"),
    ("scores", "Q_iK_iᵀ"),
    ("scaled_scores", "Q_iK_iᵀ ÷ √d_k"),
    ("position_bias", "B"),
    ("mask", "M"),
    ("masked_scores", "Q_iK_iᵀ/√d_k + M"),
    ("weights", "A_i = softmax(…)"),
    ("z", "Z_i = A_iV_i"),
    ("concat", "Concat(Z_1..Z_h)"),
    ("w_o_head", "W^O rows of head i"),
    ("head_output", "Z_i·W^O_i"),
    ("output", "Concat(Z_1..Z_h)·W^O"),
)
#: Steps that are checked against the trace, and the trace field each one is compared with.
CHECKED: tuple[str, ...] = ("q", "k", "v", "scores", "scaled_scores", "masked_scores", "weights", "z", "concat", "output")
#: The block's fields read from the trace (``concat`` and ``output`` hold every head, the others ``[head, …]``).
RECORDED: tuple[str, ...] = ("input", "q", "k", "v", "scores", "scaled_scores", "mask", "masked_scores", "weights", "z", "concat", "output")


class WalkthroughError(AttnvizError, ValueError):
    """A walkthrough that cannot be built from what was given (one-line message)."""


def _site(kind: str, layer: int) -> AttentionSite:
    try:
        return AttentionSite(check_kind(kind), int(layer))
    except ValueError as exc:
        raise WalkthroughError(str(exc)) from None


def _numpy(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):  # a torch tensor, read without importing torch
        t = t.detach().cpu().float().numpy()
    return np.asarray(t, dtype=np.float32)


def attention_parameters(model: Any, kind: str, layer: int) -> dict[str, np.ndarray]:
    """The attention block's weights in the tutorial's orientation (``x W``):
    ``w_q``/``w_k``/``w_v`` ``[d_model, h·d_k]``, ``w_o`` ``[h·d_k, d_model]`` (square unless ``head_dim`` is set) and biases (zeros when absent)."""
    site = _site(kind, layer)
    try:
        attn = site.module(model)
    except AttributeError:
        if hasattr(model, "config"):
            raise WalkthroughError(f"{kind} layer {layer} does not exist (the model has {n_layers(model.config, kind)})") from None
        raise WalkthroughError(f"{type(model).__name__} has no {kind} attention layers") from None
    out: dict[str, np.ndarray] = {}
    for p in ("q", "k", "v", "o"):
        lin = getattr(attn, f"w_{p}")
        w = _numpy(lin.weight)  # [out, in] as nn.Linear stores it
        out[f"w_{p}"] = np.ascontiguousarray(w.T)  # [in, out]: y = x W
        out[f"b_{p}"] = _numpy(lin.bias) if getattr(lin, "bias", None) is not None else np.zeros(w.shape[0], np.float32)
    return out


def _getter(source: Any):
    """``name -> array`` for a Trace/mapping, or an object with ``accumulated(name)`` (a
    ``DecodingSession`` or a ``TeacherForced`` result: whole-sequence arrays)."""
    if hasattr(source, "accumulated") and callable(source.accumulated):
        return lambda name: np.asarray(source.accumulated(name))
    if isinstance(source, Mapping):
        def get(name: str) -> np.ndarray:
            try:
                return np.asarray(source[name])
            except KeyError:
                raise WalkthroughError(f"the trace has no {name!r} (was it captured?)") from None

        return get
    raise WalkthroughError(f"cannot read arrays from {type(source).__name__} (give a Trace, a mapping or a decoding session)")


def _softmax(x: np.ndarray) -> np.ndarray:
    """Row softmax that keeps −∞ entries at exactly 0 (an all-masked row gives NaN, as torch does)."""
    m = np.max(x, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - m)
        return e / e.sum(axis=-1, keepdims=True)


def _difference(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a − b| relative to the recorded array's scale (max(1, max|b|)); −∞ must meet −∞."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape:
        return math.inf
    fa, fb = np.isfinite(a), np.isfinite(b)
    if not np.array_equal(fa, fb) or not np.array_equal(a[~fa], b[~fb]):
        return math.inf
    if not fa.any():
        return 0.0
    scale = max(1.0, float(np.max(np.abs(b[fb]))))
    return float(np.max(np.abs(a[fa] - b[fb]))) / scale


def _f32(a: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(a, dtype=np.float32)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class HeadWalkthrough:
    """Every number of one head's computation, rows = positions (see the module docstring).

    Shapes: ``query`` rows (the block's queries), ``key`` rows (keys and values), ``d_model``,
    ``d_k = d_model / h``. ``query`` (the field) is the chosen query row.
    """

    kind: str
    layer: int
    head: int
    query: int  # the chosen query row (the current step's token by default)
    n_heads: int
    d_model: int
    d_k: int
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    x: np.ndarray  # [query, d_model]  X: the block's query-side input (C_decoder for cross-attention)
    x_kv: np.ndarray  # [key, d_model]  what K and V are computed from (X itself, or C_encoder)
    xx_t: np.ndarray  # [query, key]  X·X'ᵀ: raw dot products before any projection
    w_q: np.ndarray  # [d_model, d_k]  W_i^Q
    w_k: np.ndarray  # [d_model, d_k]  W_i^K
    w_v: np.ndarray  # [d_model, d_k]  W_i^V
    b_q: np.ndarray  # [d_k]
    b_k: np.ndarray  # [d_k]
    b_v: np.ndarray  # [d_k]
    q: np.ndarray  # [query, d_k]  Q_i = X W_i^Q + b
    k: np.ndarray  # [key, d_k]  K_i
    v: np.ndarray  # [key, d_k]  V_i
    scores: np.ndarray  # [query, key]  Q_i K_iᵀ
    scaled_scores: np.ndarray  # [query, key]  ÷ √d_k
    mask: np.ndarray  # [query, key]  M: 0 allowed, −∞ masked
    masked_scores: np.ndarray  # [query, key]  + (B +) M
    weights: np.ndarray  # [query, key]  A_i (rows sum to 1)
    z: np.ndarray  # [query, d_k]  Z_i = A_i V_i
    concat: np.ndarray  # [query, d_model]  Concat(Z_1..Z_h); head i's columns are ``head_columns``
    w_o: np.ndarray  # [d_model, d_model]  W^O
    b_o: np.ndarray  # [d_model]
    w_o_head: np.ndarray  # [d_k, d_model]  rows head_columns of W^O: where Z_i meets W^O
    head_output: np.ndarray  # [query, d_model]  Z_i W^O_i: this head's share of the output
    output: np.ndarray  # [query, d_model]  Concat(Z_1..Z_h) W^O + b^O
    errors: Mapping[str, float] = field(default_factory=dict)  # step -> relative max |recomputed − recorded|
    position_bias: np.ndarray | None = None  # [query, key]  B of head i, the model's relative position bias (None: it has none)
    scaled: bool = True  # the scores are divided by √d_k (False: T5, whose weights fold the scale in)

    @property
    def head_columns(self) -> tuple[int, int]:
        """Columns ``[start, stop)`` of ``Concat(Z_1..Z_h)`` (and rows of ``W^O``) that belong to head i."""
        return self.head * self.d_k, (self.head + 1) * self.d_k

    @property
    def scale(self) -> float:
        """√d_k, the divisor of the scores."""
        return math.sqrt(self.d_k)

    @property
    def query_row(self) -> np.ndarray:
        """``[key]`` the softmax row of the chosen query (sums to 1)."""
        return self.weights[self.query]

    def stage(self, name: str) -> np.ndarray:
        return getattr(self, name)

    def stages(self) -> list[tuple[str, str, np.ndarray]]:
        """``(name, notation, array)`` for every step the model has, in order (B only with a position bias)."""
        return [(n, self.notation(n), getattr(self, n)) for n, _ in STAGES if getattr(self, n) is not None]

    def notation(self, name: str) -> str:
        """A step in the tutorial's notation, as this model computes it: no ÷√d_k when it does not
        scale, B where it adds a position bias."""
        if name == "scaled_scores" and not self.scaled:
            return "Q_iK_iᵀ (no ÷√d_k)"
        if name == "masked_scores":
            return f"Q_iK_iᵀ{'/√d_k' if self.scaled else ''}{' + B' if self.position_bias is not None else ''} + M"
        return dict(STAGES)[name]

    def verify(self, tolerance: float = 1e-4) -> None:
        """Raise ``WalkthroughError`` naming the first step whose recomputation differs from the trace."""
        for name in CHECKED:
            err = self.errors.get(name)
            if err is None or not err <= tolerance:
                raise WalkthroughError(f"{self.kind} layer {self.layer + 1} head {self.head + 1}: step {name} differs from the model's (error {err})")

    def with_query(self, query: int) -> "HeadWalkthrough":
        """The same walkthrough with another chosen query row (nothing is recomputed)."""
        if not 0 <= query < self.x.shape[0]:
            raise WalkthroughError(f"query row {query} outside 0..{self.x.shape[0] - 1}")
        return replace(self, query=int(query))


def head_walkthrough(
    model: Any,
    trace: Any,
    kind: str,
    layer: int,
    head: int,
    query: int | None = None,
    *,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
) -> HeadWalkthrough:
    """Recompute head ``head`` of attention block (``kind``, ``layer``) step by step.

    ``model``: a ``Transformer`` (or a mapping as :func:`attention_parameters` returns).
    ``trace``: arrays of a whole sequence: a full-pass ``Trace`` (``run_with_trace``; the
    teacher-forced result's ``trace``), a ``DecodingSession`` (its accumulated arrays) or a
    ``TeacherForced`` result. A single cached decoding step's trace holds one query row and
    not the earlier rows' inputs; pass the session instead.
    ``query``: the chosen row (default: the last one, the current step).
    ``layer``, ``head`` and ``query`` are 0-based.
    """
    site = _site(kind, layer)
    params = _parameters(model, site)
    rec = _recorded(_getter(trace), site)
    n_heads, n_keys, d_k = rec["k"].shape
    n_query, d_model = rec["x"].shape
    query = _check_request(params, head, n_heads, n_query - 1 if query is None else query, n_query, d_model)
    scaled = bool(getattr(getattr(model, "config", None), "scale_scores", True))
    bias = rec.get("position_bias")  # [head, query, key] or None
    mine = _recompute(params, rec["x"], rec["x_kv"], _Additive(rec["mask"], bias, scaled), head, n_heads, d_k)
    errors = {name: _difference(mine[name], rec[name][head] if name not in ("concat", "output") else rec[name]) for name in CHECKED}
    ql = _labels(query_labels, n_query)
    kl = _labels(key_labels, n_keys)
    if len(ql) != n_query or len(kl) != n_keys:
        raise WalkthroughError(f"{len(ql)} query / {len(kl)} key labels for a {n_query}×{n_keys} block")
    return HeadWalkthrough(
        kind=kind, layer=int(layer), head=int(head), query=int(query), n_heads=int(n_heads), d_model=int(d_model), d_k=int(d_k),
        query_labels=ql, key_labels=kl, errors=errors, **_head_arrays(params, mine, head * d_k, (head + 1) * d_k),
        position_bias=None if bias is None else _f32(bias[head]), scaled=scaled,
    )


def _parameters(model: Any, site: AttentionSite) -> dict[str, np.ndarray]:
    """The block's parameters in float64 (from the model, or the mapping given instead of one)."""
    params = dict(model) if isinstance(model, Mapping) else attention_parameters(model, site.kind, site.layer)
    missing = [p for p in PARAMETER_NAMES if p not in params]
    if missing:
        raise WalkthroughError(f"missing attention parameter(s): {', '.join(missing)}")
    return {n: np.asarray(params[n], np.float64) for n in PARAMETER_NAMES}


def _recorded(get, site: AttentionSite) -> dict[str, np.ndarray]:
    """The block's ``RECORDED`` fields, plus its query-side input ``x`` and key-side input ``x_kv``."""
    rec = {f: get(site.name(f)) for f in RECORDED}
    try:
        rec["position_bias"] = np.asarray(get(site.name("position_bias")), np.float64)  # [head, query, key]  B
    except (KeyError, WalkthroughError):
        pass  # no relative position bias: softmax(QKᵀ/√d_k + M)
    x = np.asarray(rec["input"], np.float32)
    if x.ndim != 2:
        raise WalkthroughError(f"{site.path}.input has shape {x.shape}; expected [query, d_model] (record with batch_index=0)")
    x_kv = np.asarray(get(site.name("memory")), np.float32) if site.kind == "cross" else x
    n_keys = rec["k"].shape[1]
    if x_kv.shape[0] != n_keys:
        raise WalkthroughError(
            f"{site.path}: {x_kv.shape[0]} key-side input rows for {n_keys} keys (a single cached step's trace; "
            "pass the decoding session or a full-pass trace)"
        )
    rec["x"], rec["x_kv"] = x, x_kv
    return rec


def _check_request(params: dict[str, np.ndarray], head: int, n_heads: int, query: int, n_query: int, d_model: int) -> int:
    """``query`` once the head, the query row and the weights' shape fit the trace."""
    if not 0 <= head < n_heads:
        raise WalkthroughError(f"head {head} does not exist (the block has {n_heads})")
    if not 0 <= query < n_query:
        raise WalkthroughError(f"query row {query} outside 0..{n_query - 1}")
    if params["w_q"].shape[0] != d_model:
        raise WalkthroughError(f"W^Q has shape {params['w_q'].shape}, the trace's d_model is {d_model}")
    return query


def _head_qkv(p: dict[str, np.ndarray], X: np.ndarray, Xkv: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V of the head owning columns ``lo:hi``: ``[query, d_k]``, ``[key, d_k]`` x2."""
    q = X @ p["w_q"][:, lo:hi] + p["b_q"][lo:hi]
    k = Xkv @ p["w_k"][:, lo:hi] + p["b_k"][lo:hi]
    v = Xkv @ p["w_v"][:, lo:hi] + p["b_v"][lo:hi]
    return q, k, v


@dataclass(frozen=True)
class _Additive:
    """What turns a head's scores QKᵀ into the softmax's input: ÷√d_k (unless ``scaled`` is
    false), then + B (``bias`` ``[head, query, key]``, None: none), then + M (``mask`` ``[query, key]``)."""

    mask: np.ndarray
    bias: np.ndarray | None
    scaled: bool

    def scale(self, scores: np.ndarray, d_k: int) -> np.ndarray:
        return scores / math.sqrt(d_k) if self.scaled else scores

    def masked(self, scaled: np.ndarray, head: int) -> np.ndarray:
        m = np.asarray(self.mask, np.float64)
        return scaled + m if self.bias is None else scaled + self.bias[head] + m


def _recompute(p: dict[str, np.ndarray], x: np.ndarray, x_kv: np.ndarray, add: _Additive, head: int, n_heads: int, d_k: int) -> dict[str, np.ndarray]:
    """Every step of head ``head`` in float64, from the block's inputs and weights."""
    X, Xkv = np.asarray(x, np.float64), np.asarray(x_kv, np.float64)
    lo, hi = head * d_k, (head + 1) * d_k
    q, k, v = _head_qkv(p, X, Xkv, lo, hi)  # [query, d_k], [key, d_k] x2
    scores = q @ k.T  # [query, key]
    scaled = add.scale(scores, d_k)
    masked = add.masked(scaled, head)
    weights = _softmax(masked)
    z = weights @ v  # [query, d_k]
    concat = _concat(p, X, Xkv, add, n_heads, d_k, head, z)  # [query, h·d_k]
    return dict(x=X, x_kv=Xkv, q=q, k=k, v=v, scores=scores, scaled_scores=scaled, mask=np.asarray(add.mask, np.float64), masked_scores=masked,
                weights=weights, z=z, concat=concat, output=concat @ p["w_o"] + p["b_o"], head_output=z @ p["w_o"][lo:hi, :])


def _concat(p, X, Xkv, add: _Additive, n_heads: int, d_k: int, head: int, z: np.ndarray) -> np.ndarray:
    """Concat(Z_1..Z_h): the other heads' Z_j recomputed the same way, head i's columns from ``z``."""
    concat = np.empty((X.shape[0], n_heads * d_k))
    for j in range(n_heads):
        a, b = j * d_k, (j + 1) * d_k
        if j == head:
            concat[:, a:b] = z
            continue
        qj, kj, vj = _head_qkv(p, X, Xkv, a, b)
        concat[:, a:b] = _softmax(add.masked(add.scale(qj @ kj.T, d_k), j)) @ vj
    return concat


def _labels(given: Sequence[str] | None, n: int) -> tuple[str, ...]:
    return tuple(str(s) for s in given) if given is not None else tuple(str(i + 1) for i in range(n))


def _head_arrays(p: dict[str, np.ndarray], mine: dict[str, np.ndarray], lo: int, hi: int) -> dict[str, np.ndarray]:
    """The ``HeadWalkthrough`` array fields, read-only float32."""
    arrays = dict(mine, xx_t=mine["x"] @ mine["x_kv"].T, w_q=p["w_q"][:, lo:hi], w_k=p["w_k"][:, lo:hi], w_v=p["w_v"][:, lo:hi],
                  b_q=p["b_q"][lo:hi], b_k=p["b_k"][lo:hi], b_v=p["b_v"][lo:hi], w_o=p["w_o"], b_o=p["b_o"], w_o_head=p["w_o"][lo:hi, :])
    return {name: _f32(a) for name, a in arrays.items()}


def session_walkthrough(model: Any, session: Any, kind: str, layer: int, head: int, query: int | None = None) -> HeadWalkthrough:
    """:func:`head_walkthrough` on a ``DecodingSession`` (or ``TeacherForced`` result), labelled
    with its pieces: source pieces for the encoder; the fed target pieces (SOS first) for the
    decoder's queries; source pieces as cross-attention keys."""
    src = tuple(session.src_pieces)
    tgt = tuple(session.input_pieces)
    ql = src if kind == "encoder" else tgt
    kl = tgt if kind == "decoder" else src
    return head_walkthrough(model, session, kind, layer, head, query, query_labels=ql, key_labels=kl)


@dataclass(frozen=True)
class WalkthroughFrame:
    """What the walkthrough view draws: one head's numbers, and how many layers the model has
    of each kind (the view's layer choices)."""

    walk: HeadWalkthrough
    layers: Mapping[str, int]


def walkthrough_frame(model: Any, result: Any, kind: str, layer: int, head: int, query: int | None,
                      current_row: int | None) -> WalkthroughFrame | None:
    """The one-head walkthrough of a (frozen) decoding ``result``, the choice fitted to the
    model: the encoder before the first decoder row, the last layer or head past the end, the
    last source piece or ``current_row`` when ``query`` is none or out of range; ``None`` for
    a model without layers of ``kind``."""
    cfg = model.config
    rows = len(result.steps)
    kind = "encoder" if kind != "encoder" and rows == 0 else kind
    count = n_layers(cfg, kind)
    if count == 0:
        return None
    n = len(result.src_pieces) if kind == "encoder" else rows
    if query is None or not 0 <= query < n:
        query = n - 1 if kind == "encoder" else (current_row or 0)
    walk = session_walkthrough(model, result, kind, max(0, min(layer, count - 1)), max(0, min(head, cfg.n_heads - 1)), query)
    return WalkthroughFrame(walk, {k: n_layers(cfg, k) for k in KINDS})
