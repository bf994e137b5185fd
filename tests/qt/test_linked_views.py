"""One selection drives every linked view: a choice made in one view (a grid tile, a mask row, a
walkthrough head, a line-view token) moves the others; a view can be unlinked; a query row
hovered in one view is outlined in the others."""

from __future__ import annotations

import pytest
from PySide6 import QtCore, QtWidgets

from attnviz.qt.selection import Selection
from attnviz.qt.session import Session
from attnviz.qt.views.registry import VIEWS, ViewSet

from inside_fixtures import bundle, session

LINKED = ("grid", "head", "lines", "mask", "walkthrough")


@pytest.fixture
def views(qtbot):
    s = Session()
    s.bundle = bundle()
    s.decoding = session(steps=4)
    vs = ViewSet(s, only=LINKED)  # the views under test (building all 15 per test took seconds)
    for name in LINKED:
        frame = vs.frames[name]  # a view is shown in its frame, as in the window
        qtbot.addWidget(frame)
        frame.resize(640, 480)
        frame.show()
        qtbot.waitExposed(frame)
        vs.refresh(vs[name])
    QtWidgets.QApplication.processEvents()
    assert s.analyses.wait()  # the walkthrough is computed in a worker
    yield vs
    for name in LINKED:
        vs.frames[name].close()


def _click_tile(qtbot, grid, layer: int, head: int) -> None:
    qtbot.wait_until(lambda: grid.plot.getViewBox().width() > 0)
    pos = grid.canvas.mapFromScene(grid.tile_center_in_scene(layer, head))
    qtbot.mouseClick(grid.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)


def _cell_pos(view, plot, row: int, col: int) -> QtCore.QPoint:
    return view.canvas.mapFromScene(plot.cell_center_in_scene(row, col))


def test_a_grid_click_moves_every_linked_view(views, qtbot):
    _click_tile(qtbot, views["grid"], 1, 2)
    assert views.selection.value() == Selection("cross", 1, 2, "head", None)
    head, lines, mask, walk = views["head"], views["lines"], views["mask"], views["walkthrough"]
    assert (head.kind(), head.mode(), head.layer(), head.head()) == ("cross", "head", 1, 2)
    assert (lines.kind(), lines.layer(), lines.selected_heads()) == ("cross", 1, (2,))
    assert (mask.layer(), mask.head()) == (1, 2)
    assert views.session.analyses.wait()  # the walkthrough's new head is computed in a worker
    assert "layer 2 · head 3" in walk.figure_title()
    # each view says what it follows, 1-based
    for name in LINKED:
        assert views[name].link_button.isChecked(), name
        assert "layer 2" in views[name].link_text(), name
    assert "head 3" in head.link_text() and "cross" in head.link_text()


def test_the_head_detail_and_walkthrough_move_the_grid(views, qtbot):
    head = views["head"]
    head.mode_combo.setCurrentIndex(head.mode_combo.findData("head"))
    head.layer_combo.setCurrentIndex(head.layer_combo.findData(0))
    head.head_combo.setCurrentIndex(head.head_combo.findData(3))
    assert views["grid"].selected() == (0, 3)
    assert views["mask"].head() == 3
    walk = views["walkthrough"]
    walk.head_combo.setCurrentIndex(walk.head_combo.findData(1))  # the walkthrough asks for head 2
    assert views.selection.value().head == 1
    assert views["grid"].selected() == (0, 1) and head.head() == 1
    assert views.session.analyses.wait()
    assert "head 2" in walk.figure_title()


def test_a_mask_row_and_a_line_token_set_the_query(views, qtbot):
    mask = views["mask"]
    plot = mask.panels["weights"]
    qtbot.mouseClick(mask.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=_cell_pos(mask, plot, 1, 0))
    assert views.selection.value().query == 1
    assert "query 2" in views["walkthrough"].link_text()  # the walkthrough takes the query
    assert views["walkthrough"].figure_data() is not None
    lines = views["lines"]
    pos = lines.canvas.mapFromScene(lines.lines.mapToScene(lines.lines.token_pos("query", 2)))
    qtbot.mouseClick(lines.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)
    assert views.selection.value().query == 2


def test_an_unlinked_view_keeps_its_own_choice(views, qtbot):
    head = views["head"]
    qtbot.mouseClick(head.link_button, QtCore.Qt.MouseButton.LeftButton)
    assert not head.link_button.isChecked() and not views.is_linked("head")
    assert head.link_caption.property("key") == "own-choice" and head.link_text().endswith(views.followed("head").describe())
    head.head_combo.setCurrentIndex(head.head_combo.findData(3))  # compare head 4 …
    _click_tile(qtbot, views["grid"], 1, 0)  # … with layer 2, head 1 in the others
    assert head.head() == 3 and head.layer() == 0
    assert views["mask"].head() == 0 and views["mask"].layer() == 1
    qtbot.mouseClick(head.link_button, QtCore.Qt.MouseButton.LeftButton)  # linked again: it follows at once
    assert (head.layer(), head.head()) == (1, 0)
    assert "follows" in head.link_text()


def test_linking_again_takes_the_selection_even_when_it_did_not_move(views, qtbot):
    mask = views["mask"]
    mask.link_button.click()
    mask.head_combo.setCurrentIndex(mask.head_combo.findData(2))
    assert mask.head() == 2 and views.selection.value().head == 0  # its own choice only
    mask.link_button.click()
    assert mask.head() == 0 and "follows" in mask.link_text()


def test_a_hidden_view_follows_when_it_is_shown(views, qtbot):
    lines = views["lines"]
    views.frames["lines"].hide()
    refreshes, skips = views.refreshes["lines"], views.skips["lines"]
    _click_tile(qtbot, views["grid"], 1, 3)
    assert lines.selected_heads() != (3,)  # hidden views are not redrawn
    assert "lines" in views.stale
    views.frames["lines"].show()  # shown again, it catches up by itself, once
    qtbot.waitUntil(lambda: "lines" not in views.stale, timeout=5000)
    assert (lines.layer(), lines.selected_heads()) == (1, (3,))
    QtWidgets.QApplication.processEvents()
    assert views.skips["lines"] == skips + 1 and views.refreshes["lines"] == refreshes  # the same frame: its data kept, the choice applied


def test_hovering_a_query_row_outlines_it_in_the_others(views, qtbot):
    head = views["head"]
    info = head.plot.hover_cell(2, 1)
    assert info.row == 2
    grid, mask, lines = views["grid"], views["mask"], views["lines"]
    assert grid.linked_row() == 2 and not grid.linked_rows.path().isEmpty()
    assert all(p.linked_row() == 2 for p in mask.panels.values())  # decoder rows are the same fed tokens
    assert lines.focus_token() == ("query", 2)
    assert head.plot.linked_row() is None  # not in the view the mouse is in
    head.plot.image.set_hovered_cell(None)
    head.plot.image.sigHovered.emit(None)  # the mouse leaves the matrix
    assert grid.linked_row() is None and mask.panels["weights"].linked_row() is None


def test_the_walkthrough_joins_hover_linking_both_ways(views, qtbot):
    """A query row hovered in the head detail is outlined in the walkthrough's query tables, and
    a query row hovered in a walkthrough table is outlined in the other views."""
    walk, head = views["walkthrough"], views["head"]
    query_tables = [t for t in walk.tables.values() if t.spec.rows == "query" and t.window[0].stop > 1]
    assert query_tables and walk.tables["weights"] in query_tables
    head.plot.hover_cell(1, 0)
    covering = [t for t in query_tables if t.window[0].start <= 1 < t.window[0].stop]
    assert covering and all(t.linked_row() == 1 - t.window[0].start for t in covering)
    assert all(t.linked_row() is None for t in walk.tables.values() if t.spec.rows != "query")
    head.plot.image.sigHovered.emit(None)
    assert all(t.linked_row() is None for t in walk.tables.values())
    weights = walk.tables["weights"]
    weights.hover_cell(0, 0)  # the first query row shown in the walkthrough's attention weights
    row = weights.window[0].start
    assert head.plot.linked_row() == row and views["grid"].linked_row() == row
    weights.image.sigHovered.emit(None)
    assert head.plot.linked_row() is None


def test_encoder_rows_are_not_linked_to_target_rows(views, qtbot):
    views["grid"].kind_combo.setCurrentIndex(views["grid"].kind_combo.findData("encoder"))
    assert views["head"].kind() == "encoder"
    views["head"].plot.hover_cell(1, 1)  # a source row
    assert all(p.linked_row() is None for p in views["mask"].panels.values())
    assert views["grid"].linked_row() == 1  # the grid shows encoder rows too
    assert views["lines"].focus_token() == ("query", 1)


def test_every_view_with_selectors_is_linked_and_captioned(qtbot):
    s = Session()
    s.bundle = bundle()
    s.decoding = session(steps=4)
    views = ViewSet(s)  # every view
    for spec in VIEWS:
        if spec.selectors:
            assert views.is_linked(spec.name)
            assert views[spec.name].link_button.isVisibleTo(views[spec.name]), spec.name


def test_the_selection_reads_1_based_and_says_when_it_changes(qtbot):
    from attnviz.qt.selection import LinkedSelection

    sel = LinkedSelection()
    assert Selection("cross", 1, 2).describe() == "cross · layer 2 · head 3"
    mean = Selection("decoder", 0, 0, "mean", 4).describe().split(" · ")
    assert len(mean) == 4 and mean[:2] == ["decoder", "layer 1"] and mean[3] == "query 5" and mean[2] != "head 1"  # the mean in place of a head
    assert Selection("encoder", 2, 0, "rollout").describe() == "encoder · rollout"
    with qtbot.waitSignal(sel.changed, timeout=1000) as blocker:
        assert sel.update(layer=1, query=3)
    assert blocker.args == [Selection("cross", 1, 0, "head", 3)]
    assert not sel.update(layer=1)  # no change, no signal
    assert sel.update(query=None) and sel.value().query is None  # back to the current step
    with pytest.raises(ValueError):
        Selection("cross", 0, 0, "sum")


def test_the_norm_view_follows_a_cross_selection_to_its_decoder_layer(qtbot):
    from story_helpers import session_for, shown_views

    vs = shown_views(qtbot, session_for(bundle(), session(steps=4)), ("norm",), (640, 480))
    vs.selection.update(kind="cross", layer=1)
    assert vs["norm"].group() == ("decoder", 1)
    assert "layer 2" in vs["norm"].link_text()
    vs.selection.update(kind="encoder", layer=0)
    assert vs["norm"].group() == ("encoder", 0)


def test_a_view_computed_from_the_choice_ends_on_the_choice_it_follows(qtbot):
    """A refresh feeds the walkthrough choice B while it last showed A; going back to A before B's
    result arrives must feed A again, not keep B's result."""
    from story_helpers import shown_view_set

    s, views = shown_view_set(qtbot, ("walkthrough",))
    views.selection.update(kind="encoder", layer=0, head=0, mode="head", query=0)
    assert s.analyses.wait()
    views.views["walkthrough"].hide()  # off screen: a new selection waits for it
    views.selection.update(query=1)
    views.views["walkthrough"].show()
    views.refresh(views.views["walkthrough"])  # feeds query 1
    views.selection.update(query=0)  # back before that result is shown
    assert s.analyses.wait()
    qtbot.wait(50)
    assert views.slots["walkthrough"].applied.query == 0
    assert views.views["walkthrough"].query() == 0


def test_a_view_that_takes_only_the_query_row_says_what_it_follows_before_one_is_chosen(qtbot):
    """The logit lens takes the query row alone: with none chosen its caption still names what
    it follows (it was "follows: " and nothing)."""
    from story_helpers import shown_view_set

    _, vs = shown_view_set(qtbot, ("logit-lens",))
    assert vs.selection.value().query is None
    caption = vs["logit-lens"].link_text()
    assert caption and caption.split(":", 1)[1].strip(), caption
    vs.selection.update(query=1)
    assert "query 2" in vs["logit-lens"].link_text()
