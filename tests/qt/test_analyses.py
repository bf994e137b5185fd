"""The views' analyses run off the UI thread (attnviz.qt.analyses): a superseded one's result is
dropped, the same work is answered from the kept result, a failure is one line, and every view
that needs the model computes in a worker, never on the UI thread."""

from __future__ import annotations

import threading
import time

from PySide6 import QtWidgets

from attnviz.qt.analyses import Analyses, Analysis
from attnviz.qt.session import Session
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.registry import VIEWS, ViewSet

from inside_fixtures import bundle


def _slow(value, seconds=0.0):
    time.sleep(seconds)
    return value


def test_a_superseded_analysis_is_dropped_and_the_latest_shown(qapp):
    runner, shown = Analyses(), []
    runner.submit("view", Analysis(_slow, ("old", 0.3)), shown.append)
    runner.submit("view", Analysis(_slow, ("new", 0.0)), shown.append)
    assert runner.pending()
    assert runner.wait(5)
    time.sleep(0.35)  # the old one ends after the new one was shown
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    assert shown == ["new"] and runner.counts["dropped"] == 1 and runner.counts["shown"] == 1


def test_the_same_work_is_answered_from_the_kept_result_and_finish_runs_each_time(qapp):
    runner, shown, calls = Analyses(), [], []

    def work(x):
        calls.append(threading.current_thread() is threading.main_thread())
        return x * 2

    runner.submit("v", Analysis(work, (21,), finish=lambda r: ("a", r)), shown.append)
    assert runner.wait(5)
    assert runner.submit("v", Analysis(work, (21,), finish=lambda r: ("b", r)), shown.append) is None
    assert shown == [("a", 42), ("b", 42)] and calls == [False]  # computed once, in a worker
    runner.submit("v", Analysis(work, (22,)), shown.append)  # other arguments: computed again
    assert runner.wait(5) and shown[-1] == 44 and calls == [False, False]
    runner.cancel()  # a new model: nothing kept
    runner.submit("v", Analysis(work, (22,)), shown.append)
    assert runner.wait(5) and len(calls) == 3


def test_results_that_arrive_together_are_handed_over_one_turn_at_a_time(qapp, monkeypatch):
    """Three results in at once: with no budget beyond the first, each turn of the event loop hands
    one to its view; a result not handed over yet is superseded by a newer submission of its key."""
    from attnviz.qt import turns

    monkeypatch.setattr(turns, "TURN_BUDGET_S", 0.0)
    runner, shown = Analyses(), []
    for key in ("a", "b", "c"):
        runner.submit(key, Analysis(_slow, (key,)), lambda r: (shown.append(r), time.sleep(0.002)))
    while runner._latest:  # every worker has returned; nothing handed over yet
        for worker in list(runner._latest.values()):
            worker.wait(0.005)
        QtWidgets.QApplication.sendPostedEvents()
    assert shown == [] and runner.pending()
    runner.submit("c", Analysis(_slow, ("c2",)), shown.append)  # c's result is superseded before it is shown
    turns = 0
    while runner.pending():
        before = len(shown)
        QtWidgets.QApplication.processEvents()
        turns += len(shown) > before
    assert sorted(shown) == ["a", "b", "c2"] and turns == 3
    assert runner.counts["dropped"] == 1


def test_a_failing_analysis_says_so_in_one_line(qapp, qtbot):
    runner = Analyses()

    def broken():
        raise ValueError("no such head")

    with qtbot.waitSignal(runner.failed, timeout=5000) as sig:
        runner.submit("walkthrough", Analysis(broken), lambda r: None)
    assert sig.args == ["walkthrough", "ValueError: no such head"]  # data, not UI text
    assert not runner.pending() and runner.counts["failed"] == 1


def test_no_view_runs_the_model_on_the_ui_thread(qtbot):
    """Every view on screen, a sentence decoded and stepped: each model call a view's data needs
    runs in a worker, and the views that need one show its result."""
    b = bundle()
    s = Session()
    s.set_bundle(b)
    s.decode_as_you_type = False
    s.set_inputs("我喜欢吃苹果。", "")
    for _ in range(3):
        s.step()
    views = ViewSet(s)
    threads: list[bool] = []
    hooks = [m.register_forward_hook(lambda *a: threads.append(threading.current_thread() is threading.main_thread()))
             for m in (b.model.encoder, b.model.decoder)]
    try:
        for frame in views.frames.values():
            qtbot.addWidget(frame)
            frame.resize(700, 500)
            frame.show()
        qtbot.waitUntil(lambda: all(frame.isVisible() for frame in views.frames.values()), timeout=5000)
        for name in views.views:
            views.refresh(views[name])
        assert s.analyses.wait(30)
    finally:
        for h in hooks:
            h.remove()
    assert threads and not any(threads)  # every call of a view's analysis came from a worker
    needs_model = {"compare", "logit-lens", "walkthrough", "norm-batch"}  # no target: teacher-vs-free stays empty
    assert all(views[name].has_data() for name in needs_model)
    assert s.analyses.counts["shown"] >= len(needs_model) and not s.analyses.counts["failed"]
    for spec in VIEWS:  # one protocol: every view draws what it is given and takes a choice itself
        assert spec.cls.render is not FigureViewBase.render, spec.name  # the base's set_data keeps the data and calls it
        assert spec.from_choice or not spec.selectors or spec.cls.apply is not FigureViewBase.apply, spec.name


def test_a_view_says_computing_while_its_analysis_runs_and_a_failure_reaches_the_window(qtbot, monkeypatch):
    from dataclasses import replace

    from story_helpers import shown_view_set

    s, views = shown_view_set(qtbot, ("patching",))
    frame, gate = views.frames["patching"], threading.Event()
    assert not frame.computing.isVisible()
    spec = views.specs["patching"]

    def slow(session, choice, options):
        return Analysis(lambda: gate.wait(5) and None)

    views.slots["patching"].spec = replace(spec, data=slow)
    views.refresh(views["patching"])
    assert frame.computing.isVisible() and frame.computing.objectName() == "computingBadge"
    gate.set()
    assert s.analyses.wait()
    assert not frame.computing.isVisible()

    def broken(session, choice, options):
        return Analysis(lambda: 1 / 0)

    views.slots["patching"].spec = replace(spec, data=broken)
    with qtbot.waitSignal(views.failed, timeout=5000) as sig:
        views.refresh(views["patching"])
        s.analyses.wait()
    assert "patching" in sig.args[0] and "ZeroDivisionError" in sig.args[0] and "\n" not in sig.args[0]
    assert not frame.computing.isVisible()
