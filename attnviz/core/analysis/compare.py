"""Word order and positional encoding: two sources through the same encoder, side by side.

Without PE the encoder sees a bag of tokens: self-attention and the FFN treat every position
alike, so a reordered sentence (猫吃鱼。 / 鱼吃猫。) gives exactly the reordered C_encoder and
the reordered attention (``P·C`` and ``P·A·Pᵀ`` for the permutation ``P`` that matches the
tokens). With PE the same token at another position is a different vector. No Qt.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np
import torch

from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.decoding.result import model_device, prepare_source
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.model.sites import attention_sites
from attnviz.core.model.trace import Recorder
from attnviz.core.model.transformer import Transformer


def swap_ends(text: str) -> str:
    """``text`` with its first and last word swapped (characters, for text without spaces);
    final punctuation stays where it is: 猫吃鱼。 → 鱼吃猫。, "cats eat fish." → "fish eat cats."."""
    body = text.strip()
    end = len(body)
    while end > 0 and unicodedata.category(body[end - 1]).startswith("P"):
        end -= 1
    body, tail = body[:end], body[end:]
    words = body.split()
    if len(words) > 1:
        words[0], words[-1] = words[-1], words[0]
        return " ".join(words) + tail
    if len(body) > 1:
        return body[-1] + body[1:-1] + body[0] + tail
    return body + tail


@dataclass(frozen=True)
class EncodedSource:
    """One source through the encoder."""

    text: str
    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    output: np.ndarray  # [L, d]  C_encoder
    weights: np.ndarray  # [layer, head, L, L]  encoder self-attention


def encode_source(model: Transformer, tokenizer: Tokenizer, text: str, positional: bool = True) -> EncodedSource:
    """``text`` through ``model``'s encoder, with or without positional encoding."""
    src = prepare_source(tokenizer, text, model.config)
    sites = attention_sites(model.config, "encoder")
    rec = Recorder(["encoder.output", *(s.name("weights") for s in sites)])
    with torch.inference_mode():
        model.encode(torch.tensor([src.ids], device=model_device(model)), rec, positional=positional)
    trace = rec.trace()
    weights = np.stack([trace[s.name("weights")] for s in sites]) if sites else np.zeros((0, 0, len(src.ids), len(src.ids)), np.float32)
    return EncodedSource(src.text, src.ids, src.pieces, np.asarray(trace["encoder.output"], np.float32), weights.astype(np.float32))


def match_tokens(a: tuple[int, ...], b: tuple[int, ...]) -> np.ndarray:
    """For each token of ``a``, the position in ``b`` of the same token id (the k-th occurrence
    matches the k-th), or -1 when ``b`` has no such token left.  # [len(a)]"""
    unused: dict[int, list[int]] = {}
    for j, t in enumerate(b):
        unused.setdefault(t, []).append(j)
    return np.array([unused[t].pop(0) if unused.get(t) else -1 for t in a], dtype=np.int64)


@dataclass(frozen=True)
class SourceComparison:
    """Sources A and B through the same encoder, and where their tokens meet.

    ``match[i]``: the token of B that is A's token ``i`` (-1: none). ``difference``:
    C_A − C_B at the matched tokens (NaN rows where none), ``attention_difference``: A's weights
    minus B's with B's rows and columns put in A's order (NaN where a token is unmatched).
    """

    a: EncodedSource
    b: EncodedSource
    positional: bool
    match: np.ndarray  # [La]
    difference: np.ndarray  # [La, d]
    cosine: np.ndarray  # [La]  cos(C_A[i], C_B[match[i]]); NaN where unmatched
    attention_difference: np.ndarray  # [layer, head, La, La]

    @property
    def is_permutation(self) -> bool:
        """B holds exactly A's tokens, in some order."""
        return len(self.a.ids) == len(self.b.ids) and bool(np.all(self.match >= 0))

    @property
    def max_deviation(self) -> float:
        """max |C_A − C_B| over the matched tokens (NaN when no token matches)."""
        d = self.difference[np.all(np.isfinite(self.difference), axis=1)]
        return float(np.abs(d).max()) if d.size else float("nan")


def compare_sources(a: EncodedSource, b: EncodedSource, positional: bool) -> SourceComparison:
    """Match B's tokens to A's and take the differences of their encoder outputs and attention."""
    match = match_tokens(a.ids, b.ids)
    ok = match >= 0
    idx = np.where(ok, match, 0)
    diff = a.output - b.output[idx]
    diff[~ok] = np.nan
    na = np.linalg.norm(a.output, axis=1)
    nb = np.linalg.norm(b.output[idx], axis=1)
    cos = np.sum(a.output * b.output[idx], axis=1) / np.maximum(na * nb, 1e-12)
    cos[~ok] = np.nan
    wb = b.weights[:, :, idx][:, :, :, idx]  # B's attention in A's order  [layer, head, La, La]
    att = a.weights - wb
    both = ok[:, None] & ok[None, :]
    att[:, :, ~both] = np.nan
    return SourceComparison(a, b, positional, match, diff.astype(np.float32), cos.astype(np.float32), att.astype(np.float32))


def compare_texts(model: Transformer, tokenizer: Tokenizer, text_a: str, text_b: str, positional: bool = True) -> SourceComparison:
    """Both texts through ``model``'s encoder (with or without PE), compared token by token."""
    return compare_sources(
        encode_source(model, tokenizer, text_a, positional), encode_source(model, tokenizer, text_b, positional), positional
    )


@dataclass(frozen=True)
class CompareFrame:
    """What the compare view draws: source A, the comparison of A and B with the PE setting
    chosen, the same pair with PE switched the other way (its numbers make the point), or the
    one-line reason the pair cannot be compared."""

    source: str
    result: SourceComparison | None
    contrast: SourceComparison | None = None
    error: str | None = None
    translations: dict[tuple[str, bool], str] | None = None  # (A or B, with PE) -> greedy translation


def compare_both(model: Transformer, tokenizer: Tokenizer, text_a: str, text_b: str, positional: bool,
                 tgt_tokenizer: Tokenizer | None = None) -> CompareFrame:
    """:func:`compare_texts` with PE as chosen and switched the other way (four encoder passes);
    with ``tgt_tokenizer``, also both sentences' greedy translations with and without PE."""
    try:
        translations = None if tgt_tokenizer is None else translations_with_and_without_pe(model, tokenizer, tgt_tokenizer, text_a, text_b)
        return CompareFrame(text_a, compare_texts(model, tokenizer, text_a, text_b, positional),
                            compare_texts(model, tokenizer, text_a, text_b, not positional), translations=translations)
    except DecodingError as exc:
        return CompareFrame(text_a, None, None, str(exc))


def translations_with_and_without_pe(model: Transformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                                     text_a: str, text_b: str) -> dict[tuple[str, bool], str]:
    """The greedy translation of A and of B with the encoder's positional encoding and without it
    (``NoPositional``): word order all the way to the output. Without PE the encoder's outputs are
    a permutation of each other and cross-attention sums over them in any order, so A and B of the
    same tokens get the same translation."""
    from attnviz.core.decoding.session import DecodingSession, forced_first_of
    from attnviz.core.model.interventions import NoPositional

    out = {}
    for label, text in (("A", text_a), ("B", text_b)):
        for pe in (True, False):
            run = DecodingSession(model, src_tokenizer, tgt_tokenizer, text, capture=False, interventions=() if pe else (NoPositional(),),
                                  forced_first_token=forced_first_of(tgt_tokenizer))
            run.run()
            out[(label, pe)] = run.translation()
    return out
