"""Plain data the views render: numpy arrays, label lists and the current step.

Views never see a decoding session or a tensor. Whoever owns the session (the main
window) builds these small frozen objects once per step and hands them to every view;
construction checks the shapes, so a view can trust them.

Kinds of attention (the tutorial's names)::

    "encoder"  encoder self-attention      rows: source pieces       columns: source pieces
    "decoder"  decoder masked self-attn.   rows: target pieces (SOS…) columns: target pieces
    "cross"    cross-attention             rows: target (C_decoder)  columns: source (C_encoder)

Layers and heads are 0-based indices in every API; the views label them 1-based
("layer 1", "head 1", as Z_1 … Z_h in the tutorial).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from attnviz.core.arrays import frozen_float32
from attnviz.core.model.sites import KINDS, position_biased

if TYPE_CHECKING:  # importing the decoding would import torch
    from attnviz.core.decoding.session import DecodeStep
    from attnviz.core.decoding.teacher_forcing import TeacherForced
    from attnviz.core.model.config import TransformerConfig

#: Title of each kind, in the tutorial's notation.
KIND_TITLES: dict[str, str] = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder masked self-attention",
    "cross": "Cross-attention",
}
#: What cross-attention's formula says in words: where its Q and its K, V come from.
CROSS_SOURCES = "Q from C_decoder,  K, V from C_encoder"


@dataclass(frozen=True)
class ScoreForm:
    """What one kind of attention of a model adds to QKᵀ before the softmax, besides the mask."""

    scaled: bool = True  # ÷√d_k (false: T5, whose weights fold the scale in: ``config.scale_scores``)
    biased: bool = False  # + B, a relative position bias (T5's self-attention; never cross-attention)

    @classmethod
    def of(cls, config: TransformerConfig, kind: str) -> ScoreForm:
        """The form of ``kind``'s scores in a model of ``config``."""
        return cls(config.scale_scores, position_biased(config, kind))


def attention_formula(kind: str, form: ScoreForm = ScoreForm(), words: Callable[[str], str] | None = None) -> str:
    """The formula ``kind``'s weights come from: ``A = softmax(QKᵀ/√d_k + M)`` (the decoder of the
    paper's model), ``A = softmax(QKᵀ + B + M)`` (T5's decoder), ``A = softmax(QKᵀ)`` (T5's
    cross-attention). The decoder's self-attention adds the look-ahead mask M; cross-attention's
    formula ends with :data:`CROSS_SOURCES`, passed through ``words`` (a translation) when given."""
    terms = ("QKᵀ/√d_k" if form.scaled else "QKᵀ", "B" if form.biased else "", "M" if kind == "decoder" else "")
    formula = f"A = softmax({' + '.join(t for t in terms if t)})"
    if kind != "cross":
        return formula
    return f"{formula},  {CROSS_SOURCES if words is None else words(CROSS_SOURCES)}"


def _labels(seq: Sequence[str], n: int, what: str) -> tuple[str, ...]:
    labels = tuple(str(s) for s in seq)
    if len(labels) != n:
        raise ValueError(f"{what}: {len(labels)} labels for {n} positions")
    return labels


@dataclass(frozen=True, eq=False)
class AttentionData:
    """The attention weights of one kind, all layers and heads, for the current step.

    weights       ``[layer, head, query, key]`` float32, rows sum to 1 (decoder: lower-triangular)
    query_labels  ``query`` pieces (rows)
    key_labels    ``key`` pieces (columns)
    highlight     the current step's query row, or ``None`` (encoder self-attention)
    head_mean     ``[layer, query, key]`` mean over heads (``None``: the views take the mean)
    rollout       ``[query, key]`` attention rollout through all layers, or ``None`` (mode disabled);
                  or a function that computes it, called on first use (:meth:`rollout_matrix`): a
                  long input's rollout costs more than a step, and is only wanted when shown
    form          what the model adds to QKᵀ before the softmax (÷√d_k, B): :func:`attention_formula`'s
    """

    kind: str
    weights: np.ndarray
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    highlight: int | None = None
    head_mean: np.ndarray | None = None
    rollout: np.ndarray | Callable[[], np.ndarray | None] | None = None
    form: ScoreForm = ScoreForm()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        w = frozen_float32(self.weights, 4, "weights [layer, head, query, key]")
        object.__setattr__(self, "weights", w)
        _, _, nq, nk = w.shape
        object.__setattr__(self, "query_labels", _labels(self.query_labels, nq, "query_labels"))
        object.__setattr__(self, "key_labels", _labels(self.key_labels, nk, "key_labels"))
        if self.highlight is not None:
            h = int(self.highlight)
            if not 0 <= h < nq:
                raise ValueError(f"highlight row {h} outside 0..{nq - 1}")
            object.__setattr__(self, "highlight", h)
        if self.head_mean is not None:
            m = frozen_float32(self.head_mean, 3, "head_mean [layer, query, key]")
            if m.shape != (w.shape[0], nq, nk):
                raise ValueError(f"head_mean shape {m.shape} does not match weights {w.shape}")
            object.__setattr__(self, "head_mean", m)
        if self.rollout is not None and not callable(self.rollout):
            object.__setattr__(self, "rollout", self._checked_rollout(self.rollout))

    def _checked_rollout(self, rollout: np.ndarray) -> np.ndarray:
        r = frozen_float32(rollout, 2, "rollout [query, key]")
        if r.shape != self.weights.shape[2:]:
            raise ValueError(f"rollout shape {r.shape} does not match [query, key] = {self.weights.shape[2:]}")
        return r

    @property
    def has_rollout(self) -> bool:
        """A rollout was given (as an array or as the function that computes it)."""
        return self.rollout is not None

    def rollout_matrix(self) -> np.ndarray | None:
        """``[query, key]`` rollout; one given as a function is computed (and checked) here, once."""
        if callable(self.rollout):
            computed = self.rollout()
            object.__setattr__(self, "rollout", None if computed is None else self._checked_rollout(computed))
        return self.rollout

    @property
    def n_layers(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.weights.shape[1])

    @property
    def title(self) -> str:
        return KIND_TITLES[self.kind]

    def mean(self, layer: int) -> np.ndarray:
        """``[query, key]`` mean over the heads of ``layer``."""
        if self.head_mean is not None:
            return self.head_mean[layer]
        return self.weights[layer].mean(axis=0)


def _attention_sets(data: Mapping[str, AttentionData]) -> dict[str, AttentionData]:
    """``data`` checked (AttentionData keyed by its kind, at least one), in ``KINDS`` order."""
    out = {}
    for kind, d in data.items():
        if not isinstance(d, AttentionData) or d.kind != kind:
            raise ValueError(f"expected AttentionData keyed by its kind; got {kind!r} → {d!r}")
        out[kind] = d
    if not out:
        raise ValueError("an attention frame needs at least one kind of attention")
    return {k: out[k] for k in KINDS if k in out}


@dataclass(frozen=True, eq=False)
class AttentionFrame:
    """Every kind's attention of one frame and what each target row predicted: what the
    attention views (grid, head detail, lines) draw.

    sets       kind → :class:`AttentionData`, in ``KINDS`` order (at least one kind)
    predicted  what each target row produced (row y_t predicts ``predicted[t]``); empty: a
               row's prediction is read off the next row
    ablated    the heads ablated in the run these weights are of: ``(kind, layer, head)``, 0-based
    ablation   how they are ablated (zero, mean or uniform)
    """

    sets: Mapping[str, AttentionData]
    predicted: tuple[str, ...] = ()
    ablated: frozenset[tuple[str, int, int]] = frozenset()
    ablation: str = "zero"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sets", _attention_sets(self.sets))
        object.__setattr__(self, "predicted", tuple(str(p) for p in self.predicted))

    @classmethod
    def of(cls, data: "AttentionFrame | AttentionData | Mapping[str, AttentionData]") -> "AttentionFrame":
        """What an attention view draws, as a frame: a frame as it is; one kind's data or a
        mapping kind → data with no predictions."""
        if isinstance(data, AttentionFrame):
            return data
        return cls({data.kind: data} if isinstance(data, AttentionData) else data)


@dataclass(frozen=True, eq=False)
class MaskData:
    """Decoder masked self-attention at the current step, the pieces of softmax(QKᵀ/√d_k + M).

    query_labels   target pieces fed to the decoder (``SOS``, y₁, …), one per row
    key_labels     target pieces as keys (same as ``query_labels`` for self-attention)
    look_ahead     ``[query, key]`` M: 0 on and below the diagonal, −inf above
    scaled_scores  ``[layer, head, query, key]`` QKᵀ/√d_k
    weights        ``[layer, head, query, key]`` softmax(QKᵀ/√d_k + M), exact 0 above the diagonal
    masked_scores  ``[layer, head, query, key]`` QKᵀ/√d_k (+ B) + M (``None``: scaled_scores (+ position_bias) + mask)
    mask           ``[query, key]`` the M actually added (look-ahead and padding); ``None``: look_ahead
    tgt_padding    ``[key]`` 1.0 where a target key is PAD (``None``: no padding)
    src_padding    ``[src]`` 1.0 where a source token is PAD (``None``: no padding)
    src_labels     source pieces, one per ``src_padding`` entry
    step           the current step's query row, or ``None``
    position_bias  ``[layer, head, query, key]`` B, a relative position bias added to the scores (T5); ``None``: none
    scaled         the scores are divided by √d_k (false: ``scaled_scores`` is QKᵀ itself, as T5 computes it)
    """

    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    look_ahead: np.ndarray
    scaled_scores: np.ndarray
    weights: np.ndarray
    masked_scores: np.ndarray | None = None
    mask: np.ndarray | None = None
    tgt_padding: np.ndarray | None = None
    src_padding: np.ndarray | None = None
    src_labels: tuple[str, ...] = field(default=())
    step: int | None = None
    position_bias: np.ndarray | None = None
    scaled: bool = True

    def __post_init__(self) -> None:
        s = frozen_float32(self.scaled_scores, 4, "scaled_scores [layer, head, query, key]")
        w = frozen_float32(self.weights, 4, "weights [layer, head, query, key]")
        if w.shape != s.shape:
            raise ValueError(f"weights {w.shape} and scaled_scores {s.shape} differ in shape")
        _, _, nq, nk = s.shape
        la = frozen_float32(self.look_ahead, 2, "look_ahead [query, key]")
        if la.shape != (nq, nk):
            raise ValueError(f"look_ahead shape {la.shape} does not match [query, key] = {(nq, nk)}")
        mask = la if self.mask is None else frozen_float32(self.mask, 2, "mask [query, key]")
        if mask.shape != (nq, nk):
            raise ValueError(f"mask shape {mask.shape} does not match [query, key] = {(nq, nk)}")
        if self.position_bias is not None:
            b = frozen_float32(self.position_bias, 4, "position_bias [layer, head, query, key]")
            if b.shape != s.shape:
                raise ValueError(f"position_bias {b.shape} and scaled_scores {s.shape} differ in shape")
            object.__setattr__(self, "position_bias", b)
        if self.masked_scores is None:
            ms = s + mask[None, None] if self.position_bias is None else s + self.position_bias + mask[None, None]
            ms.flags.writeable = False
        else:
            ms = frozen_float32(self.masked_scores, 4, "masked_scores [layer, head, query, key]")
            if ms.shape != s.shape:
                raise ValueError(f"masked_scores {ms.shape} and scaled_scores {s.shape} differ in shape")
        for name, value in (("scaled_scores", s), ("weights", w), ("look_ahead", la), ("mask", mask), ("masked_scores", ms)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "query_labels", _labels(self.query_labels, nq, "query_labels"))
        object.__setattr__(self, "key_labels", _labels(self.key_labels, nk, "key_labels"))
        if self.tgt_padding is not None:
            tp = frozen_float32(self.tgt_padding, 1, "tgt_padding [key]")
            if tp.shape != (nk,):
                raise ValueError(f"tgt_padding has {tp.shape[0]} entries for {nk} keys")
            object.__setattr__(self, "tgt_padding", tp)
        if self.src_padding is not None:
            sp = frozen_float32(self.src_padding, 1, "src_padding [src]")
            object.__setattr__(self, "src_labels", _labels(self.src_labels, sp.shape[0], "src_labels"))
            object.__setattr__(self, "src_padding", sp)
        if self.step is not None:
            st = int(self.step)
            if not 0 <= st < nq:
                raise ValueError(f"step row {st} outside 0..{nq - 1}")
            object.__setattr__(self, "step", st)

    @property
    def n_layers(self) -> int:
        return int(self.scaled_scores.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.scaled_scores.shape[1])


@dataclass(frozen=True, eq=False)
class MaskFrame:
    """The decoder self-attention's masks of one frame and what each target row predicted:
    what the mask view draws.

    masks      the :class:`MaskData` of the frame
    predicted  what each target row produced (as :attr:`AttentionFrame.predicted`)
    """

    masks: MaskData
    predicted: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.masks, MaskData):
            raise TypeError(f"MaskFrame holds MaskData, not {type(self.masks).__name__}")
        object.__setattr__(self, "predicted", tuple(str(p) for p in self.predicted))

    @classmethod
    def of(cls, data: "MaskFrame | MaskData") -> "MaskFrame":
        """What the mask view draws, as a frame: a frame as it is; masks with no predictions."""
        return data if isinstance(data, MaskFrame) else cls(data)


@dataclass(frozen=True, eq=False)
class OutputFrame:
    """What the output layer says at one frame: what the output view draws.

    step      the ``DecodeStep`` decoded last (its ``topk``, ``entropy``, ``token_id``, ``prob``,
              ``forced``, ``index``), or ``None``
    forced    a ``TeacherForced`` result (one ``ForcedPosition`` per target position), or ``None``
    position  the teacher-forcing cursor, 0-based, kept within ``forced``'s positions (``None``
              without ``forced``): its distribution is shown when there is no ``step``
    """

    step: DecodeStep | None = None
    forced: TeacherForced | None = None
    position: int | None = None

    def __post_init__(self) -> None:
        f = self.forced
        last = max(0, len(f.steps) - 1) if f is not None else 0
        object.__setattr__(self, "position", None if f is None else min(max(0, int(self.position or 0)), last))


@dataclass(frozen=True, eq=False)
class FigureData:
    """The data behind a figure, as written to CSV and NPZ.

    ``values`` are arrays that all have the dimensions ``dims`` (one CSV column each, in
    long form: one CSV row per element). ``coords`` gives labels along some dimensions
    (token pieces along ``query``/``key``; ``layer``/``head`` get 1-based numbers).
    ``extras`` are further arrays of other shapes, written to NPZ only.
    """

    title: str
    dims: tuple[str, ...]
    values: Mapping[str, np.ndarray]
    coords: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("FigureData needs at least one value array")
        shapes = {np.shape(v) for v in self.values.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != len(self.dims):
            raise ValueError(f"value arrays must share the shape of dims {self.dims}; got {shapes}")
        shape = next(iter(shapes))
        for dim, labels in self.coords.items():
            if dim not in self.dims:
                raise ValueError(f"coords for unknown dimension {dim!r}")
            if len(labels) != shape[self.dims.index(dim)]:
                raise ValueError(f"{len(labels)} labels for dimension {dim!r} of size {shape[self.dims.index(dim)]}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(np.shape(next(iter(self.values.values()))))
