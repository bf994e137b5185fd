"""The step history of a ``DecodingSession`` (``StepHistory``): what each model call produced
(``ModelCall``) and the decoder trace arrays assembled over the steps of a hypothesis, with the
shapes a full teacher-forced pass gives. No Qt.

Where a cached step's arrays go in a full pass is known per field (``ATTENTION_FIELDS`` and the
norm fields of the trace schema): the query axis is axis 1 for per-head arrays, axis 0 for the
rest; ``k``/``v``/``memory`` and running statistics already hold every key; the key axis of
decoder self-attention grows by one per step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.decoding.row_buffer import RowBuffer
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.model.sites import attention_sites
from attnviz.core.model.trace import Trace, is_batchless, trace_names

if TYPE_CHECKING:
    from attnviz.core.model.config import TransformerConfig

_PER_HEAD = frozenset({"q", "z", "scores", "scaled_scores", "position_bias", "masked_scores", "weights"})  # [head, query, ...]
_ALL_KEYS = frozenset({"k", "v", "memory", "running_mean", "running_var"})  # the last step holds them all
_BATCH_STATS = frozenset({"batch_mean", "batch_var"})  # recomputed over the stacked input
_GROWING = frozenset({"scores", "scaled_scores", "position_bias", "masked_scores", "weights", "mask"})  # decoder self-attention: keys 0..step

Origin = Sequence[tuple[int, bool]]  # per step: (row of that step's model call, forced)


@dataclass
class ModelCall:
    """What one model call produced (batch = the live hypotheses it was fed)."""

    trace: Trace
    batched: bool  # trace keeps a batch dimension (beam search with several rows)
    logits: torch.Tensor  # [n, V]
    probs: torch.Tensor  # [n, V] float32 softmax (= generator.probs)
    rows: dict[int, Trace] = field(default_factory=dict)

    def row_trace(self, row: int) -> Trace:
        """The trace of one fed hypothesis (its batch row)."""
        if not self.batched:
            return self.trace
        if row not in self.rows:
            t = self.trace
            self.rows[row] = Trace((k, t[k] if is_batchless(k) else t[k][row]) for k in t)
        return self.rows[row]


def calls_of_pass(config: TransformerConfig, trace: Trace, logits: torch.Tensor) -> list[ModelCall]:
    """The model calls of the cached steps that one pass over their positions stands for
    (``Transformer.prefill``; ``trace`` without a batch axis, ``logits`` ``[n, V]``): call i holds
    row i of the pass, over the keys step i sees (0..i), laid out as ``decode_step`` records it.
    Its arrays are cut from the pass's when first read. Not for BatchNorm statistics (a step's
    are over its one token): ``ValueError``."""
    self_attn = frozenset(site.path for site in attention_sites(config, "decoder"))
    cuts = {name: _row_cut(name, self_attn) for name in trace}
    names = tuple(trace)
    logits = logits.float()
    probs = torch.softmax(logits, -1)
    return [ModelCall(Trace.lazy(names, _RowOfPass(trace, cuts, i)), False, logits[i : i + 1], probs[i : i + 1]) for i in range(logits.shape[0])]


def _row_cut(name: str, self_attn: frozenset[str]) -> Callable[[int], tuple]:
    """``i -> index``: what of a full pass's array ``name`` step i records (the inverse of ``StepHistory._assemble``)."""
    prefix, _, field_name = name.rpartition(".")
    if field_name in _BATCH_STATS:
        raise ValueError(f"{name}: a cached step's batch statistics are over its one token, not a row of a full pass")
    if field_name in ("k", "v") and prefix in self_attn:  # [head, key, d_k]: the keys so far
        return lambda i: (slice(None), slice(0, i + 1))
    if field_name in _ALL_KEYS:
        return lambda i: ()
    lead = (slice(None),) if field_name in _PER_HEAD else ()  # the query axis is 1 for per-head arrays
    if name == "masks.look_ahead" or (prefix in self_attn and field_name in _GROWING):
        return lambda i: (*lead, slice(i, i + 1), slice(0, i + 1))
    return lambda i: (*lead, slice(i, i + 1))


class _RowOfPass:
    """Step ``row``'s array of a name, cut from a full pass's ``trace`` (``calls_of_pass``)."""

    __slots__ = ("trace", "cuts", "row")

    def __init__(self, trace: Trace, cuts: dict[str, Callable[[int], tuple]], row: int):
        self.trace, self.cuts, self.row = trace, cuts, row

    def __call__(self, name: str) -> np.ndarray:
        return self.trace[name][self.cuts[name](self.row)]


class StepHistory:
    """The model calls of a session, one per ``step``/``force`` kept, and the arrays assembled
    from them (cached until the history changes). The arrays of the step before are kept one step
    longer: a step's array is the previous one with its row appended (a long decoding assembles
    one row per step, not all of them). Attention weights go further: each name (or stack of
    names) keeps its rows in a ``RowBuffer`` and a step returns a read-only view of it, having
    written its one row (its cost does not grow with the rows before it)."""

    def __init__(self, config: TransformerConfig):
        self.config = config
        self._names = frozenset(trace_names(config, encoder=False))
        self._self_attn = frozenset(site.path for site in attention_sites(config, "decoder"))
        self._calls: list[ModelCall] = []
        self._acc: dict[tuple, np.ndarray] = {}
        self._prev: dict[tuple, np.ndarray] = {}  # the arrays assembled before the last push
        self._buffers: dict[tuple[str, ...], RowBuffer] = {}  # attention weights: names stacked -> their rows

    def __len__(self) -> int:
        return len(self._calls)

    def __getitem__(self, index: int) -> ModelCall:
        return self._calls[index]

    def push(self, call: ModelCall) -> None:
        self._calls.append(call)
        self._prev, self._acc = self._acc, {}  # the calls they came from stay: a prefix of the new origins

    def pop(self) -> None:
        self._calls.pop()
        self._acc.clear()
        self._prev.clear()
        for buffer in self._buffers.values():  # the popped call's rows are gone (the next call at its place differs)
            buffer.truncate(len(self._calls))

    def clear(self) -> None:
        self._calls.clear()
        self._acc.clear()
        self._prev.clear()
        self._buffers.clear()

    def snapshot(self, n_calls: int) -> StepHistory:
        """A history of the first ``n_calls`` calls that later pushes and pops leave as it is."""
        copy = StepHistory(self.config)
        copy._calls = self._calls[:n_calls]
        return copy

    def accumulated(self, name: str, origin: Origin) -> np.ndarray:
        """Decoder trace array ``name`` over the hypothesis whose steps came from ``origin``, with the
        shape a full pass over its fed tokens gives:

        * per-query arrays are stacked along their query axis (``[..., steps, ...]``);
        * keys a cached step could not see (the future) are filled as the look-ahead mask makes
          them: weight 0, mask and masked scores -inf. Raw ``scores``/``scaled_scores`` there,
          which a cached step never computes, are filled in as ``q_i . k_j`` from the stacked
          ``q`` and the last step's ``k`` (what the tutorial's full ``QKᵀ`` shows), and a relative
          ``position_bias`` there as a full pass computes it (the distance-0 bucket's value);
        * ``k``/``v``/``memory``/running statistics are the last step's (they hold all keys);
        * BatchNorm ``batch_mean``/``batch_var`` are computed over the stacked ``input`` (the
          tokens of this hypothesis), as a full pass would.
        """
        if name not in self._names:
            raise KeyError(f"no trace name {name!r} (see attnviz.core.model.trace.schema_table)")
        if not origin:
            raise DecodingError("nothing decoded yet: step() first")
        key = (name, tuple(origin))
        hit = self._acc.get(key)
        if hit is None:
            hit = self._buffered((name,), origin)[0] if name.endswith(".weights") else self._assemble(name, origin)
            hit.flags.writeable = False
            self._acc[key] = hit
        return hit

    def stacked(self, names: tuple[str, ...], origin: Origin) -> np.ndarray:
        """``accumulated`` of each of ``names`` (arrays of one shape: e.g. every layer's attention
        weights), stacked ``[len(names), ...]`` and cached; attention weights are one read-only
        view of their ``RowBuffer``, a step writing only its own rows (not a copy of every row per
        layer and one more to stack them)."""
        key = (names, tuple(origin))
        hit = self._acc.get(key)
        if hit is None:
            if origin and names[0] in self._names and all(n.endswith(".weights") for n in names):
                hit = self._buffered(names, origin)
            else:
                hit = np.stack([self.accumulated(n, origin) for n in names])
            hit.flags.writeable = False
            self._acc[key] = hit
        return hit

    def _buffered(self, names: tuple[str, ...], origin: Origin) -> np.ndarray:
        """Attention weights of ``names`` (one kind, same shape) stacked ``[len(names), head, steps, key]``:
        a view of their ``RowBuffer``, whose rows are each step's (``[head, 1, key]`` per name)."""
        buffer = self._buffers.get(names)
        if buffer is None:
            growing = names[0].rpartition(".")[0] in self._self_attn  # decoder self-attention: keys 0..step, 0 after
            buffer = self._buffers[names] = RowBuffer(0.0 if growing else None, self.config.max_len)

        def row_of(i: int) -> np.ndarray:
            trace = self._calls[i].row_trace(origin[i][0])
            try:
                return np.stack([trace[n] for n in names])
            except KeyError:
                raise KeyError(f"{names[0]!r} was not captured in this session") from None

        return buffer.view(origin, row_of)

    def _rows(self, name: str, origin: Origin) -> list[np.ndarray]:
        try:
            return [self._calls[i].row_trace(row)[name] for i, (row, _) in enumerate(origin)]
        except KeyError:
            raise KeyError(f"{name!r} was not captured in this session") from None

    def _last_row(self, name: str, origin: Origin) -> np.ndarray:
        """``name`` of the last step of ``origin`` alone."""
        try:
            return self._calls[len(origin) - 1].row_trace(origin[-1][0])[name]
        except KeyError:
            raise KeyError(f"{name!r} was not captured in this session") from None

    def _assemble(self, name: str, origin: Origin) -> np.ndarray:
        prefix, _, field_name = name.rpartition(".")
        if field_name in _BATCH_STATS:
            x = self.accumulated(prefix + ".input", origin).astype(np.float64)  # [steps, d]
            stat = x.mean(0) if field_name == "batch_mean" else x.var(0)
            return stat.astype(np.float32)
        if field_name in _ALL_KEYS:
            return self._last_row(name, origin)
        axis = 1 if field_name in _PER_HEAD else 0
        growing = name == "masks.look_ahead" or (prefix in self._self_attn and field_name in _GROWING)
        fill = 0.0 if field_name == "weights" else -np.inf
        before = self._prev.get((name, tuple(origin[:-1]))) if len(origin) > 1 else None
        if before is not None:  # the step before's array, one row longer
            out = _appended(before, self._last_row(name, origin), axis, fill if growing else None)
        elif not growing:
            return np.concatenate(self._rows(name, origin), axis=axis)
        else:
            out = _lower_triangle(self._rows(name, origin), axis, fill)
        if not growing:
            return out
        if field_name in ("scores", "scaled_scores"):
            self._fill_future_scores(out, prefix, field_name, origin)
        elif field_name == "position_bias":  # a causal bias puts every later key in the distance-0 bucket (T5)
            n = out.shape[-1]
            upper = np.triu(np.ones((n, n), bool), 1)
            out[:, upper] = np.broadcast_to(np.diagonal(out, axis1=1, axis2=2)[:, :, None], out.shape)[:, upper]
        return out

    def _fill_future_scores(self, out: np.ndarray, prefix: str, field_name: str, origin: Origin) -> None:
        """Raw scores above the diagonal, ``q_i . k_j``, as a full pass computes them. ``out`` ``[head, n, n]``."""
        n = len(origin)
        q = self.accumulated(prefix + ".q", origin)  # [head, steps, d_k]
        k = self._last_row(prefix + ".k", origin)  # [head, steps, d_k]
        full = (q @ np.swapaxes(k, -1, -2)).astype(np.float32)
        if field_name == "scaled_scores" and self.config.scale_scores:
            full = full * np.float32(1.0 / math.sqrt(self.config.d_k))
        upper = np.triu(np.ones((n, n), bool), 1)
        out[:, upper] = full[:, upper]


def _appended(before: np.ndarray, row: np.ndarray, axis: int, fill: float | None) -> np.ndarray:
    """``before`` with ``row`` (one query) appended along the query ``axis``; ``fill`` (growing
    keys: decoder self-attention, whose query axis is the one before the keys) pads ``before``'s
    rows to the new key and is ``None`` otherwise."""
    if fill is None:
        return np.concatenate([before, row], axis=axis)
    n = before.shape[-2] + 1
    out = np.full(row.shape[:-2] + (n, n), fill, dtype=row.dtype)
    out[..., : n - 1, : n - 1] = before
    out[..., n - 1, :] = row[..., 0, :]
    return out


def _lower_triangle(rows: list[np.ndarray], axis: int, fill: float) -> np.ndarray:
    """Rows whose key axis (the last) grows by one per step, in one array with the future keys
    set to ``fill``: row ``i`` has ``i + 1`` keys; ``axis`` is the query axis (0 or 1)."""
    n = len(rows)
    shape = list(rows[-1].shape)
    shape[axis] = n
    out = np.full(shape, fill, dtype=rows[-1].dtype)
    for i, r in enumerate(rows):
        if axis == 0:
            out[i, : i + 1] = r[0]
        else:
            out[:, i, : i + 1] = r[:, 0]
    return out
