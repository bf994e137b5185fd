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

Pure numpy: the module does not import torch. ``model`` is read by attribute
(``encoder_layers[i].self_attn.w_q.weight`` …) or given as a mapping of numpy arrays
(:func:`attention_parameters`).

The next-token distribution (top-k, entropy) and the teacher-forced "predicted vs target"
table are given by ``attnviz.core.decoding.session`` (``DecodeStep.topk`` / ``.entropy`` / ``.prob``,
``teacher_forced(...).positions``); the output view takes those objects as they are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnviz.errors import AttnvizError

KINDS = ("encoder", "decoder", "cross")
_BLOCK = {"encoder": "encoder.layers.{}.self_attn", "decoder": "decoder.layers.{}.self_attn", "cross": "decoder.layers.{}.cross_attn"}
_STACK = {"encoder": "encoder_layers", "decoder": "decoder_layers", "cross": "decoder_layers"}
_MODULE = {"encoder": "self_attn", "decoder": "self_attn", "cross": "cross_attn"}
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


class WalkthroughError(AttnvizError, ValueError):
    """A walkthrough that cannot be built from what was given (one-line message)."""


def block_name(kind: str, layer: int) -> str:
    """Trace prefix of an attention block, e.g. ``decoder.layers.1.cross_attn``."""
    if kind not in KINDS:
        raise WalkthroughError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return _BLOCK[kind].format(int(layer))


def _numpy(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):  # a torch tensor, read without importing torch
        t = t.detach().cpu().float().numpy()
    return np.asarray(t, dtype=np.float32)


def attention_parameters(model: Any, kind: str, layer: int) -> dict[str, np.ndarray]:
    """The attention block's weights in the tutorial's orientation (``x W``):
    ``w_q``/``w_k``/``w_v``/``w_o`` ``[d_model, d_model]`` and biases ``[d_model]`` (zeros when absent)."""
    block_name(kind, layer)
    try:
        layers = getattr(model, _STACK[kind])
        if not 0 <= layer < len(layers):
            raise WalkthroughError(f"{kind} layer {layer} does not exist (the model has {len(layers)})")
        attn = getattr(layers[layer], _MODULE[kind])
    except AttributeError:
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
    masked_scores: np.ndarray  # [query, key]  + M
    weights: np.ndarray  # [query, key]  A_i (rows sum to 1)
    z: np.ndarray  # [query, d_k]  Z_i = A_i V_i
    concat: np.ndarray  # [query, d_model]  Concat(Z_1..Z_h); head i's columns are ``head_columns``
    w_o: np.ndarray  # [d_model, d_model]  W^O
    b_o: np.ndarray  # [d_model]
    w_o_head: np.ndarray  # [d_k, d_model]  rows head_columns of W^O: where Z_i meets W^O
    head_output: np.ndarray  # [query, d_model]  Z_i W^O_i: this head's share of the output
    output: np.ndarray  # [query, d_model]  Concat(Z_1..Z_h) W^O + b^O
    errors: Mapping[str, float] = field(default_factory=dict)  # step -> relative max |recomputed − recorded|

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
        """``(name, notation, array)`` for every step, in order."""
        return [(n, t, getattr(self, n)) for n, t in STAGES]

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
    prefix = block_name(kind, layer)
    params = dict(model) if isinstance(model, Mapping) else attention_parameters(model, kind, layer)
    missing = [p for p in PARAMETER_NAMES if p not in params]
    if missing:
        raise WalkthroughError(f"missing attention parameter(s): {', '.join(missing)}")
    get = _getter(trace)

    rec = {f: get(f"{prefix}.{f}") for f in ("input", "q", "k", "v", "scores", "scaled_scores", "mask", "masked_scores", "weights", "z", "concat", "output")}
    x = np.asarray(rec["input"], np.float32)
    if x.ndim != 2:
        raise WalkthroughError(f"{prefix}.input has shape {x.shape}; expected [query, d_model] (record with batch_index=0)")
    x_kv = np.asarray(get(f"{prefix}.memory"), np.float32) if kind == "cross" else x
    n_heads, n_keys, d_k = rec["k"].shape
    n_query, d_model = x.shape
    if x_kv.shape[0] != n_keys:
        raise WalkthroughError(
            f"{prefix}: {x_kv.shape[0]} key-side input rows for {n_keys} keys (a single cached step's trace; "
            "pass the decoding session or a full-pass trace)"
        )
    if not 0 <= head < n_heads:
        raise WalkthroughError(f"head {head} does not exist (the block has {n_heads})")
    if query is None:
        query = n_query - 1
    if not 0 <= query < n_query:
        raise WalkthroughError(f"query row {query} outside 0..{n_query - 1}")
    if params["w_q"].shape != (d_model, d_model):
        raise WalkthroughError(f"W^Q has shape {params['w_q'].shape}, the trace's d_model is {d_model}")

    lo, hi = head * d_k, (head + 1) * d_k
    f64 = lambda a: np.asarray(a, np.float64)  # noqa: E731
    wq, wk, wv, wo = (f64(params[n]) for n in ("w_q", "w_k", "w_v", "w_o"))
    bq, bk, bv, bo = (f64(params[n]) for n in ("b_q", "b_k", "b_v", "b_o"))
    X, Xkv = f64(x), f64(x_kv)

    q = X @ wq[:, lo:hi] + bq[lo:hi]  # [query, d_k]
    k = Xkv @ wk[:, lo:hi] + bk[lo:hi]  # [key, d_k]
    v = Xkv @ wv[:, lo:hi] + bv[lo:hi]  # [key, d_k]
    scores = q @ k.T  # [query, key]
    scaled = scores / math.sqrt(d_k)
    mask = f64(rec["mask"])  # [query, key]
    masked = scaled + mask
    weights = _softmax(masked)
    z = weights @ v  # [query, d_k]
    # Concat(Z_1..Z_h): the other heads' Z_j recomputed the same way, head i's columns from z.
    concat = np.empty((n_query, d_model))
    for j in range(n_heads):
        a, b = j * d_k, (j + 1) * d_k
        if j == head:
            concat[:, a:b] = z
            continue
        qj = X @ wq[:, a:b] + bq[a:b]
        kj = Xkv @ wk[:, a:b] + bk[a:b]
        vj = Xkv @ wv[:, a:b] + bv[a:b]
        concat[:, a:b] = _softmax(qj @ kj.T / math.sqrt(d_k) + mask) @ vj
    output = concat @ wo + bo  # [query, d_model]
    head_output = z @ wo[lo:hi, :]  # [query, d_model]

    recorded = {
        "q": rec["q"][head],
        "k": rec["k"][head],
        "v": rec["v"][head],
        "scores": rec["scores"][head],
        "scaled_scores": rec["scaled_scores"][head],
        "masked_scores": rec["masked_scores"][head],
        "weights": rec["weights"][head],
        "z": rec["z"][head],
        "concat": rec["concat"],
        "output": rec["output"],
    }
    mine = {"q": q, "k": k, "v": v, "scores": scores, "scaled_scores": scaled, "masked_scores": masked,
            "weights": weights, "z": z, "concat": concat, "output": output}
    errors = {name: _difference(mine[name], recorded[name]) for name in CHECKED}

    ql = tuple(str(s) for s in query_labels) if query_labels is not None else tuple(str(i + 1) for i in range(n_query))
    kl = tuple(str(s) for s in key_labels) if key_labels is not None else tuple(str(i + 1) for i in range(n_keys))
    if len(ql) != n_query or len(kl) != n_keys:
        raise WalkthroughError(f"{len(ql)} query / {len(kl)} key labels for a {n_query}×{n_keys} block")

    return HeadWalkthrough(
        kind=kind, layer=int(layer), head=int(head), query=int(query), n_heads=int(n_heads), d_model=int(d_model), d_k=int(d_k),
        query_labels=ql, key_labels=kl,
        x=_f32(X), x_kv=_f32(Xkv), xx_t=_f32(X @ Xkv.T),
        w_q=_f32(wq[:, lo:hi]), w_k=_f32(wk[:, lo:hi]), w_v=_f32(wv[:, lo:hi]),
        b_q=_f32(bq[lo:hi]), b_k=_f32(bk[lo:hi]), b_v=_f32(bv[lo:hi]),
        q=_f32(q), k=_f32(k), v=_f32(v),
        scores=_f32(scores), scaled_scores=_f32(scaled), mask=_f32(mask), masked_scores=_f32(masked), weights=_f32(weights),
        z=_f32(z), concat=_f32(concat), w_o=_f32(wo), b_o=_f32(bo), w_o_head=_f32(wo[lo:hi, :]),
        head_output=_f32(head_output), output=_f32(output), errors=errors,
    )


def session_walkthrough(model: Any, session: Any, kind: str, layer: int, head: int, query: int | None = None) -> HeadWalkthrough:
    """:func:`head_walkthrough` on a ``DecodingSession`` (or ``TeacherForced`` result), labelled
    with its pieces: source pieces for the encoder; the fed target pieces (SOS first) for the
    decoder's queries; source pieces as cross-attention keys."""
    src = tuple(session.src_pieces)
    tgt = tuple(session.input_pieces)
    ql = src if kind == "encoder" else tgt
    kl = src if kind in ("encoder", "cross") else tgt
    return head_walkthrough(model, session, kind, layer, head, query, query_labels=ql, key_labels=kl)
