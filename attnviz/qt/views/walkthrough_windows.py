"""Which window of each long axis the walkthrough's tables show: :class:`AxisWindows` (a start per
axis, ``WINDOW`` cells wide) and :class:`WindowBars`, the scroll bars in the controls row that
move the windows. :mod:`attnviz.qt.views.walkthrough` owns one of each.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.qt.i18n import translate

#: Cells shown at most along each kind of axis before the rest is elided (scroll to see it).
WINDOW = {"model": 8, "k": 8, "pos": 12}
_AXIS_NAMES = {"query": QT_TRANSLATE_NOOP("walkthrough", "queries"), "key": QT_TRANSLATE_NOOP("walkthrough", "keys"), "model": "d_model",
               "k": "d_k", "bias": ""}  # shown as translate("walkthrough", name)
_SCROLL_NAMES = {"model": "d_model", "k": "d_k", "pos": QT_TRANSLATE_NOOP("walkthrough", "positions")}  # shown translated


class AxisWindows:
    """Which slice of each long axis (``model``: d_model, ``k``: d_k, ``pos``: the positions) the
    tables show: a start per axis, ``WINDOW[axis]`` cells wide, kept inside the axis's length."""

    def __init__(self):
        self.offsets = {"model": 0, "k": 0, "pos": 0}
        self.lengths = {"model": 0, "k": 0, "pos": 0}

    def set_lengths(self, walk: Any) -> None:
        self.lengths = {"model": walk.d_model, "k": walk.d_k, "pos": max(walk.x.shape[0], walk.x_kv.shape[0])}

    def move(self, axis: str, start: int) -> None:
        self.offsets[axis] = int(start)

    def start(self, axis: str) -> int:
        """The first index shown along ``axis`` (the offset, clamped)."""
        n = self.lengths[axis]
        return int(min(max(self.offsets[axis], 0), max(0, n - WINDOW[axis])))

    def hidden(self, axis: str) -> int:
        """How many cells of ``axis`` do not fit in its window."""
        return max(0, self.lengths[axis] - WINDOW[axis])

    def follow(self, query: int) -> None:
        """Keep the query row ``query`` inside the position window."""
        start = self.start("pos")
        if not start <= query < start + WINDOW["pos"]:
            self.offsets["pos"] = max(0, query - WINDOW["pos"] + 1)

    def slice(self, axis: str, n: int) -> slice:
        """The part of an axis of length ``n`` shown; ``query`` and ``key`` use the position window."""
        if axis == "bias":
            return slice(0, n)
        if axis in ("query", "key"):
            start = self.start("pos")
            return slice(min(start, max(0, n - WINDOW["pos"])), min(n, start + WINDOW["pos"]))
        start = self.start(axis)
        return slice(start, min(n, start + WINDOW[axis]))

    @staticmethod
    def title(axis: str, n: int, part: slice) -> str:
        """An axis title that says which part of it is shown (dimensions 0-based, positions 1-based)."""
        name = translate("walkthrough", _AXIS_NAMES[axis]) if _AXIS_NAMES[axis] else ""
        if part.stop - part.start < n and axis != "bias":
            first, last = (part.start, part.stop - 1) if axis in ("model", "k") else (part.start + 1, part.stop)
            return translate("walkthrough", "{axis} {first}–{last} of {n}").format(axis=name, first=first, last=last, n=n)
        return name

    def range_text(self, axis: str) -> str:
        """The scroll bar's label: which cells of ``axis`` are shown."""
        n = self.lengths[axis]
        s = self.start(axis)
        e = min(n, s + WINDOW[axis])
        name = translate("walkthrough", _SCROLL_NAMES[axis])
        return f"{name} {s}–{e - 1}/{n}" if axis != "pos" else f"{name} {s + 1}–{e}/{n}"


class WindowBars(QtCore.QObject):
    """A labelled scroll bar per long axis, added to a controls row: each shows where its axis's
    window of ``windows`` is and says when the user moves it (``moved(axis, start)``)."""

    moved = QtCore.Signal(str, int)

    def __init__(self, windows: AxisWindows, row: QtWidgets.QHBoxLayout, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.windows = windows
        self.scrollbars: dict[str, QtWidgets.QScrollBar] = {}
        self.labels: dict[str, QtWidgets.QLabel] = {}
        for key, tip in (("model", translate("walkthrough", "Scroll along d_model (columns of X, rows of W)")),
                         ("k", translate("walkthrough", "Scroll along d_k (columns of W_i, Q_i, K_i, V_i, Z_i)")),
                         ("pos", translate("walkthrough", "Scroll along the positions (rows and key columns)"))):
            bar = QtWidgets.QScrollBar(QtCore.Qt.Orientation.Horizontal)
            bar.setObjectName(f"walkScroll_{key}")
            bar.setToolTip(tip)
            bar.setMinimumWidth(120)
            bar.setMaximumWidth(200)
            lab = QtWidgets.QLabel("")
            lab.setObjectName(f"walkScrollLabel_{key}")
            row.addWidget(lab)
            row.addWidget(bar)
            bar.valueChanged.connect(self._on_scrollbar_moved)
            self.scrollbars[key] = bar
            self.labels[key] = lab

    def sync(self, shown: bool) -> None:
        """Fit each bar to its window; a bar shows where its axis does not fit (``shown``: a walkthrough is shown)."""
        if not shown:
            for bar in self.scrollbars.values():
                bar.setVisible(False)
            for lab in self.labels.values():
                lab.setVisible(False)
            return
        for axis, bar in self.scrollbars.items():
            extra = self.windows.hidden(axis)
            blocked = bar.blockSignals(True)
            bar.setRange(0, extra)
            bar.setPageStep(WINDOW[axis])
            bar.setValue(self.windows.start(axis))
            bar.blockSignals(blocked)
            bar.setVisible(extra > 0)
            self.labels[axis].setVisible(extra > 0)
        self.update_labels()

    def update_labels(self) -> None:
        for axis, lab in self.labels.items():
            lab.setText(self.windows.range_text(axis))

    def _on_scrollbar_moved(self, value: int) -> None:
        # bound methods, not lambdas holding the view: the view can be freed before the app
        sender = self.sender()
        self.moved.emit(next(k for k, bar in self.scrollbars.items() if bar is sender), value)
