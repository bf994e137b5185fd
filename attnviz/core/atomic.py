"""Atomic file writes: a temporary file in the destination's folder, then a rename.

A write that fails (or is killed) at any moment leaves the previous file, or nothing, never a
partial one. A new file never replaces one that appeared while it was written (another
program's). Only regular files are ever replaced: a symbolic link is written through (the link
stays, its target gets the new contents) and a device, pipe, socket or folder is refused.
Callers turn the ``OSError`` into their own one-line message.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_target(path: str | os.PathLike) -> tuple[Path, int | None]:
    """Where a write to ``path`` lands (``path``, or the file a symbolic link points to) and the
    permission bits of the file it replaces (``None`` when there is none yet).

    Raises ``OSError`` for a folder, a device, a pipe or a socket: those are never replaced.
    """
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target, None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "it is a folder", str(path))
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file (a device, pipe or socket is never replaced)", str(path))
    return target, stat.S_IMODE(st.st_mode)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically. A new file gets the permissions a plain ``open`` would
    give; a replaced file keeps its own. Returns the path written (a symbolic link's target).

    Raises ``OSError`` (nothing is left behind) when the destination is not a regular file, its
    folder is missing or not writable, or the write fails midway.
    """
    path, mode = write_target(path)
    parent = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o666 & ~current_umask())
        if mode is None:
            _put_new(tmp, path)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def _put_new(tmp: str, path: Path) -> None:
    """Move ``tmp`` to ``path``, where nothing was when the write began, without replacing a file
    that appeared there meanwhile (another program's): a hard link fails when the name is taken.
    On a file system without hard links, a rename."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "a file appeared there while this one was written; it is left alone", str(path)) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        os.replace(tmp, path)
        return
    os.unlink(tmp)
