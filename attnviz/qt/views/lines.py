"""Line view (as in BertViz): a line from each query token (left) to each key token (right).

A line's opacity is the attention weight; each head has its colour and the selected heads
are drawn on top of each other. Hovering a token shows only its lines (a query's weights
over the keys, or what attends to a key); clicking a token pins that isolation. A long input
(more than ``ALL_LINES_UP_TO`` tokens) draws each query's k strongest lines ("Top" k), k·n lines
instead of n², and labels every few rows.

The line layers and the graphics item that draws them are in :mod:`attnviz.qt.widgets.line_item`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping

import numpy as np
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame, FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import KINDS
from attnviz.qt.core_text import kind_formula, kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice, query_axis
from attnviz.qt.views.base import (
    CURRENT_ROW_LEGEND,
    AttentionSetsMixin,
    FigureViewBase,
    make_combo,
    piece_text,
    set_combo_items,
    word_start_legend,
)
from attnviz.qt.views.spec import ATTENTION_SELECTORS, CROSS_FIRST, ViewSpec, attention_frame, encoder_side
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.widgets.line_item import LinesItem, LineSpec

# The two columns' headers per kind of attention: (title, what the tokens are); shown as translate("lines", text).
_QUERIES, _KEYS = QT_TRANSLATE_NOOP("lines", "queries"), QT_TRANSLATE_NOOP("lines", "keys")
_COLUMN_HEADERS = {
    "encoder": ((_QUERIES, QT_TRANSLATE_NOOP("lines", "source")), (_KEYS, QT_TRANSLATE_NOOP("lines", "source"))),
    "decoder": ((_QUERIES, QT_TRANSLATE_NOOP("lines", "fed token, predicts next")), (_KEYS, QT_TRANSLATE_NOOP("lines", "target"))),
    "cross": ((_QUERIES, QT_TRANSLATE_NOOP("lines", "fed token · C_decoder")), (_KEYS, QT_TRANSLATE_NOOP("lines", "source · C_encoder"))),
}


ALL_LINES_UP_TO = 32  # tokens: a longer input draws each query's k strongest lines only (the "Top" control)
DEFAULT_TOP_K = 3


def column_headers(kind: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """The two columns' headers for ``kind``, in the interface's language."""
    query, key = ((translate("lines", title), translate("lines", what)) for title, what in _COLUMN_HEADERS[kind])
    return query, key


class QtLinesView(AttentionSetsMixin, FigureViewBase):
    """BertViz-style lines for one layer of one kind of attention.

    ``set_data(data)`` takes an :class:`AttentionFrame` ([layer, head, query, key] of every
    kind), or one kind's :class:`AttentionData` or a mapping kind → AttentionData.
    ``set_layer(layer)``, ``set_heads(heads)`` choose what is drawn (0-based); ``apply(choice)``
    takes a choice's kind, layer and head. ``set_focus(side, index)`` pins a token
    ("query"/"key") as a click does; the "Words" switch (``groupWords``) draws words instead of
    pieces, the "Content" switch (``contentOnly``) content keys only (:class:`AttentionSetsMixin`).
    Signals: ``chose`` when the user picks a kind, layer or heads (one head: that head; every
    head: their mean; some: the kind and layer only) and when a click pins a query token (its
    row), ``tokenHovered(side, index)`` (``("", -1)`` when the mouse leaves the tokens).
    """

    tokenHovered = QtCore.Signal(str, int)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self._datasets: dict[str, AttentionData] = {}
        self._kind: str | None = None
        self._layer = 0
        self._heads: tuple[int, ...] | None = None  # None: all heads
        self._hover: tuple[str, int] | None = None
        self._pinned: tuple[str, int] | None = None
        self._linked: int | None = None  # a query row hovered in another view
        self._exporting = False
        self._weights: np.ndarray | None = None  # [head, query, key] of the layer
        self._data_version = 0

        self.kind_combo = self._add_control("", make_combo("lineKindCombo", translate("lines", "Which attention: encoder self, decoder masked self or cross")))
        self.layer_combo = self._add_control(translate("lines", "Layer"), make_combo("lineLayerCombo", translate("lines", "Layer")))
        self.controls.addWidget(QtWidgets.QLabel(translate("lines", "Heads")))
        self._head_box = QtWidgets.QHBoxLayout()
        self._head_box.setSpacing(2)
        self.controls.addLayout(self._head_box)
        self.head_buttons: list[QtWidgets.QToolButton] = []
        self.all_button = QtWidgets.QToolButton(text=translate("lines", "All"), objectName="lineAllHeads")
        self.all_button.setToolTip(translate("lines", "Select all heads"))
        self.all_button.clicked.connect(self._on_all_heads)
        self.controls.addWidget(self.all_button)
        self.top_k_spin = QtWidgets.QSpinBox(objectName="lineTopK", minimum=1, maximum=20, value=DEFAULT_TOP_K)
        self.top_k_spin.setToolTip(translate("lines", "With more than {n} tokens, each query draws only its k strongest lines "
                                                      "(per head): k·n lines, not n²; hover a token for all of its lines").format(n=ALL_LINES_UP_TO))
        self._add_control(translate("lines", "Top"), self.top_k_spin)
        self.top_k_spin.valueChanged.connect(self._on_top_k_changed)
        self._add_control("", self._group_words_box())
        self._add_control("", self._content_only_box())
        self.controls.addStretch(1)
        self.kind_combo.currentIndexChanged.connect(self._on_kind_combo)
        self.layer_combo.currentIndexChanged.connect(self._on_layer_combo)

        self.lines = LinesItem(self.theme)
        self.lines.tokenHovered.connect(self._set_hover)
        self.lines.tokenClicked.connect(self._toggle_pin)
        self.canvas.addItem(self.lines, row=1, col=0)
        self.canvas.ci.layout.setRowStretchFactor(1, 1)
        self._set_title()

    # data ----------------------------------------------------------------------------
    def render(self, data: AttentionFrame | AttentionData | Mapping[str, AttentionData]) -> None:
        self._take_frame(AttentionFrame.of(data))
        self._data_version += 1
        if self._kind not in self._datasets:
            self._kind = next(iter(self._datasets))
        self._refresh(controls=True)

    def set_kind(self, kind: str) -> None:
        self._require_kind(kind)
        self._kind = kind
        self._pinned = None
        self._refresh(controls=True)

    def layer(self) -> int:
        return self._layer

    def set_layer(self, layer: int) -> None:
        self._layer = int(layer)
        self._refresh(controls=True)

    def selected_heads(self) -> tuple[int, ...]:
        d = self.data()
        n = d.n_heads if d else 0
        return tuple(range(n)) if self._heads is None else tuple(h for h in self._heads if h < n)

    def set_heads(self, heads: Iterable[int] | None) -> None:
        """Draw these heads (0-based); ``None`` draws all."""
        self._heads = None if heads is None else tuple(sorted({int(h) for h in heads}))
        self._refresh(controls=True)

    def select(self, kind: str | None = None, layer: int | None = None, heads: Iterable[int] | None | str = "keep") -> None:
        """Change several of kind, layer and heads (``None``: all heads; ``"keep"``: as they are)
        and draw once."""
        if kind is not None and kind != self._kind:
            self._require_kind(kind)
            self._kind = kind
            self._pinned = None
        if layer is not None:
            self._layer = int(layer)
        if heads != "keep":
            self._heads = None if heads is None else tuple(sorted({int(h) for h in heads}))
        self._refresh(controls=True)

    def apply(self, choice: ViewChoice) -> None:
        """The choice's kind and layer; its head alone, or every head for the heads' mean."""
        heads = None if choice.mode == "mean" else ([choice.head] if choice.head is not None else "keep")
        self.select(kind=self.given_kind(choice), layer=choice.layer, heads=heads)

    def set_focus(self, side: str | None, index: int = -1) -> None:
        """Pin a token's lines (``side`` "query" or "key"); ``None`` clears."""
        if side is None:
            self._pinned = None
        else:
            if side not in ("query", "key"):
                raise ValueError("side must be 'query' or 'key'")
            self._pinned = (side, int(index))
        self._sync_lines()

    def set_hover(self, side: str | None, index: int = -1) -> None:
        """Act as if the mouse were over a token (``None``: over none)."""
        self._set_hover(None if side is None else (side, int(index)))

    def focus_token(self) -> tuple[str, int] | None:
        """The token whose lines are isolated: the hovered one, else the pinned one."""
        if self._exporting:
            return self._pinned
        linked = ("query", self._linked) if self._linked is not None else None
        return self._hover or self._pinned or linked

    def show_linked_query(self, axis: str, row: int) -> None:
        """Isolate query ``row``'s lines (when no token is hovered or pinned here) if this view's
        queries are ``axis`` pieces."""
        d = self.data()
        row = self._word_row(row)
        ok = d is not None and 0 <= row < len(d.query_labels) and query_axis(self._kind) == axis
        linked = row if ok else None
        if linked != self._linked:
            self._linked = linked
            self._sync_lines()

    def pinned_token(self) -> tuple[str, int] | None:
        """The token pinned by a click (or ``set_focus``), if any."""
        return self._pinned

    def visible_lines(self) -> list[LineSpec]:
        """Every line drawn now (head, query, key, weight)."""
        out = []
        for head, q, k, w in self.lines.line_arrays():
            out.extend(LineSpec(head, int(a), int(b), float(c)) for a, b, c in zip(q, k, w))
        return out

    # internals --------------------------------------------------------------------------
    def top_k(self) -> int | None:
        """How many lines each query token draws (its strongest), or ``None``: all of them (at most
        ``ALL_LINES_UP_TO`` tokens)."""
        d = self.data()
        if d is None or max(len(d.query_labels), len(d.key_labels)) <= ALL_LINES_UP_TO:
            return None
        return self.top_k_spin.value()

    def _on_top_k_changed(self) -> None:
        self._sync_lines()
        self._set_title()

    def _sync_lines(self) -> None:
        """Hand the drawn heads, the focused token and the lines per query to the line item."""
        self.top_k_spin.setEnabled(self.top_k() is not None)
        self.lines.set_selection(self.selected_heads(), self.focus_token(), self.top_k())

    def _set_hover(self, token: tuple[str, int] | None) -> None:
        if token == self._hover:
            return
        self._hover = token
        self._sync_lines()
        self._update_readout()
        self.tokenHovered.emit(*(token or ("", -1)))
        if token is None or token[0] == "query":
            self.queryHovered.emit(self._kind or "", -1 if token is None else self._piece_row(token[1]))

    def _update_readout(self) -> None:
        """What the hovered token attends to (or is read by), for the layer and heads shown now."""
        d, token = self.data(), self._hover
        if token is None or d is None or self._weights is None:
            self.readout.setText(" ")
            return
        side, idx = token
        heads = list(self.selected_heads())
        queries, keys = d.query_labels, d.key_labels
        if side == "query" and idx < len(queries):
            w = self._weights[heads, idx, :].mean(axis=0) if heads else np.zeros(len(keys))
            top = np.argsort(-w)[:3]
            parts = ", ".join(f"“{display_piece(keys[k])}” {w[k]:.2f}" for k in top)
            self.readout.setText(translate("lines", "{query} attends most to: {parts}  ({heads})").format(
                query=self._query_text(idx), parts=parts, heads=self._which_heads()) + self._before_lines(heads, token, top, w))
        elif side == "key" and idx < len(keys):
            w = self._weights[heads, :, idx].mean(axis=0) if heads else np.zeros(len(queries))
            top = np.argsort(-w)[:3]
            parts = ", ".join(f"“{display_piece(queries[q])}” {w[q]:.2f}" for q in top)
            self.readout.setText(translate("lines", "key {key} is read most by: {parts}  ({heads})").format(
                key=piece_text(keys, idx), parts=parts, heads=self._which_heads()) + self._before_lines(heads, token, top, w))
        else:
            self.readout.setText(" ")

    def _before_lines(self, heads: list[int], token: tuple[str, int], top: np.ndarray, w: np.ndarray) -> str:
        """With content keys only: the read-out's ``top`` weights ``w`` (of the hovered ``token``) as
        they were before renormalising; a query row left empty says why."""
        original = self._original(lambda d: d.weights[self._layer][heads].mean(axis=0)) if heads else None
        if original is None:
            return ""
        side, idx = token
        if side == "query" and np.isnan(w).all():
            return self._before_text(float("nan"), float("nan"))
        o, labels = (original[idx, :], self.data().key_labels) if side == "query" else (original[:, idx], self.data().query_labels)
        parts = ", ".join(f"“{display_piece(labels[i])}” {o[i]:.2f}" for i in top)
        return translate("lines", "  ·  over all keys: {parts}").format(parts=parts)

    def _which_heads(self) -> str:
        heads = self.selected_heads()
        if len(heads) == 1:
            return translate("lines", "layer {layer} · head {head}").format(layer=self._layer + 1, head=heads[0] + 1)
        return translate("lines", "layer {layer} · mean over {n} shown heads").format(layer=self._layer + 1, n=len(heads))

    def _toggle_pin(self, token: tuple[str, int] | None) -> None:
        self._pinned = None if token is None or token == self._pinned else token
        self._sync_lines()
        if self._pinned is not None and self._pinned[0] == "query":
            self.chose.emit({"query": self._piece_row(self._pinned[1])})

    def _on_all_heads(self) -> None:
        self.set_heads(None)
        self._emit_selection()

    def _emit_selection(self) -> None:
        """The user picked the kind, layer or heads: one head shown is that head, every head their
        mean, some heads the kind and layer only."""
        d = self.data()
        if d is None:
            return
        heads, changes = self.selected_heads(), {"kind": self._kind, "layer": self._layer}
        if len(heads) == 1:
            changes.update(head=heads[0], mode="head")
        elif len(heads) == d.n_heads:
            changes["mode"] = "mean"
        self.chose.emit(changes)

    def _on_kind_combo(self) -> None:
        kind = self.kind_combo.currentData()
        if kind and kind != self._kind:
            self._kind = kind
            self._pinned = None
            self._refresh(controls=True)
            self._emit_selection()

    def _on_layer_combo(self) -> None:
        layer = self.layer_combo.currentData()
        if layer is not None and layer != self._layer:
            self._layer = int(layer)
            self._refresh(controls=False)
            self._emit_selection()

    def _on_head_toggled(self) -> None:
        heads = tuple(i for i, b in enumerate(self.head_buttons) if b.isChecked())
        self._heads = None if len(heads) == len(self.head_buttons) else heads
        self._refresh(controls=False)
        self._emit_selection()

    def _sync_head_buttons(self, n_heads: int) -> None:
        while len(self.head_buttons) < n_heads:
            i = len(self.head_buttons)
            b = QtWidgets.QToolButton(text=str(i + 1), objectName=f"lineHead{i + 1}")
            b.setCheckable(True)
            b.setAutoRaise(False)
            b.setToolTip(translate("lines", "Show head {head}").format(head=i + 1))
            b.toggled.connect(self._on_head_toggled)
            self._head_box.addWidget(b)
            self.head_buttons.append(b)
        selected = set(self.selected_heads())
        for i, b in enumerate(self.head_buttons):
            b.setVisible(i < n_heads)
            blocked = b.blockSignals(True)
            b.setChecked(i in selected)
            b.blockSignals(blocked)
            self._style_head_button(i, b)

    def _style_head_button(self, i: int, b: QtWidgets.QToolButton) -> None:
        c = self.theme.head_color(i).name()
        key = f"{c}:{b.isChecked()}"
        if b.property("styleKey") == key:
            return
        b.setProperty("styleKey", key)
        if b.isChecked():
            b.setStyleSheet(f"QToolButton {{ background: {c}; color: white; border: 1px solid {c}; border-radius: 3px; min-width: 18px; font-weight: 600; }}")
        else:
            b.setStyleSheet(f"QToolButton {{ background: transparent; color: {c}; border: 1px solid {c}; border-radius: 3px; min-width: 18px; }}")

    def _refresh(self, controls: bool) -> None:
        d = self.data()
        if d is not None:
            self._layer = min(max(self._layer, 0), d.n_layers - 1)
            self._weights = d.weights[self._layer]
            self.lines.set_layer(self._weights, d.query_labels, d.key_labels, column_headers(d.kind), d.highlight,
                                 key=(self._data_version, self._kind, self._layer))
            if self._pinned is not None:
                side, idx = self._pinned
                if idx >= (len(d.query_labels) if side == "query" else len(d.key_labels)):
                    self._pinned = None
        if controls or d is None:
            set_combo_items(self.kind_combo, [(kind_title(k), k) for k in self._datasets], self._kind)
            self.kind_combo.setVisible(len(self._datasets) > 1)
            set_combo_items(self.layer_combo, [(str(i + 1), i) for i in range(d.n_layers if d else 0)], self._layer)
        self._sync_head_buttons(d.n_heads if d else 0)
        self._set_title()
        self._sync_lines()
        self._update_readout()

    def _set_title(self) -> None:
        d = self.data()
        if d is None:
            self.title.set_title(translate("lines", "No attention to show yet"))
            return
        heads = self.selected_heads()
        numbers = ", ".join(str(h + 1) for h in heads)
        if len(heads) == d.n_heads:
            which = translate("lines", "all heads")
        elif heads:
            which = (translate("lines", "head {heads}") if len(heads) == 1 else translate("lines", "heads {heads}")).format(heads=numbers)
        else:
            which = translate("lines", "no head")
        formula = translate("lines", "opacity = A_i[query, key],  {formula};  one colour per head i").format(
            formula=kind_formula(d.kind, d.form).replace("A =", "A_i =", 1).split(",")[0])
        if self.top_k() is not None:
            formula += translate("lines", ";  each query's {k} strongest").format(k=self.top_k())
        self.title.set_title(
            translate("lines", "{kind} · layer {layer} · {which}").format(kind=kind_title(d.kind), layer=self._layer + 1, which=which),
            formula,
        )
        current = (("▸", self.theme.highlight, translate("base", CURRENT_ROW_LEGEND)),) if d.highlight is not None else ()
        self.title.set_legend((*current, *word_start_legend(d.query_labels, d.key_labels),
                               *self._switch_legend(self._weights[list(heads)] if self._weights is not None else None)))

    def _on_theme_changed(self) -> None:
        for i, b in enumerate(self.head_buttons):
            self._style_head_button(i, b)
        self.lines.set_theme(self.theme)

    # figure protocol --------------------------------------------------------------------
    @contextlib.contextmanager
    def export_mode(self) -> Iterator[None]:
        """Exports show the pinned token's isolation, never a passing hover."""
        self._exporting = True
        self._sync_lines()
        try:
            yield
        finally:
            self._exporting = False
            self._sync_lines()

    def figure_rect(self) -> QtCore.QRectF | None:
        """The title and the drawn columns and lines, without the empty canvas around them."""
        if self.data() is None:
            return None
        lines = self.lines.mapRectToScene(self.lines.content_rect())
        title = self.title.mapRectToScene(self.title.text_rect())
        return lines.united(title).adjusted(-8, -6, 8, 8)

    def figure_title(self) -> str:
        d = self.data()
        if d is None:
            return translate("lines", "Attention lines")
        return translate("lines", "{kind} · layer {layer} · lines").format(kind=kind_title(d.kind), layer=self._layer + 1)

    def figure_data(self) -> FigureData:
        d = self.data()
        if d is None:
            raise ValueError("the view shows no data yet")
        heads = self.selected_heads()
        return FigureData(
            title=self.figure_title(),
            dims=("head", "query", "key"),
            values={"weight": d.weights[self._layer][list(heads)]},
            coords={"head": tuple(str(h + 1) for h in heads), "query": d.query_labels, "key": d.key_labels},
        )


SPEC = ViewSpec("lines", QtLinesView, QT_TRANSLATE_NOOP("views", "Lines"), "right", ATTENTION_SELECTORS, data=attention_frame,
                kinds=KINDS, head_modes=("mean", "all"), opening=CROSS_FIRST, depends_on=encoder_side)
