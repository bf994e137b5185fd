"""QtLinesView: a line per (query, key) with opacity = weight, heads in colours, hover isolates."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore
from window_helpers import TextBox, check_texts

from attnviz.core.data.pieces import display_piece, display_pieces
from attnviz.qt.sample_data import SOURCE, TARGET, pieces, sample_attention, sample_attention_sets
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.lines import ALL_LINES_UP_TO, DEFAULT_TOP_K, QtLinesView


@pytest.fixture
def lines(make_view):
    v = make_view(QtLinesView, (640, 480), sample_attention_sets(), shown=True)
    v.set_kind("cross")
    return v


def _expected(weights: np.ndarray, heads) -> set[tuple[int, int, int]]:
    return {(h, q, k) for h in heads for q, k in zip(*np.nonzero(weights[h] >= 0.01))}


def test_lines_follow_the_weights(lines):
    assert lines.objectName() == "linesView"
    w = lines.data().weights[0]
    drawn = lines.visible_lines()
    assert {(s.head, s.query, s.key) for s in drawn} == _expected(w, range(4))
    for s in drawn:
        assert s.weight == pytest.approx(float(w[s.head, s.query, s.key]))  # opacity = weight


def test_layer_and_heads(lines, qtbot):
    lines.set_layer(2)
    lines.set_heads([1, 3])
    w = lines.data().weights[2]
    assert lines.selected_heads() == (1, 3)
    assert {(s.head, s.query, s.key) for s in lines.visible_lines()} == _expected(w, (1, 3))
    assert "heads 2, 4" in lines.title.plain_text()
    # the head buttons mirror the selection; clicking one chooses: some heads, the kind and layer only
    assert [b.isChecked() for b in lines.head_buttons] == [False, True, False, True]
    with qtbot.waitSignal(lines.chose, timeout=1000) as blocker:
        qtbot.mouseClick(lines.head_buttons[0], QtCore.Qt.MouseButton.LeftButton)
    assert lines.selected_heads() == (0, 1, 3) and blocker.args == [{"kind": "cross", "layer": 2}]
    with qtbot.waitSignal(lines.chose, timeout=1000) as blocker:  # every head: their mean
        qtbot.mouseClick(lines.all_button, QtCore.Qt.MouseButton.LeftButton)
    assert blocker.args == [{"kind": "cross", "layer": 2, "mode": "mean"}]
    lines.set_heads([1, 2])
    with qtbot.waitSignal(lines.chose, timeout=1000) as blocker:  # one head: that head
        qtbot.mouseClick(lines.head_buttons[1], QtCore.Qt.MouseButton.LeftButton)
    assert blocker.args == [{"kind": "cross", "layer": 2, "head": 2, "mode": "head"}]


def test_apply_takes_the_kind_layer_and_head(lines):
    lines.apply(ViewChoice(kind="decoder", layer=1, head=2, mode="head"))
    assert (lines.kind(), lines.layer(), lines.selected_heads()) == ("decoder", 1, (2,))
    lines.apply(ViewChoice(layer=0))  # no head: the heads shown stay
    assert (lines.layer(), lines.selected_heads()) == (0, (2,))
    lines.apply(ViewChoice(mode="mean"))  # the mean: every head
    assert lines.selected_heads() == (0, 1, 2, 3)


def test_hover_isolates_a_token(lines):
    lines.set_hover("query", 2)
    drawn = lines.visible_lines()
    assert drawn and all(s.query == 2 for s in drawn)
    assert display_piece(TARGET[2]) in lines.readout.text()
    lines.set_hover("key", 0)
    drawn = lines.visible_lines()
    assert drawn and all(s.key == 0 for s in drawn)
    assert "我" in lines.readout.text()
    lines.set_hover(None)
    assert len(lines.visible_lines()) == len(_expected(lines.data().weights[0], range(4)))


def test_mouse_hover_and_click_pin(lines, qtbot):
    item = lines.lines
    qtbot.wait_until(lambda: item.boundingRect().height() > 100)
    pos = lines.canvas.mapFromScene(item.mapToScene(item.token_pos("key", 3)))
    with qtbot.waitSignal(lines.tokenHovered, timeout=2000, check_params_cb=lambda side, i: side == "key") as blocker:
        qtbot.mouseMove(lines.canvas.viewport(), QtCore.QPoint(pos.x() + 1, pos.y()))
        qtbot.mouseMove(lines.canvas.viewport(), pos)
    assert blocker.args == ["key", 3]
    assert all(s.key == 3 for s in lines.visible_lines())
    qtbot.mouseClick(lines.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)
    assert lines.pinned_token() == ("key", 3)
    lines.set_hover(None)  # the mouse leaves: the pinned token stays isolated
    assert all(s.key == 3 for s in lines.visible_lines())
    with lines.export_mode():  # exports show the pinned isolation, never a transient hover
        lines.set_hover("query", 0)
        assert lines.focus_token() == ("key", 3)
    lines.set_hover(None)


def test_encoder_kind_and_labels(lines):
    lines.set_kind("encoder")
    assert lines.lines.query_labels() == display_pieces(SOURCE) and lines.lines.key_labels() == display_pieces(SOURCE)
    data = lines.figure_data()
    assert data.dims == ("head", "query", "key") and data.shape == (4, 5, 5)


def test_the_readout_follows_a_new_layer_or_head_under_a_still_mouse(lines):
    lines.set_hover("query", 2)
    before = lines.readout.text()
    assert "layer 1" in before and "(pos 3)" in before  # 1-based
    assert f"→ predicted “{display_piece(TARGET[3])}”" in before  # the fed token and what it predicts
    lines.set_layer(2)
    after = lines.readout.text()
    assert after != before and "layer 3" in after
    w = lines.data().weights[2].mean(axis=0)[2]  # what the read-out must say now: layer 3, all heads
    best = int(np.argmax(w))
    assert f"“{display_piece(SOURCE[best])}” {w[best]:.2f}" in after
    lines.set_heads([1])
    w1 = lines.data().weights[2, 1, 2]
    assert "head 2" in lines.readout.text()
    assert f"“{display_piece(SOURCE[int(np.argmax(w1))])}” {w1.max():.2f}" in lines.readout.text()


def test_the_exported_figure_is_cropped_to_the_drawing(make_view, qtbot):
    from attnviz.qt.widgets.figures import figure_size, render_qimage

    view = make_view(QtLinesView, (1000, 760), sample_attention_sets(), shown=True)
    view.set_kind("cross")
    canvas = view.canvas.viewport().size()
    image = render_qimage(view)
    assert image.width() < canvas.width() and image.height() < canvas.height() / 2
    assert (image.width(), image.height()) == (figure_size(view).width(), figure_size(view).height())
    # little blank left: the drawn pixels span most of the image both ways
    a = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)[:, : image.width(), :3]
    ink = np.any(np.abs(a.astype(int) - a[0, 0].astype(int)) > 30, axis=2)
    rows, cols = np.nonzero(ink)
    assert (rows.max() - rows.min()) / image.height() > 0.8 and (cols.max() - cols.min()) / image.width() > 0.8


def test_a_query_hovered_elsewhere_isolates_its_lines(lines):
    lines.show_linked_query("target", 3)
    assert lines.focus_token() == ("query", 3)
    assert {s.query for s in lines.visible_lines()} == {3}
    lines.show_linked_query("source", 3)  # the cross-attention queries are target tokens
    assert lines.focus_token() is None


def test_pinning_a_query_token_chooses_its_row(lines, qtbot):
    with qtbot.waitSignal(lines.chose, timeout=1000) as blocker:
        lines.lines.tokenClicked.emit(("query", 2))  # what a click on the third query token sends
    assert blocker.args == [{"query": 2}] and lines.pinned_token() == ("query", 2)


# -- a long input: each query's k strongest lines, every few labels ------------------------------
def test_a_long_input_draws_each_querys_k_strongest_lines(make_view, qtbot):
    n = 512
    view = make_view(QtLinesView, (640, 560), sample_attention("encoder", n_layers=2, n_heads=4, source=pieces(n)), shown=True)
    view.set_heads([2])
    assert view.top_k() == DEFAULT_TOP_K == view.top_k_spin.value() and view.top_k_spin.isEnabled()
    w = view.data().weights[0, 2]
    for k in (DEFAULT_TOP_K, 5):
        view.top_k_spin.setValue(k)
        drawn = view.visible_lines()
        assert len(drawn) <= k * n
        strongest = {(q, int(key)) for q in range(n) for key in np.argsort(-w[q])[:k] if w[q, key] >= 0.01}
        assert {(s.query, s.key) for s in drawn} == strongest
    view.set_hover("query", 7)  # a hovered token shows all of its lines
    assert {s.key for s in view.visible_lines()} == set(np.nonzero(w[7] >= 0.01)[0].tolist())
    view.set_hover(None)
    labels = [TextBox("lines", t, r) for t, r in view.lines.label_boxes()]
    assert 16 < len(labels) < n and not check_texts(labels, QtCore.QRectF(-1e5, -1e5, 2e5, 2e5))
    short = make_view(QtLinesView, (640, 560), sample_attention("encoder", source=pieces(ALL_LINES_UP_TO)), shown=True)
    assert short.top_k() is None and not short.top_k_spin.isEnabled()
