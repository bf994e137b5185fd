"""A tokenizer whose sentencepiece pieces map to ids through a separate vocabulary: Marian's
(``source.spm``/``target.spm`` and one shared ``vocab.json`` piece -> id map).

``VocabTokenizer`` has the public face of ``tokenizer.Tokenizer`` (``encode``, ``encode_pieces``,
``decode``, ``piece``, ``pieces``, ``piece_to_id``, ``unknown_characters``, ``vocab_size``, the
special ids, ``to_bytes``/``save``), with the special ids the model's config gives instead of
fixed ones. A source-side tokenizer ends every sentence with EOS, as Marian's encoder was trained.
Its bytes are a JSON document (``FORMAT``); ``tokenizer_from_bytes`` reads either kind from a bundle.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attnviz.core.data.bpe_tokenizer import FORMAT as BPE_FORMAT
from attnviz.core.data.bpe_tokenizer import BPETokenizer
from attnviz.core.data.fairseq_tokenizer import FORMAT as FAIRSEQ_FORMAT
from attnviz.core.data.fairseq_tokenizer import FairseqTokenizer
from attnviz.core.data.tokenizer import Tokenizer, TokenizerError, load_sentencepiece, unreadable_text
from attnviz.core.data.vocab_lookup import VocabLookup
from attnviz.core.data.wordpiece_tokenizer import FORMAT as WORDPIECE_FORMAT
from attnviz.core.data.wordpiece_tokenizer import WordPieceTokenizer

FORMAT = "attnviz-vocab-tokenizer"
FORMAT_VERSION = 1
_LANGUAGE_CODE = (">>", "<<")  # a leading ">>xx<<" picks a target language in multilingual Marian models


class VocabTokenizer(VocabLookup):
    """Text <-> ids <-> pieces for one side of a model with a piece -> id vocabulary."""

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
        for name, value in (("pad_id", pad_id), ("unk_id", unk_id), ("bos_id", bos_id), ("eos_id", eos_id)):
            if not isinstance(value, int) or not 0 <= value < len(self._by_id):
                raise TokenizerError(f"{name} {value!r} is outside the vocabulary (size {len(self._by_id)})")
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = pad_id, unk_id, bos_id, eos_id
        self.append_eos = bool(append_eos)
        # labels as the UI shows them; the decoder's start token is SOS even where it is PAD (Marian)
        self.special_labels = {pad_id: "PAD", unk_id: "UNK", eos_id: "EOS", bos_id: "SOS"}

    # -- storage --------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        doc = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "sentencepiece": base64.b64encode(self._proto).decode("ascii"),
            "vocab": self._by_id,
            "special_ids": {"pad": self.pad_id, "unk": self.unk_id, "bos": self.bos_id, "eos": self.eos_id},
            "append_eos": self.append_eos,
        }
        return json.dumps(doc, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> VocabTokenizer:
        try:
            doc = json.loads(data.decode("utf-8"))
            if doc.get("format") != FORMAT or doc.get("format_version") != FORMAT_VERSION:
                raise TokenizerError(f"not an {FORMAT} version {FORMAT_VERSION} file")
            ids = doc["special_ids"]
            vocab = {piece: i for i, piece in enumerate(doc["vocab"])}
            proto = base64.b64decode(doc["sentencepiece"], validate=True)
            return cls(proto, vocab, pad_id=ids["pad"], unk_id=ids["unk"], bos_id=ids["bos"], eos_id=ids["eos"], append_eos=doc["append_eos"] is True)
        except TokenizerError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise TokenizerError(f"not a readable {FORMAT} file ({type(exc).__name__})") from None

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_bytes(self.to_bytes())

    # -- use ------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self._by_id)

    def special_ids(self) -> dict[str, int]:
        """The ids of PAD, UNK, SOS and EOS, under the config's field names."""
        return {"pad_id": self.pad_id, "unk_id": self.unk_id, "bos_id": self.bos_id, "eos_id": self.eos_id}

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` (then EOS on the source side); pieces missing from the vocabulary become UNK.
        ``TokenizerError`` for text that is not valid Unicode (see ``unreadable_text``)."""
        ids = [self.vocab.get(p, self.unk_id) for p in self._split(text)]
        return ids + [self.eos_id] if self.append_eos else ids

    def encode_pieces(self, text: str) -> list[str]:
        return self.pieces(self.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; PAD/SOS/EOS are dropped, UNK shows as ``⁇``."""
        dropped = (self.pad_id, self.bos_id, self.eos_id)
        pieces = [self._by_id[int(i)] for i in ids if int(i) not in dropped and 0 <= int(i) < self.vocab_size]
        return self.sp.decode_pieces(pieces)

    def _split(self, text: str) -> list[str]:
        """Sentencepiece pieces of ``text``; a leading language code ``>>xx<<`` stays one piece."""
        problem = unreadable_text(text)
        if problem:
            raise TokenizerError(problem)
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


_FORMATS = {BPETokenizer: BPE_FORMAT, WordPieceTokenizer: WORDPIECE_FORMAT, FairseqTokenizer: FAIRSEQ_FORMAT}  # the JSON documents' "format", by class


def tokenizer_from_bytes(data: bytes) -> Tokenizer | VocabTokenizer | BPETokenizer | WordPieceTokenizer | FairseqTokenizer:
    """A bundle's tokenizer file content: a sentencepiece model (``Tokenizer``), a ``BPETokenizer``,
    ``WordPieceTokenizer`` or ``FairseqTokenizer`` document or a ``VocabTokenizer`` document (JSON, told apart by the ``format`` their first bytes
    name); ``TokenizerError`` for anything else."""
    if data.lstrip()[:1] != b"{":
        return Tokenizer(data)
    kind = next((k for k, name in _FORMATS.items() if f'"format": "{name}"'.encode() in data[:64]), None)
    if kind is None:
        return VocabTokenizer.from_bytes(data)
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise TokenizerError(f"not a readable {_FORMATS[kind]} file ({type(exc).__name__})") from None
    return kind.from_doc(doc)


def load_tokenizer(path: str | os.PathLike) -> Tokenizer | VocabTokenizer | BPETokenizer | WordPieceTokenizer | FairseqTokenizer:
    """``tokenizer_from_bytes`` of a file; its ``TokenizerError`` reads ``NAME: problem``."""
    try:
        return tokenizer_from_bytes(Path(path).read_bytes())
    except TokenizerError as exc:
        raise TokenizerError(f"{Path(path).name}: {exc}") from None
