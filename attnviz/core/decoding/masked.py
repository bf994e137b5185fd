"""An encoder-only model's masked-token prediction (BERT): one pass of the encoder over a sentence in
which the user typed ``[MASK]`` where a token is hidden, and the top-k tokens the masked-token head
gives at each of those positions (``masked_prediction``, ``MaskedPrediction``, ``MaskedPosition``).

A ``MaskedPrediction`` is a ``DecodingResult`` with no decoder rows: it answers the encoder's
questions (``attention("encoder", i)``, ``accumulated`` of any encoder name) the way a decoding
session does, so every view of the encoder reads it unchanged. No Qt."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.decoding.result import (
    DecodingResult,
    PreparedSource,
    TopK,
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

MASK_PIECE = "[MASK]"  # what the user types where a token is hidden


@dataclass(frozen=True)
class MaskedPosition:
    """One ``[MASK]`` of the sentence and what the model puts there."""

    index: int  # its position in the encoder's tokens ([CLS] is 0)
    topk: TopK  # (piece, id, probability), most likely first
    entropy: float  # of the distribution at this position, in nats


@dataclass(frozen=True)
class MaskedPrediction(DecodingResult):
    """One masked-token pass: the encoder's trace and the top-k at every ``[MASK]``; no decoder rows."""

    source: PreparedSource  # [CLS] ... [SEP], as the encoder reads it
    positions: tuple[MaskedPosition, ...]  # one per [MASK], in order
    trace: Trace  # the pass's encoder and masked-token-head names
    notices: tuple[str, ...]
    config: TransformerConfig
    input_ids: tuple[int, ...] = ()
    input_pieces: tuple[str, ...] = ()
    output_ids: tuple[int, ...] = ()
    output_pieces: tuple[str, ...] = ()
    steps: tuple = ()

    def accumulated(self, name: str) -> np.ndarray:
        return self.trace[name]

    def filled(self) -> str:
        """The sentence with every ``[MASK]`` replaced by its most likely token (pieces joined by spaces)."""
        best = {p.index: p.topk[0][0] for p in self.positions if p.topk}
        return " ".join(best.get(i, piece) for i, piece in enumerate(self.source.pieces))


def masked_prediction(
    model: Transformer,
    tokenizer: Tokenizer,
    text: str,
    top_k: int = 10,
    names: Iterable[str] | None = None,
    interventions: Iterable[Change] = (),
) -> MaskedPrediction:
    """Run ``model`` (encoder-only) once over ``text`` (``tokenizer.encode``: ``[CLS] ... [SEP]``) and
    give the ``top_k`` tokens at every ``[MASK]`` (softmax of the masked-token head's logits). A
    sentence without ``[MASK]`` is no error: it has no positions (the encoder's trace is there)."""
    cfg = model.config
    if cfg.kind != "encoder-only":
        raise DecodingError(f"masked-token prediction needs an encoder-only model (BERT), not a {cfg.kind} one")
    src = prepare_source(tokenizer, text, cfg)
    mask_id = getattr(tokenizer, "mask_id", None)
    logits, trace = traced_pass(model, src.ids, None, names, interventions, "for this sentence")
    probs = torch.softmax(logits.double().cpu(), -1)  # [L, V]
    positions = tuple(
        MaskedPosition(i, topk_list(probs[i], top_k, tokenizer), float(torch.special.entr(probs[i]).sum()))
        for i, t in enumerate(src.ids) if mask_id is not None and t == mask_id
    )
    return MaskedPrediction(src, positions, trace, src.notices, cfg)


def masked_prediction_from_bundle(bundle: Bundle, text: str, **kw) -> MaskedPrediction:
    return masked_prediction(bundle.model, bundle.src_tokenizer, text, **kw)
