"""Atomic file writes: a temporary file in the destination's folder, then a rename.

A write that fails (or is killed) at any moment leaves the previous file, or nothing, never a
partial one. Callers turn the ``OSError`` into their own one-line message.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically, with the permissions a plain ``open`` would give.

    Raises ``OSError`` (nothing is left behind) when the folder is missing or not writable, or
    the write fails midway.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
