"""``attnviz page --tour``: the tour's stops explained without a screen, by the tour itself.

A stop's text quotes numbers the tour reads from the live window's views (the head detail's row,
the walkthrough's scores, integrated gradients…), most of which no core function gives on its
own. So the page's notes are not approximated: a main window that is never put on screen opens
the model, a :class:`~attnviz.qt.tour.TourPanel` goes to each stop asked for and explains it as
it does for a user, and its texts become the notes (:func:`~attnviz.qt.export.tour_notes.panel_notes`).
The window's settings live in a temporary file, so the user's are left alone.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6 import QtCore

from attnviz.core.tour_data import Tour
from attnviz.qt.export.tour_notes import panel_notes
from attnviz.qt.export.web_page import PageNote, WebPageError
from attnviz.qt.tour import READY_TIMEOUT_S, TourPanel

LOAD_TIMEOUT_S = 120.0  # the model's load in the unseen window
STOP_TIMEOUT_S = READY_TIMEOUT_S + 60.0  # the panel explains a stop within READY_TIMEOUT_S of its state being set


def explained_stops(model: Path, tour: Tour, indices: Sequence[int]) -> tuple[PageNote, ...]:
    """Stops ``indices`` of ``tour`` explained on ``model`` in an unseen main window, as page notes
    (a QApplication must exist); ``WebPageError`` in one line when the model does not open."""
    from attnviz.qt.main_window import MainWindow

    with tempfile.TemporaryDirectory(prefix="attnviz-tour-") as folder:
        settings = QtCore.QSettings(str(Path(folder) / "settings.ini"), QtCore.QSettings.Format.IniFormat)
        first = tour.stops[indices[0]].state if indices else None
        window = MainWindow(model=model, src=first.source if first else None, tgt=first.target if first else None, settings=settings)
        window.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        window.show()
        try:
            return _explain(window, tour, indices)
        finally:
            window.session.stop_run()
            window.session.wait_for_workers(5000)
            window.close()
            window.deleteLater()
            QtCore.QCoreApplication.processEvents()


def _explain(window, tour: Tour, indices: Sequence[int]) -> tuple[PageNote, ...]:
    s = window.session
    wait_for(lambda: not s.loading, LOAD_TIMEOUT_S)
    if s.bundle is None:
        raise WebPageError(window.message_bar.text() or "the tour's window could not open the model")
    panel = TourPanel(window, tour)
    for i in indices:
        panel.go(i)
        wait_for(lambda: panel.ready, STOP_TIMEOUT_S)
    return panel_notes(panel)


def wait_for(predicate: Callable[[], bool], timeout_s: float) -> None:
    """Run the event loop until ``predicate()`` holds or ``timeout_s`` pass."""
    deadline = time.monotonic() + timeout_s
    loop = QtCore.QEventLoop()
    while not predicate() and time.monotonic() < deadline:
        QtCore.QTimer.singleShot(10, loop.quit)
        loop.exec()
