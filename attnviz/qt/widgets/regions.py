"""Regions of the window: a widget and a polygon in its coordinates, for an outline laid over it.

The tour (:mod:`attnviz.qt.tour`) outlines the part of a view a stop talks about; each view finds
its own regions (its spec's ``regions``) with these helpers: a whole widget, the box around some
graphics items, or cells of a matrix plot (a rectangle of cells, or any polygon of them such as a
matrix's upper triangle).
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

Region = tuple[QtWidgets.QWidget, QtGui.QPolygonF]  # a widget and a polygon in its coordinates


def widget_region(widget: QtWidgets.QWidget) -> Region:
    """The whole of ``widget``."""
    return widget, QtGui.QPolygonF(QtCore.QRectF(widget.rect()))


def scene_region(item: QtWidgets.QGraphicsItem, polygon: QtGui.QPolygonF) -> Region | None:
    """``polygon`` (scene coordinates of ``item``'s scene) in its canvas's viewport (``None``:
    the item is on no canvas now)."""
    scene = item.scene()
    if scene is None or not scene.views():
        return None
    canvas = scene.views()[0]
    return canvas.viewport(), QtGui.QPolygonF(canvas.mapFromScene(polygon))


def items_region(*items: QtWidgets.QGraphicsItem) -> Region | None:
    """The box around ``items``."""
    box = QtCore.QRectF()
    for item in items:
        box |= item.sceneBoundingRect()
    return scene_region(items[0], QtGui.QPolygonF(box))


def cells_polygon(plot, points: list[tuple[float, float]]) -> Region | None:
    """A polygon of matrix coordinates (column, row; a cell spans ±0.5) of a matrix plot."""
    poly = QtGui.QPolygonF([QtCore.QPointF(x, y) for x, y in points])
    return scene_region(plot, plot.getViewBox().mapViewToScene(poly))


def cells(plot, col0: int, row0: int, col1: int, row1: int) -> Region | None:
    """Cells ``[row0, row1) × [col0, col1)`` of a matrix plot."""
    x0, y0, x1, y1 = col0 - 0.5, row0 - 0.5, col1 - 0.5, row1 - 0.5
    return cells_polygon(plot, [(x0, y0), (x1, y0), (x1, y1), (x0, y1)])


def upper_triangle(n: int) -> list[tuple[float, float]]:
    """The cells above the diagonal of an n × n matrix, as a staircase polygon."""
    points = [(0.5, -0.5), (n - 0.5, -0.5), (n - 0.5, n - 1.5)]
    for r in range(n - 2, -1, -1):
        points += [(r + 0.5, r + 0.5), (r + 0.5, r - 0.5)]
    return points
