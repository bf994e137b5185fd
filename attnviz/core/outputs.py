"""The files attnviz makes for the user (a web page, an animation, exported figures and data) and
the rules for writing them: nothing attnviz did not write is replaced, no symbolic link is written
through, and no output is started that would take more memory than :data:`FRAMES_BUDGET`.

**Whose file it is.** Every output carries a mark, ``attnviz-output: sha256=<64 hex digits>``:
the SHA-256 of the file as it is without the mark, kept where the format keeps a comment (PNG: a
``tEXt`` chunk before ``IEND``; GIF: a comment extension before the trailer; NPZ: the zip comment;
MP4: a ``free`` box at the end; HTML and SVG: a comment at the end; PDF: a ``%`` line at the end;
CSV: a ``# attnviz-output: …`` line first, among the ``# key: value`` lines a CSV opens with). A
file is attnviz's own (:func:`is_ours`) when the mark is where its format puts it and the rest of
the file still hashes to it: a page or a figure edited since it was written is not, and is left
alone like any other file. Only the mark's bytes are read to find it; a file that has one is then
read through, a megabyte at a time, to check the hash.

**Writing** (:func:`write_output`): the destination is looked at with ``lstat`` and never opened
unless it is a regular file; then it is opened without waiting (``O_NONBLOCK``) and without
following a link (``O_NOFOLLOW``), and checked again once open. A symbolic link, a folder, a pipe,
a device or a socket is refused, and so is a regular file that is not attnviz's own. The write
itself is atomic (:mod:`attnviz.core.atomic`). Every refusal is an :class:`OutputError`, one line
that names the path.

**Memory** (:func:`check_frames_memory`): an animation or a web page holds all its frames while it
is made. Their memory is estimated before any frame is drawn, as frames × frame width × frame height
× :data:`FRAME_BYTES_PER_PIXEL`, and refused in one line above :data:`FRAMES_BUDGET`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

from attnviz.core.atomic import atomic_write_bytes
from attnviz.errors import AttnvizError

FRAMES_BUDGET = 2 * 2**30  # bytes the frames of one animation or web page may take while it is made
FRAME_BYTES_PER_PIXEL = 8  # a frame as drawn (RGB32, 4 bytes) and the copy its output holds (a GIF's or MP4's frame, a page's PNG)
MAX_FRAME_SIDE = 65_535  # pixels: the widest or tallest frame a GIF can hold
READ_CHUNK = 2**20  # bytes read at a time to check a mark's hash

_SIGN = b"attnviz-output: sha256="
_HEX_DIGITS = 64
_PNG_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"


class OutputError(AttnvizError):
    """An output that is not written (a file attnviz did not write, a link, too much memory): one line."""


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


# Per format: the bytes every unmarked file of it ends with, what replaces them given the sign (the
# mark), and whether the mark opens the file instead (then nothing is replaced).
_MARKS: dict[str, tuple[bytes, Callable[[bytes], bytes], bool]] = {
    "png": (_PNG_IEND, lambda m: _png_chunk(b"tEXt", b"Comment\x00" + m) + _PNG_IEND, False),
    "gif": (b";", lambda m: b"\x21\xfe" + bytes([len(m)]) + m + b"\x00;", False),
    "npz": (b"\x00\x00", lambda m: struct.pack("<H", len(m)) + m, False),  # the zip comment's length, then the comment
    "mp4": (b"", lambda m: struct.pack(">I", 8 + len(m)) + b"free" + m, False),
    "html": (b"\n", lambda m: b"\n<!-- " + m + b" -->\n", False),
    "svg": (b"\n", lambda m: b"\n<!-- " + m + b" -->\n", False),
    "pdf": (b"\n", lambda m: b"\n%" + m + b"\n", False),
    "csv": (b"", lambda m: b"# " + m + b"\n", True),
}
OUTPUT_FORMATS = tuple(_MARKS)


def _format(path: Path) -> str | None:
    fmt = path.suffix.lower().lstrip(".")
    return fmt if fmt in _MARKS else None


def marked(data: bytes, fmt: str) -> bytes:
    """``data`` (a whole ``fmt`` file) with its mark. A text format marked at its end gets a final
    newline first."""
    end, mark, first = _MARKS[fmt]
    if end == b"\n" and not data.endswith(end):
        data += end
    if not data.endswith(end) or (fmt == "npz" and data[-22:-18] != b"PK\x05\x06"):
        raise ValueError(f"not a whole {fmt} file: it cannot carry attnviz's mark")
    sign = _SIGN + hashlib.sha256(data).hexdigest().encode("ascii")
    return mark(sign) + data if first else data[: len(data) - len(end)] + mark(sign)


def is_ours(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file (not a link) attnviz wrote and nobody changed since."""
    path = Path(path)
    fmt = _format(path)
    if fmt is None:
        return False
    end, mark, first = _MARKS[fmt]
    size_of_mark = len(mark(_SIGN + b"0" * _HEX_DIGITS))
    try:
        with _open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < size_of_mark:
                return False
            fh.seek(0 if first else size - size_of_mark)
            found = fh.read(size_of_mark)
            start = found.find(_SIGN)
            sign = found[start: start + len(_SIGN) + _HEX_DIGITS]
            if start < 0 or mark(sign) != found:
                return False
            fh.seek(size_of_mark if first else 0)
            digest = _hash(fh, size - size_of_mark)
    except (OSError, _NotRegular):
        return False
    digest.update(b"" if first else end)
    return hmac.compare_digest(digest.hexdigest().encode("ascii"), sign[len(_SIGN):])


class _NotRegular(Exception):
    """The path is not a regular file (or stopped being one)."""


def _open_regular(path: Path):
    """``path`` opened for reading, only if it is a regular file: checked before (``lstat``) and
    after the open, which neither waits (a pipe) nor follows a link."""
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise _NotRegular
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fh = os.fdopen(os.open(path, flags), "rb")
    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
        fh.close()
        raise _NotRegular
    return fh


def _hash(fh, size: int):
    """The SHA-256 of the next ``size`` bytes of ``fh``, read a chunk at a time."""
    digest = hashlib.sha256()
    while size > 0:
        chunk = fh.read(min(READ_CHUNK, size))
        if not chunk:
            raise _NotRegular  # it shrank while read
        digest.update(chunk)
        size -= len(chunk)
    return digest


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link (attnviz never writes through one)"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    return "a device or a socket" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode) else "not a regular file"


def check_output(path: str | os.PathLike) -> Path:
    """``path``, when an output may be written there: nothing is there yet, or a file attnviz wrote
    and nobody changed since. ``OutputError`` (one line naming the path) otherwise."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return path  # nothing there (a folder on the way that is missing or not a folder is the caller's to say)
    except OSError as exc:
        raise OutputError(f"cannot look at {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path} is {_kind(mode)}: it is left alone; choose another name")
    if not is_ours(path):
        raise OutputError(f"{path} exists and is not a file attnviz wrote (or was changed since): it is left alone; "
                          "choose another name or move it away")
    return path


def write_output(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` (a whole file of the format ``path``'s suffix names) to ``path`` with its mark,
    atomically, after :func:`check_output`. ``OutputError`` when refused; ``OSError`` when the write
    fails (nothing is left behind then)."""
    path = check_output(path)
    fmt = _format(path)
    if fmt is None:
        raise ValueError(f"{path.name}: attnviz writes no output of this kind")
    return atomic_write_bytes(path, marked(data, fmt))


def frames_memory(frames: int, width: int, height: int) -> int:
    """Bytes ``frames`` frames of ``width`` × ``height`` pixels take while their output is made."""
    return frames * width * height * FRAME_BYTES_PER_PIXEL


def check_frames_memory(frames: int, width: int, height: int, max_frame_pixels: int) -> None:
    """Refuse, before any is drawn, ``frames`` frames of ``width`` × ``height`` pixels that would
    take more than :data:`FRAMES_BUDGET`, or one frame larger than ``max_frame_pixels`` or
    :data:`MAX_FRAME_SIDE`: ``OutputError``, one line with the estimate and the limit."""
    limit = f"{max_frame_pixels / 1e6:g} megapixels" if width * height > max_frame_pixels else f"{MAX_FRAME_SIDE:,} pixels on a side"
    if width * height > max_frame_pixels or max(width, height) > MAX_FRAME_SIDE:
        raise OutputError(f"one frame would be {width:,} x {height:,} pixels, more than {limit}: choose a smaller size or fewer views")
    need = frames_memory(frames, width, height)
    if need > FRAMES_BUDGET:
        raise OutputError(f"{frames} frames of {width:,} x {height:,} pixels would take about {need / 2**30:.1f} GiB of memory "
                          f"({FRAME_BYTES_PER_PIXEL} bytes a pixel), more than the {FRAMES_BUDGET / 2**30:g} GiB budget "
                          "of an animation or page: choose a smaller size, fewer views or a shorter sentence")
