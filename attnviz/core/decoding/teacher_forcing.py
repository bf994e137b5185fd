"""Teacher forcing of a typed target: one pass with ``SOS + y`` in and ``y + EOS`` expected
(``teacher_forced``, ``teacher_forced_from_bundle``), every position at once (``TeacherForced``,
``ForcedPosition``). A ``TeacherForced`` is a ``DecodingResult``: it answers the questions a
``DecodingSession`` does, with the typed target as the decoded tokens. No Qt."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.data.tokenizer import Tokenizer, unreadable_text
from attnviz.core.decoding.result import (
    DecodingResult,
    PreparedSource,
    TopK,
    check_eval_mode,
    entropy_nats,
    prepare_source,
    topk_list,
    traced_pass,
)
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.trace import Change, Trace
from attnviz.core.model.transformer import Transformer

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle


# -- teacher forcing ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ForcedPosition:
    """One target position of a teacher-forced pass: ``input`` fed, ``target`` expected."""

    index: int
    input_id: int  # SOS, y1, ..., yn
    input_piece: str
    token_id: int  # the target it should produce: y1, ..., yn, EOS
    piece: str
    predicted_id: int  # argmax of the distribution
    predicted_piece: str
    match: bool  # predicted_id == token_id
    prob: float  # P(target)
    loss: float  # -log P(target), nats
    entropy: float  # nats
    topk: TopK  # (piece, id, probability), most likely first

    @property
    def forced(self) -> bool:
        """As a ``StepRecord``: the row produced its target, which the user typed."""
        return True


@dataclass(frozen=True)
class TeacherForced(DecodingResult):
    """"SOS + y in, y + EOS out": one pass over a typed target, every position at once."""

    source: PreparedSource
    target: str
    input_ids: tuple[int, ...]  # SOS + y
    input_pieces: tuple[str, ...]
    output_ids: tuple[int, ...]  # y + EOS
    output_pieces: tuple[str, ...]
    steps: tuple[ForcedPosition, ...]
    trace: Trace  # the full pass (encoder and decoder names); query axis = positions
    notices: tuple[str, ...]
    config: TransformerConfig

    @property
    def loss(self) -> float:
        """Mean per-token loss (nats)."""
        return float(np.mean([p.loss for p in self.steps]))

    @property
    def accuracy(self) -> float:
        return float(np.mean([p.match for p in self.steps]))

    @property
    def predicted_ids(self) -> tuple[int, ...]:
        return tuple(p.predicted_id for p in self.steps)

    def accumulated(self, name: str) -> np.ndarray:
        return self.trace[name]


def teacher_forced(
    model: Transformer,
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    source: str,
    target: str,
    top_k: int = 10,
    names: Iterable[str] | None = None,
    interventions: Iterable[Change] = (),
) -> TeacherForced:
    """Run the model once on ``source`` with the typed ``target`` (teacher forcing). An empty
    target is allowed (SOS in, EOS out). A target longer than ``max_len - 1`` tokens is
    truncated, unknown target characters become UNK; each with a notice. ``interventions``
    (``model/interventions.py``) change the pass where they act."""
    check_eval_mode(model)
    cfg = model.config
    src = prepare_source(src_tokenizer, source, cfg)
    target = (target or "").strip()
    problem = unreadable_text(target)
    if problem:
        raise DecodingError(f"the target sentence cannot be read: {problem}")
    y = tgt_tokenizer.encode(target) if target else []
    notices = list(src.notices)
    unknown = tgt_tokenizer.unknown_characters(target) if target else []
    if unknown:
        notices.append(f"unknown target character(s) {' '.join(unknown)} shown as UNK")
    if cfg.kind == "decoder-only":  # the prompt is the decoder's prefix: its rows come first, as in a session
        y = [*src.ids, *y]
    if len(y) + 1 > cfg.max_len:
        notices.append(f"target truncated to {cfg.max_len - 1} of {len(y)} tokens (SOS takes a position): {cfg.length_limit()}")
        y = y[: cfg.max_len - 1]
    inputs = (cfg.bos_id, *y)
    labels = (*y, cfg.eos_id)
    logits, trace = traced_pass(model, src.ids, inputs, names, interventions, "for this target")
    logits = logits.float().cpu()  # [Lt, V]
    probs = torch.softmax(logits, -1)
    logp = torch.log_softmax(logits.double(), -1)
    tok = tgt_tokenizer
    positions = []
    for i, (inp, lab) in enumerate(zip(inputs, labels)):
        pred = int(torch.argmax(logits[i]))
        positions.append(
            ForcedPosition(
                index=i,
                input_id=inp,
                input_piece=tok.piece(inp),
                token_id=lab,
                piece=tok.piece(lab),
                predicted_id=pred,
                predicted_piece=tok.piece(pred),
                match=pred == lab,
                prob=float(probs[i, lab]),
                loss=float(-logp[i, lab]),
                entropy=entropy_nats(logits[i]),
                topk=topk_list(probs[i], top_k, tok),
            )
        )
    return TeacherForced(src, target, inputs, tuple(tok.pieces(inputs)), labels, tuple(tok.pieces(labels)), tuple(positions), trace, tuple(notices), cfg)


def log_prob_of(
    model: Transformer, src_ids: Sequence[int], output_ids: Sequence[int], interventions: Iterable[Change] = (), names: Iterable[str] = ()
) -> tuple[float, Trace]:
    """log P(output_ids | source) = the sum over positions of log softmax(logits)[target] of one
    teacher-forced pass (SOS + output_ids[:-1] in), with ``interventions``; and that pass's trace of ``names``."""
    check_eval_mode(model)
    cfg = model.config
    if not output_ids:
        raise DecodingError("no target tokens to score")
    logits, trace = traced_pass(model, src_ids, (cfg.bos_id, *output_ids[:-1]), tuple(names), interventions, "for this target")
    logp = torch.log_softmax(logits.double(), -1)  # [Lt, V]
    return float(logp[torch.arange(len(output_ids)), torch.tensor(list(output_ids))].sum()), trace


def teacher_forced_from_bundle(bundle: "Bundle", source: str, target: str, **kw) -> TeacherForced:
    return teacher_forced(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, source, target, **kw)
