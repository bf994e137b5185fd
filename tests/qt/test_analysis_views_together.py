"""The seven story views together (compare, scaling, teacher vs free; norm-batch, FFN, residual,
logit lens): ``attnviz export`` draws them, they live in the window's docks and follow its
selection, a small dock scrolls, a model without layers of a kind."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.cli import main
from attnviz.core.analysis.ffn import ffn_data_for
from attnviz.core.analysis.logit_lens import logit_lens_for
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.ffn import QtFfnView
from attnviz.qt.views.logit_lens import QtLogitLensView
from attnviz.qt.views.norm_batch import QtNormBatchView
from attnviz.qt.views.registry import build_view, feed_now, view_spec

from inside_fixtures import bundle, session
from story_helpers import APPLES, FISH, OTHER, SIZE, TGT, encode, session_for, shown_view_set

SRC = APPLES


# -- export ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    b = bundle()
    return save_bundle(tmp_path_factory.mktemp("tiny") / "m", b.model, b.src_tokenizer, b.tgt_tokenizer, {"name": "tiny"})


@pytest.mark.parametrize("name,extra,stem", [
    ("compare", ["--other", OTHER], "compare_layer1_head1"),
    ("scaling", ["--kind", "encoder"], "scaling_encoder_layer1_head1"),
    ("teacher-vs-free", ["--tgt", TGT], "teacher-vs-free_layer1_head1"),
])
def test_export_draws_the_story_views(qapp, tmp_path, model_dir, name, extra, stem):
    for fmt in ("png", "csv"):
        assert main(["export", "--model", str(model_dir), "--src", SRC, "--view", name, *extra, "--format", fmt,
                     "--out", str(tmp_path)]) == 0
    assert (tmp_path / f"{stem}.png").stat().st_size > 5000
    lines = [ln for ln in (tmp_path / f"{stem}.csv").read_text().splitlines() if not ln.startswith("#")]
    assert len(lines) > 2


def test_export_compare_numbers_and_refusals(qapp, tmp_path, capsys, model_dir):
    assert main(["export", "--model", str(model_dir), "--src", SRC, "--view", "compare", "--format", "csv", "--out", str(tmp_path)]) == 0
    import csv

    rows = list(csv.DictReader(ln for ln in (tmp_path / "compare_layer1_head1.csv").open() if not ln.startswith("#")))
    saved = load_bundle(model_dir)  # the weights as the bundle stores them (float16, read back as float32)
    src = saved.src_tokenizer
    a, b = src.encode(SRC), src.encode(OTHER)
    ca, cb = encode(a, True, saved.model), encode(b, True, saved.model)
    got = np.array([float(r["difference"]) for r in rows]).reshape(ca.shape)
    np.testing.assert_allclose(got, ca - cb[[b.index(t) for t in a]], atol=1e-4)
    for args, word in ((["--view", "teacher-vs-free"], "--tgt"), (["--view", "scaling", "--other", "x"], "--other")):
        rc = main(["export", "--model", str(model_dir), "--src", SRC, *args, "--out", str(tmp_path / "no")])
        err = capsys.readouterr().err
        assert rc != 0 and err.startswith("attnviz: error: ") and err.count("\n") == 1 and word in err, err


# -- in the window ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_story_views_live_in_the_window(qtbot, tmp_path):
    from window_helpers import close_window, open_window, wait_idle

    w = open_window(qtbot, tmp_path)
    try:
        for dock_name, view_name in (("compareDock", "compare"), ("scalingDock", "scaling"), ("teacherVsFreeDock", "teacher-vs-free")):
            dock = w.findChild(QtWidgets.QDockWidget, dock_name)
            assert dock is w.docks[dock_name]
            dock.raise_()  # a raised tab catches up (it was not drawn while in the background)
            qtbot.waitUntil(lambda n=view_name: n not in w.views.stale, timeout=10000)
            assert w.session.analyses.wait()  # its data is computed in a worker
            view = w.views[view_name]
            assert view.has_data() == (view_name != "teacher-vs-free"), view_name
        assert w.views["compare"].comparison().a.text == w.session.source.strip()
        w.session.set_inputs("我喜欢吃苹果。", "I like eating apples.")  # teacher-forced mode: the third view fills
        wait_idle(qtbot, w)
        assert w.session.analyses.wait()
        tvf = w.views["teacher-vs-free"]
        assert tvf.has_data() and tvf.result().reference_pieces[-1] == "EOS"
        w.session.back()
        QtWidgets.QApplication.processEvents()
        assert w.session.analyses.wait()
        assert tvf.heat_teacher.highlight_row() == w.session.forced_cursor
    finally:
        close_window(w)


@pytest.mark.parametrize("layers", [(0, 2), (2, 0)], ids=lambda v: f"enc{v[0]}-dec{v[1]}")
def test_a_model_without_layers_of_a_kind(qtbot, layers):
    """The views draw what such a model has and leave out the attention it does not."""
    import dataclasses

    from attnviz.core import Transformer
    from attnviz.core.bundle import Bundle

    from tiny_models import random_model, tokenizers

    src, tgt = tokenizers()
    model = Transformer(dataclasses.replace(random_model().config, n_encoder_layers=layers[0], n_decoder_layers=layers[1])).eval()
    session = Session()
    session.set_bundle(Bundle(model, src, tgt, {"name": "layerless"}))
    session.set_inputs(SRC, TGT)
    session.finish_runs()
    for name in ("compare", "scaling", "teacher-vs-free"):
        spec = view_spec(name)
        view = build_view(spec)
        qtbot.addWidget(view)
        feed_now(spec, view, session, ViewChoice())
        assert view.has_data(), name
        view.figure_data()
    session.deleteLater()


@pytest.mark.parametrize("name", ["compare", "scaling", "teacher-vs-free"])
def test_theme_colormap_and_vector_export(loaded, tmp_path, name):
    from attnviz.qt.export.files import render_view_to_file

    _, view, _, ok = loaded(name, TGT if name == "teacher-vs-free" else "")
    assert ok
    view.set_theme("dark")
    view.set_colormap("magma")
    for fmt in ("svg", "pdf"):
        path = render_view_to_file(view, tmp_path / f"{name}.{fmt}", fmt)
        assert path.stat().st_size > 2000
    assert view.figure_title().split()[0] in (tmp_path / f"{name}.svg").read_text()  # the title is text


@pytest.mark.parametrize("name", ["compare", "scaling", "teacher-vs-free"])
@pytest.mark.parametrize("size", [(500, 420), (1214, 406)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_small_dock_scrolls_and_every_text_reads(loaded, qtbot, name, size):
    """Shown in a dock smaller than the figure (1024×700's bottom dock, 1920×1080's short one),
    the figure keeps a readable size and scrolls below the view's controls: no text is cut off or
    overlaps another."""
    from window_helpers import layout_problems

    from attnviz.qt.view_frame import ViewFrame

    spec, view, session, ok = loaded(name, TGT)
    assert ok
    window = QtWidgets.QWidget()
    qtbot.addWidget(window)
    layout = QtWidgets.QVBoxLayout(window)
    layout.setContentsMargins(0, 0, 0, 0)
    frame = ViewFrame(view)
    layout.addWidget(frame)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    inner = view.scroll  # the figure scrolls inside the view; its controls stay in view
    assert view.canvas.width() > inner.viewport().width() or view.canvas.height() > inner.viewport().height()
    outer = frame.content
    assert view.width() <= outer.viewport().width() and view.height() <= outer.viewport().height()
    assert layout_problems(window).get(view.objectName(), []) == []


def test_the_selectors_take_cross_as_the_decoder_and_leave_the_lens_on_an_encoder_row(make_view):
    """What the registry hands each view: a cross-attention choice shows the decoder's FFN and
    norms (the decoder holds the cross sublayer); an encoder row is no position of the lens."""
    s, b = session(steps=4), bundle()
    ffn = make_view(QtFfnView, SIZE, ffn_data_for(s, b.config))
    ffn.apply(ViewChoice(kind="cross", layer=1, query=2))
    assert (ffn.current().stack, ffn.current().layer, ffn.query()) == ("decoder", 1, 2)
    norm = make_view(QtNormBatchView, SIZE)
    feed_now(view_spec("norm-batch"), norm, session_for(b, s), ViewChoice())
    norm.apply(ViewChoice(kind="cross", layer=1))
    assert norm.site().site.startswith("decoder.layers.1.")
    lens = make_view(QtLogitLensView, SIZE, logit_lens_for(s, b.model, b.tgt_tokenizer))
    lens.apply(ViewChoice(kind="cross", query=1))
    lens.apply(ViewChoice(kind="encoder", query=3))
    assert lens.query() == 1
    lens.apply(ViewChoice(query=2))
    assert lens.query() == 2


# -- attnviz export --view NAME ------------------------------------------------------------------------------
@pytest.mark.parametrize("name,stem", [("norm-batch", "norm-batch_encoder_layer1"), ("ffn", "ffn_encoder_layer1"),
                                       ("residual", "residual_encoder_layer1"), ("logit-lens", "logit-lens")])
def test_export_draws_each_story_view(qapp, tmp_path, name, stem):
    kind = ["--kind", "encoder"] if name != "logit-lens" else []
    for fmt in ("png", "csv"):
        assert main(["export", "--src", FISH, "--view", name, *kind, "--format", fmt, "--out", str(tmp_path)]) == 0
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

    w = MainWindow(src=FISH, settings=QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat))
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
        w.grab().save(str(tmp_path / "story_b_window.png"))
    finally:
        w.session.stop_run()
        w.session.wait_for_workers(5000)


def test_a_cross_selection_moves_the_stack_views_to_the_decoder_and_an_encoder_row_leaves_the_lens(qtbot):
    """Through the linked selection: FFN and norm-batch show stacks, and the cross-attention
    sublayer sits in the decoder's; the logit lens' positions are decoder rows, so a query row of
    the encoder (a source piece) does not move it."""
    names = ("ffn", "norm-batch", "logit-lens")
    s, views = shown_view_set(qtbot, names)
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
