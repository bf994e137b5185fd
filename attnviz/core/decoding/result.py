"""What every decoding result answers, stepped (``DecodingSession``) or teacher-forced
(``TeacherForced``): the ``DecodingResult`` base class and the ``StepRecord`` protocol of its
per-row records, plus what both need before and after the model runs (``PreparedSource``,
``prepare_source``, ``topk_list``, ``entropy_nats``, ``model_device``, ``check_eval_mode``,
``traced_pass``). No Qt.

These live here, not in ``session``, because ``teacher_forcing`` needs them and a teacher-forced
pass is no decoding session: neither of the two result modules imports the other.

Rows. A result has one row per token fed to the decoder: ``input_ids[i]`` (SOS first) is fed at
row ``i``, ``output_ids[i]`` is what row ``i`` produced (the decoded token, or with teacher
forcing the target), and ``steps[i]`` is the row's ``StepRecord``. Every decoder matrix has these
rows as its query axis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch

from attnviz.core.data.tokenizer import Tokenizer, unreadable_text
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.model.interventions import checked
from attnviz.core.model.sites import AttentionSite, n_layers
from attnviz.core.model.trace import Change, Trace

if TYPE_CHECKING:
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.transformer import Transformer

TopK = tuple[tuple[str, int, float], ...]  # (piece, id, probability), most likely first


@dataclass(frozen=True)
class PreparedSource:
    """A source sentence as the encoder sees it."""

    text: str
    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    notices: tuple[str, ...]


class StepRecord(Protocol):
    """What one row of a result records (``DecodeStep``, ``ForcedPosition``)."""

    @property
    def index(self) -> int: ...  # the row
    @property
    def token_id(self) -> int: ...  # the token the row produced (decoded, or the target)
    @property
    def piece(self) -> str: ...  # its label
    @property
    def prob(self) -> float: ...  # the probability the model gave it
    @property
    def entropy(self) -> float: ...  # of the row's next-token distribution, in nats
    @property
    def topk(self) -> TopK: ...
    @property
    def forced(self) -> bool: ...  # not chosen by the model (forced by the user, or the target)


class DecodingResult:
    """The questions a stepped or a teacher-forced result both answer.

    A subclass provides ``config``, ``source``, ``input_ids``/``input_pieces``,
    ``output_ids``/``output_pieces``, ``steps`` (one ``StepRecord`` per row), ``notices`` and
    ``accumulated(name)``: any trace name over all rows, with the shape a full pass over the fed
    tokens gives. The attention accessors are written here once on top of ``accumulated``."""

    config: TransformerConfig
    source: PreparedSource
    input_ids: tuple[int, ...]
    input_pieces: tuple[str, ...]
    output_ids: tuple[int, ...]
    output_pieces: tuple[str, ...]
    steps: Sequence[StepRecord]
    notices: Sequence[str]

    def accumulated(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def accumulated_stack(self, names: Sequence[str]) -> np.ndarray:
        """``[len(names), ...]``: ``accumulated`` of each of ``names`` (arrays of one shape), stacked."""
        return np.stack([self.accumulated(n) for n in names])

    def frozen(self) -> DecodingResult:
        """This result as it stands now, safe to read from another thread while the app goes
        on (a stepped session answers with a :class:`FrozenDecoding` snapshot; a teacher-forced
        pass is frozen already)."""
        return self

    @property
    def src_ids(self) -> tuple[int, ...]:
        return self.source.ids

    @property
    def src_pieces(self) -> tuple[str, ...]:
        return self.source.pieces

    def n_layers(self, kind: str) -> int:
        """How many layers of ``kind`` attention the model has (``ValueError`` for an unknown kind)."""
        return n_layers(self.config, kind)

    def attention(self, kind: str, layer: int) -> np.ndarray:
        """Attention weights of one layer, ``[head, query, key]``: ``encoder`` ``[head, src, src]``,
        ``decoder`` ``[head, rows, rows]`` (lower-triangular), ``cross`` ``[head, rows, src]``."""
        count = self.n_layers(kind)
        if not 0 <= layer < count:
            raise IndexError(f"{kind} layer {layer} does not exist (the model has {count})")
        if kind != "encoder" and not self.steps:
            keys = 0 if kind == "decoder" else len(self.src_ids)
            return np.zeros((self.config.n_heads, 0, keys), np.float32)
        return self.accumulated(AttentionSite(kind, layer).name("weights"))

    def all_attention(self, kind: str) -> np.ndarray:
        """``attention(kind, i)`` for every layer: ``[layer, head, query, key]``."""
        count = self.n_layers(kind)
        if not count:
            return np.zeros((0, self.config.n_heads, 0, 0), np.float32)
        if kind != "encoder" and not self.steps:
            return np.stack([self.attention(kind, i) for i in range(count)])
        return self.accumulated_stack([AttentionSite(kind, i).name("weights") for i in range(count)])


def prepare_source(tokenizer: Tokenizer, text: str, config: TransformerConfig, reserved: int = 0) -> PreparedSource:
    """Tokenize ``text`` for the encoder (no SOS/EOS, as in training): an empty source is a
    ``DecodingError``; a longer one than the model's ``max_len`` (less ``reserved`` positions: a
    decoder-only model's SOS before its prompt) is truncated; unknown characters become UNK. Each
    of the last two adds a one-line notice (the first says where the limit comes from)."""
    if not isinstance(text, str) or not text.strip():
        raise DecodingError("the source sentence is empty")
    problem = unreadable_text(text)
    if problem:
        raise DecodingError(f"the source sentence cannot be read: {problem}")
    text = text.strip()
    ids = tokenizer.encode(text)
    if not ids:
        raise DecodingError("the source sentence has no tokens")
    notices = []
    unknown = tokenizer.unknown_characters(text)
    if unknown:
        notices.append(f"unknown character(s) {' '.join(unknown)} shown as UNK")
    keep = config.max_len - reserved
    if len(ids) > keep:
        sos = " (SOS takes a position)" if reserved else ""
        notices.append(f"source truncated to {keep} of {len(ids)} tokens{sos}: {config.length_limit()}")
        ids = ids[:keep]
    return PreparedSource(text, tuple(ids), tuple(tokenizer.pieces(ids)), tuple(notices))


def check_finite(logits: torch.Tensor, where: str) -> None:
    """``DecodingError`` when ``logits`` hold NaN or infinity (finite weights so large that a
    forward pass overflows); ``where`` says which pass, e.g. ``"at step 3"``."""
    if not bool(torch.isfinite(logits).all()):
        raise DecodingError(
            f"the model's scores {where} are NaN or infinite (its weights overflow): this model cannot translate; retrain it or open another"
        )


def checked_interventions(interventions: Iterable[Change], config: TransformerConfig) -> tuple[Change, ...]:
    """``interventions`` checked against the model (``interventions.checked``); a problem is a ``DecodingError``."""
    try:
        return checked(interventions, config)
    except ValueError as exc:
        raise DecodingError(str(exc)) from None


def topk_list(probs: torch.Tensor, k: int, tokenizer: Tokenizer) -> TopK:
    """The ``k`` most likely entries of ``probs`` ``[vocab]`` as (piece, id, probability)."""
    k = min(k, probs.numel())
    if k <= 0:
        return ()
    vals, idx = torch.topk(probs, k)
    return tuple((tokenizer.piece(int(i)), int(i), float(v)) for v, i in zip(vals, idx))


def entropy_nats(logits: torch.Tensor) -> float:
    """Entropy of ``softmax(logits)`` ``[vocab]``, in nats (float64)."""
    p = torch.softmax(logits.double(), -1)
    return float(torch.special.entr(p).sum())


def model_device(model: Transformer) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def check_eval_mode(model: Transformer) -> None:
    """``DecodingError`` for a model that cannot decode now: in training mode, or encoder-only (no decoder)."""
    if model.training:
        raise DecodingError("the model is in training mode (dropout would change every step); call model.eval() first")
    if model.config.kind == "encoder-only":
        raise DecodingError("an encoder-only model (BERT) has no decoder: it predicts masked tokens, it does not decode")


def traced_pass(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int] | None, names: Iterable[str] | None,
                interventions: Iterable[Change], where: str) -> tuple[torch.Tensor, Trace]:
    """One pass of ``model`` over ``src_ids`` and ``tgt_ids`` fed to the decoder (``None``: the
    encoder alone), with ``interventions`` (checked here) and a trace of ``names``: the logits of
    its one row ``[L, V]``, on the model's device, and the trace; ``where`` says which pass when
    the logits are not finite (``check_finite``)."""
    device = model_device(model)
    src = torch.tensor([list(src_ids)], device=device)
    tgt = None if tgt_ids is None else torch.tensor([list(tgt_ids)], device=device)
    with torch.inference_mode():
        logits, trace = model.run_with_trace(src, tgt, names=names, interventions=checked_interventions(interventions, model.config))
    check_finite(logits, where)
    return logits[0], trace
