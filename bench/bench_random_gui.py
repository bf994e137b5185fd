"""A seeded random user drives the main window through 10,000 actions on the default model and
10,000 more spread over every family's tiny random model (typing random Unicode,
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
sys.path.insert(0, str(ROOT / "tests"))  # the tiny families

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
            walked = _walk_families(window, tmp_path, actions, seed, out)
        seconds = time.perf_counter() - t0
        after = rss_mb()
        window.close()
        window.deleteLater()
        QtWidgets.QApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    out(f"random GUI: {actions} actions on the default model and {walked} over the families (seed {seed}) in {seconds:.1f} s "
        f"({(actions + walked) / seconds:.0f}/s); "
        f"{len(errors)} uncaught exception(s)")
    out(f"  RSS before {before:.0f} MiB, after {after:.0f} MiB ({after - before:+.0f} MiB)")
    out("  actions: " + ", ".join(f"{k} {v}" for k, v in sorted(user.counts.items())))
    if errors:
        out(errors[0])
    return 1 if errors else 0


FAMILIES = ("bart", "mbart", "t5", "t5-v1.1", "gpt2", "bert")


def _family_folder(name: str, folder: Path) -> Path:
    from tiny_families import build_bart, build_bert, build_gpt2, build_t5

    build = {"bart": build_bart, "mbart": lambda f: build_bart(f, mbart=True), "t5": build_t5,
             "t5-v1.1": lambda f: build_t5(f, v1_1=True, seed=1), "gpt2": build_gpt2, "bert": build_bert}[name]
    return build(folder / f"tiny-{name}")


def _walk_families(window, tmp_path: Path, actions: int, seed: int, out) -> int:
    """The same walk over every family's tiny random model (``actions`` spread over them); the
    number of actions walked (0 without ``transformers``)."""
    from random_gui import RandomUser

    try:
        import transformers  # noqa: F401
    except ImportError:
        out("  families: transformers is not installed; left out")
        return 0
    each = max(1, actions // len(FAMILIES))
    for i, name in enumerate(FAMILIES):
        path = _family_folder(name, tmp_path / "families")
        window.open_model(path)
        _wait(window)
        RandomUser(window, seed + i + 1, tmp_path / "exports", [], lambda: _wait(window)).run(each)
        _wait(window)
    out(f"  families: {each} actions on each of {', '.join(FAMILIES)}")
    return each * len(FAMILIES)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--actions", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    return run(actions=a.actions, seed=a.seed)


if __name__ == "__main__":
    sys.exit(main())
