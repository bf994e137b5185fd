"""How a subword piece is shown on screen, in one place for every view, list and export.

Sentencepiece marks the start of a word with ``▁`` (U+2581, "lower one eighth block"). Drawn as
it is, that glyph sits on the baseline and reads as an underscore ("_like"), so the app shows it
as :data:`WORD_START` ("␣", the visible-space sign) and explains it once with
:data:`WORD_START_LEGEND`. A view about words can group the pieces of one word with
:func:`word_spans`.
"""

from __future__ import annotations

from collections.abc import Sequence

SP_WORD_START = "\u2581"  # what sentencepiece writes at the start of a word
WORD_START = "\u2423"  # what the app shows for it: ␣, never mistaken for "_"
WORD_START_LEGEND = "\u2423 = start of a word"


def display_piece(piece: str) -> str:
    """``piece`` as the app shows it: the word-start mark kept and visible (as ``␣``), nothing
    else changed; a piece that is only the mark reads as the mark."""
    return piece.replace(SP_WORD_START, WORD_START)


def display_pieces(pieces: Sequence[str]) -> tuple[str, ...]:
    return tuple(display_piece(p) for p in pieces)


def starts_word(piece: str) -> bool:
    """True for a piece that opens a word (in sentencepiece's form or as the app shows it)."""
    return piece.startswith((SP_WORD_START, WORD_START))


def word_spans(pieces: Sequence[str]) -> list[tuple[int, int]]:
    """``[start, stop)`` of every word made of two or more pieces: a word opens at a piece with the
    word-start mark and runs on over the pieces without one. Single pieces, special tokens
    (``SOS``, ``EOS``, ``<…>``) and pieces of text without word marks (Chinese) make no span."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, piece in enumerate(list(pieces) + [SP_WORD_START]):  # a sentinel closes the last word
        special = i < len(pieces) and (piece in ("SOS", "EOS", "PAD", "UNK") or piece.startswith("<"))
        if special or starts_word(piece):
            if start is not None and i - start >= 2:
                spans.append((start, i))
            start = None if special else i
    return spans
