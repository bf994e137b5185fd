"""The Train panel's figure: loss / accuracy / BLEU / learning-rate curves, the normalization
statistics over training and the probe sentence's cross-attention, on one exportable canvas.

The curves' axes keep their ranges until the data leave them (an unchanged axis repaints from its
cache), so a redraw during training only repaints the curves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.analysis.figure_data import FigureData
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.widgets.colormaps import Theme, ui_font
from attnviz.qt.widgets.heatmap import HeatmapPlot
from attnviz.qt.widgets.plots import pen
from attnviz.qt.widgets.title_item import TitleItem, relaxed_update_min


class ProbeCell(pg.GraphicsLayout):
    """The probe sentence's cross-attention (a heatmap, rows: output pieces, columns: source
    pieces) under its title: a cell of the Train panel's figure, and the frame of a snapshot
    animation (:class:`~attnviz.qt.train.snapshot_figure.SnapshotFigure`)."""

    MIN = (230, 150)  # px: the probe (heatmap, axis titles, colour bar) under its title

    def __init__(self, theme: Theme, colormap: str):
        super().__init__()
        self.title = TitleItem(theme)
        self.heatmap = HeatmapPlot(theme, colormap=colormap, colorbar_label=translate("figure", "weight"), annotate=False, aspect_locked=False,
                                   label_point_size=8.5)
        self.heatmap.set_axis_titles(translate("figure", "output (rows)"), translate("figure", "source (columns)"))
        self.addItem(self.title, row=0, col=0)
        self.addItem(self.heatmap, row=1, col=0)
        self.layout.setRowStretchFactor(1, 1)
        self.setMinimumWidth(self.MIN[0])
        self.heatmap.setMinimumHeight(self.MIN[1])  # the heatmap keeps its height under a title of any length

    def show_matrix(self, matrix: np.ndarray, rows: tuple[str, ...], cols: tuple[str, ...]) -> None:
        """Cross-attention weights ``[out, src]`` on the fixed scale 0–1 (snapshots compare)."""
        self.heatmap.set_matrix(matrix, rows, cols, levels=(0.0, 1.0))

    def apply_theme(self, theme: Theme) -> None:
        self.heatmap.apply_theme(theme)
        self.title.apply_theme(theme)


class TrainingFigure(FigureViewBase):
    """The Train panel's plots (one canvas, exportable like every view).

    The six cells (five curves and the probe) sit in as many columns as the width allows (three,
    two or one, see :meth:`columns_for`); the canvas is never smaller than its cells need, so a
    narrow or short dock scrolls the panel instead of cutting a label off."""

    PLOT_MIN = (190, 165)  # px: a curve plot with its title, ticks and axis label readable
    MAX_COLUMNS = 3

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme, title_span=0)  # each panel has its own title
        self.setObjectName("trainingFigure")
        ci = self.canvas.ci
        ci.layout.setHorizontalSpacing(8)
        ci.layout.setVerticalSpacing(6)
        self.loss_plot = self._plot(translate("figure", "Loss (nats)"))
        self.acc_plot = self._plot(translate("figure", "Valid accuracy (%)"))
        self.bleu_plot = self._plot(translate("figure", "Valid BLEU / chrF"))
        self.lr_plot = self._plot(translate("figure", "Learning rate"))
        self.norm_plot = self._plot(translate("figure", "Norm statistics (probe)"))
        th = self.theme
        self.loss_plot.addLegend(offset=(-4, 4), labelTextSize="8pt", labelTextColor=th.foreground)
        self.train_curve = self.loss_plot.plot([], [], pen=pen(th.head_color(0)), name=translate("figure", "train (running)"))
        self.valid_curve = self.loss_plot.plot([], [], pen=pen(th.head_color(1), 2.0), symbol="o", symbolSize=6,
                                               symbolBrush=th.head_color(1), symbolPen=None, name=translate("figure", "valid"))
        self.acc_curve = self.acc_plot.plot([], [], pen=pen(th.head_color(2), 2.0), symbol="o", symbolSize=6,
                                            symbolBrush=th.head_color(2), symbolPen=None)
        self.bleu_plot.addLegend(offset=(4, 4), labelTextSize="8pt", labelTextColor=th.foreground)  # scores rise to the right
        self.bleu_curve = self.bleu_plot.plot([], [], pen=pen(th.head_color(3), 2.0), symbol="o", symbolSize=6,
                                              symbolBrush=th.head_color(3), symbolPen=None, name="BLEU")
        self.chrf_curve = self.bleu_plot.plot([], [], pen=pen(th.head_color(4), 2.0), symbol="s", symbolSize=6,
                                              symbolBrush=th.head_color(4), symbolPen=None, name="chrF")
        self.lr_curve = self.lr_plot.plot([], [], pen=pen(th.head_color(5)))
        self.norm_plot.addLegend(offset=(-4, 4), labelTextSize="8pt", labelTextColor=th.foreground)
        self.norm_a = self.norm_plot.plot([], [], pen=pen(th.head_color(6), 2.0), symbol="o", symbolSize=5, symbolBrush=th.head_color(6),
                                          symbolPen=None, name="a")
        self.norm_b = self.norm_plot.plot([], [], pen=pen(th.head_color(7), 2.0, QtCore.Qt.PenStyle.DashLine), symbol="t", symbolSize=6,
                                          symbolBrush=th.head_color(7), symbolPen=None, name="b")
        self.acc_plot.setYRange(0, 100)
        self.lr_plot.getAxis("left").enableAutoSIPrefix(False)
        for plot in (self.loss_plot, self.acc_plot, self.bleu_plot, self.lr_plot, self.norm_plot):  # the widest tick text ("0.00002") fits
            plot.getAxis("left").setWidth(math.ceil(QtGui.QFontMetricsF(ui_font(8)).horizontalAdvance("0.00000")) + 10)
        self.probe_box = ProbeCell(self.theme, self.colormap())
        self.probe, self.probe_title = self.probe_box.heatmap, self.probe_box.title
        self._cells = (self.loss_plot, self.acc_plot, self.bleu_plot, self.lr_plot, self.norm_plot, self.probe_box)
        self._columns = 0
        self.arrange(self.MAX_COLUMNS)
        self._yranges: dict[int, tuple[float, float]] = {}
        self._probe_matrix: np.ndarray | None = None
        self._probe_labels: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self._show_probe_title()
        self._apply_theme()

    def _show_probe_title(self) -> None:
        """The probe's title before its first snapshot."""
        self.probe_title.set_title(translate("figure", "Probe sentence"), translate("figure", "cross-attention, after every epoch"))

    def _plot(self, title: str) -> pg.PlotItem:
        """A curve over the run's steps, titled ``title``."""
        p = pg.PlotItem(enableMenu=False)
        p.setMenuEnabled(False)
        p.hideButtons()
        p.setTitle(title, size="9.5pt")
        relaxed_update_min(p.titleLabel)  # a long title clips; it never widens its column past the window
        p.setLabel("bottom", translate("figure", "step"))
        p.showGrid(x=True, y=True, alpha=0.15)
        p.getViewBox().setMouseEnabled(x=False, y=False)
        for name in ("left", "bottom"):
            p.getAxis(name).setStyle(tickFont=ui_font(8))
        p.setMinimumSize(*self.PLOT_MIN)
        return p

    # layout -----------------------------------------------------------------------------
    def columns(self) -> int:
        """How many columns the cells are in now."""
        return self._columns

    def _cell_min(self, index: int) -> QtCore.QSizeF:
        return self._cells[index].effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize)

    def canvas_min_size(self, columns: int) -> QtCore.QSize:
        """The least canvas that shows every cell readably in ``columns`` columns."""
        layout = self.canvas.ci.layout
        rows = math.ceil(len(self._cells) / columns)
        widths = [max(self._cell_min(i).width() for i in range(c, len(self._cells), columns)) for c in range(columns)]
        heights = [max(self._cell_min(i).height() for i in range(r * columns, min(len(self._cells), (r + 1) * columns))) for r in range(rows)]
        left, top, right, bottom = layout.getContentsMargins()
        frame = 2 * self.canvas.frameWidth() + 2
        width = sum(widths) + (columns - 1) * layout.horizontalSpacing() + left + right + frame
        height = sum(heights) + (rows - 1) * layout.verticalSpacing() + top + bottom + frame
        return QtCore.QSize(math.ceil(width), math.ceil(height))

    def columns_for(self, width: int) -> int:
        """The most columns (up to three) whose cells fit in ``width`` px."""
        return next((c for c in range(self.MAX_COLUMNS, 1, -1) if self.canvas_min_size(c).width() <= width), 1)

    def arrange(self, columns: int) -> None:
        """Put the cells in ``columns`` columns, in reading order, and size the canvas to fit them
        (never narrower than one column, never shorter than its rows)."""
        columns = max(1, min(self.MAX_COLUMNS, columns))
        if columns == self._columns:
            return
        ci = self.canvas.ci
        for cell in self._cells:
            if cell in ci.items:
                ci.removeItem(cell)
        for i, cell in enumerate(self._cells):
            ci.addItem(cell, row=i // columns, col=i % columns)
        self._columns = columns
        self._fit_canvas()

    def _fit_canvas(self) -> None:
        """The canvas's minimum: one column wide, as tall as the rows of the current arrangement
        (again after a title wraps to more lines)."""
        size = QtCore.QSize(self.canvas_min_size(1).width(), self.canvas_min_size(self._columns).height())
        if size != self.canvas.minimumSize():
            self.canvas.setMinimumSize(size)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        self.arrange(self.columns_for(event.size().width()))
        self._fit_canvas()
        super().resizeEvent(event)

    def _apply_theme(self) -> None:
        th = self.theme
        for p in (self.loss_plot, self.acc_plot, self.bleu_plot, self.lr_plot, self.norm_plot):
            for name in ("left", "bottom"):
                ax = p.getAxis(name)
                ax.setPen(pen(th.muted, 1.0))
                ax.setTextPen(pen(th.foreground, 1.0))
                if ax.label is not None:
                    ax.label.setDefaultTextColor(QtGui.QColor(th.muted))
            p.titleLabel.setText(p.titleLabel.text, color=th.foreground, size="9.5pt")
            relaxed_update_min(p.titleLabel)
            if p.legend is not None:
                p.legend.setLabelTextColor(th.foreground)
                for _sample, label in p.legend.items:
                    label.setText(label.text, color=th.foreground)
        self.probe_box.apply_theme(th)

    def _on_theme_changed(self) -> None:
        self._apply_theme()
        if self._colormap is None:
            self.probe.set_colormap(self.theme.colormap)

    def _on_colormap_changed(self) -> None:
        self.probe.set_colormap(self.colormap())

    # updates ------------------------------------------------------------------------
    def show_history(self, steps: np.ndarray, evals: list[dict[str, Any]]) -> None:
        """``steps`` ``[n, 3]``: step, loss, lr; ``evals``: one dict per evaluation (step + metrics)."""
        if len(steps):
            self.train_curve.setData(steps[:, 0], steps[:, 1])
            self.lr_curve.setData(steps[:, 0], steps[:, 2])
        else:
            self.train_curve.setData([], [])
            self.lr_curve.setData([], [])
        x = np.asarray([e["step"] for e in evals], float)

        def col(key: str, scale: float = 1.0) -> np.ndarray:
            return np.asarray([e.get(key, math.nan) * scale for e in evals], float)

        self.valid_curve.setData(x, col("valid_loss"))
        self.acc_curve.setData(x, col("valid_token_accuracy", 100.0))
        has_bleu = bool(evals) and "valid_bleu" in evals[-1]
        self.bleu_curve.setData(x if has_bleu else [], col("valid_bleu") if has_bleu else [])
        self.chrf_curve.setData(x if has_bleu else [], col("valid_chrf") if has_bleu else [])
        self._fit_y(self.loss_plot, steps[:, 1] if len(steps) else [], col("valid_loss"))
        self._fit_y(self.lr_plot, steps[:, 2] if len(steps) else [], floor=0.0)
        if has_bleu:
            self._fit_y(self.bleu_plot, col("valid_bleu"), col("valid_chrf"), floor=0.0)

    def _fit_y(self, plot: pg.PlotItem, *arrays: Any, floor: float | None = None) -> None:
        """Set a plot's y range only when the data leave it or fill under 40% of it. An unchanged
        range keeps the axis's cached drawing: a redraw then only repaints the curves."""
        vals = np.concatenate([np.asarray(a, float).ravel() for a in arrays]) if arrays else np.zeros(0)
        vals = vals[np.isfinite(vals)]
        if not vals.size:
            return
        lo, hi = float(vals.min()), float(vals.max())
        cur = self._yranges.get(id(plot))
        if cur is not None and cur[0] <= lo and hi <= cur[1] and (hi - lo) >= 0.4 * (cur[1] - cur[0]):
            return
        pad = 0.12 * ((hi - lo) or abs(hi) or 1.0)
        new = (lo - pad if floor is None else max(floor, lo - pad), hi + pad)
        plot.enableAutoRange(axis="y", enable=False)
        plot.setYRange(*new, padding=0)
        self._yranges[id(plot)] = new

    def set_step_range(self, total_steps: int) -> None:
        """Fix the step axes to the whole run: adding points then never moves an axis (no tick relayout)."""
        for p in (self.loss_plot, self.acc_plot, self.bleu_plot, self.lr_plot, self.norm_plot):
            p.enableAutoRange(axis="x", enable=False)
            p.setXRange(0, max(1, total_steps), padding=0.02)

    def show_norm_curves(self, steps: np.ndarray, a: np.ndarray, b: np.ndarray, names: tuple[str, str], title: str) -> None:
        self.norm_a.setData(steps, a)
        self.norm_b.setData(steps, b)
        legend = self.norm_plot.legend
        if legend is not None:
            for sample, label in legend.items:
                item = sample.item
                if item is self.norm_a:
                    label.setText(names[0])
                elif item is self.norm_b:
                    label.setText(names[1])
        self.norm_plot.setTitle(title, size="9.5pt", color=self.theme.foreground)
        relaxed_update_min(self.norm_plot.titleLabel)

    def show_probe(self, matrix: np.ndarray | None, rows: tuple[str, ...], cols: tuple[str, ...], title: str, formula: str) -> None:
        self.probe_title.set_title(title, formula)
        self._fit_canvas()
        if matrix is None or not matrix.size:
            return
        self._probe_matrix = np.asarray(matrix)
        self._probe_labels = (rows, cols)
        self.probe_box.show_matrix(matrix, rows, cols)

    def clear(self) -> None:
        self._yranges.clear()
        for p in (self.loss_plot, self.acc_plot, self.bleu_plot, self.lr_plot, self.norm_plot):
            p.enableAutoRange(axis="x", enable=True)
            if p is not self.acc_plot:
                p.enableAutoRange(axis="y", enable=True)
        self.show_history(np.zeros((0, 3)), [])
        self.norm_a.setData([], [])
        self.norm_b.setData([], [])
        self._probe_matrix = None
        self._show_probe_title()

    # figure protocol ---------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("figure", "Training curves")

    def has_data(self) -> bool:
        x, _ = self.train_curve.getData()
        return x is not None and len(x) > 0

    def figure_data(self) -> FigureData:
        x, loss = self.train_curve.getData()
        _, lr = self.lr_curve.getData()
        if x is None or not len(x):
            raise ValueError(translate("figure", "no training steps yet"))
        extras: dict[str, np.ndarray] = {}
        vx, vl = self.valid_curve.getData()
        if vx is not None and len(vx):
            extras["eval_step"] = np.asarray(vx)
            extras["valid_loss"] = np.asarray(vl)
            extras["valid_token_accuracy_percent"] = np.asarray(self.acc_curve.getData()[1])
            bx, bleu = self.bleu_curve.getData()
            if bx is not None and len(bx):
                extras["valid_bleu"] = np.asarray(bleu)
                extras["valid_chrf"] = np.asarray(self.chrf_curve.getData()[1])
        if self._probe_matrix is not None:
            extras["probe_cross_attention"] = self._probe_matrix
        return FigureData(self.figure_title(), ("log_step",), {"step": np.asarray(x), "train_loss": np.asarray(loss), "lr": np.asarray(lr)},
                          {}, extras)
