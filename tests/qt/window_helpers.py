"""The real main window for tests and benchmarks: opened on the bundled model with its first
example decoded, settings in a temporary file; and small bundles that cannot be opened."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from attnviz.paths import default_model
from attnviz.qt.main_window import MainWindow

TIMEOUT_MS = 30000


def open_window(qtbot, tmp_path: Path) -> MainWindow:
    """A shown main window on the bundled model, its first sentence decoded to the end."""
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    qtbot.waitUntil(lambda: w.session.bundle is not None, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: w.session.decoding is not None and w.session.decoding.finished, timeout=TIMEOUT_MS)
    wait_idle(qtbot, w)
    return w


def wait_idle(qtbot, window: MainWindow) -> None:
    """Until no run to the end and no model load is in progress."""
    qtbot.waitUntil(lambda: not window.session.running and not window.session.loading, timeout=TIMEOUT_MS)
    QtWidgets.QApplication.processEvents()


def close_window(window: MainWindow) -> None:
    window.session.stop_run()
    window.session.wait_for_workers(5000)


def copy_bundle(dest: Path, source: Path | None = None) -> Path:
    """A copy of a bundle (the bundled model by default) at ``dest``."""
    shutil.copytree(source or default_model(), dest)
    return dest


def broken_config_bundle(dest: Path, **config) -> Path:
    """A copy of the bundled model whose config.json has ``config`` written over it."""
    copy_bundle(dest)
    path = dest / "config.json"
    cfg = json.loads(path.read_text(encoding="utf-8"))
    cfg.update(config)
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return dest
