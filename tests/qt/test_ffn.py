"""The FFN view: the hidden activations of the trace and their sparsity; the FFN acting on each
position alone, and the model without it (recomputed here with hooks and a greedy loop written out)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.core.analysis.ffn import FfnForm, ffn_data_for
from attnviz.core.model.config import TransformerConfig
from attnviz.qt.views.ffn import QtFfnView, off_text

from inside_fixtures import session
from story_helpers import click, shown


# -- FFN -------------------------------------------------------------------------------------------------
def test_ffn_view_shows_the_hidden_activations_and_their_sparsity(make_view, qtbot, tmp_path):
    s = session(steps=4)
    view = shown(make_view, QtFfnView, ffn_data_for(s, s.config))
    assert view.objectName() == "ffnView"
    view.select("cross", 1, 2)  # cross-attention's layer: the decoder's FFN
    hidden = s.accumulated("decoder.layers.1.ffn.hidden")
    np.testing.assert_allclose(view.heatmap.matrix(), hidden, atol=1e-6)
    assert view.heatmap.highlight_row() == 2
    assert view.off_share() == pytest.approx(float(np.mean(hidden == 0.0)))
    assert f"{off_text('relu', FfnForm.of(s.config).gate_text)}: {np.mean(hidden == 0.0):.1%}" in view.title.plain_text()  # ReLU: exact zeros
    assert "FFN(x) = max(0, xW₁ + b₁)W₂ + b₂" in view.title.plain_text()  # the paper's model: ReLU, biases
    assert view.gate_heatmap.scene() is None  # a plain FFN has no gate to show
    heights = view.top_bars.opts["height"]
    np.testing.assert_allclose(heights, np.sort(hidden[2])[::-1][: len(heights)], atol=1e-6)
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heatmap.cell_center_in_scene(1, 5))
    assert sig.args == [{"query": 1}] and view.query() == 1
    data = view.figure_data()
    assert data.dims == ("token", "unit") and data.coords["token"] == s.input_pieces
    view.grab().save(str(tmp_path / "story_b_ffn.png"))


def test_ffn_view_of_a_gelu_model_says_what_it_counts(make_view):
    from attnviz.core.bundle import Bundle
    from attnviz.core.decoding.session import DecodingSession

    from tiny_models import random_model, tokenizers

    src, tgt = tokenizers()
    b = Bundle(random_model(activation="gelu"), src, tgt, {})
    s = DecodingSession.from_bundle(b, "我是学生。", max_len=8)
    s.step()
    view = shown(make_view, QtFfnView, ffn_data_for(s, b.config))
    text = view.title.plain_text()
    assert off_text("gelu") in text and off_text("relu", FfnForm.of(b.config).gate_text) not in text  # units ≤ 0, not exact zeros
    assert view.off_share() == pytest.approx(float(np.mean(s.accumulated("encoder.layers.0.ffn.hidden") <= 0)))


@pytest.mark.parametrize("fields,formula", [
    ({}, "FFN(x) = max(0, xW₁ + b₁)W₂ + b₂"),  # the paper's
    ({"activation": "gelu"}, "FFN(x) = GELU(xW₁ + b₁)W₂ + b₂"),  # BART
    ({"activation": "gelu_tanh"}, "FFN(x) = GELU(xW₁ + b₁)W₂ + b₂"),  # GPT-2
    ({"bias": False}, "FFN(x) = max(0, xW₁)W₂"),  # T5 v1.0
    ({"ffn": "gated", "activation": "gelu_tanh", "bias": False}, "FFN(x) = (GELU(xW₁) ⊙ xW_up)W₂"),  # T5 v1.1
    ({"ffn": "gated", "activation": "silu"}, "FFN(x) = (SiLU(xW₁ + b₁) ⊙ (xW_up + b_up))W₂ + b₂"),
])
def test_the_formula_is_the_models_ffn(fields, formula):
    assert FfnForm.of(TransformerConfig(**fields)).formula == formula


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU's tanh approximation, written out (T5 v1.1's gated-gelu)."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


@pytest.mark.slow  # a tiny transformers model built
@pytest.mark.parametrize("stack,layer", [("encoder", 1), ("decoder", 0)])
def test_a_gated_ffn_shows_its_gate_beside_the_hidden_units(loaded, tiny_family, stack, layer):
    """T5 v1.1: FFN(x) = (GELU(xW₁) ⊙ xW_up)W₂; the gate drawn is GELU(xW₁) of the FFN's own input and weights."""
    spec, view, session, ok = loaded("ffn", model=tiny_family("t5-v1.1"), source="the cat sat on the mat")
    assert ok
    view.select(stack, layer, 1)
    model, cur = session.bundle.model, session.current
    path = f"{stack}.layers.{layer}.ffn"
    (x, out), = _calls_of(model, path, torch.tensor([cur.src_ids]), torch.tensor([cur.input_ids]))[0]  # the FFN's input in one full pass
    ffn = model.get_submodule(path)
    x = x[0].double().numpy()  # [token, d_model]
    w1, w_up = ffn.linear1.weight.detach().double().numpy(), ffn.linear_up.weight.detach().double().numpy()
    gate = _gelu_tanh(x @ w1.T)  # [token, d_ff]
    assert ffn.linear1.bias is None and gate.shape == view.gate_heatmap.matrix().shape
    np.testing.assert_allclose(view.gate_heatmap.matrix(), gate, atol=1e-5)
    np.testing.assert_allclose(view.heatmap.matrix(), gate * (x @ w_up.T), atol=1e-5)
    assert view.gate_heatmap.scene() is view.heatmap.scene() is not None and view.gate_heatmap.highlight_row() == 1
    text = view.title.plain_text()
    assert "FFN(x) = (GELU(xW₁) ⊙ xW_up)W₂" in text and "max(0" not in text and "b₂" not in text
    assert off_text("gelu_tanh") in text and view.off_share() == pytest.approx(float(np.mean(gate <= 0.0)), abs=1e-6)
    np.testing.assert_allclose(view.figure_data().extras["gate"], gate, atol=1e-5)


# -- the FFN's role: position-wise, and the model without it ----------------------------------------------
def _calls_of(model, path: str, src, tgt, replace=None):
    """(inputs, output) of each call of module ``path`` in one full pass; ``replace``: its output replaced by that."""
    seen = []

    def hook(module, args, out):
        seen.append((args[0], out))
        return None if replace is None else replace(out)

    handle = model.get_submodule(path).register_forward_hook(hook)
    try:
        with torch.inference_mode():
            logits = model(src, tgt)
    finally:
        handle.remove()
    return seen, logits


def _zeroed(model, path: str | None, src, ids):
    """The next-token distribution after ``ids`` with module ``path``'s output set to 0 (``None``: the model intact)."""
    if path is None:
        with torch.inference_mode():
            logits = model(src, torch.tensor([ids]))
    else:
        _, logits = _calls_of(model, path, src, torch.tensor([ids]), replace=torch.zeros_like)
    return torch.softmax(logits[0, -1].double(), -1).numpy()


def _greedy_without(model, path: str | None, src_ids, max_len):
    """The inference loop written out, with module ``path``'s output 0 (``None``: intact): full passes, argmax, never PAD or SOS."""
    cfg = model.config
    ids = [cfg.bos_id]
    while len(ids) <= max_len:
        probs = _zeroed(model, path, torch.tensor([src_ids]), ids)
        probs[[cfg.pad_id, cfg.bos_id]] = -1.0
        ids.append(int(np.argmax(probs)))
        if ids[-1] == cfg.eos_id:
            break
    return ids


@pytest.mark.parametrize("stack,layer", [("encoder", 1), ("decoder", 0)])
def test_the_ffn_acts_on_each_position_alone(loaded, stack, layer):
    spec, view, session, ok = loaded("ffn")
    assert ok and view.removal() is not None  # the spec's analysis ran (in a worker in the window)
    view.select(stack, layer, 2)
    model, cur = session.bundle.model, session.current
    src, tgt = torch.tensor([cur.src_ids]), torch.tensor([cur.input_ids])
    (x, out), = _calls_of(model, f"{stack}.layers.{layer}.ffn", src, tgt)[0]  # one full pass: every position at once
    ffn = model.get_submodule(f"{stack}.layers.{layer}.ffn")
    w1, b1 = ffn.linear1.weight.detach().double().numpy(), ffn.linear1.bias.detach().double().numpy()
    w2, b2 = ffn.linear2.weight.detach().double().numpy(), ffn.linear2.bias.detach().double().numpy()
    x = x[0].double().numpy()  # [token, d_model]
    alone = np.stack([np.maximum(0.0, xi @ w1.T + b1) @ w2.T + b2 for xi in x])  # FFN(x_i), one position at a time
    np.testing.assert_allclose(alone, out[0].double().numpy(), atol=1e-5)  # = the batched pass's rows
    f = view.current()
    np.testing.assert_allclose(f.alone, alone, atol=1e-5)
    np.testing.assert_allclose(f.output, alone, atol=1e-5)
    assert f.positionwise_error == pytest.approx(np.abs(f.alone - f.output).max()) and f.positionwise_error < 1e-5
    assert f"= {f.positionwise_error:.1e})" in view.title.plain_text()  # FFN(x_i) alone = output row i, and by how much
    u = view.unit()
    assert u == int(np.argmax(np.maximum(0.0, x[2] @ w1.T + b1)))  # the selected token's most active unit
    pre = x @ w1[u] + b1[u]  # one w₁, b₁ at every position
    np.testing.assert_allclose(view.unit_bars.opts["height"], np.maximum(0.0, pre), atol=1e-5)
    np.testing.assert_allclose(view.unit_pre.getData()[1], pre, atol=1e-5)
    view.select(unit=5)
    assert view.unit() == 5 and view.unit_spin.value() == 5
    np.testing.assert_allclose(view.figure_data().extras["unit_pre_activation"], x @ w1[5] + b1[5], atol=1e-5)


def test_the_model_without_each_ffn(loaded):
    spec, view, session, ok = loaded("ffn")
    model, cur = session.bundle.model, session.current
    r = view.removal()
    row = session.current_row()
    assert r.row == row and r.fed == cur.input_pieces[row]
    src, ids = torch.tensor([cur.src_ids]), list(cur.input_ids[: row + 1])
    intact = _zeroed(model, None, src, ids)
    top = int(np.argmax(intact))
    assert r.intact.token_id == top and r.intact.prob == pytest.approx(intact[top], abs=1e-5)
    max_len = min(model.config.max_len, 2 * len(cur.src_ids) + 10)
    tok = session.bundle.tgt_tokenizer
    for stack, layer in (("encoder", 0), ("decoder", 1)):
        key = f"{stack}:{layer}"
        path = f"{stack}.layers.{layer}.ffn"
        probs = _zeroed(model, path, src, ids)
        p = r.removed[key]
        assert p.token_id == int(np.argmax(probs)) and p.prob == pytest.approx(probs.max(), abs=1e-5)
        assert p.intact_prob == pytest.approx(probs[top], abs=1e-5)
        assert r.translations[key] == tok.decode(_greedy_without(model, path, cur.src_ids, max_len))
    assert r.translation == tok.decode(_greedy_without(model, None, cur.src_ids, max_len))
    view.select("decoder", 1)
    text = view.removal_text()  # this layer's FFN removed: its next token and translation
    assert text in view.title.plain_text() and r.translations["decoder:1"] in text and f"{r.removed['decoder:1'].prob:.2f}" in text
    np.testing.assert_allclose(view.removal_bars.opts["height"], [r.removed[k].intact_prob for k in r.removed])
    assert list(r.removed)[-1] == "all" and len(r.removed) == 2 * 2 + 1  # every layer of the tiny model's two stacks, then all


def _default_translation(source: str) -> str:
    """The bundled default's greedy translation of ``source``, decoded here."""
    from attnviz.core.bundle import load_bundle
    from attnviz.core.training.evaluation import greedy_translate
    from attnviz.paths import default_model

    b = load_bundle(default_model())
    return greedy_translate(b.model, b.src_tokenizer, b.tgt_tokenizer, [source])[0]


def test_the_export_writes_the_ffn_role(qapp, tmp_path):
    from attnviz.cli import main as cli_main

    assert cli_main(["export", "--view", "ffn", "--src", "猫吃鱼。", "--kind", "decoder", "--layer", "1",
                     "--format", "npz", "--out", str(tmp_path)]) == 0
    with np.load(next(tmp_path.glob("*.npz"))) as z:
        assert float(z["positionwise_max_abs_diff"]) < 1e-5
        np.testing.assert_allclose(z["ffn_alone"], z["ffn_output"], atol=1e-5)
        assert list(z["removed"]) == ["encoder:0", "encoder:1", "encoder:2", "decoder:0", "decoder:1", "decoder:2", "all"]
        assert str(z["translation"]) == _default_translation("猫吃鱼。")  # data, not UI text
        assert z["removed_translation"][-1] != z["translation"]  # without every FFN the translation falls apart


def test_remove_ffn_refuses_a_layer_the_model_lacks():
    from attnviz.core.analysis.ffn import RemoveFfn
    from attnviz.core.model.interventions import InterventionError

    from inside_fixtures import bundle

    config = bundle().config
    assert RemoveFfn((("decoder", 1),)).check(config).names == ("decoder.layers.1.ffn.output",)
    with pytest.raises(InterventionError, match="no encoder layer 3"):
        RemoveFfn((("encoder", 2),)).check(config)
