"""Nearest training sentences (as in Seq2Seq-Vis): for the current decoding step (or the chosen
target row), the training pairs whose decoder state is nearest (cosine) to this step's, each with
the position it was at, the token it went on to and the similarity.

A bar per neighbour (its similarity) above a table (``neighboursTable``: source, target with the
position's token between ⟦ ⟧, next token, similarity; every cell plain text, since the sentences
are data). The
index of training states is read from the user's cache folder, or built on first use (in the
worker, once per model). A model that cannot be searched (an encoder-only model has no decoder;
an imported one names no training data) shows why. The view renders
:class:`attnviz.core.analysis.neighbours.Neighbours`, computed in a worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.neighbours import Neighbours, SharedIndex, cache_folder, neighbours_for, unavailable
from attnviz.core.data.examples import data_spec
from attnviz.core.data.pieces import display_piece
from attnviz.qt.analyses import Analysis
from attnviz.qt.i18n import translate
from attnviz.qt.state import model_hash
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.small_plots import apply_plot_theme, small_plot
from attnviz.qt.views.spec import ViewSpec

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

REASONS = {  # the core's UNAVAILABLE texts, shown as translate("neighbours", text)
    "no-decoder": QT_TRANSLATE_NOOP("neighbours", "an encoder-only model (BERT) has no decoder: it has no decoder states to compare"),
    "no-data": QT_TRANSLATE_NOOP("neighbours", "the model names no training data: there are no training sentences to search"),
}
COLUMNS = (QT_TRANSLATE_NOOP("neighbours", "source"), QT_TRANSLATE_NOOP("neighbours", "target (⟦at⟧)"),
           QT_TRANSLATE_NOOP("neighbours", "next"), QT_TRANSLATE_NOOP("neighbours", "similarity"))
LABEL_CHARS = 28  # a bar's label: the neighbour's source, shortened


@dataclass(frozen=True)
class NotApplicable:
    """Why the model cannot be searched: a key of the core's ``UNAVAILABLE``."""

    reason: str


class QtNeighboursView(FigureViewBase):
    """``set_data(Neighbours | NotApplicable | None)``; the row comes with the data (the chosen query row)."""

    given: Neighbours | NotApplicable | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.table = QtWidgets.QTableWidget(0, len(COLUMNS), objectName="neighboursTable")
        self.table.setHorizontalHeaderLabels([translate("neighbours", c) for c in COLUMNS])
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)  # the target takes the room left
        self.table.setMinimumHeight(120)
        self.layout().insertWidget(2, self.table, 2)  # under the figure: the title on top
        self.bars_plot = small_plot(left=translate("neighbours", "neighbour"))
        self.bars_plot.setLabel("bottom", translate("neighbours", "cosine similarity"))
        self.bars = pg.BarGraphItem(x0=0, y=[], height=0.6, width=[])
        self.bars_plot.addItem(self.bars)
        self.canvas.ci.addItem(self.bars_plot, row=1, col=0)
        self.canvas.setMinimumHeight(220)
        self._on_theme_changed()

    # protocol ------------------------------------------------------------------------------------
    def render(self, data: Neighbours | NotApplicable | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the row chosen is in the data."""

    def result(self) -> Neighbours | None:
        return self.given if isinstance(self.given, Neighbours) else None

    def reason(self) -> str | None:
        """The key of why the model cannot be searched, when it cannot."""
        return self.given.reason if isinstance(self.given, NotApplicable) else None

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        data = self.given
        found = data if isinstance(data, Neighbours) else None
        self.bars_plot.setVisible(found is not None)
        if found is None:
            why = translate("neighbours", REASONS[data.reason]) if isinstance(data, NotApplicable) else translate(
                "neighbours", "needs a decoded step: the training sentences whose decoder state is nearest to it")
            self.title.set_title(translate("neighbours", "Nearest training sentences"), why)
            self.table.setRowCount(0)
            return
        self.title.set_title(
            translate("neighbours", "Nearest training sentences · step {position}: {step} → {next}").format(
                position=found.position + 1, step=found.marked(), next=display_piece(found.next_piece)),
            translate("neighbours", "cosine of the last decoder layer's output, over {states:,} positions of {pairs:,} training pairs").format(
                states=found.states, pairs=found.pairs))
        self._fill_table(found)
        sims = np.array([n.similarity for n in found.neighbours], dtype=float)
        self.bars.setOpts(x0=np.zeros(len(sims)), y=np.arange(len(sims)), width=sims, height=0.6)
        labels = [f"{i + 1}. {_short(n.source)}" for i, n in enumerate(found.neighbours)]
        self.bars_plot.getAxis("left").setTicks([list(enumerate(labels))])
        self.bars_plot.setYRange(-0.6, max(len(sims), 1) - 0.4, padding=0)
        self.bars_plot.setXRange(min(0.0, float(sims.min(initial=0.0))), 1.0, padding=0.02)
        self.bars_plot.getViewBox().invertY(True)
        room = max(self.readout.width() - 20, 120)  # the notice names a cache file: its middle gives way, the whole in the tooltip
        self.readout.setText(self.readout.fontMetrics().elidedText(found.notice, QtCore.Qt.TextElideMode.ElideMiddle, room))
        self.readout.setToolTip(found.notice)

    def _fill_table(self, found: Neighbours) -> None:
        self.table.setRowCount(len(found.neighbours))
        for r, n in enumerate(found.neighbours):
            texts = (n.source, n.marked(), display_piece(n.next_piece), f"{n.similarity:.3f}")
            for c, text in enumerate(texts):
                item = QtWidgets.QTableWidgetItem(text)  # plain text, never markup: the sentences are data
                item.setToolTip(f"{n.pair_id} · {translate('neighbours', 'position {p}').format(p=n.position + 1)}")
                if c == 3:
                    item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)

    def _on_theme_changed(self) -> None:
        self.bars.setOpts(brush=pg.mkBrush(self.theme.selection), pen=pg.mkPen(None))
        apply_plot_theme(self.bars_plot, self.theme)
        self._refresh()

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        found = self.result()
        title = translate("neighbours", "Nearest training sentences")
        return title if found is None else translate("neighbours", "{title} of step {position}").format(title=title, position=found.position + 1)

    def figure_data(self) -> FigureData:
        found = self.result()
        if found is None:
            raise ValueError("the view shows no neighbours")
        ns = found.neighbours
        values = {"similarity": np.array([n.similarity for n in ns]), "position": np.array([n.position + 1 for n in ns], dtype=float)}
        coords = {"neighbour": tuple(n.pair_id for n in ns)}
        extras = {"source": np.array([n.source for n in ns]), "target": np.array([n.target for n in ns]),
                  "next": np.array([n.next_piece for n in ns]), "step": np.array(found.position + 1)}
        return FigureData(self.figure_title(), ("neighbour",), values, coords, extras)


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


# -- the registry's entry ----------------------------------------------------------------------
def neighbours_data(session: Session, choice: ViewChoice) -> Analysis | NotApplicable | None:
    """The training rows nearest to the chosen target row (default: the current step), run in a
    worker; the model's index is read or built there on first use."""
    bundle, frozen = session.bundle, session.frames.frozen()
    if bundle is None or frozen is None:
        return None
    spec = data_spec(bundle.meta)
    reason = unavailable(bundle.config, spec)
    if reason is not None:
        return NotApplicable(reason)
    if not frozen.output_ids:
        return None
    row = choice.query if choice.kind != "encoder" and choice.query is not None else len(frozen.output_ids) - 1
    row = min(max(row, 0), len(frozen.output_ids) - 1)
    shared = session.frames.derive("neighbours", scope="model", build=lambda: SharedIndex(cache_folder(), model_hash(bundle.path) if bundle.path else None, spec))
    return Analysis(neighbours_for, (shared, bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, tuple(frozen.src_ids),
                                     tuple(frozen.input_ids), tuple(frozen.output_ids), row))


SPEC = ViewSpec("neighbours", QtNeighboursView, QT_TRANSLATE_NOOP("views", "Nearest training sentences"), "bottom", ("query",),
                data=neighbours_data, from_choice=True, query_rows="target", needs=("decoder",),
                empty="no step to compare: decode a token first")
