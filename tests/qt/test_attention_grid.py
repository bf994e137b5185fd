"""QtAttentionGridView: all layers × heads in ONE tiled ImageItem; click a tile → (layer, head)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtCore

from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame
from attnviz.core.data.pieces import WORD_START_LEGEND, display_piece
from attnviz.qt.sample_data import SOURCE, TARGET, pieces, sample_attention, sample_attention_sets
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.attention_grid import MAX_TILE_PIXELS, QtAttentionGridView, tile_image
from attnviz.qt.views.base import CURRENT_ROW_LEGEND


@pytest.fixture
def grid(make_view):
    g = make_view(QtAttentionGridView, (720, 540), sample_attention_sets(), shown=True)
    g.set_kind("cross")
    return g


def test_one_tiled_image_holds_every_head(grid):
    assert grid.objectName() == "attentionGridView"
    images = [i for i in grid.canvas.scene().items() if isinstance(i, pg.ImageItem)]
    assert images == [grid.image]
    d = grid.data()
    L, H, Q, K = d.weights.shape
    tiled = grid.tiled_image()
    gap = 1
    assert tiled.shape == (L * (Q + gap) - gap, H * (K + gap) - gap)
    for layer in range(L):
        for head in range(H):
            r0, c0 = layer * (Q + gap), head * (K + gap)
            np.testing.assert_array_equal(tiled[r0 : r0 + Q, c0 : c0 + K], d.weights[layer, head])
    assert np.isnan(tiled[Q, 0]) and np.isnan(tiled[0, K])  # the gaps are transparent
    assert grid.tile_of_pixel(Q + 1 + 2, 1) == (1, 0, 2, 1)
    assert grid.tile_of_pixel(Q, 0) is None


def test_tile_image_is_reused_for_the_same_shape():
    w = np.random.default_rng(0).random((2, 3, 4, 5)).astype(np.float32)
    first = tile_image(w, 1)
    again = tile_image(w * 0.5, 1, first)
    assert again is first
    np.testing.assert_array_equal(again[5:9, 6:11], w[1, 1] * 0.5)


def test_update_in_place_and_step_highlight(grid):
    image = grid.image
    n_items = len(grid.canvas.scene().items())
    grid.set_kind("decoder")
    for step in range(1, 6):
        grid.set_data(sample_attention("decoder", target=TARGET[: step + 1], step=step, seed=step))
        assert grid.image is image
        assert not grid.step_rows.path().isEmpty()
    assert len(grid.canvas.scene().items()) == n_items
    grid.set_data(sample_attention("encoder"))
    assert grid.step_rows.path().isEmpty()  # the encoder has no current step


def test_click_a_tile_emits_layer_and_head(grid, qtbot):
    qtbot.wait_until(lambda: grid.plot.getViewBox().width() > 0)
    pos = grid.canvas.mapFromScene(grid.tile_center_in_scene(2, 1))
    got = []
    grid.chose.connect(lambda changes: got.append(changes))
    grid.tileClicked.connect(lambda layer, head: got.append((layer, head)))
    with qtbot.waitSignal(grid.tileClicked, timeout=2000):
        qtbot.mouseClick(grid.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)
    assert got == [{"layer": 2, "head": 1, "mode": "head"}, (2, 1)]  # chosen (the selection moves), then opened
    assert grid.selected() == (2, 1)


def test_keyboard_moves_and_opens(grid, qtbot):
    grid.set_selected(0, 0)
    qtbot.keyClick(grid, QtCore.Qt.Key.Key_Right)
    qtbot.keyClick(grid, QtCore.Qt.Key.Key_Down)
    with qtbot.waitSignal(grid.tileClicked, timeout=1000) as blocker:
        qtbot.keyClick(grid, QtCore.Qt.Key.Key_Return)
    assert blocker.args == [1, 1]


def test_hover_names_layer_head_and_tokens(grid, qtbot):
    qtbot.wait_until(lambda: grid.plot.getViewBox().width() > 0)
    d = grid.data()
    Q, K = d.weights.shape[2:]
    # the pixel of query 1, key 3 in tile (layer 1, head 2)
    row, col = 1 * (Q + 1) + 1, 2 * (K + 1) + 3
    scene_pt = grid.image.mapToScene(QtCore.QPointF(col + 0.5, row + 0.5))
    pos = grid.canvas.mapFromScene(scene_pt)
    with qtbot.waitSignal(grid.hovered, timeout=2000, check_params_cb=lambda i: i is not None) as blocker:
        qtbot.mouseMove(grid.canvas.viewport(), QtCore.QPoint(pos.x() - 1, pos.y()))
        qtbot.mouseMove(grid.canvas.viewport(), pos)
    info = blocker.args[0]
    assert (info.layer, info.head, info.row, info.col) == (1, 2, 1, 3)
    assert info.value == pytest.approx(float(d.weights[1, 2, 1, 3]))
    assert "layer 2 · head 3" in grid.readout.text() and display_piece(SOURCE[3]) in grid.readout.text()


def test_kind_selector(grid, qtbot):
    assert grid.kind_combo.isVisible()
    with qtbot.waitSignal(grid.chose, timeout=1000) as blocker:
        grid.kind_combo.setCurrentIndex(grid.kind_combo.findData("encoder"))
    assert blocker.args == [{"kind": "encoder"}]
    assert grid.tiled_image().shape[0] == 3 * (len(SOURCE) + 1) - 1


def test_base_size(grid):
    src = pieces(20, first="我")
    tgt = pieces(20, first="SOS")
    grid.set_data(sample_attention("cross", n_layers=6, n_heads=8, source=src, target=tgt, step=9))
    assert grid.tiled_image().shape == (6 * 21 - 1, 8 * 21 - 1)
    assert grid.plot.left_axis.labels() == tuple(f"layer {i}" for i in range(1, 7))
    assert grid.plot.top_axis.labels() == tuple(f"head {i}" for i in range(1, 9))


def test_the_current_row_boxes_and_the_selection_have_a_legend(grid):
    grid.set_kind("cross")
    legend = {text: colour for _, colour, text in grid.title.legend()}
    assert legend[CURRENT_ROW_LEGEND] == grid.theme.highlight  # the orange boxes
    assert [c for mark, c, _ in grid.title.legend() if mark == "▭"] == [grid.theme.highlight, grid.theme.selection]  # and the selected head's box
    assert WORD_START_LEGEND in legend
    assert CURRENT_ROW_LEGEND in grid.title.plain_text()
    grid.set_kind("encoder")  # no current row in the encoder: no box, no legend for it
    assert CURRENT_ROW_LEGEND not in {text for _, _, text in grid.title.legend()}


def test_hover_reads_fed_and_predicted_tokens_1_based(grid, qtbot):
    grid.set_kind("cross")
    qtbot.wait_until(lambda: grid.plot.getViewBox().width() > 0)
    Q, K = grid.data().weights.shape[2:]
    scene_pt = grid.image.mapToScene(QtCore.QPointF(2 * (K + 1) + 0.5, 1 + 0.5))  # layer 1, head 3, query 1, key 0
    pos = grid.canvas.mapFromScene(scene_pt)
    with qtbot.waitSignal(grid.queryHovered, timeout=2000, check_params_cb=lambda kind, row: row >= 0) as blocker:
        qtbot.mouseMove(grid.canvas.viewport(), QtCore.QPoint(pos.x() - 1, pos.y()))
        qtbot.mouseMove(grid.canvas.viewport(), pos)
    assert blocker.args == ["cross", 1]
    text = grid.readout.text()
    assert f"fed “{display_piece(TARGET[1])}” (pos 2) → predicted “{display_piece(TARGET[2])}”" in text
    assert f"key “{display_piece(SOURCE[0])}” (pos 1)" in text


def test_apply_takes_the_kind_layer_and_head_of_a_choice(grid):
    grid.apply(ViewChoice(kind="decoder", layer=2, head=3, mode="head"))
    assert (grid.kind(), grid.selected()) == ("decoder", (2, 3))
    grid.apply(ViewChoice(head=1))  # a choice without a layer keeps the layer
    assert grid.selected() == (2, 1)
    grid.apply(ViewChoice())
    assert (grid.kind(), grid.selected()) == ("decoder", (2, 1))


def test_a_frame_gives_every_kind_and_what_each_row_predicted(grid, qtbot):
    sets = sample_attention_sets()
    grid.set_data(AttentionFrame(sets, TARGET[1:] + ("EOS",)))
    assert grid.data() is sets["cross"]
    assert [grid.kind_combo.itemData(i) for i in range(grid.kind_combo.count())] == ["encoder", "decoder", "cross"]
    qtbot.wait_until(lambda: grid.plot.getViewBox().width() > 0)
    Q, K = grid.data().weights.shape[2:]
    grid.image.sigHovered.emit((Q - 1, 0))  # the mouse over layer 1, head 1, the last target row
    assert "→ predicted “EOS”" in grid.readout.text()


def test_a_long_input_is_pooled_to_the_largest_weight_of_each_block(grid):
    src, tgt = pieces(512, first="我"), pieces(301, first="SOS")
    grid.set_data(sample_attention("cross", n_layers=2, n_heads=3, source=src, target=tgt, step=300))
    w = grid.data().weights
    fq, fk = grid.pool()
    assert (fq, fk) == (-(-301 // MAX_TILE_PIXELS), -(-512 // MAX_TILE_PIXELS)) == (3, 4)
    pq, pk = -(-301 // fq), -(-512 // fk)
    gap = 2
    assert grid.tiled_image().shape == (2 * (pq + gap) - gap, 3 * (pk + gap) - gap) and (pq, pk) == (101, 128)
    for layer, head, r, c in ((1, 2, 40, 17), (0, 1, 100, 127)):  # the last row of blocks holds one query (301 = 3·100 + 1)
        pixel = grid.tiled_image()[layer * (pq + gap) + r, head * (pk + gap) + c]
        block = w[layer, head, r * fq : (r + 1) * fq, c * fk : (c + 1) * fk]
        assert pixel == block.max()
        q, k = np.unravel_index(np.argmax(block), block.shape)
        assert grid.tile_of_pixel(layer * (pq + gap) + r, head * (pk + gap) + c) == (layer, head, r * fq + q, c * fk + k)
    assert grid.step_rows.path().boundingRect().top() == pytest.approx(300 // fq)  # the current step's pixel row


def _expected_image(w: np.ndarray) -> np.ndarray:
    """The tiled image of ``w`` [layer, head, query, key] as the grid documents it, written out here:
    blocks of ⌈n/128⌉ cells pooled to their largest weight, tiles apart by one or two NaN cells."""
    n_layers, n_heads, n, k = w.shape
    fq, fk = -(-n // MAX_TILE_PIXELS), -(-k // MAX_TILE_PIXELS)
    pq, pk = -(-n // fq), -(-k // fk)
    padded = np.full((n_layers, n_heads, pq * fq, pk * fk), -np.inf, np.float32)
    padded[:, :, :n, :k] = w
    tiles = padded.reshape(n_layers, n_heads, pq, fq, pk, fk).max(axis=(3, 5))
    gap = 1 if max(pq, pk) <= 24 else 2
    out = np.full((n_layers * (pq + gap) - gap, n_heads * (pk + gap) - gap), np.nan, np.float32)
    for layer in range(n_layers):
        for head in range(n_heads):
            out[layer * (pq + gap) : layer * (pq + gap) + pq, head * (pk + gap) : head * (pk + gap) + pk] = tiles[layer, head]
    return out


def _rows_of(kind: str, buffer: np.ndarray, n: int) -> AttentionData:
    """The first ``n`` query rows of ``buffer`` as a decoding hands them out: a read-only view (the
    decoder's keys grow with its rows)."""
    view = buffer[:, :, :n, :n] if kind == "decoder" else buffer[:, :, :n]
    view.flags.writeable = False
    return AttentionData(kind, view, tuple(map(str, range(n))), tuple(map(str, range(view.shape[3]))), highlight=n - 1)


@pytest.mark.parametrize("kind", ["cross", "decoder"])
def test_rows_added_step_by_step_draw_as_the_whole_matrix_drawn_at_once(make_view, kind):
    rng = np.random.default_rng(3)
    keys = 300 if kind == "decoder" else 512
    buffer = rng.random((2, 3, 300, keys)).astype(np.float32)
    if kind == "decoder":
        buffer *= np.tril(np.ones((300, 300), np.float32))
    other = buffer.copy()
    other[:, :, 100:] = rng.random(other[:, :, 100:].shape) * (np.tril(np.ones((300, 300)))[100:] if kind == "decoder" else 1)
    grid = make_view(QtAttentionGridView, (720, 540), _rows_of(kind, buffer, 3))
    lengths = [*range(4, 30), 120, *range(125, 140), 250, *range(254, 262), 200, 201, 130]  # pools change at 129 and 257; back to fewer rows
    for n in lengths:
        grid.set_data(_rows_of(kind, buffer, n))
        np.testing.assert_array_equal(grid.tiled_image(), _expected_image(grid.data().weights), err_msg=f"{n} rows")
    for n in (131, 132):  # other rows in other memory after the first 100: a new decoding's
        grid.set_data(_rows_of(kind, other, n))
        np.testing.assert_array_equal(grid.tiled_image(), _expected_image(grid.data().weights), err_msg=f"{n} other rows")
