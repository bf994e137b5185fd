"""The ViewSet in the window: only what is on screen is drawn, a background tab catches up once
when raised, and a step builds each kind's attention data once for every view that shows it; every
view is named after its module."""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtWidgets

from attnviz.core.model.sites import KINDS
from attnviz.qt.i18n import translate
from attnviz.qt.views.naming import class_name, dock_object_name, scroll_object_name, view_object_name
from attnviz.qt.views.registry import VIEW_NAMES, VIEWS, build_view, on_screen, view_spec

pytestmark = pytest.mark.window_size(1366, 768)  # the window fixture's size (tests/qt/conftest.py)


def test_a_step_draws_only_the_views_on_screen_and_builds_each_kind_once(qtbot, window):
    s, views = window.session, window.views
    s.back()
    QtWidgets.QApplication.processEvents()
    builds, refreshes = Counter(s.frames.builds), dict(views.refreshes)
    s.step()
    QtWidgets.QApplication.processEvents()
    shown = {name for name, view in views.views.items() if on_screen(view)}
    assert "grid" in shown and len(shown) < len(views.views)  # the default layout tabs the docks
    for name in views.views:
        drawn = views.refreshes[name] - refreshes[name]
        assert drawn == (1 if name in shown else 0), name
    assert views.stale == set(views.views) - shown
    for kind in KINDS:  # the grid and the head detail share one AttentionData per kind; the encoder's, one per sentence
        assert s.frames.builds[f"attention:{kind}"] - builds[f"attention:{kind}"] == (kind != "encoder"), kind
    assert window.grid.data() is s.frames.attention_data("cross") and window.head_detail.data() is s.frames.attention_data("cross")


def test_a_background_tab_catches_up_once_when_raised(qtbot, window):
    s, views = window.session, window.views
    s.back()
    s.step()
    QtWidgets.QApplication.processEvents()
    assert "lines" in views.stale and not on_screen(views["lines"])
    before = views.refreshes["lines"]
    window.docks["linesDock"].raise_()
    qtbot.waitUntil(lambda: "lines" not in views.stale, timeout=5000)
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    assert views.refreshes["lines"] == before + 1
    np.testing.assert_array_equal(views["lines"].data().weights, s.decoding.all_attention("cross"))


def test_a_data_file_from_the_window_says_what_the_command_line_says(qtbot, tmp_path, monkeypatch):
    """The same provenance lines (model, sentences, strategy, step, selection, index bases) as
    ``attnviz export`` writes for the same view and choice."""
    from attnviz.cli import main as cli_main
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model
    from attnviz.qt.session import Session
    from attnviz.qt.views.registry import ViewSet

    assert cli_main(["export", "--view", "head", "--src", "猫吃鱼。", "--format", "csv", "--out", str(tmp_path / "cli")]) == 0
    cli_lines = [line for line in next((tmp_path / "cli").glob("*.csv")).read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    s = Session()
    s.set_bundle(load_bundle(default_model()))
    s.set_inputs("猫吃鱼。", "")
    s.decoding.run()
    views = ViewSet(s)
    for frame in views.frames.values():
        qtbot.addWidget(frame)
    views.refresh(views["head"])
    out = tmp_path / "gui.csv"
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), "CSV (*.csv)"))
    views["head"].export_data_dialog()
    gui_lines = [line for line in out.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    assert gui_lines == cli_lines
    assert any(line.startswith("# model: ") for line in gui_lines) and any("count from 0" in line for line in gui_lines)  # data, not UI text
    assert "# target: The" in "\n".join(gui_lines) and "decoded with greedy" in "\n".join(gui_lines)  # data, not UI text


def test_the_naming_scheme_comes_from_the_module_name():
    assert (class_name("head_detail"), view_object_name("head_detail"), dock_object_name("head_detail")) == (
        "QtHeadDetailView", "headDetailView", "headDetailDock")
    assert scroll_object_name("teacher_vs_free") == "teacherVsFreeScroll"


@pytest.mark.parametrize("spec", VIEWS, ids=lambda spec: spec.name)
def test_every_view_is_named_after_its_module(qtbot, spec):
    module = sys.modules[spec.cls.__module__]
    assert module.__name__ == f"attnviz.qt.views.{spec.stem}" and module.SPEC is spec
    assert spec.cls.__name__ == class_name(spec.stem)
    assert spec.dock_name == ("" if spec.area == "central" else dock_object_name(spec.stem))
    assert "self.setObjectName(" not in inspect.getsource(spec.cls)  # the base names the view
    view = build_view(spec)
    qtbot.addWidget(view)
    assert view.objectName() == view_object_name(spec.stem)
    assert view.scroll is None or view.scroll.objectName() == scroll_object_name(spec.stem)


@pytest.mark.parametrize("spec", VIEWS, ids=lambda spec: spec.name)
def test_the_base_keeps_every_title_and_scroll_area_in_the_theme(qtbot, spec):
    view = build_view(spec, theme="light")
    qtbot.addWidget(view)
    assert view.title.scene() is view.canvas.scene()  # the base placed it
    view.set_theme("dark")
    assert view.title.theme is view.theme and view.theme.name == "dark"
    if view.scroll is not None:
        assert view.theme.background in view.scroll.viewport().styleSheet()


def test_the_names_are_unique_and_the_view_names_are_kept():
    assert VIEW_NAMES == ("grid", "head", "masked", "lines", "mask", "model-map", "output", "pe", "norm", "walkthrough", "compare", "scaling",
                          "teacher-vs-free", "norm-batch", "ffn", "residual", "logit-lens", "logit-attribution", "importance", "heads", "qk", "ablation",
                          "attribution", "contributions", "patching", "circuit", "neighbours", "checkpoints", "beam-tree", "model-info")  # the --view names of the README
    assert len({spec.stem for spec in VIEWS}) == len(VIEWS)


def test_a_layout_saved_before_the_docks_were_renamed_is_not_applied(qtbot, window):
    assert not window.restore_layout(window.saveState(1))  # another layout version: the docks may have other names
    assert window.restore_layout(window.layout_state())


def test_every_view_module_has_its_test_file():
    here = Path(__file__).parent
    assert [spec.stem for spec in VIEWS if not (here / f"test_{spec.stem}.py").exists()] == []


def test_a_view_set_of_some_views_builds_only_those_and_links_them(qtbot):
    """``ViewSet(session, only=names)``: the named views, linked to one another as in the window."""
    from attnviz.qt.session import Session
    from attnviz.qt.views.registry import ViewSet

    from inside_fixtures import bundle, session

    s = Session()
    s.bundle = bundle()
    s.decoding = session(steps=3)
    views = ViewSet(s, only=("grid", "head"))
    assert set(views.views) == set(views.frames) == {"grid", "head"}
    assert views.docks("right") == [(translate("views", view_spec("head").title), views.frames["head"], "headDetailDock")]
    for name in views.views:
        qtbot.addWidget(views.frames[name])
        views.frames[name].show()
        qtbot.waitExposed(views.frames[name])
        views.refresh(views[name])
    views["grid"].chose.emit({"layer": 1, "head": 2, "mode": "head"})
    assert (views["head"].layer(), views["head"].head()) == (1, 2)


def test_with_many_views_on_screen_a_step_draws_some_now_and_the_others_on_the_next_turns(qtbot, monkeypatch):
    """The first ``DRAWN_AT_ONCE`` views on screen are drawn with the step; the others when the
    event loop turns again (after a paint and the keyboard), and a step taken meanwhile makes them
    draw the newer frame only."""
    from attnviz.qt import turns
    from attnviz.qt.session import Session
    from attnviz.qt.views import registry

    from inside_fixtures import bundle, session

    monkeypatch.setattr(turns, "TURN_BUDGET_S", 0.0)  # nothing beyond the first ones within a turn
    names = ("grid", "head", "lines", "mask", "output", "pe")
    s = Session()
    s.decode_as_you_type = False
    s.bundle = bundle()
    s.decoding = session(steps=2)
    views = registry.ViewSet(s, only=names)
    views.selection.update(kind="decoder", layer=0, head=0)
    for name in names:
        qtbot.addWidget(views.frames[name])
        views.frames[name].resize(420, 320)
        views.frames[name].show()
        qtbot.waitExposed(views.frames[name])
    qtbot.waitUntil(lambda: not views.drawing() and not views.stale & set(names))
    fed = Counter()
    for name, view in views.views.items():
        view.set_data = (lambda n, f: lambda data: (fed.update([n]), f(data))[1])(name, view.set_data)
    first = [n for n in registry.VIEW_NAMES if n in names][: registry.DRAWN_AT_ONCE]
    s.step()
    assert set(fed) == set(first) and views.drawing()
    s.step()  # before the event loop turned: the others have not drawn the step between
    assert set(fed) == set(first) and all(fed[n] == 2 for n in first)
    qtbot.waitUntil(lambda: not views.drawing())
    later = set(names) - set(first)
    assert later and all(fed[n] == 1 for n in later)
    assert views["pe"].data().embeddings[1].pieces == s.input_pieces()  # the newest frame's
    np.testing.assert_array_equal(views["grid"].data().weights, s.decoding.all_attention("decoder"))
