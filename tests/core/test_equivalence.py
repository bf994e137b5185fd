"""Our model equals PyTorch's reference modules with the same weights."""

import math
import warnings

import pytest
import torch
from torch import nn

from attnviz.core import Recorder, import_torch_transformer, sinusoidal_encoding

SIZES = [
    dict(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=32),
    dict(d_model=48, nhead=6, num_encoder_layers=3, num_decoder_layers=2, dim_feedforward=96),
]
PAD = 0


def build(size, norm_first, seed):
    torch.manual_seed(seed)
    tr = nn.Transformer(batch_first=True, norm_first=norm_first, dropout=0.1, **size).eval()
    d = size["d_model"]
    es, et, gen = nn.Embedding(30, d), nn.Embedding(25, d), nn.Linear(d, 25)
    # make LayerNorm parameters non-trivial so a wrong copy would show
    with torch.no_grad():
        for m in tr.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return tr, es, et, gen


def batch():
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 30, (3, 9), generator=g)
    tgt = torch.randint(4, 25, (3, 7), generator=g)
    src[1, 6:] = PAD
    src[2, 4:] = PAD
    tgt[0, 5:] = PAD
    tgt[2, 3:] = PAD
    return src, tgt


def reference(tr, es, et, gen, src, tgt):
    d = es.embedding_dim
    pe = sinusoidal_encoding(64, d)
    e_s = es(src) * math.sqrt(d) + pe[: src.shape[1]]
    e_t = et(tgt) * math.sqrt(d) + pe[: tgt.shape[1]]
    causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = tr(e_s, e_t, tgt_mask=causal, src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt == PAD,
                 memory_key_padding_mask=src == PAD, tgt_is_causal=True)
    return gen(out)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post", "pre"])
@pytest.mark.parametrize("size", SIZES, ids=["small", "wider"])
def test_output_and_attention_equal_pytorch(size, norm_first):
    tr, es, et, gen = build(size, norm_first, seed=len(str(size)) + norm_first)
    model = import_torch_transformer(tr, es, et, gen, pad_id=PAD, max_len=64).eval()
    assert model.config.norm_placement == ("pre" if norm_first else "post")
    src, tgt = batch()
    with torch.no_grad():
        ref = reference(tr, es, et, gen, src, tgt)
        rec = Recorder(batch_index=None)
        ours = model(src, tgt, rec)
    real = tgt != PAD
    assert torch.allclose(ours[real], ref[real], atol=1e-5, rtol=0), (ours[real] - ref[real]).abs().max()
    trace = rec.trace()
    causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
    checked = 0
    with torch.no_grad():
        for i, layer in enumerate(tr.encoder.layers):
            x = torch.from_numpy(trace[f"encoder.layers.{i}.self_attn.input"].copy())
            _, w = layer.self_attn(x, x, x, key_padding_mask=src == PAD, need_weights=True, average_attn_weights=False)
            assert torch.allclose(torch.from_numpy(trace[f"encoder.layers.{i}.self_attn.weights"].copy()), w, atol=1e-6)
            checked += 1
        for i, layer in enumerate(tr.decoder.layers):
            x = torch.from_numpy(trace[f"decoder.layers.{i}.self_attn.input"].copy())
            _, w = layer.self_attn(x, x, x, attn_mask=causal, key_padding_mask=tgt == PAD, need_weights=True,
                                   average_attn_weights=False)
            assert torch.allclose(torch.from_numpy(trace[f"decoder.layers.{i}.self_attn.weights"].copy()), w, atol=1e-6)
            xq = torch.from_numpy(trace[f"decoder.layers.{i}.cross_attn.input"].copy())
            mem = torch.from_numpy(trace[f"decoder.layers.{i}.cross_attn.memory"].copy())
            _, w = layer.multihead_attn(xq, mem, mem, key_padding_mask=src == PAD, need_weights=True,
                                        average_attn_weights=False)
            assert torch.allclose(torch.from_numpy(trace[f"decoder.layers.{i}.cross_attn.weights"].copy()), w, atol=1e-6)
            checked += 2
    assert checked == len(tr.encoder.layers) + 2 * len(tr.decoder.layers)
    # the memory cross-attention reads is PyTorch's encoder output (after its final LayerNorm)
    mem_ref = tr.encoder(es(src) * math.sqrt(es.embedding_dim) + sinusoidal_encoding(64, es.embedding_dim)[:9],
                         src_key_padding_mask=src == PAD)
    ours_mem = torch.from_numpy(trace["encoder.output"].copy())
    assert torch.allclose(ours_mem[src != PAD], mem_ref[src != PAD], atol=1e-5)


def test_import_refuses_gelu_and_seq_first():
    tr = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16,
                        batch_first=True, activation="gelu")
    with pytest.raises(ValueError, match="ReLU"):
        import_torch_transformer(tr, nn.Embedding(10, 8), nn.Embedding(10, 8), nn.Linear(8, 10))
    tr = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    with pytest.raises(ValueError, match="batch_first"):
        import_torch_transformer(tr, nn.Embedding(10, 8), nn.Embedding(10, 8), nn.Linear(8, 10))


def test_attention_function_matches_sdpa():
    """softmax(QK^T/sqrt(d_k) + M)V per head equals torch's scaled_dot_product_attention."""
    from attnviz.core.model.modules import MultiHeadAttention, look_ahead_mask

    torch.manual_seed(0)
    mha = MultiHeadAttention(24, 3).eval()
    mha.trace_name = "a"  # on its own, outside a Transformer's module tree
    x = torch.randn(2, 5, 24)
    rec = Recorder(batch_index=None)
    mask = look_ahead_mask(5)
    out, _ = mha(x, x, mask, rec)
    t = rec.trace()
    q, k, v = (torch.from_numpy(t[f"a.{n}"].copy()) for n in "qkv")
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(torch.from_numpy(t["a.z"].copy()), ref, atol=1e-6)
    assert torch.allclose(torch.from_numpy(t["a.scaled_scores"].copy()), torch.from_numpy(t["a.scores"].copy()) / math.sqrt(8))
