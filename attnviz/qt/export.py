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

The functions live in :mod:`attnviz.qt.export_files`, the dialogs in
:mod:`attnviz.qt.export_dialogs`; both are re-exported here.
"""

from __future__ import annotations

import csv  # noqa: F401
import io  # noqa: F401
import itertools  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import tempfile  # noqa: F401
import threading  # noqa: F401
from collections.abc import Callable, Iterator  # noqa: F401
from pathlib import Path  # noqa: F401

import numpy as np  # noqa: F401
from PySide6 import QtCore, QtWidgets  # noqa: F401

from .colormaps import Theme  # noqa: F401
from .export_dialogs import (  # noqa: F401
    FigureExportDialog,
    _fail,
    _last_dir,
    _remember_dir,
    _settings,
    export_all_heads_dialog,
    export_data_dialog,
    export_figure_dialog,
    suggested_file_name,
)
from .export_files import (  # noqa: F401
    _FILTERS,
    DATA_FORMATS,
    FIGURE_FORMATS,
    CancelFlag,
    ExportError,
    ProgressCallback,
    _cancelled,
    _format_of,
    _number,
    _umask,
    atomic_write_bytes,
    data_to_bytes,
    data_to_csv,
    data_to_npz,
    export_all_heads,
    export_view_data,
    head_file_name,
    iter_export_all_heads,
    render_view_to_bytes,
    render_view_to_file,
)
from .figures import FigureView, render_figure_bytes  # noqa: F401
from .view_data import AttentionData, FigureData  # noqa: F401
