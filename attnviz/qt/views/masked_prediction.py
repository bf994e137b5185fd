"""Masked tokens: what an encoder-only model (BERT) puts where the user typed ``[MASK]``: the top-k
tokens with their probabilities at each hidden position, softmax of the masked-token head's logits.
A table lists every position; the bar chart shows the position chosen in the combo. Renders
:class:`attnviz.core.decoding.masked.MaskedPrediction` (the session ran the pass in a worker)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.core.decoding.masked import MASK_PIECE, MaskedPrediction
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.small_plots import apply_plot_theme, set_ticks, small_plot
from attnviz.qt.views.spec import ViewSpec

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session


def position_text(prediction: MaskedPrediction, index: int) -> str:
    """A hidden position as the view names it: its 1-based position and the sentence's pieces around it."""
    pieces = prediction.source.pieces
    around = " ".join(display_piece(p) for p in pieces[max(0, index - 2): index + 3])
    return translate("masked_prediction", "position {position}: … {around} …").format(position=index + 1, around=around)


class QtMaskedPredictionView(FigureViewBase):
    """``set_data(MaskedPrediction)``: the top-k at every ``[MASK]`` (the table) and at one of them (the bars)."""

    given: MaskedPrediction | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.position_combo = self._add_control(translate("masked_prediction", "Position"), make_combo(
            "maskedPositionCombo", translate("masked_prediction", "Which [MASK] the bars show")))
        self.controls.addStretch(1)
        self.position_combo.currentIndexChanged.connect(lambda _i: self._draw_bars())
        self.table = QtWidgets.QTableWidget(0, 4, objectName="maskedTable")
        self.table.setHorizontalHeaderLabels([translate("masked_prediction", "position"), translate("masked_prediction", "rank"),
                                              translate("masked_prediction", "token"), translate("masked_prediction", "probability")])
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.layout().insertWidget(1, self.table, 1)
        self.plot = small_plot(left=translate("masked_prediction", "token"))
        self.plot.setLabel("bottom", translate("masked_prediction", "probability"))
        self.bars = pg.BarGraphItem(x0=0, y=[], height=0.6, width=[])
        self.plot.addItem(self.bars)
        self.canvas.ci.addItem(self.plot, row=1, col=0)
        self._on_theme_changed()

    def render(self, data: MaskedPrediction | None) -> None:
        positions = data.positions if data is not None else ()
        set_combo_items(self.position_combo, [(position_text(data, p.index), p.index) for p in positions],
                        self.position_combo.currentData())
        self._fill_table()
        self._draw_bars()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view shows the sentence's hidden positions."""

    def prediction(self) -> MaskedPrediction | None:
        return self.given

    def _fill_table(self) -> None:
        rows = [(p.index, r, piece, prob) for p in (self.given.positions if self.given else ()) for r, (piece, _id, prob) in enumerate(p.topk)]
        self.table.setRowCount(len(rows))
        for r, (index, rank, piece, prob) in enumerate(rows):
            for c, text in enumerate((str(index + 1), str(rank + 1), display_piece(piece), f"{prob:.4f}")):
                self.table.setItem(r, c, QtWidgets.QTableWidgetItem(text))  # plain text: tokens
        self.table.resizeColumnsToContents()

    def _shown(self):
        """The hidden position the bars show (``None``: there is none)."""
        index = self.position_combo.currentData()
        return next((p for p in (self.given.positions if self.given else ()) if p.index == index), None)

    def _draw_bars(self) -> None:
        shown = self._shown()
        self.plot.setVisible(shown is not None)
        if self.given is None:
            self.title.set_title(translate("masked_prediction", "Masked tokens"), "")
            return
        if shown is None:
            self.title.set_title(translate("masked_prediction", "Masked tokens"), translate(
                "masked_prediction", "no {mask} in the sentence: type {mask} where a token is hidden").format(mask=MASK_PIECE))
            return
        probs = np.array([prob for _piece, _id, prob in shown.topk], float)
        self.bars.setOpts(x0=np.zeros(len(probs)), y=np.arange(len(probs)), width=probs, height=0.6)
        set_ticks(self.plot, [display_piece(piece) for piece, _id, _prob in shown.topk], axis="left")
        self.plot.setYRange(-0.6, len(probs) - 0.4, padding=0)
        self.plot.setXRange(0, max(float(probs.max()), 1e-6) * 1.05, padding=0)
        self.plot.getViewBox().invertY(True)
        self.title.set_title(translate("masked_prediction", "Masked tokens · {position}").format(position=position_text(self.given, shown.index)),
                             translate("masked_prediction", "P(token at {mask} | the sentence) = softmax(logits)").format(mask=MASK_PIECE))

    def _on_theme_changed(self) -> None:
        self.bars.setOpts(brush=pg.mkBrush(self.theme.selection), pen=pg.mkPen(None))
        apply_plot_theme(self.plot, self.theme)

    def figure_title(self) -> str:
        return translate("masked_prediction", "Masked tokens")

    def figure_data(self) -> FigureData:
        if self.given is None or not self.given.positions:
            raise ValueError("the view shows no masked position yet")
        positions = self.given.positions
        k = min(len(p.topk) for p in positions)
        probs = np.array([[prob for _piece, _id, prob in p.topk[:k]] for p in positions], np.float64)  # [position, rank]
        ids = np.array([[i for _piece, i, _prob in p.topk[:k]] for p in positions], np.int64)
        pieces = np.array([[piece for piece, _id, _prob in p.topk[:k]] for p in positions], str)
        return FigureData(self.figure_title(), ("position", "rank"), {"probability": probs},
                          coords={"position": tuple(str(p.index + 1) for p in positions), "rank": tuple(str(r + 1) for r in range(k))},
                          extras={"token_id": ids, "token": pieces})

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 - Qt API
        return QtCore.QSize(420, 480)


def masked_data(session: Session, choice: ViewChoice) -> MaskedPrediction | None:
    """The session's masked-token prediction (``None``: the model decodes, or the pass has not returned)."""
    return session.masked


SPEC = ViewSpec("masked", QtMaskedPredictionView, QT_TRANSLATE_NOOP("views", "Masked tokens"), "right", (), data=masked_data, needs=("masked",),
                depends_on=("source",), empty="nothing to predict: type a sentence with [MASK] where a token is hidden")
