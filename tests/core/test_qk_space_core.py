"""Queries and keys in one space: the normalisation keeps, along every query row, the order of the
head's attention weights as the model computed them (the keys' shift is constant per row; the
query mean is added back); the projection is the joint cloud's first two principal components,
computed here again from the covariance's eigenvectors; the command writes every point as JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnviz.cli import main
from attnviz.core.analysis.qk_space import normalise, pca_2d, project, qk_space, sentence_vectors
from attnviz.core.bundle import Bundle, load_bundle, save_bundle
from attnviz.core.data.corpora import Pair
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced
from attnviz.core.model.sites import AttentionSite, attention_sites

from tiny_models import random_model, tokenizers

HELD_OUT = [Pair("你好！", "Hello!", "b"), Pair("这本书很有意思。", "This book is very interesting.", "c")]


@pytest.fixture(scope="module")
def model():
    return random_model(n_heads=4)


@pytest.fixture(scope="module")
def forced(model):
    src, tgt = tokenizers()
    return teacher_forced(model, src, tgt, "我喜欢吃苹果。", "I like eating apples.")


def same_order(scores: np.ndarray, weights: np.ndarray, allowed: np.ndarray) -> bool:
    """Along each row, every two allowed keys whose weights differ (beyond float32 rounding) are
    ordered alike by ``scores``: the rankings are equal, ties aside."""
    for s, w, ok in zip(scores, weights, allowed):
        s, w = s[ok], w[ok].astype(np.float64)
        dw = w[:, None] - w[None, :]
        ds = s[:, None] - s[None, :]
        clear = np.abs(dw) > 1e-6 * np.maximum(np.abs(w[:, None]), np.abs(w[None, :]))
        if not np.all(np.sign(dw[clear]) == np.sign(ds[clear])):
            return False
    return True


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_the_normalised_scores_rank_each_row_as_the_heads_weights_do(model, forced, kind):
    src_tok, tgt_tok = tokenizers()
    for site in attention_sites(model.config, kind):
        weights = forced.accumulated(site.name("weights"))  # [head, query, key], captured from the model
        allowed = np.isfinite(forced.accumulated(site.name("mask")))  # M = 0: the keys the row may attend to
        for head in range(model.config.n_heads):
            space = qk_space(model, forced, kind, site.layer, head, HELD_OUT, (src_tok, tgt_tok))
            assert (space.kind, space.layer, space.head) == (kind, site.layer, head)
            mine = space.vectors.query_sentence == 0
            scores = space.normalised.scores()[mine][:, space.vectors.key_sentence == 0]
            assert scores.shape == weights[head].shape
            assert same_order(scores, weights[head], allowed), (kind, site.layer, head)


def test_the_normalisation_centres_both_sets_and_evens_their_norms_without_changing_qk():
    rng = np.random.default_rng(0)
    q, k = rng.normal(2.0, 1.0, (7, 5)), rng.normal(-1.0, 3.0, (4, 5))
    n = normalise(q, k)
    np.testing.assert_allclose(n.queries.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(n.keys.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(n.queries, axis=1).mean(), np.linalg.norm(n.keys, axis=1).mean())
    np.testing.assert_allclose(n.queries @ n.keys.T, (q - q.mean(0)) @ (k - k.mean(0)).T)  # c and 1/c cancel
    np.testing.assert_allclose(n.scores(), q @ k.T - (q @ k.mean(0))[:, None])  # q·k less a constant per row


def test_the_projection_is_the_first_two_principal_components(model, forced):
    v = sentence_vectors(forced, "cross", 1, 2)
    space = project(v, "cross", 1, 2)
    x = np.concatenate([space.normalised.queries, space.normalised.keys])
    x = x - x.mean(0)
    values, vectors = np.linalg.eigh(np.cov(x.T))  # ascending
    top = vectors[:, ::-1][:, :2]
    expected = x @ top
    for i in range(2):
        sign = np.sign(expected[:, i] @ space.coords[:, i])
        np.testing.assert_allclose(space.coords[:, i], sign * expected[:, i], atol=1e-8)
    np.testing.assert_allclose(space.explained, values[::-1][:2] / values.sum(), rtol=1e-8)
    np.testing.assert_allclose(space.query_coords, space.coords[: space.n_queries])


def test_a_cloud_of_one_point_projects_to_the_origin():
    coords, comps, explained = pca_2d(np.ones((1, 4)))
    assert coords.shape == (1, 2) and not coords.any() and not explained.any() and comps.shape == (2, 4)


def test_before_the_first_decoder_step_the_encoders_head_is_shown(model):
    session = DecodingSession.from_bundle(Bundle(model, *tokenizers(), {"name": "tiny"}), "我是学生。", max_len=6)
    space = qk_space(model, session.frozen(), "cross", 5, 9)
    assert (space.kind, space.layer, space.head) == ("encoder", model.config.n_encoder_layers - 1, model.config.n_heads - 1)
    assert space.with_query(2).query == 2 and space.with_query(99).query is None


def test_the_command_prints_every_point_as_json(model, tmp_path, capsys):
    folder = tmp_path / "tiny"
    save_bundle(folder, model, *tokenizers())
    assert main(["qk", "--model", str(folder), "--src", "我喜欢吃苹果。", "--tgt", "I like eating apples.", "--kind", "cross",
                 "--layer", "2", "--head", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    saved = load_bundle(folder)  # the bundle's weights as the command read them
    forced = teacher_forced(saved.model, saved.src_tokenizer, saved.tgt_tokenizer, "我喜欢吃苹果。", "I like eating apples.")
    q = forced.accumulated(AttentionSite("cross", 1).name("q"))[2]
    k = forced.accumulated(AttentionSite("cross", 1).name("k"))[2]
    assert (out["kind"], out["layer"], out["head"], out["projection"]) == ("cross", 2, 3, "pca")
    assert (out["queries"], out["keys"]) == (len(q), len(k)) and len(out["points"]) == len(q) + len(k)
    assert [p["piece"] for p in out["points"] if p["type"] == "key"] == list(forced.src_pieces)
    expected = project(sentence_vectors(forced, "cross", 1, 2), "cross", 1, 2).coords
    np.testing.assert_allclose([[p["x"], p["y"]] for p in out["points"]], expected, atol=1e-4)
    assert main(["qk", "--model", str(folder), "--src", "我。", "--held-out", "3"]) == 2  # the tiny model names no data
    assert "no training data" in capsys.readouterr().err
