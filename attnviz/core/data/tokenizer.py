"""A thin wrapper over sentencepiece with the ids the model and the UI share.

Fixed ids: PAD 0, UNK 1, SOS (BOS) 2, EOS 3. Normalization is ``identity`` so Chinese
full-width punctuation round-trips and pieces show as written; ``add_dummy_prefix`` is off
for languages written without spaces (Chinese).

``TokenizerLike`` is what the app asks of any tokenizer, this one or one read from a Hugging Face
folder (``hf_tokenizer``, ``bpe_tokenizer``, ``wordpiece_tokenizer``, ``fairseq_tokenizer``);
``TokenizerBase`` and ``DocumentTokenizer`` hold what their classes share.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import random
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import sentencepiece as spm

from attnviz.core.data.source_map import unknown_parts
from attnviz.errors import AttnvizError

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIAL_LABELS = {PAD_ID: "PAD", UNK_ID: "UNK", BOS_ID: "SOS", EOS_ID: "EOS"}
SAMPLE_SEED = "tokenizer-sample"  # the random draw of ``sample_texts``


def sample_texts(texts: Iterable[str], n: int) -> list[str]:
    """``n`` of ``texts`` drawn at random (reservoir sampling, seeded: the same texts give the same
    sample), all of them when there are fewer; ``texts`` is read once."""
    rng = random.Random(SAMPLE_SEED)
    kept: list[str] = []
    for seen, text in enumerate(texts):
        if seen < n:
            kept.append(text)
        elif (slot := rng.randrange(seen + 1)) < n:
            kept[slot] = text
    return kept


class TokenizerError(AttnvizError, ValueError):
    """A tokenizer file that cannot be used (one-line message)."""


def unreadable_text(text: str) -> str | None:
    """Why ``text`` cannot be tokenized, in a few words (it holds lone surrogates: bytes that were
    not UTF-8, read with ``surrogateescape``), or ``None`` when it can."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"the text is not valid Unicode at character {exc.start + 1} (invalid UTF-8 or a lone surrogate)"
    return None


def check_text(text: str) -> None:
    """``TokenizerError`` for text that cannot be tokenized (see ``unreadable_text``)."""
    problem = unreadable_text(text)
    if problem:
        raise TokenizerError(problem)


def load_sentencepiece(model_proto: bytes) -> spm.SentencePieceProcessor:
    """A sentencepiece processor for a serialized model (``TokenizerError`` in one line if it is none)."""
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(model_proto)
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError with long texts
        raise TokenizerError(f"not a sentencepiece model ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    return sp


class TokenizerLike(Protocol):
    """What the app asks of a tokenizer, whichever kind it is: ``Tokenizer`` (sentencepiece with
    fixed ids), ``hf_tokenizer.VocabTokenizer``, ``bpe_tokenizer.BPETokenizer``,
    ``wordpiece_tokenizer.WordPieceTokenizer`` or ``fairseq_tokenizer.FairseqTokenizer``
    (``hf_tokenizer.tokenizer_from_bytes`` reads any of them back from ``to_bytes``)."""

    pad_id: int
    unk_id: int
    bos_id: int
    eos_id: int

    @property
    def vocab_size(self) -> int: ...

    def special_ids(self) -> dict[str, int]: ...

    def encode(self, text: str) -> list[int]: ...

    def encode_pieces(self, text: str) -> list[str]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def piece(self, token_id: int) -> str: ...

    def pieces(self, ids: Sequence[int]) -> list[str]: ...

    def piece_to_id(self, piece: str) -> int: ...

    def unknown_characters(self, text: str) -> list[str]: ...

    def to_bytes(self) -> bytes: ...

    def save(self, path: str | os.PathLike) -> None: ...


def check_ids(size: int, named: Iterable[tuple[str, Any]]) -> None:
    """``TokenizerError`` for the first (name, id) of ``named`` whose id is no id of a vocabulary of ``size``."""
    for name, value in named:
        if not isinstance(value, int) or not 0 <= value < size:
            raise TokenizerError(f"{name} {value!r} is outside the vocabulary (size {size})")


@contextmanager
def about_file(path: str | os.PathLike) -> Iterator[None]:
    """Re-raise a ``TokenizerError`` as ``NAME: problem``, ``NAME`` the name of the file at ``path``."""
    try:
        yield
    except TokenizerError as exc:
        raise TokenizerError(f"{Path(path).name}: {exc}") from None


class TokenizerBase:
    """What every tokenizer class shares: the labels of the special tokens (``special_labels``, id ->
    SOS/EOS/PAD/UNK as the UI names them), the special ids, looking pieces up and ``save``. A subclass
    gives ``vocab_size``, ``vocab_piece``/``vocab_id`` (its other pieces) and ``to_bytes``."""

    pad_id: int
    unk_id: int
    bos_id: int
    eos_id: int
    special_labels: dict[int, str]

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    def vocab_piece(self, token_id: int) -> str:
        """The piece of an id of the vocabulary that is no special token."""
        raise NotImplementedError

    def vocab_id(self, piece: str) -> int:
        """The id of a piece that is no special token's label (UNK for an unknown piece)."""
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        raise NotImplementedError

    def keep_special_ids(self, pad_id: int, unk_id: int, bos_id: int, eos_id: int, also: Iterable[tuple[str, Any]] = ()) -> None:
        """Keep the special ids; ``TokenizerError`` for one, or one of ``also`` (name, id), outside the vocabulary."""
        check_ids(self.vocab_size, (("pad_id", pad_id), ("unk_id", unk_id), ("bos_id", bos_id), ("eos_id", eos_id), *also))
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = pad_id, unk_id, bos_id, eos_id

    def special_ids(self) -> dict[str, int]:
        """The ids of PAD, UNK, SOS and EOS, under the config's field names."""
        return {"pad_id": self.pad_id, "unk_id": self.unk_id, "bos_id": self.bos_id, "eos_id": self.eos_id}

    def piece(self, token_id: int) -> str:
        """A token's label as the UI shows it: SOS/EOS/PAD/UNK by name, otherwise its piece."""
        token_id = int(token_id)
        if token_id in self.special_labels:
            return self.special_labels[token_id]
        if not 0 <= token_id < self.vocab_size:
            raise TokenizerError(f"token id {token_id} is outside the vocabulary (size {self.vocab_size})")
        return self.vocab_piece(token_id)

    def pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.piece(i) for i in ids]

    def piece_to_id(self, piece: str) -> int:
        """Id of a piece (or of SOS/EOS/PAD/UNK by name); UNK for an unknown piece."""
        for token_id, label in self.special_labels.items():
            if piece == label:
                return token_id
        return self.vocab_id(piece)

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_bytes(self.to_bytes())


D = TypeVar("D", bound="DocumentTokenizer")  # the class a ``DocumentTokenizer`` class method is called on


class DocumentTokenizer(TokenizerBase):
    """A tokenizer whose bytes are a JSON document naming its ``FORMAT`` (every kind but ``Tokenizer``):
    ``to_bytes`` writes its ``fields``, ``from_bytes``/``from_doc`` read them back through ``from_fields``;
    ``encode_pieces`` are the labels of what ``encode`` gives."""

    FORMAT: ClassVar[str]
    FORMAT_VERSION: ClassVar[int]

    def fields(self) -> dict[str, Any]:
        """The document's content after its format and version."""
        raise NotImplementedError

    @classmethod
    def from_fields(cls: type[D], doc: dict) -> D:
        """The tokenizer of a document of this format (``KeyError``, ``TypeError``... for a malformed one)."""
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        doc = {"format": self.FORMAT, "format_version": self.FORMAT_VERSION, **self.fields()}
        return json.dumps(doc, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_bytes(cls: type[D], data: bytes) -> D:
        """The tokenizer of a ``FORMAT`` file's content; ``TokenizerError`` for anything else."""
        try:
            doc = json.loads(data.decode("utf-8"))
        except ValueError as exc:
            raise TokenizerError(f"not a readable {cls.FORMAT} file ({type(exc).__name__})") from None
        return cls.from_doc(doc)

    @classmethod
    def from_doc(cls: type[D], doc: dict) -> D:
        """The tokenizer of a parsed ``FORMAT`` document; ``TokenizerError`` for anything else."""
        try:
            if doc.get("format") != cls.FORMAT or doc.get("format_version") != cls.FORMAT_VERSION:
                raise TokenizerError(f"not an {cls.FORMAT} version {cls.FORMAT_VERSION} file")
            return cls.from_fields(doc)
        except TokenizerError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise TokenizerError(f"not a readable {cls.FORMAT} file ({type(exc).__name__})") from None

    def encode_pieces(self, text: str) -> list[str]:
        return self.pieces(self.encode(text))


class Tokenizer(TokenizerBase):
    """Text <-> ids <-> pieces for one language."""

    def __init__(self, model_proto: bytes):
        self._proto = bytes(model_proto)
        self.sp = load_sentencepiece(self._proto)
        ids = (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise TokenizerError(f"special ids are {ids}, expected PAD 0, UNK 1, SOS 2, EOS 3")

    # -- construction -----------------------------------------------------------
    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        vocab_size: int = 2000,
        model_type: str = "unigram",
        add_dummy_prefix: bool = True,
        character_coverage: float = 1.0,
        input_sentence_size: int = 0,
    ) -> "Tokenizer":
        """Train a sentencepiece model on ``sentences`` (``model_type``: ``unigram`` or ``bpe``).
        ``sentences`` is read once, as an iterator: with ``input_sentence_size`` N > 0 the model is
        trained on a random sample of N of them and the text is never held whole; 0 takes them all.
        The sample is drawn here (``sample_texts``, seeded): sentencepiece's own sampling
        (``input_sentence_size`` with ``shuffle_input_sentence``) draws a new sample in every
        process even after ``set_random_generator_seed``, and processes training together must
        train the same tokenizer."""
        if model_type not in ("unigram", "bpe", "char", "word"):
            raise TokenizerError(f"unknown tokenizer type {model_type!r}")
        texts: Iterator[str] = (s for s in sentences if s.strip())
        if input_sentence_size > 0:
            texts = iter(sample_texts(texts, input_sentence_size))
        first = next(texts, None)
        if first is None:
            raise TokenizerError("cannot train a tokenizer on no text")
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=itertools.chain([first], texts),
            model_writer=buf,
            vocab_size=vocab_size,
            model_type=model_type,
            pad_id=PAD_ID,
            unk_id=UNK_ID,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            normalization_rule_name="identity",
            add_dummy_prefix=add_dummy_prefix,
            character_coverage=character_coverage,
            hard_vocab_limit=False,
            minloglevel=2,
            num_threads=1,
        )
        return cls(buf.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tokenizer":
        try:
            data = Path(path).read_bytes()
        except PermissionError:
            raise TokenizerError(f"{Path(path).name}: permission denied (make it readable)") from None
        except OSError as exc:
            raise TokenizerError(f"{Path(path).name}: cannot be read ({exc.strerror or type(exc).__name__})") from None
        with about_file(path):
            return cls(data)

    def to_bytes(self) -> bytes:
        return self._proto

    # -- use ----------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    pad_id, unk_id, bos_id, eos_id = PAD_ID, UNK_ID, BOS_ID, EOS_ID  # the constructor checks the model's own are these
    special_labels = SPECIAL_LABELS

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` without SOS/EOS. Characters the model does not know become UNK (id 1).
        ``TokenizerError`` for text that is not valid Unicode (see ``unreadable_text``)."""
        check_text(text)
        return list(self.sp.encode(text, out_type=int))

    def encode_many(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode`` of each text, in one call to sentencepiece (on one thread)."""
        for text in texts:
            check_text(text)
        return self.sp.encode(list(texts), out_type=int, num_threads=1)

    def encode_pieces(self, text: str) -> list[str]:
        check_text(text)
        return list(self.sp.encode(text, out_type=str))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; PAD/SOS/EOS are dropped, UNK shows as ``⁇``."""
        return self.sp.decode([int(i) for i in ids if int(i) not in (PAD_ID, BOS_ID, EOS_ID)])

    def vocab_piece(self, token_id: int) -> str:
        return self.sp.id_to_piece(token_id)

    def vocab_id(self, piece: str) -> int:
        return int(self.sp.piece_to_id(piece))

    def unknown_characters(self, text: str) -> list[str]:
        """The parts of ``text`` read as UNK, to tell the user (see ``unknown_parts``)."""
        check_text(text)
        return unknown_parts(self, text)
