"""Masks, padding, positional encoding, BatchNorm statistics and the KV cache."""

import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from attnviz.core import Recorder, Transformer, TransformerConfig, look_ahead_mask, sinusoidal_encoding
from attnviz.core.model.modules import MaskedBatchNorm


def make(norm="layer", placement="post", seed=0, **kw):
    torch.manual_seed(seed)
    cfg = TransformerConfig(src_vocab_size=40, tgt_vocab_size=35, d_model=32, n_heads=4, n_encoder_layers=2,
                            n_decoder_layers=2, d_ff=64, dropout=0.1, max_len=64, norm=norm, norm_placement=placement, **kw)
    model = Transformer(cfg)
    if norm == "batch":  # give the running statistics realistic values
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(torch.randint(4, 40, (4, 8)), torch.randint(4, 35, (4, 6)))
    return model.eval()


CONFIGS = [("layer", "post"), ("layer", "pre"), ("batch", "post"), ("batch", "pre")]


def padded_ids(vocab: int, length: int, real: int) -> torch.Tensor:
    """Two rows of ``length`` random ids below ``vocab`` (none special), the second padded after its first ``real``."""
    ids = torch.randint(4, vocab, (2, length))
    ids[1, real:] = 0
    return ids


@pytest.mark.parametrize("norm,placement", CONFIGS)
def test_changing_a_target_token_never_changes_earlier_positions(norm, placement):
    model = make(norm, placement)
    src = torch.randint(4, 40, (1, 8))
    tgt = torch.randint(4, 35, (1, 10))
    with torch.no_grad():
        base = model(src, tgt)
        for t in range(1, 10):
            changed = tgt.clone()
            changed[0, t] = 4 + (changed[0, t] - 3) % 31
            out = model(src, changed)
            assert torch.equal(out[0, :t], base[0, :t]) or torch.allclose(out[0, :t], base[0, :t], atol=1e-6)
            assert not torch.allclose(out[0, t:], base[0, t:])


@pytest.mark.parametrize("norm,placement", CONFIGS)
def test_weights_upper_triangle_exactly_zero_and_rows_sum_to_one(norm, placement):
    model = make(norm, placement)
    src, tgt = padded_ids(40, 7, 5), padded_ids(35, 6, 4)
    with torch.no_grad():
        _, trace = model.run_with_trace(src, tgt, names=["*.weights"], batch_index=None)
    assert len(trace) == 2 + 2 * 2
    for name, w in trace.items():
        assert np.allclose(w.sum(-1), 1.0, atol=1e-6), name
        if ".self_attn" in name and name.startswith("decoder"):
            upper = np.triu(np.ones(w.shape[-2:], bool), k=1)
            assert (w[..., upper] == 0.0).all(), name
    # padded keys get exactly zero weight
    assert (trace["encoder.layers.0.self_attn.weights"][1, :, :, 5:] == 0).all()
    assert (trace["decoder.layers.1.cross_attn.weights"][1, :, :, 5:] == 0).all()


def test_look_ahead_mask_form():
    m = look_ahead_mask(4)
    assert (m[np.tril_indices(4)] == 0).all()
    assert torch.isinf(m[np.triu_indices(4, 1)]).all() and (m[np.triu_indices(4, 1)] < 0).all()
    step = look_ahead_mask(1, offset=3)
    assert step.shape == (1, 4) and (step == 0).all()


@pytest.mark.parametrize("norm,placement", CONFIGS)
def test_source_padding_changes_no_real_output(norm, placement):
    model = make(norm, placement)
    src = torch.randint(4, 40, (1, 6))
    tgt = torch.randint(4, 35, (1, 5))
    padded = torch.cat([src, torch.full((1, 4), model.config.pad_id)], 1)
    with torch.no_grad():
        a = model(src, tgt)
        b = model(padded, tgt)
        # and inside a batch with a longer neighbour
        other = torch.randint(4, 40, (1, 10))
        c = model(torch.cat([padded, other]), torch.cat([tgt, tgt]))[:1]
    assert torch.allclose(a, b, atol=1e-5)
    assert torch.allclose(a, c, atol=1e-5)


def test_batchnorm_statistics_ignore_padding():
    torch.manual_seed(1)
    bn = MaskedBatchNorm(8)
    ref = torch.nn.BatchNorm1d(8)
    x = torch.randn(3, 5, 8)
    valid = torch.ones(3, 5, dtype=torch.bool)
    valid[0, 3:] = False
    valid[2, 1:] = False
    x_garbage = x.clone()
    x_garbage[~valid] = 1e6  # padding values must not matter
    bn.train()
    ref.train()
    y = bn(x_garbage, valid)
    y_ref = ref(x[valid])
    assert torch.allclose(y[valid], y_ref, atol=1e-5)
    assert torch.allclose(bn.running_mean, ref.running_mean, atol=1e-6)
    assert torch.allclose(bn.running_var, ref.running_var, atol=1e-5)
    bn.eval()
    ref.eval()
    assert torch.allclose(bn(x, valid)[valid], ref(x[valid]), atol=1e-5)


def test_batchnorm_model_training_ignores_source_padding():
    """Two training-mode forwards that differ only in how much padding there is give the same loss."""
    model = make("batch", "post")
    model.train()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    src = torch.randint(4, 40, (2, 6))
    tgt = torch.randint(4, 35, (2, 5))
    a = model(src, tgt)
    b = model(torch.cat([src, torch.full((2, 3), model.config.pad_id)], 1), tgt)
    assert torch.allclose(a, b, atol=1e-5)


def test_positional_encoding_closed_form():
    d = 16
    pe = sinusoidal_encoding(50, d).double()
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / d)), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / d)), abs=1e-6)
    model = make()
    with torch.no_grad():
        _, tr = model.run_with_trace(torch.randint(4, 40, (1, 5)), torch.randint(4, 35, (1, 3)), names=["*.embed.*"])
    assert np.allclose(tr["encoder.embed.positional"], sinusoidal_encoding(64, 32)[:5].numpy())
    assert np.allclose(tr["encoder.embed.sum"], tr["encoder.embed.tokens"] + tr["encoder.embed.positional"])


@pytest.mark.parametrize("norm,placement", CONFIGS)
def test_kv_cached_steps_equal_recompute_over_30_steps(norm, placement):
    model = make(norm, placement)
    src = padded_ids(40, 9, 7)
    tokens = torch.randint(4, 35, (2, 30))
    tokens[:, 0] = model.config.bos_id
    with torch.no_grad():
        full = model(src, tokens)  # [2, 30, V]
        cache = model.start_decoding(model.encode(src))
        for t in range(30):
            rec = Recorder(names=["decoder.layers.1.self_attn.weights"], batch_index=None)
            logits, cache = model.decode_step(tokens[:, t], cache, rec)
            assert torch.allclose(logits, full[:, t], atol=1e-5), (t, (logits - full[:, t]).abs().max())
            w = rec.trace()["decoder.layers.1.self_attn.weights"]
            assert w.shape == (2, 4, 1, t + 1)
        _, tr = model.run_with_trace(src, tokens, names=["decoder.layers.1.self_attn.weights"], batch_index=None)
    assert np.allclose(w[:, :, 0], tr["decoder.layers.1.self_attn.weights"][:, :, -1], atol=1e-6)


def test_decode_beyond_max_len_is_a_clear_error():
    model = make()
    with pytest.raises(ValueError, match="max_len"):
        model(torch.randint(4, 40, (1, 70)), torch.randint(4, 35, (1, 3)))


def test_core_imports_without_qt():
    code = "import sys, attnviz.core, attnviz.core.model.transformer; bad=[m for m in sys.modules if m.startswith(('PySide6','pyqtgraph'))]; print(bad); sys.exit(1 if bad else 0)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_capture_off_records_nothing_and_matches_capture_on():
    model = make()
    src, tgt = torch.randint(4, 40, (1, 6)), torch.randint(4, 35, (1, 4))
    with torch.no_grad():
        a = model(src, tgt)
        b, tr = model.run_with_trace(src, tgt)
    assert torch.equal(a, b)
    assert len(tr) > 100
