"""The beam tree (core/analysis/beam_tree.py) on the bundled model: its nodes are the prefixes the
search kept, against the session's beams step by step, log P recomputed here, the session's
translation; the layout overlaps nothing; a node's cross-attention is a teacher-forced pass's."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from attnviz.core.analysis.beam_tree import beam_history, beam_tree, beam_tree_frame, figure_data, node_attention
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, Greedy, Sampling
from attnviz.core.decoding.teacher_forcing import log_prob_of
from attnviz.core.model.sites import attention_sites
from attnviz.paths import default_model

FISH = "猫吃鱼。"
BEAM = BeamSearch(width=3)


@functools.cache
def bundle():
    return load_bundle(default_model())


@functools.cache
def decoded(strategy=BEAM) -> DecodingSession:
    s = DecodingSession.from_bundle(bundle(), FISH, strategy=strategy)
    s.run()
    return s


def stepped_beams(strategy) -> list:
    """The session's beams after every step, read as it steps (what beam_history must give afterwards)."""
    s = DecodingSession.from_bundle(bundle(), FISH, strategy=strategy, capture=False)
    out = [s.beams()]
    while not s.finished:
        s.step()
        out.append(s.beams())
    return out


def cross_weights(token_ids) -> np.ndarray:
    """``[layer, head, query, key]``: one pass with SOS and the node's tokens but the last fed, written out here."""
    model, s = bundle().model, decoded()
    names = [site.name("weights") for site in attention_sites(model.config, "cross")]
    with torch.inference_mode():
        _, trace = model.run_with_trace(torch.tensor([s.source.ids]), torch.tensor([list(token_ids[:-1])]), names=names)
    return np.stack([trace[n] for n in names])


@pytest.mark.parametrize("strategy", [BEAM, Greedy()], ids=["beam", "greedy"])
def test_the_history_is_the_beams_after_every_step(strategy):
    history = beam_history(decoded(strategy))
    assert list(history) == stepped_beams(strategy)


def test_the_final_beams_are_the_session_s_and_the_leaves_that_were_not_pruned():
    s = decoded()
    tree = beam_tree(beam_history(s))
    final = [tree.nodes[i] for i in tree.final]
    assert [(n.token_ids, n.score, n.log_prob, n.finished) for n in final] == [(b.token_ids, b.score, b.log_prob, b.finished) for b in s.beams()]
    assert all(n.final for n in final) and sum(n.final for n in tree.nodes) == len(s.beams())
    leaves = tree.leaves()
    assert set(tree.final) <= set(leaves) and {i for i in leaves if not tree.nodes[i].pruned} == set(tree.final)
    assert any(tree.nodes[i].pruned for i in leaves)  # the search dropped some prefixes on the way


def test_every_prefix_the_search_kept_is_one_node_under_its_prefix():
    s = decoded()
    history = beam_history(s)
    tree = beam_tree(history)
    seen = {b.token_ids for beams in history for b in beams}
    assert {n.token_ids for n in tree.nodes} == seen and len(tree.nodes) == len(seen)
    root = tree.nodes[0]
    assert root.token_ids == (s.config.bos_id,) and root.parent is None and root.pieces == ("SOS",)
    for n in tree.nodes[1:]:
        assert tree.nodes[n.parent].token_ids == n.token_ids[:-1]
        assert n.step == n.depth == min(k for k, beams in enumerate(history) if n.token_ids in {b.token_ids for b in beams})
        assert n.pieces == tuple(bundle().tgt_tokenizer.pieces(n.token_ids))
        assert n.finished == (n.token_ids[-1] == s.config.eos_id)
    assert len(tree.edges()) == len(tree.nodes) - 1 and tree.n_steps == s.n_steps


def test_each_node_s_log_prob_is_the_teacher_forced_one():
    s = decoded()
    tree = beam_tree(beam_history(s))
    for n in tree.nodes[1:]:
        expected, _ = log_prob_of(bundle().model, s.source.ids, n.token_ids[1:])
        assert n.log_prob == pytest.approx(expected, abs=1e-4), n.pieces


def test_the_best_path_is_the_session_s_translation_and_pruned_means_no_final_beam_below():
    s = decoded()
    tree = beam_tree(beam_history(s))
    path = [tree.nodes[i] for i in tree.best_path()]
    assert path[-1].token_ids == s.tgt_ids and [n.depth for n in path] == list(range(len(s.tgt_ids)))
    assert bundle().tgt_tokenizer.decode(path[-1].token_ids) == s.translation() != ""  # whichever model is the default
    finals = [tree.nodes[i].token_ids for i in tree.final]
    for n in tree.nodes:
        below = any(ids[: len(n.token_ids)] == n.token_ids for ids in finals)
        assert n.pruned == (not below)


def test_the_layout_overlaps_nothing_and_keeps_each_subtree_together():
    tree = beam_tree(beam_history(decoded()))
    pos = tree.positions()
    assert len({(x, y) for x, y in pos}) == len(tree.nodes)
    assert all(tree.rows[i] == 0 for i in tree.best_path())
    for i in range(len(tree.nodes)):
        kids = tree.children(i)
        if kids:
            assert min(tree.rows[k] for k in kids) == tree.rows[i]  # beside its first child
            ordered = sorted(kids, key=lambda k: (not tree.nodes[k].best, -tree.nodes[k].score, k))  # best path, then score
            assert [tree.rows[k] for k in ordered] == sorted(tree.rows[k] for k in kids)
    blocks = {}  # each node's subtree: a block of rows no other subtree of its depth enters
    for i in range(len(tree.nodes)):
        j = i
        while j is not None:
            blocks.setdefault(j, set()).add(tree.rows[i])
            j = tree.nodes[j].parent
    for depth in range(tree.n_steps + 1):
        spans = sorted((min(blocks[i]), max(blocks[i])) for i, n in enumerate(tree.nodes) if n.depth == depth)
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("strategy", [Greedy(), Sampling(temperature=1.0, seed=3)], ids=["greedy", "sampling"])
def test_greedy_and_sampling_give_one_path(strategy):
    s = decoded(strategy)
    tree = beam_tree(beam_history(s))
    assert len(tree.nodes) == s.n_steps + 1 and tree.nodes[-1].token_ids == s.tgt_ids
    assert all(n.best and not n.pruned for n in tree.nodes) and set(tree.rows) == {0}
    assert tree.leaves() == tree.final == (len(tree.nodes) - 1,)


def test_a_node_s_cross_attention_is_the_teacher_forced_pass_s():
    s = decoded()
    history = beam_tree(beam_history(s))
    pruned = next(n for n in history.nodes if n.pruned and n.depth >= 2)
    a = node_attention(bundle().model, s.source, pruned.token_ids, pruned.pieces)
    np.testing.assert_allclose(a.weights, cross_weights(pruned.token_ids), atol=1e-6)
    assert a.fed_pieces == pruned.pieces[:-1] and a.chose_pieces == pruned.pieces[1:] and a.source_pieces == s.source.pieces
    assert a.log_prob == pytest.approx(pruned.log_prob, abs=1e-4)
    np.testing.assert_allclose(a.shown(2, None), a.weights[2].mean(axis=0), atol=1e-7)
    np.testing.assert_allclose(a.weights.sum(axis=-1), 1.0, atol=1e-5)
    root = node_attention(bundle().model, s.source, history.nodes[0].token_ids, history.nodes[0].pieces)
    assert root.weights.shape[2] == 0 and root.fed_pieces == ()


def test_the_best_beam_s_attention_is_the_session_s_accumulated_one():
    s = decoded()
    frame = beam_tree_frame(bundle().model, s.source, beam_history(s), None)
    assert frame.selected == frame.tree.final[0] and frame.node.token_ids == s.tgt_ids
    sites = attention_sites(s.config, "cross")
    np.testing.assert_allclose(frame.attention.weights, np.stack([s.accumulated(site.name("weights")) for site in sites]), atol=1e-5)


def test_a_frame_selects_the_node_asked_for_and_the_best_beam_otherwise():
    s = decoded()
    history = beam_history(s)
    tree = beam_tree(history)
    pruned = next(i for i, n in enumerate(tree.nodes) if n.pruned)
    frame = beam_tree_frame(bundle().model, s.source, history, tree.nodes[pruned].token_ids, strategy=BEAM.describe())
    assert frame.selected == pruned and frame.attention.token_ids == tree.nodes[pruned].token_ids
    assert beam_tree_frame(bundle().model, s.source, history, (2, 99999)).selected == tree.final[0]
    data = figure_data(frame)
    assert data.dims == ("node",) and data.shape == (len(tree.nodes),) and data.extras["selected"] == pruned + 1
    assert data.extras["cross_attention"].shape == frame.attention.weights.shape
    with pytest.raises(ValueError):
        beam_tree((history[0], history[2]))  # a step left out: a beam's prefix was never a hypothesis
