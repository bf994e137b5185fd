"""QtMaskView: M, the scores before and after adding M, and the softmax weights."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.qt.sample_data import SOURCE, TARGET, look_ahead, sample_masks
from attnviz.qt.views.data import MaskData
from attnviz.qt.views.masks import QtMaskView


@pytest.fixture
def masks(make_view):
    return make_view(QtMaskView, (900, 760), sample_masks(), shown=True)


def test_panels_hold_the_pieces_of_the_formula(masks):
    assert masks.objectName() == "maskView"
    d = masks.data()
    masks.select(layer=1, head=2)
    p = masks.panels
    np.testing.assert_array_equal(p["scaled_scores"].raw_matrix(), d.scaled_scores[1, 2])
    np.testing.assert_array_equal(p["mask"].raw_matrix(), look_ahead(len(TARGET)))
    np.testing.assert_array_equal(p["masked_scores"].raw_matrix(), d.scaled_scores[1, 2] + look_ahead(len(TARGET)))
    weights = p["weights"].raw_matrix()
    np.testing.assert_array_equal(weights, d.weights[1, 2])
    upper = np.triu(np.ones_like(weights, dtype=bool), 1)
    assert np.all(weights[upper] == 0.0)  # exactly zero, not small
    assert np.all(weights[~upper] > 0.0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)
    # −∞ stays −∞ in the data, shows as masked cells and as "−∞" text
    assert np.all(np.isneginf(p["mask"].raw_matrix()[upper]))
    assert np.all(np.isnan(p["mask"].matrix()[upper]))
    assert masks.panels["mask"].cells.strings()[0][1] == "−∞"
    assert masks.panels["mask"].cells.strings()[1][0] == "0"
    assert masks.panels["weights"].cells.strings()[0][1] == "0"


def test_titles_use_the_tutorials_notation(masks):
    titles = [plot.titleLabel.text for plot in masks.panels.values()]
    assert any("QKᵀ/√d_k" in t and "+ M" not in t for t in titles)
    assert any("② M" in t for t in titles)
    assert any("softmax(QKᵀ/√d_k + M)" in t for t in titles)
    assert masks.panels["scaled_scores"].row_axis.labels() == TARGET
    assert masks.panels["weights"].col_axis.labels() == TARGET


def test_current_step_row_and_padding(masks):
    masks.set_data(sample_masks(step=3))
    for plot in masks.panels.values():
        assert plot.highlight_row() == 3 and plot.row_marker.isVisible()
    assert "step 3" in masks.title.plain_text()
    tgt_pad = masks.padding["tgt_padding"]
    np.testing.assert_array_equal(tgt_pad.raw_matrix(), np.zeros((1, len(TARGET))))
    assert masks.padding["src_padding"].col_axis.labels() == SOURCE
    # a padded source: PAD keys become −∞ in the padding row
    d = sample_masks()
    padded = MaskData(d.query_labels, d.key_labels, d.look_ahead, d.scaled_scores, d.weights,
                      src_padding=np.array([0, 0, 0, 1, 1.0]), src_labels=SOURCE)
    masks.set_data(padded)
    row = masks.padding["src_padding"].raw_matrix()[0]
    assert np.isneginf(row[3:]).all() and (row[:3] == 0).all()


def test_selection_signal_and_hover(masks, qtbot):
    with qtbot.waitSignal(masks.selectionChanged, timeout=1000) as blocker:
        masks.head_combo.setCurrentIndex(1)
    assert blocker.args == [0, 1]
    info = masks.panels["masked_scores"].hover_cell(1, 4)
    assert np.isneginf(info.value)
    assert "−∞" in masks.readout.text() and "③" in masks.readout.text()


def test_mask_data_checks_shapes():
    d = sample_masks()
    with pytest.raises(ValueError):
        MaskData(d.query_labels, d.key_labels, d.look_ahead[:-1], d.scaled_scores, d.weights)
    with pytest.raises(ValueError):
        MaskData(d.query_labels, d.key_labels, d.look_ahead, d.scaled_scores, d.weights[:, :, :, :-1])
    with pytest.raises(ValueError):
        MaskData(d.query_labels, d.key_labels, d.look_ahead, d.scaled_scores, d.weights, step=99)
