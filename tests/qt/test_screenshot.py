"""The README screenshot script: a PNG of the window at the asked size, taken only once the
decode, the examples and the corpus lookup are done."""

from __future__ import annotations

from PySide6 import QtGui

from attnviz.qt import screenshot
from attnviz.qt.main_window import MainWindow


def test_screenshot_waits_for_the_lookup_and_saves_the_size_asked(qtbot, tmp_path, monkeypatch):
    seen = {}
    close = MainWindow.close

    def closing(window):
        bar = window.input_bar
        seen.update(pending=bar.hints_pending() or bar.source_info.lookup_pending(), tokens=len(window.session.output_pieces()))
        return close(window)

    monkeypatch.setattr(MainWindow, "close", closing)
    out = tmp_path / "shot.png"
    assert screenshot.main([str(out), "--size", "1024x700"]) == 0
    image = QtGui.QImage(str(out))
    assert (image.width(), image.height()) == (1024, 700)
    assert seen["pending"] is False and seen["tokens"] > 0


def test_a_tour_stop_that_asks_first_is_taken_answered(qtbot, tmp_path, monkeypatch):
    """``--tour look-ahead-mask``: the stop's exercise is asked once the stop is explained, and the
    picture is taken after it is skipped (its view uncovered), not before."""
    from attnviz.qt import tour

    panels, start = [], tour.start_tour
    monkeypatch.setattr(tour, "start_tour", lambda *a, **kw: panels.append(start(*a, **kw)) or panels[-1])
    seen = {}
    close = MainWindow.close

    def closing(window):
        host = panels[0].exercises
        seen.update(outcome=host.outcomes.get("look-ahead-mask"), stop=host.stop.id if host.stop else None)
        return close(window)

    monkeypatch.setattr(MainWindow, "close", closing)
    assert screenshot.main([str(tmp_path / "tour.png"), "--size", "1024x700", "--tour", "look-ahead-mask"]) == 0
    assert seen["stop"] == "look-ahead-mask" and seen["outcome"] is not None and seen["outcome"].verdict == "skipped"
