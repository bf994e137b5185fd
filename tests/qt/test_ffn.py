"""The FFN view: the hidden activations of the trace and their sparsity."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.core.analysis.ffn import ffn_data_for
from attnviz.qt.views.ffn import QtFfnView

from inside_fixtures import session
from story_helpers import click, shown


# -- FFN -------------------------------------------------------------------------------------------------
def test_ffn_view_shows_the_hidden_activations_and_their_sparsity(make_view, qtbot):
    s = session(steps=4)
    view = shown(make_view, QtFfnView, ffn_data_for(s, s.config))
    assert view.objectName() == "ffnView"
    view.select("cross", 1, 2)  # cross-attention's layer: the decoder's FFN
    hidden = s.accumulated("decoder.layers.1.ffn.hidden")
    np.testing.assert_allclose(view.heatmap.matrix(), hidden, atol=1e-6)
    assert view.heatmap.highlight_row() == 2
    assert view.off_share() == pytest.approx(float(np.mean(hidden == 0.0)))
    assert "ReLU sparsity" in view.title.plain_text() and f"{np.mean(hidden == 0.0):.1%}" in view.title.plain_text()
    heights = view.top_bars.opts["height"]
    np.testing.assert_allclose(heights, np.sort(hidden[2])[::-1][: len(heights)], atol=1e-6)
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heatmap.cell_center_in_scene(1, 5))
    assert sig.args == [{"query": 1}] and view.query() == 1
    data = view.figure_data()
    assert data.dims == ("token", "unit") and data.coords["token"] == s.input_pieces
    view.grab().save("/tmp/story_b_ffn.png")


def test_ffn_view_of_a_gelu_model_says_what_it_counts(make_view):
    from attnviz.core.bundle import Bundle
    from attnviz.core.decoding.session import DecodingSession

    from tiny_models import random_model, tokenizers

    src, tgt = tokenizers()
    b = Bundle(random_model(activation="gelu"), src, tgt, {})
    s = DecodingSession.from_bundle(b, "我是学生。", max_len=8)
    s.step()
    view = shown(make_view, QtFfnView, ffn_data_for(s, b.config))
    text = view.title.plain_text()
    assert "≤ 0 after GELU" in text and "exact zeros in" not in text
    assert view.off_share() == pytest.approx(float(np.mean(s.accumulated("encoder.layers.0.ffn.hidden") <= 0)))
