"""BART and mBART (``BartForConditionalGeneration``, ``MBartForConditionalGeneration``): learned
positions (a table whose first two rows BART never reads: its offset of 2, dropped here, so row p
is position p), a LayerNorm on embedding + positions (``layernorm_embedding``), GELU, embeddings
unscaled unless ``scale_embedding``, biases everywhere and ``final_logits_bias``; BART is post-norm,
mBART pre-norm with a LayerNorm ending each stack. The decoder starts from
``decoder_start_token_id`` (EOS). Layers are named as Marian's (``marian.LAYER_NAMES``).
Tokenizer: GPT-2's byte-level BPE (``vocab.json``, ``merges.txt``); each sentence starts with
``<s>`` and a source ends with ``</s>``, as ``BartTokenizer`` writes them. A folder holding
``sentencepiece.bpe.model`` (mBART's) gets fairseq's layout with language codes instead
(``data.fairseq_tokenizer``): the languages are ``tokenizer_config.json``'s ``src_lang`` and
``tgt_lang`` (``en_XX``, and the target the source's, where it names none, as ``transformers``
does); ``hf_import.read_hf_folder`` can choose others."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import torch

from attnviz.core.data.fairseq_tokenizer import FAIRSEQ_OFFSET, LANGUAGE_CODES, SPECIALS, FairseqTokenizer
from attnviz.core.data.tokenizer import TokenizerError, TokenizerLike, load_sentencepiece
from attnviz.core.files import read_capped, read_json_capped
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.families.common import (
    CONFIG,
    CONFIG_LIMIT,
    MERGES,
    SPM_LIMIT,
    VOCAB_JSON,
    HFImportError,
    activation,
    bpe_tokenizers,
    build_config,
    check_equal_pairs,
    check_kinds,
    check_shapes,
    field,
    read_vocab_json,
    rename,
)
from attnviz.core.model.families.marian import EMBEDDING_NAMES, LAYER_NAMES, embeddings

SPM, TOKENIZER_CONFIG = "sentencepiece.bpe.model", "tokenizer_config.json"  # mBART's tokenizer files
DEFAULT_LANGUAGE = "en_XX"  # transformers' source language where tokenizer_config.json names none
POSITION_OFFSET = 2  # BART's learned position table holds two rows before position 0
_STACK_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(encoder|decoder)\.layernorm_embedding\.(weight|bias)"), r"\1.embed.norm.\2"),
    (re.compile(r"(encoder|decoder)\.layer_norm\.(weight|bias)"), r"\1.final_norm.\2"),
)
_POSITIONS = re.compile(r"(encoder|decoder)\.embed_positions\.weight")


class Bart:
    """The BART family (see the module docstring)."""

    name = "BART"
    architectures = ("BartForConditionalGeneration", "MBartForConditionalGeneration")
    model_types = ("bart", "mbart")
    files = (VOCAB_JSON, MERGES, SPM)

    def config(self, hf: dict[str, Any], folder: Path) -> TransformerConfig:
        file = folder / CONFIG
        pre = hf.get("model_type") == "mbart" or "MBart" in str((hf.get("architectures") or [""])[0])
        _check_bart_choices(hf, file, pre)
        eos = field(hf, file, "eos_token_id")
        return build_config(file, dict(
            src_vocab_size=field(hf, file, "vocab_size"), tgt_vocab_size=field(hf, file, "vocab_size"),
            d_model=field(hf, file, "d_model"), n_heads=field(hf, file, "encoder_attention_heads"),
            n_encoder_layers=field(hf, file, "encoder_layers"), n_decoder_layers=field(hf, file, "decoder_layers"),
            d_ff=field(hf, file, "encoder_ffn_dim"), dropout=hf.get("dropout", 0.1), max_len=field(hf, file, "max_position_embeddings"),
            norm="layer", norm_placement="pre" if pre else "post", final_norm=pre, tie_embeddings=hf.get("tie_word_embeddings", True),
            norm_eps=1e-5, pad_id=field(hf, file, "pad_token_id"), unk_id=_unk_id(folder),
            bos_id=hf.get("decoder_start_token_id", eos), eos_id=eos, activation=activation(hf.get("activation_function", "gelu"), file),
            positional="learned", scale_embedding=hf.get("scale_embedding", False), layernorm_embedding=True,
        ))

    def state_dict(self, theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
        """``theirs`` under our names, each tensor checked against a model of ``config``."""
        theirs = {k.removeprefix("model."): v for k, v in theirs.items()}
        check_kinds(theirs, where)
        ours: dict[str, torch.Tensor] = {}
        for key, tensor in theirs.items():
            name = rename(key, LAYER_NAMES) or rename(key, _STACK_NAMES)
            if name is not None:
                ours[name] = tensor
            elif _POSITIONS.fullmatch(key):
                ours[key.split(".")[0] + ".embed.pe"] = _positions(key, tensor, config, where)
            elif key not in EMBEDDING_NAMES:
                raise HFImportError(where, f"unexpected tensor {key!r} (not a BART model's?)")
        ours.update(embeddings(theirs, config, where))
        check_shapes(ours, config, where)
        return ours

    def tokenizers(self, folder: Path, config: TransformerConfig) -> tuple[TokenizerLike, TokenizerLike]:
        """Source (``<s>`` ... ``</s>``) and target (``<s>`` ...) byte-level BPE tokenizers, or mBART's (see the module docstring)."""
        if _is_mbart_folder(folder):
            return _mbart_tokenizers(folder, config)
        vocab = read_vocab_json(folder, "<unk>")
        start = vocab.get("<s>")
        sides = [dict(prefix=[start] if isinstance(start, int) else [], append_eos=eos) for eos in (True, False)]
        src, tgt = bpe_tokenizers(folder, vocab, config, "a BART model folder needs vocab.json and merges.txt", sides)
        return src, tgt


FAMILY = Bart()


def _is_mbart_folder(folder: Path) -> bool:
    return os.path.lexists(folder / SPM)


def _unk_id(folder: Path) -> int:
    return SPECIALS.index("<unk>") if _is_mbart_folder(folder) else read_vocab_json(folder, "<unk>")["<unk>"]


def _mbart_tokenizers(folder: Path, config: TransformerConfig) -> tuple[FairseqTokenizer, FairseqTokenizer]:
    """mBART's source and target tokenizers, in the languages ``tokenizer_config.json`` names."""
    file = folder / SPM
    proto = read_capped(file, SPM_LIMIT, HFImportError)
    settings = _tokenizer_settings(folder)
    src = settings.get("src_lang") or DEFAULT_LANGUAGE
    try:
        pieces = load_sentencepiece(proto).get_piece_size()
    except TokenizerError as exc:
        raise HFImportError(file, str(exc)) from None
    n_codes = config.src_vocab_size - pieces - FAIRSEQ_OFFSET - 1  # the ids after the pieces: codes, then <mask>
    if not 0 < n_codes <= len(LANGUAGE_CODES):
        raise HFImportError(file, f"holds {pieces} pieces; config.json's vocab_size {config.src_vocab_size} leaves room for {n_codes} "
                                  f"language codes, not 1 to {len(LANGUAGE_CODES)}")
    cls = str(settings.get("tokenizer_class") or "")
    layout = "mbart50" if cls.startswith("MBart50") or (not cls.startswith("MBart") and n_codes != 25) else "mbart"
    try:
        sides = [FairseqTokenizer(proto, n_codes=n_codes, language=lang, side=side, layout=layout, bos_id=config.bos_id)
                 for lang, side in ((src, "source"), (settings.get("tgt_lang") or src, "target"))]
    except TokenizerError as exc:
        raise HFImportError(folder / TOKENIZER_CONFIG if "language" in str(exc) else file, str(exc)) from None
    if (config.pad_id, config.eos_id) != (sides[0].pad_id, sides[0].eos_id):
        raise HFImportError(folder / CONFIG, f"pad/eos ids {config.pad_id}/{config.eos_id} are not fairseq's 1/2")
    return sides[0], sides[1]


def _tokenizer_settings(folder: Path) -> dict[str, Any]:
    """``tokenizer_config.json`` (``{}`` where there is none)."""
    file = folder / TOKENIZER_CONFIG
    if not os.path.lexists(file):
        return {}
    settings = read_json_capped(file, CONFIG_LIMIT, HFImportError)
    if not isinstance(settings, dict):
        raise HFImportError(file, "is not a JSON object")
    return settings


def _check_bart_choices(hf: dict[str, Any], file: Path, pre: bool) -> None:
    """``HFImportError`` for a BART variant the mapping would not reproduce exactly."""
    check_equal_pairs(hf, file, (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")))
    if not pre and (hf.get("normalize_before") or hf.get("add_final_layer_norm")):
        raise HFImportError(file, "pre-norm BART variants are not supported")
    if not isinstance(hf.get("scale_embedding", False), bool):
        raise HFImportError(file, f"scale_embedding must be true or false, not {hf.get('scale_embedding')!r}")


def _positions(key: str, tensor: torch.Tensor, config: TransformerConfig, where: Path) -> torch.Tensor:
    """Rows ``POSITION_OFFSET ..`` of a stored position table: row p is position p."""
    want = (config.max_len + POSITION_OFFSET, config.d_model)
    if tuple(tensor.shape) != want:
        raise HFImportError(where, f"tensor {key!r} has shape {tuple(tensor.shape)}, config.json implies {want}")
    return tensor[POSITION_OFFSET:]
