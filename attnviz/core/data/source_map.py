"""How the characters of a typed sentence map to the pieces the model's tokenizer makes of them.

UNK is decided by the tokenizer the model uses, never character by character: a word-level
tokenizer knows "3" and "1" but not "31", so "3141592" is one UNK while "3 1 4 1 5 9 2" is
seven known pieces. A run of unknown characters that sentencepiece merges into one UNK is one
``MappedPiece`` whose ``text`` holds every character it covers.

``map_source(tokenizer, text)`` works with either tokenizer class (``Tokenizer``,
``VocabTokenizer``): the ids and the UNK count come from ``tokenizer.encode`` (what the encoder
reads); the characters each piece covers come from aligning the sentencepiece pieces with the text.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from attnviz.core.data.pieces import SP_WORD_START, display_piece


@dataclass(frozen=True)
class MappedPiece:
    """One token of the source: the characters ``text[start:end]`` it covers ('' when the
    alignment could not place it), its id and label, and whether it is UNK."""

    piece: str  # the tokenizer's label (SOS/EOS/UNK by name)
    token_id: int
    start: int
    end: int
    text: str  # the characters it covers, as typed
    unknown: bool


@dataclass(frozen=True)
class SourceMap:
    """A sentence as the model's source tokenizer reads it."""

    text: str
    pieces: tuple[MappedPiece, ...]

    @property
    def n_tokens(self) -> int:
        return len(self.pieces)

    @property
    def n_unknown(self) -> int:
        return sum(p.unknown for p in self.pieces)

    @property
    def unk_share(self) -> float:
        """UNK tokens / tokens (0 for no tokens)."""
        return self.n_unknown / self.n_tokens if self.pieces else 0.0

    @property
    def unknown_char_share(self) -> float:
        """Characters (spaces not counted) inside UNK tokens / all characters."""
        total = sum(not ch.isspace() for ch in self.text)
        covered = sum(not ch.isspace() for p in self.pieces if p.unknown for ch in p.text)
        return covered / total if total else 0.0

    @property
    def mostly_unknown(self) -> bool:
        """Most of the input is unknown to the model (by tokens or by characters)."""
        return bool(self.pieces) and max(self.unk_share, self.unknown_char_share) > 0.5

    def unknown_runs(self) -> tuple[str, ...]:
        """The typed text of each UNK token (a merged run of characters stays one entry)."""
        return tuple(p.text.strip() for p in self.pieces if p.unknown and p.text.strip())

    def describe(self) -> str:
        """One line per token: "猫 → ▁猫", "3141592 → UNK", "U+1F600×2 x → UNK" (``shown_text``)."""
        return "\n".join(f"{shown_text(p.text.strip()) or '(a space)'} → {display_piece(p.piece)}" for p in self.pieces)


def unknown_parts(tokenizer, text: str) -> list[str]:
    """The parts of ``text`` the model reads as UNK, each as a message shows it (``shown_text``),
    once each: a run that the tokenizer merges into one UNK is one part ("3141592" on a
    word-level model); the count of UNK tokens when they cannot be placed on the text."""
    smap = map_source(tokenizer, text)
    parts = list(dict.fromkeys(shown_text(run) for run in smap.unknown_runs()))
    if smap.n_unknown and not parts:
        parts = [f"({smap.n_unknown} token{'s' if smap.n_unknown > 1 else ''})"]
    return parts


def char_label(ch: str) -> str:
    """A character as a message shows it: letters, digits, punctuation, math and currency signs as
    themselves; other symbols (emoji), marks, control and unassigned characters, and anything outside
    the Basic Multilingual Plane by their code point ("U+1F600")."""
    cat = unicodedata.category(ch)
    if (cat[0] in "LNP" or cat in ("Sm", "Sc", "Sk")) and ord(ch) <= 0xFFFF:
        return ch
    return f"U+{ord(ch):04X}"


def shown_text(text: str, renderable=lambda ch: False) -> str:
    """``text`` as a message shows it. Characters ``char_label`` would not show as themselves become
    their code point, a repeated one counted ("猫😀😀" → "猫 U+1F600×2"); where the font has a glyph
    for them (``renderable(ch)``) they stay, and their code points follow once ("猫😀😀 (U+1F600)")."""
    plain = [ch.isspace() or char_label(ch) == ch for ch in text]
    if all(plain):
        return text
    if all(renderable(ch) for ch, ok in zip(text, plain) if not ok):
        codes = dict.fromkeys(f"U+{ord(ch):04X}" for ch, ok in zip(text, plain) if not ok)
        return f"{text} ({' '.join(codes)})"
    segments: list[str] = []  # runs of plain characters, and code points (a repeated one counted)
    previous_code = None
    for ch, ok in zip(text, plain):
        code = None if ok else f"U+{ord(ch):04X}"
        if code is None and previous_code is None and segments:
            segments[-1] += ch
        elif code is not None and code == previous_code:
            head, _, count = segments[-1].partition("×")
            segments[-1] = f"{head}×{int(count or 1) + 1}"
        else:
            segments.append(code or ch)
        previous_code = code
    return " ".join(" ".join(segments).split())


def map_source(tokenizer, text: str) -> SourceMap:
    """Tokenize ``text`` (stripped, as the encoder reads it) and place each token on its characters.
    ``TokenizerError`` for text that is not valid Unicode."""
    text = text.strip()
    if not text:
        return SourceMap(text, ())
    specials = (tokenizer.bos_id, tokenizer.eos_id, tokenizer.pad_id)
    ids = [i for i in tokenizer.encode(text) if i not in specials]
    sp_pieces = list(tokenizer.sp.encode(text, out_type=str))
    spans = _align(text, sp_pieces) if len(sp_pieces) == len(ids) else None
    if spans is None:  # the tokenizer splits differently (a language code): no character spans
        spans = [(0, 0)] * len(ids)
    out = []
    for token_id, (start, end) in zip(ids, spans):
        out.append(MappedPiece(tokenizer.piece(token_id), int(token_id), start, end, text[start:end], token_id == tokenizer.unk_id))
    return SourceMap(text, tuple(out))


def _align(text: str, pieces: list[str]) -> list[tuple[int, int]] | None:
    """The ``(start, end)`` of ``text`` each piece covers, or None when the pieces do not spell
    the text (a normalising tokenizer changed it beyond NFKC)."""
    spans, i = [], 0
    for piece in pieces:
        start = None
        for ch in piece.replace(SP_WORD_START, " "):
            if ch == " ":
                while i < len(text) and text[i].isspace():
                    i += 1
                continue
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text) or (text[i] != ch and unicodedata.normalize("NFKC", text[i])[:1] != ch):
                return None
            if start is None:
                start = i
            if unicodedata.normalize("NFKC", text[i])[-1:] == ch or text[i] == ch:
                i += 1
        spans.append((start if start is not None else i, i))
    return spans
