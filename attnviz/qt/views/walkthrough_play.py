"""The walkthrough played as stages: :class:`StageStrip` draws one frame of
:func:`attnviz.core.analysis.walkthrough_stages.stage_frames` above the walkthrough's tables —
a caption that says what the frame computes, with its numbers, then up to three lines of small
tables (row ``i`` of each step, the cells the frame computes outlined). :func:`frame_lines`
says what each line holds; the numbers are the frame's, nothing is computed here.
:class:`StagePlayer` owns the strip and the row of controls that play it (Play/Pause, a stage
back and forward) on a timer.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.analysis.walkthrough_stages import N_STAGES, StageFrame, next_stage, stage_frames
from attnviz.core.data.pieces import display_piece
from attnviz.qt.core_text import kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.views.walkthrough_tables import StageSpec, StageTable, format_value
from attnviz.qt.views.walkthrough_windows import AxisWindows
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP, Theme
from attnviz.qt.widgets.heatmap import MINUS
from attnviz.qt.widgets.plots import pen

LINES, SLOTS = 3, 3  # lines of tables in the strip, tables in a line
DIMS = 6  # d_k columns a strip table shows (from the view's d_k window)
_HIDDEN = 16777215  # Qt's largest size: "no maximum"
PLAY_MS = 700  # how long Play shows each frame of the stages


@dataclass(frozen=True, eq=False)
class Cells:
    """One small table of a frame: ``values`` ``[row, col]`` with their labels, its title (HTML),
    the colour scale (``"signed"`` diverging ±``levels``, ``"weights"`` 0..1) and the cells lit
    (``(row, col, rows, cols)``, ``None``: none)."""

    title: str
    values: np.ndarray
    rows: Sequence[str]
    cols: Sequence[str]
    levels: tuple[float, float]
    lit: tuple[int, int, int, int] | None = None
    scale: str = "signed"


Line = tuple[tuple[str, Cells], ...]  # (operator before, table) pairs


def _num(x: float) -> str:
    return format_value(x) if not np.isfinite(x) else f"{x:.4f}".replace("-", MINUS)


def _term(x: float) -> str:
    """A number added to a sum: negative ones in brackets."""
    return f"({_num(x)})" if x < 0 else _num(x)


def _signed_levels(*arrays: Any) -> tuple[float, float]:
    values = np.concatenate([np.ravel(np.asarray(a, np.float64)) for a in arrays])
    finite = values[np.isfinite(values)]
    m = float(np.max(np.abs(finite))) if finite.size else 1.0
    return (-m, m) if m > 0 else (-1.0, 1.0)


class _Axes:
    """The labels and windows a frame's tables use: keys (the view's position window), d_k (``DIMS``
    from the view's window) and the chosen query's piece."""

    def __init__(self, walk: Any, keys: slice, dims: slice):
        self.walk, self.keys = walk, keys
        self.dims = slice(dims.start, min(walk.d_k, dims.start + DIMS))
        self.query = display_piece(walk.query_labels[walk.query])
        self.key_labels = [display_piece(p) for p in walk.key_labels[keys]]
        self.dim_labels = [str(d) for d in range(self.dims.start, self.dims.stop)]

    def row(self, title: str, values: np.ndarray, levels, lit: Sequence[int] = (), scale: str = "signed") -> Cells:
        """Row i over the keys in the window, the keys ``lit`` outlined (a run of them)."""
        shown = [c - self.keys.start for c in lit if self.keys.start <= c < self.keys.stop]
        box = (0, min(shown), 1, max(shown) - min(shown) + 1) if shown else None
        return Cells(title, np.asarray(values)[None, self.keys], [self.query], self.key_labels, levels, box, scale)


def frame_caption(frame: StageFrame, walk: Any) -> str:
    """What the frame computes, with its numbers (HTML; positions 1-based, dimensions 0-based)."""
    fields = dict(i=frame.query + 1, q=html.escape(display_piece(walk.query_labels[frame.query])), d_k=walk.d_k, n=len(frame.masked),
                  kind=kind_title(walk.kind), minus=MINUS, s=frame.sub + 1, steps=frame.subs,
                  scale=f"{frame.scale:.4g}" if frame.scale is not None else "")
    if frame.dot is not None:
        lo, hi = frame.dot.dims
        fields.update(j=frame.dot.key + 1, k=html.escape(display_piece(walk.key_labels[frame.dot.key])), lo=lo, last=hi - 1)
    if frame.out is not None:
        first, last = frame.out.keys[0] + 1, frame.out.keys[1]
        fields.update(keys=str(first) if first == last else f"{first}–{last}")
    text = _caption_text(frame, walk).format(**fields)
    note = _note(frame)
    return f"<b>{frame.stage + 1}/{N_STAGES} · {_stage_title(frame)}</b> — {text}" + (f"<br>{note}" if note else "")


def _note(frame: StageFrame) -> str:
    """The frame's sum, written out: the dot product so far, the weights' total, z_i's keys."""
    if frame.dot is not None:
        dot = frame.dot
        return (f"q<sub>{frame.query + 1}</sub> · k<sub>{dot.key + 1}</sub>: Σ<sub>d&lt;{dot.dims[1]}</sub> q[d]·k[d] = {_num(dot.before)} + "
                f"{_term(dot.partial - dot.before)} = <b>{_num(dot.partial)}</b>")
    if frame.stage == 3:
        return f"Σ<sub>j</sub> a<sub>{frame.query + 1}j</sub> = <b>{frame.total:.6f}</b>"
    if frame.out is not None:
        return f"z<sub>{frame.query + 1}</sub> = Σ<sub>j≤{frame.out.keys[1]}</sub> a<sub>{frame.query + 1}j</sub> v<sub>j</sub>"
    return ""


def _stage_title(frame: StageFrame) -> str:
    return ("Q<sub>i</sub>K<sub>i</sub><sup>T</sup>", "÷ √d<sub>k</sub>", "+ M", "softmax", "A<sub>i</sub>V<sub>i</sub>")[frame.stage]


def _caption_text(frame: StageFrame, walk: Any) -> str:
    """The caption's text, its numbers as ``{fields}`` of :func:`frame_caption`."""
    if frame.stage == 0:
        if frame.dot is not None:
            return translate("walkthrough_play", "q<sub>{i}</sub> · k<sub>{j}</sub> (query “{q}”, key “{k}”): dimensions {lo}–{last} "
                             "of d<sub>k</sub> = {d_k} · step {s}/{steps}")
        return translate("walkthrough_play", "q<sub>{i}</sub> · k<sub>j</sub> for every key j: row {i} (“{q}”) of Q<sub>i</sub>K<sub>i</sub><sup>T</sup>")
    if frame.stage == 1:
        text = (translate("walkthrough_play", "row {i} divided by √d<sub>k</sub> = √{d_k} = {scale}") if frame.scale is not None
                else translate("walkthrough_play", "this model does not divide by √d<sub>k</sub> (its weights fold the scale in)"))
        return text + (translate("walkthrough_play", ", then adds its position bias B") if walk.position_bias is not None else "")
    if frame.stage == 2:
        if frame.look_ahead:
            return translate("walkthrough_play", "look-ahead mask: the keys after query {i} are set to {minus}∞ (here {n})")
        padding = (translate("walkthrough_play", "padding mask: keys set to {minus}∞ (here {n})") if frame.masked
                   else translate("walkthrough_play", "padding mask: none"))
        return translate("walkthrough_play", "{kind}: no look-ahead mask · ") + padding
    if frame.stage == 3:
        return translate("walkthrough_play", "row {i} turned into weights a<sub>{i}j</sub> = e<sup>x<sub>j</sub></sup> / Σ e<sup>x</sup>, "
                         "summing to 1 (masked keys get 0)")
    return translate("walkthrough_play", "z<sub>{i}</sub> = Σ<sub>j</sub> a<sub>{i}j</sub> v<sub>j</sub>: key(s) {keys} added · "
                     "step {s}/{steps}")


def frame_lines(frame: StageFrame, walk: Any, keys: slice, dims: slice) -> list[Line]:
    """The frame's lines of tables (``keys``, ``dims``: the windows of the view's position and d_k axes)."""
    ax = _Axes(walk, keys, dims)
    if frame.stage == 0:
        if frame.dot is not None:
            return _dot_lines(frame, ax)
        return [(("", ax.row("Q<sub>i</sub>K<sub>i</sub><sup>T</sup>", frame.row, _signed_levels(walk.scores), frame.lit)),)]
    if frame.stage == 1:
        before = ax.row("Q<sub>i</sub>K<sub>i</sub><sup>T</sup>", walk.scores[frame.query], _signed_levels(walk.scores))
        op = f"÷ {frame.scale:.4g}" if frame.scale is not None else ""
        op += " + B" if walk.position_bias is not None else ""
        return [(("", before),), ((op, ax.row("÷ √d<sub>k</sub>", frame.row, _signed_levels(frame.row), frame.lit)),)]
    if frame.stage == 2:
        return _mask_lines(frame, ax)
    if frame.stage == 3:
        masked = ax.row("+ M", walk.masked_scores[frame.query], _signed_levels(walk.masked_scores))
        weights = ax.row("A<sub>i</sub> = softmax", frame.row, (0.0, 1.0), frame.lit, "weights")
        return [(("", masked),), (("softmax", weights),)]
    return _output_lines(frame, ax)


def _dot_lines(frame: StageFrame, ax: _Axes) -> list[Line]:
    dot, walk = frame.dot, ax.walk
    lo, hi = dot.dims
    cols = [str(d) for d in range(lo, hi)]
    box = (0, 0, 1, hi - lo)
    qk = _signed_levels(walk.q[frame.query], walk.k[dot.key])
    key = display_piece(walk.key_labels[dot.key])
    q = Cells("q<sub>i</sub>", dot.q[None], [ax.query], cols, qk, box)
    k = Cells("k<sub>j</sub> (K<sub>i</sub><sup>T</sup>[:, j])", dot.k[None], [key], cols, qk, box)
    products = Cells("q<sub>i</sub>[d]·k<sub>j</sub>[d]", dot.products[None], ["q·k"], cols,
                     _signed_levels(np.asarray(walk.q[frame.query], np.float64) * np.asarray(walk.k[dot.key], np.float64)), box)
    row = ax.row("Q<sub>i</sub>K<sub>i</sub><sup>T</sup>", frame.row, _signed_levels(walk.scores), frame.lit)
    return [(("", q), ("⊙", k)), (("=", products),), (("Σ →", row),)]


def _mask_lines(frame: StageFrame, ax: _Axes) -> list[Line]:
    walk, i = ax.walk, frame.query
    scaled = np.asarray(walk.scaled_scores[i], np.float64)
    if walk.position_bias is not None:
        scaled = scaled + np.asarray(walk.position_bias[i], np.float64)
    mask = ax.row("M", walk.mask[i], (-1.0, 1.0), frame.masked)
    return [(("", ax.row("÷ √d<sub>k</sub>", scaled, _signed_levels(walk.masked_scores))),), (("+", mask),),
            (("=", ax.row("+ M", frame.row, _signed_levels(walk.masked_scores), frame.masked)),)]


def _output_lines(frame: StageFrame, ax: _Axes) -> list[Line]:
    walk, out = ax.walk, frame.out
    lo, hi = out.keys
    rows = [r - ax.keys.start for r in range(lo, hi) if ax.keys.start <= r < ax.keys.stop]
    a = np.asarray(frame.row)[ax.keys, None]
    v = np.asarray(walk.v)[ax.keys, ax.dims]

    def lit(cols: int) -> tuple[int, int, int, int] | None:
        return (rows[0], 0, len(rows), cols) if rows else None

    weights = Cells("a<sub>ij</sub>", a, ax.key_labels, ["a"], (0.0, 1.0), lit(1), "weights")
    values = Cells("V<sub>i</sub>", v, ax.key_labels, ax.dim_labels, _signed_levels(walk.v), lit(v.shape[1]))
    terms = Cells("a<sub>ij</sub>v<sub>j</sub>", out.weighted[ax.keys, ax.dims], ax.key_labels, ax.dim_labels,
                  _signed_levels(np.asarray(frame.row, np.float64)[:, None] * np.asarray(walk.v, np.float64)), lit(v.shape[1]))
    z = Cells("z<sub>i</sub>", out.z[None, ax.dims], [ax.query], ax.dim_labels, _signed_levels(walk.z), (0, 0, 1, v.shape[1]))
    return [(("", weights), ("×", values), ("=", terms)), (("Σ<sub>j</sub> →", z),)]


class StripTable(StageTable):
    """A table of the strip: its colour scale set per frame, the cells a frame computes outlined."""

    def __init__(self, theme: Theme, key: str):
        super().__init__(theme, StageSpec("strip", "", "query", "key"), key)
        self.lit = QtWidgets.QGraphicsRectItem()
        self.lit.setZValue(12)
        self.lit.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
        self.addItem(self.lit)
        self._scale = "signed"
        self.apply_lit_pen(theme)

    def apply_lit_pen(self, theme: Theme) -> None:
        self.lit.setPen(pen(theme.selection, 2.5))

    def show_cells(self, cells: Cells, foreground: str) -> None:
        if cells.scale != self._scale:
            self.set_colormap(self.theme.colormap if cells.scale == "weights" else DIVERGING_COLORMAP)
            self._scale = cells.scale
        values = np.asarray(cells.values, np.float64)
        r, c = values.shape
        self.show_window(values, slice(0, r), slice(0, c), list(cells.rows), list(cells.cols), None, cells.levels, ("", ""))
        self.getViewBox().setRange(xRange=(-0.5, c - 0.5), yRange=(-0.5, r - 0.5), padding=0.0)  # also after a frame that hid it
        self.set_title(cells.title, foreground)
        if cells.lit is None:
            self.lit.setVisible(False)
            return
        row, col, rows, cols = cells.lit
        self.lit.setRect(QtCore.QRectF(col - 0.5, row - 0.5, cols, rows))
        self.lit.setVisible(True)


class StageStrip(pg.GraphicsLayout):
    """The played frame: a caption, then ``LINES`` lines of (operator, table) slots."""

    def __init__(self, theme: Theme):
        super().__init__()
        self.theme = theme
        self.layout.setVerticalSpacing(4)
        self.caption = pg.LabelItem("", size="9.5pt", color=theme.foreground, justify="left")
        self.addItem(self.caption, row=0, col=0)
        self.lines: list[pg.GraphicsLayout] = []
        self.tables: list[list[StripTable]] = []
        self.operators: list[list[pg.LabelItem]] = []
        for n in range(LINES):
            self._add_line(n)
        self._tallest = 0.0  # the strip keeps the height of its tallest frame: the tables below stay put while it plays

    def _add_line(self, n: int) -> None:
        line = self.addLayout(row=n + 1, col=0)
        line.layout.setHorizontalSpacing(4)
        tables, ops = [], []
        for s in range(SLOTS):
            op = pg.LabelItem("", size="12pt", color=self.theme.muted)
            table = StripTable(self.theme, f"strip{n}.{s}")
            line.addItem(op, row=0, col=2 * s)
            line.addItem(table, row=0, col=2 * s + 1)
            ops.append(op)
            tables.append(table)
        line.layout.addItem(QtWidgets.QGraphicsWidget(), 0, 2 * SLOTS)  # absorbs spare width
        line.layout.setColumnStretchFactor(2 * SLOTS, 1)
        self.lines.append(line)
        self.tables.append(tables)
        self.operators.append(ops)

    def show_frame(self, caption: str, lines: Sequence[Line]) -> None:
        self.caption.setText(caption, color=self.theme.foreground)
        for n in range(LINES):
            pairs = lines[n] if n < len(lines) else ()
            self.lines[n].setVisible(n < len(lines))  # before its tables: a line squeezed to nothing lays their axes out wrong
            self.lines[n].setMaximumHeight(_HIDDEN if n < len(lines) else 0)
            for s in range(SLOTS):
                self._show_slot(n, s, pairs[s] if s < len(pairs) else None)

    def _show_slot(self, n: int, s: int, pair: tuple[str, Cells] | None) -> None:
        table = self.tables[n][s]
        _set_shown(self.operators[n][s], pair[0] if pair else "", self.theme.muted)
        layout = self.lines[n].layout
        placed = any(layout.itemAt(k) is table for k in range(layout.count()))
        if pair is None:  # out of the line's layout (it keeps its size: a table squeezed to nothing lays its axes out wrong)
            table.setVisible(False)
            if placed:
                layout.removeItem(table)
            return
        if not placed:
            layout.addItem(table, 0, 2 * s + 1)
        table.setVisible(True)
        table.show_cells(pair[1], self.theme.foreground)

    def content_rect(self) -> QtCore.QRectF:
        """The scene rectangle of what the frame shows (the strip itself spans the canvas's width)."""
        rect = self.caption.item.sceneBoundingRect()
        for item in (*(t for row in self.tables for t in row), *(o for row in self.operators for o in row)):
            if item.isVisible() and item.parentItem() is not None and item.parentItem().isVisible():
                rect = rect.united(item.sceneBoundingRect())
        return rect

    def keep_height(self) -> None:
        """Hold at least the height of the tallest frame shown since :meth:`forget_height`."""
        for item in (*self.lines, self):  # inner layouts first: the hint is the one of the frame now shown
            item.layout.invalidate()
            item.updateGeometry()
        need = self.layout.effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize).height()  # the layout's own, not the minimum set here
        self._tallest = max(self._tallest, need)
        self.setMinimumHeight(self._tallest)

    def forget_height(self) -> None:
        self._tallest = 0.0
        self.setMinimumHeight(0)

    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        for row in self.tables:
            for table in row:
                table.apply_theme(theme)
                table.apply_lit_pen(theme)


def _set_shown(label: pg.LabelItem, text: str, color: str) -> None:
    """A label with ``text``, or none taking no room where ``text`` is empty."""
    label.setText(text, color=color)
    label.setVisible(bool(text))
    label.setMaximumWidth(_HIDDEN if text else 0)


class StagePlayer(QtCore.QObject):
    """The chosen query's row played stage by stage (QK^T one dot product at a time, ÷ √d_k, + M,
    softmax, · V) in a :class:`StageStrip`: the frames of the walkthrough, the one shown, and
    ``row``, the controls that move it — Play/Pause, a stage back and forward, and which stage is
    shown ("2/5") — with the ``timer`` that plays them. The strip shows the keys and d_k dimensions
    of ``windows``'s windows. ``resized``: the strip's size changed (fit the canvas again)."""

    resized = QtCore.Signal()

    def __init__(self, theme: Theme, windows: AxisWindows, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.windows = windows
        self.strip = StageStrip(theme)
        self._walk: Any = None
        self._frames: tuple[StageFrame, ...] = ()  # the stages of the chosen query's row
        self._at = 0  # the frame shown
        self._strip_size: tuple[float, float] | None = None
        self.row = self._build_row()
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(PLAY_MS)
        self.timer.timeout.connect(self._on_tick)

    def _build_row(self) -> QtWidgets.QHBoxLayout:
        """The controls, in a row of their own under the view's selectors (that row has no room to spare)."""
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(6, 0, 6, 0)
        row.setSpacing(6)
        row.addWidget(QtWidgets.QLabel(translate("walkthrough", "Stages of the query's row:")))
        self.play_button = _tool_button(row, "walkPlay", translate("walkthrough", "Play"),
                                        translate("walkthrough", "Play the chosen query's row stage by stage"), self.toggle)
        self.prev_button = _tool_button(row, "walkStagePrev", "◀", translate("walkthrough", "The previous stage"), self.back)
        self.stage_label = QtWidgets.QLabel(f"1/{N_STAGES}")
        self.stage_label.setObjectName("walkStage")
        self.stage_label.setToolTip(translate("walkthrough", "The stage shown: QKᵀ, ÷√d_k, mask, softmax, ·V"))
        row.addWidget(self.stage_label)
        self.next_button = _tool_button(row, "walkStageNext", "▶", translate("walkthrough", "The next stage"), self.forward)
        row.addStretch(1)
        return row

    def frames(self) -> tuple[StageFrame, ...]:
        """The frames of the chosen query's row, stage by stage (empty without a walkthrough)."""
        return self._frames

    def frame(self) -> StageFrame | None:
        """The frame shown."""
        return self._frames[self._at] if self._frames else None

    def restage(self, walk: Any) -> None:
        """The frames of ``walk``'s query row; the same frame index where it still exists."""
        self._walk = walk
        self._frames = stage_frames(walk) if walk is not None else ()
        self._at = min(self._at, max(0, len(self._frames) - 1))
        self.strip.forget_height()

    def show_frame(self, index: int) -> None:
        """Show frame ``index`` (clamped)."""
        if not self._frames:
            return
        self._at = max(0, min(int(index), len(self._frames) - 1))
        self.show()

    def back(self) -> None:
        self._step(-1)

    def forward(self) -> None:
        self._step(1)

    def _step(self, step: int) -> None:
        if self._frames:
            self.pause()
            self.show_frame(next_stage(self._frames, self._at, step))

    def is_playing(self) -> bool:
        return self.timer.isActive()

    def toggle(self) -> None:
        if self.is_playing():
            self.pause()
        elif self._frames:
            if self._at == len(self._frames) - 1:
                self.show_frame(0)  # played to the end: from the start again
            self.timer.start()
            self.play_button.setText(translate("walkthrough", "Pause"))

    def pause(self) -> None:
        self.timer.stop()
        self.play_button.setText(translate("walkthrough", "Play"))

    def _on_tick(self) -> None:
        if self._at + 1 >= len(self._frames):
            self.pause()
            return
        self.show_frame(self._at + 1)
        if self._at == len(self._frames) - 1:
            self.pause()

    def show(self) -> None:
        """Draw the frame shown in the strip (through the windows as they are now); says ``resized``
        where the strip's size changed."""
        w = self._walk
        for button in (self.play_button, self.prev_button, self.next_button):
            button.setEnabled(bool(self._frames))
        if w is None or not self._frames:
            self.stage_label.setText(f"–/{N_STAGES}")
            return
        frame = self._frames[self._at]
        self.stage_label.setText(f"{frame.stage + 1}/{N_STAGES}")
        keys = self.windows.slice("key", w.x_kv.shape[0])
        self.strip.show_frame(frame_caption(frame, w), frame_lines(frame, w, keys, self.windows.slice("k", w.d_k)))
        self.strip.keep_height()
        size = self.strip.effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize)
        if (size.width(), size.height()) != self._strip_size:
            self._strip_size = (size.width(), size.height())
            self.resized.emit()


def _tool_button(row: QtWidgets.QHBoxLayout, name: str, text: str, tip: str, slot) -> QtWidgets.QToolButton:
    button = QtWidgets.QToolButton(objectName=name, text=text)
    button.setToolTip(tip)
    button.clicked.connect(slot)
    row.addWidget(button)
    return button
