"""The errors every layer shares. Each carries a one-line message meant for the user.

Every expected failure derives from ``AttnvizError``: the command line prints it as
``attnviz: error: <message>`` and exits with ``code``; the app shows it in the message bar as
plain text. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class AttnvizError(Exception):
    """An expected failure with a one-line message; ``code`` is the command line's exit status."""

    code = 1


class CommandError(AttnvizError):
    """A bad request (an argument, a path, a view name) noticed before or while doing the work."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code
