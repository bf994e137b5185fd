"""The decoding session: step/back/force/run, strategies, accumulated matrices, teacher forcing, bad inputs."""

from __future__ import annotations

import ast
import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from attnviz.core import Transformer, TransformerConfig
from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from attnviz.core.decoding.session import DecodeStep, DecodingSession, translate
from attnviz.core.decoding.strategies import BeamSearch, DecodingError, Greedy, Sampling, parse_strategy
from attnviz.core.decoding.teacher_forcing import teacher_forced, teacher_forced_from_bundle
from attnviz.core.model.sites import KINDS
from attnviz.core.model.trace import trace_names

from decoding_fixtures import random_bundle, random_model, reverse_bundle, tokenizers

ROOT = Path(__file__).resolve().parents[2]
SRC = "我是学生。"
CONFIGS = [("layer", "post"), ("layer", "pre"), ("batch", "post"), ("batch", "pre")]


def session(model=None, source=SRC, **kw) -> DecodingSession:
    src, tgt = tokenizers()
    return DecodingSession(model if model is not None else random_model(), src, tgt, source, **kw)


def full_pass(model, s: DecodingSession, names=None):
    """A full teacher-forced pass over the tokens the session fed to the decoder."""
    src = torch.tensor([s.src_ids])
    fed = torch.tensor([s.tgt_ids[:-1]])
    with torch.no_grad():
        return model.run_with_trace(src, fed, names=names)


def snapshot(s: DecodingSession) -> dict:
    out = {
        "tgt_ids": s.tgt_ids,
        "steps": [(d.index, d.token_id, d.topk, d.entropy, d.forced, d.beams) for d in s.steps],
        "finished": s.finished,
        "notices": tuple(s.notices),
        "beams": s.beams(),
    }
    if s.steps:
        for kind in ("decoder", "cross"):
            out[kind] = s.all_attention(kind).copy()
        out["probs"] = s.accumulated("generator.probs").copy()
    return out


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert np.array_equal(a[k], b[k]), k  # bit-exact
        else:
            assert a[k] == b[k], k


# -- step / back ----------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", [Greedy(), Sampling(temperature=1.5, seed=3), BeamSearch(width=3)], ids=["greedy", "sample", "beam"])
def test_step_back_round_trips_bit_exactly(strategy):
    s = session(strategy=strategy, max_len=12)
    before = []
    for _ in range(5):
        before.append(snapshot(s))
        first = s.step()
        after = snapshot(s)
        first_trace = {k: first.trace[k].copy() for k in first.trace}
        s.back()
        assert_same(before[-1], snapshot(s))
        again = s.step()  # the same step again: the same token, distribution and trace
        assert_same(after, snapshot(s))
        assert again.token_id == first.token_id and again.topk == first.topk
        assert again.trace.keys() == first_trace.keys()
        for k, v in first_trace.items():
            assert np.array_equal(again.trace[k], v), k
    for snap in reversed(before):  # all the way back to SOS
        s.back()
        assert_same(snap, snapshot(s))
    assert s.tgt_ids == (BOS_ID,) and s.steps == () and not s.can_back
    with pytest.raises(DecodingError, match="nothing to undo"):
        s.back()


def test_back_after_finish_allows_stepping_again():
    b = reverse_bundle()
    s = DecodingSession.from_bundle(b, "1 2 3")
    s.run()
    assert s.finished and s.steps[-1].is_eos
    with pytest.raises(DecodingError, match="finished"):
        s.step()
    with pytest.raises(DecodingError, match="finished"):
        s.force("▁1")
    s.back()
    assert not s.finished and s.can_step
    assert s.step().is_eos


def test_reset_returns_to_sos_and_replays_identically():
    s = session(strategy=Sampling(temperature=2.0, seed=11), max_len=8)
    first = [d.token_id for d in s.run()]
    s.reset()
    assert s.tgt_ids == (BOS_ID,) and not s.finished
    assert [d.token_id for d in s.run()] == first


# -- strategies ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", ["1 2 3", "9 8 7 6 5", "4 4 0 1", "7", "3 1 4 1 5 9"])
def test_beam_width_one_equals_greedy_trained(source):
    b = reverse_bundle()
    g = DecodingSession.from_bundle(b, source)
    g.run()
    k1 = DecodingSession.from_bundle(b, source, strategy=BeamSearch(width=1))
    k1.run()
    assert g.tgt_ids == k1.tgt_ids
    assert g.tgt_ids[-1] == EOS_ID and g.finished and k1.finished
    assert [d.topk for d in g.steps] == [d.topk for d in k1.steps]
    assert np.array_equal(g.all_attention("cross"), k1.all_attention("cross"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_width_one_equals_greedy_random(seed):
    m = random_model(seed=seed)
    g = session(m, max_len=15)
    g.run()
    k1 = session(m, strategy=BeamSearch(width=1, length_penalty=1.0), max_len=15)
    k1.run()
    assert g.tgt_ids == k1.tgt_ids and g.notices == k1.notices


def test_sampling_is_reproducible_by_seed():
    m = random_model()
    runs = {}
    for seed in (5, 5, 6):
        s = session(m, strategy=Sampling(temperature=1.5, seed=seed), max_len=12)
        runs.setdefault(seed, []).append(tuple(d.token_id for d in s.run()))
    assert runs[5][0] == runs[5][1]
    assert runs[5][0] != runs[6][0]
    greedy = [d.token_id for d in session(m, max_len=12).run()]
    assert [d.token_id for d in session(m, strategy=Sampling(top_k=1, seed=9), max_len=12).run()] == greedy
    assert [d.token_id for d in session(m, strategy=Sampling(top_p=1e-6, seed=9), max_len=12).run()] == greedy


def test_sampling_respects_top_k():
    m = random_model(seed=4)
    s = session(m, strategy=Sampling(temperature=5.0, top_k=3, seed=1), max_len=12, top_k=5)
    for d in s.run():
        allowed = [i for _, i, _ in d.topk if i not in (PAD_ID, BOS_ID)][:3]
        assert d.token_id in allowed


def test_beam_search_exposes_ranked_beams_with_true_scores():
    m = random_model(seed=2)
    s = session(m, strategy=BeamSearch(width=3, length_penalty=0.0), max_len=10)
    for _ in range(4):
        d = s.step()
        beams = d.beams
        assert 1 <= len(beams) and sum(not b.finished for b in beams) <= 3
        assert [b.score for b in beams] == sorted((b.score for b in beams), reverse=True)
        assert beams[0].token_ids == s.tgt_ids and d.token_id == s.tgt_ids[-1]
        src, tgt = tokenizers()
        for b in beams:
            assert b.pieces == tuple(tgt.pieces(b.token_ids))
            with torch.no_grad():  # the score is the sum of the log-probabilities of a full pass
                logp = torch.log_softmax(m(torch.tensor([s.src_ids]), torch.tensor([b.token_ids[:-1]]))[0].double(), -1)
            expect = float(sum(logp[i, t] for i, t in enumerate(b.token_ids[1:])))
            assert b.score == pytest.approx(expect, abs=1e-4) and b.log_prob == pytest.approx(expect, abs=1e-4)
    # the steps follow the best beam, and its matrices are its own
    _, tr = full_pass(m, s, names=["*.weights"])
    for i in range(2):
        assert np.allclose(s.attention("cross", i), tr[f"decoder.layers.{i}.cross_attn.weights"], atol=1e-5)
        assert np.allclose(s.attention("decoder", i), tr[f"decoder.layers.{i}.self_attn.weights"], atol=1e-5)


def _sequence_log_prob(model, src_ids, tokens) -> float:
    """log P(tokens[1:] | SOS, source) from one full teacher-forced pass (float64 sums)."""
    with torch.no_grad():
        logits = model(torch.tensor([src_ids]), torch.tensor([tokens[:-1]]))[0].double()
    logp = torch.log_softmax(logits, -1)
    return float(sum(logp[i, t] for i, t in enumerate(tokens[1:])))


def test_wide_beam_search_finds_the_exact_best_sequence():
    """With a beam wider than every prefix set of a 6-token vocabulary, beam search is exhaustive:
    its best beam is the best of all sequences (EOS-terminated, or cut at the maximum length)."""
    src, tgt = tokenizers()
    torch.manual_seed(11)
    cfg = TransformerConfig(src_vocab_size=src.vocab_size, tgt_vocab_size=6, d_model=16, n_heads=2,
                            n_encoder_layers=1, n_decoder_layers=2, d_ff=32, dropout=0.0, max_len=16)
    model = Transformer(cfg).eval()
    max_len = 4
    s = DecodingSession(model, src, tgt, SRC, strategy=BeamSearch(width=64, length_penalty=0.0), max_len=max_len)
    s.run()
    generable = [t for t in range(6) if t not in (PAD_ID, BOS_ID)]
    best = -math.inf
    for n in range(1, max_len + 1):
        for body in itertools.product(generable, repeat=n):
            if EOS_ID in body[:-1] or (n < max_len and body[-1] != EOS_ID):
                continue
            best = max(best, _sequence_log_prob(model, s.src_ids, (BOS_ID, *body)))
    found = s.beams()[0]
    assert found.log_prob == pytest.approx(best, abs=1e-5)
    assert _sequence_log_prob(model, s.src_ids, found.token_ids) == pytest.approx(best, abs=1e-5)


def test_beam_search_keeps_the_k_best_prefixes():
    """After each step the live beams are the k best non-EOS extensions of the previous live beams."""
    m = random_model(seed=7)
    width = 3
    s = session(m, strategy=BeamSearch(width=width, length_penalty=0.0), max_len=6)
    live = [(BOS_ID,)]
    for _ in range(4):
        s.step()
        cands = []
        for prefix in live:
            for t in range(m.config.tgt_vocab_size):
                if t not in (PAD_ID, BOS_ID, EOS_ID):
                    cands.append((_sequence_log_prob(m, s.src_ids, (*prefix, t)), (*prefix, t)))
        cands.sort(reverse=True)
        got = sorted((b.log_prob, b.token_ids) for b in s.beams() if not b.finished)
        got.reverse()
        assert [t for _, t in got] == [t for _, t in cands[:width]]
        assert [lp for lp, _ in got] == pytest.approx([lp for lp, _ in cands[:width]], abs=1e-5)
        live = [t for _, t in got]


def test_parse_strategy():
    assert parse_strategy("greedy") == Greedy()
    assert parse_strategy("beam:5") == BeamSearch(width=5)
    assert parse_strategy("beam") == BeamSearch()
    assert parse_strategy("sample:0.7", seed=3) == Sampling(temperature=0.7, seed=3)
    for bad in ("", "beam:0", "beam:x", "sample:-1", "sample:nan", "greedy:2", "topk"):
        with pytest.raises(DecodingError):
            parse_strategy(bad)
    with pytest.raises(DecodingError, match="top-p"):
        Sampling(top_p=0.0)


def test_set_strategy_restarts_or_keeps_tokens():
    s = session(max_len=10)
    s.step()
    s.step()
    kept = s.tgt_ids
    s.set_strategy(BeamSearch(width=2), keep_tokens=True)
    assert s.tgt_ids == kept and all(d.forced for d in s.steps)
    s.set_strategy(Greedy())
    assert s.tgt_ids == (BOS_ID,)


# -- force -----------------------------------------------------------------------------------------------
def test_forced_tokens_appear_in_the_output_and_the_matrices():
    m = random_model(seed=1)
    s = session(m, max_len=12)
    s.step()
    src, tgt = tokenizers()
    # word-start pieces whose text without the mark is not a piece of its own
    words = [p for p in tgt.pieces(range(4, tgt.vocab_size)) if p.startswith("▁") and len(p) > 2 and tgt.piece_to_id(p[1:]) == UNK_ID]
    d = s.force(words[0])  # by piece
    piece_id = d.token_id
    assert d.forced and d.piece == words[0] == tgt.piece(piece_id) and s.tgt_ids[-1] == piece_id
    assert d.prob == pytest.approx(dict((i, p) for _, i, p in s.steps[-1].topk).get(piece_id, d.prob))
    s.force(7)  # by id
    s.force(words[-1][1:])  # typed without the word-start mark
    assert s.tgt_ids[-1] == tgt.piece_to_id(words[-1])
    s.step()
    s.step()
    assert [x.forced for x in s.steps] == [False, True, True, True, False, False]
    assert s.tgt_ids[2] == piece_id and s.tgt_ids[3] == 7
    assert s.input_pieces[2] == tgt.piece(piece_id)
    assert words[0][1:] in s.translation() and words[-1][1:] in s.translation()
    # the forced token is a query row and a key column of the decoder matrices, as in a full pass
    _, tr = full_pass(m, s, names=["*.weights"])
    for i in range(2):
        a = s.attention("decoder", i)
        assert a.shape == (4, 6, 6)
        assert np.allclose(a, tr[f"decoder.layers.{i}.self_attn.weights"], atol=1e-5)
        assert np.allclose(s.attention("cross", i), tr[f"decoder.layers.{i}.cross_attn.weights"], atol=1e-5)
        assert (a[:, 2, 3:] == 0).all() and (a[:, 3:, 2] > 0).all()


def test_force_eos_finishes_and_force_in_beam_search_continues_from_the_best_beam():
    s = session(strategy=BeamSearch(width=3), max_len=10)
    s.step()
    s.step()
    best = s.tgt_ids
    d = s.force(5)
    assert s.tgt_ids == best + (5,) and len(d.beams) == 1 and d.forced
    s.step()
    assert s.tgt_ids[: len(best) + 1] == best + (5,)
    s.force("EOS")
    assert s.finished and s.steps[-1].is_eos and s.translation() == s.tgt_tokenizer.decode(s.tgt_ids)


@pytest.mark.parametrize("token,match", [("▁zzzqq", "not a piece"), ("", "cannot force"), (10_000, "outside"), (-1, "outside"),
                                         ("PAD", "cannot force PAD"), (BOS_ID, "cannot force SOS"), (None, "cannot force")])
def test_force_of_a_bad_token_is_a_clear_error(token, match):
    s = session()
    with pytest.raises(DecodingError, match=match):
        s.force(token)
    assert s.tgt_ids == (BOS_ID,)  # nothing changed


# -- accumulated matrices -----------------------------------------------------------------------------
def _same(a, b, atol=1e-5):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False
    inf_a, inf_b = np.isinf(a), np.isinf(b)
    return np.array_equal(inf_a, inf_b) and np.array_equal(a[inf_a], b[inf_b]) and np.allclose(a[~inf_a], b[~inf_b], atol=atol, rtol=1e-4)


@pytest.mark.parametrize("norm,placement", CONFIGS)
def test_accumulated_arrays_equal_a_full_recompute(norm, placement):
    m = random_model(norm, placement, seed=3, final_norm=placement == "pre")
    s = session(m, max_len=9)
    s.run()
    assert len(s.steps) == 9 and "maximum length" in s.notices[-1]
    logits, tr = full_pass(m, s)
    names = trace_names(m.config, encoder=False)
    for name in names:
        assert _same(s.accumulated(name), tr[name]), name
    for name in trace_names(m.config, decoder=False):
        assert _same(s.accumulated(name), tr[name]), name
    a = s.all_attention("decoder")
    assert a.shape == (2, 4, 9, 9) and (a[..., np.triu_indices(9, 1)[0], np.triu_indices(9, 1)[1]] == 0).all()
    assert s.all_attention("cross").shape == (2, 4, 9, len(s.src_ids))
    assert s.all_attention("encoder").shape == (2, 4, len(s.src_ids), len(s.src_ids))
    # the per-step rows are the accumulated rows
    for d in s.steps:
        assert d.trace["decoder.layers.1.cross_attn.weights"].shape == (4, 1, len(s.src_ids))
        assert d.trace["decoder.layers.1.self_attn.weights"].shape == (4, 1, d.index + 1)
        assert np.array_equal(d.trace["decoder.layers.1.self_attn.weights"][:, 0], a[1, :, d.index, : d.index + 1])
        assert int(logits[0, d.index].argmax()) == d.topk[0][1]


def test_accumulated_arrays_are_read_only_and_cached_rows_are_not_recomputed():
    s = session(max_len=5)
    s.run()
    a = s.attention("cross", 0)
    with pytest.raises(ValueError):
        a[0, 0, 0] = 1.0
    calls = []
    original = s.model.decode_step
    s.model.decode_step = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        s.all_attention("decoder"), s.accumulated("decoder.layers.0.self_attn.scaled_scores"), s.steps
    finally:
        del s.model.decode_step
    assert calls == []


def test_attention_before_any_step_is_empty_with_the_right_axes():
    s = session()
    assert s.attention("cross", 1).shape == (4, 0, len(s.src_ids))
    assert s.attention("decoder", 0).shape == (4, 0, 0)
    assert s.attention("encoder", 0).shape == (4, len(s.src_ids), len(s.src_ids))
    with pytest.raises(IndexError):
        s.attention("cross", 2)
    with pytest.raises(ValueError):
        s.attention("nope", 0)


# -- teacher forcing -------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm,placement", CONFIGS[::3])
def test_teacher_forced_predictions_equal_the_argmax_of_a_full_forward(norm, placement):
    m = random_model(norm, placement, seed=5)
    src, tgt = tokenizers()
    tf = teacher_forced(m, src, tgt, SRC, "I am a student.", top_k=4)
    y = tgt.encode("I am a student.")
    assert tf.input_ids == (BOS_ID, *y) and tf.output_ids == (*y, EOS_ID)
    with torch.no_grad():
        logits = m(torch.tensor([src.encode(SRC)]), torch.tensor([tf.input_ids]))[0]
    logp = torch.log_softmax(logits.double(), -1)
    assert list(tf.predicted_ids) == logits.argmax(-1).tolist()
    for p in tf.steps:
        assert p.match == (p.predicted_id == p.token_id)
        assert p.loss == pytest.approx(-float(logp[p.index, p.token_id]), abs=1e-5)
        assert p.prob == pytest.approx(math.exp(-p.loss), rel=1e-4)
        assert p.topk[0][1] == p.predicted_id and len(p.topk) == 4
        assert p.input_piece == tgt.piece(p.input_id) and p.piece == tgt.piece(p.token_id)
    assert tf.loss == pytest.approx(float(np.mean([p.loss for p in tf.steps])))
    assert tf.all_attention("cross").shape == (2, 4, len(y) + 1, len(tf.src_ids))
    assert tf.steps[-1].piece == "EOS"


def test_teacher_forced_on_the_trained_model_matches_and_equals_stepping():
    b = reverse_bundle()
    tf = teacher_forced(b.model, b.src_tokenizer, b.tgt_tokenizer, "5 2 8", "8 2 5")
    assert tf.accuracy == 1.0 and tf.loss < 0.5
    s = DecodingSession.from_bundle(b, "5 2 8")
    s.run()
    assert s.tgt_ids[:-1] == tf.input_ids
    assert np.allclose(s.all_attention("cross"), tf.all_attention("cross"), atol=1e-5)
    empty = teacher_forced(b.model, b.src_tokenizer, b.tgt_tokenizer, "5 2 8", "")
    assert empty.input_ids == (BOS_ID,) and empty.output_ids == (EOS_ID,)


# -- one protocol: a session and a teacher-forced pass answer the same questions -------------------------
def _both_results() -> dict:
    """A decoding of "5 2 8" to EOS and the teacher-forced pass over what it decoded ("8 2 5")."""
    b = reverse_bundle()
    s = DecodingSession.from_bundle(b, "5 2 8", top_k=5)
    s.run()
    tf = teacher_forced_from_bundle(b, "5 2 8", "8 2 5", top_k=5)
    return {"session": s, "teacher_forced": tf}


@pytest.mark.parametrize("which,other", [("session", "teacher_forced"), ("teacher_forced", "session")])
def test_a_session_and_a_teacher_forced_pass_answer_the_same_questions(which, other):
    results = _both_results()
    r, o = results[which], results[other]
    cfg = r.config
    n, n_src = len(r.input_ids), len(r.src_ids)
    assert n == 4 and len(r.input_pieces) == len(r.output_ids) == len(r.output_pieces) == len(r.steps) == n
    assert r.input_ids[0] == cfg.bos_id and r.input_ids[1:] == r.output_ids[:-1] and r.output_ids[-1] == cfg.eos_id
    assert r.src_pieces == o.src_pieces and r.input_ids == o.input_ids and r.output_pieces == o.output_pieces
    for kind in KINDS:
        rows, keys = {"encoder": (n_src, n_src), "decoder": (n, n), "cross": (n, n_src)}[kind]
        layers = r.n_layers(kind)
        assert r.all_attention(kind).shape == (layers, cfg.n_heads, rows, keys)
        assert r.attention(kind, layers - 1).shape == (cfg.n_heads, rows, keys)
        assert np.allclose(r.all_attention(kind), o.all_attention(kind), atol=1e-5)
    for name in trace_names(cfg):
        assert _same(r.accumulated(name), o.accumulated(name)), name
    for i, (a, b) in enumerate(zip(r.steps, o.steps)):
        assert a.index == i and a.token_id == r.output_ids[i] == b.token_id and a.piece == r.output_pieces[i]
        assert a.prob == pytest.approx(b.prob, abs=1e-5) and a.entropy == pytest.approx(b.entropy, abs=1e-5)
        assert [t for _, t, _ in a.topk] == [t for _, t, _ in b.topk] and len(a.topk) == 5
        assert a.forced == (which == "teacher_forced")


# -- peek ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", [Greedy(), Sampling(temperature=1.5, seed=3), BeamSearch(width=3)], ids=["greedy", "sample", "beam"])
def test_peek_changes_nothing_and_is_what_the_next_step_reports(strategy):
    s = session(strategy=strategy, max_len=6)
    calls = []
    original = s.model.decode_step
    s.model.decode_step = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        for i in range(6):
            before = snapshot(s)
            peek = s.peek()
            assert s.peek() == peek and s.n_steps == i
            assert_same(before, snapshot(s))
            d = s.step()
            assert (d.topk, d.entropy) == (peek.topk, peek.entropy)
        assert len(calls) == 6  # the step reused the peek's model call
        with pytest.raises(DecodingError, match="finished"):
            s.peek()
        s.back()
        peek = s.peek()
        forced = s.force(peek.topk[-1][1])
        if not isinstance(strategy, BeamSearch):  # one live hypothesis: force() reuses the peek's call
            assert forced.topk == peek.topk and len(calls) == 7
    finally:
        del s.model.decode_step


# -- bad inputs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_source_is_a_clear_error(text):
    with pytest.raises(DecodingError, match="empty"):
        session(source=text)
    src, tgt = tokenizers()
    with pytest.raises(DecodingError, match="empty"):
        teacher_forced(random_model(), src, tgt, text, "I am.")


def test_too_long_source_is_truncated_with_a_notice():
    m = random_model(max_len=12)
    s = session(m, source="我是学生。" * 6)
    assert len(s.src_ids) == 12
    assert any("truncated" in n and "12 of 30" in n for n in s.notices)
    s.run()
    assert len(s.steps) <= 12


def test_unknown_characters_become_unk_with_a_notice():
    s = session(source="我是X学生☃")
    assert "UNK" in s.src_pieces
    assert any("X" in n and "U+2603" in n and "UNK" in n for n in s.notices)  # a symbol by its code point
    s.step()
    src, tgt = tokenizers()
    tf = teacher_forced(random_model(), src, tgt, "我是学生", "I am a ☃")
    assert any("target" in n and "U+2603" in n for n in tf.notices)


def test_model_in_training_mode_is_refused():
    m = random_model()
    m.train()
    with pytest.raises(DecodingError, match="training mode"):
        session(m)


def test_translate_and_steps_are_immutable():
    b = reverse_bundle()
    text, steps = translate(b, "3 1 4", BeamSearch(width=2))
    assert text == "4 1 3" and steps[-1].is_eos
    assert isinstance(steps[0], DecodeStep)
    with pytest.raises(dataclasses.FrozenInstanceError):
        steps[0].token_id = 5
    s = DecodingSession.from_bundle(b, "3 1 4")
    d = s.step()
    with pytest.raises(ValueError):
        d.trace["decoder.layers.0.cross_attn.weights"][0, 0, 0] = 0.0


def _attnviz_imports(path):
    """Modules imported anywhere in ``path`` (absolute names; relative imports resolved inside attnviz)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def test_decoding_analysis_and_trace_command_never_import_qt():
    """Static proof over the whole attnviz import closure of these modules (no Qt, no attnviz.qt)."""
    todo = ["attnviz.core.decoding.session", "attnviz.core.analysis.stats", "attnviz.commands.trace"]
    seen = set()
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        todo += [".".join(mod.split(".")[:i]) for i in range(1, mod.count(".") + 1)]  # parent packages run too
        path = ROOT / (mod.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT / mod.replace(".", "/") / "__init__.py"
        if not path.exists():
            continue  # a name imported from a module, not a module
        for imp in _attnviz_imports(path):
            assert not imp.startswith(("PySide6", "pyqtgraph", "attnviz.qt")), (mod, imp)
            if imp.startswith("attnviz"):
                todo.append(imp)
    assert {"attnviz", "attnviz.core", "attnviz.core.model.transformer", "attnviz.core.model.trace"} <= seen


def test_from_bundle_uses_the_bundle_parts():
    b = random_bundle(seed=4)
    s = DecodingSession.from_bundle(b, SRC, max_len=3, top_k=3)
    s.run()
    assert s.max_len == 3 and len(s.steps) == 3 and all(len(d.topk) == 3 for d in s.steps)


# -- frozen results --------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", [Greedy(), BeamSearch(width=3)], ids=["greedy", "beam"])
def test_a_prefix_is_the_session_as_it_was_and_stays_so(strategy):
    """``prefix(n)`` answers as the session did after n steps, and later steps, back and reset
    leave it as it is (a worker reads it while the session steps on)."""
    s = session(strategy=strategy, max_len=12)
    snaps, frozen = [], []
    for _ in range(4):
        s.step()
        snaps.append(snapshot(s))
        frozen.append(s.frozen())
    assert s.prefix(2).output_ids == frozen[1].output_ids
    s.back()
    s.back()
    s.force(EOS_ID)
    s.reset()
    for snap, f in zip(snaps, frozen):
        assert f.input_ids + f.output_ids[-1:] == snap["tgt_ids"] and f.frozen() is f
        assert [(d.index, d.token_id, d.topk, d.entropy, d.forced, d.beams) for d in f.steps] == snap["steps"]
        for kind in ("decoder", "cross"):
            assert np.array_equal(f.all_attention(kind), snap[kind]), kind
        assert np.array_equal(f.accumulated("generator.probs"), snap["probs"])


def test_prefix_of_a_step_count_that_is_not_kept_is_refused():
    s = session(max_len=6)
    s.step()
    assert s.prefix(0).steps == () and s.prefix(1).output_ids == s.output_ids
    with pytest.raises(DecodingError, match="no prefix of 2 steps"):
        s.prefix(2)


def test_a_teacher_forced_pass_is_frozen_already():
    b = random_bundle()
    forced = teacher_forced_from_bundle(b, "我是学生。", "I am a student.")
    assert forced.frozen() is forced
