"""Compare checkpoints: the open model (A) against another bundle folder (B): two bundles, or two
checkpoints of one training run, on the sentence on screen.

Above: both greedy translations, side by side. Where the two models read the sentence on the same
token grid (one architecture and vocabulary: both teacher-forced on A's translation; or other
models that happen to split it alike), left: how far each head's attention moved from A to B
(½Σ|ΔA| averaged over its query rows; one row per kind and layer, one column per head); right:
where the selected head's attention moved, ΔA = A(B) − A(A), on a diverging scale. Click a head to
select it in every linked view. Where the grids differ (other tokenizers, other layers or heads),
a line says so and each model's attention for the chosen kind, layer and head is drawn on its own
tokens, A left and B right, with no ΔA. The other folder is the view's own option
(``checkpointPathEdit``, typed or chosen); a folder that cannot be compared is said in one line.
The view renders :class:`attnviz.core.analysis.checkpoints.CheckpointComparison`, computed off the UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.checkpoints import CheckpointComparison, compare_with_folder, figure_data
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.bundle import folder_stamp
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import KINDS
from attnviz.errors import AttnvizError, one_line
from attnviz.paths import models_dir
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import head_text, kind_name, kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.selection import fit_head
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
#: Why there is no ΔA (the core's ``NO_DELTA`` keys) -> the line the view shows.
NO_DELTA_TEXT = {
    "tokens": QT_TRANSLATE_NOOP("checkpoints", "the models split the sentence into other tokens: "
                                "each model's attention is shown on its own tokens, no ΔA"),
    "heads": QT_TRANSLATE_NOOP("checkpoints", "the models have other layers or heads: "
                               "each model's attention is shown on its own tokens, no ΔA"),
}


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
    kind, layer and head whose ΔA (or, without one, whose attention in each model) is drawn;
    ``chose({"kind", "layer", "head", "mode"})`` when the user clicks a head; ``optionsChanged``
    when model B's folder changes (computed again)."""

    given: CheckpointComparison | ComparisonProblem | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._head = ("cross", 0, 0)
        self._sides_shown = False  # the canvas holds A's and B's attention (no ΔA), not the summary and ΔA
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
        self.attention_a_map = HeatmapPlot(self.theme, colormap=self.colormap(), colorbar=False)  # A's own attention, without ΔA
        self.attention_b_map = HeatmapPlot(self.theme, colormap=self.colormap(), colorbar_label=translate("checkpoints", "weight"))
        for tag, plot in (("A", self.attention_a_map), ("B", self.attention_b_map)):
            plot.setObjectName(f"checkpointAttention{tag}")
            plot.sigHovered.connect(partial(self._on_side_hovered, tag))
            plot.hide()
        self._place_plots((self.summary_map, self.delta_map), (2, 3))
        self._on_theme_changed()

    def _build_controls(self) -> None:
        self.path_edit = QtWidgets.QLineEdit(objectName=PATH_OPTION)
        self.path_edit.setPlaceholderText(translate("checkpoints", "another bundle folder"))
        self.path_edit.setToolTip(translate("checkpoints", "Model B: a bundle folder (or a training run's checkpoint folder). "
                                            "Of the same architecture and vocabulary as the open model: each head's ΔA; "
                                            "otherwise each model's attention on its own tokens, side by side. Press Enter."))
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
        self.notice_label = plain_label("", "checkpointNotice")  # why there is no ΔA, or that the models differ
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(8, 0, 8, 0)
        for label in (self.a_label, self.b_label):
            label.setWordWrap(True)
            label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
            row.addWidget(label, 1)
        for label in (self.problem_label, self.notice_label):
            label.setWordWrap(True)
            label.setContentsMargins(8, 0, 8, 0)
            label.hide()
        self.layout().insertLayout(1, row)
        self.layout().insertWidget(2, self.problem_label)
        self.layout().insertWidget(3, self.notice_label)

    # protocol ------------------------------------------------------------------------------------
    def render(self, data: CheckpointComparison | ComparisonProblem | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        self._head = choice.head_from(self._head)
        self._refresh()

    def _drawable(self, data: CheckpointComparison | ComparisonProblem) -> bool:
        return isinstance(data, CheckpointComparison)

    def result(self) -> CheckpointComparison | None:
        return self.given if isinstance(self.given, CheckpointComparison) else None

    def problem(self) -> str:
        """The one line saying why model B's folder could not be compared ("" when none)."""
        return self.given.message if isinstance(self.given, ComparisonProblem) else ""

    def shown_head(self) -> tuple[str, int, int]:
        """The head whose ΔA is drawn (kind, layer, head; 0-based), within the models' heads; without
        ΔA, A's head drawn (:meth:`shown_heads`)."""
        r = self.result()
        if r is None:
            return self._head
        return fit_head(self._head, r.moved) if r.delta_available else self.shown_heads()[0]

    def shown_heads(self) -> tuple[tuple[str, int, int], tuple[str, int, int]]:
        """(A's, B's) head drawn without ΔA: the chosen one of a kind both models have, within each model's layers and heads."""
        r = self.result()
        if r is None:
            return self._head, self._head
        kind = fit_head(self._head, {k: r.attention_a.weights[k] for k in r.kinds})[0]
        a, b = (fit_head((kind, *self._head[1:]), {kind: side.weights[kind]}) for side in (r.attention_a, r.attention_b))
        return a, b

    def sides_shown(self) -> bool:
        """Each model's attention is drawn side by side (there is no ΔA)."""
        return self._sides_shown

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        r = self.result()
        self._show_sides(r is not None and not r.delta_available)
        for plot in self._plots():
            plot.setVisible(r is not None)
        self.problem_label.setVisible(isinstance(self.given, ComparisonProblem))
        self.problem_label.setText(self.problem())
        self._set_notice(r)
        if r is None:
            self.title.set_title(translate("checkpoints", "Compare checkpoints"),
                                 translate("checkpoints", "choose another bundle folder: each head's attention on this sentence, "
                                           "the open model's against the other's"))
            self._set_translations("", "")
            return
        same = translate("checkpoints", "  (the same)") if r.same_translation else ""
        self._set_translations(f"A · {r.name_a}: {r.translation_a}{same}", f"B · {r.name_b}: {r.translation_b}")
        self.b_label.setToolTip(tooltip_text(r.path_b))
        if r.delta_available:
            self._draw_changes(r)
        else:
            self._draw_sides(r)

    def _plots(self) -> tuple[HeatmapPlot, HeatmapPlot]:
        """The two plots the canvas holds now."""
        return (self.attention_a_map, self.attention_b_map) if self._sides_shown else (self.summary_map, self.delta_map)

    def _show_sides(self, shown: bool) -> None:
        """A's and B's attention side by side (``shown``), or the summary and ΔA, in the canvas's second row."""
        if shown == self._sides_shown:
            return
        for plot in self._plots():
            self.canvas.ci.removeItem(plot)
            plot.hide()
        self._sides_shown = shown
        self._place_plots(self._plots(), (1, 1) if shown else (2, 3))

    def _place_plots(self, plots: tuple[HeatmapPlot, HeatmapPlot], stretch: tuple[int, int]) -> None:
        for col, plot in enumerate(plots):
            self.canvas.ci.addItem(plot, row=1, col=col)
            self.canvas.ci.layout.setColumnStretchFactor(col, stretch[col])

    def _set_notice(self, r: CheckpointComparison | None) -> None:
        """Why there is no ΔA, or that other models split the sentence alike; what differs in the tooltip."""
        text = ""
        if r is not None and r.why_no_delta:
            text = translate("checkpoints", NO_DELTA_TEXT[r.why_no_delta])
        elif r is not None and r.difference:
            text = translate("checkpoints", "the models differ but split this sentence into the same tokens: "
                                            "each is forced on its own translation")
        self.notice_label.setText(text)
        self.notice_label.setToolTip(tooltip_text(r.difference) if text else "")
        self.notice_label.setVisible(bool(text))

    def _draw_changes(self, r: CheckpointComparison) -> None:
        """The title, the summary of every head and the chosen head's ΔA."""
        self.title.set_title(translate("checkpoints", "Compare checkpoints · B ({b}) − A ({a}) on A's translation").format(b=r.name_b, a=r.name_a),
                             translate("checkpoints", "log P(A's translation): {a:.2f} under A, {b:.2f} under B · per head: ½Σ|ΔA| "
                                       "averaged over the rows · moved most: {head} · click a head for its ΔA").format(
                                 a=r.attention_a.log_prob, b=r.attention_b.log_prob, head=head_text(*r.moved_most()[:3])))
        self._draw_summary(r)
        self._draw_delta(r, *self.shown_head())

    def _draw_sides(self, r: CheckpointComparison) -> None:
        """The title and each model's attention of the chosen head on its own tokens, A left, B right."""
        self.title.set_title(translate("checkpoints", "Compare checkpoints · A ({a}) beside B ({b}), each on its own translation").format(
                                 a=r.name_a, b=r.name_b),
                             translate("checkpoints", "log P(its own translation): {a:.2f} under A, {b:.2f} under B · each model's "
                                       "attention on its own tokens, no ΔA").format(a=r.attention_a.log_prob, b=r.attention_b.log_prob))
        for tag, plot, side, (kind, layer, head) in zip("AB", self._plots(), (r.attention_a, r.attention_b), self.shown_heads()):
            plot.set_matrix(side.weights[kind][layer, head], *side.labels(kind), levels=(0.0, 1.0))
            plot.set_axis_titles(*(translate("base", t) for t in AXIS_TITLES[kind]))
            plot.set_panel_title(translate("checkpoints", "{model} · {head} ({kind})").format(model=tag, head=head_text(kind, layer, head),
                                                                                             kind=kind_title(kind)), color=self.theme.foreground)

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
        rows, cols = r.attention_a.labels(kind)
        m = max(float(np.abs(d).max()), 1e-6)
        self.delta_map.set_matrix(d, rows, cols, levels=(-m, m))
        self.delta_map.set_axis_titles(*(translate("base", t) for t in AXIS_TITLES[kind]))
        self.delta_map.set_panel_title(translate("checkpoints", "ΔA = B − A of {head} ({kind})").format(head=head_text(kind, layer, head), kind=kind_title(kind)),
                                       color=self.theme.foreground)

    def _on_theme_changed(self) -> None:
        for plot in (self.summary_map, self.delta_map, self.attention_a_map, self.attention_b_map):
            plot.apply_theme(self.theme)
        pen = QtGui.QPen(self.theme.qcolor("highlight"), 2)
        pen.setCosmetic(True)
        self.selected_marker.setPen(pen)
        self.problem_label.setStyleSheet(f"color: {self.theme.ablated};")
        self.notice_label.setStyleSheet(f"color: {self.theme.muted};")
        if self._colormap is None:
            self._on_colormap_changed()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        for plot in (self.summary_map, self.attention_a_map, self.attention_b_map):
            plot.set_colormap(self.colormap())

    # the user's choices ----------------------------------------------------------------------------
    def choose_folder(self) -> None:
        """Ask for model B's folder; a chosen one is compared at once."""
        current = self.path_edit.text().strip()
        start = str(Path(current).parent if current else models_dir())
        path = QtWidgets.QFileDialog.getExistingDirectory(self, translate("checkpoints", "Choose a bundle to compare with"), start)
        if path:
            self.path_edit.setText(path)
            self._on_path_edited()

    def _on_path_edited(self) -> None:
        if not self.path_edit.text().strip():  # nothing to compare with: no data will come
            self.set_data(None)
        self.optionsChanged.emit()

    def _on_cell_clicked(self, row: int, col: int) -> None:
        r = self.result()
        if r is None or not 0 <= row < len(r.rows()):
            return
        kind, layer = r.rows()[row]
        self._head = (kind, layer, col)  # the view shows it at once, linked or not
        self._refresh()
        self.chose.emit({"kind": kind, "layer": layer, "head": col, "mode": "head"})

    def _on_summary_hovered(self, info: HoverInfo | None) -> None:
        r = self.result()
        if info is None or r is None or not 0 <= info.row < len(r.rows()):
            self.readout.setText(" ")
            return
        kind, layer = r.rows()[info.row]
        n = r.delta[kind].shape[2]
        self.readout.setText(translate("checkpoints", "{head}: ½Σ|ΔA| = {value:.4f} averaged over {n} rows").format(
            head=head_text(kind, layer, info.col), value=info.value, n=n))

    def _on_delta_hovered(self, info: HoverInfo | None) -> None:
        r = self.result()
        if info is None or r is None:
            self.readout.setText(" ")
            return
        kind, layer, head = self.shown_head()
        a = float(r.attention_a.weights[kind][layer, head, info.row, info.col])
        b = float(r.attention_b.weights[kind][layer, head, info.row, info.col])
        self.readout.setText(f"{display_piece(info.row_label)} → {display_piece(info.col_label)}: A {a:.3f}, B {b:.3f}, ΔA = {b - a:+.4f}")

    def _on_side_hovered(self, tag: str, info: HoverInfo | None) -> None:
        if info is None or self.result() is None:
            self.readout.setText(" ")
            return
        self.readout.setText(f"{tag} · {display_piece(info.row_label)} → {display_piece(info.col_label)}: {info.value:.3f}")

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        """Names the head whose ΔA is drawn."""
        r = self.result()
        if r is None:
            return translate("checkpoints", "Compare checkpoints")
        if not r.delta_available:
            (kind, *a), (_, *b) = self.shown_heads()
            return translate("checkpoints", "Compare checkpoints · A's {a} beside B's {b}, no ΔA").format(
                a=head_text(kind, *a), b=head_text(kind, *b))
        return translate("checkpoints", "Compare checkpoints · ΔA of {head}").format(head=head_text(*self.shown_head()))

    def figure_data(self) -> FigureData:
        if self.result() is None:
            raise ValueError("the view shows no data yet")
        return figure_data(self.result())

    def transient_items(self):
        return [plot.hover_marker for plot in (self.summary_map, self.delta_map, self.attention_a_map, self.attention_b_map)]


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
                empty="nothing to compare: choose another bundle in the view (attnviz export --other-model DIR)")
