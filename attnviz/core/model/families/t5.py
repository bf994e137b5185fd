"""T5 and mT5 (``T5ForConditionalGeneration``, ``MT5ForConditionalGeneration``): no absolute
positions but a relative position bias B on the scores (one table per stack, in its first layer,
shared by its self-attentions), RMSNorm (``norm="rms"``) before each sublayer and at the end of each
stack, no ÷sqrt(d_k) (``scale_scores=False``), no biases, unscaled embeddings shared by both sides,
and an FFN that is ReLU in v1.0 and gated GELU (tanh form) in v1.1 and mT5 (``feed_forward_proj``).
A tied output layer reads the last hidden states x d_model^-0.5 (``scale_output``); v1.1's own
``lm_head`` does not. mT5's heads are narrower than d_model / h (``head_dim``). The decoder starts
from PAD. Tokenizer: ``spiece.model``, whose ids are the model's; ids past its pieces are T5's
sentinels ``<extra_id_N>`` (the last id is ``<extra_id_0>``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from attnviz.core.data.hf_tokenizer import VocabTokenizer
from attnviz.core.data.tokenizer import TokenizerError, load_sentencepiece
from attnviz.core.files import read_capped
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.families.common import (
    CONFIG,
    SPM_LIMIT,
    HFImportError,
    activation,
    build_config,
    check_kinds,
    check_present,
    check_shapes,
    field,
    output_layer,
    rename,
    tokenizer_ids,
)

SPIECE = "spiece.model"
SENTINELS = 100  # T5's <extra_id_0> .. <extra_id_99>
_W = r"\.weight"
_ATTN = r"(encoder|decoder)\.block\.(\d+)\.layer\.{j}\.{part}\.([qkvo])" + _W
_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(_ATTN.format(j=0, part="SelfAttention")), r"\1.layers.\2.self_attn.w_\3.weight"),
    (re.compile(_ATTN.format(j=1, part="EncDecAttention")), r"\1.layers.\2.cross_attn.w_\3.weight"),
    (re.compile(r"(encoder|decoder)\.block\.0\.layer\.0\.SelfAttention\.relative_attention_bias" + _W), r"\1.position_bias.table.weight"),
    (re.compile(r"(encoder|decoder)\.block\.(\d+)\.layer\.0\.layer_norm" + _W), r"\1.layers.\2.norm1.weight"),
    (re.compile(r"(encoder|decoder)\.block\.(\d+)\.layer\.1\.layer_norm" + _W), r"\1.layers.\2.norm2.weight"),
    (re.compile(r"decoder\.block\.(\d+)\.layer\.2\.layer_norm" + _W), r"decoder.layers.\1.norm3.weight"),
    (re.compile(r"(encoder\.block\.\d+\.layer\.1|decoder\.block\.\d+\.layer\.2)\.DenseReluDense\.(wi|wi_0|wi_1|wo)" + _W), r"\1 \2"),
    (re.compile(r"(encoder|decoder)\.final_layer_norm" + _W), r"\1.final_norm.weight"),
)
_FFN = {"wi": "linear1", "wi_0": "linear1", "wi_1": "linear_up", "wo": "linear2"}
_IGNORED = re.compile(r"decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight")  # transformers never reads it
_EMBEDDINGS = ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight")


class T5:
    """The T5 family (see the module docstring)."""

    name = "T5"
    architectures = ("T5ForConditionalGeneration", "MT5ForConditionalGeneration")
    model_types = ("t5", "mt5")
    files = (SPIECE,)

    def config(self, hf: dict[str, Any], folder: Path) -> TransformerConfig:
        file = folder / CONFIG
        proj = hf.get("feed_forward_proj", "relu")
        if not isinstance(proj, str) or proj.count("-") > 1 or (proj.count("-") == 1 and not proj.startswith("gated-")):
            raise HFImportError(file, f"feed_forward_proj {proj!r} is not supported (an activation, or gated-<activation>)")
        gated = proj.startswith("gated-")
        act = "gelu_new" if proj == "gated-gelu" else proj.removeprefix("gated-")
        tied = hf.get("tie_word_embeddings", True) is not False
        n_heads, d_model, d_kv = field(hf, file, "num_heads"), field(hf, file, "d_model"), field(hf, file, "d_kv")
        pad = hf.get("pad_token_id", 0)
        return build_config(file, dict(
            src_vocab_size=field(hf, file, "vocab_size"), tgt_vocab_size=field(hf, file, "vocab_size"), d_model=d_model, n_heads=n_heads,
            n_encoder_layers=field(hf, file, "num_layers"), n_decoder_layers=hf.get("num_decoder_layers") or field(hf, file, "num_layers"),
            d_ff=field(hf, file, "d_ff"), dropout=hf.get("dropout_rate", 0.1), max_len=hf.get("n_positions", 512),
            norm="rms", norm_placement="pre", final_norm=True, tie_embeddings=tied, norm_eps=hf.get("layer_norm_epsilon", 1e-6),
            pad_id=pad, unk_id=_unk_id(folder), bos_id=hf.get("decoder_start_token_id", pad), eos_id=hf.get("eos_token_id", 1),
            activation=activation(act, file), positional="relative",
            relative_buckets=hf.get("relative_attention_num_buckets", 32), relative_max_distance=hf.get("relative_attention_max_distance", 128),
            scale_scores=False, ffn="gated" if gated else "plain", scale_embedding=False, bias=False,
            scale_output=_scale_output(hf, tied), head_dim=_head_dim(n_heads, d_model, d_kv),
        ))

    def state_dict(self, theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
        """``theirs`` under our names, each tensor checked against a model of ``config``."""
        check_kinds(theirs, where)
        ours: dict[str, torch.Tensor] = {}
        for key, tensor in theirs.items():
            name = rename(key, _NAMES)
            if name is not None:
                ours[_ffn_name(name)] = tensor
            elif not _IGNORED.fullmatch(key) and key not in _EMBEDDINGS:
                raise HFImportError(where, f"unexpected tensor {key!r} (not a T5 model's?)")
        shared = theirs.get("shared.weight")
        src, tgt = theirs.get("encoder.embed_tokens.weight", shared), theirs.get("decoder.embed_tokens.weight", shared)
        if src is None or tgt is None:
            raise HFImportError(where, "no token embedding ('shared.weight') in the weights")
        ours |= {"encoder.embed.table.weight": src, "decoder.embed.table.weight": tgt} | output_layer(theirs, tgt, config, where)
        check_shapes(ours, config, where)
        return ours

    def tokenizers(self, folder: Path, config: TransformerConfig) -> tuple[VocabTokenizer, VocabTokenizer]:
        """Source (ends with EOS) and target tokenizers over ``spiece.model``'s pieces and T5's sentinels."""
        proto = _read_spiece(folder)
        pieces = _pieces(proto, folder)
        if len(pieces) > config.src_vocab_size:
            raise HFImportError(folder / SPIECE, f"holds {len(pieces)} pieces, more than config.json's vocab_size {config.src_vocab_size}")
        vocab = {p: i for i, p in enumerate(pieces + _sentinels(len(pieces), config.src_vocab_size))}
        ids = tokenizer_ids(config)
        try:
            return VocabTokenizer(proto, vocab, append_eos=True, **ids), VocabTokenizer(proto, vocab, append_eos=False, **ids)
        except TokenizerError as exc:
            raise HFImportError(folder / SPIECE, str(exc)) from None


FAMILY = T5()


def _scale_output(hf: dict[str, Any], tied: bool) -> Any:
    """Whether the last hidden states are x d_model^-0.5 before the output layer: as ``scale_decoder_outputs``
    says where it is saved; else for a tied T5 (v1.0), never for mT5 (v1.1's architecture)."""
    if "scale_decoder_outputs" in hf and hf["scale_decoder_outputs"] is not None:
        return hf["scale_decoder_outputs"]
    mt5 = hf.get("model_type") == "mt5" or str((hf.get("architectures") or [""])[0]).startswith("MT5")
    return tied and not mt5


def _head_dim(n_heads: Any, d_model: Any, d_kv: Any) -> Any:
    """``d_kv`` where it is not d_model / h (mT5), else None (the config's own d_model / h)."""
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (n_heads, d_model, d_kv)) and n_heads * d_kv == d_model:
        return None
    return d_kv


def _ffn_name(name: str) -> str:
    """``encoder.block.0.layer.1 wi_1`` -> ``encoder.layers.0.ffn.linear_up.weight``; other names as they are."""
    if " " not in name:
        return name
    where, part = name.split(" ")
    stack, _, layer = where.split(".")[:3]
    return f"{stack}.layers.{layer}.ffn.{_FFN[part]}.weight"


def _read_spiece(folder: Path) -> bytes:
    file = folder / SPIECE
    check_present(file, "a T5 model folder needs spiece.model")
    return read_capped(file, SPM_LIMIT, HFImportError)


def _pieces(proto: bytes, folder: Path) -> list[str]:
    try:
        sp = load_sentencepiece(proto)
    except TokenizerError as exc:
        raise HFImportError(folder / SPIECE, str(exc)) from None
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def _unk_id(folder: Path) -> int:
    try:
        return int(load_sentencepiece(_read_spiece(folder)).unk_id())
    except TokenizerError as exc:
        raise HFImportError(folder / SPIECE, str(exc)) from None


def _sentinels(first: int, size: int) -> list[str]:
    """Names of ids ``first .. size - 1``: T5's sentinels counting down to ``<extra_id_0>`` at ``first + SENTINELS - 1``,
    then unused ids (the model's table is padded past its tokenizer)."""
    n = min(SENTINELS, size - first)
    return [f"<extra_id_{n - 1 - j}>" for j in range(n)] + [f"<unused_{i}>" for i in range(first + n, size)]
