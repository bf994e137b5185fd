"""Tour → Record: a teacher records a tour in the window, stop by stop, and saves it as a tour file
(``.attnviz-tour``, :mod:`attnviz.core.tour_file`); Tour → Open plays one.

A stop is what the window shows when the teacher adds it (:func:`window_state`): the sentence and
the target typed, the tokens decoded (teacher-forced: the position shown), the linked selection's
kind, layer, head and query row, and the view raised last (the dock last brought to the front, or
the one the teacher picks in the panel), with the teacher's text in English and/or Chinese. The
window's session and selection are only read here; playing goes through the same path as the
bundled tour (:func:`attnviz.qt.tour.play_tour`, which sets them through their own setters).

:class:`TourRecorder` owns the stops being recorded; its panel
(:class:`attnviz.qt.widgets.tour_recorder_panel.TourRecorderPanel`) shows them. A stop the tour
loader would refuse (no text, a text too long) is refused when it is added, and a save that fails
keeps every stop recorded.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from attnviz.core.tour_data import StopState, Tour, TourError, load_tour_file, model_folder, model_name
from attnviz.core.tour_file import RecordedStop, check_stop, save_tour
from attnviz.qt.i18n import current_language, translate
from attnviz.qt.session import Session
from attnviz.qt.tour import play_tour, tour_for
from attnviz.qt.views.registry import on_screen
from attnviz.qt.widgets.tour_recorder_panel import TourRecorderPanel, ask_tour_file


def steps_shown(session: Session) -> int | None:
    """The tokens decoded (teacher-forced: the 1-based position shown); ``None``: the model does
    not decode (an encoder-only model's one pass)."""
    if session.forced is not None:
        return session.forced_cursor + 1
    return len(session.decoding.steps) if session.decoding is not None else None


def front_view(window: QtWidgets.QMainWindow) -> str:
    """The view in front when recording begins: the one last clicked when it is on screen, else the
    first view (in the registry's order) whose dock is in front, else the grid."""
    views = window.views
    active = views.name_of(window.active_view())
    if active is not None and on_screen(views.views[active]):
        return active
    return next((name for name, view in views.views.items() if name != "grid" and on_screen(view)), "grid")


def window_state(window: QtWidgets.QMainWindow) -> StopState:
    """What the window (a ``qt.main_window.MainWindow``) shows now, as a stop sets it."""
    s, sel = window.session, window.views.selection.value()
    return StopState(s.source, s.target, steps_shown(s), sel.kind, sel.layer, sel.head, sel.query)


class TourRecorder(QtCore.QObject):
    """The stops a teacher records in ``window``, in order. ``stopsChanged`` after every change;
    ``raisedChanged(name)`` when another view's dock comes to the front (``raised``)."""

    stopsChanged = QtCore.Signal()
    raisedChanged = QtCore.Signal(str)

    def __init__(self, window: QtWidgets.QMainWindow):
        super().__init__(window)
        self.setObjectName("tourRecorder")
        self.window = window
        self._stops: list[RecordedStop] = []
        self.raised = front_view(window)
        for name, spec in window.views.specs.items():
            dock = window.docks.get(spec.dock_name)
            if dock is not None:
                dock.visibilityChanged.connect(partial(self._on_dock_shown, name))

    def _on_dock_shown(self, name: str, visible: bool) -> None:
        if visible and name != self.raised:
            self.raised = name
            self.raisedChanged.emit(name)

    def stops(self) -> tuple[RecordedStop, ...]:
        return tuple(self._stops)

    def view_names(self) -> tuple[str, ...]:
        """The views a stop may raise: the window's."""
        return tuple(self.window.views.specs)

    def view_title(self, name: str) -> str:
        """View ``name`` as the window names it (its dock's title)."""
        title = self.window.views.specs[name].title
        return translate("views", title) if title else translate("tour_recorder", "Attention grid")

    def add(self, texts: dict[str, str], view: str | None = None) -> RecordedStop:
        """A stop of what the window shows now, raising ``view`` (``None``: :attr:`raised`), with
        ``texts`` (language → text); :class:`TourError` (one line) when the loader would refuse it."""
        stop = RecordedStop(dict(texts), view or self.raised, window_state(self.window))
        check_stop(stop, len(self._stops) + 1, self.view_names())
        self._stops.append(stop)
        self.stopsChanged.emit()
        return stop

    def remove(self, index: int) -> None:
        if 0 <= index < len(self._stops):
            del self._stops[index]
            self.stopsChanged.emit()

    def model(self) -> str | None:
        """The open model as the tour names it."""
        bundle = self.window.session.bundle
        return model_name(bundle.path) if bundle is not None and bundle.path else None

    def save(self, path: str | Path, replace: bool = False) -> Path:
        """Write the stops to ``path`` (see :func:`attnviz.core.tour_file.save_tour`); the stops stay
        recorded whatever happens."""
        if not self._stops:
            raise TourError(translate("tour_recorder", "no stop recorded yet: add a stop first"))
        return save_tour(path, self._stops, self.model(), self.view_names(), replace)

    def open(self, path: str | Path) -> Tour:
        """Play the tour file ``path`` (:func:`open_tour_file`); :class:`TourError` when it cannot be read."""
        return open_tour_file(self.window, Path(path))


def read_tour_file(window: QtWidgets.QMainWindow, path: Path) -> Tour:
    """The tour in ``path`` in the interface's language, checked against the window's views."""
    return load_tour_file(path, tour_for(current_language()), tuple(window.views.specs))


def open_tour_file(window: QtWidgets.QMainWindow, path: Path) -> Tour:
    """Read the tour file ``path``, open the model it names (when another is open) and play it
    from its first stop; :class:`TourError` (one line) when it cannot be read (nothing changes)."""
    tour = read_tour_file(window, path)
    open_tour_model(window, tour)
    play_tour(window, tour)
    return tour


def open_tour_model(window: QtWidgets.QMainWindow, tour: Tour) -> None:
    """Open the model ``tour`` names unless it is open (or opening) already; the tour's panel
    waits for it."""
    if tour.model is None:
        return
    folder = model_folder(tour.model).resolve()
    s = window.session
    opening = s.loader.path if s.loading else (s.bundle.path if s.bundle is not None else None)
    if opening is None or Path(opening).resolve() != folder:
        window.open_model(folder)


# -- the window's Tour menu --------------------------------------------------------------------------
def show_recorder(window: QtWidgets.QMainWindow) -> TourRecorderPanel:
    """Tour → Record: the recorder's panel (made the first time), shown in front."""
    panel = window.findChild(TourRecorderPanel, "tourRecorderPanel")
    if panel is None:
        panel = TourRecorderPanel(TourRecorder(window), window)
        panel.message.connect(window.show_message)
        window.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, panel)
    panel.show()
    panel.raise_()
    return panel


def open_dialog(window: QtWidgets.QMainWindow) -> Tour | None:
    """Tour → Open: ask for a tour file and play it (a file that cannot be read: one line says why)."""
    path = ask_tour_file(window)
    if path is None:
        return None
    try:
        return open_tour_file(window, path)
    except TourError as exc:
        window.show_message("error", str(exc))
        return None


def add_tour_menu(window: QtWidgets.QMainWindow) -> QtWidgets.QMenu:
    """The window's Tour menu (before Help, the last): Record a Tour, Open a Tour File."""
    menu = QtWidgets.QMenu(translate("tour_recorder", "T&our"), window)
    menu.setObjectName("tourMenu")
    record = menu.addAction(translate("tour_recorder", "&Record a Tour…"), lambda: show_recorder(window))
    record.setObjectName("tourRecordAction")
    record.setStatusTip(translate("tour_recorder", "Record stops of the window as it is, with your text, and save them as a tour file"))
    opened = menu.addAction(translate("tour_recorder", "&Open a Tour File…"), lambda: open_dialog(window))
    opened.setObjectName("tourOpenAction")
    opened.setStatusTip(translate("tour_recorder", "Play a tour file (.attnviz-tour) stop by stop"))
    bar = window.menuBar()
    last = bar.actions()[-1] if bar.actions() else None
    bar.insertMenu(last, menu)
    return menu
