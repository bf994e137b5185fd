"""A WordPiece tokenizer (BERT's): ``vocab.txt`` (one piece a line, its line number its id), read
without ``transformers``.

Text is cleaned (control characters dropped, every space character a space), CJK characters are
set apart, it is lowercased and its accents stripped (``lowercase``), split on spaces and
punctuation, and each word is cut into the longest pieces of the vocabulary from its start
(continuations spelled ``##piece``); a word that cannot be cut is UNK. Special tokens typed as
they are (``[MASK]``) are kept whole. A sentence is ``[CLS] ... [SEP]``. ``WordPieceTokenizer``
is a ``tokenizer.TokenizerLike``; its bytes are a JSON document (``WordPieceTokenizer.FORMAT``)
that ``hf_tokenizer.tokenizer_from_bytes`` reads back.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from attnviz.core.data.pieces import SP_WORD_START
from attnviz.core.data.tokenizer import TokenizerError, check_text
from attnviz.core.data.vocab_lookup import VocabLookup

CONTINUATION = "##"  # a piece that continues a word
MAX_WORD = 100  # characters: a longer word is UNK (as BERT's tokenizer)
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
        (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or unicodedata.category(ch).startswith("P")


def _is_space(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _clean(text: str) -> str:
    """Control characters dropped, spaces made `` ``, CJK characters set apart by spaces."""
    out = []
    for ch in text:
        if ord(ch) in (0, 0xFFFD) or _is_control(ch):
            continue
        if any(lo <= ord(ch) <= hi for lo, hi in _CJK):
            out.append(f" {ch} ")
        else:
            out.append(" " if _is_space(ch) else ch)
    return "".join(out)


def basic_words(text: str, lowercase: bool = True) -> list[str]:
    """BERT's basic tokenization: cleaned, lowercased without accents, split on spaces and punctuation."""
    words = []
    for word in _clean(text).split():
        if lowercase:
            word = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")
        current = ""
        for ch in word:
            if _is_punctuation(ch):
                words += [current, ch] if current else [ch]
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


class WordPieceTokenizer(VocabLookup):
    """Text <-> ids <-> pieces for a model with a WordPiece vocabulary: ``[CLS]`` (``bos_id``) starts
    and ``[SEP]`` (``eos_id``) ends every sentence."""

    FORMAT = "attnviz-wordpiece-tokenizer"
    FORMAT_VERSION = 1

    def __init__(self, pieces: Sequence[str], *, pad_id: int, unk_id: int, bos_id: int, eos_id: int, lowercase: bool = True):
        self._by_id = list(pieces)
        self.vocab = {p: i for i, p in enumerate(self._by_id)}  # a piece listed twice: its last id (as BERT's tokenizer)
        self.keep_special_ids(pad_id, unk_id, bos_id, eos_id)
        self.lowercase = bool(lowercase)
        self.mask_id = self.vocab.get("[MASK]")  # the token a masked-token prediction fills in (None: the vocabulary has none)
        self.special_labels = {pad_id: "PAD", unk_id: "UNK", bos_id: "SOS", eos_id: "EOS"}
        specials = [p for p in SPECIALS if p in self.vocab]
        self._specials = re.compile("(" + "|".join(re.escape(p) for p in specials) + ")") if specials else None
        self.piece_of_unk = self._by_id[unk_id]  # "[UNK]": the piece of a word the vocabulary cannot spell
        self.sp = _PieceSplitter(self)  # what source_map aligns with the text

    # -- storage --------------------------------------------------------------------------------
    def fields(self) -> dict[str, Any]:
        return {"vocab": self._by_id, "lowercase": self.lowercase, "special_ids": self.stored_ids()}

    @classmethod
    def from_fields(cls, doc: dict) -> WordPieceTokenizer:
        ids, pieces = doc["special_ids"], doc["vocab"]
        if not isinstance(pieces, list) or not all(isinstance(p, str) for p in pieces):
            raise TokenizerError("the vocabulary must be a list of pieces")
        return cls(pieces, **cls.ids_stored(ids), lowercase=doc["lowercase"] is True)

    # -- use ------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """``[CLS]``, the ids of ``text``'s pieces (UNK for a word the vocabulary cannot spell), ``[SEP]``."""
        return [self.bos_id, *(self.vocab[p] if p in self.vocab else self.unk_id for p in self.split(text)), self.eos_id]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (PAD, CLS and SEP dropped; continuations joined to their word)."""
        dropped = {self.pad_id, self.bos_id, self.eos_id}
        words = [self._by_id[int(i)] for i in ids if int(i) not in dropped and 0 <= int(i) < self.vocab_size]
        return " ".join(words).replace(" " + CONTINUATION, "")

    def split(self, text: str) -> list[str]:
        """The WordPiece pieces of ``text`` ("[UNK]" for a word it cannot spell); special tokens typed whole stay whole."""
        return [piece for _, pieces in self.words(text) for piece in pieces]

    def words(self, text: str) -> list[tuple[str, list[str]]]:
        """Each word of ``text`` (as the basic tokenization leaves it) with its pieces (``TokenizerError`` for unreadable text)."""
        check_text(text)
        parts = self._specials.split(text) if self._specials is not None else [text]
        out: list[tuple[str, list[str]]] = []
        for i, part in enumerate(parts):
            if i % 2:  # a special token, as typed
                out.append((part, [part]))
                continue
            out += [(word, self._word_pieces(word)) for word in basic_words(part, self.lowercase)]
        return out

    def _word_pieces(self, word: str) -> list[str]:
        """``word`` cut greedily into the longest pieces of the vocabulary, or ``["[UNK]"]``."""
        if len(word) > MAX_WORD:
            return [self.piece_of_unk]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = (CONTINUATION if start else "") + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            if end == start:
                return [self.piece_of_unk]
            pieces.append(piece)
            start = end
        return pieces


class _PieceSplitter:
    """``encode(text, out_type=str)``: the pieces of a ``WordPieceTokenizer`` as the text they spell
    (a word's first piece marked ``▁``), so that ``source_map`` can place each on the typed characters."""

    def __init__(self, tokenizer: WordPieceTokenizer):
        self.tokenizer = tokenizer

    def encode(self, text: str, out_type: type = str) -> list[str]:
        out = []
        for word, pieces in self.tokenizer.words(text):
            unknown = pieces == [self.tokenizer.piece_of_unk]
            out += [SP_WORD_START + word] if unknown else [p[len(CONTINUATION):] if p.startswith(CONTINUATION) else SP_WORD_START + p for p in pieces]
        return out


def read_vocab_txt(data: bytes) -> list[str]:
    """The pieces of a ``vocab.txt`` (its line number is a piece's id); ``TokenizerError`` for an empty one."""
    pieces = data.decode("utf-8", errors="replace").split("\n")
    if pieces and not pieces[-1]:
        pieces.pop()  # the file's last newline
    if not pieces:
        raise TokenizerError("the vocabulary is empty")
    return [p.removesuffix("\r") for p in pieces]
