"""The inside panels in the main window follow the decoding, and show what the core computes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6 import QtWidgets
from window_helpers import close_shared_window, open_shared_window

from attnviz.core.analysis import stats as analysis
from attnviz.core.analysis.walkthrough import session_walkthrough

TIMEOUT = 30000


@pytest.fixture(scope="module")
def opened(qapp, tmp_path_factory):
    """One window for the module (opening one takes seconds): its sentence decoded to the end, and
    the selection it opened with."""
    w = open_shared_window(tmp_path_factory.mktemp("inside"), src="我喜欢吃鱼。")
    yield w, w.views.selection.value(), w.session.decoding.tgt_ids
    close_shared_window(w)


@pytest.fixture
def window(opened, qtbot):
    """The module's window as it opened, whatever an earlier test did: the sentence decoded to the
    end again, the selection it opened with."""
    w, selection, tgt_ids = opened
    s = w.session
    s.stop_run()
    if s.decoding.can_step:
        s.run_to_end()
        qtbot.waitUntil(lambda: not s.running, timeout=TIMEOUT)
    w.views.selection.update(**dataclasses.asdict(selection))
    assert s.analyses.wait()
    QtWidgets.QApplication.processEvents()
    assert s.decoding.finished and s.decoding.tgt_ids == tgt_ids and w.views.selection.value() == selection
    yield w
    s.stop_run()
    s.wait_for_workers(5000)


def show(window, dock_name):
    dock = window.findChild(QtWidgets.QDockWidget, dock_name)
    dock.show()
    dock.raise_()
    QtWidgets.QApplication.processEvents()


def test_every_inside_view_has_its_object_name(window):
    for name in ("positionalView", "normStatsView", "outputView", "walkthroughView", "trainPanel"):
        assert window.findChild(QtWidgets.QWidget, name) is not None, name


def test_output_view_follows_the_steps(qtbot, window):
    s = window.session
    show(window, "outputDock")
    view = window.views["output"]
    assert view.topk() == s.decoding.steps[-1].topk
    s.back()
    s.back()
    assert view.topk() == s.decoding.steps[-1].topk
    np.testing.assert_allclose(view.bar_probabilities(), [p for _, _, p in s.decoding.steps[-1].topk], rtol=1e-6)


def test_positional_view_shows_the_analysis(window):
    show(window, "positionalDock")
    data = window.views["pe"].data()
    s = window.session
    n = max(len(s.decoding.src_pieces), len(s.decoding.input_pieces))
    pe = analysis.positional_encoding(n, s.bundle.config.d_model)
    np.testing.assert_allclose(data.pe, pe, atol=1e-6)
    np.testing.assert_allclose(data.similarity, analysis.positional_similarity(pe), atol=1e-4)
    np.testing.assert_array_equal(data.side("source").tokens, s.decoding.accumulated("encoder.embed.tokens"))


def test_norm_view_shows_the_statistics(window):
    show(window, "normStatsDock")
    view = window.views["norm"]
    assert view.has_data()
    site = view.group_sites()[0]
    s = window.session
    x = s.decoding.accumulated(f"{site.site}.input")
    np.testing.assert_allclose(site.x_in, x)
    ref = torch_layer_norm_stats(x)
    np.testing.assert_allclose(site.stats.input_mean, ref[0], atol=1e-5)


def torch_layer_norm_stats(x):
    return x.mean(-1), x.std(-1)


def test_walkthrough_follows_the_step_and_selection(qtbot, window):
    show(window, "walkthroughDock")
    view = window.views["walkthrough"]
    s = window.session
    assert s.analyses.wait()
    walk = view.data()
    assert walk is not None
    ref = session_walkthrough(s.bundle.model, s.decoding, "cross", 0, 0, len(s.decoding.steps) - 1)
    np.testing.assert_allclose(walk.weights, ref.weights, atol=1e-6)
    np.testing.assert_allclose(walk.weights, s.decoding.attention("cross", 0)[0], atol=1e-6)
    view.chose.emit({"kind": "decoder", "layer": 1, "head": 2, "mode": "head", "query": 1})
    assert s.analyses.wait()  # computed in a worker
    walk = view.data()
    np.testing.assert_allclose(walk.weights, s.decoding.attention("decoder", 1)[2], atol=1e-6)


def test_every_registry_view_has_its_dock(window):
    from attnviz.qt.views.registry import VIEWS

    for spec in VIEWS:
        view = window.views[spec.name]
        assert isinstance(view, spec.cls)
        if spec.area == "central":
            assert view is window.grid
        else:
            dock = window.findChild(QtWidgets.QDockWidget, spec.dock_name)
            assert dock.widget().view is view and dock.windowTitle() == spec.title  # in its ViewFrame


def test_grid_and_head_detail_export_all_heads_with_the_head_view(window):
    from attnviz.qt.views.head_detail import QtHeadDetailView

    for view in (window.grid, window.head_detail):
        assert view.all_heads_figure() is QtHeadDetailView
        actions = {a.objectName(): a for a in view.build_context_menu().actions()}
        assert actions["exportAllHeadsAction"].isEnabled()
