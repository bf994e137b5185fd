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
    """A new quiet plot (see :func:`make_quiet`) with ``axes`` (a :class:`SpacedAxis` where none is given)."""
    given = {"left": SpacedAxis("left"), "bottom": SpacedAxis("bottom"), **(axes or {})}
    return make_quiet(pg.PlotItem(axisItems=given, enableMenu=False), tick_pt, min_height)


class SpacedAxis(pg.AxisItem):
    """A numeric axis whose values never overlap: pyqtgraph shows a level's values when they fill
    less than a share of the axis, which on a short plot still lets neighbours touch; here a value
    whose box would touch one already placed (major levels first) is left out."""

    def generateDrawSpecs(self, p: QtGui.QPainter) -> Any:
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return None
        axis, ticks, texts = specs
        return axis, ticks, keep_apart(texts)


def keep_apart(texts: list[tuple[QtCore.QRectF, Any, str]], gap: float = 1.0) -> list[tuple[QtCore.QRectF, Any, str]]:
    """The text specs (rect, flags, text) of ``texts`` in order, each left out if its box, grown by
    ``gap`` pixels, meets the box of one kept before it."""
    kept: list[tuple[QtCore.QRectF, Any, str]] = []
    for spec in texts:
        grown = spec[0].adjusted(-gap, -gap, gap, gap)
        if not any(grown.intersects(k[0]) for k in kept):
            kept.append(spec)
    return kept


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
