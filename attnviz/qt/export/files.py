"""Export a view's figure (PNG, SVG, PDF) and the data behind it (CSV, NPZ), without dialogs.

These are what the app's menus, the context menus and the headless ``attnviz export``
share::

    render_view_to_file(view, "fig.svg")                 # format from the suffix
    render_view_to_file(view, "fig.png", width=2400)     # or dpi=300
    export_view_data(view, "fig.csv", metadata={"model": "hsk-zh-en", "source": "…"})
    export_all_heads(QtHeadDetailView, data, "out/", "pdf", progress=..., cancel=...)

Every file is written atomically (a temporary file in the destination folder, then
``os.replace``): a failure leaves no partial file and raises :class:`ExportError` with a
one-line message that names the destination.

The data files themselves (CSV with commented metadata lines, NPZ) are written by
``attnviz.core.data_files``, which the command line's analyses share.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from attnviz.core.analysis.figure_data import AttentionData, FigureData
from attnviz.core.atomic import atomic_write_bytes as core_atomic_write
from attnviz.core.data_files import DATA_FORMATS, Metadata, data_to_bytes
from attnviz.core.outputs import OUTPUT_FORMATS, marked
from attnviz.errors import AttnvizError
from attnviz.qt.i18n import translate
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.widgets.figures import FigureView, render_figure_bytes

FIGURE_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
PNG_WIDTH_RANGE: tuple[int, int] = (16, 20000)  # pixels
PNG_DPI_RANGE: tuple[int, int] = (24, 1200)  # 96 = as on screen


class ExportError(AttnvizError):
    """An export could not be written; the message says where and why, in one line."""


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------
def _format_of(path: Path, fmt: str | None, allowed: tuple[str, ...]) -> str:
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if not fmt:
        raise ExportError(translate("files", "Cannot export to {path}: give a file name ending in {suffixes}").format(
            path=path, suffixes=", ".join("." + f for f in allowed)))
    if fmt not in allowed:
        raise ExportError(translate("files", "Cannot export to {path}: unknown format {format!r} (use {formats})").format(
            path=path, format=fmt, formats=", ".join(allowed)))
    return fmt


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``, with attnviz's mark
(:mod:`attnviz.core.outputs`) where the format keeps one: the user chose the file in a dialog
that asked before replacing it.

    Raises :class:`ExportError` (and leaves nothing behind) when the destination is a folder,
    its folder is missing or not writable, or the write fails midway.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ExportError(translate("files", "Cannot write {path}: it is a folder").format(path=path))
    if not parent.exists():
        raise ExportError(translate("files", "Cannot write {path}: the folder {folder} does not exist").format(path=path, folder=parent))
    if not parent.is_dir():
        raise ExportError(translate("files", "Cannot write {path}: {folder} is not a folder").format(path=path, folder=parent))
    fmt = path.suffix.lower().lstrip(".")
    data = marked(data, fmt) if fmt in OUTPUT_FORMATS else data  # the same file the command line writes, mark included
    try:
        return core_atomic_write(path, data)
    except OSError as exc:
        raise ExportError(translate("files", "Cannot write {path}: {reason}").format(path=path, reason=exc.strerror or exc)) from exc


# ---------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------
def check_png_size(width: int | None = None, dpi: float | None = None) -> None:
    """Refuse a PNG ``width`` or ``dpi`` outside :data:`PNG_WIDTH_RANGE` / :data:`PNG_DPI_RANGE`
    (``ExportError``), before anything is drawn."""
    lo, hi = PNG_WIDTH_RANGE
    if width is not None and not lo <= width <= hi:
        raise ExportError(translate("files", "the PNG width must be between {low} and {high} pixels, not {width}").format(low=lo, high=hi, width=width))
    lo, hi = PNG_DPI_RANGE
    if dpi is not None and not lo <= dpi <= hi:  # also refuses nan
        raise ExportError(translate("files", "the PNG resolution must be between {low} and {high} dpi, not {dpi:g}").format(low=lo, high=hi, dpi=dpi))


def render_view_to_bytes(view: FigureView, fmt: str, width: int | None = None, dpi: float | None = None) -> bytes:
    """The view's figure as ``fmt`` bytes (``width``/``dpi`` apply to PNG)."""
    if fmt.lower() not in FIGURE_FORMATS:
        raise _unknown_figure_format(fmt)
    check_png_size(width, dpi)
    try:
        return render_figure_bytes(view, fmt, width=width, dpi=dpi)
    except ValueError as exc:
        raise ExportError(translate("files", "Cannot render the figure: {reason}").format(reason=exc)) from exc


def _unknown_figure_format(fmt: str) -> ExportError:
    return ExportError(translate("files", "unknown figure format {format!r} (use {formats})").format(format=fmt, formats=", ".join(FIGURE_FORMATS)))


def render_view_to_file(
    view: FigureView, path: str | os.PathLike, fmt: str | None = None, width: int | None = None, dpi: float | None = None
) -> Path:
    """Render ``view`` to ``path`` as PNG, SVG or PDF (``fmt`` defaults to the suffix).

    PNG: ``width`` pixels wide (the aspect ratio is kept), or scaled to ``dpi`` (96 = as on
    screen). SVG and PDF are vector: token labels are text; matrices up to 64×64 cells are
    vector rectangles.
    """
    path = Path(path)
    fmt = _format_of(path, fmt, FIGURE_FORMATS)
    return atomic_write_bytes(path, render_view_to_bytes(view, fmt, width=width, dpi=dpi))


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------
def session_metadata(session, kind: str | None = None, layer: int | None = None, head: int | str | None = None,
                     target: str | None = None) -> dict[str, object]:
    """What a data file of ``session`` (a ``qt.session.Session``) is of: its model, source, target
    (the typed one, else the words decoded so far), step, and the selection (0-based ``layer`` and
    ``head`` given, written 1-based; ``head`` may be "mean", "rollout" or "all")."""
    from attnviz.core.data.pieces import SP_WORD_START

    if target is None:
        words = "".join(p for p in session.output_pieces() if p not in ("SOS", "EOS")).replace(SP_WORD_START, " ").strip()
        target = session.target or words
    forced = getattr(session, "forced", None) is not None
    if not session.target and getattr(session, "strategy", None) is not None:
        target = f"{target} (decoded with {session.strategy.describe()})"
    return {"model": session.bundle.name, "source": session.source, "target": target,
            "step": f"{session.n_rows()}{' (teacher forcing)' if forced else ''}", "kind": kind,
            "layer": None if layer is None else layer + 1, "head": head + 1 if isinstance(head, int) else head}


def export_view_data(view: FigureView, path: str | os.PathLike, fmt: str | None = None, metadata: Metadata | None = None) -> Path:
    """Write the data behind ``view`` to ``path`` as CSV or NPZ (``fmt`` defaults to the suffix)."""
    path = Path(path)
    fmt = _format_of(path, fmt, DATA_FORMATS)
    try:
        data = view.figure_data()
    except ValueError as exc:
        raise ExportError(translate("files", "Cannot export data to {path}: {reason}").format(path=path, reason=exc)) from exc
    return atomic_write_bytes(path, data_to_bytes(data, fmt, metadata))


def all_heads_data(data: AttentionData) -> FigureData:
    """Every layer's and head's weights of one kind as one table: ``[layer, head, query, key]``."""
    n_layers, n_heads = data.weights.shape[:2]
    coords = {"layer": tuple(str(i + 1) for i in range(n_layers)), "head": tuple(str(i + 1) for i in range(n_heads)),
              "query": data.query_labels, "key": data.key_labels}
    return FigureData(f"{data.kind} attention · every layer and head", ("layer", "head", "query", "key"),
                      {"weight": data.weights}, coords)


# ---------------------------------------------------------------------------
# All heads
# ---------------------------------------------------------------------------
ProgressCallback = Callable[[int, int, Path], None]
CancelFlag = Callable[[], bool] | threading.Event


def _cancelled(cancel: CancelFlag | None) -> bool:
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())


@runtime_checkable
class HeadFigure(FigureView, Protocol):
    """A view that draws one head of :class:`AttentionData` (the head detail): what
    :func:`export_all_heads` needs of the view it is given."""

    def set_data(self, data: AttentionData) -> None: ...

    def select(self, layer: int | None = None, head: int | None = None, mode: str | None = None, kind: str | None = None) -> None: ...

    def set_colormap(self, name: str) -> None: ...


HeadFigureFactory = Callable[..., HeadFigure]  # called with ``theme=``; e.g. the head-detail view's class


def head_file_name(kind: str, layer: int, head: int, fmt: str) -> str:
    """``cross_layer2_head3.png`` for 0-based layer 1, head 2 (names are 1-based, as on screen)."""
    return f"{kind}_layer{layer + 1}_head{head + 1}.{fmt}"


def iter_export_all_heads(
    make_view: HeadFigureFactory,
    data: AttentionData,
    out_dir: str | os.PathLike,
    fmt: str = "png",
    *,
    width: int | None = None,
    dpi: float | None = None,
    size: tuple[int, int] = (720, 640),
    theme: Theme | str | None = None,
    colormap: str | None = None,
) -> Iterator[Path]:
    """Write one figure per layer and head, drawn by a view ``make_view(theme=theme)`` builds,
    yielding each path once written.

    Runs in the GUI thread (Qt draws widgets only there); drive it step by step to keep
    the window responsive. ``size`` is the figure's logical size in pixels.
    """
    fmt = fmt.lower()
    if fmt not in FIGURE_FORMATS:
        raise _unknown_figure_format(fmt)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ExportError(translate("files", "Cannot export to {path}: it is not a folder").format(path=out))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(translate("files", "Cannot create the folder {path}: {reason}").format(path=out, reason=exc.strerror or exc)) from exc
    view = make_view(theme=theme)
    try:
        if colormap:
            view.set_colormap(colormap)
        view.resize(*size)
        view.set_data(data)
        for layer in range(data.n_layers):
            for head in range(data.n_heads):
                view.select(layer=layer, head=head, mode="head")
                path = out / head_file_name(data.kind, layer, head, fmt)
                render_view_to_file(view, path, fmt, width=width, dpi=dpi)
                yield path
    finally:
        view.close()
        view.deleteLater()


def export_all_heads(
    make_view: HeadFigureFactory,
    data: AttentionData,
    out_dir: str | os.PathLike,
    fmt: str = "png",
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelFlag | None = None,
    **options,
) -> list[Path]:
    """Write one figure per layer and head of ``data`` into ``out_dir``, each drawn by a view
    ``make_view`` builds; returns the paths.

    ``progress(done, total, path)`` is called after each file; ``cancel`` (a callable or a
    ``threading.Event``) is checked before each file, and a cancelled export returns the
    files written so far (each complete). Options as :func:`iter_export_all_heads`.
    """
    total = data.n_layers * data.n_heads
    written: list[Path] = []
    if _cancelled(cancel):
        return written
    gen = iter_export_all_heads(make_view, data, out_dir, fmt, **options)
    try:
        for path in gen:
            written.append(path)
            if progress is not None:
                progress(len(written), total, path)
            if _cancelled(cancel):
                break
    finally:
        gen.close()
    return written

