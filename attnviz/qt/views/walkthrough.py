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

The tables and their formatting are in :mod:`attnviz.qt.views.walkthrough_tables`; the three
sections, laid out and filled, are a :class:`TableSections` the view owns
(:mod:`attnviz.qt.views.walkthrough_sections`); which window of each long axis they show is an
:class:`AxisWindows`, moved by the scroll bars of a :class:`WindowBars`
(:mod:`attnviz.qt.views.walkthrough_windows`); the title, the formula line and the hover read-out
are written by :mod:`attnviz.qt.views.walkthrough_text`.

Above the tables the chosen query's row is played as stages (QK^T one dot product at a time,
÷ √d_k, + M, softmax, · V): Play steps through the frames of
:func:`attnviz.core.analysis.walkthrough_stages.stage_frames` on a timer, the arrows move a whole
stage; the strip that draws a frame and the controls that play it are a :class:`StagePlayer`
(:mod:`attnviz.qt.views.walkthrough_play`). Playing recomputes nothing: the frames are read from
the walkthrough the view holds.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.walkthrough import HeadWalkthrough, WalkthroughFrame, walkthrough_frame
from attnviz.core.analysis.walkthrough_stages import StageFrame
from attnviz.core.data.pieces import WORD_START, display_piece
from attnviz.core.model.sites import KINDS
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice, query_axis
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.spec import SELECTORS, RegionFn, TourAsk, ViewSpec
from attnviz.qt.views.walkthrough_play import StagePlayer
from attnviz.qt.views.walkthrough_sections import TableSections
from attnviz.qt.views.walkthrough_tables import StageTable
from attnviz.qt.views.walkthrough_text import readout_text, walk_title
from attnviz.qt.views.walkthrough_windows import AxisWindows, WindowBars
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.widgets.heatmap import HoverInfo
from attnviz.qt.widgets.regions import Region, cells, items_region

if TYPE_CHECKING:
    from attnviz.qt.session import Session


def _with_query(walk: Any, query: int) -> Any:
    """``walk`` following another query row."""
    if hasattr(walk, "with_query"):
        return walk.with_query(int(query))
    return replace(walk, query=int(query))


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
        self._walk: Any = None  # the frame's walk, following the query row chosen (set_query)
        self._layers: dict[str, int] = {}
        self._fitted: tuple | None = None  # what the canvas was last sized to (see _refresh)
        self.windows = AxisWindows()
        self._stages_only = False  # the figure is the title and the stages (an animation of them)
        self._build_controls()
        self._build_scroll_area()
        self._build_sections()
        self._update_controls()
        self._refresh()

    # construction -----------------------------------------------------------------------
    def _build_controls(self) -> None:
        """The selectors (kind, layer, head, query), a scroll bar per long axis, and under them the
        stages' controls."""
        self.kind_combo = self._add_control("", make_combo("walkKindCombo", translate(
            "walkthrough", "Which attention: encoder self, decoder masked self or cross")))
        self.layer_combo = self._add_control(translate("walkthrough", "Layer"), make_combo("walkLayerCombo", translate("walkthrough", "Layer")))
        self.head_combo = self._add_control(translate("walkthrough", "Head"), make_combo(
            "walkHeadCombo", translate("walkthrough", "Head i: the slices W_i^Q, W_i^K, W_i^V and Z_i")))
        self.query_combo = self._add_control(translate("walkthrough", "Query"), make_combo(
            "walkQueryCombo", translate("walkthrough", "The query token whose row is followed")))
        self.controls.addSpacing(8)
        self.bars = WindowBars(self.windows, self.controls, self)
        self.bars.moved.connect(self._on_scrolled)
        self.scrollbars = self.bars.scrollbars
        self.controls.addStretch(1)
        self.player = StagePlayer(self.theme, self.windows, self)
        self.player.resized.connect(self._fit_canvas)
        self.layout().insertLayout(1, self.player.row)
        self.strip = self.player.strip
        self.play_timer = self.player.timer
        for combo in (self.kind_combo, self.layer_combo, self.head_combo):
            combo.currentIndexChanged.connect(self._on_selection_changed)
        self.query_combo.currentIndexChanged.connect(self._on_query_changed)

    def _build_scroll_area(self) -> None:
        """Put the figure canvas in a scroll area: the tables keep their size, the area scrolls."""
        self._scroll_canvas(fit=False)  # sized to the tables in _fit_canvas
        self.canvas.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.canvas.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def _build_sections(self) -> None:
        """The figure: a title, the stages' strip, then the three sections of tables and operators."""
        ci = self.canvas.ci
        ci.layout.setVerticalSpacing(10)
        ci.addItem(self.strip, row=1, col=0)
        self.sections = TableSections(ci, 2, self.theme, self._on_table_hovered)
        self.tables: dict[str, StageTable] = self.sections.tables
        self.head_marks = self.sections.head_marks

    # data ---------------------------------------------------------------------------------
    def render(self, frame: WalkthroughFrame) -> None:
        """Show ``frame.walk``; the tables are updated in place. Windows keep their place where
        possible; the d_model window moves to head i's columns when the head changes."""
        prev, walk = self._walk, frame.walk
        self._layers = {k: int(v) for k, v in frame.layers.items() if k in KINDS}
        self._walk = walk
        self.windows.set_lengths(walk)
        if prev is None or prev.head != walk.head or prev.d_model != walk.d_model:
            self.windows.move("model", walk.head * walk.d_k)
        self.player.restage(walk)
        self._update_controls()
        self._follow_query()
        self._refresh()

    def data(self) -> "HeadWalkthrough | None":
        return self._walk

    def query(self) -> int | None:
        return None if self._walk is None else int(self._walk.query)

    def set_query(self, query: int) -> None:
        """Follow another query row (no recompute; every row is in the walkthrough)."""
        if self._walk is None:
            return
        self._walk = _with_query(self._walk, query)
        self.player.restage(self._walk)
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

    # stages (played by self.player) -------------------------------------------------------------
    def stage_frames(self) -> tuple[StageFrame, ...]:
        """The frames of the chosen query's row, stage by stage (empty without data)."""
        return self.player.frames()

    def stage_frame(self) -> StageFrame | None:
        """The frame shown above the tables."""
        return self.player.frame()

    def show_stage_frame(self, index: int) -> None:
        """Show frame ``index`` of :meth:`stage_frames` (clamped)."""
        self.player.show_frame(index)

    def stage_back(self) -> None:
        self.player.back()

    def stage_forward(self) -> None:
        self.player.forward()

    def is_playing(self) -> bool:
        return self.player.is_playing()

    def toggle_play(self) -> None:
        self.player.toggle()

    def pause(self) -> None:
        self.player.pause()

    def set_stages_only(self, on: bool) -> None:
        """Make the figure (what an export draws) the title and the stages alone, or the whole view."""
        self._stages_only = bool(on)

    def figure_rect(self) -> QtCore.QRectF | None:
        if not self._stages_only or self._walk is None:
            return None
        title = self.title.sceneBoundingRect()
        shown = self.title.mapRectToScene(self.title.text_rect()).united(self.strip.content_rect())
        return QtCore.QRectF(title.left(), title.top(), shown.right() + 12 - title.left(), self.strip.sceneBoundingRect().bottom() + 6 - title.top())

    # internals ------------------------------------------------------------------------------
    def _refresh(self) -> None:
        w = self._walk
        self._set_title()
        self.sections.set_visible(w is not None)
        self.strip.setVisible(w is not None)
        if w is None:
            self._fitted = None
            self.player.show()
            self._fit_canvas()
            return
        shape = self.sections.fill(w, self.windows)  # what the layout depends on: each table's window, labels and titles
        self.bars.update_labels()
        self.player.show()
        if tuple(shape) != self._fitted:  # a step that changes no table's shape or text keeps the layout as it is
            self._fitted = tuple(shape)
            self._fit_canvas()

    def _fit_canvas(self) -> None:
        """Size the canvas to its tables (the scroll area scrolls the rest); without data it fills the view."""
        if self._walk is None:
            self.canvas.setMinimumSize(0, 0)
            self.canvas.setMaximumSize(16777215, 16777215)
            self.scroll.setWidgetResizable(True)
            return
        self.scroll.setWidgetResizable(False)
        ci = self.canvas.ci
        for item in (*self.strip.lines, self.strip, *self.sections.layouts(), ci):  # inner layouts first: hints propagate upwards now, not on the next event
            item.layout.invalidate()
            item.updateGeometry()
        hint = ci.effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize)
        w = max(480, int(math.ceil(hint.width())) + 14)
        h = max(240, int(math.ceil(hint.height())) + 14)
        if self.canvas.size() != QtCore.QSize(w, h) or self.canvas.minimumSize() != QtCore.QSize(w, h):
            self.canvas.setFixedSize(w, h)

    def _set_title(self) -> None:
        self.title.set_title(*walk_title(self._walk))
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
        self.bars.sync(w is not None)

    def _follow_query(self) -> None:
        """Keep the chosen query inside the position window."""
        self.windows.follow(self._walk.query)
        self.bars.sync(True)

    # events -----------------------------------------------------------------------------
    def _on_scrolled(self, axis: str, value: int) -> None:
        self.windows.move(axis, value)
        if self._walk is not None:
            self._refresh()

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
        row = table.window[0].start + info.row
        col = table.window[1].start + info.col
        self.queryHovered.emit(self._walk.kind, row if table.spec.rows == "query" else -1)
        self.readout.setText(readout_text(self._walk, table.spec, row, col, info.value))
        self.hovered.emit(info)

    def show_linked_query(self, axis: str, row: int) -> None:
        """Outline query ``row`` (dashed) in every table whose rows are queries, where its window
        shows that row and this walkthrough's queries are ``axis`` pieces."""
        mine = self._walk is not None and row >= 0 and query_axis(self._walk.kind) == axis
        for table in self.tables.values():
            rows = table.window[0]
            shown = mine and table.spec.rows == "query" and rows.start <= row < rows.stop
            table.set_linked_row(row - rows.start if shown else None)

    def _on_theme_changed(self) -> None:
        self.strip.apply_theme(self.theme)
        self.sections.apply_theme(self.theme, self._colormap is None)
        self._refresh()

    def _on_colormap_changed(self) -> None:
        self.sections.set_colormap(self.colormap())

    # figure protocol --------------------------------------------------------------------------
    def figure_title(self) -> str:
        return walk_title(self._walk)[0]

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
