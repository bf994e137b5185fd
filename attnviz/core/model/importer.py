"""Build an attnviz model from PyTorch's reference modules (``torch.nn.Transformer``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.errors import AttnvizError


class ImportError_(AttnvizError, ValueError):
    """The given modules cannot be expressed as an attnviz model (one-line message)."""


def _copy_mha(dst, src: nn.MultiheadAttention) -> None:
    d = src.embed_dim
    if src.in_proj_weight is not None:  # one packed [3d, d] input projection
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
    pad_id: int = PAD_ID,
    unk_id: int = UNK_ID,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
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
    _check_modules(transformer, src_embedding, tgt_embedding, generator)
    special_ids = dict(pad_id=pad_id, unk_id=unk_id, bos_id=bos_id, eos_id=eos_id)
    config = _config_of(transformer, src_embedding, tgt_embedding, generator, max_len, special_ids)
    model = Transformer(config)
    with torch.no_grad():
        model.encoder.embed.table.weight.copy_(src_embedding.weight.detach())
        model.decoder.embed.table.weight.copy_(tgt_embedding.weight.detach())
        _copy_stack(model.encoder, transformer.encoder, "encoder")
        _copy_stack(model.decoder, transformer.decoder, "decoder")
        _copy_generator(model, generator)
    return model


def _check_modules(transformer: nn.Transformer, src_embedding: nn.Embedding, tgt_embedding: nn.Embedding, generator: nn.Linear) -> None:
    """A one-line ``ImportError_`` for modules that an attnviz model cannot express."""
    if not transformer.encoder.layers or not transformer.decoder.layers:
        raise ImportError_("the transformer needs at least one encoder and one decoder layer")
    first = transformer.encoder.layers[0]
    _check_layer(first, "encoder layer 0")
    d_model = first.self_attn.embed_dim
    if src_embedding.embedding_dim != d_model or tgt_embedding.embedding_dim != d_model:
        raise ImportError_(f"embedding width must equal d_model ({d_model})")
    if generator.in_features != d_model or generator.out_features != tgt_embedding.num_embeddings:
        raise ImportError_("generator must map d_model to the target vocabulary size")
    if transformer.encoder.norm is None or transformer.decoder.norm is None:
        raise ImportError_("expected nn.Transformer's final LayerNorm on both stacks")


def _config_of(
    transformer: nn.Transformer,
    src_embedding: nn.Embedding,
    tgt_embedding: nn.Embedding,
    generator: nn.Linear,
    max_len: int,
    special_ids: dict[str, int],
) -> TransformerConfig:
    """The sizes and choices of the PyTorch modules."""
    first = transformer.encoder.layers[0]
    return TransformerConfig(
        src_vocab_size=src_embedding.num_embeddings,
        tgt_vocab_size=tgt_embedding.num_embeddings,
        d_model=first.self_attn.embed_dim,
        n_heads=first.self_attn.num_heads,
        n_encoder_layers=len(transformer.encoder.layers),
        n_decoder_layers=len(transformer.decoder.layers),
        d_ff=first.linear1.out_features,
        dropout=float(first.dropout.p),
        max_len=max_len,
        norm="layer",
        norm_placement="pre" if first.norm_first else "post",
        final_norm=True,
        tie_embeddings=generator.weight is tgt_embedding.weight,
        norm_eps=float(first.norm1.eps),
        **special_ids,
    )


def _copy_stack(ours: nn.Module, theirs: nn.Module, stack: str) -> None:
    """Every layer of one stack (``nn.TransformerEncoder``/``Decoder``), then its final LayerNorm."""
    for i, (layer, their_layer) in enumerate(zip(ours.layers, theirs.layers)):
        _check_layer(their_layer, f"{stack} layer {i}")
        _copy_mha(layer.self_attn, their_layer.self_attn)
        if stack == "decoder":
            _copy_mha(layer.cross_attn, their_layer.multihead_attn)
        _copy_ffn(layer.ffn, their_layer)
        for j in range(1, 4 if stack == "decoder" else 3):
            _copy_norm(getattr(layer, f"norm{j}"), getattr(their_layer, f"norm{j}"))
    _copy_norm(ours.final_norm, theirs.norm)


def _copy_generator(model: Transformer, generator: nn.Linear) -> None:
    if not model.config.tie_embeddings:
        model.generator.weight.copy_(generator.weight.detach())
    if generator.bias is not None:
        model.generator.bias.copy_(generator.bias.detach())
    else:
        model.generator.bias.zero_()


def _copy_ffn(dst, layer: nn.Module) -> None:
    dst.linear1.weight.copy_(layer.linear1.weight.detach())
    dst.linear1.bias.copy_(layer.linear1.bias.detach())
    dst.linear2.weight.copy_(layer.linear2.weight.detach())
    dst.linear2.bias.copy_(layer.linear2.bias.detach())
