"""The export dialogs: figure (file, format, PNG width and DPI), data, and all heads.

Thin: the writing itself is in :mod:`attnviz.qt.export.files`, testable without them.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.figure_data import AttentionData
from attnviz.core.data_files import DATA_FORMATS, Metadata
from attnviz.qt.export.files import (
    FIGURE_FORMATS,
    PNG_DPI_RANGE,
    PNG_WIDTH_RANGE,
    ExportError,
    HeadFigureFactory,
    export_all_heads,
    export_view_data,
    render_view_to_file,
)
from attnviz.qt.i18n import translate
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.widgets.figures import FigureView
from attnviz.qt.widgets.plain_text import plain_label, show_message_box


def _filter(fmt: str) -> str:
    """The file dialog's filter for ``fmt`` (its pattern, ``(*.png)``, is the same in every language)."""
    return {
        "png": translate("dialogs", "PNG image (*.png)"),
        "svg": translate("dialogs", "SVG vector graphics (*.svg)"),
        "pdf": translate("dialogs", "PDF document (*.pdf)"),
        "csv": translate("dialogs", "CSV table (*.csv)"),
        "npz": translate("dialogs", "NumPy archive (*.npz)"),
    }[fmt]


LAST_DIR_KEY = "export/lastDir"  # the folder every export dialog starts in: where the last export went


def _settings() -> QtCore.QSettings:
    return QtCore.QSettings()


def default_export_dir() -> Path:
    """Where the first export goes: the user's Pictures folder where there is one, else home."""
    pictures = QtCore.QStandardPaths.writableLocation(QtCore.QStandardPaths.StandardLocation.PicturesLocation)
    return Path(pictures) if pictures and Path(pictures).is_dir() else Path.home()


def last_export_dir() -> Path:
    """The folder the last export went to (every export dialog shares it), while it is still there;
    else :func:`default_export_dir`."""
    saved = _settings().value(LAST_DIR_KEY)
    return Path(str(saved)) if saved and Path(str(saved)).is_dir() else default_export_dir()


def remember_export_dir(path: Path) -> None:
    """The next export dialog starts where ``path`` (a file written, or a folder) is."""
    path = Path(path)
    _settings().setValue(LAST_DIR_KEY, str(path if path.is_dir() else path.parent))


def suggested_file_name(view: FigureView, fmt: str) -> str:
    stem = re.sub(r"[^\w\-]+", "_", view.figure_title(), flags=re.UNICODE).strip("_").lower() or "figure"
    return f"{stem[:80]}.{fmt}"


class FigureExportDialog(QtWidgets.QDialog):
    """Where and how to export a figure: file, format, PNG width and DPI."""

    def __init__(self, view: FigureView, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(translate("dialogs", "Export figure"))
        self.setObjectName("figureExportDialog")
        self._view = view
        size = view.figure_canvas().viewport().size()
        self._base_width = max(1, size.width())
        self.format_combo = QtWidgets.QComboBox(objectName="exportFormatCombo")
        for fmt in FIGURE_FORMATS:
            self.format_combo.addItem(_filter(fmt), fmt)
        self.path_edit = QtWidgets.QLineEdit(objectName="exportPathEdit")
        self.path_edit.setText(str(last_export_dir() / suggested_file_name(view, "png")))
        browse = QtWidgets.QPushButton(translate("dialogs", "Browse…"))
        browse.clicked.connect(self._browse)
        self.width_spin = QtWidgets.QSpinBox(objectName="exportWidthSpin")
        self.width_spin.setRange(*PNG_WIDTH_RANGE)
        self.width_spin.setSuffix(translate("dialogs", " px"))
        self.width_spin.setValue(self._base_width * 2)
        self.dpi_spin = QtWidgets.QSpinBox(objectName="exportDpiSpin")
        self.dpi_spin.setRange(*PNG_DPI_RANGE)
        self.dpi_spin.setValue(192)
        self.dpi_spin.setSuffix(translate("dialogs", " dpi"))
        self.width_spin.valueChanged.connect(self._width_changed)
        self.dpi_spin.valueChanged.connect(self._dpi_changed)
        path_row = QtWidgets.QHBoxLayout()
        path_row.addWidget(self.path_edit, 1)
        path_row.addWidget(browse)
        form = QtWidgets.QFormLayout()
        form.addRow(translate("dialogs", "File"), path_row)
        form.addRow(translate("dialogs", "Format"), self.format_combo)
        form.addRow(translate("dialogs", "Width (PNG)"), self.width_spin)
        form.addRow(translate("dialogs", "Resolution (PNG)"), self.dpi_spin)
        note = QtWidgets.QLabel(translate("dialogs", "SVG and PDF are vector graphics: text stays text, cells stay sharp at any zoom."))
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
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, translate("dialogs", "Export figure"), self.path_edit.text(),
                                                        ";;".join(_filter(f) for f in FIGURE_FORMATS), _filter(fmt))
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
        remember_export_dir(out)
        return out


def _fail(parent: QtWidgets.QWidget | None, exc: Exception) -> None:
    show_message_box(parent, QtWidgets.QMessageBox.Icon.Warning, translate("dialogs", "Export failed"), str(exc))


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


def export_data_dialog(view: FigureView, parent: QtWidgets.QWidget | None = None, metadata: Metadata | None = None) -> Path | None:
    """Ask for a CSV or NPZ file, then write the view's data (headed by ``metadata``, e.g.
    :func:`~attnviz.qt.export.files.session_metadata`); errors are shown as a message."""
    start = str(last_export_dir() / suggested_file_name(view, "csv"))
    filters = ";;".join(_filter(f) for f in DATA_FORMATS)
    path, chosen = QtWidgets.QFileDialog.getSaveFileName(parent, translate("dialogs", "Export data"), start, filters)
    if not path:
        return None
    path_obj = Path(path)
    if not path_obj.suffix:
        path_obj = path_obj.with_suffix(".npz" if "*.npz" in chosen else ".csv")
    try:
        out = export_view_data(view, path_obj, metadata=metadata)
    except ExportError as exc:
        _fail(parent, exc)
        return None
    remember_export_dir(out)
    return out


def export_all_heads_dialog(
    parent: QtWidgets.QWidget | None,
    make_view: HeadFigureFactory,
    data: AttentionData,
    *,
    theme: Theme | str | None = None,
    colormap: str | None = None,
) -> list[Path]:
    """Ask for a folder and a format, then export every head, each drawn by a view ``make_view``
    builds, with a cancellable progress dialog."""
    folder = QtWidgets.QFileDialog.getExistingDirectory(parent, translate("dialogs", "Export all heads into"), str(last_export_dir()))
    if not folder:
        return []
    fmt, ok = QtWidgets.QInputDialog.getItem(parent, translate("dialogs", "Export all heads"), translate("dialogs", "Format"), list(FIGURE_FORMATS), 0, False)
    if not ok:
        return []
    total = data.n_layers * data.n_heads
    progress = QtWidgets.QProgressDialog(translate("dialogs", "Exporting heads…"), translate("dialogs", "Cancel"), 0, total, parent)
    progress.setLabel(plain_label(translate("dialogs", "Exporting heads…")))  # the label shows file names
    progress.setWindowTitle(translate("dialogs", "Export all heads"))
    progress.setWindowModality(QtCore.Qt.WindowModality.WindowModal)
    progress.setMinimumDuration(300)

    def on_progress(done: int, total: int, path: Path) -> None:
        progress.setValue(done)
        progress.setLabelText(translate("dialogs", "Exported {name} ({done} of {total})").format(name=path.name, done=done, total=total))
        QtWidgets.QApplication.processEvents()

    try:
        written = export_all_heads(make_view, data, folder, fmt, progress=on_progress, cancel=progress.wasCanceled, theme=theme, colormap=colormap)
    except ExportError as exc:
        _fail(parent, exc)
        written = []
    finally:
        progress.close()
        progress.deleteLater()
    remember_export_dir(Path(folder))
    return written
