"""The residual-stream view: the norms of the trace, and a click that asks for a sublayer and moves
the linked views."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore

from attnviz.core.analysis.residual import ResidualFrame, residual_data_for
from attnviz.qt.selection import Selection
from attnviz.qt.views.residual import QtResidualView

from inside_fixtures import session
from story_helpers import click, shown, shown_view_set


# -- residual stream -------------------------------------------------------------------------------------
def test_residual_view_draws_the_norms_and_a_click_asks_for_the_sublayer(make_view, qtbot):
    s = session(steps=4, placement="pre")
    view = shown(make_view, QtResidualView, ResidualFrame(residual_data_for(s, s.config)))
    assert view.objectName() == "residualView"
    enc = view.plots["encoder"]
    x, y = enc.stream.getData()
    expected = [np.linalg.norm(s.accumulated("encoder.embed.sum"), axis=-1).mean()]
    for i in range(2):
        for j in (1, 2):
            expected.append(np.linalg.norm(s.accumulated(f"encoder.layers.{i}.residual{j}"), axis=-1).mean())
    np.testing.assert_allclose(y, expected, rtol=1e-5)
    dec_x, dec_y = view.plots["decoder"].stream.getData()
    assert len(dec_x) == 1 + 2 * 3
    # click the decoder's point after layer 2's cross-attention (point 5)
    point = view.plots["decoder"].plot.getViewBox().mapViewToScene(QtCore.QPointF(dec_x[5], dec_y[5]))
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, point)
    assert sig.args == [{"kind": "cross", "layer": 1}]
    assert view.selected_point() == ("decoder", 5)
    data = view.figure_data()
    assert data.values["mean_stream_norm"][0] == pytest.approx(expected[0], rel=1e-5)


def test_a_residual_click_moves_the_linked_views(qtbot):
    names = ("residual", "ffn", "norm-batch")
    s, views = shown_view_set(qtbot, names)
    views["residual"].request_point("decoder", 6)  # decoder layer 2's FFN
    assert views.selection.value() == Selection("decoder", 1, 0, "head", None)
    assert (views["ffn"].current().stack, views["ffn"].current().layer) == ("decoder", 1)
    assert views["norm-batch"].site().site.startswith("decoder.layers.1.")
    for name in names:
        views[name].close()
