"""Content keys only: attention renormalised over the keys that are not sinks.

Many heads park most of their weight on a few keys that carry no content, "attention sinks":
the start and end tokens and punctuation. Their columns outshine what the head does with the
words. :func:`sink_keys` finds those keys from the labels, :func:`renormalise` drops their
columns from ``[..., query, key]`` weights and divides each row by the weight left on the other
keys, the content keys, so each row sums to 1 again over them.

A key is a sink when its label is

- ``SOS`` (or ``BOS``), ``EOS`` or ``PAD``, as every tokenizer of the app labels those tokens
  (``UNK`` stands for a word the vocabulary cannot spell: content);
- punctuation alone: after the word-start mark ``▁`` is dropped, every character is in a Unicode
  category ``P*`` (``.``, ``。``, ``▁,``, ``?!``). Symbols (``S*``: ``$``, ``+``) are content.
  **An apostrophe or a hyphen alone is not a sink**: it is part of a word (``▁It`` ``'`` ``s``,
  ``well`` ``-`` ``known``), as :mod:`~attnviz.core.analysis.word_groups` joins it, and ``'s``
  has a letter anyway. A piece that is only the word-start mark holds no punctuation: content.

A row whose whole weight is on sinks (the decoder's first row, whose one key is ``SOS``) has
nothing left to renormalise: it is NaN throughout, never divided by zero.

:func:`content_frame` does it for every kind of an :class:`AttentionFrame`. With words (the
views' "Words" switch), **grouping comes first, then the sinks are dropped**: punctuation and
special tokens stay words of their own, so the same keys are dropped either way, but a word's
row is the mean of its pieces' rows *before* it is renormalised. The other order would
renormalise each piece's row on its own and average those, so one piece whose row is all on
sinks (NaN) would empty its whole word, and a piece that reads almost nothing but sinks would
weigh as much as one that reads the words.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame
from attnviz.core.analysis.word_groups import JOINERS, MARKS

SINK_TOKENS = ("SOS", "BOS", "EOS", "PAD")  # the labels of the start, end and padding tokens (the tokenizers' special labels)
RENORMALISED = "each row renormalised over the keys that are not SOS, EOS or punctuation"  # for files and captions


def content_notes() -> dict[str, object]:
    """What a data file of content keys only says of its rows, beside what it is of."""
    return {"content_keys": f"content keys only: {RENORMALISED} (their columns dropped)"}


def is_sink(label: str) -> bool:
    """``label`` is a start, end or padding token, or punctuation alone (word marks aside; an
    apostrophe or hyphen alone is part of a word, not a sink)."""
    if label in SINK_TOKENS:
        return True
    text = label.strip(MARKS)
    return bool(text.strip(JOINERS)) and all(unicodedata.category(ch).startswith("P") for ch in text)


def sink_keys(labels: Sequence[str]) -> np.ndarray:
    """``[key]`` bool: True at the keys whose labels are sinks (:func:`is_sink`)."""
    return np.array([is_sink(label) for label in labels], dtype=bool).reshape(len(labels))


def renormalise(weights: np.ndarray, sinks: np.ndarray) -> np.ndarray:
    """``weights`` ``[..., query, key]`` without the ``sinks`` columns (``[key]`` bool), each row
    divided by the weight it has left: ``[..., query, content keys]``, rows summing to 1; a row
    with no weight left (all of it on sinks) is NaN."""
    w = np.asarray(weights)
    sinks = np.asarray(sinks, dtype=bool)
    if sinks.shape != w.shape[-1:]:
        raise ValueError(f"sink flags of shape {sinks.shape} for {w.shape[-1]} keys")
    kept = w[..., ~sinks]
    mass = kept.sum(axis=-1, keepdims=True)
    empty = ~(mass > 0)  # no weight left, or NaN already
    out = kept / np.where(empty, 1, mass)
    out[np.broadcast_to(empty, out.shape)] = np.nan
    return out


def content_data(d: AttentionData) -> AttentionData:
    """``d`` over its content keys: weights renormalised per head; the heads' mean and the rollout
    are the mean and rollout of ``d`` renormalised (a head parked on sinks weighs little in the
    mean), the rollout still computed when first shown. Query rows are kept as they are."""
    sinks = sink_keys(d.key_labels)
    mean = d.weights.mean(axis=1) if d.head_mean is None else d.head_mean
    rollout: Callable[[], np.ndarray | None] | None = None
    if d.has_rollout:
        def rollout() -> np.ndarray | None:
            matrix = d.rollout_matrix()
            return None if matrix is None else renormalise(matrix, sinks)
    labels = tuple(label for label, sink in zip(d.key_labels, sinks) if not sink)
    return AttentionData(d.kind, renormalise(d.weights, sinks), d.query_labels, labels, highlight=d.highlight,
                         head_mean=renormalise(mean, sinks), rollout=rollout, form=d.form)


@dataclass(frozen=True, eq=False)
class ContentFrame(AttentionFrame):
    """An :class:`AttentionFrame` over content keys: ``source`` is the frame it came from (pieces
    or words), ``keys`` gives per kind the columns of ``source`` kept, in order (to read a shown
    key's weight before renormalising)."""

    source: AttentionFrame | None = None
    keys: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


def content_frame(frame: AttentionFrame, previous: ContentFrame | None = None) -> ContentFrame:
    """Every kind of ``frame`` over its content keys (:func:`content_data`); rows, predictions and
    ablation as they were. A kind whose data is the very object ``previous`` was made from (the
    encoder's, built once per sentence) is taken from ``previous``, not renormalised again."""
    before = previous.source.sets if previous is not None and previous.source is not None else {}
    sets, keys = {}, {}
    for kind, d in frame.sets.items():
        if before.get(kind) is d:
            sets[kind], keys[kind] = previous.sets[kind], previous.keys[kind]
        else:
            sets[kind] = content_data(d)
            keys[kind] = tuple(int(i) for i in np.flatnonzero(~sink_keys(d.key_labels)))
    return ContentFrame(sets, frame.predicted, frame.ablated, frame.ablation, frame, keys)
