"""The logit-attribution view: its heatmap holds the heads' terms and its bars the other terms of
the core's split, a click selects a head, the contrast token is an option computed again (a bad
one is said in the view), and the registry feeds it through a worker."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.core.analysis.attribution import AttributionError, token_id
from attnviz.core.analysis.logit_attribution import logit_attribution_for
from attnviz.qt.views.logit_attribution import LogitAttributionFrame, QtLogitAttributionView

from inside_fixtures import bundle, session
from story_helpers import click, shown, shown_view_set


@pytest.fixture(scope="module")
def result():
    b = bundle(placement="pre")
    return logit_attribution_for(session(steps=4, placement="pre"), None, b.model, b.tgt_tokenizer)


def test_the_heatmap_holds_the_heads_terms_the_bars_the_rest_and_a_click_selects_a_head(make_view, qtbot, result):
    view = shown(make_view, QtLogitAttributionView, LogitAttributionFrame(result))
    assert view.objectName() == "logitAttributionView" and view.has_data()
    matrix = view.heatmap.matrix()
    np.testing.assert_allclose(matrix, np.concatenate([result.heads("decoder"), result.heads("cross")]))
    heights = view.bars.opts["height"]
    others = [v for t, v in zip(result.terms, result.values) if t.group != "head"]
    np.testing.assert_allclose(heights, others)
    assert float(matrix.sum() + np.sum(heights)) == pytest.approx(result.logit - result.output_bias, abs=1e-4)
    assert result.position == 3  # the last row: the step on screen
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heatmap.cell_center_in_scene(3, 1))  # cross-attention layer 2, head 2
    assert sig.args == [{"kind": "cross", "layer": 1, "head": 1, "mode": "head"}]
    assert not view.reason_label.isVisible()


def test_the_contrast_token_is_an_option_and_a_bad_one_is_said_in_the_view(qtbot):
    s, views = shown_view_set(qtbot, ("logit-attribution",))
    view = views["logit-attribution"]
    plain = view.result()
    assert plain is not None and plain.contrast_piece is None
    other = s.frames.frozen().steps[-1].topk[1][0]  # the step's runner-up
    view.set_options({"contrastEdit": other})
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.result() is not None and view.result().contrast_piece == other, timeout=10000)
    r = view.result()
    assert r.exact and r.logit != pytest.approx(plain.logit)
    assert view.options() == {"contrastEdit": other}
    view.set_options({"contrastEdit": "no-such-piece-here"})
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.reason() is not None, timeout=10000)
    with pytest.raises(AttributionError) as bad:
        token_id(s.bundle.tgt_tokenizer, "no-such-piece-here")
    assert view.reason() == str(bad.value) and not view.has_data()  # the core's reason, said in the view
    assert view.reason_label.isVisible() and not view.heatmap.isVisible()
