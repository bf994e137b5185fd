"""One-head walkthrough: the tutorial's worked example on the live model, step by step.

For a chosen kind, layer, head and query token the view shows the actual numbers of

    Q_i = X W_i^Q + b_i^Q    K_i = X W_i^K + b_i^K    V_i = X W_i^V + b_i^V   (the biases as tables of their own)
    Q_i K_iᵀ  →  ÷ √d_k  →  + M  →  softmax = A_i
    Z_i = A_i V_i  →  Concat(Z_1..Z_h)  ·  W^O

as small tables with heatmap colouring (every cell carries its value). Long dimensions
(``d_model``, ``d_k``, long sentences) are elided to a window; the scroll bars in the controls
row move the windows. Rows are positions (queries or keys), columns are dimensions (0-based)
or keys; the chosen query's row is outlined in every table that has one. Positions are 1-based
(query 9 is the status bar's step 9). For cross-attention the keys and values are computed from
the encoder's output, and the labels say so (K_i = C_encoder W_i^K, X·C_encoderᵀ). Hovering a cell
of Z_i writes out its weighted sum Σⱼ a_ij v_j with the terms.

The view renders a :class:`attnviz.core.analysis.walkthrough.WalkthroughFrame` (a
``HeadWalkthrough`` and the layer counts); it never computes the model: its spec's data is an
analysis that runs in a worker. Changing kind, layer or head asks for a new walkthrough through
``chose``; changing the query only moves the highlight.

The tables and their formatting are in :mod:`attnviz.qt.views.walkthrough_tables`; which window
of each long axis they show is an :class:`AxisWindows` the view owns.

Above the tables the chosen query's row is played as stages (QK^T one dot product at a time,
÷ √d_k, + M, softmax, · V): Play steps through the frames of
:func:`attnviz.core.analysis.walkthrough_stages.stage_frames` on a timer, the arrows move a whole
stage; the strip that draws a frame is :mod:`attnviz.qt.views.walkthrough_play`. Playing
recomputes nothing: the frames are read from the walkthrough the view holds.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.walkthrough import HeadWalkthrough, WalkthroughFrame, walkthrough_frame
from attnviz.core.analysis.walkthrough_stages import N_STAGES, StageFrame, next_stage, stage_frames
from attnviz.core.data.pieces import WORD_START, display_piece
from attnviz.core.model.sites import KINDS
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice, query_axis
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.spec import SELECTORS, RegionFn, TourAsk, ViewSpec
from attnviz.qt.views.walkthrough_play import StageStrip, frame_caption, frame_lines
from attnviz.qt.views.walkthrough_tables import (
    CROSS_SECTION_1,
    CROSS_TITLES,
    SCORES_AND_WEIGHTS,
    SECTION_2,
    SECTIONS,
    UNSCALED_TITLE,
    StageSpec,
    StageTable,
    format_value,
    plain,
    softmax_input,
    title_text,
)
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.widgets.heatmap import MINUS, HoverInfo
from attnviz.qt.widgets.regions import Region, cells, items_region

#: Cells shown at most along each kind of axis before the rest is elided (scroll to see it).
if TYPE_CHECKING:
    from attnviz.qt.session import Session

WINDOW = {"model": 8, "k": 8, "pos": 12}
_AXIS_NAMES = {"query": QT_TRANSLATE_NOOP("walkthrough", "queries"), "key": QT_TRANSLATE_NOOP("walkthrough", "keys"), "model": "d_model",
               "k": "d_k", "bias": ""}  # shown as translate("walkthrough", name)
PLAY_MS = 700  # how long Play shows each frame of the stages
Z_TERMS = 6  # terms of Σⱼ a_ij v_j written out in the read-out (the largest weights), the rest summed
_SCROLL_NAMES = {"model": "d_model", "k": "d_k", "pos": QT_TRANSLATE_NOOP("walkthrough", "positions")}  # shown translated
ROW_SUM_NOTE = QT_TRANSLATE_NOOP("walkthrough", "   (row sums to 1)")  # after a weight in the read-out


def _with_query(walk: Any, query: int) -> Any:
    """``walk`` following another query row."""
    if hasattr(walk, "with_query"):
        return walk.with_query(int(query))
    return replace(walk, query=int(query))


def z_sum_text(walk: Any, row: int, col: int) -> str:
    """Z_i[row, col] written out as Σⱼ a_ij v_j: the terms of the largest weights (key j 1-based),
    the rest summed, then the total. Masked keys (weight 0) are left out."""
    a = np.asarray(walk.weights[row], np.float64)  # [key]
    v = np.asarray(walk.v[:, col], np.float64)  # [key]
    keys = [j for j in np.argsort(-a, kind="stable") if a[j] > 0]
    shown = sorted(keys[:Z_TERMS])
    terms = [translate("walkthrough", "{weight}·{value} (key {key})").format(weight=f"{a[j]:.3f}", value=_signed(v[j]), key=j + 1) for j in shown]
    rest = keys[Z_TERMS:]
    if rest:
        terms.append(translate("walkthrough", "{sum} ({n} more keys)").format(sum=_signed(float(np.sum(a[rest] * v[rest]))), n=len(rest)))
    total = float(np.sum(a * v))
    return "Σⱼ a_ij v_j = " + " + ".join(terms) + f" = {total:.5f}"


def _signed(x: float) -> str:
    """A term's factor: negative numbers in brackets, with a real minus sign."""
    return f"({MINUS}{abs(x):.3f})" if x < 0 else f"{x:.3f}"


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


class QtWalkthroughView(FigureViewBase):
    """One head's computation as tables (see the module docstring).

    ``set_data(WalkthroughFrame(walk, layers))``: ``walk`` is a ``HeadWalkthrough``
    (``attnviz.core.analysis.walkthrough.walkthrough_frame``); ``layers`` maps kind → number of
    layers (fills the layer selector). ``chose({kind, layer, head, mode, query})`` asks for
    another walkthrough (0-based layer/head/query).
    """

    queryChanged = QtCore.Signal(int)
    hovered = QtCore.Signal(object)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self._walk: Any = None
        self._layers: dict[str, int] = {}
        self._fitted: tuple | None = None  # what the canvas was last sized to (see _refresh)
        self.windows = AxisWindows()
        self._frames: tuple[StageFrame, ...] = ()  # the stages of the chosen query's row
        self._at = 0  # the frame shown
        self._strip_size: tuple[float, float] | None = None
        self._stages_only = False  # the figure is the title and the stages (an animation of them)
        self._build_controls()
        self._build_scroll_area()
        self._build_sections()
        self._build_head_marks()
        self._update_controls()
        self._refresh()

    # construction -----------------------------------------------------------------------
    def _build_controls(self) -> None:
        """The selectors (kind, layer, head, query) and a scroll bar per long axis."""
        self.kind_combo = self._add_control("", make_combo("walkKindCombo", translate(
            "walkthrough", "Which attention: encoder self, decoder masked self or cross")))
        self.layer_combo = self._add_control(translate("walkthrough", "Layer"), make_combo("walkLayerCombo", translate("walkthrough", "Layer")))
        self.head_combo = self._add_control(translate("walkthrough", "Head"), make_combo(
            "walkHeadCombo", translate("walkthrough", "Head i: the slices W_i^Q, W_i^K, W_i^V and Z_i")))
        self.query_combo = self._add_control(translate("walkthrough", "Query"), make_combo(
            "walkQueryCombo", translate("walkthrough", "The query token whose row is followed")))
        self.controls.addSpacing(8)
        self.scrollbars: dict[str, QtWidgets.QScrollBar] = {}
        self._scroll_labels: dict[str, QtWidgets.QLabel] = {}
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
            self.controls.addWidget(lab)
            self.controls.addWidget(bar)
            bar.valueChanged.connect(self._on_scrollbar_moved)
            self.scrollbars[key] = bar
            self._scroll_labels[key] = lab
        self.controls.addStretch(1)
        self._build_play_controls()
        for combo in (self.kind_combo, self.layer_combo, self.head_combo):
            combo.currentIndexChanged.connect(self._on_selection_changed)
        self.query_combo.currentIndexChanged.connect(self._on_query_changed)

    def _build_play_controls(self) -> None:
        """Play/Pause, a stage back and forward, and which stage is shown ("2/5"), in a row of
        their own under the selectors (the selectors' row has no room to spare)."""
        self.play_row = QtWidgets.QHBoxLayout()
        self.play_row.setContentsMargins(6, 0, 6, 0)
        self.play_row.setSpacing(6)
        self.play_row.addWidget(QtWidgets.QLabel(translate("walkthrough", "Stages of the query's row:")))
        self.play_button = self._tool_button("walkPlay", translate("walkthrough", "Play"),
                                             translate("walkthrough", "Play the chosen query's row stage by stage"), self.toggle_play)
        self.prev_button = self._tool_button("walkStagePrev", "◀", translate("walkthrough", "The previous stage"), self.stage_back)
        self.stage_label = QtWidgets.QLabel(f"1/{N_STAGES}")
        self.stage_label.setObjectName("walkStage")
        self.stage_label.setToolTip(translate("walkthrough", "The stage shown: QKᵀ, ÷√d_k, mask, softmax, ·V"))
        self.play_row.addWidget(self.stage_label)
        self.next_button = self._tool_button("walkStageNext", "▶", translate("walkthrough", "The next stage"), self.stage_forward)
        self.play_row.addStretch(1)
        self.layout().insertLayout(1, self.play_row)
        self.play_timer = QtCore.QTimer(self)
        self.play_timer.setInterval(PLAY_MS)
        self.play_timer.timeout.connect(self._on_play_tick)

    def _tool_button(self, name: str, text: str, tip: str, slot) -> QtWidgets.QToolButton:
        button = QtWidgets.QToolButton(objectName=name, text=text)
        button.setToolTip(tip)
        button.clicked.connect(slot)
        self.play_row.addWidget(button)
        return button

    def _build_scroll_area(self) -> None:
        """Put the figure canvas in a scroll area: the tables keep their size, the area scrolls."""
        self._scroll_canvas(fit=False)  # sized to the tables in _fit_canvas
        self.canvas.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.canvas.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def _build_sections(self) -> None:
        """The figure: a title, then the three sections, each a nested grid of tables and operators."""
        ci = self.canvas.ci
        ci.layout.setVerticalSpacing(10)
        self.tables: dict[str, StageTable] = {}
        self._section_labels: list[pg.LabelItem] = []
        self._operators: list[pg.LabelItem] = []
        self._lines: list[pg.GraphicsLayout] = []
        self._sections: list[pg.GraphicsLayout] = []
        self._bias_items: list[pg.GraphicsObject] = []  # B and its "+": shown only for a model with a position bias
        self.strip = StageStrip(self.theme)
        ci.addItem(self.strip, row=1, col=0)
        row = 2
        for title, rows in SECTIONS:
            self._add_section_label(row, title)
            section = ci.addLayout(row=row + 1, col=0)
            section.layout.setVerticalSpacing(8)
            self._sections.append(section)
            for r, items in enumerate(rows):
                line = section.addLayout(row=r, col=0)  # one layout per line: tables keep their own widths
                self._lines.append(line)
                for col, item in enumerate(items):
                    if isinstance(item, StageSpec):
                        key = item.name if item.name not in self.tables else f"{item.name}@{row}.{r}"
                        widget = self._make_table(item, key)
                    else:
                        widget = self._make_operator(item)
                    line.addItem(widget, row=0, col=col)
                    if _is_bias(item) or (col and _is_bias(items[col - 1])):
                        self._bias_items.append(widget)
                line.layout.addItem(QtWidgets.QGraphicsWidget(), 0, len(items))  # absorbs spare width
                line.layout.setColumnStretchFactor(len(items), 1)
            row += 2

    def _build_head_marks(self) -> None:
        """Where head i sits: its columns in the concat, its rows in W^O."""
        self.head_marks: list[QtWidgets.QGraphicsRectItem] = []
        for key in ("concat", "w_o"):
            mark = QtWidgets.QGraphicsRectItem()
            mark.setZValue(12)
            mark.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
            self.tables[key].addItem(mark)
            self.head_marks.append(mark)
        self._apply_mark_pens()

    def _make_table(self, spec: StageSpec, key: str) -> StageTable:
        t = StageTable(self.theme, spec, key)
        t.sigHovered.connect(self._on_table_hovered)
        self.tables[key] = t
        return t

    def _make_operator(self, text: str) -> pg.LabelItem:
        item = pg.LabelItem(text, size="16pt", color=self.theme.muted)
        item.setFixedWidth(24)
        self._operators.append(item)
        return item

    def _add_section_label(self, row: int, text: str) -> None:
        item = pg.LabelItem(title_text(text), size="9.5pt", color=self.theme.muted, justify="left")
        self.canvas.ci.addItem(item, row=row, col=0)
        self._section_labels.append(item)

    def _apply_mark_pens(self) -> None:
        pen = pg.mkPen(self.theme.selection, width=2.5)
        pen.setCosmetic(True)
        for m in self.head_marks:
            m.setPen(pen)

    # data ---------------------------------------------------------------------------------
    def set_data(self, frame: WalkthroughFrame) -> None:
        """Show ``frame.walk``; the tables are updated in place. Windows keep their place where
        possible; the d_model window moves to head i's columns when the head changes."""
        prev, walk = self._walk, frame.walk
        self._layers = {k: int(v) for k, v in frame.layers.items() if k in KINDS}
        self._walk = walk
        self.windows.set_lengths(walk)
        if prev is None or prev.head != walk.head or prev.d_model != walk.d_model:
            self.windows.move("model", walk.head * walk.d_k)
        self._restage()
        self._update_controls()
        self._follow_query()
        self._refresh()

    def data(self) -> "HeadWalkthrough | None":
        return self._walk

    def has_data(self) -> bool:
        return self._walk is not None

    def query(self) -> int | None:
        return None if self._walk is None else int(self._walk.query)

    def set_query(self, query: int) -> None:
        """Follow another query row (no recompute; every row is in the walkthrough)."""
        if self._walk is None:
            return
        self._walk = _with_query(self._walk, query)
        self._restage()
        self._update_controls()
        self._follow_query()
        self._refresh()

    def scroll_to(self, axis: str, start: int) -> None:
        """Move the window of ``axis`` ("model", "k" or "pos") to ``start`` (clamped)."""
        self.windows.move(axis, start)
        self._update_controls()
        self._refresh()

    def table(self, name: str) -> StageTable:
        """The first table of a walkthrough field (``"x"``, ``"q"``, ``"weights"``, …)."""
        return self.tables[name]

    def shown(self, name: str) -> np.ndarray:
        """The window of ``name`` the view currently shows (as drawn, −∞ kept)."""
        return np.asarray(self.table(name).raw_matrix())

    # stages -------------------------------------------------------------------------------
    def stage_frames(self) -> tuple[StageFrame, ...]:
        """The frames of the chosen query's row, stage by stage (empty without data)."""
        return self._frames

    def stage_frame(self) -> StageFrame | None:
        """The frame shown above the tables."""
        return self._frames[self._at] if self._frames else None

    def show_stage_frame(self, index: int) -> None:
        """Show frame ``index`` of :meth:`stage_frames` (clamped)."""
        if not self._frames:
            return
        self._at = max(0, min(int(index), len(self._frames) - 1))
        self._show_stage()

    def stage_back(self) -> None:
        self._step_stage(-1)

    def stage_forward(self) -> None:
        self._step_stage(1)

    def _step_stage(self, step: int) -> None:
        if self._frames:
            self.pause()
            self.show_stage_frame(next_stage(self._frames, self._at, step))

    def is_playing(self) -> bool:
        return self.play_timer.isActive()

    def toggle_play(self) -> None:
        if self.is_playing():
            self.pause()
        elif self._frames:
            if self._at == len(self._frames) - 1:
                self.show_stage_frame(0)  # played to the end: from the start again
            self.play_timer.start()
            self.play_button.setText(translate("walkthrough", "Pause"))

    def pause(self) -> None:
        self.play_timer.stop()
        self.play_button.setText(translate("walkthrough", "Play"))

    def _on_play_tick(self) -> None:
        if self._at + 1 >= len(self._frames):
            self.pause()
            return
        self.show_stage_frame(self._at + 1)
        if self._at == len(self._frames) - 1:
            self.pause()

    def set_stages_only(self, on: bool) -> None:
        """Make the figure (what an export draws) the title and the stages alone, or the whole view."""
        self._stages_only = bool(on)

    def figure_rect(self) -> QtCore.QRectF | None:
        if not self._stages_only or self._walk is None:
            return None
        title = self.title.sceneBoundingRect()
        shown = self.title.mapRectToScene(self.title.text_rect()).united(self.strip.content_rect())
        return QtCore.QRectF(title.left(), title.top(), shown.right() + 12 - title.left(), self.strip.sceneBoundingRect().bottom() + 6 - title.top())

    def _restage(self) -> None:
        """The frames of the walkthrough's query row; the same frame index where it still exists."""
        w = self._walk
        self._frames = stage_frames(w) if w is not None else ()
        self._at = min(self._at, max(0, len(self._frames) - 1))
        self.strip.forget_height()

    def _show_stage(self) -> None:
        """Draw the frame shown in the strip; the canvas is fitted again where the strip's size changed."""
        w = self._walk
        controls = (self.play_button, self.prev_button, self.next_button)
        for button in controls:
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
            self._fit_canvas()

    # internals ------------------------------------------------------------------------------
    def _levels(self, spec: StageSpec, full: np.ndarray) -> tuple[float, float]:
        if spec.scale == "weights":
            return (0.0, 1.0)
        if spec.scale == "mask":
            return (-1.0, 1.0)
        w = self._walk
        if spec.name in ("scaled_scores", "position_bias") and w.position_bias is not None:  # B on the scores' scale
            full = np.concatenate([np.ravel(w.scaled_scores), np.ravel(w.position_bias)])
        finite = np.asarray(full)[np.isfinite(full)]
        m = float(np.max(np.abs(finite))) if finite.size else 1.0
        return (-m, m) if m > 0 else (-1.0, 1.0)

    def _set_content_visible(self, visible: bool) -> None:
        for item in (*self._sections, *self._section_labels, self.strip):
            item.setVisible(visible)

    def _refresh(self) -> None:
        w = self._walk
        self._set_title()
        self._set_content_visible(w is not None)
        if w is None:
            self._fitted = None
            self._show_stage()
            self._fit_canvas()
            return
        self._show_bias(w.position_bias is not None)
        shape = [w.position_bias is not None]  # what the layout depends on: each table's window, labels and titles
        for table in self.tables.values():
            spec = table.spec
            if getattr(w, spec.name) is None:
                continue
            full = np.asarray(getattr(w, spec.name))
            if full.ndim == 1:  # a bias: one row
                full = full[None, :]
            rows = self.windows.slice(spec.rows, full.shape[0])
            cols = self.windows.slice(spec.cols, full.shape[1])
            highlight = None
            if spec.highlight and spec.rows == "query" and rows.start <= w.query < rows.stop:
                highlight = w.query - rows.start
            titles = (AxisWindows.title(spec.rows, full.shape[0], rows), AxisWindows.title(spec.cols, full.shape[1], cols))
            row_labels, col_labels = self._labels(spec.rows, full.shape[0]), self._labels(spec.cols, full.shape[1])
            table.show_window(full, rows, cols, row_labels, col_labels, highlight, self._levels(spec, full), titles)
            shape.append((rows.stop - rows.start, cols.stop - cols.start, titles, tuple(row_labels[rows]), tuple(col_labels[cols])))
            title = self._stage_title(spec)
            if w.kind == "cross" and spec.name in CROSS_TITLES and spec.title != "V<sub>i</sub>":  # not section 3's plain V_i
                title = CROSS_TITLES[spec.name]
            text = title_text(title) + ("  ⋯" if table.elided() else "")
            table.set_title(text, self.theme.foreground)
            shape.append(text)
        section_1 = title_text(CROSS_SECTION_1 if w.kind == "cross" else SECTIONS[0][0])
        section_2 = SECTION_2.format(scores=translate("walkthrough_tables", SCORES_AND_WEIGHTS),
                                     softmax=softmax_input(w.scaled, w.position_bias is not None))
        for label, text in ((self._section_labels[0], section_1), (self._section_labels[1], section_2)):
            if label.text != text:
                label.setText(text, color=self.theme.muted)
        self._place_head_marks()
        self._update_scroll_labels()
        shape.append((section_1, section_2))
        self._show_stage()
        if tuple(shape) != self._fitted:  # a step that changes no table's shape or text keeps the layout as it is
            self._fitted = tuple(shape)
            self._fit_canvas()

    def _show_bias(self, shown: bool) -> None:
        """The B table and its "+" take room only for a model with a position bias."""
        for item in self._bias_items:
            item.setVisible(shown)
            item.setMaximumWidth(16777215 if shown else 0)

    def _stage_title(self, spec: StageSpec) -> str:
        """A table's title as this model computes the step: no ÷√d_k, + B."""
        w = self._walk
        if spec.name == "scaled_scores" and not w.scaled:
            return translate("walkthrough_tables", UNSCALED_TITLE)
        if spec.name == "masked_scores":
            return softmax_input(w.scaled, w.position_bias is not None).replace(" / ", "/")
        return spec.title

    def _place_head_marks(self) -> None:
        w = self._walk
        lo, hi = w.head * w.d_k, (w.head + 1) * w.d_k
        concat, wo = self.tables["concat"], self.tables["w_o"]
        # concat: head i's columns; W^O: the same rows
        c_cols = concat.window[1]
        a, b = max(lo, c_cols.start), min(hi, c_cols.stop)
        rows = concat.window[0]
        if a < b:
            self.head_marks[0].setRect(QtCore.QRectF(a - c_cols.start - 0.5, -0.5, b - a, rows.stop - rows.start))
            self.head_marks[0].setVisible(True)
        else:
            self.head_marks[0].setVisible(False)
        w_rows, w_cols = wo.window
        a, b = max(lo, w_rows.start), min(hi, w_rows.stop)
        if a < b:
            self.head_marks[1].setRect(QtCore.QRectF(-0.5, a - w_rows.start - 0.5, w_cols.stop - w_cols.start, b - a))
            self.head_marks[1].setVisible(True)
        else:
            self.head_marks[1].setVisible(False)

    def _fit_canvas(self) -> None:
        """Size the canvas to its tables (the scroll area scrolls the rest); without data it fills the view."""
        if self._walk is None:
            self.canvas.setMinimumSize(0, 0)
            self.canvas.setMaximumSize(16777215, 16777215)
            self.scroll.setWidgetResizable(True)
            return
        self.scroll.setWidgetResizable(False)
        ci = self.canvas.ci
        for item in (*self.strip.lines, self.strip, *self._lines, *self._sections, ci):  # inner layouts first: hints propagate upwards now, not on the next event
            item.layout.invalidate()
            item.updateGeometry()
        hint = ci.effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize)
        w = max(480, int(math.ceil(hint.width())) + 14)
        h = max(240, int(math.ceil(hint.height())) + 14)
        if self.canvas.size() != QtCore.QSize(w, h) or self.canvas.minimumSize() != QtCore.QSize(w, h):
            self.canvas.setFixedSize(w, h)

    def _what(self) -> tuple[str, str]:
        w = self._walk
        if w is None:
            return (translate("walkthrough", "One-head walkthrough"),
                    translate("walkthrough", "choose a model and a sentence; the numbers of one head appear here"))
        q = display_piece(w.query_labels[w.query])
        title = translate("walkthrough", "{kind} · layer {layer} · head {head} of {heads} · query “{query}” (row {row})").format(
            kind=kind_title(w.kind), layer=w.layer + 1, head=w.head + 1, heads=w.n_heads, query=q, row=w.query + 1)
        i = w.head + 1
        scores = f"Q_{i}K_{i}ᵀ / √d_k" if w.scaled else f"Q_{i}K_{i}ᵀ"
        bias = " + B" if w.position_bias is not None else ""
        d_k = f"d_k = d_model / h = {w.d_k}" if w.d_k * w.n_heads == w.d_model else f"d_k = {w.d_k}"
        root = f"√d_k = {math.sqrt(w.d_k):.3g}" if w.scaled else translate("walkthrough", "no ÷√d_k")
        formula = f"Z_{i} = softmax({scores}{bias} + M) V_{i}  ·  d_model = {w.d_model}, h = {w.n_heads}, {d_k}, {root}  ·  "
        formula += translate("walkthrough", "Z_{i} fills columns {first}–{last} of Concat(Z_1..Z_h)").format(
            i=i, first=w.head * w.d_k, last=(w.head + 1) * w.d_k - 1)
        return title, formula

    def _set_title(self) -> None:
        self.title.set_title(*self._what())
        self.title.set_legend(((WORD_START, self.theme.muted, translate("walkthrough", "= start of a word")),
                               ("", "", translate("walkthrough", "positions 1-based, dimensions 0-based"))) if self._walk is not None else ())

    def _update_controls(self) -> None:
        w = self._walk
        kinds = [k for k in KINDS if self._layers.get(k)] or ([w.kind] if w is not None else [])
        set_combo_items(self.kind_combo, [(kind_title(k), k) for k in kinds], w.kind if w else None)
        n_layers = self._layers.get(w.kind, 0) if w else 0
        set_combo_items(self.layer_combo, [(str(i + 1), i) for i in range(n_layers)], w.layer if w else None)
        set_combo_items(self.head_combo, [(str(i + 1), i) for i in range(w.n_heads if w else 0)], w.head if w else None)
        queries = [(f"{i + 1} · {display_piece(p)}", i) for i, p in enumerate(w.query_labels)] if w else []
        set_combo_items(self.query_combo, queries, w.query if w else None)
        for c in (self.kind_combo, self.layer_combo, self.head_combo, self.query_combo):
            c.setEnabled(w is not None)
        self._update_scrollbars()

    # windows and scroll bars ------------------------------------------------------------
    def _follow_query(self) -> None:
        """Keep the chosen query inside the position window."""
        self.windows.follow(self._walk.query)
        self._update_scrollbars()

    def _labels(self, axis: str, n: int) -> list[str]:
        w = self._walk
        if axis == "query":
            return list(w.query_labels)
        if axis == "key":
            return list(w.key_labels)
        if axis == "bias":
            return ["b"]
        return [str(i) for i in range(n)]

    def _update_scrollbars(self) -> None:
        if self._walk is None:
            for bar in self.scrollbars.values():
                bar.setVisible(False)
            for lab in self._scroll_labels.values():
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
            self._scroll_labels[axis].setVisible(extra > 0)
        self._update_scroll_labels()

    def _update_scroll_labels(self) -> None:
        if self._walk is None:
            return
        for axis, lab in self._scroll_labels.items():
            lab.setText(self.windows.range_text(axis))

    def _on_scrollbar_moved(self, value: int) -> None:
        # bound methods, not lambdas holding the view: the view can be freed before the app
        sender = self.sender()
        self._on_scrolled(next(k for k, bar in self.scrollbars.items() if bar is sender), value)

    def _on_scrolled(self, axis: str, value: int) -> None:
        self.windows.move(axis, value)
        if self._walk is not None:
            self._refresh()

    # events -----------------------------------------------------------------------------
    def _on_selection_changed(self) -> None:
        w = self._walk
        if w is None:
            return
        kind = self.kind_combo.currentData() or w.kind
        layer = self.layer_combo.currentData()
        head = self.head_combo.currentData()
        layer = 0 if layer is None else int(layer)
        n_layers = self._layers.get(kind, 0)
        if n_layers:
            layer = min(layer, n_layers - 1)
        head = 0 if head is None else int(head)
        query = w.query if kind == w.kind or (kind != "encoder" and w.kind != "encoder") else 0
        self.chose.emit({"kind": kind, "layer": layer, "head": head, "mode": "head", "query": int(query)})

    def _on_query_changed(self) -> None:
        q = self.query_combo.currentData()
        if self._walk is None or q is None or int(q) == self._walk.query:
            return
        self.set_query(int(q))
        self.queryChanged.emit(int(q))

    def _on_table_hovered(self, info: HoverInfo | None) -> None:
        self._on_hovered(self.sender().key, info)

    def _on_hovered(self, key: str, info: HoverInfo | None) -> None:
        if info is None or self._walk is None:
            self.readout.setText(" ")
            self.hovered.emit(None)
            self.queryHovered.emit(self._walk.kind if self._walk is not None else "", -1)
            return
        table = self.tables[key]
        spec = table.spec
        row = table.window[0].start + info.row
        col = table.window[1].start + info.col
        self.queryHovered.emit(self._walk.kind, row if spec.rows == "query" else -1)
        value = format_value(info.value) if not math.isfinite(info.value) else f"{info.value:.5f}"
        text = f"{plain(title_text(spec.title))}   [{self._where(spec.rows, row)}, {self._where(spec.cols, col)}]   = {value}"
        if spec.name == "weights":
            text += translate("walkthrough", ROW_SUM_NOTE)
        elif spec.name == "concat":
            text += translate("walkthrough", "   (column {column} belongs to head {head})").format(column=col, head=col // self._walk.d_k + 1)
        elif spec.name == "z":
            text = translate("walkthrough", "Z_{head}[{query}, dim {column}] = {sum}").format(
                head=self._walk.head + 1, query=self._where("query", row), column=col, sum=z_sum_text(self._walk, row, col))
        self.readout.setText(text)
        self.hovered.emit(info)

    def show_linked_query(self, axis: str, row: int) -> None:
        """Outline query ``row`` (dashed) in every table whose rows are queries, where its window
        shows that row and this walkthrough's queries are ``axis`` pieces."""
        mine = self._walk is not None and row >= 0 and query_axis(self._walk.kind) == axis
        for table in self.tables.values():
            rows = table.window[0]
            shown = mine and table.spec.rows == "query" and rows.start <= row < rows.stop
            table.set_linked_row(row - rows.start if shown else None)

    def _where(self, axis: str, index: int) -> str:
        """``query 4 “␣eat”``, ``key 2 “喜”``, ``dim 5``, ``b``: one index of a table's axis, as on screen (positions 1-based)."""
        w = self._walk
        if axis in ("query", "key"):
            labels = w.query_labels if axis == "query" else w.key_labels
            text = translate("walkthrough", "query {n} “{piece}”") if axis == "query" else translate("walkthrough", "key {n} “{piece}”")
            return text.format(n=index + 1, piece=display_piece(labels[index]))
        return "b" if axis == "bias" else translate("walkthrough", "dim {n}").format(n=index)

    def _on_theme_changed(self) -> None:
        self.strip.apply_theme(self.theme)
        for t in self.tables.values():
            t.apply_theme(self.theme)
            if t.spec.scale == "weights" and self._colormap is None:
                t.set_colormap(self.theme.colormap)
        for item in self._section_labels:
            item.setText(item.text, color=self.theme.muted)
        for item in self._operators:
            item.setText(item.text, color=self.theme.muted)
        self._apply_mark_pens()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        for t in self.tables.values():
            if t.spec.scale == "weights":
                t.set_colormap(self.colormap())

    # figure protocol --------------------------------------------------------------------------
    def figure_title(self) -> str:
        return self._what()[0]

    def figure_data(self) -> FigureData:
        """The [query, key] steps as CSV columns; every step (full, not windowed) in the NPZ."""
        w = self._walk
        if w is None:
            raise ValueError("the view shows no data yet")
        values = {n: np.asarray(getattr(w, n)) for n in ("xx_t", "scores", "scaled_scores", "position_bias", "mask", "masked_scores", "weights")
                  if getattr(w, n) is not None}
        extras = {n: np.asarray(getattr(w, n)) for n in ("x", "x_kv", "w_q", "w_k", "w_v", "b_q", "b_k", "b_v", "q", "k", "v", "z", "concat",
                                                         "w_o", "b_o", "w_o_head", "head_output", "output")}
        extras["chosen"] = np.array([w.layer, w.head, w.query])
        return FigureData(self.figure_title(), ("query", "key"), values, {"query": w.query_labels, "key": w.key_labels}, extras)

    def transient_items(self):
        return [t.hover_marker for t in self.tables.values()]


def _is_bias(item: StageSpec | str) -> bool:
    return isinstance(item, StageSpec) and item.name == "position_bias"


def walkthrough_data(session: Session, choice: ViewChoice) -> Analysis | None:
    """One head's walkthrough of the frame for ``choice``: the model's weights on the frame's
    recorded inputs, computed in a worker."""
    frozen = session.frames.frozen()
    if frozen is None or session.bundle is None:
        return None
    return Analysis(walkthrough_frame, (session.bundle.model, frozen, choice.kind or "cross", choice.layer or 0,
                                        choice.head or 0, choice.query, session.current_row()))


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("walk_query", "walk_top_key", "walk_top_score", "walk_top_weight", "walk_row_sum", "walk_min_weight", "walk_z",
                 "walk_head", "walk_head_first", "walk_head_last")


def tour_measures(view: QtWalkthroughView, ask: TourAsk) -> dict[str, Any]:
    """The query's row: its piece, the key it weighs most (score and weight), the row's sum and
    smallest weight, Z_i's first column, and the head's columns of Concat(Z_1..Z_h)."""
    w = view.data()
    q = w.query
    a = np.asarray(w.weights[q], np.float64)
    j = int(np.argmax(a))
    return {"walk_query": display_piece(w.query_labels[q]), "walk_top_key": display_piece(w.key_labels[j]),
            "walk_top_score": float(w.scores[q, j]), "walk_top_weight": float(a[j]), "walk_row_sum": float(a.sum()),
            "walk_min_weight": float(a.min()), "walk_z": float(w.z[q, 0]), "walk_head": w.head + 1,
            "walk_head_first": w.head_columns[0], "walk_head_last": w.head_columns[1] - 1}


def region_weights_row(view: QtWalkthroughView, ask: TourAsk) -> Region | None:
    """The query's row of A_i, as far as its table's window shows it."""
    table = view.tables["weights"]
    rows, cols = table.window
    row = view.data().query - rows.start
    return cells(table, 0, row, cols.stop - cols.start, row + 1)


def region_tables(*keys: str) -> RegionFn:
    """The region around the tables ``keys`` (the scores, Z_i, Concat and W^O...)."""
    return lambda view, ask: items_region(*(view.tables[k] for k in keys))


SPEC = ViewSpec("walkthrough", QtWalkthroughView, QT_TRANSLATE_NOOP("views", "One-head walkthrough"), "bottom", SELECTORS,
                data=walkthrough_data, from_choice=True, kinds=KINDS, empty="nothing to walk through",
                measures=tour_measures, measure_names=TOUR_MEASURES,
                regions={"walk-scores": region_tables("scores"), "walk-weights-row": region_weights_row, "walk-z": region_tables("z"),
                         "walk-concat": region_tables("concat", "w_o")})
