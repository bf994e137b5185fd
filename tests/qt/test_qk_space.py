"""The queries-and-keys view: every query and key of the sentence on screen is a point where the
core's projection puts it; hovering names the token and its sentence; clicking a query selects
that row in the linked views; its combos choose another head; the bundled model's picture, with
held-out pairs, is drawn in the window's way and exported by ``attnviz export --view qk``."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtWidgets

from attnviz.core.analysis.qk_space import project, sentence_vectors
from attnviz.core.data.pieces import display_piece
from attnviz.qt.views.qk_space import HELD_OUT_OPTION


def test_the_sentence_on_screen_is_drawn_where_the_projection_puts_it(qtbot, loaded):
    spec, view, session, ok = loaded("qk")
    assert ok and view.shown_head() == ("cross", 0, 0)
    space = view.space()
    expected = project(sentence_vectors(session.frames.frozen(), "cross", 0, 0), "cross", 0, 0).coords
    np.testing.assert_allclose(space.coords, expected)  # a tiny model names no held-out data: the sentence alone
    queries, keys = view.items[("query", "sentence")], view.items[("key", "sentence")]
    assert len(queries.points()) == session.n_rows() and len(keys.points()) == len(session.src_pieces())
    np.testing.assert_allclose(np.array([[p.pos().x(), p.pos().y()] for p in keys.points()]), space.key_coords)
    assert view.title.plain_text().startswith(view.figure_title())


def test_hovering_names_the_token_and_clicking_a_query_chooses_its_row(qtbot, loaded):
    spec, view, session, ok = loaded("qk")
    queries, keys = view.items[("query", "sentence")], view.items[("key", "sentence")]
    keys.sigHovered.emit(keys, keys.points()[1:2], None)
    piece = display_piece(session.src_pieces()[1])
    assert f"“{piece}”" in view.readout.text() and session.source in view.readout.text()
    with qtbot.waitSignal(view.chose) as chosen:
        queries.sigClicked.emit(queries, queries.points()[2:3], None)
    assert chosen.args[0] == {"query": 2, "kind": "cross", "layer": 0, "head": 0, "mode": "head"}


def test_a_click_moves_the_linked_selection_and_the_combos_choose_a_head(qtbot):
    from attnviz.qt.session import Session
    from attnviz.qt.views.registry import ViewSet

    from inside_fixtures import bundle

    s = Session()
    s.set_bundle(bundle())
    s.set_inputs("我喜欢吃苹果。", "I like eating apples.")
    s.finish_runs()
    views = ViewSet(s, only=("qk", "head"))
    for frame in views.frames.values():
        qtbot.addWidget(frame)
        frame.show()
        qtbot.waitExposed(frame)
    for name in views.views:
        views.refresh(views[name])
    view = views["qk"]
    qtbot.waitUntil(lambda: view.has_data() and not s.analyses.pending(), timeout=10000)
    queries = view.items[("query", "sentence")]
    queries.sigClicked.emit(queries, queries.points()[3:4], None)
    assert views.selection.value().query == 3
    qtbot.waitUntil(lambda: view.space().query == 3, timeout=10000)
    view.layer_combo.setCurrentIndex(1)
    qtbot.waitUntil(lambda: view.shown_head() == ("cross", 1, 0), timeout=10000)
    assert (views.selection.value().layer, views["head"].layer()) == (1, 1)


@pytest.mark.slow
def test_the_bundled_model_with_held_out_pairs_and_its_export(qtbot, loaded, tmp_path):
    from attnviz.cli import main
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model

    spec, view, session, ok = loaded("qk", model=load_bundle(default_model()), source="我爱你。")
    assert ok
    space = view.space()
    assert len(space.vectors.sentences) == 21 and len(view.items[("query", "held-out")].points()) > 50
    view.set_options({HELD_OUT_OPTION: 5})  # computed again on 5 pairs
    assert len(view.space().vectors.sentences) == 6
    view.set_options({HELD_OUT_OPTION: 20})
    view.resize(900, 600)
    view.show()
    qtbot.waitExposed(view)
    QtWidgets.QApplication.processEvents()
    assert not view.grab().isNull() and view.grab().save(str(tmp_path.parent / f"{tmp_path.name}-qk_space.png"))
    assert main(["export", "--view", "qk", "--src", "我爱你。", "--layer", "2", "--head", "3", "--out", str(tmp_path)]) == 0
    png = next(tmp_path.glob("*.png"))
    assert png.name.startswith("qk_cross_layer2_head3") and png.stat().st_size > 5000
