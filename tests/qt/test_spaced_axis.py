"""The quiet plots' numeric axes (widgets/plots.py, ``SpacedAxis``): on a short plot no two tick
values overlap, where pyqtgraph's own axis lets them touch."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtGui

from attnviz.qt.widgets.plots import SpacedAxis, quiet_plot


def value_boxes(axis: pg.AxisItem) -> list:
    image = QtGui.QImage(8, 8, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(image)
    try:
        return [(rect, text) for rect, _flags, text in axis.generateDrawSpecs(painter)[2]]
    finally:
        painter.end()


def touching(boxes: list) -> list[tuple[str, str]]:
    return [(a[1], b[1]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a[0].intersects(b[0])]


def short_plot(axis: pg.AxisItem) -> pg.GraphicsLayoutWidget:
    widget = pg.GraphicsLayoutWidget()
    plot = quiet_plot({"left": axis}, tick_pt=7.5, min_height=None)
    widget.addItem(plot)
    plot.plot([0, 1, 2], [1.0, 1.5, 1.8])
    plot.setYRange(1.0, 1.8, padding=0)
    widget.resize(300, 60)  # a plot squeezed to a few text heights
    return widget


def test_a_short_plot_s_values_never_touch(qtbot):
    plain, spaced = short_plot(pg.AxisItem("left")), short_plot(SpacedAxis("left"))
    for w in (plain, spaced):
        qtbot.addWidget(w)
        w.show()
    qtbot.wait(50)
    plain_boxes = value_boxes(plain.ci.getItem(0, 0).getAxis("left"))
    spaced_boxes = value_boxes(spaced.ci.getItem(0, 0).getAxis("left"))
    assert touching(plain_boxes)  # pyqtgraph alone crowds them at this height
    assert spaced_boxes and not touching(spaced_boxes)
    assert {t for _, t in spaced_boxes} <= {t for _, t in plain_boxes}  # values left out, none moved or made up


def test_quiet_plots_take_spaced_axes_where_none_is_given():
    plot = quiet_plot({"bottom": pg.AxisItem("bottom")})
    assert isinstance(plot.getAxis("left"), SpacedAxis) and type(plot.getAxis("bottom")) is pg.AxisItem
