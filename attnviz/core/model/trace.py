"""Captured intermediates: the ``Trace`` (named numpy arrays) and the ``Recorder`` that fills it.

Capture is opt-in: every module's ``forward`` takes ``rec=None``; only when a
``Recorder`` is passed does it store anything, so training pays one ``is None``
test per site. A recorder is a value passed down the call, never state on the
module, so two threads can run the same model with different recorders. Every recorded value
the pass reads back goes through ``Recorder.tap``, which returns it changed by the call's
interventions (``interventions.py``), if any.

Every name the model can produce is documented in ``TRACE_SCHEMA`` below (one
row per name, with its shape); ``trace_names(config)`` expands the ``{i}``
placeholders and ``tests/core/test_trace_names.py`` pins the contract.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch

from attnviz.core.model.sites import AttentionSite, attention_sites, position_biased

if TYPE_CHECKING:
    from attnviz.core.model.config import TransformerConfig

# ---------------------------------------------------------------------------
# The contract. Dims: src = source length, tgt = target length (a cached decoder
# step has tgt = 1 for queries and keys = steps so far), head, d_k, d_model, d_ff,
# vocab. ``{i}`` is a layer index. Attention blocks ``{A}`` are
# encoder.layers.{i}.self_attn, decoder.layers.{i}.self_attn, decoder.layers.{i}.cross_attn.
# Norm blocks ``{N}`` are <layer>.norm{j} and <stack>.final_norm.
# ---------------------------------------------------------------------------
ATTENTION_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("input", "[query, d_model]", "X: the block's query-side input"),
    ("memory", "[key, d_model]", "C_encoder: encoder output that gives K and V (cross-attention only)"),
    ("q", "[head, query, d_k]", "Q_i = X W_i^Q (+ bias)"),
    ("k", "[head, key, d_k]", "K_i = X W_i^K (+ bias); with a KV cache, all keys so far"),
    ("v", "[head, key, d_k]", "V_i = X W_i^V (+ bias); with a KV cache, all values so far"),
    ("scores", "[head, query, key]", "Q_i K_i^T, before scaling"),
    ("scaled_scores", "[head, query, key]", "Q_i K_i^T / sqrt(d_k)"),
    ("mask", "[query, key]", "M: 0 where allowed, -inf where masked (look-ahead and/or padding)"),
    ("masked_scores", "[head, query, key]", "Q_i K_i^T / sqrt(d_k) + M"),
    ("weights", "[head, query, key]", "A_i = softmax(Q_i K_i^T / sqrt(d_k) + M); rows sum to 1"),
    ("z", "[head, query, d_k]", "Z_i = A_i V_i"),
    ("concat", "[query, d_model]", "Concat(Z_1..Z_h)"),
    ("output", "[query, d_model]", "Concat(Z_1..Z_h) W^O (+ bias)"),
)
LAYER_NORM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("input", "[pos, d_model]", "what the LayerNorm normalizes"),
    ("mean", "[pos]", "per-token mean over the features"),
    ("var", "[pos]", "per-token (biased) variance over the features"),
    ("output", "[pos, d_model]", "LayerNorm(input)"),
)
RMS_NORM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("input", "[pos, d_model]", "what the RMSNorm normalizes"),
    ("mean_square", "[pos]", "per-token mean of the squared features (no mean is taken away)"),
    ("output", "[pos, d_model]", "input / sqrt(mean_square + eps) * weight"),
)
# A self-attention of a model with relative positions (T5) adds B after ``scaled_scores``:
# masked_scores = scaled_scores + B + M.
POSITION_BIAS_FIELD = ("position_bias", "[head, query, key]", "B: the relative position bias of each head (bucketed key - query distance)")
BATCH_NORM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("input", "[pos, d_model]", "what the BatchNorm normalizes"),
    ("batch_mean", "[d_model]", "per-feature mean over the batch's non-pad tokens"),
    ("batch_var", "[d_model]", "per-feature (biased) variance over the batch's non-pad tokens"),
    ("running_mean", "[d_model]", "running mean used in evaluation"),
    ("running_var", "[d_model]", "running (unbiased) variance used in evaluation"),
    ("output", "[pos, d_model]", "BatchNorm(input)"),
)
# Names with no batch dimension of their own (they describe the whole batch).
_BATCHLESS = re.compile(r"(batch_mean|batch_var|running_mean|running_var|\.positional)$")


# Names recorded beside the computation, not on its path (masks, statistics, the softmax of the
# logits): the model does not read them back, so no intervention can act there.
_UNTAPPED = re.compile(r"(^masks\.|\.(mask|mean|var|mean_square|batch_mean|batch_var|running_mean|running_var|probs)$)")


def is_tapped(name: str) -> bool:
    """True for the names whose value the rest of the pass reads back (``Recorder.tap``)."""
    return _UNTAPPED.search(name) is None


def is_batchless(name: str) -> bool:
    """True for the names recorded without a batch axis (they describe the whole batch)."""
    return _BATCHLESS.search(name) is not None


def _attention(prefix: str, cross: bool, biased: bool = False) -> list[tuple[str, str, str]]:
    rows = [(f"{prefix}.{f}", s, d) for f, s, d in ATTENTION_FIELDS if cross or f != "memory"]
    if biased:
        at = next(i for i, row in enumerate(rows) if row[0].endswith(".scaled_scores")) + 1
        f, s, d = POSITION_BIAS_FIELD
        rows.insert(at, (f"{prefix}.{f}", s, d))
    return rows


_NORM_FIELDS = {"layer": LAYER_NORM_FIELDS, "batch": BATCH_NORM_FIELDS, "rms": RMS_NORM_FIELDS}


def _norm(prefix: str, norm: str) -> list[tuple[str, str, str]]:
    return [(f"{prefix}.{f}", s, d) for f, s, d in _NORM_FIELDS[norm]]


def trace_schema(config: "TransformerConfig", *, encoder: bool = True, decoder: bool = True) -> list[tuple[str, str, str]]:
    """All trace names a full forward of a model with ``config`` produces, in order, with shape and meaning
    (a decoder-only model has no encoder names; an encoder-only model has no decoder names and
    ends with its masked-token head's)."""
    rows: list[tuple[str, str, str]] = []
    if encoder and config.kind != "decoder-only":
        rows.append(("masks.src_padding", "[src]", "1.0 where the source token is PAD"))
        rows += _embed_rows(config, "encoder")
        rows += _stack_rows(config, "encoder")
        rows.append(("encoder.output", "[src, d_model]", "C_encoder: the memory cross-attention reads"))
        if config.kind == "encoder-only":
            rows += _masked_head_rows()
    if decoder and config.kind != "encoder-only":
        rows += [
            ("masks.tgt_padding", "[tgt]", "1.0 where the target token is PAD"),
            ("masks.look_ahead", "[tgt, key]", "look-ahead mask M: 0 on and below the diagonal, -inf above"),
        ]
        rows += _embed_rows(config, "decoder")
        rows += _stack_rows(config, "decoder")
        rows += [
            ("decoder.output", "[tgt, d_model]", "the decoder's last hidden states"),
            ("generator.logits", "[tgt, vocab]", "Linear(d_model -> vocab)"),
            ("generator.probs", "[tgt, vocab]", "softmax(logits): the next-token distribution"),
        ]
    return rows


def _masked_head_rows() -> list[tuple[str, str, str]]:
    """An encoder-only model's output layer: the transform, its LayerNorm, then the logits of every position."""
    return [
        ("generator.transform", "[src, d_model]", "act(h W_t + b_t): the masked-token head's transform"),
        *_norm("generator.norm", "layer"),
        ("generator.logits", "[src, vocab]", "Linear(d_model -> vocab) of the normalized transform: the token at each position"),
        ("generator.probs", "[src, vocab]", "softmax(logits): the distribution of the token at each position"),
    ]


_POSITIONAL_MEANING = {
    "sinusoidal": {"encoder": "PE(pos, 2i) = sin(pos/10000^(2i/d_model)), PE(pos, 2i+1) = cos(...)", "decoder": "PE rows of the target positions"},
    "learned": {"encoder": "rows of the learned position table", "decoder": "rows of the learned position table at the target positions"},
}


def _embed_rows(config: "TransformerConfig", stack: str) -> list[tuple[str, str, str]]:
    dim = "src" if stack == "encoder" else "tgt"
    scale = " x sqrt(d_model)" if config.scale_embedding else ""
    tokens = (f"{stack}.embed.tokens", f"[{dim}, d_model]", f"token embedding{scale}")
    if config.positional == "relative":
        return [tokens, (f"{stack}.embed.sum", f"[{dim}, d_model]", "the token embeddings alone: the first layer's input (positions enter as B)")]
    rows = [
        tokens,
        (f"{stack}.embed.positional", f"[{dim}, d_model]", _POSITIONAL_MEANING[config.positional][stack]),
        (f"{stack}.embed.sum", f"[{dim}, d_model]", "embedding + PE: the first layer's input"),
    ]
    return rows + (_norm(f"{stack}.embed.norm", "layer") if config.layernorm_embedding else [])


def _stack_rows(config: "TransformerConfig", stack: str) -> list[tuple[str, str, str]]:
    """Each layer of ``stack``: its attention sublayers (from the table of sites), then the FFN; then the final norm."""
    layers: dict[str, list[AttentionSite]] = {}
    for site in attention_sites(config):
        if site.stack == stack:
            layers.setdefault(site.layer_path, []).append(site)
    post = config.norm_placement == "post"
    rows: list[tuple[str, str, str]] = []
    for path, sites in layers.items():
        for j, site in enumerate(sites, 1):
            rows += _sublayer(path, j, _attention(site.path, site.kind == "cross", position_biased(config, site.kind)), post, config.norm)
        rows += _sublayer(path, len(sites) + 1, _ffn(f"{path}.ffn", config.ffn), post, config.norm)
    if config.final_norm:
        rows += _norm(f"{stack}.final_norm", config.norm)
    return rows


def _ffn(prefix: str, kind: str = "plain") -> list[tuple[str, str, str]]:
    if kind == "gated":
        return [
            (f"{prefix}.gate", "[pos, d_ff]", "act(x W1): the gate"),
            (f"{prefix}.hidden", "[pos, d_ff]", "act(x W1) * (x W_up): FFN hidden activations"),
            (f"{prefix}.output", "[pos, d_model]", "(act(x W1) * (x W_up)) W2"),
        ]
    return [
        (f"{prefix}.hidden", "[pos, d_ff]", "max(0, x W1 + b1): FFN hidden activations"),
        (f"{prefix}.output", "[pos, d_model]", "max(0, x W1 + b1) W2 + b2"),
    ]


def _sublayer(p: str, j: int, body: list[tuple[str, str, str]], post: bool, norm: str) -> list[tuple[str, str, str]]:
    res = [(f"{p}.residual{j}", "[pos, d_model]", "x + Sublayer(...): the residual sum")]
    if post:  # Norm(x + Sublayer(x))
        return body + res + _norm(f"{p}.norm{j}", norm)
    return _norm(f"{p}.norm{j}", norm) + body + res  # x + Sublayer(Norm(x))


def trace_names(config: "TransformerConfig", **kw: bool) -> list[str]:
    return [name for name, _, _ in trace_schema(config, **kw)]


def schema_table(config: "TransformerConfig") -> str:
    """The contract as a plain-text table (``attnviz trace --names`` prints it)."""
    rows = trace_schema(config)
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{n:<{width}}  {s:<20}  {d}" for n, s, d in rows)


# ---------------------------------------------------------------------------
class Trace(Mapping[str, np.ndarray]):
    """An ordered, read-only mapping of dotted names to numpy arrays (float32 unless noted).

    Arrays recorded during a forward pass are converted to numpy lazily, on first access,
    so capture costs a dictionary insert per name while the model runs.
    """

    __slots__ = ("_arrays", "_pending")

    def __init__(self, arrays: Mapping[str, np.ndarray] | Iterable[tuple[str, np.ndarray]] = (), _pending=None):
        items = arrays.items() if isinstance(arrays, Mapping) else arrays
        self._arrays: dict[str, np.ndarray | None] = {}
        self._pending: dict[str, Callable[[], np.ndarray]] = {}
        for k, v in items:
            self._arrays[k] = _readonly(np.asarray(v))
        if _pending:
            for k, fn in _pending.items():
                self._arrays[k] = None
                self._pending[k] = fn

    @classmethod
    def lazy(cls, names: Iterable[str], compute: Callable[[str], np.ndarray]) -> "Trace":
        """A trace of ``names`` whose array ``name`` is ``compute(name)``, computed on its first read
        (costs one dictionary, however many names)."""
        trace = cls()
        trace._arrays = dict.fromkeys(names)
        trace._pending = _ComputedByName(compute)
        return trace

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            a = self._arrays[name]
        except KeyError:
            raise KeyError(f"no array named {name!r} in this trace") from None
        if a is None:
            a = _readonly(self._pending[name]())
            self._arrays[name] = a
        return a

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __contains__(self, name: object) -> bool:
        return name in self._arrays

    def __repr__(self) -> str:
        return f"Trace({len(self)} arrays)"

    def select(self, *patterns: str) -> "Trace":
        """The arrays whose names match any of the glob ``patterns``."""
        return Trace((k, self[k]) for k in self._arrays if any(fnmatch.fnmatchcase(k, p) for p in patterns))

    def nbytes(self) -> int:
        return sum(self[k].nbytes for k in self._arrays)


class _ComputedByName:
    """``Trace._pending`` of a lazy trace: ``[name]`` is the call that computes that array."""

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[str], np.ndarray]):
        self.compute = compute

    def __getitem__(self, name: str) -> Callable[[], np.ndarray]:
        return lambda: self.compute(name)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class Change(Protocol):
    """What a ``Recorder`` needs of an intervention (``interventions.py``): the trace names it acts
    at and the function giving the changed value there (batched tensor in, tensor of its shape out;
    ``offset``: the position t of a cached decoder step, None in a full pass)."""

    names: tuple[str, ...]

    def __call__(self, name: str, tensor: torch.Tensor, offset: int | None) -> torch.Tensor: ...


def taps(rec: "Recorder | None", prefix: str) -> Callable[..., torch.Tensor]:
    """``tap(field, x)`` for the module recording under ``prefix``: ``rec.tap(prefix.field, x)``, or
    ``x`` itself when nothing is recorded or changed (``rec`` is None: no name is built)."""
    if rec is None:
        return _untapped
    return lambda field, tensor, batched=None: rec.tap(f"{prefix}.{field}", tensor, batched)


def _untapped(field: str, tensor: torch.Tensor, batched: bool | None = None) -> torch.Tensor:
    return tensor


class Recorder:
    """Collects tensors into a ``Trace``, and applies the call's interventions where they act.

    The model passes every recorded value through ``tap`` (``x = rec.tap(name, x)``), so an
    intervention (``interventions.py``) replaces a value where it is recorded and the rest of the
    pass uses the replaced value. Interventions travel with the recorder, one per call, never on
    the model: two threads can run one model with different interventions.

    ``names``: glob patterns (``"*.weights"``); ``None`` records everything.
    ``batch_index``: which batch element to keep (the batch dimension is dropped);
    ``None`` keeps the batch dimension on every per-sample array.

    ``put`` only keeps a reference to the (detached) tensor; the conversion to a float32
    numpy array happens when the ``Trace`` is read. The model never modifies a recorded
    tensor in place, so the reference stays valid.
    """

    def __init__(self, names: Iterable[str] | None = None, batch_index: int | None = 0, interventions: Iterable[Change] = ()):
        self.patterns = None if names is None else tuple(names)
        self.batch_index = batch_index
        self._wanted: dict[str, bool] = {}
        self._pending: dict[str, Callable[[], np.ndarray]] = {}
        self._changes: dict[str, list[Change]] = {}
        self.flags: set[str] = set()  # how this call runs besides its values (an intervention's ``flags``: "batch_statistics")
        self.offset: int | None = None  # a cached decoder step's position (``Transformer.decode_step`` sets it)
        for change in interventions:
            self.add(change)

    def add(self, change: Change) -> None:
        """Apply ``change`` too (after those already given), from now on in this call."""
        self.flags.update(getattr(change, "flags", ()))
        for name in change.names:
            self._changes.setdefault(name, []).append(change)

    def tap(self, name: str, tensor: torch.Tensor, batched: bool | None = None) -> torch.Tensor:
        """The value the rest of the pass uses at ``name``: ``tensor`` as the interventions at
        ``name`` change it (in their order; a new tensor, never in place), recorded if wanted."""
        for change in self._changes.get(name, ()):
            tensor = change(name, tensor, self.offset)
        self.put(name, tensor, batched)
        return tensor

    def wants(self, name: str) -> bool:
        hit = self._wanted.get(name)
        if hit is None:
            hit = self.patterns is None or any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
            self._wanted[name] = hit
        return hit

    def put(self, name: str, tensor: torch.Tensor, batched: bool | None = None) -> None:
        """Record ``tensor`` under ``name`` if wanted (detached; converted on first read)."""
        if self.patterns is None or self.wants(name):
            self._pending[name] = _Convert(tensor.detach(), name, batched, self.batch_index)

    def put_lazy(self, name: str, compute: Callable[[], torch.Tensor], batched: bool | None = None) -> None:
        """Record a derived value (e.g. a statistic) computed only if the trace entry is read."""
        if self.patterns is None or self.wants(name):
            self._pending[name] = _Convert(compute, name, batched, self.batch_index)

    def trace(self) -> Trace:
        return Trace((), _pending=dict(self._pending))


class _Convert:
    __slots__ = ("source", "name", "batched", "batch_index")

    def __init__(self, source, name: str, batched: bool | None, batch_index: int | None):
        self.source, self.name, self.batched, self.batch_index = source, name, batched, batch_index

    def __call__(self) -> np.ndarray:
        t = self.source
        if not isinstance(t, torch.Tensor):
            with torch.inference_mode():
                t = t().detach()
        batched = self.batched if self.batched is not None else not is_batchless(self.name)
        if batched and self.batch_index is not None:
            t = t[self.batch_index]
        if t.dtype != torch.float32:
            t = t.float()
        return t.cpu().numpy()
