"""The tour's exercises in a real window: at each kind's stop the question is asked with the view
covered and the text hidden; a right answer is marked right and counts in the score, a wrong one
is marked wrong with the live numbers (recomputed here from the session's data and the model) in
its feedback; Skip leaves the tour playable. Widgets are found by objectName; the assertions are
on keys and numbers, not on English."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.compare import swap_ends
from attnviz.core.analysis.norm_batch import norm_batch_for, token_stats
from attnviz.core.data.pieces import display_piece
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.model.interventions import NoPositional, ZeroHeads
from attnviz.core.model.sites import AttentionSite
from attnviz.qt.i18n import install
from attnviz.qt.tour import TourPanel, start_tour

pytestmark = pytest.mark.slow
READY_MS = 180000
STOPS = {"cross-argmax": "cross-attention", "next-token": "output-softmax", "pe-off-order": "positional-encoding",
         "mask-cells": "look-ahead-mask", "important-head": "importance", "norm-batch": "layernorm-vs-batchnorm",
         "scaling": "scaling", "shape": "shift-right"}


def ask(qtbot, panel: TourPanel, stop_id: str) -> None:
    panel.go(panel.tour.index(stop_id))
    qtbot.waitUntil(lambda: panel.ready and panel.exercises.exercise is not None, timeout=READY_MS)


def answer(qtbot, panel: TourPanel, chosen: set[int]) -> str:
    """Tick ``chosen``, press Check: the verdict."""
    panel.exercises.panel.choose(chosen)
    qtbot.mouseClick(panel.findChild(QtWidgets.QPushButton, "exerciseCheck"), QtCore.Qt.MouseButton.LeftButton)
    return panel.findChild(QtWidgets.QLabel, "exerciseFeedback").property("verdict")


def score(panel: TourPanel) -> tuple[int, int]:
    n, m = (int(x) for x in re.findall(r"\d+", panel.findChild(QtWidgets.QLabel, "exerciseScore").text()))
    return n, m


def covered(w) -> bool:
    return any(c.isVisible() for c in w.findChildren(QtWidgets.QWidget, "exerciseCover"))


def other(right: set[int], n: int) -> set[int]:
    return {next(i for i in range(n) if i not in right)}


# -- the expected answers, from the session's data and the model ---------------------------------------
def log_softmax_last(model, src_ids, tgt_ids, row: int, interventions=()) -> torch.Tensor:
    with torch.no_grad():
        logits, _ = model.run_with_trace(torch.tensor([src_ids]), torch.tensor([tgt_ids]), names=[], interventions=interventions)
    return torch.log_softmax(logits[0, row].double(), -1)


def expect_cross_argmax(w, e):
    s, sel = w.session, w.views.selection.value()
    row = s.current.all_attention("cross")[sel.layer, sel.head][s.current_row()].astype(np.float64)
    top = np.argsort(-row)
    return {int(top[0])}, other({int(top[0])}, row.size), [f"{row[top[0]]:.3f}", f"{row[top[1]]:.3f}"]


def expect_next_token(w, e):
    s, cfg = w.session, w.session.bundle.config
    tokens = s.decoding.tgt_ids
    p = log_softmax_last(s.bundle.model, s.decoding.src_ids, tokens, -1).exp().numpy()
    p[[cfg.pad_id, cfg.bos_id]] = 0
    best = int(np.argmax(p))
    right = {e.choices.index(display_piece(s.bundle.tgt_tokenizer.piece(best)))}
    return right, other(right, len(e.choices)), [f"{p[best]:.3f}"]


def expect_pe_off_order(w, e):
    b, texts = w.session.bundle, (w.session.source, swap_ends(w.session.source))
    out = []
    for text in texts:
        run = DecodingSession(b.model, b.src_tokenizer, b.tgt_tokenizer, text, capture=False, interventions=(NoPositional(),))
        run.run()
        out.append(run.translation())
    right = {e.choices.index("yes" if out[0] == out[1] else "no")}
    return right, other(right, 2), out


def expect_mask_cells(w, e):
    mask = w.session.current.accumulated("decoder.layers.0.self_attn.mask")
    n = min(mask.shape[0], e.columns)
    right = set(np.flatnonzero(np.triu(np.ones((n, n), bool), 1)).tolist())
    return right, right - {max(right)}, [str(len(right))]


def expect_important_head(w, e):
    s, sel = w.session, w.views.selection.value()
    f, t = s.forced, sel.query
    site = AttentionSite(sel.kind, sel.layer)
    clean = log_softmax_last(s.bundle.model, f.source.ids, f.input_ids, t)[f.output_ids[t]]
    delta = np.array([float(log_softmax_last(s.bundle.model, f.source.ids, f.input_ids, t, (ZeroHeads(site, (h,)),))[f.output_ids[t]] - clean)
                      for h in range(s.bundle.config.n_heads)])
    right = {int(np.argmax(np.abs(delta)))}
    return right, other(right, delta.size), [f"{delta[i]:.3f}" for i in right] + [f"{float(clean):.3f}"]


def expect_norm_batch(w, e):
    b, cur = w.session.bundle, w.session.current
    site = norm_batch_for(b, cur.src_ids, cur.input_ids).get("encoder.layers.0.norm1")
    x, alone = np.asarray(site.x[0, : site.alone.shape[0]], np.float64), np.asarray(site.alone, np.float64)
    (m1, s1), (m2, s2) = token_stats(x), token_stats(alone)  # LayerNorm: each token's own statistics
    change = np.abs((x - m1[:, None]) / s1[:, None] - (alone - m2[:, None]) / s2[:, None]).max()
    assert b.config.norm == "layer"
    right = {e.choices.index("yes" if change > 1e-3 else "no")}
    return right, other(right, 2), [f"{0.0:.4f}"]


def expect_scaling(w, e):
    s, sel = w.session, w.views.selection.value()
    scores = s.current.accumulated(AttentionSite(sel.kind, sel.layer).name("scores"))[sel.head, sel.query].astype(np.float64)
    d_k = s.bundle.config.d_model // s.bundle.config.n_heads
    h = []
    for c in (np.sqrt(d_k), 1.0):
        p = np.exp(scores / c - (scores / c).max())
        p /= p.sum()
        h.append(float(-(p * np.log(p)).sum()))
    right = {e.choices.index("sharper" if h[1] < h[0] else "flatter")}
    return right, other(right, 3), [f"{h[0]:.3f}", f"{h[1]:.3f}", f"{np.sqrt(d_k):.2f}"]


def expect_shape(w, e):
    sel = w.views.selection.value()
    rows, keys = w.session.current.attention(sel.kind, sel.layer)[sel.head].shape
    right = {e.choices.index(f"{rows} × {keys}")}
    return right, other(right, len(e.choices)), [f"{rows} queries", f"{keys} keys"]


EXPECTED = {"cross-argmax": expect_cross_argmax, "next-token": expect_next_token, "pe-off-order": expect_pe_off_order,
            "mask-cells": expect_mask_cells, "important-head": expect_important_head, "norm-batch": expect_norm_batch,
            "scaling": expect_scaling, "shape": expect_shape}


# -- the tests ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(STOPS))
def test_right_then_wrong_at_each_kind(qtbot, window, kind):
    panel = start_tour(window, "en")
    stop_id = STOPS[kind]
    ask(qtbot, panel, stop_id)
    host = panel.exercises
    assert host.exercise.kind == kind and covered(window) and not panel.findChild(QtWidgets.QScrollArea, "tourTextScroll").isVisible()
    right, wrong, numbers = EXPECTED[kind](window, host.exercise)
    assert set(host.exercise.answers) == right
    assert answer(qtbot, panel, right) == "right"
    assert score(panel) == (1, 8) and not covered(window) and panel.findChild(QtWidgets.QScrollArea, "tourTextScroll").isVisible()
    host.outcomes.pop(stop_id)  # ask it again, and answer wrong
    ask(qtbot, panel, stop_id)
    assert answer(qtbot, panel, wrong) == "wrong"
    feedback = panel.findChild(QtWidgets.QLabel, "exerciseFeedback").text()
    for number in numbers:
        assert number in feedback, (number, feedback)
    assert score(panel) == (0, 8) and not covered(window)


def test_skip_keeps_the_tour_playable_and_the_score_shows_at_the_end(qtbot, window):
    panel = start_tour(window, "en")
    ask(qtbot, panel, "look-ahead-mask")
    qtbot.mouseClick(panel.findChild(QtWidgets.QPushButton, "exerciseSkip"), QtCore.Qt.MouseButton.LeftButton)
    assert panel.findChild(QtWidgets.QLabel, "exerciseFeedback").property("verdict") == "skipped"
    assert not covered(window) and panel.findChild(QtWidgets.QPushButton, "tourNext").isEnabled()
    panel.go(len(panel.tour.stops) - 1)  # the last stop: skipped before its answer is computed
    qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)
    qtbot.mouseClick(panel.findChild(QtWidgets.QPushButton, "exerciseSkip"), QtCore.Qt.MouseButton.LeftButton)
    assert score(panel) == (0, 8) and panel.findChild(QtWidgets.QLabel, "exerciseScore").isVisible() and not covered(window)
    panel.go(0)  # a stop without an exercise: no question, the score stays
    qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)
    assert not panel.findChild(QtWidgets.QWidget, "exerciseBody").isVisible() and score(panel) == (0, 8)


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_screenshot_of_the_exercise_panel(qtbot, window, language, tmp_path):
    """The panel asking (the view covered) and answered wrong, in each language."""
    try:
        install(language)
        panel = start_tour(window, language)
        ask(qtbot, panel, "cross-attention")
        qtbot.wait(100)  # the panel lays out its new choices
        name = "en" if language == "en" else "zh"
        window.grab().save(str(tmp_path / f"exercise_{name}_asking.png"))
        right, wrong, numbers = expect_cross_argmax(window, panel.exercises.exercise)
        assert answer(qtbot, panel, wrong) == "wrong"
        QtWidgets.QApplication.processEvents()
        assert panel.grab().save(str(tmp_path / f"exercise_{name}.png"))
        assert window.grab().save(str(tmp_path / f"exercise_{name}_window.png"))
    finally:
        install("en")
