"""Reading the files of a model folder (an attnviz bundle, a training state, a Hugging Face folder)
without trusting them: one capped reader for all of them.

* Only regular files are read. A FIFO, a device (``/dev/zero``), a socket or a folder, also behind
  a symbolic link, is refused before it is opened, and the open itself never waits (``O_NONBLOCK``),
  so a FIFO swapped in at the last moment cannot block either.
* At most ``limit`` bytes are read: a larger file is refused by its size before any byte is read,
  and a file that grows while it is read is cut at ``limit + 1`` bytes and refused.
* JSON is parsed with a depth cap and without NaN or Infinity.
* A safetensors file's header is checked against the file (every tensor's byte range inside it,
  the sizes its dtypes and shapes declare) before its tensors are read.

Each caller names its own error class (``error(path, problem)``, an ``AttnvizError``), so a
bundle reports ``BundleError`` and an import ``HFImportError`` with the same words.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnviz.errors import AttnvizError

JSON_DEPTH = 32  # deepest nesting of lists and objects a model folder's JSON may have
HEADER_LIMIT = 100 * 2**20  # bytes of a safetensors header (the safetensors library's own cap)
# safetensors dtype name -> bytes per element
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}


class FileProblem(AttnvizError):
    """A file that cannot be read as what it should be; ``str(err)`` is ``PATH: problem``."""

    def __init__(self, path: str | os.PathLike, problem: str):
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


ErrorClass = Callable[[Path, str], Exception]


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(file: Path, mode: int) -> str:
    link = " (through a symbolic link)" if file.is_symlink() else ""
    return f"is {_kind(mode)}{link}, not a regular file; only regular files are read"


def regular_size(file: Path, error: ErrorClass = FileProblem) -> int:
    """The size of ``file``, a regular file (a symbolic link to one is fine); ``error`` otherwise,
    without opening it."""
    try:
        st = os.stat(file)
    except FileNotFoundError:
        raise error(file, "missing") from None
    except PermissionError:
        raise error(file, "permission denied: make it readable (chmod u+r)") from None
    except OSError as exc:
        raise error(file, f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(file, _not_regular(file, st.st_mode))
    return st.st_size


def _too_large(size: int, limit: int) -> str:
    return f"is {size:,} bytes; at most {limit:,} are read (not a file of a model folder?)"


def read_capped(file: Path, limit: int, error: ErrorClass = FileProblem) -> bytes:
    """The bytes of ``file``, a regular file of at most ``limit`` bytes; ``error`` (one line) otherwise."""
    size = regular_size(file, error)
    if size > limit:
        raise error(file, _too_large(size, limit))
    data = _read_regular(file, limit + 1, error)
    if len(data) > limit:
        raise error(file, f"is larger than {limit:,} bytes (it grew while being read)")
    return data


def _read_regular(file: Path, n: int, error: ErrorClass) -> bytes:
    """At most ``n`` bytes from the start of ``file``; the open never waits, and a file that is no
    longer regular once open (swapped after the check) is refused."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise error(file, _not_regular(file, mode))
            return fh.read(n)
    except PermissionError:
        raise error(file, "permission denied: make it readable (chmod u+r)") from None
    except OSError as exc:
        raise error(file, f"cannot be read ({exc.strerror or type(exc).__name__})") from None


def read_json_capped(file: Path, limit: int, error: ErrorClass = FileProblem) -> Any:
    """The JSON value of ``file`` (at most ``limit`` bytes, ``JSON_DEPTH`` levels, no NaN); ``error`` otherwise."""
    data = read_capped(file, limit, error)
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise error(file, "is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise error(file, f"is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise error(file, f"is nested too deeply (at most {JSON_DEPTH} levels)") from None
    except ValueError as exc:  # NaN or Infinity
        raise error(file, str(exc)) from None
    if json_depth(value) > JSON_DEPTH:
        raise error(file, f"is nested too deeply (at most {JSON_DEPTH} levels)")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"holds {name}, which is not a JSON number")


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (0 for a number or a string); no recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level <= JSON_DEPTH:
            todo.extend((child, level + 1) for child in children)
    return deepest


def read_safetensors_header(file: Path, error: ErrorClass = FileProblem) -> tuple[dict[str, dict[str, Any]], int]:
    """(tensor name -> {"dtype", "shape", "data_offsets"}, file size) of a safetensors ``file``,
    checked against the file: each tensor's bytes are those its dtype and shape declare, the
    tensors tile the data exactly, and the data ends where the file does. Reads only the header."""
    size = regular_size(file, error)
    head = _read_regular(file, 8, error)
    n = int.from_bytes(head, "little") if len(head) == 8 else -1
    if n < 2 or n > min(HEADER_LIMIT, size - 8):
        raise error(file, f"not a valid safetensors file (a header of {n:,} bytes does not fit in a file of {size:,})")
    try:
        header = json.loads(_read_regular(file, 8 + n, error)[8:].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        header = None
    if not isinstance(header, dict):
        raise error(file, "not a valid safetensors file (its header is not a JSON object)")
    header.pop("__metadata__", None)
    _check_tensor_entries(file, header, size - 8 - n, error)
    return header, size


def _check_tensor_entries(file: Path, header: dict[str, Any], data_size: int, error: ErrorClass) -> None:
    """``error`` unless every entry declares a known dtype, a shape and the bytes they need, and
    the entries tile ``data_size`` bytes exactly."""
    spans = []
    for name, entry in header.items():
        ok = isinstance(entry, dict) and entry.get("dtype") in DTYPE_BYTES and isinstance(entry.get("shape"), list)
        ok = ok and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in entry["shape"])
        offsets = entry.get("data_offsets") if ok else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) and o >= 0 for o in offsets)):
            raise error(file, f"not a valid safetensors file (tensor {name!r} has no valid dtype, shape and offsets)")
        count = math.prod(entry["shape"])
        if offsets[1] - offsets[0] != count * DTYPE_BYTES[entry["dtype"]]:
            raise error(file, f"not a valid safetensors file (tensor {name!r} of shape {entry['shape']} "
                              f"declares {offsets[1] - offsets[0]:,} bytes)")
        spans.append((offsets[0], offsets[1]))
    end = 0
    for start, stop in sorted(spans):
        if start != end:
            raise error(file, "not a valid safetensors file (its tensors overlap or leave gaps)")
        end = stop
    if end != data_size:
        raise error(file, f"not a valid safetensors file (its tensors hold {end:,} bytes, the file {data_size:,})")
