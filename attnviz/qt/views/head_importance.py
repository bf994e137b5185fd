"""Head importance: for the sentence on screen, every attention head of every kind ablated alone,
and how much log P of the tokens decoded so far (or of the typed target) changes.

Top: a heatmap with one row per kind and layer and one column per head; the colour is
Δ log P (nats; blue: the head helped, red: it hurt). Below: the same heads as a list sortable
by any column. Click a cell or a row to select that head in every linked view. The ablation
(zero, mean or uniform) is the view's own choice.

The view renders :class:`attnviz.core.analysis.head_importance.HeadImportance`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.head_importance import HeadImportance, figure_data, head_importance_for
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.interventions import ABLATION_KINDS
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import ablation_name, head_text, kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, format_score

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 300  # px of canvas before the dock scrolls
KIND_TEXT = {  # shown as translate("head_importance", text)
    "zero": "Z_i = 0",
    "mean": QT_TRANSLATE_NOOP("head_importance", "Z_i = its mean over positions"),
    "uniform": QT_TRANSLATE_NOOP("head_importance", "uniform attention"),
}


class SortableItem(QtWidgets.QTableWidgetItem):
    """A table cell that sorts by the number it holds (``Qt.UserRole``), not by its text."""

    def __lt__(self, other: QtWidgets.QTableWidgetItem) -> bool:
        mine, theirs = self.data(QtCore.Qt.ItemDataRole.UserRole), other.data(QtCore.Qt.ItemDataRole.UserRole)
        if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)):
            return mine < theirs
        return self.text() < other.text()


class QtHeadImportanceView(FigureViewBase):
    """``set_data(HeadImportance | None)``; ``chose({"kind", "layer", "head", "mode"})`` when the
    user clicks a head; ``optionsChanged`` when the ablation changes (computed again)."""

    given: HeadImportance | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._rows: list[tuple[str, int]] = []  # (kind, layer) of each heatmap row
        self.ablation = self._add_control(translate("head_importance", "Ablation:"), QtWidgets.QComboBox(objectName="ablationKind"))
        for kind in ABLATION_KINDS:
            self.ablation.addItem(ablation_name(kind), kind)
            self.ablation.setItemData(self.ablation.count() - 1, translate("head_importance", KIND_TEXT[kind]), QtCore.Qt.ItemDataRole.ToolTipRole)
        self.ablation.setToolTip(translate("head_importance", "How each head is ablated: its output Z_i set to 0, to its mean over the positions, "
                                                              "or its attention made uniform"))
        self.ablation.currentIndexChanged.connect(self._on_ablation_changed)
        self.controls.addStretch(1)
        self.heatmap = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, value_format=format_score, colorbar_label="Δ log P")
        self.heatmap.set_axis_titles(translate("head_importance", "kind and layer"), translate("head_importance", "head"))
        self.heatmap.sigHovered.connect(self._on_hovered)
        self.heatmap.sigCellClicked.connect(self._on_cell_clicked)
        self.canvas.ci.addItem(self.heatmap, row=1, col=0)
        self.table = self._build_table()
        self.layout().insertWidget(2, self.table)
        self._refresh()

    def _build_table(self) -> QtWidgets.QTableWidget:
        table = QtWidgets.QTableWidget(0, 4, objectName="headImportanceTable")
        table.setHorizontalHeaderLabels([translate("head_importance", "kind"), translate("head_importance", "layer"),
                                         translate("head_importance", "head"), "Δ log P"])
        table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSortingEnabled(True)
        table.verticalHeader().hide()
        table.horizontalHeader().setStretchLastSection(True)
        table.setMinimumHeight(90)
        table.setMaximumHeight(180)
        table.cellClicked.connect(self._on_row_clicked)
        return table

    # protocol ------------------------------------------------------------------------------------
    def render(self, report: HeadImportance | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view shows every head; the selected one is outlined in the grid."""

    def report(self) -> HeadImportance | None:
        return self.given

    def kind(self) -> str:
        return self.ablation.currentData() or "zero"

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        report = self.given
        self.heatmap.setVisible(report is not None)
        if report is None:
            self.title.set_title(translate("head_importance", "Head importance"),
                                 translate("head_importance", "each head ablated alone: the change in log P of the decoded tokens (needs a decoded step)"))
            self.table.setRowCount(0)
            return
        what = (translate("head_importance", "the typed target") if report.target_given
                else translate("head_importance", "the {n} tokens decoded so far").format(n=len(report.target_ids)))
        self.title.set_title(
            translate("head_importance", "Head importance · Δ log P({what}) when one head is ablated ({ablation})").format(
                what=what, ablation=translate("head_importance", KIND_TEXT[report.kind])),
            translate("head_importance", "log P = {log_p:.2f} nats with every head · blue: the head helped, red: the model does better without it · "
                                         "click a head to select it").format(log_p=report.log_prob),
        )
        self._rows = [(k, layer) for k, d in report.delta.items() for layer in range(d.shape[0])]
        matrix = np.concatenate([report.delta[k] for k in report.delta])
        m = max(float(np.abs(matrix).max()), 1e-6)
        rows = [f"{kind_name(k)} {layer + 1}" for k, layer in self._rows]
        self.heatmap.set_matrix(matrix, rows, [str(h + 1) for h in range(matrix.shape[1])], levels=(-m, m))
        self._fill_table(report)

    def _fill_table(self, report: HeadImportance) -> None:
        table = self.table
        table.setSortingEnabled(False)
        ranked = report.ranked()
        table.setRowCount(len(ranked))
        for r, (k, layer, h, d) in enumerate(ranked):
            for c, (text, value) in enumerate(((kind_name(k), k), (str(layer + 1), layer + 1), (str(h + 1), h + 1), (f"{d:+.3f}", d))):
                item = SortableItem(text)
                item.setData(QtCore.Qt.ItemDataRole.UserRole, value)
                table.setItem(r, c, item)
        table.setSortingEnabled(True)

    def _on_ablation_changed(self, index: int) -> None:
        self.optionsChanged.emit()  # the data is computed with the new ablation

    def _on_theme_changed(self) -> None:
        self.heatmap.apply_theme(self.theme)
        self._refresh()

    # the user's choices ----------------------------------------------------------------------------
    def _choose(self, kind: str, layer: int, head: int) -> None:
        self.chose.emit({"kind": kind, "layer": layer, "head": head, "mode": "head"})

    def _on_cell_clicked(self, row: int, col: int) -> None:
        if 0 <= row < len(self._rows):
            self._choose(self._rows[row][0], self._rows[row][1], col)

    def _on_row_clicked(self, row: int, col: int) -> None:
        cells = [self.table.item(row, c) for c in range(3)]
        if all(cells):
            kind, layer, head = (c.data(QtCore.Qt.ItemDataRole.UserRole) for c in cells)
            self._choose(kind, layer - 1, head - 1)

    def _on_hovered(self, info: HoverInfo | None) -> None:
        report = self.given
        if info is None or report is None or not 0 <= info.row < len(self._rows):
            self.readout.setText(" ")
            return
        kind, layer = self._rows[info.row]
        d = float(report.delta[kind][layer, info.col])
        pieces = " ".join(display_piece(p) for p in report.target_pieces)
        self.readout.setText(f"{head_text(kind, layer, info.col)}: log P {report.log_prob:.3f} → {report.log_prob + d:.3f} ({d:+.3f}) · {pieces}")

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("head_importance", "Head importance")

    def figure_data(self) -> FigureData:
        report = self.given
        if report is None:
            raise ValueError("the view shows no data yet")
        return figure_data(report)

    def transient_items(self):
        return [self.heatmap.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def head_importance_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | None:
    """Every head ablated alone on the frame's tokens: one batched model pass, run in a worker."""
    bundle, frozen = session.bundle, session.frames.frozen()
    if bundle is None or frozen is None:
        return None
    index = options.get("ablationKind", 0)
    kind = ABLATION_KINDS[index] if isinstance(index, int) and 0 <= index < len(ABLATION_KINDS) else "zero"
    return Analysis(head_importance_for, (frozen, bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, kind))


SPEC = ViewSpec("importance", QtHeadImportanceView, QT_TRANSLATE_NOOP("views", "Head importance"), "bottom", (), data=head_importance_data, reads_options=True, needs=("decoder",),
                empty="nothing for head importance: decode a step first (a model with no attention layers has no heads)")
