"""Direct logit attribution: on every bundled model the terms sum to the logit less the output
bias; each term is the piece written out here, through the final norm with its scale held (pre-norm),
through every later norm (post-norm), or through BatchNorm's running statistics (no scale held);
the command's JSON and its one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from family_checks import refused_cli, refused_on_tiny, run_cli

from attnviz.core.analysis.attribution import AttributionError, make_question
from attnviz.core.analysis.logit_attribution import attribution_of, logit_attribution
from attnviz.core.bundle import Bundle, load_bundle
from attnviz.core.decoding.result import prepare_source

from tiny_models import random_model, tokenizers

MODELS = Path(__file__).resolve().parents[2] / "models"
BUNDLED = ("zh-en", "zh-en-small", "zh-en-small-guided", "zh-en-small-postnorm", "zh-en-small-batchnorm", "hsk-only-zh-en")
SOURCE, TARGET = "我喜欢吃苹果。", "I like eating apples."


def tiny(placement: str, norm: str = "layer") -> Bundle:
    src, tgt = tokenizers()
    return Bundle(random_model(norm, placement, seed=3), src, tgt, {"name": f"tiny-{placement}-{norm}"})


def traced(b: Bundle, r):
    """The teacher-forced pass of ``r``'s question, every name recorded; (trace, row)."""
    q = r.question
    with torch.inference_mode():
        _, trace = b.model.run_with_trace(torch.tensor([q.source.ids]), torch.tensor([q.input_ids]))
    return trace, q.position


def readout(b: Bundle, r) -> np.ndarray:
    w = b.model.generator.weight.detach().double().numpy()
    return w[r.token_id] - (0.0 if r.question.contrast_id is None else w[r.question.contrast_id])


def pieces_by_hand(b: Bundle, trace, t: int) -> list[np.ndarray]:
    """embed, then per decoder layer: each self head's Z_h W^O_h, the W^O bias, the same for cross, the FFN."""
    out = [trace["decoder.embed.sum"][t].astype(np.float64)]
    for i, layer in enumerate(b.model.decoder.layers):
        for name, attn in (("self_attn", layer.self_attn), ("cross_attn", layer.cross_attn)):
            z = trace[f"decoder.layers.{i}.{name}.z"][:, t].astype(np.float64)  # [h, dk]
            w = attn.w_o.weight.detach().double().numpy()
            dk = z.shape[1]
            out += [z[h] @ w[:, h * dk:(h + 1) * dk].T for h in range(z.shape[0])]
            out.append(attn.w_o.bias.detach().double().numpy())
        out.append(trace[f"decoder.layers.{i}.ffn.output"][t].astype(np.float64))
    return out


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_model_s_terms_sum_to_the_logit_less_the_output_bias(name):
    b = load_bundle(MODELS / name)
    config = json.loads((MODELS / name / "config.json").read_text())
    for kw in ({}, {"target": TARGET, "position": 2, "contrast": "the"}):
        r = logit_attribution(b, SOURCE, **kw)
        total = float(r.values.sum())
        assert abs(r.logit - r.output_bias - total) < 1e-4 and r.exact
        assert len(r.terms) == len(r.values) and r.placement == config["norm_placement"]
    expected_held = 0 if config["norm"] == "batch" else 3 * config["n_decoder_layers"] if config["norm_placement"] == "post" else 1
    assert r.frozen_scales == expected_held and r.notes[0].startswith("exact")


def test_pre_norm_terms_are_the_pieces_through_the_held_final_layer_norm():
    """TransformerLens's apply_ln_to_stack: (piece - its mean) / the pass's std x gain, then the output row."""
    b = tiny("pre")
    r = logit_attribution(b, SOURCE, TARGET, position=3)
    trace, t = traced(b, r)
    norm = b.model.decoder.final_norm
    std = np.sqrt(trace["decoder.final_norm.var"][t] + norm.eps)
    gain = norm.weight.detach().double().numpy()
    u = readout(b, r)
    by_hand = [((p - p.mean()) / std * gain) @ u for p in pieces_by_hand(b, trace, t)] + [norm.bias.detach().double().numpy() @ u]
    np.testing.assert_allclose(r.values, by_hand, atol=1e-5)
    assert [term.label for term in r.terms[:6]] == ["embed", "decoder:1:1", "decoder:1:2", "decoder:1:3", "decoder:1:4", "decoder:1:bias"]
    assert r.terms[-1].label == "final_norm" and r.frozen_scales == 1
    with torch.inference_mode():
        logits = b.model(torch.tensor([r.question.source.ids]), torch.tensor([r.question.input_ids]))[0, t].double()
    assert r.logit == pytest.approx(float(logits[r.token_id]), abs=1e-5)
    np.testing.assert_allclose(r.heads("cross"), np.array([[v for term, v in zip(r.terms, r.values) if term.group == "head" and term.kind == "cross"
                                                             and term.layer == layer] for layer in range(2)]))


def test_post_norm_terms_go_through_every_later_norm_held_at_the_pass():
    """The last FFN passes one norm (norm3 of the last layer), the embedding all six; both written out here."""
    b = tiny("post")
    r = logit_attribution(b, SOURCE, TARGET, position=2)
    trace, t = traced(b, r)
    u = readout(b, r)
    assert r.exact and r.frozen_scales == 6

    def through(v: np.ndarray, prefix: str) -> np.ndarray:
        norm = b.model.get_submodule(prefix)
        return (v - v.mean()) / np.sqrt(trace[f"{prefix}.var"][t] + norm.eps) * norm.weight.detach().double().numpy()

    last_ffn = through(trace["decoder.layers.1.ffn.output"][t].astype(np.float64), "decoder.layers.1.norm3") @ u
    assert dict(zip((term.label for term in r.terms), r.values))["ffn:2"] == pytest.approx(last_ffn, abs=1e-6)
    e = trace["decoder.embed.sum"][t].astype(np.float64)
    for layer in range(2):
        for j in (1, 2, 3):
            e = through(e, f"decoder.layers.{layer}.norm{j}")
    assert r.values[0] == pytest.approx(e @ u, abs=1e-6)
    assert sum(term.group == "norm_bias" for term in r.terms) == 6


def test_batch_norm_terms_are_linear_with_the_running_statistics():
    """In evaluation BatchNorm is a fixed affine map: a piece's term is piece x gain / sqrt(running var + eps) . u
    (no scale held), and the running mean is in the norm's term."""
    b = tiny("pre", "batch")
    r = logit_attribution(b, SOURCE, TARGET, position=1)
    trace, t = traced(b, r)
    norm = b.model.decoder.final_norm
    scale = norm.weight.detach().double().numpy() / np.sqrt(norm.running_var.double().numpy() + norm.eps)
    u = readout(b, r)
    by_hand = [(p * scale) @ u for p in pieces_by_hand(b, trace, t)]
    by_hand.append((norm.bias.detach().double().numpy() - norm.running_mean.double().numpy() * scale) @ u)
    np.testing.assert_allclose(r.values, by_hand, atol=1e-5)
    assert r.exact and r.frozen_scales == 0 and r.notes[1].startswith("linear")


def test_a_contrast_and_a_chosen_token_split_the_difference_of_their_logits():
    b = tiny("pre")
    pieces = b.tgt_tokenizer.pieces(b.tgt_tokenizer.encode(TARGET))
    token, contrast = pieces[2], pieces[0]
    r = logit_attribution(b, SOURCE, TARGET, position=1, token=token, contrast=contrast)
    q = r.question
    with torch.inference_mode():
        logits = b.model(torch.tensor([q.source.ids]), torch.tensor([q.input_ids]))[0, 1].double()
    wid, cid = b.tgt_tokenizer.piece_to_id(token), b.tgt_tokenizer.piece_to_id(contrast)
    assert r.logit == pytest.approx(float(logits[wid] - logits[cid]), abs=1e-5) and r.exact
    assert r.token_id == wid and r.quantity == f"logit({token}) - logit({contrast})"
    with pytest.raises(AttributionError, match="attributed token itself"):
        logit_attribution(b, SOURCE, TARGET, position=1, token=token, contrast=token)
    default = logit_attribution(b, SOURCE, TARGET)
    assert default.position == len(default.question.output_ids) - 1 and default.token_piece == "EOS"


def test_attribution_of_a_question_equals_the_bundle_call():
    b = tiny("pre")
    r = logit_attribution(b, SOURCE, TARGET, position=2)
    q = make_question(prepare_source(b.src_tokenizer, SOURCE, b.config), r.question.output_ids, b.tgt_tokenizer, b.config, 2)
    np.testing.assert_allclose(attribution_of(b.model, q).values, r.values)


def test_the_command_prints_json_and_a_bad_position_in_one_line(capsys):
    code, out, _ = run_cli(capsys, "logit-attribution", "--src", "我爱你。", "--tgt", "I love you.", "--position", "2", "--top", "5", "--json")
    data = json.loads(out)
    assert code == 0 and data["position"] == 2 and data["token"] == "▁love" and len(data["terms"]) == 5 and data["exact"]
    assert abs(data["logit"] - data["output_bias"] - data["sum_of_terms"]) < 1e-4
    _, err = refused_cli(capsys, "logit-attribution", "--src", "我爱你。", "--tgt", "I love you.", "--position", "9")
    assert "no output position 9" in err


@pytest.mark.slow
def test_an_encoder_only_model_is_refused_in_one_line_and_a_decoder_only_one_is_exact(capsys, tmp_path):
    err = refused_on_tiny(capsys, tmp_path, "bert", "logit-attribution", "--src", "the cat")
    assert "encoder-only" in err and "no decoder" in err
    from tiny_families import build_gpt2

    r = logit_attribution(load_bundle(build_gpt2(tmp_path / "gpt2")), "the cat sat", max_len=4)
    assert r.exact and r.heads("cross").size == 0
