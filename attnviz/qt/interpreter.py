"""How the app's Python interpreter runs beside Qt: when garbage is collected, and how often
threads take turns holding the GIL."""

from __future__ import annotations

import gc
import sys

from PySide6 import QtWidgets

SWITCH_INTERVAL_S = 0.0005  # sys.setswitchinterval (default 0.005): see set_up


def set_up(app: QtWidgets.QApplication) -> None:
    """Once per app:

    - Cyclic garbage is collected only in the GUI thread, on a timer: a collection that happens to
      run in a worker thread and frees a Qt object there crashes Qt.
    - A worker busy in Python (the corpus look-up, a training run) holds the GIL for up to the
      switch interval each time the UI thread's torch call or paint gives it up: at the default
      5 ms a launch's first step waited ~10 ms per tensor operation; 0.5 ms keeps the UI's turns short.
    """
    if hasattr(app, "_attnviz_gc"):
        return
    from pyqtgraph.util.garbage_collector import GarbageCollector

    app._attnviz_gc = GarbageCollector(interval=1.0)
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def freeze_survivors(*_args: object) -> None:
    """Collect, then leave what survives (modules, the open model, the corpora) out of later
    collections: a full collection of what is alive once a model is open took 0.2 s of the UI
    thread. Objects still die by reference counting; only cycles among them would no longer be found."""
    gc.collect()
    gc.freeze()
