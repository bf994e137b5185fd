"""A view as the window shows it: in a scroll area, or replaced by an empty state that says what
to do. A dock smaller than its view scrolls instead of squeezing the view or growing the window,
and a view never shows an earlier sentence when there is nothing to show."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from attnviz.qt.core_text import empty_source_text
from attnviz.qt.i18n import translate
from attnviz.qt.session import Session
from attnviz.qt.widgets.plain_text import plain_label


def empty_state(session: Session) -> str | None:
    """What the views say when there is nothing to show (and what to do), or ``None``."""
    if session.bundle is None:
        return translate("view_frame", "No model open: File → Open Model Bundle… (Ctrl+O)")
    if session.current is None:
        if not session.source.strip():
            return empty_source_text()
        if session.preparing:
            return translate("view_frame", "Preparing the mean ablation: the model as trained decodes the sentence first…")
        why = session.error or translate("view_frame", "the sentence could not be decoded")
        return translate("view_frame", "Nothing to show: {why}").format(why=why)
    if session.n_rows() == 0 and session.bundle.config.kind != "encoder-only":  # an encoder-only model's one pass is all it shows
        return translate("view_frame", "Press Step (→) to decode the first token, or Run to End (End)")
    return None


class ViewFrame(QtWidgets.QStackedWidget):
    """Page 0: ``view`` in a scroll area that resizes it (widgets that scroll themselves are
    shown as they are); page 1: the empty state."""

    def __init__(self, view: QtWidgets.QWidget, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.view = view
        self.setObjectName(f"{view.objectName() or 'view'}Frame")
        if isinstance(view, QtWidgets.QAbstractScrollArea):
            self.content: QtWidgets.QWidget = view
        else:
            scroll = QtWidgets.QScrollArea(objectName="viewScroll")
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
            scroll.setWidget(view)
            self.content = scroll
        self.empty_label = plain_label("", "emptyState")  # may quote a message built from the input
        self.empty_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.empty_label.setContentsMargins(12, 12, 12, 12)
        self.empty_label.setStyleSheet("QLabel#emptyState { color: palette(placeholder-text); }")
        self.addWidget(self.content)
        self.addWidget(self.empty_label)

    def set_computing(self, on: bool) -> None:
        """The view says (in its control row) that its data is being computed: what it shows is
        the previous frame's until then."""
        badge = getattr(self.view, "computing_badge", None)
        if badge is not None:
            badge.setVisible(on)

    @property
    def computing(self) -> QtWidgets.QWidget | None:
        return getattr(self.view, "computing_badge", None)

    def set_empty(self, text: str | None) -> None:
        """Show ``text`` in place of the view, or (``None``) the view."""
        if text:
            self.empty_label.setText(text)
            self.setCurrentWidget(self.empty_label)
        else:
            self.setCurrentWidget(self.content)

    def is_empty(self) -> bool:
        return self.currentWidget() is self.empty_label

    def empty_text(self) -> str:
        return self.empty_label.text() if self.is_empty() else ""
