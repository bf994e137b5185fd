"""mBART's tokenizer: a sentencepiece model (``sentencepiece.bpe.model``) read through fairseq's
dictionary, with a language code on every sentence.

Ids, as fairseq and ``transformers``' ``MBartTokenizer``/``MBart50Tokenizer`` give them: ``<s>`` 0,
``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3; sentencepiece piece ``i`` (from 3 on) is id ``i + 1``
(``FAIRSEQ_OFFSET``; sentencepiece's own ``<unk>`` is 3); then the language codes (``en_XX``,
``zh_CN``, ...) in ``LANGUAGE_CODES`` order, then ``<mask>``. A model of N pieces and C codes has
N + 2 + C ids; mBART-cc25 knows the first 25 codes, mBART-50 all 52.

Each side holds one language. A source is ``[code] pieces </s>`` (``LAYOUTS["mbart50"]``) or
``pieces </s> [code]`` (``"mbart"``, cc25 and its fine-tunings); a target is ``[code] pieces``
either way: the decoder starts from the config's start token (``</s>``) and its first generated
token is forced to the target's code (``forced_first_token``), as ``transformers``' translation
pipeline does with ``forced_bos_token_id``. ``FairseqTokenizer`` is a ``tokenizer.TokenizerLike``; its
bytes are a JSON document (``FairseqTokenizer.FORMAT``).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from attnviz.core.data.source_map import unknown_parts
from attnviz.core.data.tokenizer import DocumentTokenizer, TokenizerError, check_text, load_sentencepiece

FAIRSEQ_OFFSET = 1  # fairseq id = sentencepiece id + 1 (fairseq puts <s> <pad> </s> <unk> first)
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # ids 0..3
MASK = "<mask>"
LANGUAGE_CODES = (  # mBART-50's codes, in id order; mBART-cc25 has the first 25
    "ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI", "fr_XX", "gu_IN", "hi_IN", "it_IT", "ja_XX", "kk_KZ", "ko_KR",
    "lt_LT", "lv_LV", "my_MM", "ne_NP", "nl_XX", "ro_RO", "ru_RU", "si_LK", "tr_TR", "vi_VN", "zh_CN", "af_ZA", "az_AZ", "bn_IN",
    "fa_IR", "he_IL", "hr_HR", "id_ID", "ka_GE", "km_KH", "mk_MK", "ml_IN", "mn_MN", "mr_IN", "pl_PL", "ps_AF", "pt_XX", "sv_SE",
    "sw_KE", "ta_IN", "te_IN", "th_TH", "tl_XX", "uk_UA", "ur_PK", "xh_ZA", "gl_ES", "sl_SI",
)
LAYOUTS = ("mbart50", "mbart")  # the source's code first (MBart50Tokenizer) or last (MBartTokenizer)
SIDES = ("source", "target")


class FairseqTokenizer(DocumentTokenizer):
    """Text <-> ids <-> pieces for one side (``source`` or ``target``) of an mBART model, in one language."""

    FORMAT = "attnviz-fairseq-tokenizer"
    FORMAT_VERSION = 1

    def __init__(self, model_proto: bytes, *, n_codes: int, language: str, side: str, layout: str = "mbart50", bos_id: int = 2):
        self._proto = bytes(model_proto)
        self.sp = load_sentencepiece(self._proto)
        if self.sp.unk_id() != 0:
            raise TokenizerError(f"sentencepiece's <unk> has id {self.sp.unk_id()}; fairseq's layout needs 0")
        if not isinstance(n_codes, int) or not 0 < n_codes <= len(LANGUAGE_CODES):
            raise TokenizerError(f"{n_codes!r} language codes: mBART knows 1 to {len(LANGUAGE_CODES)}")
        if side not in SIDES or layout not in LAYOUTS:
            raise TokenizerError(f"side {side!r} / layout {layout!r}: expected one of {SIDES} / {LAYOUTS}")
        self.n_pieces = self.sp.get_piece_size()
        self.codes = LANGUAGE_CODES[:n_codes]
        self.side, self.layout = side, layout
        self.keep_special_ids(pad_id=1, unk_id=3, bos_id=bos_id, eos_id=2)
        self.language = self._checked_language(language)
        self.special_labels = {self.pad_id: "PAD", self.unk_id: "UNK", bos_id: "SOS", self.eos_id: "EOS"}  # EOS wins where the decoder starts from it

    def _checked_language(self, language: str) -> str:
        if language not in self.codes:
            raise TokenizerError(f"unknown language code {language!r}; this model knows {', '.join(self.codes)}")
        return language

    def with_language(self, language: str) -> FairseqTokenizer:
        """The same tokenizer for another language (``TokenizerError`` for a code the model lacks)."""
        self._checked_language(language)
        return FairseqTokenizer(self._proto, n_codes=len(self.codes), language=language, side=self.side, layout=self.layout, bos_id=self.bos_id)

    # -- storage --------------------------------------------------------------------------------
    def fields(self) -> dict[str, Any]:
        return {"sentencepiece": base64.b64encode(self._proto).decode("ascii"), "n_codes": len(self.codes), "language": self.language,
                "side": self.side, "layout": self.layout, "bos_id": self.bos_id}

    @classmethod
    def from_fields(cls, doc: dict) -> FairseqTokenizer:
        proto = base64.b64decode(doc["sentencepiece"], validate=True)
        return cls(proto, n_codes=doc["n_codes"], language=doc["language"], side=doc["side"], layout=doc["layout"], bos_id=doc["bos_id"])

    # -- use ------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self.n_pieces + FAIRSEQ_OFFSET + len(self.codes) + 1  # pieces (their <unk> is fairseq's 3) + <pad> + codes + <mask>

    @property
    def language_id(self) -> int:
        """The id of this side's language code."""
        return self.n_pieces + FAIRSEQ_OFFSET + self.codes.index(self.language)

    @property
    def forced_first_token(self) -> int | None:
        """The token decoding must generate first: the target's language code (none on a source side)."""
        return self.language_id if self.side == "target" else None

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` with this side's language code (and ``</s>`` on a source side); see the module docstring."""
        ids = self.text_ids(text)
        if self.side == "target":
            return [self.language_id, *ids]
        if self.layout == "mbart50":
            return [self.language_id, *ids, self.eos_id]
        return [*ids, self.eos_id, self.language_id]

    def text_ids(self, text: str) -> list[int]:
        """The ids of ``text``'s pieces alone (no language code, no ``</s>``); ``TokenizerError`` for unreadable text."""
        check_text(text)
        return [i + FAIRSEQ_OFFSET if i else self.unk_id for i in self.sp.encode(text, out_type=int)]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``: the special tokens and language codes are dropped, UNK shows as ``⁇``."""
        return self.sp.decode([int(i) - FAIRSEQ_OFFSET for i in ids if len(SPECIALS) <= int(i) <= self.n_pieces])

    def vocab_piece(self, token_id: int) -> str:
        """A special token, a language code or ``<mask>`` as written, otherwise its piece."""
        if token_id < len(SPECIALS):
            return SPECIALS[token_id]
        if token_id <= self.n_pieces:
            return self.sp.id_to_piece(token_id - FAIRSEQ_OFFSET)
        extra = token_id - self.n_pieces - FAIRSEQ_OFFSET
        return self.codes[extra] if extra < len(self.codes) else MASK

    def vocab_id(self, piece: str) -> int:
        """Id of a piece, a language code, ``<mask>`` or a special token as written; UNK for an unknown piece."""
        if piece in SPECIALS:
            return SPECIALS.index(piece)
        if piece in self.codes:
            return self.n_pieces + FAIRSEQ_OFFSET + self.codes.index(piece)
        if piece == MASK:
            return self.vocab_size - 1
        i = int(self.sp.piece_to_id(piece))  # 0 <unk>, 1 <s>, 2 </s>: none is a piece of text
        return i + FAIRSEQ_OFFSET if i + FAIRSEQ_OFFSET >= len(SPECIALS) else self.unk_id

    def unknown_characters(self, text: str) -> list[str]:
        """The parts of ``text`` read as UNK, to tell the user (see ``unknown_parts``, on the text's pieces alone)."""
        return unknown_parts(_TextPieces(self), text)


class _TextPieces:
    """A tokenizer's view of the text alone (no language code, no ``</s>``): what ``source_map`` aligns with the typed characters."""

    def __init__(self, tokenizer: FairseqTokenizer):
        self.sp, self.piece, self.encode = tokenizer.sp, tokenizer.piece, tokenizer.text_ids
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id
