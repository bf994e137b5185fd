"""The one quiet plot of the app and its pen: a plot with no menu, no buttons and no mouse
panning (a figure to read, not a plot to explore), a faint horizontal grid and small tick labels;
a cosmetic pen (its width in screen pixels at any zoom). Every small plot of the views and the
training figure is built here."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnviz.qt.widgets.colormaps import ui_font


def pen(color: Any, width: float = 1.6, style: QtCore.Qt.PenStyle = QtCore.Qt.PenStyle.SolidLine) -> QtGui.QPen:
    """A cosmetic pen of ``color``."""
    p = pg.mkPen(color, width=width, style=style)
    p.setCosmetic(True)
    return p


def make_quiet(plot: pg.PlotItem, tick_pt: float = 8.0, min_height: int | None = 110) -> pg.PlotItem:
    """Make ``plot`` quiet: no menu, no buttons, no mouse panning, a faint grid, small ticks."""
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.getViewBox().setMouseEnabled(x=False, y=False)
    plot.showGrid(x=False, y=True, alpha=0.15)
    if min_height is not None:
        plot.setMinimumHeight(min_height)
    for name in ("left", "bottom"):
        ax = plot.getAxis(name)
        ax.setStyle(tickFont=ui_font(tick_pt))
        ax.enableAutoSIPrefix(False)
    return plot


def quiet_plot(axes: dict[str, pg.AxisItem] | None = None, tick_pt: float = 8.0, min_height: int | None = 110) -> pg.PlotItem:
    """A new quiet plot (see :func:`make_quiet`) with ``axes``."""
    return make_quiet(pg.PlotItem(axisItems=axes or {}, enableMenu=False), tick_pt, min_height)


def curve(plot: pg.PlotItem, **opts: Any) -> pg.PlotDataItem:
    """A new empty curve of ``plot`` (``opts``: pyqtgraph's ``pen``, ``symbol``, ``name``…), drawn
    again only when its data is set: with pyqtgraph's default ``dynamicRangeLimit`` every change of
    the plot's range re-plots it and rebuilds its symbols."""
    return plot.plot([], [], dynamicRangeLimit=None, **opts)


def set_title(plot: pg.PlotItem, text: str, *, size: str, color: str) -> None:
    """``plot.setTitle(text, size=size, color=color)``, unless the plot shows that title already:
    pyqtgraph lays a title's HTML out anew on every call, and views set theirs on every frame."""
    label = plot.titleLabel
    same = label.text == text and label.opts.get("size") == size and label.opts.get("color") == color
    if not (same and label.isVisibleTo(plot)):
        plot.setTitle(text, size=size, color=color)
