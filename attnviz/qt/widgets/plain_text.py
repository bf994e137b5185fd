"""Untrusted text (token pieces, file and folder names, example sentences, messages built from
a bundle's files) shown as plain text: a label, a tooltip or a message box never reads it as
rich text, so ``<b>``, ``<a href>`` or ``<img>`` in it appear literally."""

from __future__ import annotations

import html

from PySide6 import QtCore, QtWidgets

PLAIN = QtCore.Qt.TextFormat.PlainText


def plain_label(text: str = "", name: str = "") -> QtWidgets.QLabel:
    """A ``QLabel`` that shows its text literally (a label guesses rich text otherwise)."""
    label = QtWidgets.QLabel(text)
    label.setTextFormat(PLAIN)
    if name:
        label.setObjectName(name)
    return label


def tooltip_text(text: str) -> str:
    """A tooltip that shows ``text`` literally: escaped inside rich text (Qt guesses the format
    of a tooltip and offers no plain setting)."""
    if not text:
        return ""
    return "<qt>" + html.escape(text).replace("\n", "<br>") + "</qt>"


def menu_text(text: str) -> str:
    """``text`` as a menu item or button label: an ``&`` stays an ``&``, not a shortcut mark."""
    return text.replace("&", "&&")


def show_message_box(parent: QtWidgets.QWidget | None, icon: QtWidgets.QMessageBox.Icon, title: str, text: str) -> None:
    """A modal message box with ``text`` as plain text."""
    box = QtWidgets.QMessageBox(icon, title, text, QtWidgets.QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(PLAIN)
    box.setObjectName("plainMessageBox")
    try:
        box.exec()
    finally:
        box.deleteLater()


class ElidedLabel(QtWidgets.QLabel):
    """A one-line plain-text label that shortens its text with "…" to the width it gets (a
    status bar never grows the window); the whole text is in the tooltip."""

    def __init__(self, text: str = "", name: str = "", parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setTextFormat(PLAIN)
        if name:
            self.setObjectName(name)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self._full = ""
        self.set_full_text(text)

    def full_text(self) -> str:
        return self._full

    def set_full_text(self, text: str, tip: str = "") -> None:
        """Show ``text`` (shortened to the room); the tooltip shows ``tip`` below the whole text."""
        self._full = text
        self.setToolTip(tooltip_text(f"{text}\n{tip}" if tip else text))
        self._elide()

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 - Qt API
        return QtCore.QSize(self.fontMetrics().horizontalAdvance("…") * 4, super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = self.contentsRect().width()
        self.setText(self.fontMetrics().elidedText(self._full, QtCore.Qt.TextElideMode.ElideRight, max(room, 0)))
