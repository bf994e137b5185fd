"""Source and target contributions (ALTI+): one layer's contributions written out here from the
model's weights, the rollout against its formula, shares in [0, 1] and rows summing to 1; on the
default model a nonsense target takes less from the source than the reference; the command's JSON
and its one-line refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from family_checks import refused_cli, refused_on_tiny, run_cli

from attnviz.core.analysis.contributions import contributions
from attnviz.core.bundle import Bundle, load_bundle
from attnviz.paths import default_model, models_dir

from tiny_models import random_model, tokenizers

SOURCE, TARGET = "我喜欢吃苹果。", "I like eating apples."


def tiny(placement: str) -> Bundle:
    src, tgt = tokenizers()
    return Bundle(random_model("layer", placement, seed=5), src, tgt, {"name": f"tiny-{placement}"})


def trace_of(b: Bundle, r):
    ids = b.src_tokenizer.encode(SOURCE)
    fed = [b.config.bos_id, *b.tgt_tokenizer.encode(TARGET)]
    assert len(fed) == len(r.output_pieces)
    with torch.inference_mode():
        return b.model.run_with_trace(torch.tensor([ids]), torch.tensor([fed]))[1]


def alti(vectors: list[list[np.ndarray]], y: np.ndarray) -> np.ndarray:
    """c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), each row divided by its sum, in loops."""
    out = np.zeros((len(vectors), len(vectors[0])))
    for i, row in enumerate(vectors):
        for j, t in enumerate(row):
            out[i, j] = max(0.0, np.abs(y[i]).sum() - np.abs(y[i] - t).sum())
        out[i] /= out[i].sum()
    return out


def cross_by_hand(b: Bundle, trace, layer: int, post: bool) -> np.ndarray:
    """Decoder layer ``layer``'s cross-attention: T_i(e_j) = sum_h A_ij (e_j W_V + b_V)_h W^O_h, the residual x_i last."""
    attn = b.model.decoder.layers[layer].cross_attn
    memory = trace["encoder.output"].astype(np.float64)
    a = trace[f"decoder.layers.{layer}.cross_attn.weights"].astype(np.float64)  # [h, t, s]
    w_v, b_v = attn.w_v.weight.detach().double().numpy(), attn.w_v.bias.detach().double().numpy()
    w_o = attn.w_o.weight.detach().double().numpy()
    h, dk = attn.n_heads, attn.d_k
    value = memory @ w_v.T + b_v  # [s, h*dk]
    summed = trace[f"decoder.layers.{layer}.residual2"].astype(np.float64)
    x = summed - trace[f"decoder.layers.{layer}.cross_attn.output"].astype(np.float64)
    norm = b.model.decoder.layers[layer].norm2
    rows = []
    for i in range(a.shape[1]):
        ts = [sum(a[k, i, j] * value[j, k * dk:(k + 1) * dk] @ w_o[:, k * dk:(k + 1) * dk].T for k in range(h)) for j in range(a.shape[2])]
        ts.append(x[i])
        if post:
            std = np.sqrt(trace[f"decoder.layers.{layer}.norm2.var"][i] + norm.eps)
            ts = [(t - t.mean()) / std * norm.weight.detach().double().numpy() for t in ts]
        rows.append(ts)
    y = trace[f"decoder.layers.{layer}.norm2.output"].astype(np.float64) if post else summed
    return alti(rows, y)


def self_by_hand(b: Bundle, trace, stack: str, layer: int) -> np.ndarray:
    """A pre-norm self-attention: T_i(x_j) = sum_h A_ij (LN(x_j) W_V + b_V)_h W^O_h + [i = j] x_i; y_i the residual sum."""
    mod = b.model.get_submodule(f"{stack}.layers.{layer}")
    a = trace[f"{stack}.layers.{layer}.self_attn.weights"].astype(np.float64)
    x = trace[f"{stack}.layers.{layer}.norm1.input"].astype(np.float64)
    normed = trace[f"{stack}.layers.{layer}.norm1.output"].astype(np.float64)
    attn = mod.self_attn
    value = normed @ attn.w_v.weight.detach().double().numpy().T + attn.w_v.bias.detach().double().numpy()
    w_o, dk = attn.w_o.weight.detach().double().numpy(), attn.d_k
    rows = [[sum(a[k, i, j] * value[j, k * dk:(k + 1) * dk] @ w_o[:, k * dk:(k + 1) * dk].T for k in range(attn.n_heads)) + (x[i] if i == j else 0.0)
             for j in range(a.shape[2])] for i in range(a.shape[1])]
    return alti(rows, trace[f"{stack}.layers.{layer}.residual1"].astype(np.float64))


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_one_layer_s_cross_attention_contributions_and_share_are_the_decomposition_by_hand(placement):
    b = tiny(placement)
    r = contributions(b, SOURCE, TARGET)
    trace = trace_of(b, r)
    by_hand = cross_by_hand(b, trace, 0, placement == "post")
    np.testing.assert_allclose(r.cross[0], by_hand, atol=1e-6)
    s = len(r.source_pieces)
    np.testing.assert_allclose(r.layer_source[0], by_hand[:, :s].sum(1), atol=1e-6)
    # after layer 1 the decoder rows hold no source yet but what this cross-attention brings: S E, rows of E summing to 1
    np.testing.assert_allclose(r.rolled_source[0], by_hand[:, :s].sum(1), atol=1e-6)


def test_pre_norm_self_attention_contributions_are_the_decomposition_by_hand():
    b = tiny("pre")
    r = contributions(b, SOURCE, TARGET)
    trace = trace_of(b, r)
    np.testing.assert_allclose(r.encoder[1], self_by_hand(b, trace, "encoder", 1), atol=1e-6)
    decoder = self_by_hand(b, trace, "decoder", 0)
    np.testing.assert_allclose(r.self_attn[0], decoder, atol=1e-6)
    assert np.all(np.triu(r.self_attn[0], 1) == 0)  # no contribution from a later target token


def test_the_rollout_is_alti_plus_and_every_row_sums_to_one():
    b = tiny("post")
    r = contributions(b, SOURCE, TARGET)
    s, t = len(r.source_pieces), len(r.output_pieces)
    e = r.encoder[1] @ r.encoder[0]
    roll = np.concatenate([np.zeros((t, s)), np.eye(t)], 1)
    for layer in range(2):
        roll = r.self_attn[layer] @ roll
        keep = r.cross[layer][:, s:]
        roll = np.concatenate([r.cross[layer][:, :s] @ e + keep * roll[:, :s], keep * roll[:, s:]], 1)
        np.testing.assert_allclose(r.rollout[layer], roll, atol=1e-12)
    np.testing.assert_allclose(r.source_share, roll[:, :s].sum(1), atol=1e-12)
    for m in (r.encoder, r.self_attn, r.cross, r.rollout):
        assert np.all(m >= 0)
        np.testing.assert_allclose(m.sum(-1), 1.0, atol=1e-9)
    assert np.all((r.source_share >= 0) & (r.source_share <= 1))
    np.testing.assert_allclose(r.source_share + r.target_share, 1.0)


def test_a_nonsense_target_takes_less_from_the_source_than_the_reference():
    """On 我爱你。 the reference "I love you." takes more of its prediction from the source than a
    nonsense target, by more than 0.02, on the default model (measured 0.559 against 0.451 on the
    d_model 256 default) and on zh-en-small, whose numbers the README gives and are pinned here
    (0.481 against 0.442); the default's are not, as it may be retrained."""
    shares = {}
    for model in (default_model(), models_dir() / "zh-en-small"):
        b = load_bundle(model)
        shares[model.name] = [contributions(b, "我爱你。", tgt).mean_source_share for tgt in ("I love you.", "banana the ran purple")]
    for name, (reference, nonsense) in shares.items():
        assert nonsense < reference - 0.02, name
    assert shares["zh-en-small"] == pytest.approx([0.4808, 0.4419], abs=2e-3)  # measured; see the command's numbers


def test_the_command_prints_json_and_refuses_a_bad_length(capsys):
    code, out, _ = run_cli(capsys, "contributions", "--src", "我爱你。", "--tgt", "I love you.", "--json")
    data = json.loads(out)
    assert code == 0 and data["target_pieces"][-1] == "EOS" and len(data["source_share"]) == len(data["target_pieces"])
    assert all(0 <= v <= 1 for v in data["source_share"]) and len(data["layer_source"]) == 3
    _, err = refused_cli(capsys, "contributions", "--src", "我爱你。", "--max-len", "0")
    assert "--max-len" in err


@pytest.mark.slow
def test_a_decoder_only_model_has_no_source_share_and_says_why_in_one_line(capsys, tmp_path):
    err = refused_on_tiny(capsys, tmp_path, "gpt2", "contributions", "--src", "the cat")
    assert "no cross-attention" in err and "source share is undefined" in err
