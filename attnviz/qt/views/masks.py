"""Mask view: how the look-ahead mask M turns scores into causal attention weights.

For the current decoder step and one head of the decoder's masked self-attention, four
matrices in the tutorial's order, rows = queries, columns = keys::

    ① QKᵀ/√d_k          ② M (0 / −∞)
    ③ QKᵀ/√d_k + M       ④ softmax(QKᵀ/√d_k + M)   ← exact zeros above the diagonal

and below them the padding masks of the target keys and of the source (cross-attention keys).

During free decoding each step ran with a KV cache and computed only its own row; the scores
above the diagonal in ① were never computed by a step (the matrices recompute them as a full pass
over the decoded prefix gives them), and the view says so (:class:`~attnviz.core.analysis.masks.MaskRows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData, MaskData, MaskFrame
from attnviz.core.analysis.masks import MaskRows
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice, query_axis
from attnviz.qt.views.base import (
    CURRENT_ROW_LEGEND,
    FigureViewBase,
    LayerHeadChoice,
    LayerHeadViewMixin,
    PredictedRowsMixin,
    fed_text,
    make_combo,
    piece_text,
    query_text,
    word_start_legend,
)
from attnviz.qt.views.spec import ATTENTION_SELECTORS, TourAsk, ViewSpec, mask_frame
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP, Theme
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, format_mask, format_score, format_weight
from attnviz.qt.widgets.regions import Region, cells_polygon, items_region, upper_triangle

if TYPE_CHECKING:
    from attnviz.qt.session import Session

NUMBERS = "①②③④⑤"


def panel_titles(short: bool, scaled: bool = True, biased: bool = False) -> dict[str, str]:
    """The panels' titles in the tutorial's order: ① QKᵀ/√d_k, (② B,) M, their sum, its softmax;
    QKᵀ for a model that does not divide by √d_k; ``short``: the sum and the softmax in terms of
    the panels before (③ = ① + ②), for narrow panels."""
    scores = "QKᵀ/√d_k" if scaled else "QKᵀ"
    parts = [("scaled_scores", scores), ("position_bias", "B"), ("mask", "M")] if biased else [("scaled_scores", scores), ("mask", "M")]
    n = len(parts)
    titles = {name: f"{NUMBERS[i]} {text}" for i, (name, text) in enumerate(parts)}
    total = " + ".join(text for _, text in parts)
    titles["masked_scores"] = f"{NUMBERS[n]} " + (" = " + " + ".join(NUMBERS[:n]) if short else total).lstrip()
    titles["weights"] = f"{NUMBERS[n + 1]} softmax({NUMBERS[n] if short else total})"
    return titles


NARROW_PANEL = 300.0  # px: a panel narrower than this gets its short title
NARROW_PADDING = 190.0  # px: a padding panel narrower than this says "src"/"tgt"
MIN_CANVAS_HEIGHT = 290  # px: below this the view scrolls (in the window) rather than drop row labels
# The captions, shown as translate("masks", text):
MASK_CAPTION = QT_TRANSLATE_NOOP("masks", "M: 0 on and below the diagonal, −∞ above (the future); adding −∞ before the softmax makes those weights exactly 0")
CACHED_CAPTION = QT_TRANSLATE_NOOP("masks", "Free decoding: each step ran with a KV cache and computed only its own row, against the keys so far "
                                   "(the outlined row is the current step's own scores). No step computed the scores above the diagonal in ①: "
                                   "they are q_i·k_j/√d_k recomputed here, as a full pass over the decoded prefix gives them")
CACHED_LEGEND = QT_TRANSLATE_NOOP("masks", "① above the diagonal: recomputed, never computed by a KV-cached step (it computes only its own row)")
RECOMPUTED_NOTE = QT_TRANSLATE_NOOP("masks", "  (recomputed: no KV-cached step computed this score)")
PADDING_NAMES = {  # the padding panels, in the read-out
    "tgt_padding": QT_TRANSLATE_NOOP("masks", "target padding"),
    "src_padding": QT_TRANSLATE_NOOP("masks", "source padding"),
}


def _padding_row(padding: np.ndarray | None, n: int) -> np.ndarray:
    """A padding vector (1.0 = PAD) as a 1×n row of M values: 0 for tokens, −∞ for PAD."""
    row = np.zeros((1, n), dtype=np.float32)
    if padding is not None:
        row[0, np.asarray(padding) > 0.5] = -np.inf
    return row


class QtMasksView(LayerHeadViewMixin, PredictedRowsMixin, FigureViewBase):
    """The pieces of softmax(QKᵀ/√d_k + M) for one head of the decoder's masked self-attention.

    ``set_data(MaskRows)`` (a :class:`MaskFrame` and whether its rows come from KV-cached steps; a
    bare frame, or a bare :class:`~attnviz.core.analysis.figure_data.MaskData`, which has the
    shapes, is a full pass's); ``select(layer=, head=)`` (0-based), ``apply(choice)`` for a choice.
    Signals: ``chose`` (the layer and head picked; the query row of a panel clicked, 0-based),
    ``hovered(panel, HoverInfo | None)``.
    """

    hovered = QtCore.Signal(str, object)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self._data: MaskData | None = None  # the masks of _rows
        self._rows: MaskRows | None = None  # the data given, as rows

        self.layer_combo = self._add_control(translate("masks", "Layer"), make_combo("maskLayerCombo", translate("masks", "Decoder layer")))
        self.head_combo = self._add_control(translate("masks", "Head"), make_combo("maskHeadCombo", translate("masks", "Head i")))
        self.layer_head = LayerHeadChoice(self.layer_combo, self.head_combo)
        self.controls.addStretch(1)
        self.layer_combo.currentIndexChanged.connect(self._on_controls_changed)
        self.head_combo.currentIndexChanged.connect(self._on_controls_changed)

        t = self.theme
        self._arrangement = ""
        self._placed_bias = False
        score = translate("masks", "score")
        self.panels: dict[str, HeatmapPlot] = {
            "scaled_scores": HeatmapPlot(t, colormap=DIVERGING_COLORMAP, value_format=format_score, colorbar_label=score),
            "mask": HeatmapPlot(t, colormap=f"solid:{t.allowed}", value_format=format_mask, colorbar=True),
            "masked_scores": HeatmapPlot(t, colormap=DIVERGING_COLORMAP, value_format=format_score, colorbar_label=score),
            "weights": HeatmapPlot(t, colormap=self.colormap(), value_format=format_weight, colorbar_label=translate("masks", "weight"), mark_zeros=True),
        }
        # B, a relative position bias: a panel (in ``panels``, after ①) only for a model with one
        self.bias_panel = HeatmapPlot(t, colormap=DIVERGING_COLORMAP, value_format=format_score, colorbar_label=score)
        # M has only 0 and −∞: its colour bar keeps the columns aligned but is not drawn.
        self.panels["mask"].colorbar.setOpacity(0.0)
        for plot in (*self.panels.values(), self.bias_panel):
            plot.sigHovered.connect(self._on_plot_hovered)
            plot.sigCellClicked.connect(self._on_cell_clicked)
        self.padding: dict[str, HeatmapPlot] = {
            "tgt_padding": HeatmapPlot(t, colormap=f"solid:{t.allowed}", value_format=format_mask, colorbar=False),
            "src_padding": HeatmapPlot(t, colormap=f"solid:{t.allowed}", value_format=format_mask, colorbar=False),
        }
        for plot in self.padding.values():
            plot.setMinimumHeight(78)
            plot.setMaximumHeight(110)
            plot.sigHovered.connect(self._on_plot_hovered)
        self.canvas.setMinimumHeight(MIN_CANVAS_HEIGHT)
        self.canvas.ci.layout.setHorizontalSpacing(10)
        self.canvas.ci.layout.setVerticalSpacing(4)
        self._arrange("grid")
        self._set_title()

    # layout -----------------------------------------------------------------------
    def arrangement(self) -> str:
        """``"grid"``: the panels 2 × 2 with the padding masks below; ``"row"``: the four panels
        side by side (a low canvas, e.g. a bottom dock), the padding masks said in the legend."""
        return self._arrangement

    def _arrange(self, how: str) -> None:
        """Place the panels. Rows are labelled in the left column only and keys in the top row
        only (the panels share them), so every label has room."""
        biased = self._biased()
        if (how, biased) == (self._arrangement, self._placed_bias):
            return
        self._arrangement, self._placed_bias = how, biased
        ci = self.canvas.ci
        for item in (self.title, *self.panels.values(), self.bias_panel, *self.padding.values()):
            if item in ci.items:
                ci.removeItem(item)
        panels = {n: p for n, p in self.panels.items() if n != "position_bias"}
        self.panels = dict(scaled_scores=panels.pop("scaled_scores"), **({"position_bias": self.bias_panel} if biased else {}), **panels)
        grid = how == "grid"
        shown = tuple(self.panels)
        top = 3 if biased else 2  # a grid's first row: the terms of the sum
        places = [(1, i) if i < top else (2, i - top) for i in range(len(shown))] if grid else [(1, i) for i in range(len(shown))]
        ci.addItem(self.title, row=0, col=0, colspan=top if grid else len(shown))
        self.bias_panel.setVisible(biased)
        for plot, (row, col) in zip((self.panels[n] for n in shown), places):
            ci.addItem(plot, row=row, col=col)
            plot.set_row_labels_visible(col == 0)
            plot.set_col_labels_visible(row == 1)
            plot.set_axis_titles(translate("masks", "fed (rows)") if col == 0 else "",
                                 translate("masks", "keys (columns)") if row == 1 and (col < 2 or not grid) else "")
        for plot, col in zip(self.padding.values(), (0, 1)):
            plot.setVisible(grid)
            if grid:
                ci.addItem(plot, row=3, col=col)
        for row, stretch in ((1, 4), (2, 4 if grid else 0), (3, 0)):
            ci.layout.setRowStretchFactor(row, stretch)
        if self._data is not None:
            self._refresh_static()
            self._set_title()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        w, h = self.canvas.width(), self.canvas.height()
        how = "row" if h < 430 and w > 1.6 * h else "grid"
        self._arrange(how)
        self._set_panel_titles(w / self._columns())

    def _biased(self) -> bool:
        """The data holds a relative position bias B (T5): a panel of its own."""
        return self._data is not None and self._data.position_bias is not None

    def _columns(self) -> int:
        n = len(self.panels)
        return (n + 1) // 2 if self._arrangement == "grid" else n

    def full_titles(self) -> dict[str, str]:
        """Each panel's full title, as this model computes the weights."""
        d = self._data
        return panel_titles(False, d is None or d.scaled, self._biased())

    def _set_panel_titles(self, panel_width: float) -> None:
        """Full titles where they fit, short ones (③ = ① + ②) in narrow panels."""
        d = self._data
        titles = panel_titles(panel_width < NARROW_PANEL, d is None or d.scaled, self._biased())
        only_look_ahead = d is None or np.array_equal(d.mask, d.look_ahead)
        for name, plot in self.panels.items():
            if name not in titles:
                continue
            text = titles[name]
            if name == "mask" and panel_width >= NARROW_PANEL:
                text += translate("masks", "  (look-ahead)") if only_look_ahead else translate("masks", "  (+ padding)")
            plot.set_panel_title(text, size="9pt")
        self._set_padding_titles(panel_width)

    def _set_padding_titles(self, panel_width: float) -> None:
        """"source padding · none" where it fits, "src padding · none" in narrow panels (the
        longer one would be cut off at both ends)."""
        d = self._data
        if d is None:
            return
        wide = panel_width >= NARROW_PADDING
        target = translate("masks", "target padding") if wide else translate("masks", "tgt padding")
        source = translate("masks", "source padding") if wide else translate("masks", "src padding")
        for name, title, padding in (("tgt_padding", target, d.tgt_padding), ("src_padding", source, d.src_padding)):
            note = "" if padding is not None and np.any(padding > 0.5) else translate("masks", " · none")
            self.padding[name].set_panel_title(title + note, color=self.theme.muted, size="8.5pt")

    def panel_titles(self) -> dict[str, str]:
        return {name: plot.titleLabel.text for name, plot in self.panels.items()}

    # data -------------------------------------------------------------------------
    def render(self, data: MaskRows | MaskFrame | MaskData) -> None:
        rows = data if isinstance(data, MaskRows) else MaskRows(MaskFrame.of(data))  # TypeError for anything else
        self._rows = rows
        self._data = rows.frame.masks
        self.set_predictions(rows.frame.predicted)
        self._fit_choice()
        self._arrange(self._arrangement)  # B's panel comes or goes with the model
        self._refresh()

    def data(self) -> MaskData | None:
        return self._data

    def rows_cached(self) -> bool:
        """The rows come from KV-cached steps (free decoding): the future scores were recomputed."""
        return self._rows is not None and self._rows.cached

    def _show_choice(self) -> None:
        self._refresh_head()

    def matrices(self) -> dict[str, np.ndarray]:
        """The ``[query, key]`` matrices shown, by panel name (−∞ kept): four, five with a position bias B."""
        d = self._data
        if d is None:
            return {}
        lh = self.layer_head.index
        bias = {} if d.position_bias is None else {"position_bias": d.position_bias[lh]}
        return {
            "scaled_scores": d.scaled_scores[lh],
            **bias,
            "mask": d.mask,
            "masked_scores": d.masked_scores[lh],
            "weights": d.weights[lh],
        }

    # internals -----------------------------------------------------------------------
    def _fit_choice(self) -> None:
        d = self._data
        self.layer_head.fit(d.n_layers if d else 0, d.n_heads if d else 0)

    def _on_controls_changed(self) -> None:
        self.layer_head.read()
        self._refresh_head()
        layer, head = self.layer_head.index
        self.chose.emit({"layer": layer, "head": head, "mode": "head"})

    def _refresh(self) -> None:
        """Everything: the data changed."""
        self._refresh_static()
        self._refresh_head()

    def _refresh_head(self) -> None:
        """The three panels of the chosen layer and head, and the title (M and the padding stay)."""
        d = self._data
        self._set_title()
        if d is None:
            return
        m = self.matrices()
        scores = [m[n] for n in ("scaled_scores", "position_bias", "masked_scores") if n in m]  # one diverging scale for all of them
        finite = np.concatenate([a[np.isfinite(a)] for a in scores])
        bound = float(np.abs(finite).max()) if finite.size else 1.0
        bound = bound if bound > 0 else 1.0
        q, k = d.query_labels, d.key_labels
        for name in ("scaled_scores", "position_bias", "masked_scores"):
            if name in m:
                self.panels[name].set_matrix(m[name], q, k, d.step, levels=(-bound, bound))
        self.panels["weights"].set_matrix(m["weights"], q, k, d.step, levels=(0.0, 1.0))

    def _refresh_static(self) -> None:
        """M and the padding masks: the same for every layer and head."""
        d = self._data
        if d is None:
            return
        q, k = d.query_labels, d.key_labels
        self.panels["mask"].set_matrix(d.mask, q, k, d.step, levels=(0.0, 1.0))
        self._set_panel_titles(self.canvas.width() / self._columns())
        if self._arrangement != "grid":
            return
        tgt = _padding_row(d.tgt_padding, len(k))
        self.padding["tgt_padding"].set_matrix(tgt, ("M_pad",), k, None, levels=(0.0, 1.0))
        self.padding["tgt_padding"].set_col_labels_visible(False)  # the same keys as the panels above
        src_plot = self.padding["src_padding"]
        if d.src_padding is not None:
            src = _padding_row(d.src_padding, len(d.src_labels))
            src_plot.set_matrix(src, ("M_pad",), d.src_labels, None, levels=(0.0, 1.0))
            src_plot.setVisible(True)
        else:
            src_plot.setVisible(False)

    def padding_summary(self) -> str:
        """The padding masks in words (shown in the legend when the panels are in a row)."""
        d = self._data
        if d is None:
            return ""
        parts = []
        for at, none, pad in ((QT_TRANSLATE_NOOP("masks", "target PAD at {positions}"), QT_TRANSLATE_NOOP("masks", "no target PAD"), d.tgt_padding),
                              (QT_TRANSLATE_NOOP("masks", "source PAD at {positions}"), QT_TRANSLATE_NOOP("masks", "no source PAD"), d.src_padding)):
            where = [i + 1 for i, v in enumerate(pad if pad is not None else ()) if v > 0.5]
            parts.append(translate("masks", at).format(positions=", ".join(map(str, where))) if where else translate("masks", none))
        return translate("masks", "padding M_pad: {parts}").format(parts=", ".join(parts))

    def _set_title(self) -> None:
        d = self._data
        if d is None:
            self.title.set_title(translate("masks", "No decoder step to show yet"))
            return
        step = "" if d.step is None else translate("masks", " · step {step}: {fed}").format(step=d.step + 1, fed=fed_text(d.query_labels, d.step, self._predicted))
        row = self._arrangement == "row"
        mask = translate("masks", MASK_CAPTION)
        caption = translate("masks", "{mask}. {cached}").format(mask=mask, cached=translate("masks", CACHED_CAPTION)) if self.rows_cached() else mask
        self.title.set_title(
            translate("masks", "Masks · decoder self-attention · layer {layer} · head {head}").format(layer=self.layer_head.layer + 1, head=self.layer_head.head + 1)
            + step,
            "" if row else caption,
        )
        current = (("▭", self.theme.highlight, translate("base", CURRENT_ROW_LEGEND)),) if d.step is not None else ()
        padding = (("", "", self.padding_summary()),) if row else ()
        cached = (("", "", translate("masks", CACHED_LEGEND)),) if row and self.rows_cached() else ()
        self.title.set_legend((*current, *cached, *padding, *word_start_legend(d.query_labels, d.key_labels)))

    def _on_plot_hovered(self, info: HoverInfo | None) -> None:
        # a bound method, not a lambda holding the view: the view can be freed before the app
        sender = self.sender()
        panel = next(n for n, p in (*self.panels.items(), *self.padding.items()) if p is sender)
        self._on_hovered(panel, info)

    def _on_cell_clicked(self, row: int, _col: int) -> None:
        self.chose.emit({"query": row})

    def _on_hovered(self, panel: str, info: HoverInfo | None) -> None:
        d = self._data
        if info is None or d is None:
            self.readout.setText(" ")
        else:
            titles = self.full_titles()
            label = titles[panel] if panel in titles else translate("masks", PADDING_NAMES.get(panel, panel))
            value = format_score(info.value) if panel != "weights" else f"{info.value:.4g}"
            keys = d.src_labels if panel == "src_padding" else d.key_labels
            where = translate("masks", "key {piece}").format(piece=piece_text(keys, info.col))
            if panel in self.panels:
                where = query_text("decoder", d.query_labels, info.row, self._predicted) + "  ·  " + where
            note = translate("masks", RECOMPUTED_NOTE) if panel == "scaled_scores" and self._recomputed(info.row, info.col) else ""
            self.readout.setText(translate("masks", "{panel}:  {where}     value = {value}").format(panel=label, where=where, value=value) + note)
        self.hovered.emit(panel, info)
        self.queryHovered.emit("decoder", info.row if info is not None and panel in self.panels else -1)

    def _recomputed(self, row: int, col: int) -> bool:
        r = self._rows
        return r is not None and bool(r.recomputed()[row, col])

    def show_linked_query(self, axis: str, row: int) -> None:
        """Outline query ``row`` (dashed) in the four panels when ``axis`` is the target's."""
        linked = row if row >= 0 and axis == query_axis("decoder") else None
        for plot in self.panels.values():
            plot.set_linked_row(linked)

    def _on_theme_changed(self) -> None:
        for plot in {*self.panels.values(), self.bias_panel, *self.padding.values()}:
            plot.apply_theme(self.theme)
        for plot in [self.panels["mask"], *self.padding.values()]:
            plot.set_colormap(f"solid:{self.theme.allowed}")
        if self._colormap is None:
            self.panels["weights"].set_colormap(self.theme.colormap)
        self._refresh()

    def _on_colormap_changed(self) -> None:
        self.panels["weights"].set_colormap(self.colormap())

    # figure protocol ----------------------------------------------------------------------
    def figure_title(self) -> str:
        d = self._data
        if d is None:
            return translate("masks", "Masks")
        return translate("masks", "Decoder masked self-attention masks · layer {layer} · head {head}").format(
            layer=self.layer_head.layer + 1, head=self.layer_head.head + 1)

    def figure_data(self) -> FigureData:
        d = self._data
        if d is None:
            raise ValueError("the view shows no data yet")
        m = self.matrices()
        extras = {"look_ahead": d.look_ahead, "rows_from_cached_steps": np.array(self.rows_cached()),
                  "recomputed_scores": self._rows.recomputed()}
        if d.tgt_padding is not None:
            extras["tgt_padding"] = d.tgt_padding
        if d.src_padding is not None:
            extras["src_padding"] = d.src_padding
        return FigureData(
            title=self.figure_title(),
            dims=("query", "key"),
            values={name: np.asarray(a) for name, a in m.items()},
            coords={"query": d.query_labels, "key": d.key_labels},
            extras=extras,
        )

    def transient_items(self):
        plots = list(self.panels.values()) + list(self.padding.values())
        return [p.hover_marker for p in plots] + [p.linked_marker for p in self.panels.values()]


def mask_rows(session: Session, choice: ViewChoice) -> MaskRows | None:
    """The mask view's data: the frame's masks (:func:`~attnviz.qt.views.spec.mask_frame`) and
    whether its rows come from KV-cached steps (free decoding) or one teacher-forced pass."""
    frame = mask_frame(session, choice)
    return MaskRows(frame, cached=session.forced is None) if frame is not None else None


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("mask_upper_max", "mask_masked", "mask_row", "mask_row_sum", "mask_allowed")


def tour_measures(view: QtMasksView, ask: TourAsk) -> dict[str, Any]:
    """The weights above the diagonal (their largest, how many), and the current step's row: its
    sum and the keys it may see."""
    m = view.matrices()
    w = np.asarray(m["weights"], np.float64)
    n, step = w.shape[0], view.data().step
    row = n - 1 if step is None else step
    upper = w[np.triu_indices(n, 1)]
    return {"mask_upper_max": float(upper.max()) if upper.size else 0.0, "mask_masked": int(upper.size), "mask_row": row + 1,
            "mask_row_sum": float(w[row].sum()), "mask_allowed": int(np.isfinite(m["mask"][row]).sum())}


def region_upper_triangle(view: QtMasksView, ask: TourAsk) -> Region | None:
    """The weights' cells above the diagonal (the whole panel when there are none)."""
    plot = view.panels["weights"]
    n = view.matrices()["weights"].shape[0]
    return cells_polygon(plot, upper_triangle(n)) if n > 1 else items_region(plot)


SPEC = ViewSpec("mask", QtMasksView, QT_TRANSLATE_NOOP("views", "Masks"), "right", ATTENTION_SELECTORS, data=mask_rows,
                kinds=("decoder",), empty="the mask view needs at least one decoded step",
                measures=tour_measures, measure_names=TOUR_MEASURES, regions={"mask-upper-triangle": region_upper_triangle})
