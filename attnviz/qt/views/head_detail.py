"""Head detail: one attention matrix large, with the token pieces on its axes.

Modes: one head (A_i of a layer), the mean over a layer's heads, or the attention rollout
through all layers (when the data carries one). Rows are queries, columns are keys. A matrix
whose cells would be under a few pixels (a long input) is shown as an overview with a region on
it, and that region large beside it (:mod:`attnviz.qt.widgets.overview`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    AXIS_TITLES,
    CURRENT_ROW_LEGEND,
    AttentionSetsMixin,
    ExportAllHeadsMixin,
    FigureViewBase,
    make_combo,
    piece_text,
    set_combo_items,
    word_start_legend,
)
from attnviz.qt.views.spec import ATTENTION_SELECTORS, CROSS_FIRST, HEAD_MODES, TourAsk, ViewSpec, attention_frame, encoder_side
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo
from attnviz.qt.widgets.overview import ZoomedHeatmap
from attnviz.qt.widgets.regions import Region, cells

MODES: dict[str, str] = {  # shown as translate("head_detail", text)
    "head": QT_TRANSLATE_NOOP("head_detail", "One head"),
    "mean": QT_TRANSLATE_NOOP("head_detail", "Mean over heads"),
    "rollout": QT_TRANSLATE_NOOP("head_detail", "Rollout"),
}


class QtHeadDetailView(AttentionSetsMixin, ExportAllHeadsMixin, FigureViewBase):
    """One head's attention matrix (or the heads' mean, or the rollout) with token labels.

    ``set_data(data)`` takes an :class:`AttentionFrame` (with several kinds a kind selector
    appears), or one kind's :class:`AttentionData` or a mapping kind → AttentionData.
    ``select(layer=, head=, mode=, kind=)`` picks what is shown (0-based layer/head);
    ``apply(choice)`` does it for a choice; the "Words" switch (``groupWords``) shows the matrix
    between words, the "Content" switch (``contentOnly``) over content keys only
    (:class:`AttentionSetsMixin`). Signals: ``chose`` (kind, mode, layer and head) when the user
    changes the selection, ``hovered(HoverInfo | None)`` as the mouse moves.
    """

    hovered = QtCore.Signal(object)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self._datasets: dict[str, AttentionData] = {}
        self._kind: str | None = None
        self._mode = "head"
        self._layer = 0
        self._head = 0

        self.kind_combo = make_combo("headKindCombo", translate("head_detail", "Which attention: encoder self, decoder masked self or cross"))
        self.mode_combo = make_combo("headModeCombo", translate("head_detail", "One head, the mean over the layer's heads, or the rollout"))
        for key, text in MODES.items():
            self.mode_combo.addItem(translate("head_detail", text), key)
        self.layer_combo = make_combo("headLayerCombo", translate("head_detail", "Layer"))
        self.head_combo = make_combo("headHeadCombo", translate("head_detail", "Head i (Z_i = A_i V_i)"))
        self.controls.addWidget(self._two_rows())
        self.controls.addStretch(1)
        self.kind_combo.currentIndexChanged.connect(self._on_controls_changed)
        self.mode_combo.currentIndexChanged.connect(self._on_controls_changed)
        self.layer_combo.currentIndexChanged.connect(self._on_controls_changed)
        self.head_combo.currentIndexChanged.connect(self._on_controls_changed)

        self.plot = HeatmapPlot(self.theme, colormap=self.colormap(), colorbar_label=translate("head_detail", "attention weight"))
        body = self.canvas.ci.addLayout(row=1, col=0)  # the plot, and beside it the overview of a long input
        body.layout.setContentsMargins(0, 0, 0, 0)
        self.zoom = ZoomedHeatmap(self.plot, body, self.theme)
        self.canvas.ci.layout.setRowStretchFactor(1, 1)
        self.zoom.sigHovered.connect(self._on_hovered)
        self._update_controls()
        self._set_title()

    def _two_rows(self) -> QtWidgets.QWidget:
        """The selectors in two rows (which attention and what of it; then layer and head under the
        first, the "Words" and "Content" switches under the second), so the controls fit a dock
        about 500 px wide."""
        box = QtWidgets.QWidget(objectName="headControls")
        box.setSizePolicy(QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Preferred)  # the rest: the link caption
        grid = QtWidgets.QGridLayout(box)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(4)
        grid.setVerticalSpacing(2)
        grid.addWidget(self.kind_combo, 0, 0, 1, 2)
        grid.addWidget(self.mode_combo, 0, 2, 1, 2)
        for col, (text, combo) in enumerate(((translate("head_detail", "Layer"), self.layer_combo), (translate("head_detail", "Head"), self.head_combo))):
            label = QtWidgets.QLabel(text)
            label.setBuddy(combo)
            row = QtWidgets.QHBoxLayout()
            row.setSpacing(4)
            row.addWidget(label)
            row.addWidget(combo)
            row.addStretch(1)
            grid.addLayout(row, 1, col)
        grid.addWidget(self._group_words_box(), 1, 2)
        grid.addWidget(self._content_only_box(), 1, 3)
        return box

    # data -----------------------------------------------------------------------
    def render(self, data: AttentionFrame | AttentionData | Mapping[str, AttentionData]) -> None:
        """Show new weights; keeps the current kind, mode, layer and head where they still exist."""
        self._take_frame(AttentionFrame.of(data))
        if self._kind not in self._datasets:
            self._kind = next(iter(self._datasets))
        self._clamp()
        self._update_controls()
        self._refresh()

    def select(self, layer: int | None = None, head: int | None = None, mode: str | None = None, kind: str | None = None) -> None:
        """Show ``layer``/``head`` (0-based) in ``mode`` ("head", "mean", "rollout") of ``kind``."""
        if kind is not None:
            self._require_kind(kind)
            self._kind = kind
        if mode is not None:
            if mode not in MODES:
                raise ValueError(f"mode must be one of {tuple(MODES)}, not {mode!r}")
            self._mode = mode
        if layer is not None:
            self._layer = int(layer)
        if head is not None:
            self._head = int(head)
        self._clamp()
        self._update_controls()
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        self.select(layer=choice.layer, head=choice.head, mode=choice.mode, kind=self.given_kind(choice))

    def mode(self) -> str:
        return self._mode

    def layer(self) -> int:
        return self._layer

    def head(self) -> int:
        return self._head

    def current_matrix(self) -> np.ndarray | None:
        """The ``[query, key]`` matrix the view shows."""
        d = self.data()
        return None if d is None else self._matrix_of(d)

    def _matrix_of(self, d: AttentionData) -> np.ndarray:
        """``d``'s ``[query, key]`` matrix in the chosen mode, layer and head."""
        if self._mode == "mean":
            return d.mean(self._layer)
        rollout = d.rollout_matrix() if self._mode == "rollout" else None
        if rollout is not None:
            return rollout
        return d.weights[self._layer, self._head]

    # internals ------------------------------------------------------------------
    def _clamp(self) -> None:
        d = self.data()
        if d is None:
            return
        self._layer = min(max(self._layer, 0), d.n_layers - 1)
        self._head = min(max(self._head, 0), d.n_heads - 1)
        if self._mode == "rollout" and not d.has_rollout:
            self._mode = "head"

    def _update_controls(self) -> None:
        d = self.data()
        set_combo_items(self.kind_combo, [(kind_title(k), k) for k in self._datasets], self._kind)
        self.kind_combo.setVisible(len(self._datasets) > 1)
        n_layers = d.n_layers if d else 0
        n_heads = d.n_heads if d else 0
        set_combo_items(self.layer_combo, [(str(i + 1), i) for i in range(n_layers)], self._layer)
        set_combo_items(self.head_combo, [(str(i + 1), i) for i in range(n_heads)], self._head)
        blocked = self.mode_combo.blockSignals(True)
        rollout_item = self.mode_combo.model().item(self.mode_combo.findData("rollout"))
        rollout_item.setEnabled(bool(d is not None and d.has_rollout))
        rollout_item.setToolTip("" if d is not None and d.has_rollout else translate("head_detail", "No rollout for this kind of attention"))
        self.mode_combo.setCurrentIndex(self.mode_combo.findData(self._mode))
        self.mode_combo.blockSignals(blocked)
        self.layer_combo.setEnabled(self._mode != "rollout")
        self.head_combo.setEnabled(self._mode == "head")

    def _on_controls_changed(self) -> None:
        kind = self.kind_combo.currentData()
        mode = self.mode_combo.currentData()
        layer = self.layer_combo.currentData()
        head = self.head_combo.currentData()
        self._kind = kind if kind in self._datasets else self._kind
        self._mode = mode or "head"
        self._layer = 0 if layer is None else int(layer)
        self._head = 0 if head is None else int(head)
        self._clamp()
        self._update_controls()
        self._refresh()
        if self._kind is not None:
            self.chose.emit({"kind": self._kind, "mode": self._mode, "layer": self._layer, "head": self._head})

    def _refresh(self) -> None:
        d = self.data()
        self._set_title()
        if d is None:
            return
        rows, cols = AXIS_TITLES[d.kind]
        self.plot.set_axis_titles(translate("base", rows), translate("base", cols))
        self.zoom.set_matrix(self.current_matrix(), d.query_labels, d.key_labels, d.highlight, levels=(0.0, 1.0))
        self._set_legend(d)

    def _set_legend(self, d: AttentionData) -> None:
        current = (("▭", self.theme.highlight, translate("base", CURRENT_ROW_LEGEND)),) if d.highlight is not None else ()
        self.title.set_legend((*current, *word_start_legend(d.query_labels, d.key_labels), *self._switch_legend(self.current_matrix())))

    def show_linked_query(self, axis: str, row: int) -> None:
        """Outline query ``row`` (dashed) when this view's rows are ``axis`` pieces."""
        self.zoom.set_linked_row(self._word_row(row) if row >= 0 and query_axis(self._kind) == axis else None)

    def _what(self) -> tuple[str, str]:
        d = self.data()
        if d is None:
            return translate("head_detail", "No attention to show yet"), ""
        title = kind_title(d.kind)
        if self._mode == "mean":
            return (translate("head_detail", "{kind} · layer {layer} · mean over {heads} heads").format(kind=title, layer=self._layer + 1, heads=d.n_heads),
                    "Ā = (1/h) Σ_i A_i")
        if self._mode == "rollout":
            return (translate("head_detail", "{kind} · rollout through {layers} layers").format(kind=title, layers=d.n_layers),
                    translate("head_detail", "the layers' mean attention multiplied through, residual included"))
        return (translate("head_detail", "{kind} · layer {layer} · head {head}").format(kind=title, layer=self._layer + 1, head=self._head + 1),
                kind_formula(d.kind, d.form).replace("A =", f"A_{self._head + 1} =", 1))

    def _set_title(self) -> None:
        self.title.set_title(*self._what())

    def _on_hovered(self, info: HoverInfo | None) -> None:
        d = self.data()
        if info is None or d is None:
            self.readout.setText(" ")
        else:
            original = self._original(self._matrix_of)
            self.readout.setText(translate("head_detail", "{query}  ·  key {key}     weight = {value:.4f}").format(
                query=self._query_text(info.row), key=piece_text(d.key_labels, info.col), value=info.value)
                + ("" if original is None else self._before_text(info.value, float(original[info.row, info.col]))))
        self.hovered.emit(info)
        self.queryHovered.emit(self._kind or "", -1 if info is None else self._piece_row(info.row))

    def _on_theme_changed(self) -> None:
        self.zoom.apply_theme(self.theme)
        if self._colormap is None:
            self.zoom.set_colormap(self.theme.colormap)
        self._set_title()
        if self.data() is not None:
            self._set_legend(self.data())

    def _on_colormap_changed(self) -> None:
        self.zoom.set_colormap(self.colormap())

    # figure protocol ---------------------------------------------------------------
    def figure_title(self) -> str:
        return self._what()[0]

    def figure_data(self) -> FigureData:
        d = self.data()
        if d is None:
            raise ValueError("the view shows no data yet")
        m = self.current_matrix()
        return FigureData(
            title=self.figure_title(),
            dims=("query", "key"),
            values={"weight": np.asarray(m)},
            coords={"query": d.query_labels, "key": d.key_labels},
        )

    def transient_items(self):
        return [self.plot.hover_marker, self.plot.linked_marker]


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("head_layer", "head_head", "head_query", "head_keys", "head_row_sum", "head_max_weight", "head_max_key")


def tour_row(view: QtHeadDetailView, ask: TourAsk) -> int:
    """The row a tour stop talks about: its query row, else the current step's, else the last."""
    d = view.data()
    n = d.weights.shape[2]
    q = ask.state.query
    if q is None:
        q = d.highlight if d.highlight is not None else n - 1
    return min(max(q, 0), n - 1)


def tour_measures(view: QtHeadDetailView, ask: TourAsk) -> dict[str, Any]:
    """The layer and head shown and the stop's row: its piece, keys, sum and largest weight."""
    row, d = tour_row(view, ask), view.data()
    w = np.asarray(view.current_matrix(), np.float64)[row]
    j = int(np.argmax(w))
    return {"head_layer": view.layer() + 1, "head_head": view.head() + 1, "head_query": display_piece(d.query_labels[row]),
            "head_keys": int(w.size), "head_row_sum": float(w.sum()), "head_max_weight": float(w[j]),
            "head_max_key": display_piece(d.key_labels[j])}


def region_head_row(view: QtHeadDetailView, ask: TourAsk) -> Region | None:
    """The stop's row of the matrix."""
    row, n = tour_row(view, ask), view.current_matrix().shape[1]
    return cells(view.plot, 0, row, n, row + 1)


SPEC = ViewSpec("head", QtHeadDetailView, QT_TRANSLATE_NOOP("views", "Head detail"), "right", ATTENTION_SELECTORS, data=attention_frame,
                kinds=KINDS, head_modes=HEAD_MODES, opening=CROSS_FIRST, depends_on=encoder_side,
                measures=tour_measures, measure_names=TOUR_MEASURES, regions={"head-row": region_head_row})
