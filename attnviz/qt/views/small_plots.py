"""Small line and bar plots shared by the story views (norm-batch, FFN, residual stream, logit
lens): a plot without menu or mouse panning, its pens and its theme; and text on heatmap cells."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnviz.qt.widgets.colormaps import Theme, ui_font
from attnviz.qt.widgets.heatmap import HeatmapPlot
from attnviz.qt.widgets.plots import curve, pen, quiet_plot


class LabelAxis(pg.AxisItem):
    """A bottom axis of text labels at 0, 1, 2, … that draws every k-th label, k as small as lets
    the labels stand apart at the axis' length (a narrow plot gets fewer labels, none overlap)."""

    GAP = 6  # px between two labels

    def __init__(self, orientation: str = "bottom"):
        super().__init__(orientation)
        self.setStyle(hideOverlappingLabels=False)  # a label at either end may reach past the plot's edge
        self.labels: list[str] = []

    def set_labels(self, labels: list[str]) -> None:
        self.labels = list(labels)
        self.picture = None
        self.update()

    def step(self, length: float) -> int:
        """Draw every ``step``-th label on an axis ``length`` px long showing the axis' range."""
        lo, hi = self.range
        if not self.labels or length <= 0 or hi <= lo:
            return 1
        metrics = QtGui.QFontMetricsF(self.style.get("tickFont") or self.font())
        widest = max(metrics.horizontalAdvance(t) for t in self.labels) + self.GAP
        per_label = length / (hi - lo)  # px between two neighbouring positions
        return max(1, int(np.ceil(widest / per_label)))

    def tickValues(self, minVal, maxVal, size):  # noqa: N802 - pyqtgraph API
        if not self.labels:
            return super().tickValues(minVal, maxVal, size)
        k = self.step(size)
        return [(float(k), [float(i) for i in range(0, len(self.labels), k) if minVal <= i <= maxVal])]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph API
        if not self.labels:
            return super().tickStrings(values, scale, spacing)
        return [self.labels[int(round(v))] if 0 <= int(round(v)) < len(self.labels) else "" for v in values]


def small_plot(bottom: str = "", left: str = "", axes: dict[str, pg.AxisItem] | None = None) -> pg.PlotItem:
    """A plot with no menu and no mouse panning, a faint grid and small tick labels; its bottom
    axis a :class:`LabelAxis` unless ``axes`` says otherwise."""
    p = quiet_plot({"bottom": LabelAxis(), **(axes or {})})
    if bottom:
        p.setLabel("bottom", bottom)
    if left:
        p.setLabel("left", left)
    return p


def series(plot: pg.PlotItem, theme: Theme, index: int, name: str, dashed: bool = False, symbol: str = "o") -> pg.PlotDataItem:
    """An empty line with markers in head colour ``index`` (filled later with ``setData``)."""
    c = theme.head_color(index)
    style = QtCore.Qt.PenStyle.DashLine if dashed else QtCore.Qt.PenStyle.SolidLine
    return curve(plot, pen=pen(c, 1.8, style), symbol=symbol, symbolSize=6, symbolBrush=c, symbolPen=None, name=name)


def legend_title(plot: pg.PlotItem, text: str, names: list[tuple[int, str]], theme: Theme) -> None:
    """A plot title with each series' colour as a swatch (no legend box over the data)."""
    sw = "  ".join(f"<span style='color:{theme.head_color(i).name()}'>●</span> {n}" for i, n in names)
    plot.setTitle(f"{text}: {sw}" if sw else text, size="8.5pt", color=theme.foreground)


def apply_plot_theme(plot: pg.PlotItem, theme: Theme) -> None:
    for name in ("left", "bottom"):
        ax = plot.getAxis(name)
        ax.setPen(pen(theme.muted, 1.0))
        ax.setTextPen(pen(theme.foreground, 1.0))
        if ax.label is not None:
            ax.label.setDefaultTextColor(QtGui.QColor(theme.muted))


def set_ticks(plot: pg.PlotItem, labels: list[str], axis: str = "bottom") -> None:
    """Text ticks at 0, 1, 2, … along ``axis`` (a :class:`LabelAxis` thins them to the room)."""
    ax = plot.getAxis(axis)
    if isinstance(ax, LabelAxis):
        ax.setTicks(None)
        ax.set_labels(labels)
    else:
        ax.setTicks([list(enumerate(labels))])


class CellLabels:
    """Text drawn on the cells of a heatmap (one item per cell, reused from update to update),
    dark or light against each cell's colour."""

    def __init__(self, plot: HeatmapPlot, point_size: float = 8.0, limit: int = 64 * 16):
        self.plot = plot
        self.limit = limit
        self._font = ui_font(point_size)
        self.items: list[pg.TextItem] = []
        self._full: list[str] = []  # each shown item's whole text (drawn shortened to its cell)
        plot.getViewBox().sigResized.connect(self._fit)
        plot.getViewBox().sigRangeChanged.connect(self._fit)

    def show(self, texts: list[list[str]], values: np.ndarray | None) -> None:
        """``texts[row][col]`` on the cells; ``values`` (the matrix shown) decides each text's colour."""
        cells = [(r, c) for r, row in enumerate(texts) for c in range(len(row))][: self.limit]
        while len(self.items) < len(cells):
            t = pg.TextItem(anchor=(0.5, 0.5))
            t.setFont(self._font)
            t.setZValue(15)
            self.plot.addItem(t)
            self.items.append(t)
        colors = None if values is None else self.plot.cell_colors(np.nan_to_num(np.asarray(values, np.float64), nan=0.0))
        for i, t in enumerate(self.items):
            t.setVisible(i < len(cells))
            if i >= len(cells):
                continue
            r, c = cells[i]
            light = colors is None or _luminance(colors[r, c, :3]) > 0.5
            t.setColor("#111111" if light else "#ffffff")
            t.setPos(c, r)
        self._full = [texts[r][c] for r, c in cells]
        self._fit()

    def texts(self) -> list[str]:
        """The whole text of each cell shown (on screen it may be shortened with "…")."""
        return list(self._full)

    def _fit(self, *_) -> None:
        """Shorten each text to its cell's width on screen (with "…"), so no two texts overlap."""
        vb = self.plot.getViewBox()
        span = vb.viewRect().width()
        room = vb.width() / span - 3 if span > 0 else 0.0
        metrics = QtGui.QFontMetricsF(self._font)
        for t, full in zip(self.items, self._full):
            text = full if room <= 0 or metrics.horizontalAdvance(full) <= room else metrics.elidedText(full, QtCore.Qt.TextElideMode.ElideRight, room)
            if t.textItem.toPlainText() != text:
                t.setText(text)


def _luminance(rgb: np.ndarray) -> float:
    r, g, b = (float(v) / 255.0 for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
