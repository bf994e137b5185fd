"""Teacher forcing of a typed target: one pass with ``SOS + y`` in and ``y + EOS`` expected
(``teacher_forced``, ``teacher_forced_from_bundle``), every position at once (``TeacherForced``,
``ForcedPosition``). No Qt."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, Tokenizer
from attnviz.core.decoding.common import _ATTN, KINDS, PreparedSource, SourceView, _check_model, _entropy, _model_device, _topk, prepare_source
from attnviz.core.model.trace import Trace
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
    target_id: int  # y1, ..., yn, EOS
    target_piece: str
    predicted_id: int  # argmax of the distribution
    predicted_piece: str
    match: bool  # predicted_id == target_id
    target_prob: float  # P(target)
    loss: float  # -log P(target), nats
    entropy: float  # nats
    topk: tuple[tuple[str, int, float], ...]  # (piece, id, probability), most likely first


@dataclass(frozen=True)
class TeacherForced(SourceView):
    """"SOS + y in, y + EOS out": one pass over a typed target, every position at once."""

    source: PreparedSource
    target: str
    input_ids: tuple[int, ...]  # SOS + y
    input_pieces: tuple[str, ...]
    label_ids: tuple[int, ...]  # y + EOS
    label_pieces: tuple[str, ...]
    positions: tuple[ForcedPosition, ...]
    trace: Trace  # the full pass (encoder and decoder names); query axis = positions
    notices: tuple[str, ...]

    @property
    def loss(self) -> float:
        """Mean per-token loss (nats)."""
        return float(np.mean([p.loss for p in self.positions]))

    @property
    def accuracy(self) -> float:
        return float(np.mean([p.match for p in self.positions]))

    @property
    def predicted_ids(self) -> tuple[int, ...]:
        return tuple(p.predicted_id for p in self.positions)

    def attention(self, kind: str, layer: int) -> np.ndarray:
        """``[head, query, key]`` as ``DecodingSession.attention`` (queries = the fed tokens)."""
        if kind not in KINDS:
            raise ValueError(f"attention kind must be one of {KINDS}, not {kind!r}")
        return self.trace[_ATTN[kind].format(layer) + ".weights"]

    def all_attention(self, kind: str) -> np.ndarray:
        """``[layer, head, query, key]``."""
        out = []
        while _ATTN[kind].format(len(out)) + ".weights" in self.trace:
            out.append(self.attention(kind, len(out)))
        return np.stack(out)

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
) -> TeacherForced:
    """Run the model once on ``source`` with the typed ``target`` (teacher forcing). An empty
    target is allowed (SOS in, EOS out). A target longer than ``max_len - 1`` tokens is
    truncated, unknown target characters become UNK; each with a notice."""
    _check_model(model)
    cfg = model.config
    src = prepare_source(src_tokenizer, source, cfg.max_len)
    target = (target or "").strip()
    y = tgt_tokenizer.encode(target) if target else []
    notices = list(src.notices)
    unknown = tgt_tokenizer.unknown_characters(target) if target else []
    if unknown:
        notices.append(f"unknown target character(s) {' '.join(unknown)} shown as UNK")
    if len(y) + 1 > cfg.max_len:
        notices.append(f"target truncated to the model's maximum length: {cfg.max_len - 1} of {len(y)} tokens kept")
        y = y[: cfg.max_len - 1]
    inputs = (BOS_ID, *y)
    labels = (*y, EOS_ID)
    device = _model_device(model)
    with torch.inference_mode():
        logits, trace = model.run_with_trace(
            torch.tensor([src.ids], device=device), torch.tensor([inputs], device=device), names=names
        )
        logits = logits[0].float().cpu()  # [Lt, V]
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
                target_id=lab,
                target_piece=tok.piece(lab),
                predicted_id=pred,
                predicted_piece=tok.piece(pred),
                match=pred == lab,
                target_prob=float(probs[i, lab]),
                loss=float(-logp[i, lab]),
                entropy=_entropy(logits[i]),
                topk=_topk(probs[i], top_k, tok),
            )
        )
    return TeacherForced(src, target, inputs, tuple(tok.pieces(inputs)), labels, tuple(tok.pieces(labels)), tuple(positions), trace, tuple(notices))


def teacher_forced_from_bundle(bundle: "Bundle", source: str, target: str, **kw) -> TeacherForced:
    return teacher_forced(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, source, target, **kw)
