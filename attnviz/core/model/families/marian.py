"""Marian (Helsinki-NLP's ``opus-mt-*``, ``MarianMTModel``): the paper's architecture with Marian's
choices, each a config field: post-norm with no final norm, embeddings x sqrt(d_model), sinusoidal
positions with the sines in the first half of each vector (``positional_layout="halves"``), the
FFN's SiLU (``activation``), the output layer tied to one embedding shared by both sides, plus
``final_logits_bias`` (the generator's bias), and the decoder starting from PAD
(``bos_id == pad_id``). The mapping is exact: the same logits and attention weights, to float32
rounding, as ``transformers``' ``MarianMTModel``. Tokenizers: ``source.spm``, ``target.spm`` and one
shared ``vocab.json`` (``VocabTokenizer``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import torch

from attnviz.core.data.hf_tokenizer import VocabTokenizer
from attnviz.core.data.tokenizer import TokenizerError
from attnviz.core.files import read_capped
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.families.common import (
    CONFIG,
    SPM_LIMIT,
    VOCAB_JSON,
    HFImportError,
    activation,
    build_config,
    check_equal_pairs,
    check_kinds,
    check_present,
    check_shapes,
    check_vocab_size,
    field,
    output_layer,
    read_vocab_json,
    rename,
    tokenizer_ids,
)
from attnviz.core.model.modules import sinusoidal_encoding

SOURCE_SPM, TARGET_SPM = "source.spm", "target.spm"
POSITIONS_ATOL = 1e-3  # a stored position table may differ from ours by float16 rounding, not more

# transformers' tensor names of a BART-style layer (Marian, BART, mBART; after "model.") -> ours
_L = r"(encoder|decoder)\.layers\.(\d+)\."
_KIND = r"\.(weight|bias)"
LAYER_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(_L + theirs + _KIND), r"\1.layers.\2." + ours + r".\3")
    for theirs, ours in (
        (r"self_attn\.q_proj", "self_attn.w_q"),
        (r"self_attn\.k_proj", "self_attn.w_k"),
        (r"self_attn\.v_proj", "self_attn.w_v"),
        (r"self_attn\.out_proj", "self_attn.w_o"),
        (r"encoder_attn\.q_proj", "cross_attn.w_q"),
        (r"encoder_attn\.k_proj", "cross_attn.w_k"),
        (r"encoder_attn\.v_proj", "cross_attn.w_v"),
        (r"encoder_attn\.out_proj", "cross_attn.w_o"),
        (r"self_attn_layer_norm", "norm1"),
        (r"encoder_attn_layer_norm", "norm2"),
        (r"fc1", "ffn.linear1"),
        (r"fc2", "ffn.linear2"),
    )
) + (
    (re.compile(r"encoder\.layers\.(\d+)\.final_layer_norm" + _KIND), r"encoder.layers.\1.norm2.\2"),
    (re.compile(r"decoder\.layers\.(\d+)\.final_layer_norm" + _KIND), r"decoder.layers.\1.norm3.\2"),
)
_POSITIONS = re.compile(r"^(encoder|decoder)\.embed_positions\.weight$")  # recomputed (sinusoidal), compared
EMBEDDING_NAMES = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight", "final_logits_bias")


class Marian:
    """The Marian family (see the module docstring)."""

    name = "Marian"
    architectures = ("MarianMTModel",)
    model_types = ("marian",)
    files = (VOCAB_JSON, SOURCE_SPM, TARGET_SPM)

    def config(self, hf: dict[str, Any], folder: Path) -> TransformerConfig:
        return config_from_hf(hf, folder / CONFIG, read_vocab_json(folder, "<unk>")["<unk>"])

    def state_dict(self, theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
        return hf_state_dict(theirs, config, where)

    def tokenizers(self, folder: Path, config: TransformerConfig) -> tuple[VocabTokenizer, VocabTokenizer]:
        """Source (ends with EOS) and target tokenizers over the shared ``vocab.json``."""
        vocab = read_vocab_json(folder, "<unk>")
        sides = []
        for name, append_eos in ((SOURCE_SPM, True), (TARGET_SPM, False)):
            file = folder / name
            check_present(file, "a Marian model folder needs source.spm, target.spm and vocab.json")
            try:
                sides.append(VocabTokenizer(read_capped(file, SPM_LIMIT, HFImportError), vocab, append_eos=append_eos, **tokenizer_ids(config)))
            except TokenizerError as exc:
                raise HFImportError(file, str(exc)) from None
        check_vocab_size(folder / VOCAB_JSON, sides[0].vocab_size, config)
        return sides[0], sides[1]


FAMILY = Marian()


# -- configuration -------------------------------------------------------------------------------
def config_from_hf(hf: dict[str, Any], file: Path, unk_id: int) -> TransformerConfig:
    """Our config for a ``MarianMTModel``'s ``config.json``; ``HFImportError`` for anything it cannot express."""
    _check_marian_choices(hf, file)
    pad = field(hf, file, "pad_token_id")
    return build_config(file, dict(
        src_vocab_size=field(hf, file, "vocab_size"),
        tgt_vocab_size=field(hf, file, "vocab_size"),
        d_model=field(hf, file, "d_model"),
        n_heads=field(hf, file, "encoder_attention_heads"),
        n_encoder_layers=field(hf, file, "encoder_layers"),
        n_decoder_layers=field(hf, file, "decoder_layers"),
        d_ff=field(hf, file, "encoder_ffn_dim"),
        dropout=_number(hf.get("dropout", 0.1)),
        max_len=field(hf, file, "max_position_embeddings"),
        norm="layer",
        norm_placement="post",
        final_norm=False,
        tie_embeddings=bool(hf.get("tie_word_embeddings", True)),
        norm_eps=1e-5,  # torch.nn.LayerNorm's, which Marian uses
        pad_id=pad,
        unk_id=unk_id,
        bos_id=hf.get("decoder_start_token_id", pad),
        eos_id=field(hf, file, "eos_token_id"),
        activation=activation(hf.get("activation_function", "gelu"), file),
        positional_layout="halves",
    ))


def _number(value: Any) -> Any:
    """``float(value)`` for a number a float holds; anything else as it is (the config's check names it)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if number and abs(value) <= sys.float_info.max else value


def _check_marian_choices(hf: dict[str, Any], file: Path) -> None:
    """``HFImportError`` for a Marian variant the mapping would not reproduce exactly."""
    check_equal_pairs(hf, file, (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")))
    if hf.get("scale_embedding") is not True:
        raise HFImportError(file, "scale_embedding must be true (attnviz scales embeddings by sqrt(d_model), as Marian's opus-mt models do)")
    if hf.get("share_encoder_decoder_embeddings", True) is not True or hf.get("decoder_vocab_size") not in (None, hf.get("vocab_size")):
        raise HFImportError(file, "separate source and target vocabularies are not supported (one shared vocab.json is)")
    activation(hf.get("activation_function", "gelu"), file)
    if hf.get("normalize_before") or hf.get("add_final_layer_norm") or hf.get("normalize_embedding"):
        raise HFImportError(file, "pre-norm or extra LayerNorm Marian variants are not supported")


# -- weights ------------------------------------------------------------------------------------
def hf_state_dict(theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
    """``theirs`` (a ``MarianMTModel`` state dict) under our names, checked against a model of ``config``:
    every tensor present and explained by the config, each dense, of the right shape and finite,
    the sinusoidal positions attnviz recomputes equal to the checkpoint's; ``HFImportError`` otherwise."""
    theirs = {k.removeprefix("model."): v for k, v in theirs.items()}
    check_kinds(theirs, where)
    ours: dict[str, torch.Tensor] = {}
    for key, tensor in theirs.items():
        name = rename(key, LAYER_NAMES)
        if name is not None:
            ours[name] = tensor
        elif _POSITIONS.match(key):
            _check_positions(key, tensor, config, where)
        elif key not in EMBEDDING_NAMES:
            raise HFImportError(where, f"unexpected tensor {key!r} (not a MarianMTModel's?)")
    ours.update(embeddings(theirs, config, where))
    check_shapes(ours, config, where)
    return ours


def _check_positions(key: str, tensor: torch.Tensor, config: TransformerConfig, where: Path) -> None:
    """``HFImportError`` unless Marian's stored position table is the one attnviz recomputes."""
    want = sinusoidal_encoding(config.max_len, config.d_model, layout=config.positional_layout)  # [max_len, d_model]
    if tuple(tensor.shape) != tuple(want.shape):
        raise HFImportError(where, f"tensor {key!r} has shape {tuple(tensor.shape)}, config.json implies {tuple(want.shape)}")
    if not torch.allclose(tensor.to(torch.float32), want, atol=POSITIONS_ATOL, rtol=0.0):
        worst = float((tensor.to(torch.float32) - want).abs().max())
        raise HFImportError(where, f"tensor {key!r} differs from the sinusoidal positions attnviz computes (by up to {worst:.3g}): "
                                   "not a standard Marian model")


def embeddings(theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
    """The embedding tables, the output layer (tied or not) and its bias (``final_logits_bias``) of a BART-style model."""
    shared = theirs.get("shared.weight")
    src = theirs.get("encoder.embed_tokens.weight", shared)
    tgt = theirs.get("decoder.embed_tokens.weight", shared)
    if src is None or tgt is None:
        raise HFImportError(where, "no token embedding ('model.shared.weight') in the weights")
    out = {"encoder.embed.table.weight": src, "decoder.embed.table.weight": tgt}
    bias = theirs.get("final_logits_bias")
    if bias is None:  # transformers would start it at zeros; a checkpoint of these models always holds it
        raise HFImportError(where, "tensor 'final_logits_bias' (the output layer's bias) is missing from the weights")
    out["generator.bias"] = bias.reshape(-1) if bias.dim() == 2 and bias.shape[0] == 1 else bias
    return out | output_layer(theirs, tgt, config, where)
