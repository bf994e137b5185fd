"""Opening a model bundle in a worker (:class:`ModelLoader`): only the latest request counts, so a
load still running when another begins (or when it is cancelled) never reaches the views. The
session owns one and shows what it reports."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore

from attnviz.core.bundle import load_bundle
from attnviz.errors import AttnvizError, one_line
from attnviz.paths import bundled_replacement
from attnviz.qt.i18n import translate
from attnviz.qt.workers import LatestRun


class ModelLoader(QtCore.QObject):
    """``open(path, inputs)``: ``loaded(bundle, inputs)`` when it is read, or ``failed(line)``;
    ``busyChanged`` around the load; ``note(line)`` says a retired folder was replaced or a load
    was cancelled."""

    loaded = QtCore.Signal(object, object)  # Bundle, the inputs the request asked to run first (dict)
    failed = QtCore.Signal(str)
    busyChanged = QtCore.Signal(bool, str)
    note = QtCore.Signal(str)

    def __init__(self, pool: QtCore.QThreadPool, workers: list, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._run = LatestRun(pool, workers, self)
        self._run.returned.connect(self._done)
        self._run.errored.connect(self._failed)
        self.path: Path | None = None  # the folder being opened
        self._asked: Path | None = None  # the folder asked for (a retired one is replaced)
        self._inputs: dict = {}

    @property
    def loading(self) -> bool:
        return self._run.pending

    def open(self, path: str | Path, inputs: dict) -> None:
        self.cancel(quiet=True)
        asked = Path(path)
        self.path, self._asked, self._inputs = bundled_replacement(asked) or asked, asked, inputs
        self._run.start(load_bundle, self.path, inference=False)  # parameters must stay normal tensors
        self.busyChanged.emit(True, translate("session", "Opening {name}…").format(name=self.path.name))

    def cancel(self, quiet: bool = False) -> None:
        """Drop the load in progress: whatever it returns is ignored; the open model stays."""
        path = self.path
        if not self.loading or path is None:
            return
        self._run.drop(quit=True)
        self._end()
        if not quiet:
            self.note.emit(translate("session", "Opening {name} was cancelled; the open model is kept").format(name=path.name))

    def _end(self) -> None:
        self.path = None
        self.busyChanged.emit(False, "")

    def _done(self, bundle) -> None:
        path, asked, inputs = self.path, self._asked, self._inputs
        self._end()
        self.loaded.emit(bundle, inputs)
        if path != asked:
            self.note.emit(translate("session", "{old} is no longer bundled: opened {new} instead").format(old=asked, new=path))

    def _failed(self, exc: BaseException) -> None:
        path = self.path
        self._end()
        text = str(exc) if isinstance(exc, AttnvizError) else f"{path}: {type(exc).__name__}: {exc}"
        self.failed.emit(one_line(translate("session", "Could not open the model: {why}").format(why=text)))
