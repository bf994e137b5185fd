"""HeadSet, the window's ablated heads as one value: on-screen names (1-based) round-trip,
toggling, refusals in one line, and its plan equals the interventions ``attnviz ablate`` uses."""

from __future__ import annotations

import pytest

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.teacher_forcing import log_prob_of
from attnviz.core.model.interventions import InterventionError, ablation, parse_heads
from attnviz.paths import default_model


def test_names_round_trip_in_the_order_of_the_kinds():
    heads = HeadSet.parse("cross:3:2,encoder:1:1,decoder:2:4", "uniform")
    assert heads.text() == "encoder:1:1,decoder:2:4,cross:3:2" and heads.kind == "uniform"
    assert HeadSet.parse(heads.text(), "uniform") == heads
    assert ("cross", 2, 1) in heads.heads and bool(heads) and not HeadSet()


def test_toggling_adds_and_removes_one_head():
    heads = HeadSet().toggled("cross", 2, 1)
    assert heads.heads == {("cross", 2, 1)}
    assert not heads.toggled("cross", 2, 1)


@pytest.mark.parametrize("text,kind", [("cross:0:1", "zero"), ("nope:1:1", "zero"), ("cross:1:1", "half")])
def test_bad_heads_or_kinds_are_refused_in_one_line(text, kind):
    with pytest.raises(InterventionError) as err:
        HeadSet.parse(text, kind)
    assert "\n" not in str(err.value)


def test_a_head_past_the_model_is_refused():
    config = load_bundle(default_model()).config
    with pytest.raises(InterventionError):
        HeadSet.parse(f"cross:{config.n_decoder_layers + 1}:1").check(config)
    HeadSet.parse("cross:1:1").check(config)


def test_the_mean_plan_averages_over_the_clean_pass_like_attnviz_ablate():
    b = load_bundle(default_model())
    src, out = (5, 6, 7, b.config.eos_id), (8, 9, b.config.eos_id)
    heads = HeadSet.parse("cross:2:3,encoder:1:2", "mean")
    mine, _ = log_prob_of(b.model, src, out, heads.plan(b.model, src, out))
    sites = parse_heads("cross:2:3,encoder:1:2")
    _, ref = log_prob_of(b.model, src, out, names=[s.name("z") for s in sites])
    theirs, _ = log_prob_of(b.model, src, out, [ablation(s, h, "mean", ref) for s, h in sites.items()])
    clean, _ = log_prob_of(b.model, src, out)
    assert mine == pytest.approx(theirs, abs=1e-9) and abs(mine - clean) > 1e-4
