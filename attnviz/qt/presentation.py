"""Presentation mode (View → Presentation, F11): one view fills the screen for a class, in larger
type (its figure drawn :data:`FONT_SCALE` times larger), with the step controls above it; ``Esc`` (or F11 again) puts the view back where it was.

The view's frame (:class:`~attnviz.qt.view_frame.ViewFrame`) moves into a full-screen window
and back: nothing is built twice and the view keeps its data, selection and options. The window's
own layout is not touched, so leaving restores it exactly.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.qt.i18n import translate

FONT_SCALE = 1.6  # type in presentation, against the window's
BUTTON_ACTIONS = ("reset", "back", "step", "run")  # the step controls, in the tool bar's order


class Zoom(QtCore.QObject):
    """A pyqtgraph canvas drawn ``factor`` times larger: its figure laid out for a view ``1/factor``
    its size and scaled up, text and lines included (its own fonts have fixed point sizes)."""

    def __init__(self, canvas: pg.GraphicsView, factor: float):
        super().__init__(canvas)
        self.canvas, self.factor = canvas, factor
        canvas.installEventFilter(self)
        self._fit()

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 - Qt API
        if event.type() == QtCore.QEvent.Type.Resize:
            QtCore.QTimer.singleShot(0, self, self._fit)
        return False

    def _fit(self) -> None:
        c = self.canvas
        c.autoPixelRange = False
        c.setRange(QtCore.QRectF(0, 0, max(c.width(), 1) / self.factor, max(c.height(), 1) / self.factor), padding=0)

    def undo(self) -> None:
        """The canvas as it was: one scene unit a pixel."""
        self.canvas.removeEventFilter(self)
        self.canvas.autoPixelRange = True
        self.canvas.resizeEvent(None)
        self.deleteLater()


class Home:
    """Where a frame lives in the window (a dock, or the central column at an index), so it can be put back."""

    def __init__(self, frame: QtWidgets.QWidget):
        parent = frame.parentWidget()
        self.dock = parent if isinstance(parent, QtWidgets.QDockWidget) else None
        self.layout = None if self.dock is not None or parent is None else parent.layout()
        self.index = self.layout.indexOf(frame) if self.layout is not None else -1
        self.stretch = self.layout.stretch(self.index) if self.layout is not None and self.index >= 0 else 0

    def put_back(self, frame: QtWidgets.QWidget) -> None:
        if self.dock is not None:
            self.dock.setWidget(frame)
        elif self.layout is not None and self.index >= 0:
            self.layout.insertWidget(self.index, frame, self.stretch)
        frame.show()


class Presentation(QtWidgets.QWidget):
    """The full-screen window of one view. ``left`` is emitted once the view is back home."""

    left = QtCore.Signal()

    def __init__(self, frame: QtWidgets.QWidget, actions: dict[str, QtGui.QAction], step_text, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent, QtCore.Qt.WindowType.Window)
        self.setObjectName("presentation")
        self.setWindowTitle(translate("presentation", "attnviz — presentation (Esc to leave)"))
        self.frame, self.presented, self.home, self._step_text = frame, frame, Home(frame), step_text
        font = QtGui.QFont(self.font())
        font.setPointSizeF(font.pointSizeF() * FONT_SCALE)
        self.setFont(font)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.addLayout(self._controls(actions))
        self.step_label = QtWidgets.QLabel(objectName="presentationStep")  # a line of its own: the whole step is read from afar
        self.step_label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.step_label.setWordWrap(True)
        layout.addWidget(self.step_label)
        layout.addWidget(frame, 1)
        frame.show()
        canvas = getattr(frame.view, "canvas", None)
        self.zoom = Zoom(canvas, FONT_SCALE) if isinstance(canvas, pg.GraphicsView) else None
        for key in (QtCore.Qt.Key.Key_Escape, QtCore.Qt.Key.Key_F11):
            QtGui.QShortcut(QtGui.QKeySequence(key), self, activated=self.close)
        for name in BUTTON_ACTIONS:  # the window's keys (arrows, Home, End) work here too
            QtGui.QShortcut(actions[name].shortcut(), self, activated=actions[name].trigger)
        self.update_step()

    def _controls(self, actions: dict[str, QtGui.QAction]) -> QtWidgets.QHBoxLayout:
        row = QtWidgets.QHBoxLayout()
        for name in BUTTON_ACTIONS:
            button = QtWidgets.QToolButton(objectName=f"presentation_{name}")
            button.setDefaultAction(actions[name])
            button.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            row.addWidget(button)
        row.addStretch(1)
        leave = QtWidgets.QPushButton(translate("presentation", "Leave (Esc)"), objectName="presentationLeave")
        leave.clicked.connect(self.close)
        row.addWidget(leave)
        return row

    def update_step(self) -> None:
        self.step_label.setText(self._step_text())

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 - Qt API
        if self.frame is not None:
            if self.zoom is not None:
                self.zoom.undo()
            self.home.put_back(self.frame)
            self.frame = None
            self.left.emit()
        super().closeEvent(event)


class PresentationMode(QtCore.QObject):
    """The window's presentation mode: ``toggle()`` shows the active view in a
    :class:`Presentation` or leaves it."""

    def __init__(self, window: QtWidgets.QMainWindow, actions: dict[str, QtGui.QAction]):
        super().__init__(window)
        self.window, self.actions = window, actions
        self.shown: Presentation | None = None
        window.installEventFilter(self)  # the window closing (or rebuilt in another language) takes its view back first

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 - Qt API
        if event.type() == QtCore.QEvent.Type.Close and self.shown is not None:
            self.shown.close()
        return False

    def toggle(self) -> None:
        if self.shown is not None:
            self.shown.close()
        else:
            self.enter()

    def enter(self, name: str | None = None) -> Presentation | None:
        """Present the view ``name`` (default: the one the user last clicked)."""
        views = self.window.views
        name = name or views.name_of(self.window.active_view()) or "grid"
        frame = views.frames.get(name)
        if frame is None or self.shown is not None:
            return None
        self.shown = Presentation(frame, self.actions, self.window.status.step_label.text, self.window)
        self.shown.left.connect(self._on_left)
        self.window.session.decodingChanged.connect(self.shown.update_step)
        self.shown.setGeometry(self.window.screen().geometry())  # the whole screen also where no window manager makes it full screen
        self.shown.showFullScreen()
        views.bring_up_to_date(frame.view)
        return self.shown

    def _on_left(self) -> None:
        shown, self.shown = self.shown, None
        self.window.session.decodingChanged.disconnect(shown.update_step)
        shown.deleteLater()
        self.window.views.bring_up_to_date(shown.presented)
