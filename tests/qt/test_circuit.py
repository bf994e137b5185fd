"""The circuit view: its graph draws the core's top edges (computed in a worker that
differentiates), its curve the core's recovered shares, a click on a head selects it, the other
sentence and k are options, and a post-norm model says why it has no circuit."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtWidgets

from attnviz.core.analysis.circuit import circuit
from attnviz.core.analysis.compare import swap_ends

from inside_fixtures import bundle, session
from story_helpers import OTHER, click, session_for, shown_views


def shown_circuit(qtbot, placement: str = "pre"):
    """A ViewSet of the circuit view alone on a tiny model's session (4 steps), shown and computed."""
    s = session_for(bundle(placement=placement), session(steps=4, placement=placement))
    views = shown_views(qtbot, s, ("circuit",))
    assert s.analyses.wait()
    return s, views["circuit"]


def test_the_graph_and_curve_are_the_core_s_and_a_click_selects_a_head(qtbot):
    s, view = shown_circuit(qtbot)
    assert view.objectName() == "circuitView"
    this = s.current.source.text
    expected = circuit(bundle(placement="pre"), this, swap_ends(this), ks=(20,))
    got = view.result()
    assert got is not None
    np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-6, atol=1e-9)
    edges = view.shown_edges()
    assert len(edges) == 20 and sum(item.isVisible() for item in view.edge_items) == 20
    np.testing.assert_array_equal(edges, expected.top(20))
    _, ys = view.curve.getData()
    np.testing.assert_allclose(ys, 100 * expected.recovered, atol=1e-6)
    assert ys[0] == pytest.approx(0, abs=1e-2) and ys[-1] == pytest.approx(100, abs=1e-2)
    g = got.graph
    head = next(n for e in edges for n in (int(g.edge_up[e]), g.edge_down(int(e))) if g.nodes[n].kind == "head")
    node = g.nodes[head]
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.node_center_in_scene(head))
    assert sig.args == [{"kind": node.attention, "layer": node.layer, "head": node.head, "mode": "head"}]


def test_the_other_sentence_and_k_are_options(qtbot):
    s, view = shown_circuit(qtbot)
    view.set_options({"circuitOtherEdit": OTHER, "circuitTopSpin": 7})
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.result() is not None and 7 in view.result().ks and view.result().corrupt_pieces[0] == OTHER[0], timeout=20000)
    got = view.result()
    expected = circuit(bundle(placement="pre"), s.current.source.text, OTHER, ks=(7,))
    np.testing.assert_allclose(got.metric_at_k, expected.metric_at_k, rtol=1e-6, atol=1e-9)
    assert sum(item.isVisible() for item in view.edge_items) == 7
    xs, _ = view.current.getData()
    assert list(xs) == [float(got.ks.index(7))]
    data = view.figure_data()
    assert data.dims == ("edge",) and len(data.values["score"]) == got.graph.n_edges


def test_a_post_norm_model_says_why_in_the_title(qtbot):
    _s, view = shown_circuit(qtbot, placement="post")
    assert view.result() is None and not view.graph_plot.isVisible()
    assert "pre-norm" in view.title.plain_text()


@pytest.mark.slow
def test_the_default_model_s_circuit_on_screen(qtbot, loaded, tmp_path):
    """猫吃鱼。 against 鱼吃猫。 on the bundled model at about 1000×650: the decision is cat or fish, and the picture is drawn."""
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model

    _spec, view, _session, ok = loaded("circuit", model=load_bundle(default_model()), source="猫吃鱼。")
    assert ok
    view.resize(1000, 650)
    view.show()
    qtbot.waitExposed(view)
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    c = view.result()
    nouns = {t.strip("▁").lower().removesuffix("s") for t in (c.clean_token, c.corrupt_token)}
    assert c.clean_token != c.corrupt_token and nouns == {"cat", "fish"}  # "cat(s)" against "fish", in either order
    image = view.grab().toImage()
    assert image.width() >= 1000 and len({image.pixel(x, y) for x in range(0, 1000, 25) for y in range(100, 600, 25)}) > 5
