"""The beam-tree view: it draws every prefix of the core's tree with readable labels, a click on a
node makes that node its option, and the data function computes the node's cross-attention (in a
worker, as the window does) which the heatmap then shows."""

from __future__ import annotations

import functools

import numpy as np
import torch
from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.beam_tree import BeamTreeFrame, NodeAttention, beam_history, beam_tree, beam_tree_frame
from attnviz.core.bundle import load_bundle
from attnviz.core.data.pieces import display_piece
from attnviz.core.decoding.session import Beam, DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, Greedy
from attnviz.core.model.sites import attention_sites
from attnviz.paths import models_dir
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.beam_tree import NODE, SPEC, QtBeamTreeView, beam_tree_data

from story_helpers import click, session_for

SRC = "我喜欢吃鱼。"  # width 3 prunes beams at depths 1-3
SIZE = (1100, 600)


@functools.cache
def bundle():
    """zh-en-small (d_model 128), not the default: the tree's shape, labels and translation below
    (17 nodes, a beam pruned at depth 3, "I like fish.") are this model's, and stay when the
    default is retrained."""
    return load_bundle(models_dir() / "zh-en-small")


def decoded(strategy=BeamSearch(width=3)) -> DecodingSession:
    s = DecodingSession.from_bundle(bundle(), SRC, strategy=strategy)
    s.run()
    return s


def frame_of(s: DecodingSession, selected=None):
    return beam_tree_frame(bundle().model, s.source, beam_history(s), selected, s.interventions, s.strategy.describe())


def cross_weights(s: DecodingSession, token_ids) -> np.ndarray:
    """``[layer, head, query, key]`` of one pass with SOS and the node's tokens but the last fed, written out here."""
    model = bundle().model
    names = [site.name("weights") for site in attention_sites(model.config, "cross")]
    with torch.inference_mode():
        _, trace = model.run_with_trace(torch.tensor([s.source.ids]), torch.tensor([list(token_ids[:-1])]), names=names)
    return np.stack([trace[n] for n in names])


def overlaps(rects) -> list:
    return [(a, b) for n, a in enumerate(rects) for b in rects[n + 1:] if a.intersected(b).width() > 0.5 and a.intersected(b).height() > 0.5]


def test_the_view_draws_every_node_with_labels_that_never_overlap(make_view, qtbot, tmp_path):
    s = decoded()
    frame = frame_of(s)
    view = make_view(QtBeamTreeView, SIZE, frame, shown=True)
    QtWidgets.QApplication.processEvents()
    qtbot.wait(20)
    assert view.objectName() == "beamTreeView" and SPEC.name == "beam-tree" and SPEC.reads_options
    tree = frame.tree
    assert view.drawn_nodes() == len(tree.nodes) == 17
    labels = view.label_items()
    assert [item.toPlainText() for item in labels][:3] == ["SOS", f"{display_piece('▁I')} −0.08", f"{display_piece('▁He')} −7.16"]
    label_rects = [item.sceneBoundingRect() for item in labels]
    assert not overlaps(label_rects)
    for i, rect in enumerate(label_rects):  # no label over another node's marker
        for j in range(len(tree.nodes)):
            centre = view.node_scene_pos(j)
            marker = QtCore.QRectF(centre.x() - 5, centre.y() - 5, 10, 10)
            assert i == j or not rect.intersects(marker), (labels[i].toPlainText(), j)
    plot_box = view.tree_plot.getViewBox().sceneBoundingRect()
    assert all(plot_box.contains(r) for r in label_rects)  # none clipped
    selected = view.findChild(QtWidgets.QLabel, "beamTreeSelected")
    assert s.translation() == "I like fish." and "␣I ␣like ␣fish . EOS" in selected.text() and selected.textFormat() == QtCore.Qt.TextFormat.PlainText  # data, not UI text
    view.grab().save(str(tmp_path / "beam_tree.png"))


def test_a_click_on_a_node_makes_it_the_view_s_option(make_view, qtbot):
    s = decoded()
    frame = frame_of(s)
    view = make_view(QtBeamTreeView, SIZE, frame, shown=True)
    QtWidgets.QApplication.processEvents()
    pruned = next(i for i, n in enumerate(frame.tree.nodes) if n.pruned and n.depth == 3)
    with qtbot.waitSignal(view.optionsChanged, timeout=2000):
        click(qtbot, view, view.node_scene_pos(pruned))  # a real click on its marker
    ids = frame.tree.nodes[pruned].token_ids
    assert view.options()[NODE] == " ".join(map(str, ids))
    with qtbot.waitSignal(view.optionsChanged, timeout=2000):
        view.markers.sigClicked.emit(view.markers, [view.markers.points()[0]], None)  # the root, as the scatter says
    assert view.options()[NODE] == str(s.config.bos_id)


def test_the_data_function_computes_the_clicked_node_s_attention_in_a_worker(qtbot):
    s = decoded()
    session = session_for(bundle(), s)
    view = QtBeamTreeView()
    qtbot.addWidget(view)
    view.resize(*SIZE)
    view.set_data(beam_tree_data(session, ViewChoice(), view.options()).run())
    tree = view.frame().tree
    assert view.frame().selected == tree.final[0]  # nothing clicked yet: the best beam
    node = next(i for i, n in enumerate(tree.nodes) if n.pruned and n.depth >= 3)
    view.select_node(node)
    session.analyses.submit("beam-tree", beam_tree_data(session, ViewChoice(), view.options()), view.set_data)
    assert session.analyses.wait(15)
    assert view.frame().selected == node
    ids = tree.nodes[node].token_ids
    expected = cross_weights(s, ids)
    heat = view.heatmap
    np.testing.assert_allclose(heat.matrix(), expected[-1].mean(axis=0), atol=1e-5)  # the last layer, mean of heads
    assert heat.row_labels() == tuple(display_piece(p) for p in tree.nodes[node].pieces[:-1])
    assert heat.col_labels() == tuple(s.source.pieces) and heat.highlight_row() == len(ids) - 2
    head = view.findChild(QtWidgets.QComboBox, "beamTreeHead")
    layer = view.findChild(QtWidgets.QComboBox, "beamTreeLayer")
    head.setCurrentIndex(head.findData(1))
    layer.setCurrentIndex(layer.findData(0))
    np.testing.assert_allclose(heat.matrix(), expected[0, 1], atol=1e-5)  # layer 1, head 2
    data = view.figure_data()
    assert data.dims == ("node",) and data.extras["selected"] == node + 1


def test_greedy_shows_one_path_and_a_typed_target_shows_nothing(make_view, qtbot):
    s = decoded(Greedy())
    session = session_for(bundle(), s)
    view = make_view(QtBeamTreeView, SIZE)
    view.set_data(beam_tree_data(session, ViewChoice(), {NODE: "not ids"}).run())
    assert view.drawn_nodes() == s.n_steps + 1 and set(view.frame().tree.rows) == {0}
    fresh = session_for(bundle(), DecodingSession.from_bundle(bundle(), SRC))  # nothing decoded yet: SOS alone
    view.set_data(beam_tree_data(fresh, ViewChoice(), {}).run())
    assert view.drawn_nodes() == 1 and not view.heatmap.isVisible() and view.node_label.property("key") == "sos-chose-nothing"
    session.forced = object()  # as in teacher-forced mode: no decoding to draw
    assert beam_tree_data(session, ViewChoice(), view.options()) is None
    view.set_theme("dark")
    assert view.has_data() and view.markers.points()[0].brush().color().name() == view.theme.highlight


def test_pieces_are_shown_as_plain_text(make_view):
    history = ((Beam((2,), ("SOS",), 0.0, False, 0.0),), (Beam((2, 5), ("SOS", "<b>x</b>"), -1.0, False, -1.0),))
    attention = NodeAttention((2, 5), np.full((1, 1, 1, 2), 0.5), ("SOS",), ("<b>x</b>",), ("<i>a</i>", "b"), -1.0)
    view = make_view(QtBeamTreeView, SIZE, BeamTreeFrame(beam_tree(history), 1, attention, "greedy"))
    label = view.label_items()[1]
    assert label.toPlainText() == "<b>x</b> −1.00" and "&lt;b&gt;" in label.textItem.toHtml()
    assert "<b>x</b>" in view.node_label.text() and view.heatmap.col_labels() == ("<i>a</i>", "b")
