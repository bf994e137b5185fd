"""A small line plot of named series, built once and updated in place: what the story views
(scaling, teacher vs free) draw their curves with. The series' colours and names sit in the
title as swatches, so no legend covers the data."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from attnviz.qt.widgets.colormaps import Theme, ui_font
from attnviz.qt.widgets.heatmap import quiet_axes
from attnviz.qt.widgets.plots import curve, make_quiet, pen


class SeriesPlot(pg.PlotItem):
    """Named series, series ``i`` in the theme's head colour ``i % 2`` (solid: with the
    formula's choice, dashed: without); ``set_series(name, x, y)`` updates one. ``labels``: what
    the title calls each series (default: its name; a name is a key, a label is on screen)."""

    def __init__(self, theme: Theme, title: str, names: Sequence[str], *, x_label: str = "", y_label: str = "",
                 labels: Sequence[str] | None = None):
        super().__init__(enableMenu=False)
        make_quiet(self, min_height=120)
        quiet_axes(self)
        self._title = title
        self._names = tuple(names)
        self._series_labels = tuple(labels) if labels is not None else self._names
        self._labels = (x_label, y_label)
        self.curves = {name: curve(self, name=name) for name in self._names}
        self.apply_theme(theme)

    def apply_theme(self, theme: Theme) -> None:
        self.theme = theme
        for i, item in enumerate(self.curves.values()):
            color = theme.head_color(i)
            style = QtCore.Qt.PenStyle.SolidLine if i % 2 == 0 else QtCore.Qt.PenStyle.DashLine
            line = pen(color, width=1.8, style=style)
            item.setPen(line)
            item.setSymbol("o" if i % 2 == 0 else "s")
            item.setSymbolSize(5)
            item.setSymbolBrush(color)
            item.setSymbolPen(None)
        for name, label in zip(("bottom", "left"), self._labels):
            ax = self.getAxis(name)
            ax.setPen(pg.mkPen(theme.muted))
            ax.setTextPen(pg.mkPen(theme.foreground))
            ax.setStyle(tickFont=ui_font(7.5))
            if label:
                ax.setLabel(label, color=theme.muted)
        self._set_title()

    def set_title_text(self, title: str) -> None:
        self._title = title
        self._set_title()

    def _set_title(self) -> None:
        marks = "".join(
            f"  <span style='color:{self.theme.head_color(i).name()}'>{'●' if i % 2 == 0 else '■'}</span> {name}"
            for i, name in enumerate(self._series_labels)
        )
        self.setTitle(f"{self._title}:{marks}", size="8.5pt", color=self.theme.foreground)

    def set_series(self, name: str, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> None:
        self.curves[name].setData(np.asarray(x, np.float64), np.asarray(y, np.float64))

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The x and y of one series, as drawn."""
        x, y = self.curves[name].getData()
        return (np.array([]), np.array([])) if x is None else (np.asarray(x), np.asarray(y))

    def set_ticks(self, labels: Sequence[str], at: Sequence[float] | None = None) -> None:
        """Label x = ``at`` (default 0, 1, …) with ``labels`` (positions, layers)."""
        xs = range(len(labels)) if at is None else at
        self.getAxis("bottom").setTicks([[(float(x), str(label)) for x, label in zip(xs, labels)]])
