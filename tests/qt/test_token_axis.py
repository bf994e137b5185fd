"""TokenAxis: at 512 tokens the labels thin out to every k-th (the current step's kept, its
neighbours within k left out), none overlaps another, and the read-out names every piece."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtCore, QtWidgets
from window_helpers import TextBox, check_texts, scene_texts

from attnviz.core.data.pieces import display_piece
from attnviz.qt.sample_data import pieces, sample_attention
from attnviz.qt.views.head_detail import QtHeadDetailView
from attnviz.qt.widgets.colormaps import get_theme
from attnviz.qt.widgets.heatmap import HeatmapPlot
from attnviz.qt.widgets.token_axis import MIN_TICK_GAP, UNROTATE_ROOM, labels_rotated, thinned, ticks_every

N = 512
LABELS = pieces(N, prefix="▁word")


@pytest.fixture
def plot(qtbot):
    canvas = pg.GraphicsLayoutWidget()
    qtbot.addWidget(canvas)
    canvas.resize(760, 640)
    heatmap = HeatmapPlot(get_theme("light"))
    canvas.addItem(heatmap)
    m = np.random.default_rng(0).random((N, N)).astype(np.float32)
    heatmap.set_matrix(m / m.sum(1, keepdims=True), LABELS, LABELS, highlight_row=301)
    canvas.show()
    qtbot.waitExposed(canvas)
    qtbot.waitUntil(lambda: heatmap.getViewBox().width() > 100, timeout=2000)
    return canvas, heatmap


def boxes(*axes) -> list[TextBox]:
    return [TextBox("axis", text, rect) for axis in axes for text, rect in axis.label_boxes()]


def test_labels_thin_out_and_never_overlap(plot):
    canvas, heatmap = plot
    rows, cols = heatmap.row_axis, heatmap.col_axis
    drawn = boxes(rows, cols)
    assert not check_texts(drawn, QtCore.QRectF(-1e5, -1e5, 2e5, 2e5))
    step = rows.label_step()
    assert step > 1 and cols.rotated and cols.label_step() > 1
    shown = rows.shown_indices()
    assert 301 in shown and all(i % step == 0 or i == 301 for i in shown)
    assert all(abs(i - 301) >= step for i in shown if i != 301)  # the current step's label in place of its neighbours
    assert len(shown) == len(rows.label_boxes()) and len(shown) < N // 4
    bold = [text for text, rect in rows.label_boxes() if text == display_piece(LABELS[301])]
    assert bold  # the current step's piece is on the axis


def test_the_readout_names_a_piece_whose_label_is_not_drawn(plot):
    _, heatmap = plot
    hidden = next(i for i in range(N) if i not in heatmap.row_axis.shown_indices())
    info = heatmap.hover_cell(hidden, 5)
    assert info.row_label == display_piece(LABELS[hidden]) and info.col_label == display_piece(LABELS[5])


def test_thinned_keeps_the_given_indices_apart_from_the_rest():
    assert thinned(10, 1) == list(range(10))
    assert thinned(20, 4) == [0, 4, 8, 12, 16]
    assert thinned(20, 4, [9]) == [0, 4, 9, 16]  # 8 and 12 are within 4 of 9


def test_no_text_of_the_head_detail_overlaps_at_512_tokens(make_view, qtbot):
    data = {"cross": sample_attention("cross", source=pieces(N, prefix="▁源"), target=pieces(40, first="SOS"))}
    view = make_view(QtHeadDetailView, (700, 560), data, shown=True)
    qtbot.waitUntil(view.zoom.zoomed, timeout=3000)
    for region in (((24, 40), (0, 16)), ((0, 40), (100, 400))):  # the first region, then one whose cells are 1 px wide
        view.zoom.set_region(*region)
        qtbot.wait(30)
        texts = scene_texts(view.canvas, view)
        assert sum(t.text.startswith(display_piece("▁源")) for t in texts) >= 8
        assert not check_texts(texts, QtCore.QRectF(view.rect()))


def test_labels_turned_vertical_turn_back_only_with_room_to_spare():
    assert labels_rotated(False, 12.0, 11.0) and not labels_rotated(False, 12.0, 13.0)
    assert labels_rotated(True, 12.0, 13.0)  # vertical labels stay so where they would just fit
    assert not labels_rotated(True, 12.0, 12.0 * UNROTATE_ROOM + 0.1)


def test_square_cells_whose_labels_just_fit_are_painted_once_not_forever(qtbot):
    """Turning the top labels makes the axis taller, which in a plot of square cells makes the
    cells narrower: at the height where one threshold flipped them on every layout, the canvas
    settles (it painted forever before)."""
    canvas = pg.GraphicsLayoutWidget()
    qtbot.addWidget(canvas)
    plot = HeatmapPlot(get_theme("light"), aspect_locked=True, colorbar=False, annotate=False)
    canvas.addItem(plot)
    labels = [str(i) for i in range(7)]
    plot.set_axis_titles("position", "position")
    plot.set_matrix(np.eye(7), labels, labels)
    paints = []
    canvas.viewport().installEventFilter(_PaintCounter(paints, canvas))
    canvas.show()
    qtbot.waitExposed(canvas)
    for height in range(130, 170, 2):
        canvas.resize(500, height)
        for _ in range(3):
            QtWidgets.QApplication.processEvents()
        paints.clear()
        for _ in range(10):
            QtWidgets.QApplication.processEvents()
        assert len(paints) <= 2, height


class _PaintCounter(QtCore.QObject):
    def __init__(self, paints: list, parent: QtCore.QObject):
        super().__init__(parent)
        self.paints = paints

    def eventFilter(self, obj, event):  # noqa: N802 - Qt API
        if event.type() == QtCore.QEvent.Type.Paint:
            self.paints.append(obj)
        return False


def test_ticks_closer_than_a_few_pixels_are_thinned_out(qtbot):
    assert ticks_every(12.0) == 1 and ticks_every(1.0) == 3 and ticks_every(0.25) == 12
    assert ticks_every(float("inf")) == ticks_every(0.0) == 1
    canvas = pg.GraphicsLayoutWidget()
    qtbot.addWidget(canvas)
    canvas.resize(400, 200)
    plot = HeatmapPlot(get_theme("light"), colorbar=False, annotate=False)
    canvas.addItem(plot)
    plot.set_matrix(np.zeros((2, 1200), dtype=np.float32), ["a", "b"], [str(i) for i in range(1200)])
    canvas.show()
    qtbot.waitExposed(canvas)
    _, ticks, _ = plot.col_axis.generateDrawSpecs(None)
    assert 0 < len(ticks) < 1200 / 2
    xs = [t[1].x() for t in ticks]
    assert min(b - a for a, b in zip(xs, xs[1:])) >= MIN_TICK_GAP - 1e-6  # no two drawn closer than the gap


def test_a_label_of_narrow_punctuation_is_drawn_between_marks(qtbot):
    """“.” or “'” alone is a dot of 2 px: drawn as ‹.› it reads as a token; wide (Chinese)
    punctuation and words are drawn as they are."""
    canvas = pg.GraphicsLayoutWidget()
    qtbot.addWidget(canvas)
    canvas.resize(500, 400)
    heatmap = HeatmapPlot(get_theme("light"))
    canvas.addItem(heatmap)
    labels = ("▁we", ".", "'", "。", "?!")
    heatmap.set_matrix(np.full((5, 5), 0.2, np.float32), labels, labels)
    canvas.show()
    qtbot.waitExposed(canvas)
    qtbot.waitUntil(lambda: len(heatmap.row_axis.label_boxes()) == 5, timeout=2000)
    assert [text for text, _ in heatmap.row_axis.label_boxes()] == [display_piece("▁we"), "‹.›", "‹'›", "。", "‹?!›"]
