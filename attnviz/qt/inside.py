"""The panels that show the rest of the inside: positional encoding, norm statistics, the output
distribution, the one-head walkthrough and training. Built and refreshed from the session."""

from __future__ import annotations

from PySide6 import QtWidgets

from .session import Session


class InsidePanels:
    def __init__(self, window: QtWidgets.QMainWindow, session: Session):
        self.window = window
        self.session = session
        self._views: list[tuple[str, QtWidgets.QWidget, str]] = []

    def views(self) -> list[tuple[str, QtWidgets.QWidget, str]]:
        return list(self._views)

    def refresh(self, view: QtWidgets.QWidget) -> None:
        pass

    def confirm_close(self, parent: QtWidgets.QWidget) -> bool:
        return True

    def shutdown(self) -> None:
        pass
