"""One run owns an output folder: a lock file beside it, ``.NAME.lock``, holding the owner's pid.

``with output_lock(folder):`` is taken by whatever writes a model folder (a training run, an
import) for as long as it writes. A second writer of the same folder, in this process or
another, gets ``FolderLockedError`` (one line naming the owner's pid) instead of overwriting the
first run's work. The lock is an advisory ``flock`` on the file, which the system releases when
the owner exits, also by a crash or ``kill -9``: a lock file left behind by a dead owner is stale
and simply taken over (the next owner writes its own pid). A clean exit removes the file.

The file lives beside the folder (like ``.NAME.previous``), not inside it, so the folder itself
holds only bundle files, and a folder that does not exist yet can be locked too.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from attnviz.errors import AttnvizError

try:
    import fcntl
except ImportError:  # not a POSIX system: the pid in the file is the only test
    fcntl = None  # type: ignore[assignment]

LOCK_FILE_LIMIT = 4096  # bytes of a lock file read to name its owner


class FolderLockedError(AttnvizError):
    """The output folder belongs to another running run (one-line message)."""


def lock_path(folder: Path) -> Path:
    """Where the lock of ``folder`` is: ``.NAME.lock`` beside it."""
    folder = Path(os.path.abspath(folder))
    return folder.parent / f".{folder.name}.lock"


def owner(folder: Path) -> dict | None:
    """What the lock file of ``folder`` says about its owner (``pid``, ``host``, ``since``), or ``None``."""
    try:
        with open(lock_path(folder), "rb") as fh:
            info = json.loads(fh.read(LOCK_FILE_LIMIT).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def pid_alive(pid: object) -> bool:
    """Whether a process with this pid runs on this machine."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    except OSError:
        return False
    return True


@contextmanager
def output_lock(folder: str | os.PathLike, what: str = "run") -> Iterator[Path]:
    """Own ``folder`` for the duration of the block; ``FolderLockedError`` when another run owns it."""
    path = lock_path(Path(folder))
    fd = _acquire(path, Path(folder))
    try:
        os.ftruncate(fd, 0)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S"), "what": what}
        os.write(fd, json.dumps(info).encode())
        yield path
    finally:
        _release(path, fd)


def _acquire(path: Path, folder: Path) -> int:
    """An open, locked descriptor of the lock file ``path`` (the file at ``path`` now, not one a
    previous owner removed meanwhile)."""
    for _ in range(10):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise FolderLockedError(f"{folder}: cannot take the output folder's lock {path.name} ({exc.strerror or exc})") from None
        if not _lock(fd):
            os.close(fd)
            raise FolderLockedError(_refusal(folder))
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the owner removed the file between our open and lock: try the new one
    raise FolderLockedError(_refusal(folder))


def _lock(fd: int) -> bool:
    """Take the lock on ``fd`` without waiting; ``False`` when a live owner holds it."""
    if fcntl is None:
        try:
            pid = json.loads(os.pread(fd, LOCK_FILE_LIMIT, 0).decode("utf-8")).get("pid")
        except (OSError, ValueError, AttributeError):
            pid = None
        return not pid_alive(pid)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _refusal(folder: Path) -> str:
    info = owner(folder) or {}
    who = f"attnviz {info.get('what', 'run')} (pid {info['pid']}" if isinstance(info.get("pid"), int) else "attnviz run (pid unknown"
    since = f", since {info['since']})" if isinstance(info.get("since"), str) else ")"
    return f"{folder} is in use by another {who}{since}; wait for it to finish, or choose another folder"


def _release(path: Path, fd: int) -> None:
    """Remove the lock file (while still holding it, so no one takes a file about to vanish), then unlock."""
    try:
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)
