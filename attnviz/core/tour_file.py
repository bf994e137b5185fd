"""A teacher's tour as a file (``.attnviz-tour``): the stops recorded in the window written in
the tour format :mod:`attnviz.core.tour_data` reads (version 2), and the rules for writing it.

**Writing** (:func:`save_tour`): the document is read back through the tour loader before a byte
is written, so a file this writes always opens; then it is written atomically
(:mod:`attnviz.core.atomic`). A file already at the path is replaced only when attnviz wrote it
and nobody changed it since (:func:`is_our_tour`); any other file is left alone unless the
caller says the user agreed (``replace``; :class:`TourFileExists` asks it), and a link, a folder
or anything that is not a regular file is never replaced.

**Whose file it is**: as every output of attnviz (:mod:`attnviz.core.outputs`), a tour it writes
carries a mark, ``"attnviz-output": "sha256=<64 hex digits>"``, the last key of the document: the
SHA-256 of the file as it is without the mark. A file whose bytes are not exactly the document
with its mark (an edited tour, any other file) is not attnviz's own. No Qt.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attnviz.core.atomic import atomic_write_bytes
from attnviz.core.tour_data import FORMAT, MAX_BYTES, VERSION, VIEWS, StopState, TourError, parse_stop, parse_tour

SUFFIX = ".attnviz-tour"
MARK = "attnviz-output"  # the key of the mark: the last of a tour attnviz wrote
_SIGN = "sha256="


class TourFileExists(TourError):
    """A file attnviz did not write (or that was changed since) is where a tour would be saved:
    it is replaced only once the user agrees (``save_tour(..., replace=True)``)."""

    def __init__(self, path: Path):
        super().__init__(f"{path} exists and is not a tour attnviz wrote (or was changed since)")
        self.path = path


@dataclass(frozen=True)
class RecordedStop:
    """A stop as a teacher records it: the text in each language written (``en``, ``zh_CN``; at
    least one), the view raised, and the window's state (:class:`StopState`, 0-based)."""

    texts: dict[str, str]
    view: str
    state: StopState
    highlight: str = "view"


def stop_json(stop: RecordedStop) -> dict:
    """``stop`` as the tour file writes it (layers, heads and query rows from 1, as on screen)."""
    st = stop.state
    selection = {"kind": st.kind, "layer": st.layer + 1, "head": st.head + 1, "query": None if st.query is None else st.query + 1}
    state = {"source": st.source, "target": st.target, "steps": "end" if st.steps is None else st.steps, "selection": selection}
    if st.focus:
        state["focus"] = list(st.focus)
    out = {"text": {lang: text for lang, text in stop.texts.items() if text.strip()}, "view": stop.view, "state": state}
    if stop.highlight != "view":
        out["highlight"] = stop.highlight
    return out


def tour_document(stops: Sequence[RecordedStop], model: str | None) -> dict:
    """The tour file of ``stops`` recorded on ``model`` (:func:`attnviz.core.tour_data.model_name`;
    ``None``: none named), without its mark."""
    doc: dict = {"format": FORMAT, "version": VERSION}
    if model:
        doc["model"] = model
    doc["stops"] = [stop_json(s) for s in stops]
    return doc


def check_stop(stop: RecordedStop, number: int, views: tuple[str, ...] = VIEWS) -> None:
    """``stop`` (the tour's ``number``-th, from 1) as the tour loader reads it: :class:`TourError`
    (one line, ``stop N: …``) for what it refuses."""
    parse_stop(stop_json(stop), f"stop {number}", views=views)


def _serialize(doc: dict) -> bytes:
    return (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def marked_bytes(doc: dict) -> bytes:
    """The file of ``doc``: its JSON with the mark as its last key."""
    plain = {k: v for k, v in doc.items() if k != MARK}
    return _serialize({**plain, MARK: _SIGN + hashlib.sha256(_serialize(plain)).hexdigest()})


def is_our_tour(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file (not a link) holding a tour attnviz wrote, unchanged since."""
    path = Path(path)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode) or os.lstat(path).st_size > MAX_BYTES:
            return False
        data = path.read_bytes()
        doc = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get(MARK), str) and hmac.compare_digest(marked_bytes(doc), data)


def tour_path_for(path: str | os.PathLike) -> Path:
    """``path`` with :data:`SUFFIX` added when its name does not end with it."""
    path = Path(path)
    return path if path.name.endswith(SUFFIX) else path.with_name(path.name + SUFFIX)


def check_destination(path: Path, replace: bool = False) -> None:
    """A tour may be written at ``path``: nothing is there, a tour attnviz wrote is, or (``replace``)
    a regular file the user agreed to replace. :class:`TourFileExists` for any other regular file;
    :class:`TourError` for a link, a folder, a pipe or a device."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise TourError(f"cannot look at {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        what = "a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise TourError(f"{path} is {what}: it is left alone; choose another name")
    if not replace and not is_our_tour(path):
        raise TourFileExists(path)


def save_tour(path: str | os.PathLike, stops: Sequence[RecordedStop], model: str | None, views: tuple[str, ...] = VIEWS,
              replace: bool = False) -> Path:
    """Write ``stops`` as a tour file at ``path`` (:data:`SUFFIX` added when missing), atomically;
    the path written. :class:`TourError` (one line) when the tour would not load back, or the path
    cannot be written; :class:`TourFileExists` for a file attnviz did not write (see ``replace``)."""
    path = tour_path_for(path)
    doc = tour_document(stops, model)
    parse_tour(doc, path, views=views)  # what is written always loads
    data = marked_bytes(doc)
    if len(data) > MAX_BYTES:
        raise TourError(f"{path.name}: the tour is too large for a tour file (over {MAX_BYTES // 1024} KiB)")
    check_destination(path, replace)
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise TourError(f"could not save the tour to {path}: {exc.strerror or exc}") from None
    return path
