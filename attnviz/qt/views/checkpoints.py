"""Compare checkpoints: the open model (A) against another bundle folder of the same architecture
(B): two bundles, or two checkpoints of one training run, on the sentence on screen.

Above: both greedy translations, side by side. Left: how far each head's attention moved from A
to B (½Σ|ΔA| averaged over its query rows; one row per kind and layer, one column per head).
Right: where the selected head's attention moved, ΔA = A(B) − A(A), on a diverging scale. Both
models are teacher-forced on A's translation, so their rows are the same tokens. Click a head to
select it in every linked view. The other folder is the view's own option (``checkpointPathEdit``,
typed or chosen); a folder that cannot be compared is said in one line. The view renders
:class:`attnviz.core.analysis.checkpoints.CheckpointComparison`, computed off the UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.checkpoints import CheckpointComparison, compare_with_folder, figure_data
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import KINDS
from attnviz.core.training.checkpoint import folder_stamp
from attnviz.errors import AttnvizError
from attnviz.paths import models_dir
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import head_text, kind_name, kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.selection import fit_head
from attnviz.qt.session import one_line
from attnviz.qt.views.base import AXIS_TITLES, FigureViewBase
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, format_change
from attnviz.qt.widgets.plain_text import plain_label, tooltip_text

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 300  # px of canvas before the dock scrolls
PATH_OPTION = "checkpointPathEdit"  # the option holding model B's folder


@dataclass(frozen=True)
class ComparisonProblem:
    """Why model B's folder could not be compared: what the view shows instead (one line)."""

    path: str
    message: str


def compare_or_problem(bundle: Bundle, path: str, source: str, stamp: tuple = ()) -> CheckpointComparison | ComparisonProblem:
    """The comparison of ``bundle`` with the folder ``path`` on ``source``, or why there is none.
    ``stamp`` (the folder's ``folder_stamp`` when asked) is not read: it makes a folder saved again
    since (a training run's next checkpoint) another piece of work than the one kept."""
    try:
        return compare_with_folder(bundle, path, source)
    except AttnvizError as exc:
        return ComparisonProblem(path, one_line(str(exc)))


def format_moved(v: float) -> str:
    """½Σ|ΔA| in a cell: three decimals, ``0`` where under 0.0005."""
    return "0" if abs(v) < 0.0005 else f"{v:.3f}"


class QtCheckpointsView(FigureViewBase):
    """``set_data(CheckpointComparison | ComparisonProblem | None)``; ``apply(choice)`` takes the
    kind, layer and head whose ΔA is drawn; ``chose({"kind", "layer", "head", "mode"})`` when the
    user clicks a head; ``optionsChanged`` when model B's folder changes (computed again)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._result: CheckpointComparison | None = None
        self._problem: ComparisonProblem | None = None
        self._head = ("cross", 0, 0)
        self._build_controls()
        self._build_labels()
        self.summary_map = HeatmapPlot(self.theme, colormap=self.colormap(), value_format=format_moved, colorbar_label="½Σ|ΔA|")
        self.summary_map.set_axis_titles(translate("checkpoints", "kind and layer"), translate("checkpoints", "head"))
        self.summary_map.sigHovered.connect(self._on_summary_hovered)
        self.summary_map.sigCellClicked.connect(self._on_cell_clicked)
        self.selected_marker = QtWidgets.QGraphicsRectItem()  # the head whose ΔA is drawn
        self.selected_marker.setZValue(12)
        self.summary_map.addItem(self.selected_marker)
        self.delta_map = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, value_format=format_change, colorbar_label="ΔA")
        self.delta_map.sigHovered.connect(self._on_delta_hovered)
        self.canvas.ci.addItem(self.summary_map, row=1, col=0)
        self.canvas.ci.addItem(self.delta_map, row=1, col=1)
        self.canvas.ci.layout.setColumnStretchFactor(0, 2)
        self.canvas.ci.layout.setColumnStretchFactor(1, 3)
        self._on_theme_changed()

    def _build_controls(self) -> None:
        self.path_edit = QtWidgets.QLineEdit(objectName=PATH_OPTION)
        self.path_edit.setPlaceholderText(translate("checkpoints", "another bundle folder of the same architecture"))
        self.path_edit.setToolTip(translate("checkpoints", "Model B: a bundle folder (or a training run's checkpoint folder) of the same architecture "
                                            "and vocabulary as the open model. Press Enter."))
        self.path_edit.setMinimumWidth(160)
        self.path_edit.editingFinished.connect(self._on_path_edited)
        self.choose_button = QtWidgets.QToolButton(objectName="checkpointChooseButton", text=translate("checkpoints", "Choose…"))
        self.choose_button.setToolTip(translate("checkpoints", "Choose model B's folder"))
        self.choose_button.clicked.connect(self.choose_folder)
        self._add_control(translate("checkpoints", "Compare with:"), self.path_edit)
        self.controls.addWidget(self.choose_button)
        self.controls.setStretchFactor(self.path_edit, 1)

    def _build_labels(self) -> None:
        self.a_label = plain_label("", "checkpointTranslationA")  # model output: plain text
        self.b_label = plain_label("", "checkpointTranslationB")
        self.problem_label = plain_label("", "checkpointProblem")  # a message built from a folder's files
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(8, 0, 8, 0)
        for label in (self.a_label, self.b_label):
            label.setWordWrap(True)
            label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
            row.addWidget(label, 1)
        self.problem_label.setWordWrap(True)
        self.problem_label.setContentsMargins(8, 0, 8, 0)
        self.problem_label.hide()
        self.layout().insertLayout(1, row)
        self.layout().insertWidget(2, self.problem_label)

    # protocol ------------------------------------------------------------------------------------
    def set_data(self, data: CheckpointComparison | ComparisonProblem | None) -> None:
        self._result = data if isinstance(data, CheckpointComparison) else None
        self._problem = data if isinstance(data, ComparisonProblem) else None
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        self._head = choice.head_from(self._head)
        self._refresh()

    def has_data(self) -> bool:
        return self._result is not None

    def result(self) -> CheckpointComparison | None:
        return self._result

    def problem(self) -> str:
        """The one line saying why model B's folder could not be compared ("" when none)."""
        return self._problem.message if self._problem is not None else ""

    def shown_head(self) -> tuple[str, int, int]:
        """The head whose ΔA is drawn (kind, layer, head; 0-based), within the models' heads."""
        return self._head if self._result is None else fit_head(self._head, self._result.moved)

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        r = self._result
        for plot in (self.summary_map, self.delta_map):
            plot.setVisible(r is not None)
        self.problem_label.setVisible(self._problem is not None)
        self.problem_label.setText(self.problem())
        if r is None:
            self.title.set_title(translate("checkpoints", "Compare checkpoints"),
                                 translate("checkpoints", "choose another bundle folder of the same architecture: each head's "
                                           "attention on this sentence, the open model's against the other's"))
            self._set_translations("", "")
            return
        kind, layer, head = self.shown_head()
        self.title.set_title(translate("checkpoints", "Compare checkpoints · B ({b}) − A ({a}) on A's translation").format(b=r.name_b, a=r.name_a),
                             translate("checkpoints", "log P(A's translation): {a:.2f} under A, {b:.2f} under B · per head: ½Σ|ΔA| "
                                       "averaged over the rows · moved most: {head} · click a head for its ΔA").format(
                                 a=r.log_prob_a, b=r.log_prob_b, head=head_text(*r.moved_most()[:3])))
        same = translate("checkpoints", "  (the same)") if r.same_translation else ""
        self._set_translations(f"A · {r.name_a}: {r.translation_a}{same}", f"B · {r.name_b}: {r.translation_b}")
        self.b_label.setToolTip(tooltip_text(r.path_b))
        self._draw_summary(r)
        self._draw_delta(r, kind, layer, head)

    def _set_translations(self, a: str, b: str) -> None:
        for label, text in ((self.a_label, a), (self.b_label, b)):
            label.setText(text)
            label.setVisible(bool(text))

    def _draw_summary(self, r: CheckpointComparison) -> None:
        s = r.summary()
        rows = [f"{kind_name(k)} {layer + 1}" for k, layer in r.rows()]
        self.summary_map.set_matrix(s, rows, [str(h + 1) for h in range(s.shape[1])], levels=(0.0, max(float(s.max()), 1e-6)))
        kind, layer, head = self.shown_head()
        self.selected_marker.setRect(QtCore.QRectF(head - 0.5, r.rows().index((kind, layer)) - 0.5, 1.0, 1.0))

    def _draw_delta(self, r: CheckpointComparison, kind: str, layer: int, head: int) -> None:
        d = r.delta[kind][layer, head]
        rows, cols = r.labels(kind)
        m = max(float(np.abs(d).max()), 1e-6)
        self.delta_map.set_matrix(d, rows, cols, levels=(-m, m))
        self.delta_map.set_axis_titles(*(translate("base", t) for t in AXIS_TITLES[kind]))
        self.delta_map.set_panel_title(translate("checkpoints", "ΔA = B − A of {head} ({kind})").format(head=head_text(kind, layer, head), kind=kind_title(kind)),
                                       color=self.theme.foreground)

    def _on_theme_changed(self) -> None:
        for plot in (self.summary_map, self.delta_map):
            plot.apply_theme(self.theme)
        pen = QtGui.QPen(self.theme.qcolor("highlight"), 2)
        pen.setCosmetic(True)
        self.selected_marker.setPen(pen)
        self.problem_label.setStyleSheet(f"color: {self.theme.ablated};")
        if self._colormap is None:
            self._on_colormap_changed()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        self.summary_map.set_colormap(self.colormap())

    # the user's choices ----------------------------------------------------------------------------
    def choose_folder(self) -> None:
        """Ask for model B's folder; a chosen one is compared at once."""
        current = self.path_edit.text().strip()
        start = str(Path(current).parent if current else models_dir())
        path = QtWidgets.QFileDialog.getExistingDirectory(self, translate("checkpoints", "Choose a bundle of the same architecture to compare with"), start)
        if path:
            self.path_edit.setText(path)
            self._on_path_edited()

    def _on_path_edited(self) -> None:
        if not self.path_edit.text().strip():  # nothing to compare with: no data will come
            self.set_data(None)
        self.optionsChanged.emit()

    def _on_cell_clicked(self, row: int, col: int) -> None:
        r = self._result
        if r is None or not 0 <= row < len(r.rows()):
            return
        kind, layer = r.rows()[row]
        self._head = (kind, layer, col)  # the view shows it at once, linked or not
        self._refresh()
        self.chose.emit({"kind": kind, "layer": layer, "head": col, "mode": "head"})

    def _on_summary_hovered(self, info: HoverInfo | None) -> None:
        r = self._result
        if info is None or r is None or not 0 <= info.row < len(r.rows()):
            self.readout.setText(" ")
            return
        kind, layer = r.rows()[info.row]
        n = r.delta[kind].shape[2]
        self.readout.setText(translate("checkpoints", "{head}: ½Σ|ΔA| = {value:.4f} averaged over {n} rows").format(
            head=head_text(kind, layer, info.col), value=info.value, n=n))

    def _on_delta_hovered(self, info: HoverInfo | None) -> None:
        r = self._result
        if info is None or r is None:
            self.readout.setText(" ")
            return
        kind, layer, head = self.shown_head()
        a = float(r.attention_a[kind][layer, head, info.row, info.col])
        b = float(r.attention_b[kind][layer, head, info.row, info.col])
        self.readout.setText(f"{display_piece(info.row_label)} → {display_piece(info.col_label)}: A {a:.3f}, B {b:.3f}, ΔA = {b - a:+.4f}")

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        """Names the head whose ΔA is drawn."""
        if self._result is None:
            return translate("checkpoints", "Compare checkpoints")
        return translate("checkpoints", "Compare checkpoints · ΔA of {head}").format(head=head_text(*self.shown_head()))

    def figure_data(self) -> FigureData:
        if self._result is None:
            raise ValueError("the view shows no data yet")
        return figure_data(self._result)

    def transient_items(self):
        return [self.summary_map.hover_marker, self.delta_map.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def checkpoints_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | ComparisonProblem | None:
    """The open model against the folder in the view's option on the sentence on screen: two
    models' runs in a worker; ``None`` without a folder or a sentence."""
    path = str(options.get(PATH_OPTION) or "").strip()
    bundle, cur = session.bundle, session.current
    if not path or bundle is None or cur is None or not cur.source.text.strip():
        return None
    if "\x00" in path:  # no folder's name holds one (and the file system calls refuse it with a ValueError)
        return ComparisonProblem(path, translate("checkpoints", "a folder name cannot hold a NUL character"))
    folder = Path(path).expanduser()
    return Analysis(compare_or_problem, (bundle, str(folder), cur.source.text, folder_stamp(folder)))


SPEC = ViewSpec("checkpoints", QtCheckpointsView, QT_TRANSLATE_NOOP("views", "Compare checkpoints"), "bottom", ("kind", "layer", "head"), data=checkpoints_data,
                reads_options=True, kinds=KINDS, needs=("decoder",),
                empty="nothing to compare: choose another bundle of the same architecture in the view (attnviz export --other-model DIR)")
