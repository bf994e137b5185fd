"""The compare, scaling and teacher-vs-free views: what they draw equals a computation written
out here, they follow the linked selection, and ``attnviz export`` draws them."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PySide6 import QtWidgets

from attnviz.cli import main
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import AttentionSite
from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.registry import build_view, feed_now, view_spec

from inside_fixtures import bundle

SRC = "我喜欢吃苹果。"
OTHER = "果喜欢吃苹我。"  # SRC with its first and last character swapped
TGT = "I like eating apples."


@pytest.fixture
def loaded(qtbot):
    """``loaded(name, target="")``: the registry's view ``name`` fed from a session on the tiny model."""
    sessions = []

    def make(name: str, target: str = ""):
        session = Session()
        sessions.append(session)
        session.set_bundle(bundle())
        session.set_inputs(SRC, target)
        if session.decoding is not None:
            session.decoding.run()
        spec = view_spec(name)
        view = build_view(spec)
        qtbot.addWidget(view)
        view.resize(1300, 800)
        ok = feed_now(spec, view, session, ViewChoice())
        view.optionsChanged.connect(lambda: feed_now(spec, view, session, ViewChoice()))  # as the window's ViewSet does
        return spec, view, session, ok

    yield make
    for s in sessions:
        s.deleteLater()


def _encode(ids, positional, model=None):
    model = model if model is not None else bundle().model
    with torch.inference_mode():
        return model.encode(torch.tensor([ids]), positional=positional).memory[0].numpy()


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# -- compare ------------------------------------------------------------------------------------
def test_compare_view_shows_the_permutation_without_pe(loaded, qtbot):
    spec, view, session, ok = loaded("compare")
    assert ok and view.other_text() == OTHER
    src = bundle().src_tokenizer
    a, b = src.encode(SRC), src.encode(OTHER)
    perm = [b.index(t) for t in a]
    for positional in (True, False):
        view.set_positional(positional)
        ca, cb = _encode(a, positional), _encode(b, positional)
        np.testing.assert_allclose(view.panels["out_a"].raw_matrix(), ca, atol=1e-5)
        np.testing.assert_allclose(view.panels["out_b"].raw_matrix(), cb, atol=1e-5)
        diff = view.panels["out_diff"].raw_matrix()
        np.testing.assert_allclose(diff, ca - cb[perm], atol=1e-5)
        assert (np.abs(diff).max() < 1e-5) == (not positional)
    assert view.pe_off.isChecked()
    assert "without PE" in view.title.plain_text() and "with PE" in view.title.plain_text()
    # the selected head's attention, as the model records it
    view.apply(ViewChoice(kind="cross", layer=1, head=2, mode="head"))
    assert (view.layer(), view.head()) == (1, 2)
    view.set_positional(True)
    _, trace = bundle().model.run_with_trace(torch.tensor([b]), torch.tensor([[2]]), names=["*self_attn.weights"])
    np.testing.assert_allclose(view.panels["att_b"].raw_matrix(), trace[AttentionSite("encoder", 1).name("weights")][2], atol=1e-5)


def test_compare_view_takes_any_second_sentence(loaded, qtbot):
    _, view, _, _ = loaded("compare")
    view.other_edit.setText("我是学生。")
    view.other_edit.editingFinished.emit()
    assert view.comparison().b.text == "我是学生。"
    assert view.panels["out_b"].raw_matrix().shape[0] == len(bundle().src_tokenizer.encode("我是学生。"))
    view.set_other("")  # back to the default
    assert view.comparison().b.text == OTHER
    view.set_other("   ")
    assert view.has_data()
    requests = []
    view.chose.connect(requests.append)
    view.head_combo.setCurrentIndex(3)
    assert requests[-1] == dict(kind="encoder", layer=0, head=3, mode="head")


# -- scaling -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_scaling_view_recomputed_from_q_and_k(loaded, kind):
    spec, view, session, ok = loaded("scaling")
    assert ok
    view.apply(ViewChoice(kind=kind, layer=1, head=3, mode="head"))
    assert (view.kind(), view.layer(), view.head()) == (kind, 1, 3)
    site = AttentionSite(kind, 1)
    q = session.current.accumulated(site.name("q"))[3].astype(np.float64)
    k = session.current.accumulated(site.name("k"))[3].astype(np.float64)
    scores = q @ k.T
    mask = np.triu(np.full(scores.shape, -np.inf), 1) if kind == "decoder" else 0.0
    scaled, unscaled = _softmax(scores / math.sqrt(q.shape[1]) + mask), _softmax(scores + mask)
    np.testing.assert_allclose(view.heat_scaled.raw_matrix(), scaled, atol=1e-5)
    np.testing.assert_allclose(view.heat_unscaled.raw_matrix(), unscaled, atol=1e-5)
    np.testing.assert_allclose(view.row_max.series("without")[1], unscaled.max(1), atol=1e-5)
    np.testing.assert_allclose(view.row_max.series("÷√d_k")[1], scaled.max(1), atol=1e-5)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.nansum(unscaled * np.log(unscaled), 1)
    np.testing.assert_allclose(view.row_entropy.series("without")[1], ent, atol=1e-5)
    assert "largest weight" in view.title.plain_text() and "nats" in view.title.plain_text()


def test_scaling_view_experiment_panel(loaded):
    _, view, _, _ = loaded("scaling")
    data = view.figure_data()
    dims = data.extras["random_d_k"]
    rng = np.random.default_rng(123)  # the experiment written out, with other random numbers
    for d, var, top in zip(dims, data.extras["random_var_unscaled"], data.extras["random_max_unscaled"]):
        scores = np.einsum("qd,qkd->qk", rng.standard_normal((400, d)), rng.standard_normal((400, 10, d)))
        assert abs(var / scores.var() - 1) < 0.2
        assert abs(top - _softmax(scores).max(1).mean()) < 0.05
    x, top = view.exp_max.series("without")
    np.testing.assert_allclose(top, data.extras["random_max_unscaled"])
    assert top[-1] > 0.9 and top[0] < 0.6
    assert set(data.values) == {"max_weight_scaled", "max_weight_unscaled", "entropy_scaled", "entropy_unscaled"}
    np.testing.assert_array_equal(data.extras["random_d_k"], [4, 8, 16, 32, 64, 128, 256, 512])


# -- teacher vs free -------------------------------------------------------------------------------
def test_teacher_vs_free_view_against_a_full_pass(loaded):
    spec, view, session, ok = loaded("teacher-vs-free", TGT)
    assert ok and view.has_data()
    model, tgt = bundle().model, bundle().tgt_tokenizer
    y = tgt.encode(TGT)
    with torch.inference_mode():
        logits = model(torch.tensor([bundle().src_tokenizer.encode(SRC)]), torch.tensor([[model.config.bos_id, *y]]))[0]
    rows = view.table.cells()
    assert list(rows[1]) == [display_piece(p) for p in tgt.pieces([model.config.bos_id, *y])]
    assert list(rows[2]) == [display_piece(p) for p in tgt.pieces([int(i) for i in logits.argmax(-1)])]
    from attnviz.core.decoding.session import DecodingSession

    greedy = DecodingSession.from_bundle(bundle(), SRC)
    greedy.run()
    assert list(rows[3]) == [display_piece(p) for p in greedy.input_pieces]
    assert list(rows[4]) == [display_piece(p) for p in greedy.output_pieces]
    view.apply(ViewChoice(kind="cross", layer=1, head=2, mode="head"))
    _, trace = model.run_with_trace(torch.tensor([bundle().src_tokenizer.encode(SRC)]), torch.tensor([[model.config.bos_id, *y]]),
                                    names=["*cross_attn.weights"])
    recorded = trace[AttentionSite("cross", 1).name("weights")][2]
    np.testing.assert_allclose(view.heat_teacher.raw_matrix(), recorded, atol=1e-5)
    rows, d = view.attention_rows(), view.result().departure
    assert d is not None  # an untrained model departs
    assert rows["teacher, departure"][0] == rows["free, departure"][0] == d
    np.testing.assert_allclose(rows["teacher, departure"][1], recorded[d], atol=1e-5)
    np.testing.assert_allclose(rows["free, departure"][1], recorded[d], atol=1e-5)  # the same prefix: the same row
    np.testing.assert_allclose(view.rows_plot.series("free, departure")[1], recorded[d], atol=1e-5)
    # through the session's workers, as in the window: a step moves the current position and
    # the pass is not decoded again
    session.analyses.submit("teacher-vs-free", spec.data(session, ViewChoice()), view.set_data)
    assert session.analyses.wait()
    result = view.result()
    session.forced_cursor = 1
    assert session.analyses.submit("teacher-vs-free", spec.data(session, ViewChoice()), view.set_data) is None  # answered at once
    assert view.result() is result and view.heat_teacher.highlight_row() == 1
    assert session.analyses.counts["reused"] == 1


def test_teacher_vs_free_view_without_a_target_says_so(loaded):
    _, view, _, ok = loaded("teacher-vs-free")
    assert not ok and not view.has_data()
    assert "needs a target" in view.title.plain_text()
    assert not view.table.isVisible()


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
    ca, cb = _encode(a, True, saved.model), _encode(b, True, saved.model)
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
