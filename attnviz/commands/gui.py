"""``attnviz`` / ``attnviz gui``: open the desktop app."""

from __future__ import annotations

import argparse
import os
import sys

HELP = "open the desktop app (the default when no command is given)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="DIR", help="model bundle folder to open (default: the bundled models/zh-en)")
    p.add_argument("--src", metavar="TEXT", help="source sentence to decode at start")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence (teacher-forced mode)")
    p.add_argument("--session", metavar="FILE", help="open a session file (.attnviz): the window as it was saved")


def has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM"):
        return True  # the user chose a platform (offscreen, vnc, ...)
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def run(args: argparse.Namespace) -> int:
    from attnviz.errors import CommandError

    if not has_display():
        raise CommandError(
            "the desktop app needs a display (no DISPLAY or WAYLAND_DISPLAY is set). "
            "Run it in a desktop session, or use the headless commands: attnviz train|translate|trace|export --help",
            code=2,
        )
    session = getattr(args, "session", None)
    if session:
        from attnviz.qt.session_file import is_model_folder
        from attnviz.qt.state import SessionFileError, load_state

        try:
            state = load_state(session)  # a file that cannot be restored is refused before the window opens
        except SessionFileError as exc:
            raise CommandError(str(exc), code=2) from None
        folder = state.model_path
        if folder and os.path.isdir(folder) and not is_model_folder(folder):
            raise CommandError(f"{session}: the session's model folder {folder} is not a model folder (it holds no config.json)", code=2)
    from attnviz.qt.app import run_app

    return run_app(model=getattr(args, "model", None), src=getattr(args, "src", None), tgt=getattr(args, "tgt", None), session=session)
