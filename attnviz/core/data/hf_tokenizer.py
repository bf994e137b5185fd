"""A tokenizer whose sentencepiece pieces map to ids through a separate vocabulary: Marian's
(``source.spm``/``target.spm`` and one shared ``vocab.json`` piece -> id map).

``VocabTokenizer`` is a ``tokenizer.TokenizerLike``, with the special ids the model's config gives
instead of fixed ones. A source-side tokenizer ends every sentence with EOS, as Marian's encoder was
trained. Its bytes are a JSON document (``VocabTokenizer.FORMAT``); ``tokenizer_from_bytes`` reads
any tokenizer's bytes back from a bundle.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attnviz.core.data.bpe_tokenizer import BPETokenizer
from attnviz.core.data.fairseq_tokenizer import FairseqTokenizer
from attnviz.core.data.tokenizer import Tokenizer, TokenizerError, TokenizerLike, about_file, check_text, load_sentencepiece
from attnviz.core.data.vocab_lookup import VocabLookup
from attnviz.core.data.wordpiece_tokenizer import WordPieceTokenizer

_LANGUAGE_CODE = (">>", "<<")  # a leading ">>xx<<" picks a target language in multilingual Marian models


class VocabTokenizer(VocabLookup):
    """Text <-> ids <-> pieces for one side of a model with a piece -> id vocabulary."""

    FORMAT = "attnviz-vocab-tokenizer"
    FORMAT_VERSION = 1

    def __init__(
        self,
        model_proto: bytes,
        vocab: Mapping[str, int],
        *,
        pad_id: int,
        unk_id: int,
        bos_id: int,
        eos_id: int,
        append_eos: bool = False,
    ):
        self._proto = bytes(model_proto)
        self.sp = load_sentencepiece(self._proto)
        self.vocab = _checked_vocab(vocab)
        self._by_id = sorted(self.vocab, key=self.vocab.__getitem__)  # id -> piece
        self.keep_special_ids(pad_id, unk_id, bos_id, eos_id)
        self.append_eos = bool(append_eos)
        # labels as the UI shows them; the decoder's start token is SOS even where it is PAD (Marian)
        self.special_labels = {pad_id: "PAD", unk_id: "UNK", eos_id: "EOS", bos_id: "SOS"}

    # -- storage --------------------------------------------------------------------------------
    def fields(self) -> dict[str, Any]:
        return {"sentencepiece": base64.b64encode(self._proto).decode("ascii"), "vocab": self._by_id, "special_ids": self.stored_ids(),
                "append_eos": self.append_eos}

    @classmethod
    def from_fields(cls, doc: dict) -> VocabTokenizer:
        ids = doc["special_ids"]
        vocab = {piece: i for i, piece in enumerate(doc["vocab"])}
        proto = base64.b64decode(doc["sentencepiece"], validate=True)
        return cls(proto, vocab, **cls.ids_stored(ids), append_eos=doc["append_eos"] is True)

    # -- use ------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` (then EOS on the source side); pieces missing from the vocabulary become UNK.
        ``TokenizerError`` for text that is not valid Unicode (see ``unreadable_text``)."""
        ids = [self.vocab.get(p, self.unk_id) for p in self._split(text)]
        return ids + [self.eos_id] if self.append_eos else ids

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; PAD/SOS/EOS are dropped, UNK shows as ``⁇``."""
        dropped = (self.pad_id, self.bos_id, self.eos_id)
        pieces = [self._by_id[int(i)] for i in ids if int(i) not in dropped and 0 <= int(i) < self.vocab_size]
        return self.sp.decode_pieces(pieces)

    def _split(self, text: str) -> list[str]:
        """Sentencepiece pieces of ``text``; a leading language code ``>>xx<<`` stays one piece."""
        check_text(text)
        start, end = _LANGUAGE_CODE
        if text.startswith(start) and end in text[len(start) :]:
            cut = text.index(end, len(start)) + len(end)
            return [text[:cut], *self.sp.encode(text[cut:], out_type=str)]
        return list(self.sp.encode(text, out_type=str))


def _checked_vocab(vocab: Any) -> dict[str, int]:
    """``vocab`` as piece -> id, ``TokenizerError`` unless its ids are exactly 0 .. n-1."""
    if not isinstance(vocab, Mapping) or not vocab:
        raise TokenizerError("the vocabulary must be a non-empty JSON object of piece -> id")
    if not all(isinstance(p, str) and isinstance(i, int) and not isinstance(i, bool) for p, i in vocab.items()):
        raise TokenizerError("the vocabulary must map pieces (strings) to ids (integers)")
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise TokenizerError(f"the vocabulary's ids must be 0..{len(vocab) - 1}, each once")
    return dict(vocab)


DOCUMENT_KINDS = (BPETokenizer, WordPieceTokenizer, FairseqTokenizer)  # told apart by the "format" a document names first


def tokenizer_from_bytes(data: bytes) -> TokenizerLike:
    """A bundle's tokenizer file content: a sentencepiece model (``Tokenizer``), a ``BPETokenizer``,
    ``WordPieceTokenizer`` or ``FairseqTokenizer`` document or a ``VocabTokenizer`` document (JSON, told apart by the ``format`` their first bytes
    name); ``TokenizerError`` for anything else."""
    if data.lstrip()[:1] != b"{":
        return Tokenizer(data)
    kind = next((k for k in DOCUMENT_KINDS if f'"format": "{k.FORMAT}"'.encode() in data[:64]), VocabTokenizer)
    return kind.from_bytes(data)


def load_tokenizer(path: str | os.PathLike) -> TokenizerLike:
    """``tokenizer_from_bytes`` of a file; its ``TokenizerError`` reads ``NAME: problem``."""
    with about_file(path):
        return tokenizer_from_bytes(Path(path).read_bytes())
