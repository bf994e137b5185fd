"""Looking pieces up in a vocabulary held as a table: what the tokenizers read from a Hugging Face
folder's vocabulary file (sentencepiece with ``vocab.json``, byte-level BPE, WordPiece) share."""

from __future__ import annotations

from attnviz.core.data.source_map import unknown_parts
from attnviz.core.data.tokenizer import DocumentTokenizer


class VocabLookup(DocumentTokenizer):
    """Pieces by id and ids by piece for a tokenizer that holds ``vocab`` (piece → id) and ``_by_id``
    (id → piece); its document stores the special ids as ``special_ids`` (``pad``, ``unk``, ``bos``, ``eos``)."""

    vocab: dict[str, int]
    _by_id: list[str]

    @property
    def vocab_size(self) -> int:
        return len(self._by_id)

    def vocab_piece(self, token_id: int) -> str:
        return self._by_id[token_id]

    def vocab_id(self, piece: str) -> int:
        return self.vocab.get(piece, self.unk_id)

    def unknown_characters(self, text: str) -> list[str]:
        """The parts of ``text`` read as UNK, to tell the user (see ``unknown_parts``)."""
        return unknown_parts(self, text)

    def stored_ids(self) -> dict[str, int]:
        """The special ids as the document stores them."""
        return {"pad": self.pad_id, "unk": self.unk_id, "bos": self.bos_id, "eos": self.eos_id}

    @staticmethod
    def ids_stored(ids: dict) -> dict[str, int]:
        """The special ids a document stores (``ids``, its ``special_ids``) as the constructor takes them."""
        return {"pad_id": ids["pad"], "unk_id": ids["unk"], "bos_id": ids["bos"], "eos_id": ids["eos"]}
