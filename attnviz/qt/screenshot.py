"""Regenerate the README's screenshot of the main window:
``python -m attnviz.qt.screenshot [OUT.png] [--size WxH] [--theme light|dark] [--language zh_CN] [--tour STOP]``.

Runs offscreen unless a platform is set (under a real X server, e.g. ``xvfb-run -a -s "-screen 0
1920x1080x24"`` with ``QT_QPA_PLATFORM=xcb``, the window is what a user sees); opens the bundled
default model at 1366×768 (the default), decodes an example sentence to the end and saves the
window as a PNG (default ``resources/screenshot.png``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SIZE = (1366, 768)  # the README's screenshot: a common laptop screen


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m attnviz.qt.screenshot")
    p.add_argument("out", nargs="?", help="PNG file (default: resources/screenshot.png)")
    p.add_argument("--size", default=f"{SIZE[0]}x{SIZE[1]}", help="window size WxH (default %(default)s)")
    p.add_argument("--theme", default="light", choices=("light", "dark"))
    p.add_argument("--language", default="en", help="the interface's language: en or zh_CN (default %(default)s)")
    p.add_argument("--tour", metavar="STOP", help="open the guided tour at this stop (its id in resources/tour/*.json)")
    return p.parse_args(argv)


def _wait_until(app, ready, timeout_ms: int = 60000) -> None:
    """Run the event loop until ``ready()`` (the decode, the examples and the corpus lookup are
    done: the screenshot shows answers, not "looking it up…") or the timeout has passed."""
    from PySide6 import QtCore

    deadline = QtCore.QDeadlineTimer(timeout_ms)
    while not ready() and not deadline.hasExpired():
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)


def _decoded(app, window, width: int, height: int) -> None:
    """Show ``window`` at ``width``×``height`` and wait until its sentence is decoded and looked up."""
    from PySide6 import QtCore

    window.resize(width, height)
    window.show()
    done = {"ok": False}
    window.session.runFinished.connect(lambda: done.__setitem__("ok", True))
    bar = window.input_bar
    _wait_until(app, lambda: done["ok"] and not bar.hints_pending() and not bar.source_info.lookup_pending())
    window.resize(width, height)  # a window manager may have placed it; the size is what counts
    for _ in range(20):
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 20)


def _at_stop(app, window, language: str, stop: str) -> None:
    """The guided tour open at ``stop``, its view raised and its numbers filled in."""
    from PySide6 import QtCore

    from attnviz.qt.tour import start_tour

    panel = start_tour(window, language)
    panel.go(panel.tour.index(stop))
    _wait_until(app, lambda: panel.ready, 120000)  # explained: its exercise, if any, is asked now
    host, bar = panel.exercises, window.input_bar
    _wait_until(app, lambda: host.stop is None or host.stop.exercise is None or host.exercise is not None, 120000)  # its answer computed
    host.skip()  # a stop that asks first: the picture shows its view and text, answered
    _wait_until(app, lambda: not bar.hints_pending() and not bar.source_info.lookup_pending())  # the stop's sentence looked up
    window.session.analyses.wait(30)
    for _ in range(20):
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 20)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from PySide6 import QtCore

    from attnviz.paths import resource
    from attnviz.qt.app import make_app
    from attnviz.qt.i18n import install
    from attnviz.qt.main_window import MainWindow

    width, height = (int(v) for v in args.size.lower().split("x"))
    out = Path(args.out) if args.out else resource("screenshot.png")
    app = make_app()
    install(args.language)
    settings = QtCore.QSettings(str(Path(os.environ.get("TMPDIR", "/tmp")) / "attnviz-screenshot.ini"), QtCore.QSettings.Format.IniFormat)
    settings.clear()
    settings.setValue("view/theme", args.theme)
    window = MainWindow(src="医生救了他的生命。", settings=settings)
    _decoded(app, window, width, height)
    # a head that aligns words, chosen as a click on its tile does: every linked view follows it
    window.views.selection.update(kind="cross", layer=2, head=2, mode="head")
    for _ in range(10):
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 20)
    window.session.analyses.wait(30)  # the views computed in workers are drawn too
    if args.tour:
        _at_stop(app, window, args.language, args.tour)
    window.grid.setFocus()
    image = window.grab()
    out.parent.mkdir(parents=True, exist_ok=True)
    ok = image.save(str(out))
    window.close()
    print(f"{'saved' if ok else 'could not save'} {out} ({image.width()}x{image.height()})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
