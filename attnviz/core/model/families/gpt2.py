"""GPT-2 (``GPT2LMHeadModel``, openai-community's ``gpt2``): a decoder-only model
(``kind="decoder-only"``: no encoder, no cross-attention). Learned positions (``wpe``, row p is
position p), pre-norm with a final LayerNorm (``ln_f``), GELU's tanh approximation (``gelu_new``),
embeddings unscaled, the output layer tied to the token embedding (``wte``) and without a bias
(ours is set to zeros). Its weights are ``Conv1D``s, ``x W + b`` with ``W`` stored
``[in, out]``: each is transposed to ``nn.Linear``'s ``[out, in]``, and ``c_attn`` (Q, K and V in
one matrix) is split in three. The causal mask some checkpoints store (``attn.bias``) is checked to
be the one attnviz builds. One token, ``<|endoftext|>``, is PAD, UNK, SOS and EOS.

Tokenizer: byte-level BPE (``vocab.json``, ``merges.txt``), no token added: the prompt is the
"source", fed to the decoder after ``<|endoftext|>`` (``DecodingSession``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from attnviz.core.data.bpe_tokenizer import BPETokenizer
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.families.common import (
    CONFIG,
    MERGES,
    VOCAB_JSON,
    HFImportError,
    activation,
    bpe_tokenizers,
    build_config,
    check_kinds,
    check_shapes,
    field,
    output_layer,
    read_vocab_json,
    rename,
)

END_OF_TEXT = "<|endoftext|>"
_H = r"h\.(\d+)\."
_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(theirs), ours)
    for theirs, ours in (
        (_H + r"ln_1\.(weight|bias)", r"decoder.layers.\1.norm1.\2"),
        (_H + r"ln_2\.(weight|bias)", r"decoder.layers.\1.norm2.\2"),
        (_H + r"attn\.c_proj\.bias", r"decoder.layers.\1.self_attn.w_o.bias"),
        (_H + r"mlp\.c_fc\.bias", r"decoder.layers.\1.ffn.linear1.bias"),
        (_H + r"mlp\.c_proj\.bias", r"decoder.layers.\1.ffn.linear2.bias"),
        (r"ln_f\.(weight|bias)", r"decoder.final_norm.\1"),
        (r"wte\.weight", "decoder.embed.table.weight"),
        (r"wpe\.weight", "decoder.embed.pe"),
    )
)
_CONV1D: tuple[tuple[re.Pattern[str], str], ...] = (  # stored [in, out]: transposed
    (re.compile(_H + r"attn\.c_proj\.weight"), r"decoder.layers.\1.self_attn.w_o.weight"),
    (re.compile(_H + r"mlp\.c_fc\.weight"), r"decoder.layers.\1.ffn.linear1.weight"),
    (re.compile(_H + r"mlp\.c_proj\.weight"), r"decoder.layers.\1.ffn.linear2.weight"),
)
_QKV = re.compile(_H + r"attn\.c_attn\.(weight|bias)")
_CAUSAL = re.compile(_H + r"attn\.(bias|masked_bias)")  # buffers of older checkpoints: the causal mask and its fill value


class GPT2:
    """The GPT-2 family (see the module docstring)."""

    name = "GPT-2"
    architectures = ("GPT2LMHeadModel",)
    model_types = ("gpt2",)
    files = (VOCAB_JSON, MERGES)

    def config(self, hf: dict[str, Any], folder: Path) -> TransformerConfig:
        file = folder / CONFIG
        _check_gpt2_choices(hf, file)
        d = field(hf, file, "n_embd")
        end = hf.get("eos_token_id", 50256)
        return build_config(file, dict(
            src_vocab_size=field(hf, file, "vocab_size"), tgt_vocab_size=field(hf, file, "vocab_size"), d_model=d,
            n_heads=field(hf, file, "n_head"), n_encoder_layers=0, n_decoder_layers=field(hf, file, "n_layer"),
            d_ff=hf.get("n_inner") or (4 * d if isinstance(d, int) else d), dropout=hf.get("resid_pdrop", 0.1),
            max_len=field(hf, file, "n_positions"), norm="layer", norm_placement="pre", final_norm=True, tie_embeddings=True,
            norm_eps=hf.get("layer_norm_epsilon", 1e-5), pad_id=end, unk_id=end, bos_id=hf.get("bos_token_id", end), eos_id=end,
            activation=activation(hf.get("activation_function", "gelu_new"), file), positional="learned", scale_embedding=False,
            kind="decoder-only",
        ))

    def state_dict(self, theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
        """``theirs`` under our names (Conv1D weights transposed, Q/K/V split), each tensor checked against a model of ``config``."""
        theirs = {k.removeprefix("transformer."): v for k, v in theirs.items()}
        for key in [k for k in theirs if _CAUSAL.fullmatch(k)]:
            _check_causal(key, theirs.pop(key), config, where)
        check_kinds(theirs, where)
        ours: dict[str, torch.Tensor] = {}
        for key, tensor in theirs.items():
            name = rename(key, _NAMES)
            if name is not None:
                ours[name] = tensor
            elif (name := rename(key, _CONV1D)) is not None:
                ours[name] = tensor.t() if tensor.dim() == 2 else tensor
            elif (m := _QKV.fullmatch(key)) is not None:
                ours |= _split_qkv(key, tensor, m.group(1), m.group(2), config, where)
            elif key != "lm_head.weight":
                raise HFImportError(where, f"unexpected tensor {key!r} (not a GPT-2 model's?)")
        table = ours.get("decoder.embed.table.weight")
        if table is None:
            raise HFImportError(where, "no token embedding ('transformer.wte.weight') in the weights")
        ours["generator.bias"] = torch.zeros(table.shape[0], dtype=table.dtype)  # GPT-2's output layer has none
        ours |= output_layer(theirs, table, config, where)
        check_shapes(ours, config, where)
        return ours

    def tokenizers(self, folder: Path, config: TransformerConfig) -> tuple[BPETokenizer, BPETokenizer]:
        """The prompt's and the continuation's byte-level BPE tokenizer (the same: no token added)."""
        vocab = read_vocab_json(folder, END_OF_TEXT)
        [tokenizer] = bpe_tokenizers(folder, vocab, config, "a GPT-2 model folder needs vocab.json and merges.txt", [{}])
        return tokenizer, tokenizer


FAMILY = GPT2()


def _check_gpt2_choices(hf: dict[str, Any], file: Path) -> None:
    """``HFImportError`` for a GPT-2 variant the mapping would not reproduce exactly."""
    for name, plain in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False), ("reorder_and_upcast_attn", False),
                        ("add_cross_attention", False), ("tie_word_embeddings", True)):
        if hf.get(name, plain) is not plain:
            raise HFImportError(file, f"{name} {hf.get(name)!r} is not supported (attnviz reads GPT-2 models with {name} {plain})")


def _split_qkv(key: str, tensor: torch.Tensor, layer: str, kind: str, config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
    """``c_attn``'s weight ``[d, 3d]`` (or bias ``[3d]``) as our ``w_q``, ``w_k``, ``w_v`` (weights transposed)."""
    d = config.d_model
    want = (d, 3 * d) if kind == "weight" else (3 * d,)
    if tuple(tensor.shape) != want:
        raise HFImportError(where, f"tensor {key!r} has shape {tuple(tensor.shape)}, config.json implies {want}")
    parts = tensor.split(d, dim=-1)  # Q, K, V
    return {f"decoder.layers.{layer}.self_attn.w_{p}.{kind}": (t.t() if kind == "weight" else t) for p, t in zip("qkv", parts)}


def _check_causal(key: str, tensor: torch.Tensor, config: TransformerConfig, where: Path) -> None:
    """``HFImportError`` unless a stored ``attn.bias`` is the causal mask (ones on and below the diagonal) attnviz builds."""
    if key.endswith("masked_bias"):
        return  # the fill value of masked scores: attnviz masks with -inf
    n = config.max_len
    if tuple(tensor.shape) != (1, 1, n, n) or not torch.equal(tensor.reshape(n, n).bool(), torch.ones(n, n, dtype=torch.bool).tril()):
        raise HFImportError(where, f"tensor {key!r} is not the causal mask of {n} positions (not a standard GPT-2 model)")
