"""The compare-checkpoints view: its heatmaps against the core's numbers, a click selects a head,
``apply`` switches ΔA to a head, the other folder is an option (typed or chosen), a folder that
cannot be compared is one plain line, and the data function runs the core's comparison in a worker;
models of other vocabularies are drawn side by side, each on its own tokens, with no ΔA."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.checkpoints import NO_DELTA, CheckpointComparison, compare_checkpoints, compare_with_folder
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.core.data.pieces import display_pieces
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.model.sites import KINDS
from attnviz.paths import default_model, models_dir
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.checkpoints import NO_DELTA_TEXT, SPEC, ComparisonProblem, QtCheckpointsView, checkpoints_data

from story_helpers import click, session_for

SOURCE = "我明天去北京看朋友。"
SIZE = (1100, 600)
PATH = "checkpointPathEdit"
PLAIN = QtCore.Qt.TextFormat.PlainText  # model output and messages are never rich text


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(default_model())


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    """The default bundle with the queries of its second cross-attention layer shaken, saved anew."""
    b = load_bundle(default_model())
    w = b.model.decoder.layers[1].cross_attn.w_q.weight
    with torch.no_grad():
        w.add_(0.5 * torch.randn(w.shape, generator=torch.Generator().manual_seed(0)))
    return save_bundle(tmp_path_factory.mktemp("checkpoints") / "shaken", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)


@pytest.fixture(scope="module")
def result(bundle, other):
    return compare_with_folder(bundle, other, SOURCE)


@pytest.fixture
def view(make_view, qtbot, result):
    v = make_view(QtCheckpointsView, SIZE, result, shown=True)
    v.apply(ViewChoice(kind="cross", layer=1, head=2, mode="head"))
    QtWidgets.QApplication.processEvents()
    return v


def summary_row(result, kind, layer):
    return result.rows().index((kind, layer))


def test_the_view_shows_the_core_s_numbers(view, result, tmp_path):
    assert view.objectName() == "checkpointsView"
    np.testing.assert_allclose(view.summary_map.matrix(), np.concatenate([result.moved[k] for k in KINDS]), atol=1e-6)
    assert view.summary_map.row_labels()[0] == "encoder 1" and view.summary_map.col_labels() == ("1", "2", "3", "4")
    np.testing.assert_allclose(view.delta_map.matrix(), result.delta["cross"][1, 2], atol=1e-6)
    assert view.delta_map.col_labels() == result.attention_a.source_pieces
    a = view.findChild(QtWidgets.QLabel, "checkpointTranslationA")
    b = view.findChild(QtWidgets.QLabel, "checkpointTranslationB")
    assert a.text().startswith(f"A · {result.name_a}: {result.translation_a}")
    assert a.text().endswith(result.translation_a) != result.same_translation  # a note follows a translation B shares
    assert b.text().endswith(result.translation_b) and a.textFormat() == b.textFormat() == PLAIN
    assert view.figure_data().values["total_variation"].shape == view.summary_map.matrix().shape
    view.grab().save(str(tmp_path / "checkpoints.png"))


def test_a_click_on_a_head_selects_it_and_shows_its_change(view, qtbot, result):
    row = summary_row(result, "decoder", 2)
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.summary_map.cell_center_in_scene(row, 3))
    assert sig.args == [{"kind": "decoder", "layer": 2, "head": 3, "mode": "head"}]
    assert view.shown_head() == ("decoder", 2, 3)
    np.testing.assert_allclose(view.delta_map.matrix(), result.delta["decoder"][2, 3], atol=1e-6)


def test_apply_switches_the_change_to_the_chosen_head(view, result):
    view.apply(ViewChoice(kind="encoder", layer=2, head=0, mode="head"))
    assert view.shown_head() == ("encoder", 2, 0)
    np.testing.assert_allclose(view.delta_map.matrix(), result.delta["encoder"][2, 0], atol=1e-6)
    assert view.delta_map.row_labels() == view.delta_map.col_labels() == result.attention_a.source_pieces
    view.apply(ViewChoice(layer=1))  # the kind and head it shows are kept
    np.testing.assert_allclose(view.delta_map.matrix(), result.delta["encoder"][1, 0], atol=1e-6)
    rect = view.selected_marker.rect()
    assert (rect.center().x(), rect.center().y()) == (0, summary_row(result, "encoder", 1))


def test_the_folder_is_an_option_typed_or_chosen(view, qtbot, other, monkeypatch):
    edit = view.findChild(QtWidgets.QLineEdit, PATH)
    with qtbot.waitSignal(view.optionsChanged, timeout=3000):
        edit.setText(str(other))
        edit.editingFinished.emit()
    assert view.options()[PATH] == str(other)
    monkeypatch.setattr(QtWidgets.QFileDialog, "getExistingDirectory", lambda *args, **kw: str(other.parent))
    with qtbot.waitSignal(view.optionsChanged, timeout=3000):
        view.findChild(QtWidgets.QToolButton, "checkpointChooseButton").click()
    assert view.options()[PATH] == str(other.parent)
    with qtbot.waitSignal(view.optionsChanged, timeout=3000):
        edit.setText("")
        edit.editingFinished.emit()
    assert not view.has_data() and not view.summary_map.isVisible()  # nothing to compare with


def test_the_data_function_runs_the_core_comparison_in_a_worker(qtbot, bundle, other, result, tmp_path):
    decoding = DecodingSession.from_bundle(bundle, SOURCE)
    decoding.run()
    s = session_for(bundle, decoding)
    assert checkpoints_data(s, ViewChoice(), {}) is None and checkpoints_data(s, ViewChoice(), {PATH: "  "}) is None
    analysis = checkpoints_data(s, ViewChoice(), {PATH: str(other)})
    got = []
    s.analyses.submit(SPEC.name, analysis, got.append)  # as the window runs it: in a worker, in inference mode
    qtbot.waitUntil(lambda: bool(got), timeout=20000)
    data = got[0]
    assert isinstance(data, CheckpointComparison)
    assert (data.translation_a, data.translation_b) == (result.translation_a, result.translation_b)
    assert data.attention_a.output_ids == result.attention_a.output_ids
    for kind in KINDS:
        np.testing.assert_allclose(data.delta[kind], result.delta[kind], atol=1e-6)
    assert SPEC.reads_options and SPEC.selectors == ("kind", "layer", "head")
    assert analysis.same_work(checkpoints_data(s, ViewChoice(), {PATH: f" {other} "}))  # asked again: the kept result
    meta = other / "meta.json"
    os.utime(meta, ns=(meta.stat().st_atime_ns, meta.stat().st_mtime_ns + 10**9))  # as a training run's next save
    assert not analysis.same_work(checkpoints_data(s, ViewChoice(), {PATH: str(other)}))
    nul = checkpoints_data(s, ViewChoice(), {PATH: str(tmp_path) + "/a\x00b"})  # a NUL in the path: never a folder
    assert isinstance(nul, ComparisonProblem) and "\n" not in nul.message


def test_a_folder_that_cannot_be_compared_is_one_plain_line(make_view, qtbot, bundle, tmp_path):
    decoding = DecodingSession.from_bundle(bundle, SOURCE)
    decoding.run()
    (tmp_path / "notes").mkdir()
    problem = checkpoints_data(session_for(bundle, decoding), ViewChoice(), {PATH: str(tmp_path / "notes")}).run()
    assert isinstance(problem, ComparisonProblem) and "\n" not in problem.message and "not an attnviz model bundle" in problem.message  # data, not UI text
    view = make_view(QtCheckpointsView, SIZE, problem, shown=True)
    label = view.findChild(QtWidgets.QLabel, "checkpointProblem")
    assert label.isVisible() and label.text() == problem.message and label.textFormat() == PLAIN
    assert not view.has_data() and not view.delta_map.isVisible()


def test_a_view_set_computes_it_from_the_folder_option_and_follows_the_selection(qtbot, monkeypatch, bundle, other, result):
    from attnviz.qt.views import registry

    monkeypatch.setattr(registry, "VIEWS", (*(v for v in registry.VIEWS if v.name != SPEC.name), SPEC))  # as once registered
    decoding = DecodingSession.from_bundle(bundle, SOURCE)
    decoding.run()
    s = session_for(bundle, decoding)
    views = registry.ViewSet(s, only=(SPEC.name,))
    frame, view = views.frames[SPEC.name], views[SPEC.name]
    qtbot.addWidget(frame)
    frame.resize(*SIZE)
    frame.show()
    qtbot.waitExposed(frame)
    views.refresh(view)
    assert s.analyses.wait() and not view.has_data()  # no folder chosen yet
    view.set_options({PATH: str(other)})
    assert s.analyses.wait(60)
    qtbot.waitUntil(view.has_data, timeout=10000)
    np.testing.assert_allclose(view.summary_map.matrix(), result.summary(), atol=1e-6)
    views.selection.update(kind="decoder", layer=1, head=1, mode="head")
    qtbot.waitUntil(lambda: view.shown_head() == ("decoder", 1, 1), timeout=3000)
    np.testing.assert_allclose(view.delta_map.matrix(), result.delta["decoder"][1, 1], atol=1e-6)
    click(qtbot, view, view.summary_map.cell_center_in_scene(summary_row(result, "cross", 2), 0))
    sel = views.selection.value()
    assert (sel.kind, sel.layer, sel.head, sel.mode) == ("cross", 2, 0, "head")  # every linked view follows the head picked here


@pytest.fixture(scope="module")
def across(bundle):
    """The default model against the HSK-only one (other vocabularies, the same layers and heads) on a sentence they split otherwise."""
    return compare_checkpoints(bundle, load_bundle(models_dir() / "hsk-only-zh-en"), "我爱你。")


def test_other_vocabularies_are_drawn_side_by_side_each_on_its_own_tokens(make_view, qtbot, across, result, tmp_path):
    assert not across.delta_available and set(NO_DELTA_TEXT) == set(NO_DELTA)
    view = make_view(QtCheckpointsView, SIZE, across, shown=True)
    view.apply(ViewChoice(kind="cross", layer=2, head=1, mode="head"))
    QtWidgets.QApplication.processEvents()
    assert view.sides_shown() and view.attention_a_map.isVisible() and view.attention_b_map.isVisible()
    assert not view.summary_map.isVisible() and not view.delta_map.isVisible() and view.summary_map.scene() is None
    for plot, side in ((view.attention_a_map, across.attention_a), (view.attention_b_map, across.attention_b)):
        np.testing.assert_allclose(plot.matrix(), side.weights["cross"][2, 1], atol=1e-6)
        rows, cols = side.labels("cross")
        assert (plot.row_labels(), plot.col_labels()) == (display_pieces(rows), display_pieces(cols))
    assert view.attention_a_map.col_labels() != view.attention_b_map.col_labels()  # each its own source pieces
    assert view.shown_heads() == (("cross", 2, 1), ("cross", 2, 1))
    notice = view.findChild(QtWidgets.QLabel, "checkpointNotice")
    assert notice.isVisible() and notice.textFormat() == PLAIN and "\n" not in notice.text() and across.difference in notice.toolTip()
    a, b = (view.findChild(QtWidgets.QLabel, f"checkpointTranslation{tag}") for tag in "AB")
    assert a.text().endswith(across.translation_a) and b.text().endswith(across.translation_b)
    data = view.figure_data()
    assert data.dims == ("model",) and not any(k.startswith("delta_") for k in data.extras)
    np.testing.assert_array_equal(data.extras["attention_b_cross"], across.attention_b.weights["cross"])
    view.apply(ViewChoice(kind="encoder", layer=9, head=9, mode="head"))  # past the last: each model's last
    np.testing.assert_allclose(view.attention_b_map.matrix(), across.attention_b.weights["encoder"][-1, -1], atol=1e-6)
    view.grab().save(str(tmp_path / "ckpt.png"))
    view.set_data(result)  # a comparable pair again: the summary and ΔA come back in their place
    QtWidgets.QApplication.processEvents()
    assert not view.sides_shown() and view.summary_map.isVisible() and view.delta_map.isVisible()
    assert not view.attention_a_map.isVisible() and view.attention_a_map.scene() is None and not notice.isVisible()
    np.testing.assert_allclose(view.summary_map.matrix(), result.summary(), atol=1e-6)


def test_a_head_only_one_model_has_is_drawn_within_each_model(make_view, qtbot, bundle, tmp_path):
    from tiny_models import random_model, tokenizers

    src, tgt = tokenizers()
    r = compare_with_folder(bundle, save_bundle(tmp_path / "tiny", random_model(), src, tgt), SOURCE)  # 2 layers against 3
    view = make_view(QtCheckpointsView, SIZE, r, shown=True)
    view.apply(ViewChoice(kind="decoder", layer=2, head=3, mode="head"))
    assert view.sides_shown() and view.shown_heads() == (("decoder", 2, 3), ("decoder", 1, 3))
    np.testing.assert_allclose(view.attention_b_map.matrix(), r.attention_b.weights["decoder"][1, 3], atol=1e-6)
