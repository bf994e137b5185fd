"""The whole window as one value, :class:`AppState`, and its file: a session (``.attnviz``).

A session file is versioned JSON written atomically. It holds what the user did, never the
model's numbers: the model's folder and a hash of its weights, the sentences, the strategy, the
heads ablated, the tokens decoded (and which were forced), the cursor, the linked selection and the unlinked
views' own ones, each view's options, the dock layout, theme, colormap and language. Opening it
restores the window: the model is opened (when it is not open already), the tokens are decoded
again, and the selections and options are applied to the views.

Reading is strict: a damaged file, one of a later format version, or one whose fields have the
wrong types is refused with one line, before anything in the window changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from attnviz.core.atomic import atomic_write_bytes
from attnviz.errors import AttnvizError
from attnviz.qt.i18n import translate

FORMAT = "attnviz-session"
VERSION = 1
SUFFIX = ".attnviz"
MAX_BYTES = 4 * 1024 * 1024  # a session file is small: a larger one is not one of ours
HASHED_FILES = ("config.json", "model.safetensors")  # what "the same model" means


class SessionFileError(AttnvizError):
    """A session file that cannot be read or written: the message says which and why, in one line."""


@dataclass
class AppState:
    """Everything the window shows, as plain data (JSON types only)."""

    model_path: str | None = None  # the model's folder, as opened
    model_hash: str | None = None  # sha256 of HASHED_FILES: a changed model is noticed
    source: str = ""
    target: str = ""  # a typed target: teacher-forced mode
    strategy: dict[str, Any] = field(default_factory=lambda: {"name": "greedy"})
    tokens: list[int] = field(default_factory=list)  # the decoded target ids after SOS (free decoding)
    forced: list[int] = field(default_factory=list)  # 0-based steps the user forced
    cursor: int | None = None  # teacher-forced mode: the 0-based position shown
    decode_as_you_type: bool = True
    selection: dict[str, Any] = field(default_factory=dict)  # the linked selection (qt.selection.Selection)
    own: dict[str, dict[str, Any]] = field(default_factory=dict)  # unlinked views: view name → its selection
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # view name → its controls' values
    layout: str = ""  # MainWindow.layout_state, base64 (one of an older layout version is not applied: the default layout)
    geometry: str = ""  # QMainWindow.saveGeometry, base64
    theme: str = "light"
    colormap: str = ""
    language: str = "en"
    ablation: dict[str, Any] = field(default_factory=lambda: {"heads": "", "kind": "zero"})  # heads as on screen (cross:3:2,…)

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "version": VERSION, **asdict(self)}, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str, where: str = "") -> AppState:
        """The state in ``text`` (``where``: the file's name, for messages); :class:`SessionFileError`
        for anything that is not one of ours."""
        where = where or translate("state", "session file")
        try:
            raw = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise SessionFileError(translate("state", "{file}: not a session file (damaged JSON: {error})").format(file=where, error=exc)) from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise SessionFileError(translate("state", "{file}: not an attnviz session file").format(file=where))
        version = raw.get("version")
        if not isinstance(version, int) or version < 1:
            raise SessionFileError(translate("state", "{file}: damaged session file (no format version)").format(file=where))
        if version > VERSION:
            raise SessionFileError(translate("state", "{file}: written by a newer attnviz (session format {version}; this one reads up to {readable})")
                                   .format(file=where, version=version, readable=VERSION))
        return cls(**{f.name: _checked(f.name, raw[f.name], where) for f in fields(cls) if f.name in raw})


_TYPES: dict[str, tuple[type, ...]] = {
    "model_path": (str, type(None)), "model_hash": (str, type(None)), "source": (str,), "target": (str,),
    "strategy": (dict,), "tokens": (list,), "forced": (list,), "cursor": (int, type(None)),
    "decode_as_you_type": (bool,), "selection": (dict,), "own": (dict,), "options": (dict,),
    "layout": (str,), "geometry": (str,), "theme": (str,), "colormap": (str,), "language": (str,), "ablation": (dict,),
}


def _checked(name: str, value: Any, where: str) -> Any:
    if not isinstance(value, _TYPES[name]) or (name in ("tokens", "forced") and not all(type(v) is int and v >= 0 for v in value)):
        raise SessionFileError(translate("state", "{file}: damaged session file ({field} has the wrong type)").format(file=where, field=repr(name)))
    return value


def model_hash(folder: str | os.PathLike) -> str | None:
    """sha256 over the model's config and weights (``None`` when a file is missing or unreadable)."""
    digest = hashlib.sha256()
    try:
        for name in HASHED_FILES:
            path = Path(folder) / name
            if not path.is_file():
                return None
            digest.update(name.encode())
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def encode_bytes(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def decode_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return b""


def save_state(state: AppState, path: str | os.PathLike) -> Path:
    """Write ``state`` to ``path`` atomically (``.attnviz`` added when it has no suffix)."""
    path = Path(path)
    if not path.suffix:
        path = path.with_suffix(SUFFIX)
    try:
        atomic_write_bytes(path, state.to_json().encode("utf-8"))
    except OSError as exc:
        raise SessionFileError(translate("state", "could not save the session to {path}: {error}").format(path=path, error=exc.strerror or exc)) from None
    return path


def load_state(path: str | os.PathLike) -> AppState:
    """The state in the session file ``path``: a regular file of at most :data:`MAX_BYTES`."""
    path = Path(path)
    try:
        if not path.is_file():
            why = translate("state", "{file}: no such session file") if not path.exists() else translate("state", "{file}: not a regular file")
            raise SessionFileError(why.format(file=path))
        if path.stat().st_size > MAX_BYTES:
            raise SessionFileError(translate("state", "{file}: too large for a session file (over {mib} MiB)").format(file=path, mib=MAX_BYTES // (1024 * 1024)))
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SessionFileError(translate("state", "{file}: not a session file (not UTF-8 text)").format(file=path)) from None
    except OSError as exc:
        raise SessionFileError(translate("state", "{file}: could not read the session file: {error}").format(file=path, error=exc.strerror or exc)) from None
    return AppState.from_json(text, where=str(path))
