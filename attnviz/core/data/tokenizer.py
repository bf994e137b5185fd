"""A thin wrapper over sentencepiece with the ids the model and the UI share.

Fixed ids: PAD 0, UNK 1, SOS (BOS) 2, EOS 3. Normalization is ``identity`` so Chinese
full-width punctuation round-trips and pieces show as written; ``add_dummy_prefix`` is off
for languages written without spaces (Chinese).
"""

from __future__ import annotations

import io
import itertools
import os
import random
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

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


def load_sentencepiece(model_proto: bytes) -> spm.SentencePieceProcessor:
    """A sentencepiece processor for a serialized model (``TokenizerError`` in one line if it is none)."""
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(model_proto)
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError with long texts
        raise TokenizerError(f"not a sentencepiece model ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    return sp


class Tokenizer:
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
        try:
            return cls(data)
        except TokenizerError as exc:
            raise TokenizerError(f"{Path(path).name}: {exc}") from None

    def to_bytes(self) -> bytes:
        return self._proto

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_bytes(self._proto)

    # -- use ----------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    pad_id, unk_id, bos_id, eos_id = PAD_ID, UNK_ID, BOS_ID, EOS_ID

    def special_ids(self) -> dict[str, int]:
        """The ids the sentencepiece model gives PAD, UNK, SOS and EOS, under the config's field names."""
        return {"pad_id": self.sp.pad_id(), "unk_id": self.sp.unk_id(), "bos_id": self.sp.bos_id(), "eos_id": self.sp.eos_id()}

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` without SOS/EOS. Characters the model does not know become UNK (id 1).
        ``TokenizerError`` for text that is not valid Unicode (see ``unreadable_text``)."""
        self._check_text(text)
        return list(self.sp.encode(text, out_type=int))

    def encode_many(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode`` of each text, in one call to sentencepiece (on one thread)."""
        for text in texts:
            self._check_text(text)
        return self.sp.encode(list(texts), out_type=int, num_threads=1)

    def encode_pieces(self, text: str) -> list[str]:
        self._check_text(text)
        return list(self.sp.encode(text, out_type=str))

    @staticmethod
    def _check_text(text: str) -> None:
        problem = unreadable_text(text)
        if problem:
            raise TokenizerError(problem)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; PAD/SOS/EOS are dropped, UNK shows as ``⁇``."""
        return self.sp.decode([int(i) for i in ids if int(i) not in (PAD_ID, BOS_ID, EOS_ID)])

    def piece(self, token_id: int) -> str:
        """A token's label as the UI shows it: SOS/EOS/PAD/UNK by name, otherwise its piece."""
        token_id = int(token_id)
        if token_id in SPECIAL_LABELS:
            return SPECIAL_LABELS[token_id]
        if not 0 <= token_id < self.vocab_size:
            raise TokenizerError(f"token id {token_id} is outside the vocabulary (size {self.vocab_size})")
        return self.sp.id_to_piece(token_id)

    def pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.piece(i) for i in ids]

    def piece_to_id(self, piece: str) -> int:
        """Id of a piece (or of SOS/EOS/PAD/UNK by name); UNK for an unknown piece."""
        for token_id, label in SPECIAL_LABELS.items():
            if piece == label:
                return token_id
        return int(self.sp.piece_to_id(piece))

    def unknown_characters(self, text: str) -> list[str]:
        """The parts of ``text`` read as UNK, to tell the user (see ``unknown_parts``)."""
        self._check_text(text)
        return unknown_parts(self, text)
