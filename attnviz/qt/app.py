"""QApplication set-up and the entry point of the desktop app."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6 import QtWidgets

ORG, APP = "attnviz", "attnviz"


def make_app(argv: list[str] | None = None) -> QtWidgets.QApplication:
    app = QtWidgets.QApplication.instance()
    if app is None:
        app = QtWidgets.QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    return app


def run_app(model: str | None = None, src: str | None = None, tgt: str | None = None) -> int:
    app = make_app()
    from .main_window import MainWindow

    window = MainWindow(model=Path(model) if model else None, src=src, tgt=tgt)
    window.show()
    return app.exec()
