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
