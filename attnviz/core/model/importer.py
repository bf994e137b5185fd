"""Build an attnviz model from PyTorch's reference modules (``torch.nn.Transformer``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.errors import AttnvizError


class ImportError_(AttnvizError, ValueError):
    """The given modules cannot be expressed as an attnviz model (one-line message)."""


def _copy_mha(dst, src: nn.MultiheadAttention) -> None:
    d = src.embed_dim
    if src._qkv_same_embed_dim:
        wq, wk, wv = src.in_proj_weight.detach().split(d, dim=0)
    else:
        wq, wk, wv = src.q_proj_weight.detach(), src.k_proj_weight.detach(), src.v_proj_weight.detach()
    if src.in_proj_bias is not None:
        bq, bk, bv = src.in_proj_bias.detach().split(d, dim=0)
    else:
        bq = bk = bv = torch.zeros(d)
    if src.bias_k is not None or src.add_zero_attn:
        raise ImportError_("nn.MultiheadAttention with add_bias_kv or add_zero_attn is not supported")
    for lin, w, b in ((dst.w_q, wq, bq), (dst.w_k, wk, bk), (dst.w_v, wv, bv)):
        lin.weight.copy_(w)
        lin.bias.copy_(b)
    dst.w_o.weight.copy_(src.out_proj.weight.detach())
    dst.w_o.bias.copy_(src.out_proj.bias.detach() if src.out_proj.bias is not None else torch.zeros(d))


def _copy_norm(dst, src: nn.LayerNorm) -> None:
    if src.weight is not None:
        dst.weight.copy_(src.weight.detach())
    if src.bias is not None:
        dst.bias.copy_(src.bias.detach())


def _check_layer(layer: nn.Module, what: str) -> None:
    act = getattr(layer, "activation", None)
    if act is not F.relu and not isinstance(act, nn.ReLU):
        raise ImportError_(f"{what}: only ReLU activation is supported (the paper's FFN), got {act!r}")
    if not layer.self_attn.batch_first:
        raise ImportError_(f"{what}: the transformer must be built with batch_first=True")


def import_torch_transformer(
    transformer: nn.Transformer,
    src_embedding: nn.Embedding,
    tgt_embedding: nn.Embedding,
    generator: nn.Linear,
    *,
    pad_id: int = 0,
    unk_id: int = 1,
    bos_id: int = 2,
    eos_id: int = 3,
    max_len: int = 512,
) -> Transformer:
    """An attnviz ``Transformer`` equivalent to a ``torch.nn.Transformer`` with its embeddings and output layer.

    The transformer must use ``batch_first=True`` and ReLU; ``norm_first`` may be either
    (post- or pre-norm). "Equivalent" means that for id tensors ``src`` ``[B, Ls]`` and
    ``tgt`` ``[B, Lt]`` (PAD = ``pad_id``), in eval mode::

        ours(src, tgt) == generator(transformer(E_s, E_t,
                                                tgt_mask=causal,
                                                src_key_padding_mask=src == pad_id,
                                                tgt_key_padding_mask=tgt == pad_id,
                                                memory_key_padding_mask=src == pad_id))

    where ``E = embedding(ids) * sqrt(d_model) + PE`` (the paper's input pipeline, sinusoidal
    PE) and ``causal`` is the look-ahead mask (``nn.Transformer.generate_square_subsequent_mask``).
    Outputs agree at non-PAD positions within float32 rounding (~1e-6). ``nn.Transformer``
    always ends each stack with a LayerNorm, so the imported config has ``final_norm=True``.
    The weights are copied: later changes to the PyTorch modules do not affect the result.
    """
    enc_layers = list(transformer.encoder.layers)
    dec_layers = list(transformer.decoder.layers)
    if not enc_layers or not dec_layers:
        raise ImportError_("the transformer needs at least one encoder and one decoder layer")
    first = enc_layers[0]
    _check_layer(first, "encoder layer 0")
    d_model = first.self_attn.embed_dim
    if src_embedding.embedding_dim != d_model or tgt_embedding.embedding_dim != d_model:
        raise ImportError_(f"embedding width must equal d_model ({d_model})")
    if generator.in_features != d_model or generator.out_features != tgt_embedding.num_embeddings:
        raise ImportError_("generator must map d_model to the target vocabulary size")
    if transformer.encoder.norm is None or transformer.decoder.norm is None:
        raise ImportError_("expected nn.Transformer's final LayerNorm on both stacks")
    config = TransformerConfig(
        src_vocab_size=src_embedding.num_embeddings,
        tgt_vocab_size=tgt_embedding.num_embeddings,
        d_model=d_model,
        n_heads=first.self_attn.num_heads,
        n_encoder_layers=len(enc_layers),
        n_decoder_layers=len(dec_layers),
        d_ff=first.linear1.out_features,
        dropout=float(first.dropout.p),
        max_len=max_len,
        norm="layer",
        norm_placement="pre" if first.norm_first else "post",
        final_norm=True,
        tie_embeddings=generator.weight is tgt_embedding.weight,
        norm_eps=float(first.norm1.eps),
        pad_id=pad_id,
        unk_id=unk_id,
        bos_id=bos_id,
        eos_id=eos_id,
    )
    model = Transformer(config)
    with torch.no_grad():
        model.src_embed.weight.copy_(src_embedding.weight.detach())
        model.tgt_embed.weight.copy_(tgt_embedding.weight.detach())
        for i, (ours, theirs) in enumerate(zip(model.encoder_layers, enc_layers)):
            _check_layer(theirs, f"encoder layer {i}")
            _copy_mha(ours.self_attn, theirs.self_attn)
            _copy_ffn(ours.ffn, theirs)
            _copy_norm(ours.sub1.norm, theirs.norm1)
            _copy_norm(ours.sub2.norm, theirs.norm2)
        for i, (ours, theirs) in enumerate(zip(model.decoder_layers, dec_layers)):
            _check_layer(theirs, f"decoder layer {i}")
            _copy_mha(ours.self_attn, theirs.self_attn)
            _copy_mha(ours.cross_attn, theirs.multihead_attn)
            _copy_ffn(ours.ffn, theirs)
            _copy_norm(ours.sub1.norm, theirs.norm1)
            _copy_norm(ours.sub2.norm, theirs.norm2)
            _copy_norm(ours.sub3.norm, theirs.norm3)
        _copy_norm(model.encoder_norm, transformer.encoder.norm)
        _copy_norm(model.decoder_norm, transformer.decoder.norm)
        if not config.tie_embeddings:
            model.generator.weight.copy_(generator.weight.detach())
        if generator.bias is not None:
            model.generator.bias.copy_(generator.bias.detach())
        else:
            model.generator.bias.zero_()
    return model


def _copy_ffn(dst, layer: nn.Module) -> None:
    dst.linear1.weight.copy_(layer.linear1.weight.detach())
    dst.linear1.bias.copy_(layer.linear1.bias.detach())
    dst.linear2.weight.copy_(layer.linear2.weight.detach())
    dst.linear2.bias.copy_(layer.linear2.bias.detach())
