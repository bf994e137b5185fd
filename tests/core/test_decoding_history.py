"""StepHistory: a step's accumulated arrays extend the step before's (one row appended) and equal a
full recompute, through steps, back and beam searches whose best beam changes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, Greedy
from attnviz.core.model.trace import trace_names

from tiny_models import random_model, tokenizers


def full_pass(model, s: DecodingSession):
    with torch.no_grad():
        return model.run_with_trace(torch.tensor([s.src_ids]), torch.tensor([s.tgt_ids[:-1]]))[1]


def same(a, b) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    inf = np.isinf(a)
    return a.shape == b.shape and np.array_equal(inf, np.isinf(b)) and np.array_equal(a[inf], b[inf]) \
        and np.allclose(a[~inf], b[~inf], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("strategy", [Greedy(), BeamSearch(3)], ids=["greedy", "beam"])
def test_arrays_read_at_every_step_equal_a_full_recompute(strategy):
    model = random_model(seed=5)
    src, tgt = tokenizers()
    s = DecodingSession(model, src, tgt, "我是学生。", strategy=strategy, max_len=8)
    names = trace_names(model.config, encoder=False)
    for _ in range(6):  # every step reads every array: the next step's extend them
        s.step()
        for name in names:
            s.accumulated(name)
    s.back()
    s.step()
    s.step()
    reference = full_pass(model, s)
    for name in names:
        assert same(s.accumulated(name), reference[name]), name
    a = s.all_attention("decoder")
    upper = np.triu(np.ones(a.shape[-2:], bool), 1)
    assert (a[..., upper] == 0).all()


@pytest.mark.parametrize("strategy", [Greedy(), BeamSearch(3)], ids=["greedy", "beam"])
def test_every_layers_attention_stacked_step_by_step_equals_the_layers_one_by_one(strategy):
    model = random_model(seed=6)
    src, tgt = tokenizers()
    s = DecodingSession(model, src, tgt, "他去学校了。", strategy=strategy, max_len=8)
    for n in range(7):
        if n == 4:
            s.back()
            s.back()
        s.step()
        frozen = s.frozen()
        for kind in ("decoder", "cross"):
            stacked = s.all_attention(kind)
            assert not stacked.flags.writeable
            layers = np.stack([s.attention(kind, i) for i in range(model.config.n_decoder_layers)])
            assert np.array_equal(stacked, layers) and np.array_equal(frozen.all_attention(kind), layers), (n, kind)
    reference = full_pass(model, s)
    assert same(s.all_attention("decoder")[1], reference["decoder.layers.1.self_attn.weights"])


def _held(s: DecodingSession) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every attention array a view could hold now, each with a copy of its values."""
    arrays = [s.all_attention("decoder"), s.all_attention("cross"), s.attention("decoder", 1), s.attention("cross", 0)]
    return [(a, a.copy()) for a in arrays]


def _equals_full_pass(model, s: DecodingSession) -> None:
    reference = full_pass(model, s)
    for kind in ("decoder", "cross"):
        site = "self_attn" if kind == "decoder" else "cross_attn"
        layers = np.stack([reference[f"decoder.layers.{i}.{site}.weights"] for i in range(model.config.n_decoder_layers)])
        assert same(s.all_attention(kind), layers), (kind, len(s.steps))
        assert same(s.attention(kind, 1), layers[1]), (kind, len(s.steps))


def test_an_array_once_returned_never_changes_through_steps_back_and_other_tokens():
    model = random_model(seed=7, max_len=40)
    src, tgt = tokenizers()
    s = DecodingSession(model, src, tgt, "我是学生。", max_len=30)
    held = []
    tokens = [t for t in range(5, tgt.vocab_size) if t != model.config.eos_id]
    for i in range(20):  # past the first buffer's capacity: the rows move to a larger one
        s.force(tokens[i % 7])
        held += _held(s)
        _equals_full_pass(model, s)
    for _ in range(3):  # back, then other tokens where the undone rows were: held arrays keep theirs
        s.back()
        held += _held(s)
        s.force(tokens[10])
        _equals_full_pass(model, s)
        held += _held(s)
        s.back()
    s.back()
    for i in range(6):
        s.force(tokens[(3 * i) % 11])
        _equals_full_pass(model, s)
        held += _held(s)
    s.reset()
    s.force(tokens[1])
    _equals_full_pass(model, s)
    for array, values in held:
        assert not array.flags.writeable
        assert np.array_equal(array, values)


def test_a_beam_searchs_arrays_equal_a_full_pass_at_every_step_and_stay_as_returned():
    model = random_model(seed=4)
    src, tgt = tokenizers()
    s = DecodingSession(model, src, tgt, "我是学生。", strategy=BeamSearch(3), max_len=12)
    held, rows, turns = [], (), 0
    while not s.finished:
        s.step()
        turns += s.input_ids[: len(rows)] != rows  # another beam took the lead: rows returned before changed
        rows = s.input_ids
        _equals_full_pass(model, s)
        held += _held(s)
    assert turns
    s.back()
    s.back()
    _equals_full_pass(model, s)
    held += _held(s)
    s.step()
    _equals_full_pass(model, s)
    for array, values in held:
        assert np.array_equal(array, values)


def test_a_step_writes_its_row_into_the_arrays_of_the_step_before_not_a_copy_of_them():
    model = random_model(seed=7)
    src, tgt = tokenizers()
    s = DecodingSession(model, src, tgt, "我是学生。", max_len=12)
    s.force(5)
    before = {kind: s.all_attention(kind) for kind in ("decoder", "cross")}
    s.force(6)
    for kind, earlier in before.items():
        now = s.all_attention(kind)
        assert now.shape[2] == earlier.shape[2] + 1
        assert np.shares_memory(now, earlier)  # the earlier rows stay where they are
        assert np.array_equal(now[:, :, :-1, : earlier.shape[3]], earlier)
