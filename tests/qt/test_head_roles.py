"""The head-roles view: its heatmap shows the chosen measure of every kind and layer (rows) and
head (columns) as the core computes it, a click selects a head, and in a ViewSet the run goes
through the session's analyses a chunk at a time, with progress, and stops and goes on."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtWidgets

from attnviz.core.analysis.head_roles import MEASURES, CorpusRun, head_roles
from attnviz.core.bundle import Bundle
from attnviz.core.data.corpora import Pair, load_tsv
from attnviz.qt.views import head_roles as view_module
from attnviz.qt.views.head_roles import QtHeadRolesView, sentence_pair

from inside_fixtures import bundle, session
from story_helpers import click, session_for, shown, shown_views
from tiny_models import EN, ZH

PAIRS = [Pair(z, e) for z, e in zip(ZH[:3], EN[:3])]


@pytest.fixture(scope="module")
def run():
    b = bundle()
    roles = head_roles(b.model, b.src_tokenizer, b.tgt_tokenizer, PAIRS)
    return CorpusRun(tuple(PAIRS), "held-out", roles, len(PAIRS))


def test_the_heatmap_shows_each_measure_and_a_click_selects_a_head(make_view, qtbot, run, tmp_path):
    view = shown(make_view, QtHeadRolesView, run)
    assert view.objectName() == "headRolesView"
    kinds = run.roles.kinds
    for name in ("entropy", "previous", "alignment", "diagonal"):
        view.measure.setCurrentIndex(MEASURES.index(name))
        want = np.concatenate([run.roles.measure(k, name) for k in kinds])
        np.testing.assert_allclose(view.heatmap.matrix(), want, atol=1e-6, equal_nan=True)
    assert view.findChild(QtWidgets.QComboBox, "headMeasure") is view.measure
    assert view.heatmap.row_labels()[-1].endswith("2") and len(view.heatmap.col_labels()) == bundle().config.n_heads
    row = kinds.index("cross") * 2 + 1  # cross layer 2
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heatmap.cell_center_in_scene(row, 3))
    assert sig.args == [{"kind": "cross", "layer": 1, "head": 3, "mode": "head"}]
    assert not view.progress.isVisible() and not view.stop.isVisible()  # complete: nothing runs
    data = view.figure_data()
    assert data.dims == ("kind", "layer", "head") and set(data.values) == set(MEASURES)
    view.resize(900, 600)
    view.measure.setCurrentIndex(MEASURES.index("diagonal"))
    QtWidgets.QApplication.processEvents()
    view.grab().save(str(tmp_path / "head_roles_tiny.png"))


def view_set(qtbot, b):
    s = session_for(b, session(steps=3))
    views = shown_views(qtbot, s, ("heads",), (900, 600))
    return s, views, views["heads"]


def test_a_model_without_held_out_data_is_measured_on_the_sentence_on_screen(qtbot):
    s, views, view = view_set(qtbot, bundle())
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.run() is not None and view.run().complete, timeout=10000)
    run = view.run()
    assert run.origin == "sentence" and run.pairs == (sentence_pair(s),) and run.pairs[0].src == s.source
    b = bundle()
    want = head_roles(b.model, b.src_tokenizer, b.tgt_tokenizer, list(run.pairs))
    np.testing.assert_allclose(view.heatmap.matrix(), np.concatenate([want.measure(k, "entropy") for k in want.kinds]), atol=1e-6)


@pytest.fixture
def data_bundle(tmp_path):
    """The tiny model with a corpus of its own: many test pairs (a TSV split by the source's hash)."""
    lines = [f"{a}{b}\t{c} {d}" for a, c in zip(ZH, EN) for b, d in zip(ZH, EN)]
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(load_tsv(tsv).test) >= 3
    b = bundle()
    return Bundle(b.model, b.src_tokenizer, b.tgt_tokenizer, {"name": "tiny", "data": {"spec": {"kind": "tsv", "path": str(tsv)}}})


def test_the_run_goes_a_chunk_at_a_time_with_progress_and_stops(qtbot, monkeypatch, data_bundle):
    monkeypatch.setattr(view_module, "CHUNK_PAIRS", 1)
    seen: list[int] = []
    original = QtHeadRolesView.set_data
    monkeypatch.setattr(QtHeadRolesView, "set_data", lambda self, r: (seen.append(r.done), original(self, r))[1])
    s, views, view = view_set(qtbot, data_bundle)
    total = len(load_tsv(data_bundle.meta["data"]["spec"]["path"]).test)
    qtbot.waitUntil(lambda: bool(seen), timeout=10000)
    view.stop.setChecked(True)  # stop after the chunk in hand
    assert s.analyses.wait()
    QtWidgets.QApplication.processEvents()
    stopped = view.run()
    assert not stopped.complete and view.stop.isVisible() and view.progress.value() == stopped.done
    assert view.progress.maximum() == total and view.options()["headRolesStop"] is True
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    assert view.run().done == stopped.done and not s.analyses.pending()  # nothing runs while stopped
    view.stop.setChecked(False)  # go on
    qtbot.waitUntil(lambda: view.run().complete, timeout=20000)
    assert seen[:3] == [1, 2, 3][: len(seen[:3])] and view.run().done == total
    spec = data_bundle.meta["data"]["spec"]
    want = head_roles(data_bundle.model, data_bundle.src_tokenizer, data_bundle.tgt_tokenizer, list(load_tsv(spec["path"]).test))
    np.testing.assert_allclose(view.run().roles.measure("cross", "entropy"), want.measure("cross", "entropy"), atol=1e-6)
    assert not view.progress.isVisible()
