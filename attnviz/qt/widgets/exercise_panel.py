"""The tour's exercise panel and the cover that hides a stop's view until the exercise is answered.

:class:`ExercisePanel` (objectName ``exercisePanel``) shows a question, its choices (radio
buttons ``exerciseChoice<i>``, or a grid of check boxes ``exerciseCell<i>``, row-major), Check
(``exerciseCheck``) and Skip (``exerciseSkip``), then the feedback (``exerciseFeedback``, its
``verdict`` property ``right``, ``wrong`` or ``skipped``) and the running score (``exerciseScore``).
It knows nothing about the model: :mod:`attnviz.qt.exercises` gives it the words and the choices.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.qt.i18n import translate
from attnviz.qt.widgets.plain_text import plain_label

RIGHT = QtGui.QColor(20, 120, 40)
WRONG = QtGui.QColor(170, 30, 30)
COVER = QtGui.QColor(245, 245, 245)  # the view is hidden (and still drawn beneath: the cover paints itself)


class ExercisePanel(QtWidgets.QScrollArea):
    """Question, choices, Check / Skip, feedback and score, scrolled where the dock is short;
    ``checked(frozenset)`` with the chosen indices, ``skipped()``."""

    checked = QtCore.Signal(object)
    skipped = QtCore.Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("exercisePanel")
        self.setWidgetResizable(True)
        self.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.inner = QtWidgets.QFrame(objectName="exerciseFrame")
        self.inner.setFrameShape(QtWidgets.QFrame.Shape.StyledPanel)
        self.setWidget(self.inner)
        layout = QtWidgets.QVBoxLayout(self.inner)
        self.question = plain_label("", "exerciseQuestion")
        font = self.question.font()
        font.setBold(True)
        self.question.setFont(font)
        self.context = plain_label("", "exerciseContext")
        self.waiting = plain_label("", "exerciseWaiting")
        self.feedback = plain_label("", "exerciseFeedback")
        self.score = plain_label("", "exerciseScore")
        for label in (self.question, self.context, self.waiting, self.feedback, self.score):
            label.setWordWrap(True)
            label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.choices = QtWidgets.QWidget(objectName="exerciseChoices")
        self._buttons: list[QtWidgets.QAbstractButton] = []
        self._group: QtWidgets.QButtonGroup | None = None
        self.check_button = QtWidgets.QPushButton(objectName="exerciseCheck")
        self.skip_button = QtWidgets.QPushButton(objectName="exerciseSkip")
        self.check_button.clicked.connect(lambda: self.checked.emit(self.chosen()))
        self.skip_button.clicked.connect(lambda _checked=False: self.skipped.emit())
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.skip_button)
        self.body = QtWidgets.QWidget(objectName="exerciseBody")  # all but the score
        inner = QtWidgets.QVBoxLayout(self.body)
        inner.setContentsMargins(0, 0, 0, 0)
        for w in (self.question, self.context, self.waiting, self.choices):
            inner.addWidget(w)
        inner.addLayout(buttons)
        inner.addWidget(self.feedback)
        layout.addWidget(self.body)
        layout.addWidget(self.score)
        layout.addStretch(1)
        self.set_words()

    def set_body_visible(self, on: bool) -> None:
        """The question and its parts (off: the panel shows the score alone)."""
        self.body.setVisible(on)
        self._fit()

    def _fit(self) -> None:
        """Asking, the panel takes the room it is given (and scrolls); answered, or with the score
        alone, only the room its words need, and the stop's text the rest."""
        asking = self.body.isVisibleTo(self) and not self.feedback.property("verdict")
        if asking:
            self.setMaximumHeight(16777215)
            return
        layout = self.inner.layout()
        width = max(self.viewport().width(), 100)
        need = layout.heightForWidth(width) if layout.hasHeightForWidth() else layout.sizeHint().height()
        self.setMaximumHeight(need + 2 * self.frameWidth())

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            QtCore.QTimer.singleShot(0, self, self._fit)

    def set_words(self) -> None:
        self.check_button.setText(translate("exercise", "Check"))
        self.skip_button.setText(translate("exercise", "Skip"))
        self.waiting.setText(translate("exercise", "Working out the answer on the live model…"))

    # -- a question --------------------------------------------------------------------------
    def ask(self, question: str) -> None:
        """A new question: its choices come with :meth:`set_choices` once computed."""
        self.question.setText(question)
        self.context.setText("")
        self.set_choices(())
        self.waiting.show()
        self.show_feedback(None, "")
        self.skip_button.setEnabled(True)

    def set_choices(self, labels: tuple[str, ...], columns: int = 0, context: str = "") -> None:
        """Radio buttons for ``labels`` (``columns`` > 0: a grid of check boxes, row-major,
        numbered from 1 along both edges)."""
        old = self.choices.layout()
        if old is not None:
            QtWidgets.QWidget().setLayout(old)  # the old layout and its buttons go with a throw-away widget
        self._buttons, self._group = [], None
        self.context.setText(context)
        self.context.setVisible(bool(context))
        self.waiting.setVisible(not labels)
        layout = self._grid(labels, columns) if columns else self._list(labels)
        layout.setContentsMargins(0, 0, 0, 0)
        self.choices.setLayout(layout)
        self.choices.setMinimumHeight(layout.minimumSize().height())  # the panel scrolls rather than squeeze them
        self._update_check()

    def _list(self, labels: tuple[str, ...]) -> QtWidgets.QLayout:
        layout = QtWidgets.QVBoxLayout()
        self._group = QtWidgets.QButtonGroup(self.choices)
        for i, text in enumerate(labels):
            button = QtWidgets.QRadioButton(text, objectName=f"exerciseChoice{i}")
            button.toggled.connect(self._update_check)
            button.setMinimumHeight(button.sizeHint().height())  # never squeezed: the panel scrolls instead
            self._group.addButton(button, i)
            self._buttons.append(button)
            layout.addWidget(button)
        return layout

    def _grid(self, labels: tuple[str, ...], columns: int) -> QtWidgets.QLayout:
        layout = QtWidgets.QGridLayout()
        layout.setHorizontalSpacing(2)
        layout.setVerticalSpacing(0)
        for c in range(columns):
            layout.addWidget(plain_label(str(c + 1)), 0, c + 1, QtCore.Qt.AlignmentFlag.AlignCenter)
        for i, text in enumerate(labels):
            r, c = divmod(i, columns)
            if c == 0:
                layout.addWidget(plain_label(str(r + 1)), r + 1, 0)
            box = QtWidgets.QCheckBox(objectName=f"exerciseCell{i}")
            box.setToolTip(text)
            box.setMinimumHeight(box.sizeHint().height())
            self._buttons.append(box)
            layout.addWidget(box, r + 1, c + 1, QtCore.Qt.AlignmentFlag.AlignCenter)
        layout.setColumnStretch(columns + 1, 1)
        return layout

    def chosen(self) -> frozenset[int]:
        return frozenset(i for i, b in enumerate(self._buttons) if b.isChecked())

    def choose(self, indices) -> None:
        """Tick exactly ``indices`` (what a click on each does)."""
        for i, b in enumerate(self._buttons):
            b.setChecked(i in set(indices))

    # -- the answer ----------------------------------------------------------------------------
    def show_feedback(self, verdict: str | None, text: str) -> None:
        """The verdict (``right``, ``wrong``, ``skipped``; ``None``: not answered yet) and its
        explanation; once answered the choices and the buttons are off."""
        self.feedback.setProperty("verdict", verdict or "")
        self.feedback.setText(text)
        self.feedback.setVisible(bool(text))
        palette = self.feedback.palette()
        color = {"right": RIGHT, "wrong": WRONG}.get(verdict or "", self.palette().color(QtGui.QPalette.ColorRole.WindowText))
        palette.setColor(QtGui.QPalette.ColorRole.WindowText, color)
        self.feedback.setPalette(palette)
        answered = verdict is not None
        for b in self._buttons:
            b.setEnabled(not answered)
        for w in (self.question, self.choices, self.check_button, self.skip_button):  # answered: the feedback says it all
            w.setVisible(not answered)
        self.context.setVisible(not answered and bool(self.context.text()))
        self.skip_button.setEnabled(not answered)
        self._update_check()
        self._fit()

    def _update_check(self, *_) -> None:
        """Check is on while unanswered, with choices, and (a list) one of them chosen."""
        answered = bool(self.feedback.property("verdict"))
        grid = self._group is None
        self.check_button.setEnabled(not answered and bool(self._buttons) and (grid or bool(self.chosen())))

    def set_score(self, text: str) -> None:
        self.score.setText(text)
        self.score.setVisible(bool(text))
        self._fit()


class ExerciseCover(QtWidgets.QWidget):
    """A sheet over ``target`` (a view's frame) saying why it is hidden, kept over it as the
    window moves. It paints itself (no auto-filled background), so Qt still counts the view
    beneath as on screen and keeps drawing it."""

    def __init__(self, target: QtWidgets.QWidget, text: str):
        super().__init__(target.window())
        self.setObjectName("exerciseCover")
        self.target = target
        self.text = text
        self._watched: list[QtWidgets.QWidget] = []
        w: QtWidgets.QWidget | None = target
        while w is not None and w is not self.parentWidget():
            w.installEventFilter(self)
            self._watched.append(w)
            w = w.parentWidget()
        self.place()

    def place(self) -> None:
        top = self.parentWidget()
        if not self.target.isVisible():
            self.hide()
            return
        self.setGeometry(QtCore.QRect(self.target.mapTo(top, QtCore.QPoint(0, 0)), self.target.size()))
        self.show()
        self.raise_()

    def remove(self) -> None:
        for w in self._watched:
            w.removeEventFilter(self)
        self._watched = []
        self.hide()
        self.deleteLater()

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 - Qt API
        moved = (QtCore.QEvent.Type.Resize, QtCore.QEvent.Type.Move, QtCore.QEvent.Type.Show, QtCore.QEvent.Type.Hide)
        if event.type() in moved:
            QtCore.QTimer.singleShot(0, self, self.place)
        return False

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802 - Qt API
        painter = QtGui.QPainter(self)
        painter.fillRect(self.rect(), COVER)
        painter.setPen(self.palette().color(QtGui.QPalette.ColorRole.WindowText))
        box = self.rect().adjusted(24, 24, -24, -24)
        painter.drawText(box, int(QtCore.Qt.AlignmentFlag.AlignCenter | QtCore.Qt.TextFlag.TextWordWrap), self.text)
        painter.end()
