"""Tour → Record in the real window: three stops recorded at different sentences, steps,
selections and views, saved, opened again and played through the tour's panel; each stop brings
the window back to exactly what was recorded. A save that fails is one line and keeps the stops;
a file attnviz did not write is replaced only when the user says so. Widgets by objectName."""

from __future__ import annotations

import pytest
from PySide6 import QtGui, QtWidgets
from window_helpers import wait_idle

from attnviz.core.tour_data import StopState, fill, load_tour_file
from attnviz.qt.selection import Selection
from attnviz.qt.tour import TourPanel
from attnviz.qt.views.registry import on_screen
from attnviz.qt.widgets.tour_recorder_panel import TourRecorderPanel

READY_MS = 60000

#: (view, source, target, steps, kind, layer, head, query), 0-based as a Selection holds them.
STOPS = [
    ("head", "我喜欢吃鱼。", "", 2, "encoder", 0, 1, 2),
    ("lines", "猫吃鱼。", "", 3, "cross", 1, 2, None),  # tabbed with the head detail
    ("output", "这是最好的时代", "This is the best time.", 3, "decoder", 2, 3, 0),  # teacher-forced: the position
]
TEXTS = [{"en": "The encoder's first head.", "zh_CN": "编码器的第一个头。"}, {"en": "Cross attention in each of {n_heads} heads."}, {"zh_CN": "教师强制。"}]


def trigger(window, name: str) -> None:
    window.findChild(QtGui.QAction, name).trigger()


def set_window(qtbot, window, view, source, target, steps, kind, layer, head, query) -> None:
    """The window as a teacher sets it: sentences, tokens decoded, selection, a dock in front."""
    s = window.session
    window.input_bar.set_texts(source, target)
    s.set_inputs(source, target, to_end=False)
    s.finish_runs()
    s.go_to(steps)
    window.views.selection.update(kind=kind, layer=layer, head=head, mode="head", query=query)
    dock = window.docks[window.views.specs[view].dock_name]
    dock.show()
    dock.raise_()
    wait_idle(qtbot, window)


def shown_steps(s) -> int:
    return s.forced_cursor + 1 if s.forced is not None else len(s.decoding.steps)


def in_front(window, view: str) -> bool:
    """The view's dock is shown and in front of the docks tabbed with it (a background tab keeps
    ``isVisible()``; its visible region is empty)."""
    dock = window.docks[window.views.specs[view].dock_name]
    return on_screen(window.views.views[view]) and all(o.visibleRegion().isEmpty() for o in window.tabifiedDockWidgets(dock))


def recorder_panel(window) -> TourRecorderPanel:
    trigger(window, "tourRecordAction")
    panel = window.findChild(TourRecorderPanel, "tourRecorderPanel")
    assert panel is not None and panel.isVisible()
    return panel


def add_stop(panel, texts: dict[str, str]) -> None:
    n = len(panel.recorder.stops())
    for language, name in (("en", "tourStopTextEn"), ("zh_CN", "tourStopTextZh")):
        panel.findChild(QtWidgets.QPlainTextEdit, name).setPlainText(texts.get(language, ""))
    panel.findChild(QtWidgets.QPushButton, "tourAddStop").click()
    assert len(panel.recorder.stops()) == n + 1, panel.message_label.text()


def record(qtbot, window, panel, rows) -> list[StopState]:
    states = []
    for row, texts in zip(rows, TEXTS):
        set_window(qtbot, window, *row)
        assert panel.findChild(QtWidgets.QComboBox, "tourStopView").currentData() == row[0]  # follows the dock in front
        add_stop(panel, texts)
        states.append(StopState(*row[1:]))
    return states


@pytest.mark.slow
def test_a_recorded_tour_plays_back_exactly(qtbot, window, tmp_path):
    panel = recorder_panel(window)
    states = record(qtbot, window, panel, STOPS)
    assert [s.state for s in panel.recorder.stops()] == states
    assert [s.view for s in panel.recorder.stops()] == [r[0] for r in STOPS]
    assert panel.findChild(QtWidgets.QListWidget, "tourStopList").count() == 3
    path = panel.save_to(tmp_path / "lesson")
    assert path == tmp_path / "lesson.attnviz-tour"
    loaded = load_tour_file(path, "en", tuple(window.views.specs))
    assert [s.state for s in loaded.stops] == states and loaded.model == "zh-en"
    assert [s.text for s in loaded.stops] == ["The encoder's first head.", "Cross attention in each of {n_heads} heads.", "教师强制。"]  # data, not UI text
    set_window(qtbot, window, "model-info", "鱼吃猫。", "", 1, "cross", 0, 0, None)  # somewhere else
    assert panel.open_file(path)
    tour = window.findChild(TourPanel, "tourPanel")
    for i, (view, source, target, steps, kind, layer, head, query) in enumerate(STOPS):
        tour.go(i)
        qtbot.waitUntil(lambda: tour.ready, timeout=READY_MS)
        wait_idle(qtbot, window)
        s = window.session
        assert (s.source, s.target, shown_steps(s)) == (source, target, steps)
        assert window.views.selection.value() == Selection(kind, layer, head, "head", query)
        assert in_front(window, view), view
        assert panel.recorder.raised == view
        assert tour.text() == fill(loaded.stops[i].text, {"n_heads": s.bundle.config.n_heads})  # the model's measure, read live


@pytest.mark.slow
def test_a_failed_save_is_one_line_and_keeps_every_stop(qtbot, window, tmp_path, monkeypatch):
    panel = recorder_panel(window)
    record(qtbot, window, panel, STOPS[:2])
    before = panel.recorder.stops()
    assert panel.save_to(tmp_path / "missing" / "lesson") is None
    label = panel.findChild(QtWidgets.QLabel, "tourRecorderMessage")
    text = label.text()  # the core's one line: the tour could not be saved to that folder
    assert label.property("level") == "error" and str(tmp_path / "missing" / "lesson") in text and "\n" not in text
    assert window.message_bar.text() == text and window.message_bar.property("level") == "error"
    assert panel.recorder.stops() == before and panel.findChild(QtWidgets.QListWidget, "tourStopList").count() == 2
    theirs = tmp_path / "theirs.attnviz-tour"
    theirs.write_text("a teacher's notes", encoding="utf-8")
    answers = iter([QtWidgets.QMessageBox.StandardButton.No, QtWidgets.QMessageBox.StandardButton.Yes])
    monkeypatch.setattr(QtWidgets.QMessageBox, "exec", lambda self: next(answers))
    assert panel.save_to(theirs) is None and theirs.read_text(encoding="utf-8") == "a teacher's notes"  # "No": left alone
    assert panel.save_to(theirs) == theirs  # "Yes"
    assert [s.state for s in load_tour_file(theirs, views=tuple(window.views.specs)).stops] == [s.state for s in before]
    assert panel.save_to(theirs) == theirs  # now attnviz's own: replaced without asking (no answer left)
