"""Export a view's figure (PNG, SVG, PDF) and the data behind it (CSV, NPZ).

The dialog-free functions are what the app's menus, the context menus and the headless
``attnviz export`` share::

    render_view_to_file(view, "fig.svg")                 # format from the suffix
    render_view_to_file(view, "fig.png", width=2400)     # or dpi=300
    export_view_data(view, "fig.csv")
    export_all_heads(data, "out/", "pdf", progress=..., cancel=...)

Every file is written atomically (a temporary file in the destination folder, then
``os.replace``): a failure leaves no partial file and raises :class:`ExportError` with a
one-line message that names the destination.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from PySide6 import QtCore, QtWidgets

from .colormaps import Theme
from .figures import FigureView, render_figure_bytes
from .view_data import AttentionData, FigureData

FIGURE_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")
DATA_FORMATS: tuple[str, ...] = ("csv", "npz")
_FILTERS = {
    "png": "PNG image (*.png)",
    "svg": "SVG vector graphics (*.svg)",
    "pdf": "PDF document (*.pdf)",
    "csv": "CSV table (*.csv)",
    "npz": "NumPy archive (*.npz)",
}


class ExportError(Exception):
    """An export could not be written; the message says where and why, in one line."""


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------
def _format_of(path: Path, fmt: str | None, allowed: tuple[str, ...]) -> str:
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if not fmt:
        raise ExportError(f"Cannot export to {path}: give a file name ending in {', '.join('.' + f for f in allowed)}")
    if fmt not in allowed:
        raise ExportError(f"Cannot export to {path}: unknown format {fmt!r} (use {', '.join(allowed)})")
    return fmt


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``.

    Raises :class:`ExportError` (and leaves nothing behind) when the destination is a folder,
    its folder is missing or not writable, or the write fails midway.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ExportError(f"Cannot write {path}: it is a folder")
    if not parent.exists():
        raise ExportError(f"Cannot write {path}: the folder {parent} does not exist")
    if not parent.is_dir():
        raise ExportError(f"Cannot write {path}: {parent} is not a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=parent)
    except OSError as exc:
        raise ExportError(f"Cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ExportError(f"Cannot write {path}: {exc.strerror or exc}") from exc
        raise
    return path


# ---------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------
def render_view_to_bytes(view: FigureView, fmt: str, width: int | None = None, dpi: float | None = None) -> bytes:
    """The view's figure as ``fmt`` bytes (``width``/``dpi`` apply to PNG)."""
    if fmt.lower() not in FIGURE_FORMATS:
        raise ExportError(f"unknown figure format {fmt!r} (use {', '.join(FIGURE_FORMATS)})")
    try:
        return render_figure_bytes(view, fmt, width=width, dpi=dpi)
    except ValueError as exc:
        raise ExportError(f"Cannot render the figure: {exc}") from exc


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
def _number(v: float) -> str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(float(v), ".9g")


def data_to_csv(data: FigureData) -> str:
    """Long form: one row per element; for each dimension ``<dim>_index`` (0-based) and,
    where it has labels, ``<dim>`` (the token piece or 1-based layer/head); then one
    column per value array."""
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


def data_to_npz(data: FigureData) -> bytes:
    """Every value and extra array, plus ``<dim>_labels``, ``dims`` and ``title`` (no pickles)."""
    arrays: dict[str, np.ndarray] = {}
    for name, a in data.values.items():
        arrays[name] = np.asarray(a)
    for name, a in data.extras.items():
        arrays[name] = np.asarray(a)
    for dim, labels in data.coords.items():
        arrays[f"{dim}_labels"] = np.array(list(labels), dtype=str)
    arrays["dims"] = np.array(list(data.dims), dtype=str)
    arrays["title"] = np.array(data.title, dtype=str)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def data_to_bytes(data: FigureData, fmt: str) -> bytes:
    fmt = fmt.lower()
    if fmt == "csv":
        return data_to_csv(data).encode("utf-8")
    if fmt == "npz":
        return data_to_npz(data)
    raise ExportError(f"unknown data format {fmt!r} (use {', '.join(DATA_FORMATS)})")


def export_view_data(view: FigureView, path: str | os.PathLike, fmt: str | None = None) -> Path:
    """Write the data behind ``view`` to ``path`` as CSV or NPZ (``fmt`` defaults to the suffix)."""
    path = Path(path)
    fmt = _format_of(path, fmt, DATA_FORMATS)
    try:
        data = view.figure_data()
    except ValueError as exc:
        raise ExportError(f"Cannot export data to {path}: {exc}") from exc
    return atomic_write_bytes(path, data_to_bytes(data, fmt))


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


def head_file_name(kind: str, layer: int, head: int, fmt: str) -> str:
    """``cross_layer2_head3.png`` for 0-based layer 1, head 2 (names are 1-based, as on screen)."""
    return f"{kind}_layer{layer + 1}_head{head + 1}.{fmt}"


def iter_export_all_heads(
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
    """Write one head-detail figure per layer and head, yielding each path once written.

    Runs in the GUI thread (Qt draws widgets only there); drive it step by step to keep
    the window responsive. ``size`` is the figure's logical size in pixels.
    """
    from .qt_head_detail_view import QtHeadDetailView

    fmt = fmt.lower()
    if fmt not in FIGURE_FORMATS:
        raise ExportError(f"unknown figure format {fmt!r} (use {', '.join(FIGURE_FORMATS)})")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ExportError(f"Cannot export to {out}: it is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"Cannot create the folder {out}: {exc.strerror or exc}") from exc
    view = QtHeadDetailView(theme=theme)
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
    data: AttentionData,
    out_dir: str | os.PathLike,
    fmt: str = "png",
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelFlag | None = None,
    **options,
) -> list[Path]:
    """Write one figure per layer and head of ``data`` into ``out_dir``; returns the paths.

    ``progress(done, total, path)`` is called after each file; ``cancel`` (a callable or a
    ``threading.Event``) is checked before each file, and a cancelled export returns the
    files written so far (each complete). Options as :func:`iter_export_all_heads`.
    """
    total = data.n_layers * data.n_heads
    written: list[Path] = []
    if _cancelled(cancel):
        return written
    gen = iter_export_all_heads(data, out_dir, fmt, **options)
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


# ---------------------------------------------------------------------------
# Dialogs (thin: everything above is testable without them)
# ---------------------------------------------------------------------------
def _settings() -> QtCore.QSettings:
    return QtCore.QSettings()


def _last_dir() -> str:
    return str(_settings().value("export/lastDir", str(Path.home())))


def _remember_dir(path: Path) -> None:
    _settings().setValue("export/lastDir", str(path if path.is_dir() else path.parent))


def suggested_file_name(view: FigureView, fmt: str) -> str:
    stem = re.sub(r"[^\w\-]+", "_", view.figure_title(), flags=re.UNICODE).strip("_").lower() or "figure"
    return f"{stem[:80]}.{fmt}"


class FigureExportDialog(QtWidgets.QDialog):
    """Where and how to export a figure: file, format, PNG width and DPI."""

    def __init__(self, view: FigureView, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export figure")
        self.setObjectName("figureExportDialog")
        self._view = view
        size = view.figure_canvas().viewport().size()
        self._base_width = max(1, size.width())
        self.format_combo = QtWidgets.QComboBox(objectName="exportFormatCombo")
        for fmt in FIGURE_FORMATS:
            self.format_combo.addItem(_FILTERS[fmt], fmt)
        self.path_edit = QtWidgets.QLineEdit(objectName="exportPathEdit")
        self.path_edit.setText(str(Path(_last_dir()) / suggested_file_name(view, "png")))
        browse = QtWidgets.QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.width_spin = QtWidgets.QSpinBox(objectName="exportWidthSpin")
        self.width_spin.setRange(16, 20000)
        self.width_spin.setSuffix(" px")
        self.width_spin.setValue(self._base_width * 2)
        self.dpi_spin = QtWidgets.QSpinBox(objectName="exportDpiSpin")
        self.dpi_spin.setRange(24, 1200)
        self.dpi_spin.setValue(192)
        self.dpi_spin.setSuffix(" dpi")
        self.width_spin.valueChanged.connect(self._width_changed)
        self.dpi_spin.valueChanged.connect(self._dpi_changed)
        path_row = QtWidgets.QHBoxLayout()
        path_row.addWidget(self.path_edit, 1)
        path_row.addWidget(browse)
        form = QtWidgets.QFormLayout()
        form.addRow("File", path_row)
        form.addRow("Format", self.format_combo)
        form.addRow("Width (PNG)", self.width_spin)
        form.addRow("Resolution (PNG)", self.dpi_spin)
        note = QtWidgets.QLabel("SVG and PDF are vector graphics: text stays text, cells stay sharp at any zoom.")
        note.setWordWrap(True)
        note.setStyleSheet("color: palette(mid);")
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Save | QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.format_combo.currentIndexChanged.connect(self._format_changed)

    def _width_changed(self, w: int) -> None:
        blocked = self.dpi_spin.blockSignals(True)
        self.dpi_spin.setValue(round(96 * w / self._base_width))
        self.dpi_spin.blockSignals(blocked)

    def _dpi_changed(self, dpi: int) -> None:
        blocked = self.width_spin.blockSignals(True)
        self.width_spin.setValue(round(self._base_width * dpi / 96))
        self.width_spin.blockSignals(blocked)

    def _format_changed(self) -> None:
        fmt = self.format_combo.currentData()
        path = Path(self.path_edit.text())
        if path.suffix.lower().lstrip(".") in FIGURE_FORMATS:
            self.path_edit.setText(str(path.with_suffix("." + fmt)))
        png = fmt == "png"
        self.width_spin.setEnabled(png)
        self.dpi_spin.setEnabled(png)

    def _browse(self) -> None:
        fmt = self.format_combo.currentData()
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Export figure", self.path_edit.text(), ";;".join(_FILTERS[f] for f in FIGURE_FORMATS), _FILTERS[fmt])
        if path:
            self.path_edit.setText(path)
            suffix = Path(path).suffix.lower().lstrip(".")
            if suffix in FIGURE_FORMATS:
                self.format_combo.setCurrentIndex(self.format_combo.findData(suffix))

    def export(self) -> Path:
        """Write the file as set in the dialog (raises ExportError)."""
        path = Path(self.path_edit.text()).expanduser()
        fmt = self.format_combo.currentData()
        if not path.suffix:
            path = path.with_suffix("." + fmt)
        width = self.width_spin.value() if fmt == "png" else None
        dpi = self.dpi_spin.value() if fmt == "png" else None
        out = render_view_to_file(self._view, path, fmt, width=width, dpi=dpi)
        _remember_dir(out)
        return out


def _fail(parent: QtWidgets.QWidget | None, exc: Exception) -> None:
    QtWidgets.QMessageBox.warning(parent, "Export failed", str(exc))


def export_figure_dialog(view: FigureView, parent: QtWidgets.QWidget | None = None) -> Path | None:
    """Ask where and how, then export the figure; errors are shown as a message."""
    dialog = FigureExportDialog(view, parent)
    try:
        while dialog.exec() == QtWidgets.QDialog.DialogCode.Accepted:
            try:
                return dialog.export()
            except ExportError as exc:
                _fail(parent, exc)
        return None
    finally:
        dialog.deleteLater()


def export_data_dialog(view: FigureView, parent: QtWidgets.QWidget | None = None) -> Path | None:
    """Ask for a CSV or NPZ file, then write the view's data; errors are shown as a message."""
    start = str(Path(_last_dir()) / suggested_file_name(view, "csv"))
    filters = ";;".join(_FILTERS[f] for f in DATA_FORMATS)
    path, chosen = QtWidgets.QFileDialog.getSaveFileName(parent, "Export data", start, filters)
    if not path:
        return None
    path_obj = Path(path)
    if not path_obj.suffix:
        path_obj = path_obj.with_suffix(".npz" if "npz" in chosen else ".csv")
    try:
        out = export_view_data(view, path_obj)
    except ExportError as exc:
        _fail(parent, exc)
        return None
    _remember_dir(out)
    return out


def export_all_heads_dialog(
    parent: QtWidgets.QWidget | None, data: AttentionData, *, theme: Theme | str | None = None, colormap: str | None = None
) -> list[Path]:
    """Ask for a folder and a format, then export every head with a cancellable progress dialog."""
    folder = QtWidgets.QFileDialog.getExistingDirectory(parent, "Export all heads into", _last_dir())
    if not folder:
        return []
    fmt, ok = QtWidgets.QInputDialog.getItem(parent, "Export all heads", "Format", list(FIGURE_FORMATS), 0, False)
    if not ok:
        return []
    total = data.n_layers * data.n_heads
    progress = QtWidgets.QProgressDialog("Exporting heads…", "Cancel", 0, total, parent)
    progress.setWindowTitle("Export all heads")
    progress.setWindowModality(QtCore.Qt.WindowModality.WindowModal)
    progress.setMinimumDuration(300)

    def on_progress(done: int, total: int, path: Path) -> None:
        progress.setValue(done)
        progress.setLabelText(f"Exported {path.name} ({done} of {total})")
        QtWidgets.QApplication.processEvents()

    try:
        written = export_all_heads(data, folder, fmt, progress=on_progress, cancel=progress.wasCanceled, theme=theme, colormap=colormap)
    except ExportError as exc:
        _fail(parent, exc)
        written = []
    finally:
        progress.close()
        progress.deleteLater()
    _remember_dir(Path(folder))
    return written
