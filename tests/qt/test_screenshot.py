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
