"""Teacher-vs-free view: teacher forcing beside the inference loop on the same sentence.

A table of what each run feeds the decoder at each position (SOS + y vs SOS + ŷ) and what it
predicts, with the first position where the loop departs from the reference; below it the
cross-attention of the selected layer and head in both runs, and both runs' attention rows at
the first position they are fed different tokens.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.teacher_free import TeacherVsFree, TeacherVsFreeFrame, teacher_vs_free
from attnviz.core.data.pieces import display_piece, display_pieces
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import word_start_legend
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import FigureViewBase, LayerHeadChoice, LayerHeadViewMixin, make_combo
from attnviz.qt.views.series_plot import SeriesPlot
from attnviz.qt.views.spec import ATTENTION_SELECTORS, TourAsk, ViewSpec
from attnviz.qt.widgets.colormaps import Theme, ui_font
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, quiet_axes
from attnviz.qt.widgets.plots import pen
from attnviz.qt.widgets.regions import Region, items_region

if TYPE_CHECKING:
    from attnviz.qt.session import Session

# Names (keys, the data file's) marked for translation: shown as translate("teacher_vs_free", name).
ROW_SERIES: tuple[str, ...] = (QT_TRANSLATE_NOOP("teacher_vs_free", "teacher, departure"), QT_TRANSLATE_NOOP("teacher_vs_free", "free, departure"),
                               QT_TRANSLATE_NOOP("teacher_vs_free", "teacher, next"), QT_TRANSLATE_NOOP("teacher_vs_free", "free, next"))
ROWS: tuple[str, ...] = (QT_TRANSLATE_NOOP("teacher_vs_free", "reference y + EOS"), QT_TRANSLATE_NOOP("teacher_vs_free", "teacher: fed SOS + y"),
                         QT_TRANSLATE_NOOP("teacher_vs_free", "teacher: predicted"), QT_TRANSLATE_NOOP("teacher_vs_free", "free: fed SOS + ŷ"),
                         QT_TRANSLATE_NOOP("teacher_vs_free", "free: predicted ŷ"))
EMPTY = QT_TRANSLATE_NOOP("teacher_vs_free", "needs a target: type one (teacher-forced mode)")
MIN_CANVAS = (720, 1000)  # px: the smallest size at which the table, both heatmaps and the rows read
TABLE_LABELS, COLUMN = 170, 64  # px: the table's row labels, and one position's column


class PieceTable(pg.PlotItem):
    """Rows of token pieces by position; cells that differ from the reference are filled, one
    column (the departure) is framed. Rebuilt by :meth:`set_table` (only when the sentence changes)."""

    def __init__(self, theme: Theme):
        super().__init__(enableMenu=False)
        self.theme = theme
        self.setMenuEnabled(False)
        self.hideButtons()
        self.getViewBox().setMouseEnabled(x=False, y=False)
        self.getViewBox().invertY(True)
        self.showAxis("top")
        self.hideAxis("bottom")
        quiet_axes(self)
        self.setMinimumHeight(130)
        self._items: list[QtWidgets.QGraphicsItem] = []
        self._cells: tuple[tuple[str, ...], ...] = ()
        self.frame = QtWidgets.QGraphicsRectItem()
        self.frame.setZValue(5)
        self.addItem(self.frame)
        self.cursor = QtWidgets.QGraphicsRectItem()
        self.cursor.setZValue(4)
        self.addItem(self.cursor)
        self.apply_theme(theme)

    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        for name in ("left", "top"):
            ax = self.getAxis(name)
            ax.setPen(pg.mkPen(theme.muted))
            ax.setTextPen(pg.mkPen(theme.foreground))
            ax.setStyle(tickFont=ui_font(8))
        self.frame.setPen(pen(theme.departure, 2.5))
        self.cursor.setPen(pen(theme.selection, 1.5, QtCore.Qt.PenStyle.DashLine))

    def cells(self) -> tuple[tuple[str, ...], ...]:
        """The pieces shown, row by row ("" where a run has no such position)."""
        return self._cells

    def set_table(self, cells: list[list[str]], differs: list[list[bool]], column: int | None) -> None:
        for item in self._items:
            self.removeItem(item)
        self._items = []
        self._cells = tuple(tuple(r) for r in cells)
        n = max((len(r) for r in cells), default=0)
        fill = QtGui.QColor(self.theme.departure)
        fill.setAlpha(50)
        for r, row in enumerate(cells):
            for c, piece in enumerate(row):
                if differs[r][c]:
                    rect = QtWidgets.QGraphicsRectItem(c - 0.5, r - 0.5, 1.0, 1.0)
                    rect.setBrush(fill)
                    rect.setPen(pg.mkPen(None))
                    self.addItem(rect)
                    self._items.append(rect)
                text = pg.TextItem(piece, color=self.theme.foreground, anchor=(0.5, 0.5))
                text.setFont(ui_font(8.5))
                text.setPos(c, r)
                self.addItem(text)
                self._items.append(text)
        self.getAxis("left").setTicks([[(i, translate("teacher_vs_free", name)) for i, name in enumerate(ROWS[: len(cells)])]])
        self.getAxis("top").setTicks([[(i, str(i + 1)) for i in range(n)]])
        self.getViewBox().setRange(xRange=(-0.5, max(n, 1) - 0.5), yRange=(-0.5, len(cells) - 0.5), padding=0.0)
        self.frame.setVisible(column is not None)
        if column is not None:
            self.frame.setRect(QtCore.QRectF(column - 0.5, -0.5, 1.0, len(cells)))

    def set_cursor(self, column: int | None, rows: int) -> None:
        self.cursor.setVisible(column is not None)
        if column is not None:
            self.cursor.setRect(QtCore.QRectF(column - 0.45, -0.45, 0.9, rows - 0.1))


class QtTeacherVsFreeView(LayerHeadViewMixin, FigureViewBase):
    """``set_data(TeacherVsFreeFrame(result, cursor))`` (no result: no target, an empty state); ``select(layer=, head=)``
    (0-based cross-attention layer and head)."""

    given: TeacherVsFreeFrame | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme, title_span=2)
        self._result: TeacherVsFree | None = None  # the result drawn (another one fills the table anew)
        self.layer_combo = self._add_control(translate("teacher_vs_free", "Layer"),
                                             make_combo("teacherFreeLayerCombo", translate("teacher_vs_free", "Decoder layer (cross-attention)")))
        self.head_combo = self._add_control(translate("teacher_vs_free", "Head"), make_combo("teacherFreeHeadCombo", translate("teacher_vs_free", "Head i")))
        self.layer_head = LayerHeadChoice(self.layer_combo, self.head_combo)
        self.controls.addStretch(1)
        self.layer_combo.currentIndexChanged.connect(self._on_controls_changed)
        self.head_combo.currentIndexChanged.connect(self._on_controls_changed)
        self._build_canvas()

    def _build_canvas(self) -> None:
        t = self.theme
        self.table = PieceTable(t)
        self.canvas.addItem(self.table, row=1, col=0, colspan=2)
        self.heat_teacher = HeatmapPlot(t, colormap=self.colormap(), colorbar_label=translate("teacher_vs_free", "weight"))
        self.heat_free = HeatmapPlot(t, colormap=self.colormap(), colorbar_label=translate("teacher_vs_free", "weight"))
        self.rows_plot = SeriesPlot(t, translate("teacher_vs_free", "cross-attention rows"), ROW_SERIES,
                                    x_label=translate("teacher_vs_free", "source key"),
                                    labels=[translate("teacher_vs_free", name) for name in ROW_SERIES])
        for col, item in enumerate((self.heat_teacher, self.heat_free)):
            self.canvas.addItem(item, row=2, col=col)
        self.canvas.addItem(self.rows_plot, row=3, col=0, colspan=2)
        for plot in (self.heat_teacher, self.heat_free):
            plot.sigHovered.connect(self._on_plot_hovered)
        self.canvas.ci.layout.setRowStretchFactor(1, 2)
        self.canvas.ci.layout.setRowStretchFactor(2, 4)
        self.canvas.ci.layout.setRowStretchFactor(3, 2)
        self.canvas.ci.layout.setHorizontalSpacing(14)
        self.canvas.setMinimumSize(*MIN_CANVAS)
        self._scroll_canvas()  # the controls stay in view
        self._fit_canvas(0)
        self._set_title()

    def _fit_canvas(self, positions: int) -> None:
        """A readable minimum size for ``positions`` table columns (a smaller dock scrolls)."""
        width, height = MIN_CANVAS
        self.scroll.fit.set_min_size(max(width, TABLE_LABELS + COLUMN * positions), height)

    # data -------------------------------------------------------------------------------
    def render(self, frame: TeacherVsFreeFrame) -> None:
        """The two runs and the teacher-forced pass's row; a frame without a result empties the view."""
        result = frame.result
        changed = result is not self._result
        self._result = result
        self._fit_choice()
        if changed and result is not None:
            self._fill_table()
            self._fit_canvas(max(len(row) for row in self.table.cells()))
        self._refresh()

    def result(self) -> TeacherVsFree | None:
        return self._result

    def _drawable(self, frame: TeacherVsFreeFrame) -> bool:
        return frame.result is not None

    def _show_choice(self) -> None:
        self._refresh()

    def table_rows(self) -> list[list[str]]:
        """Reference, teacher fed/predicted, free fed/predicted: pieces as shown."""
        r = self._result
        if r is None:
            return []
        seqs = (r.reference_pieces, r.teacher.fed_pieces, r.teacher.predicted_pieces, r.free.fed_pieces, r.free.predicted_pieces)
        return [[display_piece(p) for p in s] for s in seqs]

    def attention_rows(self) -> dict[str, tuple[int, np.ndarray]]:
        """The selected layer's and head's cross-attention rows, by :data:`ROW_SERIES` name, as
        (position, row): at the departure (the same prefix fed in both runs) and at the next
        position (the first one fed differently), where each run reaches it; ``{}`` when the loop
        reproduces the reference."""
        r = self._result
        if r is None or r.departure is None or not r.teacher.cross.shape[0]:  # no departure, or no decoder layers
            return {}
        lh = self.layer_head.index
        out = {}
        for where, p in (("departure", r.departure), ("next", r.departure + 1)):
            for run, name in ((r.teacher, "teacher"), (r.free, "free")):
                if p < run.cross.shape[2]:
                    out[f"{name}, {where}"] = (p, run.cross[lh][p])
        return out

    # internals ------------------------------------------------------------------------------
    def _fit_choice(self) -> None:
        shape = self._result.teacher.cross.shape if self._result is not None else (0, 0)
        self.layer_head.fit(shape[0], shape[1])

    def _on_controls_changed(self) -> None:
        self.layer_head.read()
        self._refresh()
        layer, head = self.layer_head.index
        self.chose.emit({"kind": "cross", "layer": layer, "head": head, "mode": "head"})

    def _fill_table(self) -> None:
        r = self._result
        rows = self.table_rows()
        ref = r.reference_ids
        ids = (ref, r.teacher.fed_ids, r.teacher.predicted_ids, r.free.fed_ids, r.free.predicted_ids)
        predicted = {2, 4}  # rows compared with the reference; fed rows are compared with SOS + y
        fed_ref = r.teacher.fed_ids
        differs = [
            [(i in predicted and (j >= len(ref) or t != ref[j])) or (i == 3 and (j >= len(fed_ref) or t != fed_ref[j]))
             for j, t in enumerate(seq)]
            for i, seq in enumerate(ids)
        ]
        self.table.set_table(rows, differs, r.departure)

    def _refresh(self) -> None:
        self._set_title()
        r = self._result
        has_cross = r is not None and r.teacher.cross.shape[0] > 0
        self.table.setVisible(r is not None)
        for item in (self.heat_teacher, self.heat_free, self.rows_plot):
            item.setVisible(has_cross)
        if not has_cross:
            return
        lh = self.layer_head.index
        src = display_pieces(r.src_pieces)
        fed_t = display_pieces(r.teacher.fed_pieces)
        fed_f = display_pieces(r.free.fed_pieces)
        cur = self.given.cursor
        self.heat_teacher.set_matrix(r.teacher.cross[lh], fed_t, src, cur, levels=(0.0, 1.0))
        self.heat_free.set_matrix(r.free.cross[lh], fed_f, src, cur, levels=(0.0, 1.0))
        self.heat_teacher.set_panel_title(translate("teacher_vs_free", "teacher forcing: fed SOS + y"))
        self.heat_free.set_panel_title(translate("teacher_vs_free", "inference loop: fed SOS + ŷ"))
        self.heat_teacher.set_axis_titles(translate("teacher_vs_free", "decoder input (rows)"), translate("teacher_vs_free", "source keys, C_encoder"))
        self.table.set_cursor(cur, len(ROWS))
        rows = self.attention_rows()
        x = np.arange(len(src))
        for name in ROW_SERIES:
            self.rows_plot.set_series(name, x if name in rows else [], rows[name][1] if name in rows else [])
        self.rows_plot.set_ticks(src)
        d = r.departure
        if d is None:
            self.rows_plot.set_title_text(translate("teacher_vs_free", "rows at (no departure)"))
        else:
            self.rows_plot.set_title_text(translate("teacher_vs_free", "rows at positions {departure} (departure: one row in both runs) and {next}").format(
                departure=d + 1, next=d + 2))

    def summary(self) -> str:
        r = self._result
        d = r.departure
        if d is None:
            return translate("teacher_vs_free", "the inference loop reproduces the reference: both runs are fed the same tokens")
        ended = translate("teacher_vs_free", "(ended)")
        ref = display_piece(r.reference_pieces[d]) if d < len(r.reference_pieces) else ended
        got = display_piece(r.free.predicted_pieces[d]) if d < len(r.free.predicted_pieces) else ended
        text = translate("teacher_vs_free", "free running departs at position {position}: ŷ = “{got}” where y = “{ref}”").format(
            position=d + 1, got=got, ref=ref)
        if d < len(r.teacher.predicted_ids) and d < len(r.free.predicted_ids):
            same = r.teacher.predicted_ids[d] == r.free.predicted_ids[d]
            teacher = display_piece(r.teacher.predicted_pieces[d])
            text += (translate("teacher_vs_free", " (both runs saw the same prefix there: teacher forcing predicts “{piece}” too)") if same
                     else translate("teacher_vs_free", " (teacher forcing's argmax there: “{piece}”; the loop never picks PAD or SOS)")).format(piece=teacher)
        p = r.fed_apart
        if p is not None and p != d:
            text += translate("teacher_vs_free", "; from position {position} on they are fed different tokens").format(position=p + 1)
        return text

    def _set_title(self) -> None:
        r = self._result
        if r is None:
            self.title.set_title(translate("teacher_vs_free", "Teacher forcing vs the inference loop"), translate("teacher_vs_free", EMPTY))
            self.title.set_legend(())
            return
        t = self.theme
        self.title.set_legend((("■", t.departure, translate("teacher_vs_free", "differs from the reference (y + EOS; fed: SOS + y)")),
                               ("▭", t.departure, translate("teacher_vs_free", "where free running departs")),
                               ("┆", t.selection, translate("teacher_vs_free", "current position")), ("", "", word_start_legend())))
        self.title.set_title(self.figure_title(), self.summary())

    def _on_plot_hovered(self, info: HoverInfo | None) -> None:
        which = translate("teacher_vs_free", "teacher forcing") if self.sender() is self.heat_teacher else translate("teacher_vs_free", "inference loop")
        if info is None:
            self.readout.setText(" ")
        else:
            self.readout.setText(translate("teacher_vs_free", "{run}:  position {position} fed “{fed}”  →  source “{source}”     weight = {weight:.4g}").format(
                run=which, position=info.row + 1, fed=info.row_label, source=info.col_label, weight=info.value))

    def _on_theme_changed(self) -> None:
        for plot in (self.heat_teacher, self.heat_free):
            plot.apply_theme(self.theme)
        self.table.apply_theme(self.theme)
        self.rows_plot.apply_theme(self.theme)
        if self._colormap is None:
            self._on_colormap_changed()
        if self._result is not None:
            self._fill_table()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        for plot in (self.heat_teacher, self.heat_free):
            plot.set_colormap(self.colormap())

    # figure protocol ------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("teacher_vs_free", "Teacher forcing vs the inference loop · cross-attention layer {layer} · head {head}").format(
            layer=self.layer_head.layer + 1, head=self.layer_head.head + 1)

    def figure_data(self) -> FigureData:
        r = self._result
        if r is None:
            raise ValueError("the view shows no data yet: it needs a target")
        seqs = (r.reference_ids, r.teacher.fed_ids, r.teacher.predicted_ids, r.free.fed_ids, r.free.predicted_ids)
        n = max(len(s) for s in seqs)
        ids = np.full((len(seqs), n), -1, np.int64)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = s
        pieces = np.array([row + [""] * (n - len(row)) for row in self.table_rows()], dtype=str)
        extras = {"pieces": pieces, "departure_position": np.array(0 if r.departure is None else r.departure + 1)}  # 1-based; 0: none
        if r.teacher.cross.shape[0]:
            lh = self.layer_head.index
            extras.update(cross_teacher=r.teacher.cross[lh], cross_free=r.free.cross[lh])
        for name, (_, row) in self.attention_rows().items():
            extras["row_" + name.replace(", ", "_")] = row
        return FigureData(
            title=self.figure_title(),
            dims=("run", "position"),
            values={"token_id": ids},
            coords={"run": ROWS, "position": tuple(str(i + 1) for i in range(n))},
            extras=extras,
        )

    def transient_items(self):
        return [self.heat_teacher.hover_marker, self.heat_free.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def teacher_vs_free_data(session: Session, choice: ViewChoice) -> Analysis | TeacherVsFreeFrame:
    """The session's teacher-forced pass beside greedy decoding of its source, decoded in a
    worker (again only when the pass or the model changes: a new cursor reuses it); without a
    target, an empty frame."""
    forced, bundle = session.forced, session.bundle
    if forced is None or bundle is None:
        return TeacherVsFreeFrame(None)
    return Analysis(teacher_vs_free, (bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, forced),
                    finish=partial(TeacherVsFreeFrame, cursor=session.forced_cursor))


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("tvf_departure", "tvf_free", "tvf_reference")


def tour_measures(view: QtTeacherVsFreeView, ask: TourAsk) -> dict[str, Any]:
    """Where the inference loop first departs from the reference, and the two pieces there
    (none when it never does)."""
    r = view.result()
    d = r.departure
    if d is None:
        return {}
    free, ref = r.free.predicted_pieces, r.reference_pieces
    return {"tvf_departure": d + 1, "tvf_free": display_piece(free[d]) if d < len(free) else None,
            "tvf_reference": display_piece(ref[d]) if d < len(ref) else None}


def region_table(view: QtTeacherVsFreeView, ask: TourAsk) -> Region | None:
    """The table of the pieces, teacher-forced and free."""
    return items_region(view.table)


SPEC = ViewSpec("teacher-vs-free", QtTeacherVsFreeView, QT_TRANSLATE_NOOP("views", "Teacher forcing vs free running"), "bottom",
                ATTENTION_SELECTORS, data=teacher_vs_free_data, kinds=("cross",),
                empty="the teacher-vs-free view needs a target: pass --tgt TEXT (teacher-forced mode)",
                measures=tour_measures, measure_names=TOUR_MEASURES, regions={"teacher-table": region_table})
