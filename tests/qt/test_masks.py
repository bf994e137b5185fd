"""QtMasksView: M, the scores before and after adding M, and the softmax weights."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.figure_data import MaskData, MaskFrame
from attnviz.core.data.pieces import display_piece, display_pieces
from attnviz.qt.i18n import translate
from attnviz.qt.sample_data import SOURCE, TARGET, look_ahead, sample_masks
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.masks import CACHED_CAPTION, CACHED_LEGEND, RECOMPUTED_NOTE, QtMasksView


@pytest.fixture
def masks(make_view):
    return make_view(QtMasksView, (900, 760), sample_masks(), shown=True)


def test_panels_hold_the_pieces_of_the_formula(masks):
    assert masks.objectName() == "masksView"
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
    assert masks.panels["scaled_scores"].row_axis.labels() == display_pieces(TARGET)
    assert masks.panels["weights"].col_axis.labels() == display_pieces(TARGET)


def test_current_step_row_and_padding(masks):
    masks.set_data(sample_masks(step=3))
    for plot in masks.panels.values():
        assert plot.highlight_row() == 3 and plot.row_marker.isVisible()
    assert "step 4" in masks.title.plain_text()  # row 3, shown 1-based
    tgt_pad = masks.padding["tgt_padding"]
    np.testing.assert_array_equal(tgt_pad.raw_matrix(), np.zeros((1, len(TARGET))))
    assert masks.padding["src_padding"].col_axis.labels() == display_pieces(SOURCE)
    # a padded source: PAD keys become −∞ in the padding row
    d = sample_masks()
    padded = MaskData(d.query_labels, d.key_labels, d.look_ahead, d.scaled_scores, d.weights,
                      src_padding=np.array([0, 0, 0, 1, 1.0]), src_labels=SOURCE)
    masks.set_data(padded)
    row = masks.padding["src_padding"].raw_matrix()[0]
    assert np.isneginf(row[3:]).all() and (row[:3] == 0).all()


def test_selection_signal_and_hover(masks, qtbot):
    with qtbot.waitSignal(masks.chose, timeout=1000) as blocker:
        masks.head_combo.setCurrentIndex(1)
    assert blocker.args == [{"layer": 0, "head": 1, "mode": "head"}]
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


def _in_scroll_area(qtbot, view, width: int, height: int):
    """``view`` as the window shows it: in a scroll area of ``width`` × ``height`` (a dock)."""
    area = QtWidgets.QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(view)
    area.resize(width, height)
    qtbot.addWidget(area)
    area.show()
    qtbot.waitExposed(area)
    qtbot.wait_until(lambda: view.panels["weights"].getViewBox().height() > 0)
    return area


def _check_readable(view, labelled):
    """Every row labelled in the ``labelled`` panels (the left column), every panel title whole."""
    for name in labelled:
        assert view.panels[name].row_axis.label_step() == 1, name
    for name, plot in view.panels.items():
        label = plot.titleLabel
        assert label.itemRect().width() <= label.size().width() + 0.5, (name, label.text)


@pytest.mark.parametrize("width,height,how", [(1000, 224, "row"), (420, 600, "grid"), (900, 760, "grid")])
def test_readable_in_a_bottom_dock_a_right_dock_and_full_size(qtbot, width, height, how):
    view = QtMasksView()
    view.set_data(sample_masks(step=4))
    area = _in_scroll_area(qtbot, view, width, height)  # noqa: F841 - the area holds the view
    assert view.arrangement() == how
    left = ("scaled_scores", "masked_scores") if how == "grid" else ("scaled_scores",)
    _check_readable(view, left)
    assert all(view.panels[name].row_axis.labels() == display_pieces(TARGET) for name in left)
    if how == "row":  # the padding masks in words, as they are not drawn
        assert not np.any(sample_masks(step=4).tgt_padding > 0.5)  # no target PAD: none to list
        assert view.padding_summary() in view.title.plain_text() and not any(c.isdigit() for c in view.padding_summary())
    title = view.title
    assert title.text_rect().width() <= title.size().width() + 0.5  # wraps, never clipped


def test_the_export_keeps_the_padding_panels(make_view):
    from attnviz.qt.widgets.figures import figure_source, render_qimage

    src = tuple(f"源{i}" for i in range(12))
    tgt = ("SOS",) + tuple(f"▁word{i}" for i in range(11))
    view = make_view(QtMasksView, (1000, 760), sample_masks(target=tgt, source=src, step=6), shown=True)
    render_qimage(view)
    source = figure_source(view)
    for plot in view.padding.values():
        box = plot.getViewBox().sceneBoundingRect()
        assert box.height() >= 10 and source.contains(box), box
        assert source.contains(plot.sceneBoundingRect())


def test_a_row_click_and_the_hover_read_1_based(masks, qtbot):
    plot = masks.panels["weights"]
    qtbot.wait_until(lambda: plot.getViewBox().width() > 0)
    pos = masks.canvas.mapFromScene(plot.cell_center_in_scene(2, 1))
    with qtbot.waitSignal(masks.chose, timeout=2000) as blocker:
        qtbot.mouseClick(masks.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=pos)
    assert blocker.args == [{"query": 2}]
    plot.hover_cell(2, 1)
    text = masks.readout.text()
    assert f"fed “{display_piece(TARGET[2])}” (pos 3) → predicted “{display_piece(TARGET[3])}”" in text
    assert f"key “{display_piece(TARGET[1])}” (pos 2)" in text
    masks.set_data(MaskFrame(sample_masks(), TARGET[1:] + ("EOS",)))  # what each row predicted, with the frame
    plot.hover_cell(len(TARGET) - 1, 0)
    assert "→ predicted “EOS”" in masks.readout.text()
    with pytest.raises(TypeError):
        masks.set_data(object())  # neither a frame nor masks


def test_apply_takes_the_layer_and_head_of_a_choice(masks):
    masks.apply(ViewChoice(kind="decoder", layer=2, head=3, mode="head"))
    assert (masks.layer(), masks.head()) == (2, 3)
    masks.apply(ViewChoice(head=1))
    assert (masks.layer(), masks.head()) == (2, 1)


def test_every_text_reads_in_a_narrow_dock(make_view, qtbot):
    """The right dock of a 1024×700 window with the sampling controls shown: the padding captions and the row titles fit, none
    on another."""
    from window_helpers import check_texts, scene_texts, visible_rect

    m = sample_masks()  # with no PAD anywhere: the captions say so and are at their longest
    m = dataclasses.replace(m, tgt_padding=np.zeros(len(m.key_labels)), src_padding=np.zeros(len(m.src_labels)))
    view = make_view(QtMasksView, (420, 560), m, shown=True)
    for _ in range(4):
        qtbot.wait(20)
    assert view.arrangement() == "grid"
    texts = scene_texts(view.canvas, view)
    captions = _padding_captions(view)
    assert all(c.endswith(translate("masks", " · none")) for c in captions)  # no PAD anywhere
    assert all(any(t.text == c for t in texts) for c in captions)  # both drawn whole
    problems = check_texts(texts, visible_rect(view.canvas.viewport(), view))
    assert problems == [], "\n".join(problems)


def _padding_captions(view) -> list[str]:
    """The captions of the source's and the target's padding masks, as the view wrote them."""
    return [view.padding[name].titleLabel.text for name in ("src_padding", "tgt_padding")]


def test_the_padding_captions_shorten_in_the_narrowest_dock(make_view, qtbot):
    """At 1024×700 the masks dock may be ~320 px wide: "source padding · none" would be cut off at
    both ends of its half, so the captions say "src"/"tgt" there, and go back when it widens."""
    from window_helpers import check_texts, scene_texts, visible_rect

    m = sample_masks()
    m = dataclasses.replace(m, tgt_padding=np.zeros(len(m.key_labels)), src_padding=np.zeros(len(m.src_labels)))
    view = make_view(QtMasksView, (320, 560), m, shown=True)
    for _ in range(4):
        qtbot.wait(20)
    texts = scene_texts(view.canvas, view)
    narrow = _padding_captions(view)
    assert all(any(t.text == c for t in texts) for c in narrow)
    assert check_texts(texts, visible_rect(view.canvas.viewport(), view)) == []
    view.resize(520, 560)
    for _ in range(4):
        qtbot.wait(20)
    wide = _padding_captions(view)
    assert all(len(w) > len(n) for w, n in zip(wide, narrow))  # "src …" becomes "source …" again
    assert all(any(t.text == c for t in scene_texts(view.canvas, view)) for c in wide)


# -- free decoding: the rows come from KV-cached steps ------------------------------------------------------
def _stepped(qtbot, steps: int):
    """The registry's mask view fed from a session on the tiny model ``steps`` greedy steps in (free decoding)."""
    from attnviz.qt.session import Session
    from attnviz.qt.views.registry import build_view, feed_now, view_spec

    from inside_fixtures import bundle
    from story_helpers import APPLES

    session = Session()
    session.set_bundle(bundle())
    session.set_inputs(APPLES, "")
    for _ in range(steps):
        session.decoding.step()
    spec = view_spec("mask")
    view = build_view(spec)
    qtbot.addWidget(view)
    view.resize(900, 760)
    assert feed_now(spec, view, session, ViewChoice())
    return session, view


@pytest.mark.parametrize("steps", [1, 3, 5])
def test_stepping_shows_the_cached_steps_own_rows_and_says_the_future_was_recomputed(qtbot, steps):
    import torch

    from attnviz.core.model.sites import AttentionSite

    session, view = _stepped(qtbot, steps)
    cur = session.current
    row = session.current_row()
    assert row == steps - 1 and view.rows_cached()
    text = view.title.plain_text()
    assert translate("masks", CACHED_CAPTION) in text  # each step ran with a KV cache; the future was recomputed in a full pass
    with torch.inference_mode():  # one full pass over the decoded prefix, for the future scores the caption speaks of
        _, full = session.bundle.model.run_with_trace(torch.tensor([cur.src_ids]), torch.tensor([cur.input_ids]), names=["decoder.*.self_attn.*"])
    upper = np.triu(np.ones((row + 1, row + 1), dtype=bool), 1)
    for layer in range(cur.config.n_decoder_layers):
        site = AttentionSite("decoder", layer)
        for head in range(cur.config.n_heads):
            view.select(layer=layer, head=head)
            m = view.matrices()
            assert np.all(m["weights"][upper] == 0.0)  # exactly 0, not small
            assert np.all(np.isneginf(m["masked_scores"][upper]))
            own = {f: cur.steps[row].trace[site.name(f)][head, 0] for f in ("scaled_scores", "masked_scores", "weights")}  # [keys 0..row]
            assert own["scaled_scores"].shape == (row + 1,)
            np.testing.assert_array_equal(m["scaled_scores"][row], own["scaled_scores"])  # the step's own numbers, unchanged
            np.testing.assert_array_equal(m["masked_scores"][row], own["masked_scores"])
            np.testing.assert_array_equal(m["weights"][row], own["weights"])
            np.testing.assert_array_equal(view.panels["scaled_scores"].raw_matrix()[row], own["scaled_scores"])
            np.testing.assert_allclose(m["scaled_scores"][upper], full[site.name("scaled_scores")][head][upper], atol=1e-5)
    assert bool(view.figure_data().extras["rows_from_cached_steps"])
    if row:
        view.panels["scaled_scores"].hover_cell(0, row)
        assert view.readout.text().endswith(translate("masks", RECOMPUTED_NOTE))
    view.panels["scaled_scores"].hover_cell(row, 0)
    assert translate("masks", RECOMPUTED_NOTE) not in view.readout.text()


def test_a_teacher_forced_pass_computed_every_cell(loaded):
    _, view, session, ok = loaded("mask", target="I like apples.")
    assert ok and session.forced is not None and not view.rows_cached()
    legend = [text for _, _, text in view.title.legend()]
    assert translate("masks", CACHED_CAPTION) not in view.title.plain_text() and translate("masks", CACHED_LEGEND) not in legend
    assert not view.figure_data().extras["recomputed_scores"].any()


def test_the_row_arrangement_keeps_the_caption_in_its_legend(qtbot):
    session, view = _stepped(qtbot, 4)
    area = _in_scroll_area(qtbot, view, 1000, 224)  # noqa: F841 - the area holds the view
    assert view.arrangement() == "row"
    assert "recomputed" in view.title.plain_text()
    _check_readable(view, ("scaled_scores",))
