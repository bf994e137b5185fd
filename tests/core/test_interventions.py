"""Interventions: taps change the model where the trace records them, per call, and nothing else."""

from __future__ import annotations

import copy
import threading

import pytest
import torch

from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.core.model.interventions import (
    BatchStatistics,
    InterventionError,
    MeanHeads,
    NoPositional,
    NoScaling,
    Patch,
    ScaleHeads,
    UniformHeads,
    ZeroHeads,
    ablation,
    checked,
    parse_heads,
)
from attnviz.core.model.sites import AttentionSite, attention_sites
from attnviz.core.model.trace import Recorder, is_tapped, trace_names

from tiny_models import NORM_VARIANTS, random_batch, random_model

SITES = [AttentionSite("encoder", 1), AttentionSite("decoder", 0), AttentionSite("cross", 1)]


def logits(model, src, tgt, interventions=()):
    with torch.inference_mode():
        return model.run_with_trace(src, tgt, names=(), interventions=interventions)[0]


def by_hand(model, site, edit):
    """A copy of ``model`` whose ``site`` output projection W^O (weight ``[d, d]``, bias ``[d]``) ``edit`` changes."""
    other = copy.deepcopy(model)
    with torch.no_grad():
        edit(site.module(other).w_o)
    return other


@pytest.mark.parametrize("kw", NORM_VARIANTS, ids=lambda k: "-".join(k.values()))
def test_an_empty_intervention_set_is_bit_identical_to_none(kw):
    model = random_model(kw["norm"], kw["placement"])
    src, tgt = random_batch(model)
    with torch.inference_mode():
        plain = model(src, tgt)
        traced, tr = model.run_with_trace(src, tgt, batch_index=None)
        empty, tr_empty = model.run_with_trace(src, tgt, batch_index=None, interventions=())
        silent = model(src, tgt, Recorder((), None, []))
    for other in (traced, empty, silent):
        assert torch.equal(plain, other)
    assert list(tr) == list(tr_empty) and all((tr[n] == tr_empty[n]).all() for n in tr)


def test_two_threads_with_different_interventions_do_not_interfere():
    model = random_model()
    src, tgt = random_batch(model)
    plans = [(), (ZeroHeads(AttentionSite("cross", 1), (0, 2)),), (UniformHeads(AttentionSite("encoder", 0), (1,)),)]
    want = [logits(model, src, tgt, p) for p in plans]
    assert not torch.equal(want[0], want[1]) and not torch.equal(want[0], want[2])
    wrong: list[int] = []

    def work(i):
        for _ in range(30):
            if not torch.equal(logits(model, src, tgt, plans[i]), want[i]):
                wrong.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


@pytest.mark.parametrize("site", SITES, ids=str)
def test_ablating_every_head_of_a_site_equals_zeroing_its_attention_output(site):
    model = random_model()
    with torch.no_grad():
        site.module(model).w_o.bias.zero_()  # the block's output is then Concat(Z) W^O alone
    src, tgt = random_batch(model)
    heads = tuple(range(model.config.n_heads))
    with torch.inference_mode():
        ablated, tr = model.run_with_trace(src, tgt, batch_index=None, interventions=[ZeroHeads(site, heads)])
    hand = by_hand(model, site, lambda w_o: w_o.weight.zero_())  # attention output = 0 x W^O = 0
    assert (tr[site.name("output")] == 0).all()
    torch.testing.assert_close(ablated, logits(hand, src, tgt), rtol=1e-5, atol=1e-5)
    assert (ablated - logits(model, src, tgt)).abs().max() > 1e-3


@pytest.mark.parametrize("site", SITES, ids=str)
def test_ablating_one_head_equals_zeroing_its_slice_of_the_output_projection_input(site):
    model = random_model()
    src, tgt = random_batch(model)
    dk, head = model.config.d_k, 2
    with torch.inference_mode():
        ablated, tr = model.run_with_trace(src, tgt, batch_index=None, interventions=[ZeroHeads(site, (head,))])
    concat = tr[site.name("concat")]
    assert (concat[..., head * dk : (head + 1) * dk] == 0).all() and (concat[..., : head * dk] != 0).any()
    # Concat(Z) W^O with Z_head = 0 is Concat(Z) times W^O with the head's input columns zeroed
    hand = by_hand(model, site, lambda w_o: w_o.weight[:, head * dk : (head + 1) * dk].zero_())
    torch.testing.assert_close(ablated, logits(hand, src, tgt), rtol=1e-5, atol=1e-5)


def test_mean_ablation_and_scaling_equal_their_output_projection_by_hand():
    model = random_model()
    site, head, dk = AttentionSite("cross", 0), 1, model.config.d_k
    src, tgt = random_batch(model)
    with torch.inference_mode():
        _, ref = model.run_with_trace(src, tgt, batch_index=None)
    mean = MeanHeads.from_trace(site, (head,), ref)
    cols = slice(head * dk, (head + 1) * dk)
    z = torch.from_numpy(ref[site.name("z")][:, head].copy())  # [B, q, dk]
    z_mean = z.reshape(-1, dk).mean(0)  # [dk]

    def constant_head(w_o):  # Z_head = z_mean everywhere: its share of W^O is a constant added to the bias
        w_o.bias += w_o.weight[:, cols] @ z_mean
        w_o.weight[:, cols] = 0

    torch.testing.assert_close(logits(model, src, tgt, [mean]), logits(by_hand(model, site, constant_head), src, tgt), rtol=1e-5, atol=1e-5)
    scaled = by_hand(model, site, lambda w_o: w_o.weight[:, cols].mul_(2.5))
    torch.testing.assert_close(logits(model, src, tgt, [ScaleHeads(site, (head,), 2.5)]), logits(scaled, src, tgt), rtol=1e-5, atol=1e-5)


def test_uniform_attention_spreads_each_row_over_the_allowed_keys():
    model = random_model()
    site, lt = AttentionSite("decoder", 1), 5
    src, tgt = random_batch(model)
    with torch.inference_mode():
        _, tr = model.run_with_trace(src, tgt, interventions=[UniformHeads(site, (0, 3))])
    rows = torch.arange(1, lt + 1, dtype=torch.float32)[:, None]
    causal = torch.tril(torch.ones(lt, lt)) / rows  # row i: 1 / (i + 1) on keys 0..i
    w = torch.from_numpy(tr[site.name("weights")].copy())
    torch.testing.assert_close(w[0], causal)
    torch.testing.assert_close(w[3], causal)
    assert not torch.allclose(w[1], causal)


@pytest.mark.parametrize("kw", NORM_VARIANTS, ids=lambda k: "-".join(k.values()))
def test_patching_a_run_with_its_own_trace_is_the_identity(kw):
    model = random_model(kw["norm"], kw["placement"])
    src, tgt = random_batch(model)
    with torch.inference_mode():
        clean, tr = model.run_with_trace(src, tgt, batch_index=None)
    names = [n for n in trace_names(model.config) if is_tapped(n)]
    patched = logits(model, src, tgt, Patch.from_trace(tr, *names))
    assert torch.equal(clean, patched)
    other = Patch.from_trace(model.run_with_trace(*random_batch(model, seed=2), batch_index=None)[1], "encoder.output")
    assert not torch.allclose(clean, logits(model, src, tgt, other))


def test_no_positional_leaves_the_token_embedding_alone_in_each_stack_it_names():
    model = random_model()
    src, tgt = random_batch(model)
    scale = model.config.d_model ** 0.5
    with torch.inference_mode():
        _, tr = model.run_with_trace(src, tgt, batch_index=None, interventions=[NoPositional(("decoder",))])
        tokens = model.decoder.embed.table.weight[tgt] * scale  # [B, Lt, d], no PE added
        with_pe = model.encoder.embed.table.weight[src] * scale + model.encoder.embed.pe[: src.shape[1]]
    assert (tr["decoder.embed.sum"] == tokens.numpy()).all() and (tr["decoder.embed.positional"] == 0).all()
    assert (tr["encoder.embed.sum"] == with_pe.numpy()).all()
    with pytest.raises(InterventionError, match="left out of 'encoder' or 'decoder'"):
        checked([NoPositional(("both",))], model.config)


def test_patching_the_encoder_output_of_cat_eats_fish_into_fish_eats_cat(bundle):
    a = DecodingSession.from_bundle(bundle, "猫吃鱼。", capture=["encoder.output"])
    b = DecodingSession.from_bundle(bundle, "鱼吃猫。", capture=False)
    a.run(), b.run()
    assert a.translation() != b.translation()
    patched = DecodingSession.from_bundle(bundle, "鱼吃猫。", capture=False, interventions=Patch.from_trace(a.encoder_trace, "encoder.output"))
    patched.run()
    assert patched.tgt_ids == a.tgt_ids and patched.translation() == a.translation()


@pytest.mark.parametrize("kind", ["zero", "mean", "uniform"])
def test_stepping_a_session_with_an_ablation_equals_teacher_forcing_with_it(bundle, kind):
    text = "我喜欢吃苹果。"
    ref = teacher_forced_from_bundle(bundle, text, "I like eating apples.").trace
    plan = [ablation(s, (0, 2), kind, ref) for s in (AttentionSite("encoder", 0), AttentionSite("decoder", 1), AttentionSite("cross", 2))]
    clean = DecodingSession.from_bundle(bundle, text, capture=False)
    session = DecodingSession.from_bundle(bundle, text, capture=False, interventions=plan)
    clean.run(), session.run()
    forced = teacher_forced_from_bundle(bundle, text, session.translation(), interventions=plan)
    assert forced.input_ids == session.input_ids and forced.output_ids == session.output_ids
    want = torch.tensor([p.prob for p in forced.steps], dtype=torch.float64)
    got = torch.tensor([s.prob for s in session.steps], dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
    assert [s.topk[0][1] for s in session.steps] == [p.topk[0][1] for p in forced.steps]
    changed = clean.tgt_ids != session.tgt_ids or any(abs(x.prob - y.prob) > 1e-3 for x, y in zip(clean.steps, session.steps))
    assert changed


def test_bad_interventions_are_one_line(bundle):
    cfg = bundle.model.config
    with pytest.raises(ValueError, match="KIND:LAYER:HEAD"):
        parse_heads("cross:0:1")
    with pytest.raises(ValueError, match="KIND:LAYER:HEAD"):
        parse_heads("sideways:1:1")
    assert parse_heads("cross:3:2, encoder:1:1,cross:3:2") == {AttentionSite("cross", 2): (1,), AttentionSite("encoder", 0): (0,)}
    with pytest.raises(ValueError, match="no head 9"):
        checked([ZeroHeads(AttentionSite("cross", 0), (8,))], cfg)
    with pytest.raises(ValueError, match="no cross layer 7"):
        checked([ZeroHeads(AttentionSite("cross", 6), (0,))], cfg)
    with pytest.raises(ValueError, match="cannot patch 'generator.probs'"):
        checked([Patch("generator.probs", torch.zeros(1))], cfg)
    with pytest.raises(ValueError, match="unknown ablation kind"):
        ablation(AttentionSite("cross", 0), (0,), "half")
    with pytest.raises(DecodingError, match="no head 5"):
        DecodingSession.from_bundle(bundle, "猫吃鱼。", interventions=[ZeroHeads(AttentionSite("encoder", 0), (4,))])
    bad = Patch("encoder.output", torch.zeros(3, cfg.d_model))
    with pytest.raises(InterventionError, match=r"cannot patch encoder.output: the patch has shape \(3, "):
        DecodingSession.from_bundle(bundle, "猫吃鱼。", interventions=[bad])
    for n in (s.name("z") for s in attention_sites(cfg)):
        assert is_tapped(n)


def test_a_decoder_patch_in_a_session_takes_each_step_s_row(bundle):
    """The decoder output of 猫吃鱼。's teacher-forced pass, patched into every cached step of
    鱼吃猫。's session, makes each step choose 猫吃鱼。's token at that position."""
    a = DecodingSession.from_bundle(bundle, "猫吃鱼。", capture=False)
    a.run()
    forced = teacher_forced_from_bundle(bundle, "猫吃鱼。", a.translation(), names=["decoder.output", "decoder.layers.1.self_attn.k"])
    assert forced.output_ids == a.output_ids
    patched = DecodingSession.from_bundle(bundle, "鱼吃猫。", capture=["decoder.layers.1.self_attn.k"],
                                          interventions=Patch.from_trace(forced.trace, "decoder.output", "decoder.layers.1.self_attn.k"))
    patched.run()
    assert patched.tgt_ids == a.tgt_ids
    want = torch.tensor([p.prob for p in forced.steps])
    torch.testing.assert_close(torch.tensor([s.prob for s in patched.steps]), want, rtol=1e-5, atol=1e-6)
    k = forced.trace["decoder.layers.1.self_attn.k"]  # [head, steps, d_k]: a step's keys so far are the first rows
    assert (patched.steps[2].trace["decoder.layers.1.self_attn.k"] == k[:, :3]).all()
    short = Patch("decoder.output", torch.zeros(2, bundle.config.d_model))
    session = DecodingSession.from_bundle(bundle, "鱼吃猫。", capture=False, interventions=[short])
    session.step(), session.step()
    with pytest.raises(InterventionError, match="the patch covers 2 positions; this step needs position 3"):
        session.step()


@pytest.mark.parametrize("kinds", [("encoder", "decoder", "cross"), ("cross",)])
def test_no_scaling_equals_a_model_whose_attention_does_not_divide_by_sqrt_dk(kinds):
    model = random_model()
    src, tgt = random_batch(model)
    other = copy.deepcopy(model)
    for site in (s for k in kinds for s in attention_sites(other.config, k)):
        site.module(other).scale = 1.0  # QKᵀ·1 instead of QKᵀ/√d_k, written here
    change = NoScaling.for_config(model.config, kinds)
    torch.testing.assert_close(logits(model, src, tgt, [change]), logits(other, src, tgt), atol=1e-5, rtol=1e-5)
    assert not torch.allclose(logits(model, src, tgt, [change]), logits(model, src, tgt), atol=1e-3)


def test_batch_statistics_change_only_a_batchnorm_model_and_stay_on_the_call():
    layer, batch_norm = random_model(norm="layer"), random_model(norm="batch", placement="post")
    src, tgt = random_batch(layer)
    assert torch.equal(logits(layer, src, tgt, [BatchStatistics()]), logits(layer, src, tgt))
    changed = logits(batch_norm, src, tgt, [BatchStatistics()])
    assert not torch.allclose(changed, logits(batch_norm, src, tgt), atol=1e-4)
    assert not batch_norm.training
