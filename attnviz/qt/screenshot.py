"""Regenerate the README's screenshot of the main window: ``python -m attnviz.qt.screenshot [OUT.png]``.

Runs offscreen; opens the bundled default model, decodes an example sentence to the end and
saves the window as a PNG (default ``resources/screenshot.png``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from PySide6 import QtCore

    from attnviz.paths import resource
    from attnviz.qt.app import make_app
    from attnviz.qt.main_window import MainWindow

    out = Path(argv[0]) if argv else resource("screenshot.png")
    app = make_app()
    settings = QtCore.QSettings(str(Path(os.environ.get("TMPDIR", "/tmp")) / "attnviz-screenshot.ini"), QtCore.QSettings.Format.IniFormat)
    settings.clear()
    window = MainWindow(src="医生救了他的生命。", settings=settings)
    window.resize(1500, 950)
    window.show()
    done = {"ok": False}
    window.session.runFinished.connect(lambda: done.__setitem__("ok", True))
    deadline = QtCore.QDeadlineTimer(60000)
    while not done["ok"] and not deadline.hasExpired():
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
    for _ in range(20):
        app.processEvents()
    window.head_detail.select(kind="cross", layer=2, head=2, mode="head")  # a head that aligns words
    window.grid.set_selected(2, 2)
    for _ in range(10):
        app.processEvents()
    window.grid.setFocus()
    image = window.grab()
    out.parent.mkdir(parents=True, exist_ok=True)
    ok = image.save(str(out))
    window.close()
    print(f"{'saved' if ok else 'could not save'} {out} ({image.width()}x{image.height()})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
