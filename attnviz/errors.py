"""The errors every layer shares. Each carries a one-line message meant for the user.

Every expected failure derives from ``AttnvizError``: the command line prints it as
``attnviz: error: <message>`` and exits with ``code``; the app shows it in the message bar as
plain text. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

MAX_MESSAGE = 500  # characters of a message shown to the user


def one_line(text: object, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line (control characters and line breaks become spaces), cut at ``limit``."""
    flat = "".join(" " if (ch.isspace() or not ch.isprintable()) else ch for ch in str(text))
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class AttnvizError(Exception):
    """An expected failure with a one-line message; ``code`` is the command line's exit status."""

    code = 1


class CommandError(AttnvizError):
    """A bad request (an argument, a path, a view name) noticed before or while doing the work."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code
