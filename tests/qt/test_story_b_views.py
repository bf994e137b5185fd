"""The story views on screen and in ``attnviz export``: norm-batch, FFN, residual stream, logit lens.
Their numbers are checked against the trace read here, or against code of the core that is not
the view's (teacher-forced metrics), never against the view's own data function."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.cli import main
from attnviz.core.analysis.ffn import ffn_data_for
from attnviz.core.analysis.logit_lens import logit_lens_for
from attnviz.core.analysis.norm_batch import norm_batch_for, training_examples
from attnviz.core.analysis.residual import ResidualFrame, residual_data_for
from attnviz.core.bundle import load_bundle
from attnviz.core.data import corpora as D
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.modules import MaskedBatchNorm
from attnviz.core.training.evaluation import teacher_forced_metrics
from attnviz.paths import models_dir
from attnviz.qt.selection import Selection, ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.ffn import QtFfnView
from attnviz.qt.views.logit_lens import QtLogitLensView
from attnviz.qt.views.norm_batch import QtNormBatchView
from attnviz.qt.views.registry import ViewSet, feed_now, view_spec
from attnviz.qt.views.residual import QtResidualView

from inside_fixtures import bundle, session

SIZE = (1100, 760)
SRC = "我喜欢吃鱼。"


def click(qtbot, view, scene_point: QtCore.QPointF) -> None:
    qtbot.mouseClick(view.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=view.canvas.mapFromScene(scene_point))


def shown(make_view, cls, *data):
    view = make_view(cls, SIZE, *data, shown=True)
    QtWidgets.QApplication.processEvents()
    return view


# -- FFN -------------------------------------------------------------------------------------------------
def test_ffn_view_shows_the_hidden_activations_and_their_sparsity(make_view, qtbot):
    s = session(steps=4)
    view = shown(make_view, QtFfnView, ffn_data_for(s, s.config))
    assert view.objectName() == "ffnView"
    view.select("cross", 1, 2)  # cross-attention's layer: the decoder's FFN
    hidden = s.accumulated("decoder.layers.1.ffn.hidden")
    np.testing.assert_allclose(view.heatmap.matrix(), hidden, atol=1e-6)
    assert view.heatmap.highlight_row() == 2
    assert view.off_share() == pytest.approx(float(np.mean(hidden == 0.0)))
    assert "ReLU sparsity" in view.title.plain_text() and f"{np.mean(hidden == 0.0):.1%}" in view.title.plain_text()
    heights = view.top_bars.opts["height"]
    np.testing.assert_allclose(heights, np.sort(hidden[2])[::-1][: len(heights)], atol=1e-6)
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heatmap.cell_center_in_scene(1, 5))
    assert sig.args == [{"query": 1}] and view.query() == 1
    data = view.figure_data()
    assert data.dims == ("token", "unit") and data.coords["token"] == s.input_pieces
    view.grab().save("/tmp/story_b_ffn.png")


def test_ffn_view_of_a_gelu_model_says_what_it_counts(make_view):
    from attnviz.core.bundle import Bundle
    from attnviz.core.decoding.session import DecodingSession

    from tiny_models import random_model, tokenizers

    src, tgt = tokenizers()
    b = Bundle(random_model(activation="gelu"), src, tgt, {})
    s = DecodingSession.from_bundle(b, "我是学生。", max_len=8)
    s.step()
    view = shown(make_view, QtFfnView, ffn_data_for(s, b.config))
    text = view.title.plain_text()
    assert "≤ 0 after GELU" in text and "exact zeros in" not in text
    assert view.off_share() == pytest.approx(float(np.mean(s.accumulated("encoder.layers.0.ffn.hidden") <= 0)))


# -- residual stream -------------------------------------------------------------------------------------
def test_residual_view_draws_the_norms_and_a_click_asks_for_the_sublayer(make_view, qtbot):
    s = session(steps=4, placement="pre")
    view = shown(make_view, QtResidualView, ResidualFrame(residual_data_for(s, s.config)))
    assert view.objectName() == "residualView"
    enc = view.plots["encoder"]
    x, y = enc.stream.getData()
    expected = [np.linalg.norm(s.accumulated("encoder.embed.sum"), axis=-1).mean()]
    for i in range(2):
        for j in (1, 2):
            expected.append(np.linalg.norm(s.accumulated(f"encoder.layers.{i}.residual{j}"), axis=-1).mean())
    np.testing.assert_allclose(y, expected, rtol=1e-5)
    dec_x, dec_y = view.plots["decoder"].stream.getData()
    assert len(dec_x) == 1 + 2 * 3
    # click the decoder's point after layer 2's cross-attention (point 5)
    point = view.plots["decoder"].plot.getViewBox().mapViewToScene(QtCore.QPointF(dec_x[5], dec_y[5]))
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, point)
    assert sig.args == [{"kind": "cross", "layer": 1}]
    assert view.selected_point() == ("decoder", 5)
    data = view.figure_data()
    assert data.values["mean_stream_norm"][0] == pytest.approx(expected[0], rel=1e-5)


def test_a_residual_click_moves_the_linked_views(qtbot):
    s = Session()
    s.bundle = bundle()
    s.decoding = session(steps=4)
    views = ViewSet(s)
    names = ("residual", "ffn", "norm-batch")
    for name in names:
        qtbot.addWidget(views.frames[name])  # a view is shown in its frame, as in the window
        views.frames[name].resize(*SIZE)
        views.frames[name].show()
        qtbot.waitExposed(views.frames[name])
        views.refresh(views[name])
    assert s.analyses.wait()
    views["residual"].request_point("decoder", 6)  # decoder layer 2's FFN
    assert views.selection.value() == Selection("decoder", 1, 0, "head", None)
    assert (views["ffn"].current().stack, views["ffn"].current().layer) == ("decoder", 1)
    assert views["norm-batch"].site().site.startswith("decoder.layers.1.")
    for name in names:
        views[name].close()


def test_the_selectors_take_cross_as_the_decoder_and_leave_the_lens_on_an_encoder_row(make_view):
    """What the registry hands each view: a cross-attention choice shows the decoder's FFN and
    norms (the decoder holds the cross sublayer); an encoder row is no position of the lens."""
    s, b = session(steps=4), bundle()
    ffn = make_view(QtFfnView, SIZE, ffn_data_for(s, b.config))
    ffn.apply(ViewChoice(kind="cross", layer=1, query=2))
    assert (ffn.current().stack, ffn.current().layer, ffn.query()) == ("decoder", 1, 2)
    norm = make_view(QtNormBatchView, SIZE)
    feed_now(view_spec("norm-batch"), norm, _session_for(b, s), ViewChoice())
    norm.apply(ViewChoice(kind="cross", layer=1))
    assert norm.site().site.startswith("decoder.layers.1.")
    lens = make_view(QtLogitLensView, SIZE, logit_lens_for(s, b.model, b.tgt_tokenizer))
    lens.apply(ViewChoice(kind="cross", query=1))
    lens.apply(ViewChoice(kind="encoder", query=3))
    assert lens.query() == 1
    lens.apply(ViewChoice(query=2))
    assert lens.query() == 2


# -- logit lens -------------------------------------------------------------------------------------------
def test_logit_lens_view_labels_each_cell_with_its_top_piece(make_view, qtbot):
    s = session(steps=5)
    b = bundle()
    lens = logit_lens_for(s, b.model, b.tgt_tokenizer)
    view = shown(make_view, QtLogitLensView, lens)
    assert view.objectName() == "logitLensView"
    with torch.no_grad():
        probs = torch.softmax(b.model(torch.tensor([s.src_ids]), torch.tensor([s.input_ids]))[0].double(), -1).numpy()
    np.testing.assert_allclose(view.heatmap.matrix()[-1], probs.max(-1), atol=1e-5)  # the last layer is the model
    top = [display_piece(b.tgt_tokenizer.piece(int(i))) for i in probs.argmax(-1)]
    assert view.labels.texts()[-len(top):] == top
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heatmap.cell_center_in_scene(0, 1))
    assert sig.args == [{"query": 1}] and f"position 2 (“{display_piece(s.input_pieces[1])}”)" in view.title.plain_text()
    qtbot.mouseMove(view.canvas.viewport(), view.canvas.mapFromScene(view.heatmap.cell_center_in_scene(1, 2)))
    qtbot.wait_until(lambda: "layer 2" in view.readout.text())


# -- LN vs BN on a batch ------------------------------------------------------------------------------------
def test_norm_batch_view_on_a_layer_norm_model_says_batch_norm_needs_the_bundle(make_view):
    s = session(steps=3)
    view = make_view(QtNormBatchView, SIZE, shown=True)
    feed_now(view_spec("norm-batch"), view, _session_for(bundle(), s), ViewChoice())
    view.select("encoder", 1)
    assert view.site().site == "encoder.layers.1.norm1"
    assert "BatchNorm needs the BatchNorm bundle" in view.title.plain_text()
    assert not view.measure_button.isEnabled()
    # the LN side: sentence 1's per-token std before LN, read off the trace here
    x = s.accumulated("encoder.layers.1.norm1.input")
    _, std = view.spread_lines[0].getData()
    np.testing.assert_allclose(std, x.std(-1), atol=1e-5)
    _, normalized = view.spread_lines[1].getData()
    np.testing.assert_allclose(normalized, 1.0, atol=1e-3)


def _session_for(b, decoding) -> Session:
    s = Session()
    s.bundle = b
    s.decoding = decoding
    return s


def test_a_new_step_of_the_same_source_runs_only_the_decoder_on_the_session_sentence(make_view):
    """The batch's other sentences and the source do not change with the step: the loader keeps
    them, and a step costs one decoder pass of batch size 1 (the batch still equals a fresh one)."""
    b, dec = bundle(), session(steps=2)
    s, spec, calls = _session_for(b, dec), view_spec("norm-batch"), []
    view = make_view(QtNormBatchView, SIZE)
    hooks = [b.model.encoder.register_forward_hook(lambda m, args, out: calls.append(("encoder", args[0].shape[0]))),
             b.model.decoder.register_forward_hook(lambda m, args, out: calls.append(("decoder", args[0].shape[0])))]
    try:
        assert feed_now(spec, view, s, ViewChoice())
        first, calls[:] = list(calls), []
        dec.step()
        assert feed_now(spec, view, s, ViewChoice())
    finally:
        for h in hooks:
            h.remove()
    assert ("encoder", 4) in first and calls == [("decoder", 1)]
    fresh = norm_batch_for(b, dec.src_ids, dec.input_ids).get("decoder.layers.0.norm1")
    view.set_site(fresh.site)
    np.testing.assert_allclose(view.site().x, fresh.x, atol=1e-6)


def test_norm_batch_view_measures_the_accuracy_gap_of_the_batch_norm_bundle(make_view, qtbot):
    b = load_bundle(models_dir() / "hsk-zh-en-batchnorm")
    s = Session()
    s.set_bundle(b)
    s.set_inputs(SRC, "")
    s.decoding.run()
    view = make_view(QtNormBatchView, SIZE, shown=True)
    assert feed_now(view_spec("norm-batch"), view, s, ViewChoice())
    view.select("encoder", 0)
    site = view.site()
    assert "PAD" in view.labels.texts() and site.running is not None
    # BN statistics with PAD left out, from the trace of the first sentence and the heatmap's numbers
    n_pad = int((~site.valid).sum())
    assert n_pad > 0 and f"+ {n_pad} PAD" in view.title.plain_text()
    with torch.no_grad():
        before = b.model(torch.tensor([s.current.src_ids]), torch.tensor([s.current.input_ids]))
    view.pairs_spin.setValue(12)
    with qtbot.waitSignal(view.measured, timeout=240_000) as sig:
        qtbot.mouseClick(view.measure_button, QtCore.Qt.MouseButton.LeftButton)
        assert not view.measure_button.isEnabled() and view.progress.isVisible()
    gap = sig.args[0]
    examples = training_examples(b, 12)
    assert gap.pairs == len(examples) == 12
    assert gap.running == pytest.approx(teacher_forced_metrics(b.model, examples)["token_accuracy"])
    assert gap.batch == pytest.approx(_train_mode_accuracy(b.model, examples))
    assert gap.single < min(gap.batch, gap.running)  # one sentence's own statistics: the worst
    assert f"batch statistics {gap.batch:.1%} · running {gap.running:.1%}" in view.result_label.full_text()
    assert f"{gap.running:.1%} with running ones" in view.title.plain_text()
    with torch.no_grad():  # measuring left the session's model alone
        torch.testing.assert_close(b.model(torch.tensor([s.current.src_ids]), torch.tensor([s.current.input_ids])), before)
    qtbot.wait_until(lambda: view.measure_button.isEnabled())
    view.grab().save("/tmp/story_b_norm_batch.png")


def _train_mode_accuracy(model, examples) -> float:
    """Teacher-forced token accuracy with the BatchNorms in training mode (momentum 0), dropout off."""
    m = copy.deepcopy(model)
    for mod in m.modules():
        if isinstance(mod, MaskedBatchNorm):
            mod.train()
            mod.momentum = 0.0
    cfg = m.config
    correct = tokens = 0
    with torch.no_grad():
        for idx in D.make_batches(examples, 500, shuffle=False):
            batch = D.collate([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
            mask = batch.labels != cfg.pad_id
            correct += int(((m(batch.src, batch.tgt_in).argmax(-1) == batch.labels) & mask).sum())
            tokens += int(mask.sum())
    return correct / tokens


# -- attnviz export --view NAME ------------------------------------------------------------------------------
@pytest.mark.parametrize("name,stem", [("norm-batch", "norm-batch_encoder_layer1"), ("ffn", "ffn_encoder_layer1"),
                                       ("residual", "residual_encoder_layer1"), ("logit-lens", "logit-lens")])
def test_export_draws_each_story_view(qapp, tmp_path, name, stem):
    kind = ["--kind", "encoder"] if name != "logit-lens" else []
    for fmt in ("png", "csv"):
        assert main(["export", "--src", SRC, "--view", name, *kind, "--format", fmt, "--out", str(tmp_path)]) == 0
    img = QtGui.QImage(str(tmp_path / f"{stem}.png"))
    assert not img.isNull() and img.width() > 300
    colors = {img.pixel(x, y) for x in range(0, img.width(), 13) for y in range(0, img.height(), 13)}
    assert len(colors) > 10
    text = (tmp_path / f"{stem}.csv").read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if not line.startswith("#"))
    expected = {"norm-batch": "mean_before", "ffn": "hidden", "residual": "mean_stream_norm", "logit-lens": "top1_prob"}[name]
    assert expected in header, header


# -- in the window: docked, fed on every step, following the selection ------------------------------------
DOCKS = {"norm-batch": "normBatchDock", "ffn": "ffnDock", "residual": "residualDock", "logit-lens": "logitLensDock"}


def _raise(window, name):
    dock = window.findChild(QtWidgets.QDockWidget, DOCKS[name])
    dock.show()
    dock.raise_()
    QtWidgets.QApplication.processEvents()
    return window.views[name]


@pytest.mark.slow
def test_the_story_views_live_in_the_window_and_follow_each_step(qtbot, tmp_path):
    from attnviz.qt.main_window import MainWindow

    w = MainWindow(src=SRC, settings=QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    qtbot.waitUntil(lambda: w.session.decoding is not None and w.session.decoding.finished, timeout=30000)
    try:
        rows = len(w.session.current.input_pieces)
        for name in DOCKS:
            view = _raise(w, name)
            qtbot.waitUntil(view.has_data, timeout=10000)
        w.session.back()  # one step back: every story view follows when shown
        QtWidgets.QApplication.processEvents()
        lens = _raise(w, "logit-lens")
        qtbot.waitUntil(lambda: len(lens.lens().pieces) == rows - 1, timeout=5000)
        ffn = _raise(w, "ffn")
        qtbot.waitUntil(lambda: ffn.current() is not None and len(ffn.current().pieces) in (rows - 1, len(w.session.current.src_pieces)), timeout=5000)
        residual = _raise(w, "residual")
        qtbot.waitUntil(lambda: residual.stack("decoder") is not None and len(residual.stack("decoder").pieces) == rows - 1, timeout=5000)
        residual.request_point("encoder", 3)  # encoder layer 2's self-attention: the linked selection follows
        sel = w.views.selection.value()
        assert (sel.kind, sel.layer) == ("encoder", 1)
        ffn = _raise(w, "ffn")
        qtbot.waitUntil(lambda: (ffn.current().stack, ffn.current().layer) == ("encoder", 1), timeout=5000)
        norm_batch = _raise(w, "norm-batch")
        qtbot.waitUntil(lambda: norm_batch.site() is not None and norm_batch.site().site.startswith("encoder.layers.1."), timeout=5000)
        w.grab().save("/tmp/story_b_window.png")
    finally:
        w.session.stop_run()
        w.session.wait_for_workers(5000)


def test_a_cross_selection_moves_the_stack_views_to_the_decoder_and_an_encoder_row_leaves_the_lens(qtbot):
    """Through the linked selection: FFN and norm-batch show stacks, and the cross-attention
    sublayer sits in the decoder's; the logit lens' positions are decoder rows, so a query row of
    the encoder (a source piece) does not move it."""
    s = Session()
    s.bundle = bundle()
    s.decoding = session(steps=4)
    views = ViewSet(s)
    names = ("ffn", "norm-batch", "logit-lens")
    for name in names:
        qtbot.addWidget(views.frames[name])  # a view is shown in its frame, as in the window
        views.frames[name].resize(*SIZE)
        views.frames[name].show()
        qtbot.waitExposed(views.frames[name])
        views.refresh(views[name])
    assert s.analyses.wait()
    views.selection.update(kind="encoder", layer=0)
    assert views["ffn"].current().stack == "encoder" and views["norm-batch"].site().site.startswith("encoder.layers.0.")
    views.selection.update(kind="cross", layer=1, query=2)
    assert (views["ffn"].current().stack, views["ffn"].current().layer) == ("decoder", 1)
    assert views["norm-batch"].site().site.startswith("decoder.layers.1.")
    assert views["logit-lens"].query() == 2
    views.selection.update(kind="encoder", query=0)  # a source row: not a position of the lens
    assert views["logit-lens"].query() == 2 and views["ffn"].query() == 0
    for name in names:
        views[name].close()


