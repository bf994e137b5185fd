"""``attnviz page --tour``: the tour's stops explained without a screen, by the tour itself.

A stop's text quotes numbers the tour reads from the live window's views (the head detail's row,
the walkthrough's scores, integrated gradients…), most of which no core function gives on its
own. So the page's notes are not approximated: a main window that is never put on screen opens
the model, a :class:`~attnviz.qt.tour.TourPanel` goes to each stop asked for and explains it as
it does for a user, and its texts become the notes (:func:`~attnviz.qt.publish.tour_notes.panel_notes`).
The window's settings live in a temporary file, so the user's are left alone.

Every wait is bounded and ends in one line (``WebPageError``): the model not open in
``LOAD_TIMEOUT_S``; a stop's view whose analysis failed, or that shows nothing while the window is
idle (within ``EMPTY_S``: the panel would wait for it in vain); a stop not explained in
``STOP_TIMEOUT_S``. A stop is never written with "—" for numbers its view could not give. The command refuses a stop that does not apply to the
model before the window opens (:func:`attnviz.core.tour_data.stop_mismatch`).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6 import QtCore

from attnviz.core.tour_data import Tour, stop_mismatch
from attnviz.qt.publish.tour_notes import panel_notes
from attnviz.qt.publish.web_page import PageNote, WebPageError
from attnviz.qt.tour import READY_TIMEOUT_S, TourPanel, stop_ready

LOAD_TIMEOUT_S = 120.0  # the model's load in the unseen window
STOP_TIMEOUT_S = READY_TIMEOUT_S  # a stop's view that has not drawn by then (the panel would explain it with "—") is an error
EMPTY_S = 2.0  # the window idle this long with the stop's view showing nothing: it has nothing to show


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
    if not wait_for(lambda: not s.loading, LOAD_TIMEOUT_S):
        raise WebPageError(f"--tour: the tour's window did not open the model in {LOAD_TIMEOUT_S:.0f} s")
    if s.bundle is None:
        raise WebPageError(window.message_bar.text() or "the tour's window could not open the model")
    panel = TourPanel(window, tour)
    failed: dict[str, str] = {}  # view name -> why its analysis failed
    shown: dict[int, bool] = {}  # stop index -> whether its view showed the window's data when it was explained
    s.analyses.failed.connect(lambda name, message: failed.setdefault(str(name), message))
    panel.stopShown.connect(lambda i: shown.__setitem__(i, stop_ready(window, tour.stops[i])))
    for i in indices:
        _go(panel, i, failed, shown)
    return panel_notes(panel)


def _go(panel: TourPanel, index: int, failed: dict[str, str], shown: dict[int, bool]) -> None:
    """The panel at stop ``index``, explained; ``WebPageError`` (one line) when its view's analysis
    fails, when the window is idle with the view showing nothing for ``EMPTY_S`` (it cannot become
    ready), or when it has not shown the stop in ``STOP_TIMEOUT_S``."""
    stop, window = panel.tour.stops[index], panel.main
    if not window.views.specs[stop.view].applies(window.session.bundle.config):
        raise WebPageError(f"--tour: the stop {stop.id!r} shows the {stop.view} view, which does not apply to this model")
    if (misfit := stop_mismatch(stop, window.session.bundle.config)) is not None:  # the panel would say so, not explain it
        raise WebPageError(f"--tour: {misfit}")
    failed.pop(stop.view, None)
    shown.pop(index, None)
    panel.go(index)
    empty = empty_for(window, stop.view)
    wait_for(lambda: index in shown or stop.view in failed or empty() >= EMPTY_S, STOP_TIMEOUT_S)
    why = (f"its {stop.view} view failed ({failed[stop.view]})" if stop.view in failed
           else None if shown.get(index) else f"its {stop.view} view has nothing to show for this model and sentence")
    if why is not None:
        raise WebPageError(f"--tour: the stop {stop.id!r} could not be explained: {why}")


def empty_for(window, name: str) -> Callable[[], float]:
    """A clock of how long (seconds) the window has been idle with view ``name`` drawn from the
    current data and showing nothing (0 while anything is loading, decoding or computing, or the
    view has data): a view that stays so has nothing to show and will not get anything."""
    since: list[float | None] = [None]

    def seconds() -> float:
        s, views = window.session, window.views
        busy = s.bundle is None or s.loading or s.running or s.analyses.pending() or name in views.stale
        if busy or (not views.frames[name].is_empty() and views.views[name].has_data()):
            since[0] = None
            return 0.0
        since[0] = since[0] or time.monotonic()
        return time.monotonic() - since[0]

    return seconds


def wait_for(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Run the event loop until ``predicate()`` holds (True) or ``timeout_s`` pass (False)."""
    deadline = time.monotonic() + timeout_s
    loop = QtCore.QEventLoop()
    while not predicate() and time.monotonic() < deadline:
        QtCore.QTimer.singleShot(10, loop.quit)
        loop.exec()
    return predicate()
