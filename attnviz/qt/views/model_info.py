"""Model info: what the open model is — encoder-decoder, encoder-only or decoder-only, its
layers, heads, d_model, d_k, d_ff, where it normalizes, its vocabularies, its parameters per part
(a bar each) and its data and licence as its bundle records them. Renders
:class:`attnviz.core.analysis.model_info.ModelInfo` (no model run: it reads the weights' shapes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.model_info import PARTS, ModelInfo, figure_data, model_info
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.small_plots import apply_plot_theme, small_plot
from attnviz.qt.views.spec import ViewSpec

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session


class QtModelInfoView(FigureViewBase):
    """``set_data(ModelInfo | None)``: the table of properties and the parameters per part."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self._info: ModelInfo | None = None
        self.table = QtWidgets.QTableWidget(0, 2, objectName="modelInfoTable")
        self.table.setHorizontalHeaderLabels(["property", "value"])
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setWordWrap(True)
        self.layout().insertWidget(1, self.table, 2)
        self.bars_plot = small_plot(left="part")
        self.bars_plot.setLabel("bottom", "parameters")
        self.bars = pg.BarGraphItem(x0=0, y=[], height=0.6, width=[])
        self.bars_plot.addItem(self.bars)
        self.canvas.ci.addItem(self.bars_plot, row=1, col=0)
        self.canvas.setMinimumHeight(220)
        self._on_theme_changed()

    def set_data(self, info: ModelInfo | None) -> None:
        self._info = info
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view describes the whole model."""

    def has_data(self) -> bool:
        return self._info is not None

    def info(self) -> ModelInfo | None:
        return self._info

    def _refresh(self) -> None:
        info = self._info
        self.bars_plot.setVisible(info is not None)
        if info is None:
            self.title.set_title("Model info", "no model open")
            self.table.setRowCount(0)
            return
        self.title.set_title(f"{info.name} · {info.kind}", f"{info.total:,} parameters; a matrix two parts share counts once")
        self.table.setRowCount(len(info.rows))
        for r, (key, value) in enumerate(info.rows):
            for c, text in enumerate((key, value)):
                item = QtWidgets.QTableWidgetItem(text)  # plain text: data names come from the bundle's files
                item.setToolTip(text)
                self.table.setItem(r, c, item)
        self.table.resizeColumnToContents(0)
        counts = np.array([info.parameters[p] for p in PARTS], dtype=float)
        self.bars.setOpts(x0=np.zeros(len(PARTS)), y=np.arange(len(PARTS)), width=counts, height=0.6)
        self.bars_plot.getAxis("left").setTicks([list(enumerate(PARTS))])
        self.bars_plot.setYRange(-0.6, len(PARTS) - 0.4, padding=0)
        self.bars_plot.setXRange(0, max(counts.max(), 1.0) * 1.05, padding=0)
        self.bars_plot.getViewBox().invertY(True)

    def _on_theme_changed(self) -> None:
        self.bars.setOpts(brush=pg.mkBrush(self.theme.selection), pen=pg.mkPen(None))
        apply_plot_theme(self.bars_plot, self.theme)
        self._refresh()

    def figure_title(self) -> str:
        return "Model info" if self._info is None else f"Model info · {self._info.name}"

    def figure_data(self) -> FigureData:
        if self._info is None:
            raise ValueError("the view shows no data yet")
        return figure_data(self._info)

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 - Qt API
        return QtCore.QSize(480, 520)


def model_info_data(session: Session, choice: ViewChoice) -> ModelInfo | None:
    """The open model's description (kept while the model stays open)."""
    bundle = session.bundle
    return None if bundle is None else session.per_model("model_info", lambda: model_info(bundle))


SPEC = ViewSpec("model-info", QtModelInfoView, "Model info", "bottom", (), data=model_info_data, empty="no model open")
