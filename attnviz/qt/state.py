"""The whole window as one value, :class:`AppState`, and its file: a session (``.attnviz``).

A session file is versioned JSON written atomically. It holds what the user did, never the
model's numbers: the model's folder and a hash of its weights, the sentences, the strategy, the
heads ablated, the tokens decoded (and which were forced), the cursor, the linked selection and the unlinked
views' own ones, each view's options, the dock layout, theme, colormap and language. Opening it
restores the window: the model is opened (when it is not open already), the tokens are decoded
again, and the selections and options are applied to the views.

Reading is strict: a damaged file, one of a later format version, one whose fields have the
wrong types, or one whose numbers are out of range (a strategy's parameters outside
``decoding.strategies``' ranges, a view's option or selection no Qt control holds) is refused with
one line, before anything in the window changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from attnviz.core.atomic import atomic_write_bytes
from attnviz.core.bundle import CONFIG, CONFIG_LIMIT, WEIGHTS, WEIGHTS_SLACK
from attnviz.core.decoding.strategies import BeamSearch, DecodingError, Greedy, Sampling
from attnviz.core.model.config import MAX_PARAMETERS, shown
from attnviz.errors import AttnvizError
from attnviz.qt.i18n import translate

FORMAT = "attnviz-session"
VERSION = 1
SUFFIX = ".attnviz"
MAX_BYTES = 4 * 1024 * 1024  # a session file is small: a larger one is not one of ours
# What "the same model" means: these files, each hashed only when it is no larger than the bundle
# loader ever reads (its config cap; float32 weights of the parameter budget): a larger file is no
# model it opens, and is not read on the window's thread (it has no hash, as a missing file).
HASHED_FILES = {CONFIG: CONFIG_LIMIT, WEIGHTS: 4 * MAX_PARAMETERS + WEIGHTS_SLACK}
QT_INT_MAX = 2**31 - 1  # the largest number a Qt control holds (a C int): a view's option or selection is at most this
STRATEGIES = {"greedy": Greedy, "beam": BeamSearch, "sample": Sampling}  # a session file's strategy names


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
        except ValueError:  # an integer of more digits than Python reads (4,300)
            raise SessionFileError(translate("state", "{file}: damaged session file (a number too long to read)").format(file=where)) from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise SessionFileError(translate("state", "{file}: not an attnviz session file").format(file=where))
        version = raw.get("version")
        if not isinstance(version, int) or version < 1:
            raise SessionFileError(translate("state", "{file}: damaged session file (no format version)").format(file=where))
        if version > VERSION:
            raise SessionFileError(translate("state", "{file}: written by a newer attnviz (session format {version}; this one reads up to {readable})")
                                   .format(file=where, version=version, readable=VERSION))
        state = cls(**{f.name: _checked(f.name, raw[f.name], where) for f in fields(cls) if f.name in raw})
        strategy_from_dict(state.strategy)
        _check_controls(state, where)
        return state


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


def _check_controls(state: AppState, where: str) -> None:
    """:class:`SessionFileError` for a number of a view's options or selections that no Qt control
    holds (an integer past a C int, an infinite or NaN number)."""
    groups = {"selection": state.selection, **{f"own.{n}": d for n, d in state.own.items()}, **{f"options.{n}": d for n, d in state.options.items()}}
    for group, values in groups.items():
        for key, value in values.items() if isinstance(values, dict) else ():
            if not _fits_a_control(value):
                raise SessionFileError(translate("state", "{file}: damaged session file ({field} holds {value}, out of range)").format(
                    file=where, field=f"{group}.{key}", value=shown(value)))


def _fits_a_control(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return not isinstance(value, int) or -QT_INT_MAX - 1 <= value <= QT_INT_MAX


def strategy_to_dict(strategy: Greedy | Sampling | BeamSearch) -> dict:
    name = next(name for name, cls in STRATEGIES.items() if isinstance(strategy, cls))
    return {"name": name, **asdict(strategy)}


def strategy_from_dict(d: dict) -> Greedy | Sampling | BeamSearch:
    """The strategy ``d`` describes; :class:`SessionFileError` for an unknown one or parameters out of their range."""
    name = d.get("name")
    cls = STRATEGIES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise SessionFileError(translate("state", "unknown decoding strategy {name} in the session file").format(name=shown(name)))
    try:
        return cls(**{k: v for k, v in d.items() if k != "name"})
    except (TypeError, ValueError, DecodingError) as exc:
        raise SessionFileError(translate("state", "bad parameters of the {name} strategy in the session file: {error}").format(
            name=name, error=exc)) from None


def model_hash(folder: str | os.PathLike) -> str | None:
    """sha256 over the model's config and weights (``None`` when a file is missing, unreadable, or
    larger than the loader reads: no file is read past its :data:`HASHED_FILES` size)."""
    digest = hashlib.sha256()
    try:
        for name, limit in HASHED_FILES.items():
            path = Path(folder) / name
            if not path.is_file() or path.stat().st_size > limit:
                return None
            digest.update(name.encode())
            if not _hash_file(digest, path, limit):
                return None
    except OSError:
        return None
    return digest.hexdigest()


def _hash_file(digest, path: Path, limit: int) -> bool:
    """Feed ``path`` into ``digest``, at most ``limit`` bytes (``False``: it held more, having grown)."""
    left = limit + 1
    with open(path, "rb") as fh:
        while chunk := fh.read(min(1 << 20, left)):
            digest.update(chunk)
            left -= len(chunk)
    return left > 0


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
