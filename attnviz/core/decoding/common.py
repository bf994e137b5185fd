"""What a ``DecodingSession`` and a teacher-forced pass share: the source as the encoder sees
it (``PreparedSource``, ``prepare_source``), the per-step results (``Beam``, ``DecodeStep``),
the attention kinds, and small helpers (top-k lists, entropy, device, per-row traces). No Qt."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.model.trace import _BATCHLESS, Trace
from attnviz.core.model.transformer import Transformer

KINDS = ("encoder", "decoder", "cross")
_ATTN = {"encoder": "encoder.layers.{}.self_attn", "decoder": "decoder.layers.{}.self_attn", "cross": "decoder.layers.{}.cross_attn"}


# -- results ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Beam:
    """One hypothesis of a beam search (greedy and sampling have one)."""

    token_ids: tuple[int, ...]  # SOS first; ends with EOS when finished
    pieces: tuple[str, ...]  # labels of token_ids (SOS/EOS/UNK by name)
    score: float  # ranking score: log_prob / length penalty (= log_prob for greedy/sampling)
    finished: bool  # ended with EOS
    log_prob: float = float("nan")  # sum of log-probabilities of the generated tokens


@dataclass(frozen=True)
class DecodeStep:
    """One decoding step: the token it appended and everything about how it was chosen."""

    index: int  # 0-based: this step fed tgt_ids[index] and appended tgt_ids[index + 1]
    token_id: int
    piece: str  # label of token_id (SOS/EOS/PAD/UNK by name)
    topk: tuple[tuple[str, int, float], ...]  # (piece, id, probability), most likely first
    entropy: float  # of the model's next-token distribution, in nats
    forced: bool  # chosen by the user (force), not by the strategy
    is_eos: bool
    beams: tuple[Beam, ...]  # the beams after this step, best first (greedy/sampling: one)
    trace: Trace  # decoder names only; query length 1, keys = positions 0..index
    prob: float = float("nan")  # probability the model gave token_id


@dataclass(frozen=True)
class PreparedSource:
    """A source sentence as the encoder sees it."""

    text: str
    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    notices: tuple[str, ...]


def prepare_source(tokenizer: Tokenizer, text: str, max_len: int) -> PreparedSource:
    """Tokenize ``text`` for the encoder (no SOS/EOS, as in training): an empty source is a
    ``DecodingError``; a longer one than ``max_len`` is truncated; unknown characters become UNK.
    Each of the last two adds a one-line notice."""
    if not isinstance(text, str) or not text.strip():
        raise DecodingError("the source sentence is empty")
    text = text.strip()
    ids = tokenizer.encode(text)
    if not ids:
        raise DecodingError("the source sentence has no tokens")
    notices = []
    unknown = tokenizer.unknown_characters(text)
    if unknown:
        notices.append(f"unknown character(s) {' '.join(unknown)} shown as UNK")
    if len(ids) > max_len:
        notices.append(f"source truncated to the model's maximum length: {max_len} of {len(ids)} tokens kept")
        ids = ids[:max_len]
    return PreparedSource(text, tuple(ids), tuple(tokenizer.pieces(ids)), tuple(notices))


def _topk(probs: torch.Tensor, k: int, tokenizer: Tokenizer) -> tuple[tuple[str, int, float], ...]:
    k = min(k, probs.numel())
    if k <= 0:
        return ()
    vals, idx = torch.topk(probs, k)
    return tuple((tokenizer.piece(int(i)), int(i), float(v)) for v, i in zip(vals, idx))


def _entropy(logits: torch.Tensor) -> float:
    p = torch.softmax(logits.double(), -1)
    return float(torch.special.entr(p).sum())


def _model_device(model: Transformer) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def _row_trace(trace: Trace, row: int) -> Trace:
    """One batch element of a trace recorded with ``batch_index=None``."""
    return Trace((k, trace[k] if _BATCHLESS.search(k) else trace[k][row]) for k in trace)


def _check_model(model: Transformer) -> None:
    if model.training:
        raise DecodingError("the model is in training mode (dropout would change every step); call model.eval() first")


class SourceView:
    """``src_ids`` and ``src_pieces`` of an object whose ``source`` is a ``PreparedSource``."""

    @property
    def src_ids(self) -> tuple[int, ...]:
        return self.source.ids

    @property
    def src_pieces(self) -> tuple[str, ...]:
        return self.source.pieces
