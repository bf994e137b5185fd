"""A figure canvas that stays readable in a small dock: wrapped in a scroll area, it fills the
space it gets and scrolls once the space is below what its figure needs (a height the view
asks for, and the least size of the figure's own layout, so no plot is squeezed out of view)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets


class CanvasFit(QtCore.QObject):
    """Keeps ``canvas``'s minimum size at what its figure needs: at least ``min_width`` and
    ``min_height`` (the view's choice) and at least the least size of the scene's central
    layout, recomputed whenever that layout changes."""

    def __init__(self, canvas: pg.GraphicsLayoutWidget, min_height: int = 0, min_width: int = 0):
        super().__init__(canvas)
        self.canvas = canvas
        self._min_height = int(min_height)
        self._min_width = int(min_width)
        self._timer = QtCore.QTimer(self, singleShot=True, interval=0)  # goes with the canvas
        self._timer.timeout.connect(self.update)
        canvas.ci.installEventFilter(self)
        self.update()

    def set_min_height(self, height: int) -> None:
        """The least height the view wants for its figure (the layout may need more); applied
        once control returns to the event loop (see :meth:`schedule`)."""
        self._min_height = int(height)
        self.schedule()

    def set_min_size(self, width: int, height: int) -> None:
        """The least size the view wants for its figure (the layout may need more); see
        :meth:`set_min_height`."""
        self._min_width = int(width)
        self.set_min_height(height)

    def schedule(self) -> None:
        """Update the minimum size soon, not now: a size set while the canvas is being resized
        would leave its viewport at the old size (Qt skips a nested resize of a scroll area)."""
        self._timer.start()

    def needed(self) -> QtCore.QSize:
        """The least canvas size at which the figure's layout fits."""
        least = self.canvas.ci.effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize)
        frame = 2 * self.canvas.frameWidth() + 2
        return QtCore.QSize(max(self._min_width, int(least.width()) + frame), max(self._min_height, int(least.height()) + frame))

    def update(self) -> None:
        need = self.needed()
        if self.canvas.minimumSize() != need:
            self.canvas.setMinimumSize(need)

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        if event.type() == QtCore.QEvent.Type.LayoutRequest:
            self.schedule()
        return False


def scroll_vertically(canvas: QtWidgets.QWidget, name: str, background: str, *, fit: bool = True) -> QtWidgets.QScrollArea:
    """Put ``canvas`` in a scroll area that takes its place in its parent's layout.

    With ``fit`` the canvas is as wide and as tall as the area, or its minimum size where that is
    more (``canvas.setMinimumHeight``/``setMinimumSize`` before the call, then :class:`CanvasFit`,
    kept as ``area.fit``); without, it keeps the size its view gives it. The controls above it
    stay in view; the figure exported is the whole canvas.
    """
    parent = canvas.parentWidget()
    layout = parent.layout() if parent is not None else None
    if layout is None:
        raise ValueError("the canvas must sit in a layout")
    index = layout.indexOf(canvas)
    stretch = layout.stretch(index) if isinstance(layout, QtWidgets.QBoxLayout) else 0
    layout.removeWidget(canvas)
    area = QtWidgets.QScrollArea(objectName=name)
    area.setWidgetResizable(fit)
    area.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAsNeeded)
    area.setWidget(canvas)
    if fit and isinstance(canvas, pg.GraphicsLayoutWidget):
        area.fit = CanvasFit(canvas, canvas.minimumHeight(), canvas.minimumWidth())
    set_scroll_background(area, background)
    if isinstance(layout, QtWidgets.QBoxLayout):
        layout.insertWidget(index, area, stretch)
    else:
        layout.addWidget(area)
    return area


def set_scroll_background(area: QtWidgets.QScrollArea, background: str) -> None:
    area.viewport().setStyleSheet(f"background: {background};")
