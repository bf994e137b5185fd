"""QApplication set-up and the entry point of the desktop app."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from attnviz.qt.i18n import translate
from attnviz.qt.interpreter import set_up

ORG, APP = "attnviz", "attnviz"


def make_app(argv: list[str] | None = None) -> QtWidgets.QApplication:
    app = QtWidgets.QApplication.instance()
    if app is None:
        app = QtWidgets.QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    set_up(app)
    return app


TIMELINE_ENV = "ATTNVIZ_TIMELINE"  # a file: the launch's moments are written there as JSON, then the app quits


def run_app(model: str | None = None, src: str | None = None, tgt: str | None = None, session: str | None = None) -> int:
    app = make_app()
    from attnviz.qt.i18n import chosen_language, install

    install(chosen_language(QtCore.QSettings()))
    timeline = Timeline(os.environ.get(TIMELINE_ENV))
    splash = show_splash(app)  # at once: the window's imports (torch, the views) take seconds
    timeline.mark("splash")
    from attnviz.qt.main_window import MainWindow

    window = MainWindow(model=Path(model) if model else None, src=src, tgt=tgt, session_file=Path(session) if session else None)
    app._attnviz_window = window  # the window shown (View → Language replaces it)
    install_error_hook(window)
    window.show()
    splash.close()
    timeline.mark("window")
    timeline.follow(window)
    return app.exec()


def show_splash(app: QtWidgets.QApplication) -> QtWidgets.QWidget:
    """A small plain window shown before anything heavy is imported: the app's name and what it is doing."""
    splash = QtWidgets.QLabel(translate("app", "attnviz · opening the model…"))
    splash.setObjectName("startSplash")
    splash.setWindowFlags(QtCore.Qt.WindowType.SplashScreen | QtCore.Qt.WindowType.WindowStaysOnTopHint)
    splash.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
    splash.setMargin(32)
    font = splash.font()
    font.setPointSizeF(font.pointSizeF() * 1.4)
    splash.setFont(font)
    splash.show()
    for _ in range(3):  # painted now, before the imports block the event loop
        app.processEvents()
    return splash


class Timeline:
    """The launch's moments (wall-clock seconds since the epoch) written to ``path`` as JSON once the
    first decoded view is drawn, and the app quits: how ``make bench launch`` measures a real start.
    Without a path it does nothing."""

    def __init__(self, path: str | None):
        self.path = path
        self.moments: dict[str, float] = {}
        self._timer: QtCore.QTimer | None = None

    def mark(self, name: str) -> None:
        if self.path:
            self.moments.setdefault(name, time.time())

    def follow(self, window) -> None:
        """Mark ``loaded`` (the model open) and ``decoded`` (the grid drawn, decoding done), then write and quit."""
        if not self.path:
            return
        self._timer = QtCore.QTimer(window, interval=10)
        self._timer.timeout.connect(lambda: self._check(window))
        self._timer.start()

    def _check(self, window) -> None:
        if window.session.bundle is not None:
            self.mark("loaded")
        if "loaded" in self.moments and window.grid.has_data() and not window.session.running:
            self.mark("decoded")
            self._timer.stop()
            Path(self.path).write_text(json.dumps(self.moments))
            QtWidgets.QApplication.instance().quit()


def install_error_hook(window) -> None:
    """An unexpected error in a slot becomes a one-line message in the window (and a traceback
    on stderr for a bug report), never a crash or a silent failure."""
    import traceback

    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            previous(exc_type, exc, tb)
            return
        traceback.print_exception(exc_type, exc, tb)
        try:
            shown = getattr(QtWidgets.QApplication.instance(), "_attnviz_window", window)
            shown.show_message("error", translate("app", "Unexpected error: {kind}: {error}").format(kind=exc_type.__name__, error=exc))
        except Exception:  # noqa: BLE001 - the window may be gone
            pass

    sys.excepthook = hook
