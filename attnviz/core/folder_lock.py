"""One run owns an output folder: a lock file beside it, ``.NAME.lock``, holding the owner's pid.

``with output_lock(folder):`` is taken by whatever writes a model folder (a training run, an
import) for as long as it writes. A second writer of the same folder, in this process or
another, gets ``FolderLockedError`` (one line naming the owner's pid) instead of overwriting the
first run's work. The lock is an advisory ``flock`` on the file, which the system releases when
the owner exits, also by a crash or ``kill -9``: a lock file left behind by a dead owner is stale
and simply taken over (the next owner writes its own pid). A clean exit removes the file.

The file lives beside the folder (like ``.NAME.previous``), not inside it, so the folder itself
holds only bundle files, and a folder that does not exist yet can be locked too.

Where ``flock`` is unavailable (no ``fcntl`` module, or a file system that refuses it), the pid in
the file is the lock: the file is created exclusively (``O_EXCL``), a second owner finds it and
is refused while that pid runs, and a file whose pid no longer runs is stale and taken over (moved
aside atomically first, so two runs taking over one stale file cannot both win).
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
FRESH_S = 10.0  # seconds a pid-less lock file counts as being written by its owner (the pid-file lock)
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}  # flock is not available on this file


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
    previous owner removed meanwhile): flocked, or where there is no flock created exclusively."""
    for _ in range(10):
        fd, created = _open_or_create(path, folder)
        if fd is None:
            continue  # removed between our two opens: try again
        locked = _lock(fd) if fcntl is not None else None
        if locked is None:  # no flock here: the pid in the file is the lock
            if created:
                return fd
            os.close(fd)
            if not _stale(path):
                raise FolderLockedError(_refusal(folder))
            _take_over(path)
            continue
        if not locked:
            os.close(fd)
            raise FolderLockedError(_refusal(folder))
        if _same_file(path, fd):
            return fd
        os.close(fd)  # the owner removed the file between our open and lock: try the new one
    raise FolderLockedError(_refusal(folder))


def _open_or_create(path: Path, folder: Path) -> tuple[int | None, bool]:
    """(descriptor, whether this call created the file); (None, False) when it vanished meanwhile."""
    try:
        return _open(path, folder, os.O_CREAT | os.O_EXCL), True
    except FileExistsError:
        pass
    try:
        return _open(path, folder, 0), False
    except FileNotFoundError:
        return None, False


def _same_file(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _open(path: Path, folder: Path, flags: int) -> int:
    """The lock file opened read-write with ``flags`` (``O_CREAT``, ``O_EXCL``); ``FileExistsError``
    and ``FileNotFoundError`` pass, any other problem is a one-line ``FolderLockedError``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | flags | getattr(os, "O_CLOEXEC", 0), 0o644)
    except (FileExistsError, FileNotFoundError):
        raise
    except OSError as exc:
        raise FolderLockedError(f"{folder}: cannot take the output folder's lock {path.name} ({exc.strerror or exc})") from None


def _lock(fd: int) -> bool | None:
    """Take the flock on ``fd`` without waiting: ``False`` when a live owner holds it, ``None``
    when this file system does not lock files."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        if exc.errno in _NO_FLOCK:
            return None
        raise FolderLockedError(f"cannot lock {exc.filename or 'the output folder'} ({exc.strerror or exc})") from None
    return True


def _pid_in(path: Path) -> tuple[object, float | None]:
    """(the pid a lock file names, or None; its age in seconds, or None when it is gone)."""
    try:
        age = time.time() - os.stat(path).st_mtime
        with open(path, "rb") as fh:
            pid = json.loads(fh.read(LOCK_FILE_LIMIT).decode("utf-8")).get("pid")
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, AttributeError):
        pid = None
    return pid, age


def _stale(path: Path) -> bool:
    """Whether the lock file at ``path`` belongs to no running owner (gone, a dead pid, or no pid
    for longer than an owner takes to write it)."""
    pid, age = _pid_in(path)
    if age is None:
        return True
    return not pid_alive(pid) if pid is not None else age > FRESH_S


def _take_over(path: Path) -> None:
    """Move a stale lock file aside and remove it; a file that turns out to be live once moved (a
    new owner's, created meanwhile) is put back."""
    aside = path.with_name(f"{path.name}.stale-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(path, aside)
    except OSError:
        return  # gone already: another run took it over
    if _stale(aside):
        os.unlink(aside)
        return
    try:
        os.link(aside, path)  # a new owner's file: back where it was (unless yet another owner is there)
    except OSError:
        pass
    os.unlink(aside)


def _refusal(folder: Path) -> str:
    info = _owner_once_written(folder)
    who = f"attnviz {info.get('what', 'run')} (pid {info['pid']}" if isinstance(info.get("pid"), int) else "attnviz run (pid unknown"
    since = f", since {info['since']})" if isinstance(info.get("since"), str) else ")"
    return f"{folder} is in use by another {who}{since}; wait for it to finish, or choose another folder"


def _owner_once_written(folder: Path, tries: int = 5, pause_s: float = 0.02) -> dict:
    """The lock's owner info; an owner that has just taken the lock may not have written its pid
    yet, so a missing pid is read again a few times (at most ``tries * pause_s`` seconds)."""
    info: dict = {}
    for _ in range(tries):
        info = owner(folder) or {}
        if isinstance(info.get("pid"), int):
            break
        time.sleep(pause_s)
    return info


def _release(path: Path, fd: int) -> None:
    """Remove the lock file (while still holding it, so no one takes a file about to vanish), then unlock."""
    try:
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)
