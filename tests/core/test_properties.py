"""Property tests (hypothesis): the tokenizer's round trip, the decoding session's step/back
invariants, and the shapes of the analyses. Few examples each, so they stay fast."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.core.analysis.rollout import decoder_rollout, rollout
from attnviz.core.analysis.stats import alignment, head_statistics, row_entropy
from attnviz.core.data.tokenizer import TokenizerError
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import DecodingError, Greedy, Sampling
from attnviz.core.model.sites import AttentionSite

from tiny_models import ZH, random_model, tokenizers

FAST = settings(max_examples=25, deadline=None, database=None)  # no example folder in the tree
ZH_CHARS = sorted(set("".join(ZH)))


# -- tokenizer ----------------------------------------------------------------------------------------
@FAST
@given(st.text(alphabet=ZH_CHARS, min_size=1, max_size=30))
def test_known_text_round_trips_through_the_tokenizer(text):
    src, _ = tokenizers()
    ids = src.encode(text)
    assert src.decode(ids) == text
    assert len(src.encode_pieces(text)) == len(ids)


@FAST
@given(st.text(max_size=30))
def test_any_text_encodes_to_ids_in_the_vocabulary_or_a_one_line_error(text):
    src, _ = tokenizers()
    try:
        ids = src.encode(text)
    except TokenizerError as exc:
        assert "\n" not in str(exc)
        return
    assert all(0 <= i < src.vocab_size for i in ids)
    assert len(src.pieces(ids)) == len(ids)


@FAST
@given(st.data())
def test_every_id_survives_piece_and_back(data):
    _, tgt = tokenizers()
    token_id = data.draw(st.integers(0, tgt.vocab_size - 1))
    assert tgt.piece_to_id(tgt.piece(token_id)) == token_id


# -- decoding session -----------------------------------------------------------------------------------
@functools.cache
def _model():
    return random_model(seed=1)


def _session(strategy) -> DecodingSession:
    src, tgt = tokenizers()
    return DecodingSession(_model(), src, tgt, "我是学生。", strategy=strategy, max_len=8)


ACTIONS = st.lists(st.sampled_from(["step", "back", "force", "reset"]), max_size=14)


@FAST
@given(actions=ACTIONS, sample=st.booleans(), seed=st.integers(0, 2**63 - 1))
def test_step_and_back_keep_the_session_consistent(actions, sample, seed):
    session = _session(Sampling(seed=seed) if sample else Greedy())
    bos = session.config.bos_id
    history = [session.tgt_ids]
    for action in actions:
        before = session.tgt_ids
        try:
            if action == "step":
                session.step()
            elif action == "force":
                session.force(session.tgt_ids[-1] if session.tgt_ids[-1] != bos else session.config.unk_id)
            elif action == "back":
                session.back()
            else:
                session.reset()
        except DecodingError:
            assert session.tgt_ids == before  # a refused action changes nothing
            continue
        if action in ("step", "force"):
            assert session.tgt_ids[:-1] == before
            history.append(session.tgt_ids)
        elif action == "back":
            history.pop()
            assert session.tgt_ids == history[-1]
        else:
            history = [session.tgt_ids]
        _check_invariants(session, bos)


def _check_invariants(session: DecodingSession, bos: int) -> None:
    n = session.n_steps
    assert session.tgt_ids[0] == bos and len(session.tgt_ids) == n + 1 and len(session.steps) == n
    assert [s.token_id for s in session.steps] == list(session.tgt_ids[1:])
    assert session.can_back == (n > 0)
    assert n <= session.max_len
    if n:
        weights = session.accumulated(AttentionSite("decoder", 0).name("weights"))
        assert weights.shape[1:] == (n, n)


@FAST
@given(n=st.integers(1, 6), seed=st.integers(0, 1000))
def test_step_back_step_chooses_the_same_token(n, seed):
    session = _session(Sampling(seed=seed))
    for _ in range(n):
        if not session.can_step:
            break
        first = session.step().token_id
        session.back()
        assert session.step().token_id == first


# -- analyses --------------------------------------------------------------------------------------
def _attention(draw, *shape: int) -> np.ndarray:
    raw = np.asarray(draw(st.lists(st.floats(0.01, 1.0), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))))
    a = raw.reshape(shape)
    return a / a.sum(-1, keepdims=True)


SIZES = st.integers(1, 4)


@FAST
@given(st.data(), SIZES, SIZES, SIZES, SIZES)
def test_head_statistics_alignment_and_entropy_shapes(data, layers, heads, queries, keys):
    att = _attention(data.draw, layers, heads, queries, keys)
    stats = head_statistics(att)
    assert set(stats) == {"entropy", "distance", "max_weight"}
    assert all(v.shape == (layers, heads) for v in stats.values())
    assert alignment(att).shape == (layers, heads, queries)
    entropy = row_entropy(att)
    assert entropy.shape == (layers, heads, queries)
    assert np.all(entropy <= np.log(keys) + 1e-9) and np.all(entropy >= -1e-12)


@FAST
@given(st.data(), SIZES, SIZES, SIZES, SIZES)
def test_rollout_shapes_and_rows(data, layers, heads, t, s):
    enc = _attention(data.draw, layers, heads, s, s)
    r = rollout(enc)
    assert r.shape == (s, s) and np.allclose(r.sum(-1), 1.0)
    out = decoder_rollout(_attention(data.draw, layers, heads, t, t), _attention(data.draw, layers, heads, t, s), r)
    assert out["source"].shape == (t, s) and out["target"].shape == (t, t)
    assert np.allclose(out["source"].sum(-1) + out["target"].sum(-1), 1.0)


@pytest.mark.parametrize("seed", [2**63, -1])
def test_a_seed_out_of_range_is_refused(seed):
    with pytest.raises(DecodingError, match="seed"):
        Sampling(seed=seed)
