"""The output view shows the decoding step's distribution and the teacher-forced table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

from attnviz.core.analysis.figure_data import OutputFrame
from attnviz.qt.export.files import render_view_to_file
from attnviz.qt.views.output import QtOutputView

import inside_fixtures as F


@pytest.fixture
def results():
    """A session three steps in (tests step and go back on it) and a teacher-forced pass."""
    return F.session(steps=3), F.forced()


SIZE = (900, 700)


def test_next_token_distribution(make_view, results):
    session, _ = results
    step = session.steps[-1]
    view = make_view(QtOutputView, SIZE)
    assert view.objectName() == "outputView" and not view.has_data()
    view.set_data(OutputFrame(step=step))
    np.testing.assert_allclose(view.bar_probabilities(), [p for _, _, p in step.topk])
    assert view.topk() == step.topk
    assert view.topk_axis.labels() == tuple(piece for piece, _, _ in step.topk)
    ids = [i for _, i, _ in step.topk]
    assert step.token_id in ids and view.topk_axis.highlight() == ids.index(step.token_id)  # greedy: the chosen bar
    title = view.title.plain_text()
    assert f"step {step.index + 1}" in title and f"H = {step.entropy:.3f} nats" in title
    assert f"perplexity e^H = {math.exp(step.entropy):.2f}" in title
    assert f"top-{len(step.topk)} hold {sum(p for _, _, p in step.topk) * 100:.1f}%" in title
    assert f"“{step.piece}” with p = {step.prob:.4f}" in title
    assert not view.prob_plot.isVisible() and view.hint.isVisibleTo(view)
    # the same view, a step later: updated in place
    bars = view.topk_bars
    session.step()
    view.set_data(OutputFrame(step=session.steps[-1]))
    assert view.topk_bars is bars
    np.testing.assert_allclose(view.bar_probabilities(), [p for _, _, p in session.steps[-1].topk])
    session.back()


def test_a_forced_token_is_marked(make_view, results):
    session, _ = results
    peek = session.step()  # the next distribution, then undone
    session.back()
    piece, token_id, _ = peek.topk[-1]  # its least likely top-k entry
    step = session.force(token_id)
    try:
        view = make_view(QtOutputView, SIZE)
        view.set_data(OutputFrame(step=step))
        assert step.forced and step.topk == peek.topk and view.title.property("key") == "forced"  # the title says it was forced
        assert view.topk_axis.highlight() == len(step.topk) - 1
        assert QtGui.QColor(view.topk_bars.opts["brushes"][-1]).name() == view.theme.highlight
    finally:
        session.back()


def test_teacher_forcing_table(make_view, qtbot, results):
    _, forced = results
    view = make_view(QtOutputView, SIZE)
    view.set_data(OutputFrame(forced=forced, position=2))
    arrays = view.forced_arrays()
    np.testing.assert_allclose(arrays["target_prob"], [p.prob for p in forced.steps])
    np.testing.assert_allclose(arrays["loss"], [p.loss for p in forced.steps])
    np.testing.assert_allclose(arrays["loss"], -np.log(arrays["target_prob"]), rtol=1e-4)
    assert view.predicted_labels() == [p.predicted_piece for p in forced.steps]
    assert view.in_axis.labels() == forced.input_pieces  # SOS + y in
    assert view.target_axis.labels() == forced.output_pieces  # y + EOS out
    assert forced.input_pieces[0] == "SOS" and forced.output_pieces[-1] == "EOS"
    assert view.in_axis.highlight() == 2
    p = forced.steps[2]
    np.testing.assert_allclose(view.bar_probabilities(), [q for _, _, q in p.topk])  # the cursor's distribution on top
    assert f" {forced.loss:.3f} " in view.forced_title.plain_text()  # the mean loss
    assert f"{sum(q.match for q in forced.steps)}/{len(forced.steps)}" in view.forced_title.plain_text()
    assert view.prob_plot.isVisible() and not view.hint.isVisibleTo(view)
    # clicking a position moves the cursor (and its distribution goes on top)
    view.show()
    qtbot.waitExposed(view)
    scene_pt = view.prob_plot.getViewBox().mapViewToScene(QtCore.QPointF(4.0, 0.5))
    with qtbot.waitSignal(view.positionClicked) as got:
        qtbot.mouseClick(view.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=view.canvas.mapFromScene(scene_pt))
    assert got.args == [4] and view.in_axis.highlight() == 4
    np.testing.assert_allclose(view.bar_probabilities(), [q for _, _, q in forced.steps[4].topk])
    view.canvas.scene().sigMouseMoved.emit(scene_pt)
    assert f"P(target) = {forced.steps[4].prob:.4f}" in view.readout.text()


def test_the_frame_keeps_the_cursor_within_the_positions(results):
    _, forced = results
    n = len(forced.steps)
    assert OutputFrame(forced=forced, position=n + 5).position == n - 1
    assert OutputFrame(forced=forced, position=-3).position == 0 and OutputFrame(forced=forced).position == 0
    assert OutputFrame(position=2).position is None  # no teacher forcing: no cursor


def test_exports(make_view, results, tmp_path):
    session, forced = results
    view = make_view(QtOutputView, SIZE)
    view.set_data(OutputFrame(step=session.steps[-1], forced=forced))
    for fmt in ("png", "svg", "pdf"):
        data = render_view_to_file(view, tmp_path / f"out.{fmt}").read_bytes()
        assert len(data) > 2000 and data.startswith({"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[fmt])
    assert "EOS" in (tmp_path / "out.svg").read_text(encoding="utf-8")
    fd = view.figure_data()
    np.testing.assert_allclose(fd.values["loss"], [p.loss for p in forced.steps])
