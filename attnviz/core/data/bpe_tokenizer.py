"""A byte-level BPE tokenizer (GPT-2's, which BART and mBART's English models use): ``vocab.json``
(piece -> id) and ``merges.txt`` (the merge rules, most frequent first), read without ``transformers``.

Text is split into words by GPT-2's pattern, each word's UTF-8 bytes are written as printable
characters (``byte_characters``: a space is ``Ġ``), and the merge rules join them into pieces from
the rank-0 rule up. Every byte has a piece, so no character is unknown. ``BPETokenizer`` is a
``tokenizer.TokenizerLike``; its bytes are a JSON document (``BPETokenizer.FORMAT``), which
``hf_tokenizer.tokenizer_from_bytes`` reads back.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from attnviz.core.data.pieces import SP_WORD_START
from attnviz.core.data.tokenizer import TokenizerError, check_text
from attnviz.core.data.vocab_lookup import VocabLookup


@cache
def byte_characters() -> dict[int, str]:
    """GPT-2's printable character of each byte: printable Latin-1 bytes stand for themselves, the others for 256 + n."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out, extra = {}, 0
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


@cache
def _word_pattern() -> re.Pattern[str]:
    """GPT-2's word pattern with ``\\p{L}`` and ``\\p{N}`` spelled as character classes (built once)."""
    letters, numbers = [], []
    for code in range(sys.maxunicode + 1):
        kind = unicodedata.category(chr(code))[0]
        if kind in "LN":
            (letters if kind == "L" else numbers).append(code)
    ell, num = _ranges(letters), _ranges(numbers)
    return re.compile(rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{ell}]+| ?[{num}]+| ?[^\s{ell}{num}]+|\s+(?!\S)|\s+")


def _ranges(codes: list[int]) -> str:
    """A character class body of sorted code points (runs as ``a-b``)."""
    parts, start = [], codes[0]
    for prev, code in zip(codes, codes[1:] + [-1]):
        if code != prev + 1:
            parts.append(re.escape(chr(start)) + ("" if prev == start else "-" + re.escape(chr(prev))))
            start = code
    return "".join(parts)


class BPETokenizer(VocabLookup):
    """Text <-> ids <-> pieces for one side of a model with a byte-level BPE vocabulary.

    ``prefix`` ids start every encoded sentence (BART's ``<s>``); ``append_eos`` ends it with EOS (a source side)."""

    FORMAT = "attnviz-bpe-tokenizer"
    FORMAT_VERSION = 1

    def __init__(
        self, vocab: Mapping[str, int], merges: Sequence[str], *, pad_id: int, unk_id: int, bos_id: int, eos_id: int,
        prefix: Sequence[int] = (), append_eos: bool = False,
    ):
        if not isinstance(vocab, Mapping) or sorted(vocab.values()) != list(range(len(vocab))):
            raise TokenizerError("the vocabulary must map pieces to the ids 0..n-1, each once")
        self.vocab = dict(vocab)
        self._by_id = sorted(self.vocab, key=self.vocab.__getitem__)
        self.merges = [m for m in merges if m.strip()]
        self._ranks = {}
        for rank, line in enumerate(self.merges):
            pair = tuple(line.split())
            if len(pair) != 2:
                raise TokenizerError(f"merge rule {rank + 1} is not two pieces: {line[:40]!r}")
            self._ranks.setdefault(pair, rank)
        self.keep_special_ids(pad_id, unk_id, bos_id, eos_id, also=(("prefix", p) for p in prefix))
        self.prefix, self.append_eos = [int(p) for p in prefix], bool(append_eos)
        self.special_labels = {pad_id: "PAD", unk_id: "UNK", bos_id: "SOS", eos_id: "EOS"}  # EOS wins where the decoder starts from it (BART)
        self.sp = _PieceSplitter(self)  # what source_map aligns with the text
        self._cache: dict[str, list[str]] = {}

    # -- storage --------------------------------------------------------------------------------
    def fields(self) -> dict[str, Any]:
        return {"vocab": self._by_id, "merges": self.merges, "special_ids": self.stored_ids(), "prefix": self.prefix, "append_eos": self.append_eos}

    @classmethod
    def from_fields(cls, doc: dict) -> BPETokenizer:
        ids = doc["special_ids"]
        vocab = {piece: i for i, piece in enumerate(doc["vocab"])}
        return cls(vocab, list(doc["merges"]), **cls.ids_stored(ids), prefix=list(doc["prefix"]), append_eos=doc["append_eos"] is True)

    # -- use ------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Ids of ``text``: the prefix, its pieces (UNK for a piece the vocabulary lacks), then EOS on a source side."""
        ids = [self.vocab.get(p, self.unk_id) for p in self.split(text)]
        return self.prefix + ids + ([self.eos_id] if self.append_eos else [])

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; PAD, SOS, EOS and the prefix are dropped."""
        dropped = {self.pad_id, self.bos_id, self.eos_id, *self.prefix}
        chars = "".join(self._by_id[int(i)] for i in ids if int(i) not in dropped and 0 <= int(i) < self.vocab_size)
        back = {c: b for b, c in byte_characters().items()}
        return bytes(back[c] for c in chars if c in back).decode("utf-8", errors="replace")

    def split(self, text: str) -> list[str]:
        """The BPE pieces of ``text`` (``TokenizerError`` for text that is not valid Unicode)."""
        check_text(text)
        chars = byte_characters()
        out: list[str] = []
        for word in _word_pattern().findall(text):
            out += self._merged("".join(chars[b] for b in word.encode("utf-8")))
        return out

    def _merged(self, word: str) -> list[str]:
        """``word`` (byte characters) joined by the merge rules, lowest rank first."""
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        parts = list(word)
        while len(parts) > 1:
            ranked = [(self._ranks.get(pair, len(self._ranks)), i) for i, pair in enumerate(zip(parts, parts[1:]))]
            rank, _ = min(ranked)
            if rank == len(self._ranks):
                break
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and self._ranks.get((parts[i], parts[i + 1])) == rank:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        if len(self._cache) < 100_000:
            self._cache[word] = parts
        return parts


class _PieceSplitter:
    """``encode(text, out_type=str)``: the pieces of a ``BPETokenizer`` as the text they spell
    (a leading space as ``▁``), so that ``source_map`` can place each on the typed characters."""

    def __init__(self, tokenizer: BPETokenizer):
        self.tokenizer = tokenizer

    def encode(self, text: str, out_type: type = str) -> list[str]:
        back = {c: b for b, c in byte_characters().items()}
        out = []
        for piece in self.tokenizer.split(text):
            spelled = bytes(back[c] for c in piece if c in back).decode("utf-8", errors="replace")
            out.append(SP_WORD_START + spelled[1:] if spelled.startswith(" ") else spelled)
        return out
