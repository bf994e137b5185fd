"""Overview and zoom (attnviz.qt.widgets.overview) in the head detail: a long input's matrix is
shown whole in a small overview and the region chosen on it large beside it, with its labels and,
only where a cell holds them, its values."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore

from attnviz.core.data.pieces import display_piece
from attnviz.qt.sample_data import SOURCE, TARGET, pieces, sample_attention
from attnviz.qt.views.head_detail import QtHeadDetailView
from attnviz.qt.widgets.heatmap import format_weight
from attnviz.qt.widgets.overview import MIN_CELL_PX, ZOOM_CELLS

LONG = pieces(512, prefix="▁t")


@pytest.fixture
def long_view(make_view, qtbot):
    view = make_view(QtHeadDetailView, (640, 520), {"encoder": sample_attention("encoder", n_layers=2, n_heads=2, source=LONG)},
                     shown=True)
    qtbot.waitUntil(view.zoom.zoomed, timeout=3000)
    return view


def whole(view) -> np.ndarray:
    return view.data().weights[view.layer(), view.head()]


def test_a_long_input_is_an_overview_and_a_region(long_view):
    view, m = long_view, whole(long_view)
    overview = view.zoom.overview
    assert overview.isVisible() and overview.scene() is view.canvas.scene()
    np.testing.assert_array_equal(overview.image.values(), m)  # the whole matrix, small
    assert view.zoom.region() == (0, ZOOM_CELLS, 0, ZOOM_CELLS)
    np.testing.assert_array_equal(view.plot.matrix(), m[:ZOOM_CELLS, :ZOOM_CELLS])
    view.zoom.set_region((100, 120), (300, 312))
    assert view.zoom.region() == (100, 120, 300, 312) == overview.region()
    np.testing.assert_array_equal(view.plot.matrix(), m[100:120, 300:312])
    assert view.plot.row_axis.labels() == tuple(display_piece(p) for p in LONG[100:120])
    assert view.plot.col_axis.labels() == tuple(display_piece(p) for p in LONG[300:312])
    np.testing.assert_array_equal(view.figure_data().values["weight"], m)  # the data exported is the whole matrix


def test_dragging_the_box_moves_the_region_snapped_to_cells(long_view):
    view, m = long_view, whole(long_view)
    view.zoom.overview.roi.setPos((40.3, 50.6))  # what a drag does: the box, in cells of the overview
    r0, r1, c0, c1 = view.zoom.region()
    assert (r0, c0) == (51, 40) and (r1 - r0, c1 - c0) == (ZOOM_CELLS, ZOOM_CELLS)
    np.testing.assert_array_equal(view.plot.matrix(), m[51:51 + ZOOM_CELLS, 40:40 + ZOOM_CELLS])
    view.zoom.set_region((500, 530), (-5, 3))  # moved, then cut, into the matrix
    assert view.zoom.region() == (482, 512, 0, 8)


def test_values_are_written_only_where_a_cell_holds_them(long_view, qtbot):
    view, m = long_view, whole(long_view)
    view.zoom.set_region((10, 18), (20, 28))
    qtbot.waitUntil(lambda: view.plot.cells.shown(), timeout=2000)
    assert view.plot.cells.strings() == [[format_weight(v) for v in row] for row in m[10:18, 20:28].tolist()]
    view.zoom.set_region((0, 200), (0, 200))
    qtbot.wait(20)
    assert not view.plot.cells.shown()  # 200×200 cells of a couple of pixels: no text
    cell = view.plot.getViewBox().mapViewToScene(QtCore.QPointF(1, 1)) - view.plot.getViewBox().mapViewToScene(QtCore.QPointF(0, 0))
    assert cell.x() < 4


def test_the_readout_names_the_whole_matrix_cell(long_view, qtbot):
    view, m = long_view, whole(long_view)
    view.zoom.set_region((200, 216), (64, 80))
    with qtbot.waitSignal(view.hovered, timeout=2000) as blocker:
        view.plot.hover_cell(2, 3)
    info = blocker.args[0]
    assert (info.row, info.col) == (202, 67) and info.value == pytest.approx(float(m[202, 67]))
    assert info.col_label == display_piece(LONG[67]) and f"{m[202, 67]:.4f}" in view.readout.text()
    assert f"(pos {68})" in view.readout.text()


def test_the_region_follows_the_current_step(make_view, qtbot):
    target = pieces(60, first="SOS")
    view = make_view(QtHeadDetailView, (640, 520), {"cross": sample_attention("cross", source=LONG, target=target)}, shown=True)
    qtbot.waitUntil(view.zoom.zoomed, timeout=3000)
    r0, r1, _, _ = view.zoom.region()
    assert r0 <= 59 < r1 and view.plot.highlight_row() == 59 - r0
    for step in (60, 61):  # decoding on: the current row leaves the region, which moves down with it
        view.set_data({"cross": sample_attention("cross", source=LONG, target=pieces(step + 1, first="SOS"), seed=step)})
        r0, r1, _, _ = view.zoom.region()
        assert r1 == step + 1 and view.plot.highlight_row() == step - r0
    view.show_linked_query("target", 55)
    assert view.plot.linked_row() == 55 - r0


def test_a_short_input_is_shown_whole_and_a_large_canvas_leaves_the_zoom(make_view, qtbot):
    short = make_view(QtHeadDetailView, (640, 520), {"cross": sample_attention("cross")}, shown=True)
    qtbot.wait(20)
    assert not short.zoom.zoomed() and short.plot.matrix().shape == (len(TARGET), len(SOURCE))
    n = 110  # cells of about 3 px in 640×520, of about 8 px in 1400×1000
    view = make_view(QtHeadDetailView, (640, 520), {"encoder": sample_attention("encoder", source=pieces(n))}, shown=True)
    qtbot.waitUntil(view.zoom.zoomed, timeout=3000)
    view.resize(1400, 1000)
    qtbot.waitUntil(lambda: not view.zoom.zoomed(), timeout=3000)
    assert view.plot.matrix().shape == (n, n) and not view.zoom.overview.isVisible()
    assert view.plot.getViewBox().width() / n >= MIN_CELL_PX


def test_a_region_cut_by_a_short_matrix_grows_back_as_decoding_goes_on(make_view, qtbot):
    def frame(rows: int):
        return {"cross": sample_attention("cross", source=LONG, target=pieces(rows, first="SOS"), seed=rows)}

    view = make_view(QtHeadDetailView, (640, 520), frame(1), shown=True)
    qtbot.waitUntil(view.zoom.zoomed, timeout=3000)
    assert view.zoom.region() == (0, 1, 0, ZOOM_CELLS)  # the first step: one row
    for rows in range(2, 31):
        view.set_data(frame(rows))
    assert view.zoom.region() == (30 - ZOOM_CELLS, 30, 0, ZOOM_CELLS)  # back to its size, ending at the current row
    np.testing.assert_array_equal(view.plot.matrix(), whole(view)[30 - ZOOM_CELLS:, :ZOOM_CELLS])
