"""The story views' numbers (norm-batch, FFN, residual stream, logit lens), each checked against a
computation made here: forward hooks on the model's own modules, or plain numpy."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from norm_passes import inputs_of, padded, training_copy

from attnviz.core.analysis.ffn import ffn_data_for, off_label, off_share, top_units
from attnviz.core.analysis.logit_lens import first_stable_layer, lens_logits, logit_lens_for
from attnviz.core.analysis.norm_batch import (
    NormBatch,
    NormBatchBuilder,
    TrainingPassBuilder,
    accuracy_gap,
    batch_rows,
    batch_statistics,
    norm_batch_builder,
    norm_batch_for,
)
from attnviz.core.analysis.residual import residual_data_for
from attnviz.core.bundle import Bundle
from attnviz.core.data import corpora as D
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.model.modules import MaskedBatchNorm

from tiny_models import random_model, tokenizers

SRC = "我喜欢吃苹果。"


def bundle(norm="layer", placement="pre", **kw) -> Bundle:
    src, tgt = tokenizers()
    return Bundle(random_model(norm, placement, **kw), src, tgt, {})


def decoded(b: Bundle, steps: int = 4) -> DecodingSession:
    s = DecodingSession.from_bundle(b, SRC, max_len=12)
    for _ in range(steps):
        if not s.finished:
            s.step()
    return s


# -- 4. LN vs BN on a real batch ------------------------------------------------------------------------
@pytest.mark.parametrize("site", ["encoder.layers.0.norm1", "encoder.layers.1.norm2", "decoder.layers.1.norm3", "decoder.final_norm"])
def test_batch_norm_statistics_with_and_without_pad(site):
    b = bundle("batch")
    s = decoded(b)
    nb = norm_batch_for(b, s.src_ids, s.input_ids)
    assert isinstance(nb, NormBatch) and nb.norm == "batch"
    assert len(nb.src_pieces) >= 3 and len({r.count("PAD") for r in nb.src_pieces}) > 1  # several lengths, PAD visible
    got = nb.get(site)
    # the same sentences, padded here, through the model with a hook on the norm
    cfg = b.config
    rows = batch_rows(b, s.src_ids, s.input_ids)
    src_rows, tgt_rows = [list(r[0]) for r in rows], [list(r[1]) for r in rows]
    assert [len(r) for r in src_rows] == [len(row) - row.count("PAD") for row in nb.src_pieces]
    src, tgt = padded(src_rows, cfg.pad_id), padded(tgt_rows, cfg.pad_id)
    trained = training_copy(b.model)  # every BatchNorm with its batch's statistics, as in training
    (x, valid, *_), = inputs_of(trained, site, src, tgt)
    x, valid = x.double().numpy(), valid.numpy()
    real = x[valid]  # [tokens, d]: PAD left out
    np.testing.assert_allclose(got.without_pad().mean, real.mean(0), atol=1e-5)
    np.testing.assert_allclose(got.without_pad().var, real.var(0), atol=1e-5)
    everything = x.reshape(-1, x.shape[-1])
    np.testing.assert_allclose(got.with_pad().mean, everything.mean(0), atol=1e-5)
    assert got.without_pad().n == int(valid.sum()) < everything.shape[0]
    assert not np.allclose(got.with_pad().mean, got.without_pad().mean, atol=1e-4)  # PAD moves the statistics
    module = b.model.get_submodule(site)
    np.testing.assert_allclose(got.running.mean, module.running_mean.numpy(), atol=1e-7)
    np.testing.assert_allclose(got.running.var, module.running_var.numpy(), atol=1e-7)
    # batch size 1: the first sentence alone, a training-mode pass of its own
    (x1, _v1, *_), = inputs_of(trained, site, src[:1, : len(src_rows[0])], tgt[:1, : len(tgt_rows[0])])
    np.testing.assert_allclose(got.batch_size_one().mean, x1[0].double().numpy().mean(0), atol=1e-5)


@pytest.mark.parametrize("norm", ["batch", "layer"])
def test_a_builder_kept_from_step_to_step_gives_the_whole_batch_of_each_step(norm):
    """One builder over every step of a sentence (its target outgrowing the other sentences', so
    their part is redone): each step's batch equals the whole padded batch through the model (in
    training mode, dropout off: the same for a LayerNorm model as its evaluation pass)."""
    b = bundle(norm)
    trained = training_copy(b.model)
    cfg = b.config
    s = decoded(b, steps=0)
    builder = norm_batch_builder(b)
    assert isinstance(builder, TrainingPassBuilder if norm == "batch" else NormBatchBuilder)
    longest = max(len(r[1]) for r in batch_rows(b, s.src_ids, s.input_ids)[1:])
    target = [cfg.bos_id, *([5, 6, 7] * longest)][: longest + 3]
    sites = ("encoder.layers.1.norm2", "decoder.layers.0.norm1", "decoder.final_norm")
    for n in range(1, len(target) + 1):
        got = builder.build(s.src_ids, target[:n])
        rows = batch_rows(b, s.src_ids, target[:n])
        src, tgt = padded([list(r[0]) for r in rows], cfg.pad_id), padded([list(r[1]) for r in rows], cfg.pad_id)
        for site in sites:
            (x, valid, *_), = inputs_of(trained, site, src, tgt)
            np.testing.assert_allclose(got.get(site).x, x.numpy(), atol=1e-5)  # PAD positions included
            np.testing.assert_array_equal(got.get(site).valid, valid.numpy())
        (x1, *_), = inputs_of(trained, "decoder.layers.0.norm1", src[:1, : len(rows[0][0])], tgt[:1, :n])
        np.testing.assert_allclose(got.get("decoder.layers.0.norm1").alone, x1[0].numpy(), atol=1e-5)


def test_a_batch_norm_batch_comes_from_a_training_mode_pass_and_leaves_the_model_alone():
    """Deep sites see inputs normalized with batch statistics upstream, not the evaluation pass's;
    the shared model keeps its mode, its running statistics and its outputs."""
    b = bundle("batch")
    s = decoded(b)
    state = {k: v.clone() for k, v in b.model.state_dict().items()}
    nb = norm_batch_for(b, s.src_ids, s.input_ids)
    assert nb.batch_statistics and not b.model.training
    for k, v in b.model.state_dict().items():
        torch.testing.assert_close(v, state[k], rtol=0, atol=0)
    rows = batch_rows(b, s.src_ids, s.input_ids)
    src, tgt = padded([list(r[0]) for r in rows], b.config.pad_id), padded([list(r[1]) for r in rows], b.config.pad_id)
    first = nb.get("encoder.layers.0.norm1")  # the first norm sees the embeddings: no norm upstream
    (x0, *_), = inputs_of(b.model, "encoder.layers.0.norm1", src, tgt)
    np.testing.assert_allclose(first.x, x0.numpy(), atol=1e-6)
    deep = nb.get("decoder.layers.1.norm1")
    (x_eval, valid, *_), = inputs_of(b.model, "decoder.layers.1.norm1", src, tgt)  # evaluation: running statistics upstream
    shift = np.abs(deep.without_pad().mean - x_eval.double().numpy()[valid.numpy()].mean(0)).mean()
    assert shift > 1e-2, shift


def test_layer_norm_statistics_do_not_depend_on_the_batch():
    b = bundle("layer", "post")
    module = b.model.get_submodule("encoder.layers.1.norm1")
    with torch.no_grad():  # a learned γ, β of their own
        module.weight.copy_(torch.linspace(0.5, 2.5, module.weight.numel()))
        module.bias.copy_(torch.linspace(-0.3, 0.3, module.bias.numel()))
    s = decoded(b)
    nb = norm_batch_for(b, s.src_ids, s.input_ids)
    site = nb.get("encoder.layers.1.norm1")
    assert site.running is None
    n = int(site.valid[0].sum())
    stages = site.layer_norm_stages(site.x[0, :n])
    alone = site.layer_norm_stages(site.alone)
    np.testing.assert_allclose(stages["before"][1], alone["before"][1], atol=1e-5)  # same σ alone and in the batch
    x = site.x[0, :n].astype(np.float64)
    np.testing.assert_allclose(stages["before"][0], x.mean(-1), atol=1e-6)
    np.testing.assert_allclose(stages["normalized"][0], 0.0, atol=1e-6)
    np.testing.assert_allclose(stages["normalized"][1], 1.0, atol=1e-3)  # std 1 (ε aside)
    with torch.no_grad():
        after = F.layer_norm(torch.tensor(x), (x.shape[-1],), module.weight.double(), module.bias.double(), module.eps).numpy()
    np.testing.assert_allclose(stages["after γ, β"][1], after.std(-1), atol=1e-5)
    assert abs(stages["after γ, β"][1].mean() - 1.0) > 0.1  # γ, β change the std


def test_batch_statistics_are_the_training_normalization_and_leave_the_model_alone():
    b = bundle("batch")
    model = b.model
    src = torch.randint(4, b.config.src_vocab_size, (3, 7))
    src[0, 5:] = b.config.pad_id
    tgt = torch.randint(4, b.config.tgt_vocab_size, (3, 5))
    tgt[:, 0] = b.config.bos_id
    with torch.no_grad():
        before = model(src, tgt)
        # reference: the BatchNorms in training mode (momentum 0: running statistics unchanged), dropout off
        ref_model = copy.deepcopy(model)
        for m in ref_model.modules():
            if isinstance(m, MaskedBatchNorm):
                m.train()
                m.momentum = 0.0
        reference = ref_model(src, tgt)
        got = model(src, tgt, batch_statistics())
        after = model(src, tgt)
    torch.testing.assert_close(got, reference, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(got, before, atol=1e-3)
    torch.testing.assert_close(after, before)  # nothing stays on the model
    assert not model.training


def test_accuracy_gap_counts_tokens_like_teacher_forcing():
    b = bundle("batch")
    src_tok, tgt_tok = tokenizers()
    pairs = [D.Pair(f"p{i}", zh, en) for i, (zh, en) in enumerate(zip(["我是学生。", "他去学校了。", "今天天气很好。", "我喜欢吃苹果。"],
                                                                       ["I am a student.", "He went to school.", "The weather is nice today.", "I like eating apples."]))]
    examples = D.encode_pairs(pairs, src_tok, tgt_tok)
    steps = []
    gap = accuracy_gap(b.model, examples, batch_tokens=40, progress=lambda done, total: steps.append((done, total)))
    assert steps and steps[-1][0] == steps[-1][1] - 1
    cfg = b.config
    batch = D.collate(examples, cfg.pad_id, cfg.bos_id, cfg.eos_id)
    counted = batch.labels != cfg.pad_id

    def accuracy(logits):
        return float(((logits.argmax(-1) == batch.labels) & counted).sum() / counted.sum())

    with torch.no_grad():
        running = accuracy(b.model(batch.src, batch.tgt_in))
        singles = []
        for e in examples:
            one = D.collate([e], cfg.pad_id, cfg.bos_id, cfg.eos_id)
            singles.append(((b.model(one.src, one.tgt_in, batch_statistics()).argmax(-1) == one.labels) & (one.labels != cfg.pad_id)).sum())
    assert gap.tokens == int(counted.sum()) and gap.pairs == len(examples)
    assert gap.running == pytest.approx(running)
    assert gap.single == pytest.approx(float(sum(singles)) / int(counted.sum()))
    assert accuracy_gap(b.model, examples, should_stop=lambda: True) is None


# -- 5. FFN ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_ffn_sparsity_counted_from_w1_b1(activation):
    b = bundle("layer", "post", activation=activation)
    s = decoded(b)
    data = ffn_data_for(s, b.config)
    src = torch.tensor([s.src_ids])
    tgt = torch.tensor([s.input_ids])
    for stack in ("encoder", "decoder"):
        for i in range(2):
            ffn = b.model.get_submodule(f"{stack}.layers.{i}.ffn")
            (x, *_), = inputs_of(b.model, f"{stack}.layers.{i}.ffn", src, tgt)
            with torch.no_grad():
                pre = (x[0].double() @ ffn.linear1.weight.double().T + ffn.linear1.bias.double()).numpy()  # x W1 + b1
            if activation == "relu":
                expected = float(np.mean(np.maximum(pre, 0.0) == 0.0))
            else:
                expected = float(np.mean(F.gelu(torch.tensor(pre)).numpy() <= 0.0))
            assert data.off_shares(stack)[i] == pytest.approx(expected, abs=1e-6)
            layer = data.get(stack, i)
            row = layer.hidden[1]
            units, values = top_units(row, 5)
            assert list(units) == list(np.argsort(-row)[:5]) and values[0] == pytest.approx(row.max())
    assert ("share of exact zeros" in off_label(activation)) == (activation == "relu")
    assert ("≤ 0" in off_label(activation)) == (activation != "relu")


def test_ffn_sparsity_of_a_hand_made_matrix():
    h = np.array([[0.0, 1.0, 0.0, 2.0], [0.0, 0.0, -0.5, 3.0]])
    assert off_share(h, "relu") == pytest.approx(4 / 8)
    assert off_share(h, "gelu") == pytest.approx(5 / 8)


# -- 6. residual stream ------------------------------------------------------------------------------------
@pytest.mark.parametrize("placement", ["pre", "post"])
def test_residual_norms_from_a_manual_pass(placement):
    b = bundle("layer", placement)
    s = decoded(b)
    stacks = {st.stack: st for st in residual_data_for(s, b.config)}
    src, tgt = torch.tensor([s.src_ids]), torch.tensor([s.input_ids])
    model = b.model
    for stack, subs in (("encoder", ("self_attn", "ffn")), ("decoder", ("self_attn", "cross_attn", "ffn"))):
        outs, added = {}, {}

        def keep(store, key, first=False):
            def hook(module, args, out):  # returns None: the output is left as it is
                store[key] = out[0] if first or isinstance(out, tuple) else out
            return hook

        handles = [model.get_submodule(f"{stack}.embed").register_forward_hook(keep(outs, "embed"))]
        for i in range(2):
            for j, sub in enumerate(subs, 1):
                handles.append(model.get_submodule(f"{stack}.layers.{i}.residual{j}").register_forward_hook(keep(outs, (i, j), True)))
                handles.append(model.get_submodule(f"{stack}.layers.{i}.{sub}").register_forward_hook(keep(added, (i, j))))
        try:
            with torch.no_grad():
                model(src, tgt)
        finally:
            for h in handles:
                h.remove()
        expected_stream = [outs["embed"][0].norm(dim=-1).mean()] + [outs[(i, j)][0].norm(dim=-1).mean() for i in range(2) for j in range(1, len(subs) + 1)]
        expected_added = [added[(i, j)][0].norm(dim=-1).mean() for i in range(2) for j in range(1, len(subs) + 1)]
        np.testing.assert_allclose(stacks[stack].mean_stream(), np.array(expected_stream, np.float64), rtol=1e-5)
        np.testing.assert_allclose(stacks[stack].mean_added(), np.array(expected_added, np.float64), rtol=1e-4)
        assert len(stacks[stack].labels()) == 1 + 2 * len(subs)


# -- 7. logit lens -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm,placement", [("layer", "pre"), ("layer", "post"), ("batch", "pre")])
def test_logit_lens_of_the_last_layer_is_the_model(norm, placement):
    b = bundle(norm, placement, final_norm=placement == "pre")
    s = decoded(b, steps=5)
    lens = logit_lens_for(s, b.model, b.tgt_tokenizer, k=3)
    with torch.no_grad():
        logits = b.model(torch.tensor([s.src_ids]), torch.tensor([s.input_ids]))[0].double()
    probs = torch.softmax(logits, -1).numpy()
    assert lens.n_layers == 2 and lens.top_ids.shape == (2, len(s.input_ids), 3)
    np.testing.assert_array_equal(lens.top_ids[-1, :, 0], probs.argmax(-1))
    np.testing.assert_allclose(lens.top_probs[-1, :, 0], probs.max(-1), atol=1e-5)
    # the last decoder layer's output, caught by a hook, through the lens: the model's logits
    seen = []
    last = b.model.decoder.layers[-1]
    handle = last.register_forward_hook(lambda m, a, o: seen.append(o[0]))
    try:
        with torch.no_grad():
            b.model(torch.tensor([s.src_ids]), torch.tensor([s.input_ids]))
    finally:
        handle.remove()
    np.testing.assert_allclose(lens_logits(b.model, seen[0].numpy()[None])[0, 0], logits.numpy(), atol=1e-5)
    assert all(0 <= f < 2 for f in lens.first_layer)


def test_first_stable_layer():
    top1 = np.array([[5, 1, 7, 2], [5, 3, 7, 9], [4, 3, 7, 2], [5, 3, 7, 2]])  # [layer, position]
    np.testing.assert_array_equal(first_stable_layer(top1), [3, 1, 0, 2])
