"""How the app's Python interpreter runs beside Qt: when garbage is collected, and what later
collections leave out.

The GIL's switch interval stays Python's 5 ms. 0.5 ms made the launch faster while the corpus
look-up ran in a worker (5.4 s against 7.0 s to the first decoded view), but while training it
gave no clearer UI (p99 timer lateness 44-50 ms against 36-54 ms, two runs each) and 7 % fewer
training steps a second (``bench/bench_ui.py``)."""

from __future__ import annotations

import gc

from PySide6 import QtWidgets


def set_up(app: QtWidgets.QApplication) -> None:
    """Once per app: cyclic garbage is collected only in the GUI thread, on a timer (a collection
    that happens to run in a worker thread and frees a Qt object there crashes Qt)."""
    if hasattr(app, "_attnviz_gc"):
        return
    from pyqtgraph.util.garbage_collector import GarbageCollector

    app._attnviz_gc = GarbageCollector(interval=1.0)


def freeze_survivors(*_args: object) -> None:
    """Collect, then leave what survives (modules, the open model, the corpora) out of later
    collections: a full collection of what is alive once a model is open took 0.2 s of the UI
    thread. Objects still die by reference counting; only cycles among them would no longer be found."""
    gc.collect()
    gc.freeze()
