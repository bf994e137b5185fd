"""Every data set by name, path or meta.json spec: :func:`load_data`, the one door the trainer,
the Train panel, the examples and the analyses go through (HSK and the synthetic tasks and files
live in :mod:`corpora`, the Tatoeba pairs and the mix in :mod:`tatoeba`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from attnviz.core.data.corpora import (
    BUILTIN,
    HSK_NAME,
    MIX_KIND,
    MIX_NAME,
    SYNTHETIC_TASKS,
    TATOEBA_NAME,
    DataError,
    Dataset,
    load_hsk,
    load_parallel,
    load_tsv,
    synthetic,
)
from attnviz.core.data.stream import STREAM_ABOVE, load_streamed_tsv
from attnviz.core.data.tatoeba import load_mix, load_spec, load_tatoeba


def load_data(spec: str | dict[str, Any], target: str | os.PathLike | None = None, n_examples: int | None = None, stream: bool = False) -> Dataset:
    """A data set by name (``hsk-zh-en``, ``tatoeba-zh-en``, the mix ``hsk-zh-en,tatoeba-zh-en``,
    ``copy``, ``reverse``, ``sort``; ``n_examples`` pairs of a
    synthetic task, 6000 by default), by TSV path, by a pair of line-aligned files (``spec`` =
    source file, ``target`` = target file), or from a ``Dataset.spec`` dict (as stored in meta.json).
    A TSV file is streamed (``stream.load_streamed_tsv``) with ``stream``, when it is larger than
    ``STREAM_ABOVE`` bytes, or when its spec says so."""
    if isinstance(spec, dict):
        kind = spec.get("kind")
        if kind == HSK_NAME:
            return load_hsk()
        if kind in (TATOEBA_NAME, MIX_KIND):
            return load_spec(spec)
        if kind in SYNTHETIC_TASKS:
            kw = {k: spec[k] for k in ("n", "min_len", "max_len", "alphabet", "seed") if k in spec}
            return synthetic(kind, **kw)
        if kind == "tsv":
            return load_streamed_tsv(spec["path"]) if spec.get("stream") else load_tsv(spec["path"])
        if kind == "parallel":
            return load_parallel(spec["src_path"], spec["tgt_path"])
        raise DataError(f"unknown data kind {kind!r}")
    if stream and (target is not None or spec in BUILTIN):
        raise DataError("--stream reads a TSV file of source<TAB>target lines, not a built-in data set or two line-aligned files")
    if target is not None:
        return load_parallel(spec, target)
    if spec == HSK_NAME:
        return load_hsk()
    if spec in (TATOEBA_NAME, MIX_NAME):
        return load_tatoeba() if spec == TATOEBA_NAME else load_mix()
    if spec in SYNTHETIC_TASKS:
        return synthetic(spec, n=6000 if n_examples is None else n_examples)
    path = Path(spec)
    if not path.exists():
        raise DataError(f"{spec}: no such file (expected a TSV file or one of {', '.join(BUILTIN)})")
    if path.is_dir():
        raise DataError(f"{spec}: is a folder (expected a TSV file of source<TAB>target lines)")
    if stream or _size(path) > STREAM_ABOVE:
        return load_streamed_tsv(path)
    return load_tsv(path)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # load_tsv says why it cannot be read
