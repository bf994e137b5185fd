"""How a subword piece is shown on screen, in one place for every view, list and export.

Sentencepiece marks the start of a word with ``▁`` (U+2581). Every view shows that mark the same
way, as :data:`WORD_START`, and explains it once with :data:`WORD_START_LEGEND`.
"""

from __future__ import annotations

SP_WORD_START = "\u2581"  # what sentencepiece writes at the start of a word
WORD_START = "\u2581"  # what the app shows for it
WORD_START_LEGEND = "\u2581 = start of a word"


def display_piece(piece: str) -> str:
    """``piece`` as the app shows it: the word-start mark kept and visible, nothing else changed;
    a piece that is only the mark reads as the mark."""
    return piece.replace(SP_WORD_START, WORD_START)


def starts_word(piece: str) -> bool:
    return piece.startswith(SP_WORD_START)
