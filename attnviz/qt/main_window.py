"""The main window. (Minimal until the GUI issue: states which model it loaded, or why it could not.)"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from attnviz.paths import default_model


class MainWindow(QtWidgets.QMainWindow):
    def __init__(self, model: Path | None = None, src: str | None = None, tgt: str | None = None):
        super().__init__()
        self.setWindowTitle("attnviz")
        self.model_path = model or default_model()
        self.bundle = None
        self.status = QtWidgets.QLabel(objectName="modelStatus")
        self.status.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.status.setWordWrap(True)
        self.setCentralWidget(self.status)
        self.resize(640, 240)
        self.load_model(self.model_path)

    def load_model(self, path: Path) -> None:
        from attnviz.core.bundle import BundleError, load_bundle

        try:
            self.bundle = load_bundle(path)
        except BundleError as exc:
            self.bundle = None
            self.status.setText(f"No model loaded.\n{exc}")
            return
        self.status.setText(f"Loaded model {self.bundle.name}\n{self.bundle.config.describe()}")
