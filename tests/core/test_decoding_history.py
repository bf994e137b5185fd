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
