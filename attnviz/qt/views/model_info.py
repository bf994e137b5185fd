"""Model info: what the open model is — encoder-decoder, encoder-only or decoder-only, its
layers, heads, d_model, d_k, d_ff, where it normalizes, its vocabularies, its parameters per part
(a bar each) and its data and licence as its bundle records them. Renders
:class:`attnviz.core.analysis.model_info.ModelInfo` (no model run: it reads the weights' shapes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.model_info import PARTS, InfoRow, ModelInfo, figure_data, model_info
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.small_plots import apply_plot_theme, small_plot
from attnviz.qt.views.spec import TourAsk, ViewSpec
from attnviz.qt.widgets.regions import Region, widget_region

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session


# The core's texts this view shows (its parts, kinds, properties and value templates), marked for
# the translators: the view translates each where it shows it.
CORE_TEXTS = (
    QT_TRANSLATE_NOOP("model_info", "source embedding"), QT_TRANSLATE_NOOP("model_info", "encoder layers"),
    QT_TRANSLATE_NOOP("model_info", "target embedding"), QT_TRANSLATE_NOOP("model_info", "decoder layers"),
    QT_TRANSLATE_NOOP("model_info", "output layer"),
    QT_TRANSLATE_NOOP("model_info", "encoder-decoder"), QT_TRANSLATE_NOOP("model_info", "encoder-only (no decoder layers)"),
    QT_TRANSLATE_NOOP("model_info", "decoder-only (no encoder layers)"),
    QT_TRANSLATE_NOOP("model_info", "no layers (embeddings and output layer only)"),
    QT_TRANSLATE_NOOP("model_info", "kind"), QT_TRANSLATE_NOOP("model_info", "layers"), QT_TRANSLATE_NOOP("model_info", "heads h"),
    QT_TRANSLATE_NOOP("model_info", "normalization"), QT_TRANSLATE_NOOP("model_info", "FFN activation"),
    QT_TRANSLATE_NOOP("model_info", "vocabularies"), QT_TRANSLATE_NOOP("model_info", "longest input"),
    QT_TRANSLATE_NOOP("model_info", "parameters"), QT_TRANSLATE_NOOP("model_info", "data"),
    QT_TRANSLATE_NOOP("model_info", "licence"), QT_TRANSLATE_NOOP("model_info", "attribution"),
    QT_TRANSLATE_NOOP("model_info", "{encoder} encoder + {decoder} decoder"),
    QT_TRANSLATE_NOOP("model_info", "{norm}, Norm(x + Sublayer(x)) (post-norm, as in the paper)"),
    QT_TRANSLATE_NOOP("model_info", "{norm}, x + Sublayer(Norm(x)) (pre-norm)"),
    QT_TRANSLATE_NOOP("model_info", "{source:,} source, {target:,} target pieces"),
    QT_TRANSLATE_NOOP("model_info", "{n} tokens"), QT_TRANSLATE_NOOP("model_info", "not recorded"),
    QT_TRANSLATE_NOOP("model_info", "positions"), QT_TRANSLATE_NOOP("model_info", "scores"), QT_TRANSLATE_NOOP("model_info", "FFN"),
    QT_TRANSLATE_NOOP("model_info", "{value} (d_model / h)"), QT_TRANSLATE_NOOP("model_info", "{value} (its own, not d_model / h; h·d_k = {inner})"),
    QT_TRANSLATE_NOOP("model_info", "relative: a bias B on the scores per head, {buckets} distance buckets"),
    QT_TRANSLATE_NOOP("model_info", "a learned table of {n} positions added to the embeddings"),
    QT_TRANSLATE_NOOP("model_info", "sinusoidal PE(pos, 2i) added to the embeddings"),
    QT_TRANSLATE_NOOP("model_info", "{formula}: no ÷√d_k (folded into the weights)"),
    QT_TRANSLATE_NOOP("model_info", "{formula}; B in the self-attentions only"),
    QT_TRANSLATE_NOOP("model_info", "{formula}: no ÷√d_k (folded into the weights); B in the self-attentions only"),
    QT_TRANSLATE_NOOP("model_info", "gated: (act(x W₁) ⊙ x W_up) W₂"),
)


def core_text(text: str) -> str:
    """One of :data:`CORE_TEXTS` in the interface's language (any other text as it is)."""
    return translate("model_info", text)


def row_texts(row: InfoRow) -> tuple[str, str]:
    """A property's name and value as the table shows them: the value's template translated, then filled."""
    return core_text(row.key), core_text(row.template).format(**row.values)


class QtModelInfoView(FigureViewBase):
    """``set_data(ModelInfo | None)``: the table of properties and the parameters per part."""

    given: ModelInfo | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.table = QtWidgets.QTableWidget(0, 2, objectName="modelInfoTable")
        self.table.setHorizontalHeaderLabels([translate("model_info", "property"), translate("model_info", "value")])
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setWordWrap(True)
        self.layout().insertWidget(1, self.table, 2)
        self.bars_plot = small_plot(left=translate("model_info", "part"))
        self.bars_plot.setLabel("bottom", translate("model_info", "parameters"))
        self.bars = pg.BarGraphItem(x0=0, y=[], height=0.6, width=[])
        self.bars_plot.addItem(self.bars)
        self.canvas.ci.addItem(self.bars_plot, row=1, col=0)
        self.canvas.setMinimumHeight(220)
        self._on_theme_changed()

    def render(self, info: ModelInfo | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view describes the whole model."""

    def info(self) -> ModelInfo | None:
        return self.given

    def _refresh(self) -> None:
        info = self.given
        self.bars_plot.setVisible(info is not None)
        if info is None:
            self.title.set_title(translate("model_info", "Model info"), translate("model_info", "no model open"))
            self.table.setRowCount(0)
            return
        self.title.set_title(f"{info.name} · {core_text(info.kind)}",
                             translate("model_info", "{total:,} parameters; a matrix two parts share counts once").format(total=info.total))
        self.table.setRowCount(len(info.rows))
        for r, row in enumerate(info.rows):
            for c, text in enumerate(row_texts(row)):
                item = QtWidgets.QTableWidgetItem(text)  # plain text: data names come from the bundle's files
                item.setToolTip(text)
                self.table.setItem(r, c, item)
        self.table.resizeColumnToContents(0)
        counts = np.array([info.parameters[p] for p in PARTS], dtype=float)
        self.bars.setOpts(x0=np.zeros(len(PARTS)), y=np.arange(len(PARTS)), width=counts, height=0.6)
        self.bars_plot.getAxis("left").setTicks([list(enumerate(map(core_text, PARTS)))])
        self.bars_plot.setYRange(-0.6, len(PARTS) - 0.4, padding=0)
        self.bars_plot.setXRange(0, max(counts.max(), 1.0) * 1.05, padding=0)
        self.bars_plot.getViewBox().invertY(True)

    def _on_theme_changed(self) -> None:
        self.bars.setOpts(brush=pg.mkBrush(self.theme.selection), pen=pg.mkPen(None))
        apply_plot_theme(self.bars_plot, self.theme)
        self._refresh()

    def figure_title(self) -> str:
        title = translate("model_info", "Model info")
        return title if self.given is None else f"{title} · {self.given.name}"

    def figure_data(self) -> FigureData:
        if self.given is None:
            raise ValueError("the view shows no data yet")
        return figure_data(self.given)

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 - Qt API
        return QtCore.QSize(480, 520)


def model_info_data(session: Session, choice: ViewChoice) -> ModelInfo | None:
    """The open model's description (kept while the model stays open)."""
    bundle = session.bundle
    return None if bundle is None else session.frames.derive("model_info", scope="model", build=lambda: model_info(bundle))


def tour_measures(view: QtModelInfoView, ask: TourAsk) -> dict[str, Any]:
    """The model's parameters."""
    return {"info_parameters": view.info().total}


def region_table(view: QtModelInfoView, ask: TourAsk) -> Region:
    """The table of the model's parts."""
    return widget_region(view.table)


SPEC = ViewSpec("model-info", QtModelInfoView, QT_TRANSLATE_NOOP("views", "Model info"), "bottom", (), data=model_info_data, empty="no model open",
                depends_on=(), measures=tour_measures, measure_names=("info_parameters",), regions={"model-table": region_table})
