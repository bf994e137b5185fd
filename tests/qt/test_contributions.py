"""The source-vs-target view: one line per decoder layer (either reading) and the overall share,
as the core computes them; it sits in the bottom docks; a model without cross-attention (GPT-2)
shows why there is no share instead of a plot."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.core.analysis.contributions import contributions_for, not_applicable
from attnviz.qt.views.contributions import ContributionsFrame, QtContributionsView
from attnviz.qt.views.registry import view_spec

from inside_fixtures import bundle, session
from story_helpers import shown, shown_view_set


@pytest.fixture(scope="module")
def result():
    b = bundle()
    return contributions_for(session(steps=4), b.model, b.tgt_tokenizer)


def test_one_line_per_layer_and_the_overall_share(make_view, result):
    view = shown(make_view, QtContributionsView, ContributionsFrame(result))
    assert view.objectName() == "contributionsView" and view.has_data()
    assert len(result.output_pieces) == 4
    _, overall = view.overall.getData()
    np.testing.assert_allclose(overall, result.source_share)
    for i, line in enumerate(view.layer_lines):
        np.testing.assert_allclose(line.getData()[1], result.layer_source[i])
    view.set_options({"contributionLayers": 1})
    for i, line in enumerate(view.layer_lines):
        np.testing.assert_allclose(line.getData()[1], result.rolled_source[i])
    np.testing.assert_allclose(view.layer_lines[-1].getData()[1], overall)  # rolled up to the last layer: the overall share
    assert np.all((overall >= 0) & (overall <= 1))


def test_the_view_set_computes_it_in_a_worker_in_the_bottom_docks(qtbot):
    s, views = shown_view_set(qtbot, ("contributions",))
    view = views["contributions"]
    b = bundle()
    expected = contributions_for(s.frames.frozen(), b.model, b.tgt_tokenizer)
    np.testing.assert_allclose(view.result().source_share, expected.source_share)
    assert view_spec("contributions").area == "bottom" and s.analyses.counts["submitted"] >= 1


def test_a_model_without_cross_attention_shows_why_instead_of_a_plot(loaded, tiny_family):
    _, view, _, ok = loaded("contributions", model=tiny_family("gpt2"), source="the cat sat")
    assert not ok and not view.has_data()
    assert view.reason() == not_applicable(tiny_family("gpt2").config) and view.reason_label.isVisibleTo(view)
    assert not view.plot.isVisible()
