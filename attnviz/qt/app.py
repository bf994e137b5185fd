"""QApplication set-up and the entry point of the desktop app."""

from __future__ import annotations

import sys
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


def run_app(model: str | None = None, src: str | None = None, tgt: str | None = None, session: str | None = None) -> int:
    app = make_app()
    from attnviz.qt.i18n import chosen_language, install
    from attnviz.qt.main_window import MainWindow

    install(chosen_language(QtCore.QSettings()))
    window = MainWindow(model=Path(model) if model else None, src=src, tgt=tgt, session_file=Path(session) if session else None)
    app._attnviz_window = window  # the window shown (View → Language replaces it)
    install_error_hook(window)
    window.show()
    return app.exec()


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
