"""BART and mBART (``BartForConditionalGeneration``, ``MBartForConditionalGeneration``): learned
positions (a table whose first two rows BART never reads: its offset of 2, dropped here, so row p
is position p), a LayerNorm on embedding + positions (``layernorm_embedding``), GELU, embeddings
unscaled unless ``scale_embedding``, biases everywhere and ``final_logits_bias``; BART is post-norm,
mBART pre-norm with a LayerNorm ending each stack. The decoder starts from
``decoder_start_token_id`` (EOS). Layers are named as Marian's (``marian.LAYER_NAMES``).
Tokenizer: GPT-2's byte-level BPE (``vocab.json``, ``merges.txt``); each sentence starts with
``<s>`` and a source ends with ``</s>``, as ``BartTokenizer`` writes them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from attnviz.core.data.bpe_tokenizer import BPETokenizer
from attnviz.core.data.tokenizer import TokenizerError
from attnviz.core.files import read_capped, read_json_capped
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.families.common import (
    CONFIG,
    VOCAB_LIMIT,
    HFImportError,
    activation,
    build_config,
    check_equal_pairs,
    check_kinds,
    check_shapes,
    field,
    rename,
)
from attnviz.core.model.families.marian import EMBEDDING_NAMES, LAYER_NAMES, embeddings

VOCAB, MERGES = "vocab.json", "merges.txt"
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
    files = (VOCAB, MERGES)

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
            norm_eps=1e-5, pad_id=field(hf, file, "pad_token_id"), unk_id=_read_vocab(folder)["<unk>"],
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

    def tokenizers(self, folder: Path, config: TransformerConfig) -> tuple[BPETokenizer, BPETokenizer]:
        """Source (``<s>`` ... ``</s>``) and target (``<s>`` ...) byte-level BPE tokenizers."""
        vocab = _read_vocab(folder)
        file = folder / MERGES
        if not file.exists() and not file.is_symlink():
            raise HFImportError(file, "missing (a BART model folder needs vocab.json and merges.txt)")
        text = read_capped(file, VOCAB_LIMIT, HFImportError).decode("utf-8", errors="replace")
        merges = [line for line in text.splitlines() if line.strip() and not line.startswith("#version")]
        ids = dict(pad_id=config.pad_id, unk_id=config.unk_id, bos_id=config.bos_id, eos_id=config.eos_id)
        start = vocab.get("<s>")
        try:
            sides = [BPETokenizer(vocab, merges, prefix=[start] if isinstance(start, int) else [], append_eos=eos, **ids) for eos in (True, False)]
        except TokenizerError as exc:
            raise HFImportError(file if "merge" in str(exc) else folder / VOCAB, str(exc)) from None
        if sides[0].vocab_size != config.src_vocab_size:
            raise HFImportError(folder / VOCAB, f"holds {sides[0].vocab_size} pieces, config.json says vocab_size {config.src_vocab_size}")
        return sides[0], sides[1]


FAMILY = Bart()


def _read_vocab(folder: Path) -> dict[str, int]:
    vocab = read_json_capped(folder / VOCAB, VOCAB_LIMIT, HFImportError)
    if not isinstance(vocab, dict) or not isinstance(vocab.get("<unk>"), int):
        raise HFImportError(folder / VOCAB, "is not a piece -> id object with '<unk>'")
    return vocab


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
