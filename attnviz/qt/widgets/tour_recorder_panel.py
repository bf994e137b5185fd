"""The panel of Tour → Record (a dock, objectName ``tourRecorderPanel``): the teacher's text of the
next stop in English and in Chinese (``tourStopTextEn``, ``tourStopTextZh``), the view it raises
(``tourStopView``, following the dock last brought to the front), Add stop (``tourAddStop``), the
stops recorded (``tourStopList``) with Remove (``tourRemoveStop``), and Save… (``tourSave``) and
Open… (``tourOpen``). What it says goes to its own line (``tourRecorderMessage``) and to
``message(level, text)``.

It drives a recorder (:class:`attnviz.qt.tour_recorder.TourRecorder`, given, never imported here):
``add(texts, view)``, ``remove(i)``, ``save(path, replace)``, ``open(path)``, ``stops()``,
``view_names()``, ``view_title(name)``, ``raised`` and the signals ``stopsChanged`` and
``raisedChanged``. Saving never replaces a file attnviz did not write without asking.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from attnviz.core.tour_data import TourError
from attnviz.core.tour_file import SUFFIX, RecordedStop, TourFileExists
from attnviz.qt.i18n import translate
from attnviz.qt.widgets.plain_text import plain_label, tooltip_text

#: language → the box's objectName, the language's name in itself, and what to write there (in it).
TEXT_BOXES = {"en": ("tourStopTextEn", "English", "What to say at this stop, in English"),
              "zh_CN": ("tourStopTextZh", "中文", "这一站要讲的话（中文）")}


def file_filter() -> str:
    return translate("tour_recorder", "attnviz tours (*{suffix});;Tours in JSON (*.json);;All files (*)").format(suffix=SUFFIX)


def ask_tour_file(parent: QtWidgets.QWidget, start: str = "") -> Path | None:
    """A tour file to open, asked in a file dialog (``None``: cancelled)."""
    path, _ = QtWidgets.QFileDialog.getOpenFileName(parent, translate("tour_recorder", "Open a tour file"), start, file_filter())
    return Path(path) if path else None


def stop_summary(stop: RecordedStop, view_title: str) -> str:
    """``Head detail · 我喜欢吃鱼。 · step 2 · encoder L1 H2 Q4``: a stop in the list, its view named
    ``view_title`` (1-based, as on screen)."""
    st = stop.state
    step = translate("tour_recorder", "end") if st.steps is None else str(st.steps)
    query = "" if st.query is None else f" Q{st.query + 1}"
    return translate("tour_recorder", "{view} · {source} · step {step} · {kind} L{layer} H{head}{query}").format(
        view=view_title, source=st.source, step=step, kind=st.kind, layer=st.layer + 1, head=st.head + 1, query=query)


class TourRecorderPanel(QtWidgets.QDockWidget):
    """Records a tour through ``recorder``; ``message(level, text)`` for what it says."""

    message = QtCore.Signal(str, str)

    def __init__(self, recorder, parent: QtWidgets.QWidget | None = None):
        super().__init__(translate("tour_recorder", "Record a tour"), parent)
        self.setObjectName("tourRecorderPanel")
        self.recorder = recorder
        self.texts: dict[str, QtWidgets.QPlainTextEdit] = {}
        self._folder = ""  # where the last tour was saved or opened
        self._build()
        recorder.stopsChanged.connect(self._show_stops)
        recorder.raisedChanged.connect(self._show_raised)
        self._show_raised(recorder.raised)

    def _build(self) -> None:
        box = QtWidgets.QWidget(objectName="tourRecorderBox")
        layout = QtWidgets.QVBoxLayout(box)
        layout.addWidget(plain_label(translate("tour_recorder", "Set the window as the stop should show it, write what to say, then add the stop."), "tourRecorderHint"))
        for language, (name, title, hint) in TEXT_BOXES.items():
            self.texts[language] = QtWidgets.QPlainTextEdit(objectName=name)
            self.texts[language].setPlaceholderText(hint)
            self.texts[language].setTabChangesFocus(True)
            layout.addWidget(plain_label(title))
            layout.addWidget(self.texts[language], 1)
        layout.addLayout(self._view_row())
        layout.addLayout(self._buttons(("tourAddStop", translate("tour_recorder", "Add stop"), self.add_stop),
                                       ("tourRemoveStop", translate("tour_recorder", "Remove stop"), self.remove_stop)))
        self.stop_list = QtWidgets.QListWidget(objectName="tourStopList")
        self.stop_list.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.stop_list.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)  # the whole line in its tooltip
        layout.addWidget(self.stop_list, 2)
        layout.addLayout(self._buttons(("tourOpen", translate("tour_recorder", "Open…"), self.open_dialog),
                                       ("tourSave", translate("tour_recorder", "Save…"), self.save_dialog)))
        self.message_label = plain_label("", "tourRecorderMessage")
        layout.addWidget(self.message_label)
        for label in (box.findChild(QtWidgets.QLabel, "tourRecorderHint"), self.message_label):
            label.setWordWrap(True)
        self.setWidget(box)
        self.setMinimumWidth(260)

    def _view_row(self) -> QtWidgets.QHBoxLayout:
        row = QtWidgets.QHBoxLayout()
        row.addWidget(plain_label(translate("tour_recorder", "View to raise:")))
        self.view_box = QtWidgets.QComboBox(objectName="tourStopView")
        for name in self.recorder.view_names():
            self.view_box.addItem(self.recorder.view_title(name), name)
        row.addWidget(self.view_box, 1)
        return row

    def _buttons(self, *specs: tuple[str, str, object]) -> QtWidgets.QHBoxLayout:
        row = QtWidgets.QHBoxLayout()
        for name, text, slot in specs:
            button = QtWidgets.QPushButton(text, objectName=name)
            button.clicked.connect(slot)
            row.addWidget(button)
        return row

    # -- recording ------------------------------------------------------------------------------
    def add_stop(self) -> RecordedStop | None:
        """A stop of the window as it is, with the texts typed (kept when the stop is refused)."""
        texts = {language: box.toPlainText() for language, box in self.texts.items()}
        try:
            stop = self.recorder.add(texts, self.view_box.currentData())
        except TourError as exc:
            self.say("error", str(exc))
            return None
        for box in self.texts.values():
            box.clear()
        self.say("info", translate("tour_recorder", "Stop {n} added").format(n=len(self.recorder.stops())), echo=False)
        return stop

    def remove_stop(self) -> None:
        self.recorder.remove(self.stop_list.currentRow())

    def _show_stops(self) -> None:
        self.stop_list.clear()
        for i, stop in enumerate(self.recorder.stops()):
            text = f"{i + 1}. {stop_summary(stop, self.recorder.view_title(stop.view))}"
            item = QtWidgets.QListWidgetItem(text)
            item.setToolTip(tooltip_text(text))
            self.stop_list.addItem(item)

    def _show_raised(self, name: str) -> None:
        i = self.view_box.findData(name)
        if i >= 0:
            self.view_box.setCurrentIndex(i)

    def say(self, level: str, text: str, echo: bool = True) -> None:
        """``text`` on the panel's line and (``echo``) in ``message``, for the window's message bar."""
        self.message_label.setText(text)
        self.message_label.setProperty("level", level)
        if echo:
            self.message.emit(level, text)

    # -- files ----------------------------------------------------------------------------------
    def save_dialog(self) -> Path | None:
        start = str(Path(self._folder or QtCore.QDir.homePath()) / f"tour{SUFFIX}")
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, translate("tour_recorder", "Save the tour"), start, file_filter(),
                                                        options=QtWidgets.QFileDialog.Option.DontConfirmOverwrite)  # asked below
        return self.save_to(Path(path)) if path else None

    def save_to(self, path: Path) -> Path | None:
        """Save the stops to ``path``: a file attnviz did not write is replaced only once the user
        agrees; a failure is one line and keeps every stop."""
        try:
            written = self._save(path)
        except TourError as exc:
            self.say("error", str(exc))
            return None
        if written is not None:
            self._folder = str(written.parent)
            self.say("info", translate("tour_recorder", "Tour saved to {path} ({n} stops)").format(path=written, n=len(self.recorder.stops())))
        return written

    def _save(self, path: Path) -> Path | None:
        try:
            return self.recorder.save(path)
        except TourFileExists as exc:
            return self.recorder.save(path, replace=True) if self._may_replace(exc.path) else None

    def _may_replace(self, path: Path) -> bool:
        text = translate("tour_recorder", "{path} exists and is not a tour attnviz wrote (or was changed since). Replace it?").format(path=path)
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Question, translate("tour_recorder", "Save the tour"), text,
                                    QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.No, self)
        box.setTextFormat(QtCore.Qt.TextFormat.PlainText)  # the path is the user's
        box.setDefaultButton(QtWidgets.QMessageBox.StandardButton.No)
        box.setObjectName("tourReplaceQuestion")
        try:
            return box.exec() == QtWidgets.QMessageBox.StandardButton.Yes
        finally:
            box.deleteLater()

    def open_dialog(self) -> None:
        path = ask_tour_file(self, self._folder)
        if path is not None:
            self.open_file(path)

    def open_file(self, path: Path) -> bool:
        """Play the tour file ``path``; one line says why when it cannot be read."""
        try:
            self.recorder.open(path)
        except TourError as exc:
            self.say("error", str(exc))
            return False
        self._folder = str(Path(path).parent)
        return True
