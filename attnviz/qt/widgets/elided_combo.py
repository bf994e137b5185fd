"""A combo box whose closed face shows its choice shortened with “…” where it is narrower than the
text (a plain QComboBox cuts the text off under its arrow); the whole text is in its tooltip and
its list."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets


class ElidedCombo(QtWidgets.QComboBox):
    """``shown_text()`` is what the face reads now; ``tip`` (the constructor's) stays first in the tooltip."""

    def __init__(self, *args, tip: str = "", **kw):
        super().__init__(*args, **kw)
        self._tip = tip
        self.currentIndexChanged.connect(self._update_tip)
        self._update_tip()

    def _update_tip(self) -> None:
        text = self.currentText()
        self.setToolTip("\n".join(t for t in (self._tip, text) if t))

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 - Qt API
        hint = super().minimumSizeHint()
        return QtCore.QSize(min(hint.width(), 12 * self.fontMetrics().averageCharWidth()), hint.height())

    def _label_rect(self, opt: QtWidgets.QStyleOptionComboBox) -> QtCore.QRect:
        return self.style().subControlRect(QtWidgets.QStyle.ComplexControl.CC_ComboBox, opt, QtWidgets.QStyle.SubControl.SC_ComboBoxEditField, self)

    def shown_text(self) -> str:
        opt = QtWidgets.QStyleOptionComboBox()
        self.initStyleOption(opt)
        return self.fontMetrics().elidedText(self.currentText(), QtCore.Qt.TextElideMode.ElideRight, self._label_rect(opt).width())

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802 - Qt API
        painter = QtWidgets.QStylePainter(self)
        opt = QtWidgets.QStyleOptionComboBox()
        self.initStyleOption(opt)
        painter.drawComplexControl(QtWidgets.QStyle.ComplexControl.CC_ComboBox, opt)
        opt.currentText = self.shown_text()
        painter.drawControl(QtWidgets.QStyle.ControlElement.CE_ComboBoxLabel, opt)
