"""Activation patching (core/analysis/patching.py, ``PatchWhere``): each patch against the same
patch written out here on the full value (a plain ``Patch``), log P computed here from the logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.core.analysis.patching import (
    PatchSite,
    figure_data,
    layer_output,
    parse_positions,
    parse_site,
    patch_run,
    patching_map,
    site_patch,
)
from attnviz.core.decoding.session import DecodingSession, translate
from attnviz.core.model.interventions import InterventionError, Patch, PatchWhere
from attnviz.core.model.sites import AttentionSite
from attnviz.core.model.trace import is_tapped, trace_names

from tiny_models import NORM_VARIANTS, random_batch, random_model

CAT, FISH = "猫吃鱼。", "鱼吃猫。"  # the cat eats the fish / the fish eats the cat: 4 tokens each


@pytest.fixture(scope="module")
def bundle():
    """zh-en-small (d_model 128): the model these measured stories hold on (the README gives the default's)."""
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import models_dir

    return load_bundle(models_dir() / "zh-en-small")


def run(model, src, tgt, interventions=()):
    with torch.inference_mode():
        return model.run_with_trace(src, tgt, batch_index=None, interventions=interventions)


def log_probs(model, src_ids, out_ids, interventions=()):
    """[t] log softmax(logits_t)[y_t] of one pass with SOS + y[:-1] fed, written out here."""
    with torch.inference_mode():
        logits, _ = model.run_with_trace(torch.tensor([list(src_ids)]), torch.tensor([[model.config.bos_id, *out_ids[:-1]]]),
                                         names=(), interventions=interventions)
    logp = torch.log_softmax(logits[0].double(), -1)
    return np.array([float(logp[t, y]) for t, y in enumerate(out_ids)])


def trace_of(model, src_ids, out_ids, name):
    with torch.inference_mode():
        _, tr = model.run_with_trace(torch.tensor([list(src_ids)]), torch.tensor([[model.config.bos_id, *out_ids[:-1]]]), names=[name])
    return np.array(tr[name])


# -- PatchWhere on a random model ---------------------------------------------------------------------
@pytest.mark.parametrize("kw", NORM_VARIANTS, ids=lambda k: "-".join(k.values()))
def test_patch_where_all_true_is_patch_and_all_false_is_no_intervention(kw):
    model = random_model(kw["norm"], kw["placement"])
    src, tgt = random_batch(model)
    clean, _ = run(model, src, tgt)
    _, other = run(model, *random_batch(model, seed=2))
    for name in ("encoder.layers.1.residual2", "decoder.layers.0.cross_attn.z", "decoder.layers.1.residual3", "encoder.output"):
        values = torch.from_numpy(np.array(other[name]))  # with the batch axis: each row its own
        full, _ = run(model, src, tgt, [Patch(name, values)])
        everywhere, _ = run(model, src, tgt, [PatchWhere(name, values, torch.ones(values.shape, dtype=torch.bool))])
        nowhere, _ = run(model, src, tgt, [PatchWhere(name, values, torch.zeros(1, 1, 1, dtype=torch.bool))])
        assert torch.equal(everywhere, full) and torch.equal(nowhere, clean), name
        assert not torch.allclose(full, clean), name


def test_patch_where_at_some_positions_and_heads_equals_a_patch_of_the_value_built_by_hand():
    model = random_model()
    src, tgt = random_batch(model)
    _, own = run(model, src, tgt)
    _, other = run(model, *random_batch(model, seed=2))
    name = "decoder.layers.1.self_attn.z"  # [B, head, tgt, d_k]
    hand = np.array(own[name])
    hand[0, 1, 2] = other[name][0, 1, 2]  # row 0: head 2 at target position 3
    hand[1, 1, 2], hand[1, 3, 2] = other[name][1, 1, 2], other[name][1, 3, 2]
    mask = torch.zeros(2, 4, 5, 1, dtype=torch.bool)
    mask[0, 1, 2] = mask[1, 1, 2] = mask[1, 3, 2] = True
    got, _ = run(model, src, tgt, [PatchWhere(name, torch.from_numpy(np.array(other[name])), mask)])
    want, _ = run(model, src, tgt, [Patch(name, torch.from_numpy(hand))])
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    with pytest.raises(InterventionError, match="the mask has shape"):
        run(model, src, tgt, [PatchWhere(name, torch.from_numpy(np.array(other[name])), torch.zeros(3, 1, 1, dtype=torch.bool))])


@pytest.mark.parametrize("kw", NORM_VARIANTS, ids=lambda k: "-".join(k.values()))
def test_patching_a_run_with_its_own_values_at_some_positions_is_the_identity(kw):
    model = random_model(kw["norm"], kw["placement"])
    src, tgt = random_batch(model)
    clean, tr = run(model, src, tgt)
    names = [n for n in trace_names(model.config) if is_tapped(n) and np.ndim(tr[n]) == 3]  # [B, pos, d] streams
    every_other = [torch.arange(np.shape(tr[n])[1])[:, None] % 2 == 0 for n in names]  # [pos, 1]: positions 1, 3, ...
    plan = [PatchWhere(n, torch.from_numpy(np.array(tr[n])), m) for n, m in zip(names, every_other)]
    assert torch.equal(run(model, src, tgt, plan)[0], clean)


# -- the default model --------------------------------------------------------------------------------
def test_patch_where_in_a_cached_session_takes_each_step_s_row_of_the_mask(bundle):
    """Decoding with a position-masked decoder patch equals teacher forcing its output with the same patch."""
    name = layer_output(bundle.config, "decoder", 1)
    out = DecodingSession.from_bundle(bundle, CAT, capture=False)
    out.run()
    values = trace_of(bundle.model, bundle.src_tokenizer.encode(CAT), out.output_ids, name)
    mask = torch.zeros(len(values), 1, dtype=torch.bool)
    mask[[1, 3]] = True
    patch = PatchWhere(name, torch.from_numpy(values), mask)
    session = DecodingSession.from_bundle(bundle, FISH, capture=False, max_len=len(values), interventions=[patch])
    session.run()
    forced = log_probs(bundle.model, bundle.src_tokenizer.encode(FISH), session.output_ids, [patch])
    np.testing.assert_allclose(np.log([s.prob for s in session.steps]), forced, atol=1e-5)
    assert session.translation() != out.translation()


def test_patching_a_run_with_its_own_trace_changes_nothing(bundle):
    for site in ("encoder:2", "decoder:3", "cross:2:1", "encoder.output", "decoder.layers.0.self_attn.v"):
        r = patch_run(bundle, CAT, CAT, site)
        np.testing.assert_allclose(r.log_prob_patched, r.log_prob_clean, rtol=0, atol=1e-6)
        assert r.patched == r.clean and not r.notices, site


def test_cat_eats_fish_encoder_output_patched_into_fish_eats_cat_decodes_as_cat_eats_fish(bundle):
    cat = translate(bundle, CAT)[0]
    fish = translate(bundle, FISH)[0]
    assert cat != fish
    r = patch_run(bundle, FISH, CAT, "encoder.output")
    assert r.clean == fish and r.patched == cat and r.other_translation == cat and r.target_pieces[-1] == "EOS"
    np.testing.assert_allclose(r.log_prob_clean, log_probs(bundle.model, bundle.src_tokenizer.encode(FISH), r.target_ids), atol=1e-9)
    np.testing.assert_allclose(r.log_prob_patched, r.log_prob_other, atol=1e-5)  # the whole memory swapped: the other run
    assert r.delta.sum() < -5  # 鱼吃猫。's own translation loses most of its probability
    for site in ("encoder:3", "encoder:0", "decoder:3"):  # every position of a stack's full state
        assert patch_run(bundle, FISH, CAT, site).patched == cat, site


def test_one_position_and_one_head_patched_equal_the_patch_built_by_hand(bundle):
    fish_ids, cat_ids = bundle.src_tokenizer.encode(FISH), bundle.src_tokenizer.encode(CAT)
    r = patch_run(bundle, FISH, CAT, "encoder:2", positions=[0])
    name = "encoder.layers.1.residual2"
    hand = trace_of(bundle.model, fish_ids, r.target_ids, name)
    hand[0] = trace_of(bundle.model, cat_ids, r.target_ids, name)[0]  # 猫 in place of 鱼 at position 1
    np.testing.assert_allclose(r.log_prob_patched, log_probs(bundle.model, fish_ids, r.target_ids, [Patch(name, torch.from_numpy(hand))]), atol=1e-6)
    assert r.patched == "The cat is eating a cat."  # 猫吃猫。, as it were
    h = patch_run(bundle, FISH, CAT, "cross:3:2", target="The fish eats the cat.")
    z = "decoder.layers.2.cross_attn.z"
    hand = trace_of(bundle.model, fish_ids, h.target_ids, z)
    hand[1] = trace_of(bundle.model, cat_ids, h.target_ids, z)[1]
    np.testing.assert_allclose(h.log_prob_patched, log_probs(bundle.model, fish_ids, h.target_ids, [Patch(z, torch.from_numpy(hand))]), atol=1e-6)
    assert h.target_given and h.heads == (1,) and np.abs(h.delta).max() > 1e-3


def test_greedy_decoding_with_a_decoder_patch_takes_the_other_decoding_s_steps_where_patched(bundle):
    cat = DecodingSession.from_bundle(bundle, CAT, capture=False)
    fish = DecodingSession.from_bundle(bundle, FISH, capture=False)
    cat.run(), fish.run()
    r = patch_run(bundle, FISH, CAT, "decoder:3", positions=[1])  # the last layer's output at target position 2 only
    assert r.patched_ids[0] == fish.output_ids[0] and r.patched_ids[1] == cat.output_ids[1]  # step 2 gives 猫吃鱼。's token
    assert not r.notices
    whole = patch_run(bundle, FISH, CAT, "decoder:3")
    assert whole.patched_ids == cat.output_ids and whole.patched == cat.translation()


def test_sites_and_positions_parse_as_on_screen_with_one_line_errors(bundle):
    cfg = bundle.config
    assert parse_site("encoder:2", cfg) == PatchSite("encoder.layers.1.residual2", None, "encoder:2")
    assert parse_site("encoder:0", cfg).name == "encoder.embed.sum" and parse_site("decoder:3", cfg).name == "decoder.layers.2.residual3"
    assert parse_site("cross:3:2,cross:3:4", cfg) == PatchSite(AttentionSite("cross", 2).name("z"), (1, 3), "cross:3:2,cross:3:4")
    assert parse_site("encoder.output", cfg).stack == "encoder" and parse_site("generator.logits", cfg).stack == "decoder"
    assert layer_output(random_model().config, "decoder", 1) == "decoder.layers.1.norm3.output"  # post-norm: after the norm
    assert parse_positions("3, 1,3") == (0, 2)
    for text, message in [("encoder:4", "no encoder layer 4: the model has 3"), ("cross:3", "a site is encoder:LAYER"),
                          ("cross:1:9", "no head 9 in cross layer 1"), ("cross:1:1,encoder:1:1", "one attention block at a time"),
                          ("generator.probs", "a site is"), ("sideways", "a site is")]:
        with pytest.raises(InterventionError, match=message):
            parse_site(text, cfg)
    with pytest.raises(InterventionError, match="1-based numbers"):
        parse_positions("0,1")


def test_bad_patches_are_one_line(bundle):
    cfg = bundle.config
    with pytest.raises(InterventionError, match=r"has shape \(5, 128\) in the other run and \(4, 128\) in this one .*source tokens"):
        patch_run(bundle, FISH, "我明天去北京。", "encoder:1")
    with pytest.raises(InterventionError, match="encoder:1 has no position 5: it has 4 source positions"):
        patch_run(bundle, FISH, CAT, "encoder:1", positions=[4])
    with pytest.raises(InterventionError, match="has no head axis"):
        site_patch(parse_site("encoder:1", cfg), np.zeros((4, 128)), (4, 128), heads=[0])
    r = patch_run(bundle, FISH, "我明天去北京。", "decoder:2")  # a different source length is fine on the decoder side
    assert r.log_prob_patched.shape == r.log_prob_clean.shape


# -- the layer x position map -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def swap(bundle):
    return patching_map(bundle, CAT, FISH)


def test_the_map_s_cells_equal_each_patch_done_alone_by_hand(bundle, swap):
    cat_ids, fish_ids = bundle.src_tokenizer.encode(CAT), bundle.src_tokenizer.encode(FISH)
    out, tp = list(swap.target_ids), swap.target_position
    np.testing.assert_allclose(swap.clean_token_log_probs, log_probs(bundle.model, cat_ids, out), atol=1e-9)
    np.testing.assert_allclose(swap.corrupt_token_log_probs, log_probs(bundle.model, fish_ids, out), atol=1e-9)
    for stack, row, layer, pos in [("encoder", 0, -1, 0), ("encoder", 2, 1, 2), ("decoder", 1, 1, 1), ("decoder", 0, 0, 0)]:
        name = layer_output(bundle.config, stack, layer)
        hand = trace_of(bundle.model, fish_ids, out, name)
        hand[pos] = trace_of(bundle.model, cat_ids, out, name)[pos]
        want = log_probs(bundle.model, fish_ids, out, [Patch(name, torch.from_numpy(hand))])[tp]
        assert getattr(swap, stack)[row, pos] == pytest.approx(want, abs=1e-5), (stack, layer, pos)


def test_the_swap_is_carried_by_the_cat_s_source_position_and_enters_the_decoder_at_the_cat_s_query(swap):
    """猫吃鱼。 -> 'The cat is eating fish.'; 鱼吃猫。 -> 'Fish cat.'. The target token that the
    corrupt run loses most is '▁cat' (position 2 of the target, fed '▁The')."""
    assert swap.target_pieces[: swap.target_position + 1] == ("▁The", "▁cat")
    assert swap.log_prob_clean > -0.1 and swap.log_prob_corrupt < -4
    enc, dec = swap.recovery(swap.encoder), swap.recovery(swap.decoder)
    assert enc.shape == (4, 4) and dec.shape == (3, len(swap.target_ids))
    assert (enc[:, 0] > 0.9).all()  # 猫 at source position 1 restores '▁cat' from the embeddings to the last layer
    assert (np.abs(enc[1:, [1, 3]]) < 0.1).all()  # 吃 and 。: the same tokens, nothing to restore
    assert (enc[:, 2] < -0.2).all()  # 鱼 at position 3 (猫吃鱼 in 鱼吃猫's place) makes '▁cat' less likely still
    assert dec[0, 1] < 0.5 < 0.8 < dec[1, 1] and dec[2, 1] > 0.95  # read from the source by cross-attention in decoder layers 1-2
    assert np.abs(dec[:, 0]).max() < 0.15  # the SOS position carries little of it
    assert (np.abs(dec[:, 2:]) < 1e-6).all()  # later target positions cannot reach it (look-ahead mask)


def test_the_fish_is_carried_by_the_fish_s_source_position_likewise(bundle):
    fish = patching_map(bundle, CAT, FISH, target_position=4)  # '▁fish', fed '▁eating'
    assert fish.target_pieces[4] == "▁fish" and fish.log_prob_clean - fish.log_prob_corrupt > 2
    enc, dec = fish.recovery(fish.encoder), fish.recovery(fish.decoder)
    assert (enc[:, 2] > 0.95).all() and enc[0, 0] < -0.3  # 鱼 at source position 3 restores it; 猫's embedding at 1 works against it
    assert (np.abs(enc[1:, [0, 1, 3]]) < 0.15).all()  # once self-attention has mixed the context in, the other positions carry little
    assert dec[0, 4] < 0.5 < dec[1, 4] < 0.9 < dec[2, 4]  # at the query of '▁fish', built up over decoder layers 1-3


def test_figure_data_of_the_map(swap):
    data = figure_data(swap)
    n_enc, width = len(swap.encoder), max(4, len(swap.target_ids))
    assert data.dims == ("layer", "position") and data.shape == (n_enc + 3, width)
    assert data.coords["layer"][0] == "encoder embeddings" and data.coords["layer"][-1] == "decoder 3"
    rec = data.values["recovery"]
    np.testing.assert_array_equal(rec[:n_enc, :4], swap.recovery(swap.encoder))
    np.testing.assert_array_equal(data.values["log_prob"][n_enc:], swap.decoder)
    assert np.isnan(rec[:n_enc, 4:]).all() and "▁cat" in data.title


def test_bad_maps_are_one_line(bundle):
    with pytest.raises(InterventionError, match="same number of tokens: 4 and 5"):
        patching_map(bundle, CAT, "我明天去北京。")
    with pytest.raises(InterventionError, match="no target position 10: the target has 7 tokens"):
        patching_map(bundle, CAT, FISH, target_position=9)
    same = patching_map(bundle, CAT, CAT)
    assert np.isnan(same.recovery(same.encoder)).all() and "recovery is undefined" in same.notices[-1]
    np.testing.assert_allclose(same.encoder, same.log_prob_clean, atol=1e-5)  # its own values: nothing changes (float32 noise)
