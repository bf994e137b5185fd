"""Help → Tour in a real window: each stop raises its view, outlines the part that matters, and
every number its text quotes is the one recomputed here from the session's data (the trace, the
model), not read back from the tour; and the claims hold (the mask's upper triangle is exactly 0,
the encodings of 猫吃鱼 and 鱼吃猫 differ, softmax rows sum to 1). Widgets are found by objectName."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
import torch
from PySide6 import QtCore, QtGui, QtWidgets
from window_helpers import close_shared_window, open_shared_window

from attnviz.core.data.pieces import display_piece, display_pieces
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.model.interventions import NoPositional
from attnviz.core.model.sites import AttentionSite
from attnviz.core.tour_data import LANGUAGES, MEASURES, REGIONS, fill, load_tour
from attnviz.qt.i18n import install
from attnviz.qt.tour import (
    Context,
    TourPanel,
    TourSpecError,
    check_specs,
    model_measures,
    other_tour,
    other_tour_words,
    region_of,
    spec_gaps,
    start_tour,
    tour_for,
)
from attnviz.qt.views.registry import VIEW_NAMES, VIEWS, on_screen

READY_MS = 180000  # the attribution stop runs integrated gradients in a worker
SCREENSHOT_STOP = "look-ahead-mask"


@pytest.fixture(scope="module")
def tour_window(qapp, tmp_path_factory):
    """One window for the module (opening one takes seconds), its tour started in English."""
    w = open_shared_window(tmp_path_factory.mktemp("tour"))
    panel = start_tour(w, "en")
    yield w, panel
    close_shared_window(w)


def go(qtbot, panel: TourPanel, stop_id: str) -> None:
    panel.go(panel.tour.index(stop_id))
    qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)


# -- what the test expects, recomputed from the session's data --------------------------------------
def row_of(stop, session, n: int) -> int:
    q = stop.state.query
    if q is not None:
        return q
    return n - 1 if stop.state.kind == "encoder" else session.current_row()


def labels(session, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    src, tgt = session.src_pieces(), session.input_pieces()
    return (src if kind == "encoder" else tgt), (tgt if kind == "decoder" else src)


def expect_model(w, stop) -> dict:
    c = w.session.bundle.config
    return {"d_model": c.d_model, "d_k": c.d_model // c.n_heads, "n_heads": c.n_heads, "d_ff": c.d_ff,
            "encoder_layers": c.n_encoder_layers, "decoder_layers": c.n_decoder_layers, "target_vocab": c.tgt_vocab_size}


def expect_head(w, stop) -> dict:
    s, st = w.session, stop.state
    a = s.current.all_attention(st.kind)[st.layer, st.head].astype(np.float64)
    row = row_of(stop, s, a.shape[0])
    rows, keys = labels(s, st.kind)
    j = int(np.argmax(a[row]))
    assert abs(a[row].sum() - 1.0) < 1e-6  # softmax: the row sums to 1
    return {"head_layer": st.layer + 1, "head_head": st.head + 1, "head_query": display_piece(rows[row]), "head_keys": a.shape[1],
            "head_row_sum": a[row].sum(), "head_max_weight": a[row, j], "head_max_key": display_piece(keys[j])}


def ranks(scores: np.ndarray) -> list[int]:
    return [int(i) for i in np.argsort(-np.abs(scores), kind="stable")]


def expect_attribution(w, stop) -> dict:
    s, r = w.session, w.views["attribution"].result()
    row = stop.state.query
    pieces = s.src_pieces()
    cross = s.current.all_attention("cross")[:, :, row].astype(np.float64).mean(axis=(0, 1))  # mean over layers and heads
    np.testing.assert_allclose(r.measures["cross attention"], cross, atol=1e-5)
    att, ig = ranks(cross), ranks(r.measures["ig"])
    focus = [i for word in stop.state.focus for i in pieces_of(pieces, word)]
    names = list(r.names)
    pairs = [r.rho[names.index(a), names.index(b)] for a in ("cross attention", "attention received", "rollout", "flow")
             for b in ("grad", "ig", "occlusion")]
    return {"attr_token": display_piece(s.output_pieces()[row]), "attr_position": row + 1, "attr_sources": len(pieces),
            "attr_focus_ranks": " · ".join(f"{pieces[i]} {att.index(i) + 1}" for i in focus),
            "attr_attention_top": " ".join(pieces[i] for i in att[:3]), "attr_ig_top": " ".join(pieces[i] for i in ig[:3]),
            "attr_rho": float(np.nanmean(pairs)), **expect_known(s)}


def pieces_of(pieces, word: str) -> list[int]:
    """The positions of the pieces that together hold ``word`` (a piece may hold more than it)."""
    ends = np.cumsum([len(p) for p in pieces])
    at = "".join(pieces).index(word)
    return [i for i, end in enumerate(ends) if end > at and end - len(pieces[i]) < at + len(word)]


def expect_known(s) -> dict:
    """Teacher-forced token accuracy of the typed target, from a forward pass of the model here."""
    f = s.forced
    logits, _ = s.bundle.model.run_with_trace(torch.tensor([f.source.ids]), torch.tensor([f.input_ids]), names=[])
    hits = (logits[0].argmax(-1) == torch.tensor(f.output_ids)).tolist()
    return {"attr_known": sum(hits), "attr_targets": len(hits), "attr_accuracy": sum(hits) / len(hits)}


def expect_walkthrough(w, stop) -> dict:
    s, st, cfg = w.session, stop.state, w.session.bundle.config
    site = AttentionSite(st.kind, st.layer)
    scores, weights, z = (np.asarray(s.current.accumulated(site.name(f)), np.float64)[st.head] for f in ("scores", "weights", "z"))
    q = st.query
    rows, keys = labels(s, st.kind)
    j = int(np.argmax(weights[q]))
    assert abs(weights[q].sum() - 1.0) < 1e-6
    np.testing.assert_allclose(z[q], weights[q] @ np.asarray(s.current.accumulated(site.name("v")), np.float64)[st.head], atol=1e-5)
    d_k = cfg.d_model // cfg.n_heads
    return {"walk_query": display_piece(rows[q]), "walk_top_key": display_piece(keys[j]), "walk_top_score": scores[q, j],
            "walk_top_weight": weights[q, j], "walk_row_sum": weights[q].sum(), "walk_min_weight": weights[q].min(), "walk_z": z[q, 0],
            "walk_head": st.head + 1, "walk_head_first": st.head * d_k, "walk_head_last": (st.head + 1) * d_k - 1}


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def expect_scaling(w, stop) -> dict:
    s, st = w.session, stop.state
    scores = np.asarray(s.current.accumulated(AttentionSite(st.kind, st.layer).name("scores")), np.float64)  # [head, q, k]
    d_k = s.bundle.config.d_model // s.bundle.config.n_heads
    out = {"scale_sqrt_dk": math.sqrt(d_k)}
    for name, a in (("scaled", softmax(scores / math.sqrt(d_k))), ("unscaled", softmax(scores))):
        out[f"scale_max_{name}"] = a.max(axis=-1).mean()
        out[f"scale_entropy_{name}"] = (-(a * np.log(np.where(a > 0, a, 1.0))).sum(axis=-1)).mean()
    return out


def encoder_output(bundle, text: str, positional: bool) -> tuple[list[int], np.ndarray]:
    ids = bundle.src_tokenizer.encode(text)
    with torch.inference_mode():
        return ids, bundle.model.encode(torch.tensor([ids]), positional=positional).memory[0].numpy()


def translate(bundle, text: str, positional: bool) -> str:
    run = DecodingSession.from_bundle(bundle, text, capture=False, interventions=() if positional else (NoPositional(),))
    run.run()
    return run.translation()


def max_difference(bundle, a: str, b: str, positional: bool) -> float:
    (ia, ca), (ib, cb) = encoder_output(bundle, a, positional), encoder_output(bundle, b, positional)
    assert sorted(ia) == sorted(ib) and len(set(ia)) == len(ia)  # the same tokens, in another order
    return float(np.abs(ca - cb[[ib.index(t) for t in ia]]).max())


def expect_compare(w, stop) -> dict:
    bundle, a = w.session.bundle, stop.state.source
    b = a[-2] + a[1:-2] + a[0] + a[-1]  # 猫吃鱼。 → 鱼吃猫。
    with_pe = max_difference(bundle, a, b, True)
    assert with_pe > 0.1 and max_difference(bundle, a, b, False) < 1e-5  # PE tells the orders apart; without it they are one bag
    no_pe = translate(bundle, a, False)
    assert translate(bundle, b, False) == no_pe
    return {"cmp_a": a, "cmp_b": b, "cmp_max_difference": with_pe, "cmp_translation_a": translate(bundle, a, True),
            "cmp_translation_b": translate(bundle, b, True), "cmp_translation_no_pe": no_pe}


def mean_norm(x) -> float:
    return float(np.linalg.norm(np.asarray(x, np.float64), axis=-1).mean())


def expect_residual(w, stop) -> dict:
    cur, cfg = w.session.current, w.session.bundle.config
    assert cfg.norm_placement == "pre" and cfg.norm == "layer"
    last = f"encoder.layers.{cfg.n_encoder_layers - 1}.residual2"
    return {"res_formula": "x + Sublayer(LN(x))", "res_first": mean_norm(cur.accumulated("encoder.embed.sum")),
            "res_last": mean_norm(cur.accumulated(last))}


def expect_norm(w, stop) -> dict:
    cur = w.session.current
    x = np.asarray(cur.accumulated("encoder.layers.0.norm1.input"), np.float64)  # [token, d_model]
    row, col = x.shape[0] - 1, x.shape[1] // 3  # the marks the view opens with: the last token, a feature a third of the way in
    return {"norm_token": display_piece(cur.src_pieces[row]), "norm_ln_mean": x[row].mean(), "norm_ln_std": x[row].std(),
            "norm_feature": col, "norm_bn_mean": x[:, col].mean(), "norm_bn_std": x[:, col].std(), "norm_tokens": x.shape[0]}


def expect_ffn(w, stop) -> dict:
    cur = w.session.current
    hidden = np.asarray(cur.accumulated("encoder.layers.0.ffn.hidden"))
    return {"ffn_layer": 1, "ffn_off": float((hidden == 0).mean()), "ffn_token": display_piece(cur.src_pieces[-1]),
            "ffn_active": int((hidden[-1] > 0).sum())}


def expect_info(w, stop) -> dict:
    return {"info_parameters": sum(p.numel() for p in w.session.bundle.model.parameters())}


def expect_output(w, stop) -> dict:
    s = w.session
    if s.forced is not None:
        f = s.forced
        return {"out_fed": " ".join(display_pieces(f.input_pieces)), "out_labels": " ".join(display_pieces(f.output_pieces)),
                "out_positions": len(f.steps), "out_loss": float(np.mean([p.loss for p in f.steps]))}
    step = s.decoding.steps[-1]
    piece, _, p = step.topk[0]
    assert len(s.decoding.steps) == stop.state.steps
    return {"out_step": len(s.decoding.steps), "out_token": display_piece(piece), "out_prob": p, "out_entropy": step.entropy}


def expect_teacher_free(w, stop) -> dict:
    s = w.session
    free = DecodingSession.from_bundle(s.bundle, stop.state.source, capture=False)
    free.run()
    ref = s.forced.output_ids
    d = next(i for i, (a, b) in enumerate(zip(ref, free.output_ids)) if a != b)
    return {"tvf_departure": d + 1, "tvf_free": display_piece(free.output_pieces[d]), "tvf_reference": display_piece(s.forced.output_pieces[d])}


def expect_mask(w, stop) -> dict:
    md, st = w.session.frames.mask_data(), stop.state
    a = np.asarray(md.weights[st.layer, st.head], np.float64)
    n = a.shape[0]
    upper = a[np.triu_indices(n, 1)]
    assert np.all(upper == 0.0)  # exactly zero, not small
    view = w.views["mask"].matrices()["weights"]
    assert np.all(view[np.triu_indices(n, 1)] == 0.0)
    row = md.step
    assert abs(a[row].sum() - 1.0) < 1e-6
    return {"mask_upper_max": float(upper.max()), "mask_masked": upper.size, "mask_row": row + 1, "mask_row_sum": a[row].sum(),
            "mask_allowed": row + 1}


EXPECTED = {
    "head": expect_head, "attribution": expect_attribution, "walkthrough": expect_walkthrough, "scaling": expect_scaling,
    "compare": expect_compare, "residual": expect_residual, "norm": expect_norm, "ffn": expect_ffn, "model-info": expect_info,
    "output": expect_output, "teacher-vs-free": expect_teacher_free, "mask": expect_mask,
}


# -- comparing the text with the expectation ------------------------------------------------------
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?%?")


def numbers_match(shown: str, expected: str) -> bool:
    """Two numbers as written agree to the last digit written (one unit of it either way)."""
    digits = len(expected.split(".")[1].rstrip("%")) if "." in expected else 0
    scale = 100.0 if expected.endswith("%") else 1.0
    a, b = (float(x.replace(",", "").rstrip("%")) / scale for x in (shown, expected))
    return abs(a - b) <= 1.01 * 10 ** -digits / scale


def assert_same_text(shown: str, expected: str) -> None:
    """The same words, and numbers that agree to their last digit."""
    assert NUMBER.split(shown) == NUMBER.split(expected), (shown, expected)
    for a, b in zip(NUMBER.findall(shown), NUMBER.findall(expected)):
        assert numbers_match(a, b), (a, b, shown)


def check_stop(qtbot, w, panel: TourPanel) -> None:
    """The stop's view is raised, its region outlined, its text the expected one."""
    stop = panel.stop()
    dock = w.findChild(QtWidgets.QDockWidget, w.views.specs[stop.view].dock_name)
    view, frame = w.views[stop.view], w.views.frames[stop.view]
    assert dock.isVisible() and on_screen(view) and not frame.is_empty(), stop.id
    highlight = w.findChild(QtWidgets.QWidget, "tourHighlight")
    room = QtCore.QRectF(QtCore.QRect(frame.mapTo(w, QtCore.QPoint(0, 0)), frame.size())).adjusted(-6, -6, 6, 6)
    qtbot.waitUntil(lambda: highlight.isVisible() and room.contains(QtCore.QRectF(highlight.geometry())), timeout=5000)
    outline = highlight.polygon_in_window().boundingRect()
    assert outline.width() > 5 and outline.height() > 5 and (frame is highlight.target or frame.isAncestorOf(highlight.target)), stop.id
    expected = expect_model(w, stop) | EXPECTED[stop.view](w, stop)
    missing = [n for n in stop.placeholders() if panel.values.get(n) is None]
    assert not missing, (stop.id, missing)
    assert_same_text(panel.text(), fill(stop.text, expected))
    assert panel.findChild(QtWidgets.QLabel, "tourTitle").text() == stop.title
    assert panel.findChild(QtWidgets.QLabel, "tourText").textFormat() == QtCore.Qt.TextFormat.PlainText


# -- the tests --------------------------------------------------------------------------------------
def test_every_measure_and_region_is_declared_by_its_views_spec():
    assert spec_gaps(VIEWS) == []
    declared = {name for spec in VIEWS for name in spec.regions}
    assert declared == {r for r, v in REGIONS.items() if v is not None}
    assert {v for v in REGIONS.values() if v} <= set(VIEW_NAMES)
    assert set(EXPECTED) == {spec.name for spec in VIEWS if spec.measures is not None} == {m.view for m in MEASURES.values()} - {None}


def with_spec(name: str, **changes) -> list:
    """The registry's specs, view ``name``'s with ``changes``."""
    return [replace(spec, **changes) if spec.name == name else spec for spec in VIEWS]


@pytest.mark.parametrize(("view", "changes", "named"), [
    ("head", {"regions": {}}, "region 'head-row'"),
    ("walkthrough", {"measure_names": ("walk_query",)}, "measure 'walk_top_key'"),
    ("mask", {"measures": None}, "measure 'mask_upper_max'"),
    ("ffn", {"measure_names": ("ffn_layer", "ffn_off", "ffn_token", "ffn_active", "ffn_units")}, "'ffn_units'"),
])
def test_a_spec_that_lacks_what_the_tour_reads_fails_the_load_check(view, changes, named):
    check_specs(VIEWS)
    with pytest.raises(TourSpecError, match=f"the {view} view's spec .*{re.escape(named)}"):
        check_specs(with_spec(view, **changes))


@pytest.mark.parametrize("stop_id", ["look-ahead-mask", "weighted-sums", "cross-attention", "shift-right"])
def test_a_few_stops_show_what_their_text_says(qtbot, tour_window, stop_id):
    w, panel = tour_window
    go(qtbot, panel, stop_id)
    check_stop(qtbot, w, panel)


def test_next_back_leave_and_resume(qtbot, tour_window):
    w, panel = tour_window
    go(qtbot, panel, "look-ahead-mask")
    start = panel.index
    qtbot.mouseClick(panel.findChild(QtWidgets.QPushButton, "tourNext"), QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.ready and panel.index == start + 1, timeout=READY_MS)
    assert panel.stop().id == "cross-attention" and w.views.selection.value().kind == "cross"
    counter = panel.findChild(QtWidgets.QLabel, "tourCounter").text()
    assert str(start + 2) in counter and str(len(panel.tour.stops)) in counter
    qtbot.mouseClick(panel.findChild(QtWidgets.QPushButton, "tourBack"), QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.ready and panel.index == start, timeout=READY_MS)
    highlight = w.findChild(QtWidgets.QWidget, "tourHighlight")
    assert highlight.testAttribute(QtCore.Qt.WidgetAttribute.WA_TransparentForMouseEvents)
    assert QtWidgets.QApplication.activeModalWidget() is None  # the window stays usable
    qtbot.mouseClick(panel.findChild(QtWidgets.QPushButton, "tourLeave"), QtCore.Qt.MouseButton.LeftButton)
    assert not panel.isVisible() and not highlight.isVisible()
    w.views.selection.update(head=2)  # the user explores; the window stays as the user leaves it
    QtWidgets.QApplication.processEvents()
    assert w.views.selection.value().head == 2 and not panel.isVisible()
    panel.resume()
    qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)
    assert panel.isVisible() and panel.stop().id == "look-ahead-mask" and w.views.selection.value().head == 0
    check_stop(qtbot, w, panel)


def test_a_change_at_a_stop_is_explained_with_the_new_numbers(qtbot, tour_window):
    w, panel = tour_window
    go(qtbot, panel, "cross-attention")
    w.views.selection.update(head=0)
    qtbot.waitUntil(lambda: panel.ready and panel.values.get("head_head") == 1, timeout=READY_MS)
    view = w.views["head"]
    row = w.session.current_row()
    assert panel.values["head_max_weight"] == pytest.approx(float(view.current_matrix()[row].max()))
    assert f"{panel.values['head_max_weight']:.3f}" in panel.text()


def outline_of(w, stop) -> QtCore.QRectF:
    """Where the stop's region is now, in window coordinates (recomputed here)."""
    widget, polygon = region_of(Context(w, stop))
    return polygon.boundingRect().translated(QtCore.QPointF(widget.mapTo(w, QtCore.QPoint(0, 0))))


def close_to(a: QtCore.QRectF, b: QtCore.QRectF, px: float = 2.0) -> bool:
    return all(abs(x - y) <= px for x, y in zip(a.getCoords(), b.getCoords()))


def test_the_outline_follows_the_window(qtbot, tour_window):
    w, panel = tour_window
    go(qtbot, panel, "look-ahead-mask")
    highlight = w.findChild(QtWidgets.QWidget, "tourHighlight")
    qtbot.waitUntil(lambda: close_to(highlight.polygon_in_window().boundingRect(), outline_of(w, panel.stop())), timeout=5000)
    before = highlight.polygon_in_window().boundingRect()
    size = w.size()
    w.resize(size.width() - 200, size.height() - 60)
    try:
        qtbot.waitUntil(lambda: highlight.polygon_in_window().boundingRect() != before, timeout=5000)
        qtbot.waitUntil(lambda: close_to(highlight.polygon_in_window().boundingRect(), outline_of(w, panel.stop())), timeout=5000)
    finally:
        w.resize(size)
    whole = replace(panel.stop(), highlight="view")  # the region any stop can take: its whole view
    widget, _ = region_of(Context(w, whole))
    assert widget is w.views.frames["mask"]


def test_the_tour_in_chinese_keeps_the_stop(qtbot, tour_window):
    w, panel = tour_window
    go(qtbot, panel, "look-ahead-mask")
    assert start_tour(w, "zh_CN") is panel
    qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)
    assert panel.stop().id == "look-ahead-mask" and panel.stop().title == "前瞻掩码" and "掩码" in panel.text()
    check_stop(qtbot, w, panel)
    assert start_tour(w, "en") is panel
    qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)


def test_help_tour_follows_the_interface_language(qtbot, tour_window):
    """Help → Tour opens the tour of the interface's language (English here); the action beside
    it opens the other one, named so that its readers find it."""
    w, panel = tour_window
    actions = {a.objectName(): a for a in w.findChildren(QtGui.QAction)}
    assert actions["tourOtherLanguageAction"].text() == "导览（简体中文）"
    actions["tourOtherLanguageAction"].trigger()
    qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)
    assert panel.tour.language == "zh_CN" and panel.windowTitle() == "导览"
    actions["tourAction"].trigger()
    qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)
    assert panel.tour.language == "en" and panel.windowTitle() == "Tour"
    assert (tour_for("zh_CN"), other_tour("zh_CN")) == ("zh_CN", "en")
    assert (tour_for("en"), other_tour("en"), tour_for("fr")) == ("en", "zh_CN", "en")
    try:
        install("zh_CN")
        assert other_tour_words("en")[0] == "英文版导览"  # in a Chinese interface, the English tour is named in Chinese
    finally:
        install("en")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_stop_shows_what_its_text_says(qtbot, tour_window, language, tmp_path):
    """The whole walk, both languages (about 3.5 s each in the shared window, the attribution
    stop's integrated gradients included: under the ~30 s that would make it a slow test)."""
    w, panel = tour_window
    start_tour(w, language)
    assert panel.tour.ids() == load_tour("en").ids()
    read: dict[str | None, set[str]] = defaultdict(set)  # view → the measure names its spec's function gave
    for i, stop in enumerate(panel.tour.stops):
        panel.go(i)
        qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)
        check_stop(qtbot, w, panel)
        ctx = Context(w, stop)
        read[None] |= set(model_measures(ctx))
        read[stop.view] |= set(ctx.spec.measures(ctx.view, ctx.ask))
        if stop.id == SCREENSHOT_STOP:
            w.grab().save(str(tmp_path / f"tour_{'en' if language == 'en' else 'zh'}.png"))
    listed = defaultdict(set)
    for name, measure in MEASURES.items():
        listed[measure.view].add(name)
    assert read == listed  # every view's function gives exactly the measures listed for it, over the walk


def test_leaving_the_tour_lays_the_docks_out_as_before(qtbot, window):
    """The tour's panel takes a column on the left; leaving it gives the grid and the docks their
    widths back (the views keep what the tour showed)."""
    frame, topk = window.frames["grid"], window.docks["topkDock"]
    before = (frame.width(), topk.width(), topk.isVisible())
    panel = start_tour(window, "en")
    go(qtbot, panel, "look-ahead-mask")
    qtbot.wait(50)
    assert frame.width() < before[0]  # the tour's column took room from the grid
    panel.leave()
    qtbot.waitUntil(lambda: abs(frame.width() - before[0]) <= 2, timeout=5000)
    assert (abs(topk.width() - before[1]) <= 2, topk.isVisible()) == (True, before[2]) and not panel.isVisible()
