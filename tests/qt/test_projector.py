"""The projector (1024×700): with every strategy the grid's tiles are whole, none under 48 px
along its longer side (cells are square, so a tile has the sentence's shape), with no sideways
scrolling, and the grid's controls are not cut."""

from __future__ import annotations

import pytest
from PySide6 import QtWidgets
from window_helpers import wait_idle

pytestmark = [pytest.mark.slow, pytest.mark.window_size(1024, 700)]  # the whole main window at a projector's size

MIN_TILE_PX = 48


@pytest.mark.parametrize("strategy", ["greedy", "sample", "beam"])
def test_the_grid_is_whole_at_1024x700(qtbot, window, strategy):
    combo = window.step_bar.strategy_combo
    combo.setCurrentIndex(combo.findData(strategy))
    wait_idle(qtbot, window)
    frame = window.frames["grid"]
    scroll = frame.findChild(QtWidgets.QScrollArea)
    assert scroll is None or not scroll.horizontalScrollBar().isVisible(), scroll.horizontalScrollBar().maximum()
    grid = window.grid
    n_layers, n_heads = grid._geometry[:2]  # noqa: SLF001 - the shape the tiles are laid out in
    canvas = grid.canvas.rect()
    for layer in range(n_layers):
        for head in range(n_heads):
            tile = grid.tile_on_screen(layer, head)
            assert canvas.contains(tile), (layer, head, tile, canvas)
            assert max(tile.width(), tile.height()) >= MIN_TILE_PX, (layer, head, tile)  # cells are square: the other side follows the sentence
    for w in (grid.kind_combo, grid.ablate_button, grid.ablation_combo, grid.link_button):
        assert w.width() >= w.sizeHint().width() or not w.isVisible(), w.objectName()
