"""The logit lens: each decoder layer's output sent through the final norm and the output layer,
softmax(Linear(Norm(h_l))), as if the decoder ended at layer l.

Top: one row per layer, one column per decoder position (the row fed: SOS, y₁, …; each predicts
the next token); each cell shows that layer's most likely next piece, coloured by its
probability; an outline marks the first layer from which the top piece is the final prediction
and stays so. Below: the probability each layer gives the final prediction at the selected
position. Hover a cell for its top tokens.

The view renders :class:`attnviz.core.analysis.logit_lens.LogitLens`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.logit_lens import LogitLens, logit_lens_for
from attnviz.core.data.pieces import display_piece
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import word_start_legend
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.small_plots import CellLabels, apply_plot_theme, legend_title, series, set_ticks, small_plot
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo
from attnviz.qt.widgets.plots import pen

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 460  # px of canvas before the dock scrolls

class QtLogitLensView(FigureViewBase):
    """``set_data(LogitLens | None)``; ``select(query)`` picks the position (0-based);
    ``chose({"query": row})`` when the user clicks one."""

    given: LogitLens | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)  # below it the figure scrolls (a short dock)
        self._scroll_canvas()
        self._read = "Norm(h_l)"  # what the output layer reads (h_l itself without a final norm)
        self._query: int | None = None
        ci = self.canvas.ci
        self.heatmap = HeatmapPlot(self.theme, colorbar=True, colorbar_label="p(top-1)", annotate=False, masked=False)
        self.heatmap.set_axis_titles(translate("logit_lens", "decoder layer"), translate("logit_lens", "position: the row fed (predicts the next token)"))
        self.heatmap.sigHovered.connect(self._on_hovered)
        self.heatmap.sigCellClicked.connect(self._on_cell_clicked)
        ci.addItem(self.heatmap, row=1, col=0)
        self.labels = CellLabels(self.heatmap)
        self._outlines: list[QtWidgets.QGraphicsRectItem] = []
        self.prob_plot = small_plot(translate("logit_lens", "decoder layer"), "p")
        self.prob_line = series(self.prob_plot, self.theme, 0, "selected")
        self.mean_line = series(self.prob_plot, self.theme, 1, "mean", dashed=True, symbol="s")
        ci.addItem(self.prob_plot, row=2, col=0)
        ci.layout.setRowStretchFactor(1, 3)
        ci.layout.setRowStretchFactor(2, 1)
        self._apply_theme()
        self._refresh()

    def render(self, lens: LogitLens | None) -> None:
        """The lens to draw; its ``final_norm`` says what the output layer reads (post-norm
        bundles have no norm after the decoder)."""
        self._read = "Norm(h_l)" if lens is None or lens.final_norm else "h_l"
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """The selected query row picks the position (a row of the decoder's input); a row of
        the encoder's (a source piece, selection kind "encoder") is no position and leaves it."""
        self.select(None if choice.kind == "encoder" else choice.query)

    def select(self, query: int | None = None) -> None:
        if query is not None:
            self._query = query
        self._refresh()

    def lens(self) -> LogitLens | None:
        return self.given

    def query(self) -> int:
        n = len(self.given.pieces) if self.given is not None else 1
        return n - 1 if self._query is None or not 0 <= self._query < n else self._query

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        lens = self.given
        for item in (self.heatmap, self.prob_plot):
            item.setVisible(lens is not None)
        if lens is None:
            self.title.set_title(translate("logit_lens", "Logit lens"),
                                 translate("logit_lens", "each decoder layer's output through the final norm and the output layer (needs a decoded step)"))
            self._place_texts(None)
            return
        q = self.query()
        first = int(lens.first_layer[q])
        final = display_piece(lens.top_pieces[-1][q][0])
        self.title.set_title(
            translate("logit_lens", "Logit lens · position {position} (“{piece}”): the final prediction “{final}” appears at layer {layer} and stays").format(
                position=q + 1, piece=display_piece(lens.pieces[q]), final=final, layer=first + 1),
            translate("logit_lens", "softmax(Linear({read})) for each decoder layer l · cell: layer l's most likely next piece, colour = its probability · "
                                    "outline: first layer that predicts the final piece and keeps it · {word_start}").format(
                read=self._read, word_start=word_start_legend()),
        )
        rows = [translate("logit_lens", "layer {layer}").format(layer=i + 1) for i in range(lens.n_layers)]
        self.heatmap.set_matrix(lens.top_probs[..., 0], rows, lens.pieces, levels=(0.0, 1.0))
        self._place_texts(lens)
        self._draw_probs(lens, q)

    def _place_texts(self, lens: LogitLens | None) -> None:
        texts = [] if lens is None else [[display_piece(p[0]) for p in row] for row in lens.top_pieces]
        self.labels.show(texts, None if lens is None else lens.top_probs[..., 0])
        self._place_outlines(lens)

    def _place_outlines(self, lens: LogitLens | None) -> None:
        n = 0 if lens is None else len(lens.pieces)
        while len(self._outlines) < n:
            rect = QtWidgets.QGraphicsRectItem()
            rect.setZValue(14)
            rect.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
            self.heatmap.addItem(rect)
            self._outlines.append(rect)
        for c, rect in enumerate(self._outlines):
            rect.setVisible(c < n)
            if c < n:
                rect.setPen(pen(self.theme.highlight, 2.5))
                rect.setRect(QtCore.QRectF(c - 0.45, int(lens.first_layer[c]) - 0.45, 0.9, 0.9))

    def _draw_probs(self, lens: LogitLens, q: int) -> None:
        x = np.arange(lens.n_layers, dtype=float)
        self.prob_line.setData(x, lens.final_prob[:, q])
        self.mean_line.setData(x, lens.final_prob.mean(axis=1))
        set_ticks(self.prob_plot, [str(i + 1) for i in range(lens.n_layers)])
        legend_title(self.prob_plot, translate("logit_lens", "p(final prediction) per layer"),
                     [(0, translate("logit_lens", "position {position}").format(position=q + 1)), (1, translate("logit_lens", "mean"))], self.theme)
        self.prob_plot.setYRange(0.0, 1.0, padding=0.05)
        self.prob_plot.setXRange(-0.3, lens.n_layers - 0.7, padding=0)

    def _apply_theme(self) -> None:
        self.heatmap.apply_theme(self.theme)
        apply_plot_theme(self.prob_plot, self.theme)

    def _on_theme_changed(self) -> None:
        self._apply_theme()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        self.heatmap.set_colormap(self.colormap())
        self._place_texts(self.given)

    def _on_cell_clicked(self, row: int, col: int) -> None:
        self.select(col)
        self.chose.emit({"query": col})

    def _on_hovered(self, info: HoverInfo | None) -> None:
        lens = self.given
        if info is None or lens is None:
            self.readout.setText(" ")
            return
        tops = "  ".join(f"{display_piece(p)} {v:.3f}" for p, v in zip(lens.top_pieces[info.row][info.col], lens.top_probs[info.row, info.col]))
        self.readout.setText(translate("logit_lens", "layer {layer}, after “{piece}”: {tops}").format(
            layer=info.row + 1, piece=display_piece(lens.pieces[info.col]), tops=tops))

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("logit_lens", "Logit lens")

    def figure_data(self) -> FigureData:
        lens = self.given
        if lens is None:
            raise ValueError("the view shows no data yet")
        layers = tuple(str(i + 1) for i in range(lens.n_layers))
        top1 = np.array([[float(lens.top_ids[r, c, 0]) for c in range(len(lens.pieces))] for r in range(lens.n_layers)])
        values = {"top1_id": top1, "top1_prob": lens.top_probs[..., 0], "final_prediction_prob": lens.final_prob}
        extras = {"top_ids": lens.top_ids, "top_probs": lens.top_probs, "first_layer": lens.first_layer + 1}
        return FigureData(self.figure_title(), ("layer", "position"), values, {"layer": layers, "position": lens.pieces}, extras)

    def transient_items(self):
        return [self.heatmap.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def logit_lens_data(session: Session, choice: ViewChoice) -> Analysis | None:
    """Each decoder layer's recorded output of the frame through the final norm and the output
    layer: a model call, run in a worker."""
    bundle, frozen = session.bundle, session.frames.frozen()
    if bundle is None or frozen is None:
        return None
    return Analysis(logit_lens_for, (frozen, bundle.model, bundle.tgt_tokenizer))


SPEC = ViewSpec("logit-lens", QtLogitLensView, QT_TRANSLATE_NOOP("views", "Logit lens"), "bottom", ("query",), data=logit_lens_data, needs=("decoder",),
                empty="nothing for the logit lens: the model has no decoder layers, or no step is decoded yet", query_rows="target")
