"""The walkthrough's three sections of tables (projections; scores and weights; output):
:class:`TableSections` lays out the tables of :data:`SECTIONS` with the operators between them
under their section labels, and fills them from a walkthrough through the view's
:class:`AxisWindows` — each table's window, labels, colour levels and title as the model computes
the step — and marks head i's columns of Concat(Z_1..Z_h) and its rows of W^O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.qt.i18n import translate
from attnviz.qt.views.walkthrough_tables import (
    CROSS_SECTION_1,
    CROSS_TITLES,
    SCORES_AND_WEIGHTS,
    SECTION_2,
    SECTIONS,
    UNSCALED_TITLE,
    StageSpec,
    StageTable,
    softmax_input,
    title_text,
)
from attnviz.qt.views.walkthrough_windows import AxisWindows
from attnviz.qt.widgets.colormaps import Theme
from attnviz.qt.widgets.heatmap import HoverInfo


class TableSections:
    """The sections laid out in a canvas's layout from row ``first_row`` on (a label row, then a
    nested grid per section, one layout per line so the tables keep their own widths). ``tables``
    maps a unique key (the field, or ``field@row.line`` for its second table) to its table; each
    table's ``sigHovered`` goes to ``on_hover``."""

    def __init__(self, ci: pg.GraphicsLayout, first_row: int, theme: Theme, on_hover: Callable[[HoverInfo | None], None]):
        self.theme = theme
        self.tables: dict[str, StageTable] = {}
        self.section_labels: list[pg.LabelItem] = []
        self._on_hover = on_hover
        self._operators: list[pg.LabelItem] = []
        self._lines: list[pg.GraphicsLayout] = []
        self._sections: list[pg.GraphicsLayout] = []
        self._bias_items: list[pg.GraphicsObject] = []  # B and its "+": shown only for a model with a position bias
        row = first_row
        for title, lines in SECTIONS:
            self._add_section(ci, row, title, lines)
            row += 2
        self.head_marks = self._make_head_marks()

    # construction -----------------------------------------------------------------------
    def _add_section(self, ci: pg.GraphicsLayout, row: int, title: str, lines: tuple[tuple[StageSpec | str, ...], ...]) -> None:
        item = pg.LabelItem(title_text(title), size="9.5pt", color=self.theme.muted, justify="left")
        ci.addItem(item, row=row, col=0)
        self.section_labels.append(item)
        section = ci.addLayout(row=row + 1, col=0)
        section.layout.setVerticalSpacing(8)
        self._sections.append(section)
        for r, items in enumerate(lines):
            self._add_line(section.addLayout(row=r, col=0), items, f"{row}.{r}")

    def _add_line(self, line: pg.GraphicsLayout, items: tuple[StageSpec | str, ...], where: str) -> None:
        """Fill one line of a section: its tables and operators, then a cell that absorbs spare width."""
        self._lines.append(line)
        for col, item in enumerate(items):
            if isinstance(item, StageSpec):
                widget = self._make_table(item, item.name if item.name not in self.tables else f"{item.name}@{where}")
            else:
                widget = self._make_operator(item)
            line.addItem(widget, row=0, col=col)
            if _is_bias(item) or (col and _is_bias(items[col - 1])):
                self._bias_items.append(widget)
        line.layout.addItem(QtWidgets.QGraphicsWidget(), 0, len(items))
        line.layout.setColumnStretchFactor(len(items), 1)

    def _make_table(self, spec: StageSpec, key: str) -> StageTable:
        t = StageTable(self.theme, spec, key)
        t.sigHovered.connect(self._on_hover)
        self.tables[key] = t
        return t

    def _make_operator(self, text: str) -> pg.LabelItem:
        item = pg.LabelItem(text, size="16pt", color=self.theme.muted)
        item.setFixedWidth(24)
        self._operators.append(item)
        return item

    def _make_head_marks(self) -> list[QtWidgets.QGraphicsRectItem]:
        """Where head i sits: its columns in the concat, its rows in W^O."""
        marks = []
        for key in ("concat", "w_o"):
            mark = QtWidgets.QGraphicsRectItem()
            mark.setZValue(12)
            mark.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
            self.tables[key].addItem(mark)
            marks.append(mark)
        _apply_mark_pens(marks, self.theme)
        return marks

    # showing ----------------------------------------------------------------------------------
    def layouts(self) -> tuple[pg.GraphicsLayout, ...]:
        """The lines' and the sections' layouts, inner ones first."""
        return (*self._lines, *self._sections)

    def set_visible(self, visible: bool) -> None:
        for item in (*self._sections, *self.section_labels):
            item.setVisible(visible)

    def fill(self, walk: Any, windows: AxisWindows) -> list:
        """Show ``walk`` through ``windows``; returns what the layout depends on (each table's
        window, labels and titles, the section labels)."""
        self._show_bias(walk.position_bias is not None)
        shape: list = [walk.position_bias is not None]
        for table in self.tables.values():
            if getattr(walk, table.spec.name) is not None:
                shape.extend(self._fill_table(table, walk, windows))
        sections = self._fill_section_labels(walk)
        self._place_head_marks(walk)
        shape.append(sections)
        return shape

    def _fill_table(self, table: StageTable, walk: Any, windows: AxisWindows) -> tuple[tuple, str]:
        spec = table.spec
        full = np.asarray(getattr(walk, spec.name))
        if full.ndim == 1:  # a bias: one row
            full = full[None, :]
        rows = windows.slice(spec.rows, full.shape[0])
        cols = windows.slice(spec.cols, full.shape[1])
        highlight = None
        if spec.highlight and spec.rows == "query" and rows.start <= walk.query < rows.stop:
            highlight = walk.query - rows.start
        titles = (AxisWindows.title(spec.rows, full.shape[0], rows), AxisWindows.title(spec.cols, full.shape[1], cols))
        row_labels, col_labels = axis_labels(walk, spec.rows, full.shape[0]), axis_labels(walk, spec.cols, full.shape[1])
        table.show_window(full, rows, cols, row_labels, col_labels, highlight, table_levels(walk, spec, full), titles)
        text = title_text(table_title(walk, spec)) + ("  ⋯" if table.elided() else "")
        table.set_title(text, self.theme.foreground)
        return (rows.stop - rows.start, cols.stop - cols.start, titles, tuple(row_labels[rows]), tuple(col_labels[cols])), text

    def _fill_section_labels(self, walk: Any) -> tuple[str, str]:
        section_1 = title_text(CROSS_SECTION_1 if walk.kind == "cross" else SECTIONS[0][0])
        section_2 = SECTION_2.format(scores=translate("walkthrough_tables", SCORES_AND_WEIGHTS),
                                     softmax=softmax_input(walk.scaled, walk.position_bias is not None))
        for label, text in ((self.section_labels[0], section_1), (self.section_labels[1], section_2)):
            if label.text != text:
                label.setText(text, color=self.theme.muted)
        return section_1, section_2

    def _show_bias(self, shown: bool) -> None:
        """The B table and its "+" take room only for a model with a position bias."""
        for item in self._bias_items:
            item.setVisible(shown)
            item.setMaximumWidth(16777215 if shown else 0)

    def _place_head_marks(self, w: Any) -> None:
        lo, hi = w.head * w.d_k, (w.head + 1) * w.d_k
        concat, wo = self.tables["concat"], self.tables["w_o"]
        # concat: head i's columns; W^O: the same rows
        c_cols = concat.window[1]
        a, b = max(lo, c_cols.start), min(hi, c_cols.stop)
        rows = concat.window[0]
        if a < b:
            self.head_marks[0].setRect(QtCore.QRectF(a - c_cols.start - 0.5, -0.5, b - a, rows.stop - rows.start))
            self.head_marks[0].setVisible(True)
        else:
            self.head_marks[0].setVisible(False)
        w_rows, w_cols = wo.window
        a, b = max(lo, w_rows.start), min(hi, w_rows.stop)
        if a < b:
            self.head_marks[1].setRect(QtCore.QRectF(-0.5, a - w_rows.start - 0.5, w_cols.stop - w_cols.start, b - a))
            self.head_marks[1].setVisible(True)
        else:
            self.head_marks[1].setVisible(False)

    # colours ------------------------------------------------------------------------------------
    def apply_theme(self, theme: Theme, theme_colormap: bool) -> None:
        """Recolour for ``theme``; the weights' tables take its colormap where ``theme_colormap``
        (the view has no colormap of its own)."""
        self.theme = theme
        for t in self.tables.values():
            t.apply_theme(theme)
            if t.spec.scale == "weights" and theme_colormap:
                t.set_colormap(theme.colormap)
        for item in (*self.section_labels, *self._operators):
            item.setText(item.text, color=theme.muted)
        _apply_mark_pens(self.head_marks, theme)

    def set_colormap(self, name: str) -> None:
        """The weights' tables' colormap."""
        for t in self.tables.values():
            if t.spec.scale == "weights":
                t.set_colormap(name)


def table_title(walk: Any, spec: StageSpec) -> str:
    """A table's title (HTML) as this model computes the step: no ÷√d_k, + B; for cross-attention
    keys and values from C_encoder."""
    if walk.kind == "cross" and spec.name in CROSS_TITLES and spec.title != "V<sub>i</sub>":  # not section 3's plain V_i
        return CROSS_TITLES[spec.name]
    if spec.name == "scaled_scores" and not walk.scaled:
        return translate("walkthrough_tables", UNSCALED_TITLE)
    if spec.name == "masked_scores":
        return softmax_input(walk.scaled, walk.position_bias is not None).replace(" / ", "/")
    return spec.title


def table_levels(walk: Any, spec: StageSpec, full: np.ndarray) -> tuple[float, float]:
    """A table's colour levels: 0..1 for weights, ±1 for the mask, else ± its largest finite
    magnitude (B and the scaled scores on one scale)."""
    if spec.scale == "weights":
        return (0.0, 1.0)
    if spec.scale == "mask":
        return (-1.0, 1.0)
    if spec.name in ("scaled_scores", "position_bias") and walk.position_bias is not None:  # B on the scores' scale
        full = np.concatenate([np.ravel(walk.scaled_scores), np.ravel(walk.position_bias)])
    finite = np.asarray(full)[np.isfinite(full)]
    m = float(np.max(np.abs(finite))) if finite.size else 1.0
    return (-m, m) if m > 0 else (-1.0, 1.0)


def axis_labels(walk: Any, axis: str, n: int) -> list[str]:
    """The labels of an axis of length ``n``: the pieces for queries and keys, ``b`` for a bias's row, else the indices."""
    if axis == "query":
        return list(walk.query_labels)
    if axis == "key":
        return list(walk.key_labels)
    if axis == "bias":
        return ["b"]
    return [str(i) for i in range(n)]


def _is_bias(item: StageSpec | str) -> bool:
    return isinstance(item, StageSpec) and item.name == "position_bias"


def _apply_mark_pens(marks: list[QtWidgets.QGraphicsRectItem], theme: Theme) -> None:
    pen = pg.mkPen(theme.selection, width=2.5)
    pen.setCosmetic(True)
    for m in marks:
        m.setPen(pen)
