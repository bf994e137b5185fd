"""A seeded random user drives the main window through 10,000 actions (typing random Unicode,
stepping, forcing, strategy and view changes, exports, opening bundles that cannot be opened):
any exception in the event loop fails the run; printed: actions per second and the process's
resident memory (RSS) before and after.

    python bench/bench_random_gui.py [--actions 10000] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "qt"))  # the random user shared with the tests

import smoke  # noqa: E402
from PySide6 import QtCore, QtWidgets  # noqa: E402


def _wait(window, seconds: float = 60.0) -> None:
    end = time.perf_counter() + seconds
    while (window.session.running or window.session.loading) and time.perf_counter() < end:
        QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
    QtWidgets.QApplication.processEvents()


def run(out=print, actions: int = 10000, seed: int = 0) -> int:
    from random_gui import RandomUser, recording_excepthook, rss_mb
    from window_helpers import broken_config_bundle

    from attnviz.qt.app import make_app
    from attnviz.qt.main_window import MainWindow

    actions = smoke.pick(actions, 40)
    app = make_app()  # noqa: F841 - the window needs it
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
        window = MainWindow(settings=settings)
        window.resize(1400, 900)
        window.show()
        while window.session.bundle is None or window.session.running or window.session.loading:
            QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
        _wait(window)
        (tmp_path / "exports").mkdir()
        bad = [broken_config_bundle(tmp_path / "<b>bad", norm="<h1>x</h1>"), tmp_path / "missing"]
        user = RandomUser(window, seed, tmp_path / "exports", bad, lambda: _wait(window))
        before = rss_mb()
        t0 = time.perf_counter()
        with recording_excepthook() as errors:
            user.run(actions)
            _wait(window)
        seconds = time.perf_counter() - t0
        after = rss_mb()
        window.close()
        window.deleteLater()
        QtWidgets.QApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    out(f"random GUI: {actions} actions (seed {seed}) in {seconds:.1f} s ({actions / seconds:.0f}/s); "
        f"{len(errors)} uncaught exception(s)")
    out(f"  RSS before {before:.0f} MiB, after {after:.0f} MiB ({after - before:+.0f} MiB)")
    out("  actions: " + ", ".join(f"{k} {v}" for k, v in sorted(user.counts.items())))
    if errors:
        out(errors[0])
    return 1 if errors else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--actions", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    return run(actions=a.actions, seed=a.seed)


if __name__ == "__main__":
    sys.exit(main())
