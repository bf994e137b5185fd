"""Looking pieces up in a vocabulary held as a table: what the tokenizers read from a Hugging Face
folder's vocabulary file (sentencepiece with ``vocab.json``, byte-level BPE, WordPiece) share."""

from __future__ import annotations

from collections.abc import Sequence

from attnviz.core.data.source_map import unknown_parts
from attnviz.core.data.tokenizer import TokenizerError


class VocabLookup:
    """Pieces by id and ids by piece for a tokenizer that holds ``vocab`` (piece → id), ``_by_id``
    (id → piece), ``special_labels`` (id → SOS/EOS/PAD/UNK as the UI names them), ``vocab_size``
    and ``unk_id``."""

    def piece(self, token_id: int) -> str:
        """A token's label as the UI shows it: SOS/EOS/PAD/UNK by name, otherwise its piece."""
        token_id = int(token_id)
        if token_id in self.special_labels:
            return self.special_labels[token_id]
        if not 0 <= token_id < self.vocab_size:
            raise TokenizerError(f"token id {token_id} is outside the vocabulary (size {self.vocab_size})")
        return self._by_id[token_id]

    def pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.piece(i) for i in ids]

    def piece_to_id(self, piece: str) -> int:
        """Id of a piece (or of SOS/EOS/PAD/UNK by name); UNK for an unknown piece."""
        for token_id, label in self.special_labels.items():
            if piece == label:
                return token_id
        return self.vocab.get(piece, self.unk_id)

    def unknown_characters(self, text: str) -> list[str]:
        """The parts of ``text`` read as UNK, to tell the user (see ``unknown_parts``)."""
        return unknown_parts(self, text)
