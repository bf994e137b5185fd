"""The data behind a figure or an analysis as files: CSV (commented metadata lines, then long
form) and NPZ (the same lines as ``metadata``; no pickles). Shared by the window's exports and the
command line's analyses. No Qt.

A CSV file opens with ``# key: value`` lines (model, source, target, step, kind, layer, head, then
``view``, and which index fields count from 0 or 1); read it with ``pandas.read_csv(path, comment="#")``.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Mapping

import numpy as np

from attnviz.core.analysis.figure_data import FigureData

DATA_FORMATS: tuple[str, ...] = ("csv", "npz")


def _number(v: float) -> str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(float(v), ".9g")


Metadata = Mapping[str, object]  # what the numbers are of: model, source, target, step, kind, layer, head


def metadata_lines(data: FigureData, metadata: Metadata | None = None) -> list[str]:
    """``key: value`` for each metadata entry (``None`` left out, each on one line), then the view's title."""
    lines = [f"{key}: {value}" for key, value in (metadata or {}).items() if value is not None]
    lines.append(f"view: {data.title}")
    if data.dims:
        lines.append(f"indices: {', '.join(f'{d}_index' for d in data.dims)} count from 0; step, layer, head above and "
                     "position, layer and head labels count from 1, as on screen")
    return [" ".join(line.split()) for line in lines]


def data_to_csv(data: FigureData, metadata: Metadata | None = None) -> str:
    """Commented metadata lines (``# model: …``), then long form: one row per element; for each
    dimension ``<dim>_index`` (0-based) and, where it has labels, ``<dim>`` (the token piece or
    1-based layer/head); then one column per value array."""
    dims, shape = data.dims, data.shape
    header: list[str] = []
    for dim in dims:
        header.append(f"{dim}_index")
        if dim in data.coords:
            header.append(dim)
    names = list(data.values)
    header += names
    arrays = [np.asarray(data.values[n]) for n in names]
    out = io.StringIO()
    for line in metadata_lines(data, metadata):
        out.write(f"# {line}\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for idx in itertools.product(*(range(n) for n in shape)):
        row: list[str] = []
        for dim, i in zip(dims, idx):
            row.append(str(i))
            if dim in data.coords:
                row.append(data.coords[dim][i])
        row += [_number(a[idx]) for a in arrays]
        writer.writerow(row)
    return out.getvalue()


def data_to_npz(data: FigureData, metadata: Metadata | None = None) -> bytes:
    """Every value and extra array, plus ``<dim>_labels``, ``dims``, ``title`` and ``metadata``
    (the CSV's comment lines; no pickles)."""
    arrays: dict[str, np.ndarray] = {}
    for name, a in data.values.items():
        arrays[name] = np.asarray(a)
    for name, a in data.extras.items():
        arrays[name] = np.asarray(a)
    for dim, labels in data.coords.items():
        arrays[f"{dim}_labels"] = np.array(list(labels), dtype=str)
    arrays["dims"] = np.array(list(data.dims), dtype=str)
    arrays["title"] = np.array(data.title, dtype=str)
    arrays["metadata"] = np.array(metadata_lines(data, metadata), dtype=str)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def data_to_bytes(data: FigureData, fmt: str, metadata: Metadata | None = None) -> bytes:
    fmt = fmt.lower()
    if fmt == "csv":
        return data_to_csv(data, metadata).encode("utf-8")
    if fmt == "npz":
        return data_to_npz(data, metadata)
    raise ValueError(f"unknown data format {fmt!r} (use {', '.join(DATA_FORMATS)})")


