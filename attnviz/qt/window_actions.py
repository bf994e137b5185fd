"""The main window's actions (File, Decode, View → Presentation and Help entries, their keys,
tooltips and icons): :class:`WindowActions`, owned by the main window, whose menus and tool bar
show them. Each action is a child of the window, made in the order the shortcut list reads them."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.qt.help import show_about, show_shortcuts
from attnviz.qt.i18n import current_language, translate
from attnviz.qt.tour import other_tour, other_tour_words, start_tour, tour_for


def add_field_shortcut(action: QtGui.QAction) -> None:
    """The plain key steps from anywhere but a text field, which keeps it for its cursor;
    Alt + the key steps from a text field too (the tooltip says both)."""
    key = action.shortcut()
    alt = QtGui.QKeySequence(QtCore.Qt.KeyboardModifier.AltModifier | key[0].key())
    action.setShortcuts([key, alt])
    tip = action.statusTip()
    action.setToolTip(translate("main_window", "{tip} ({key}; in a text field {alt})").format(tip=tip, key=key.toString(), alt=alt.toString()))


class WindowActions:
    """``window``'s actions, by what they do (``open``, ``step``, ``export_figure``, …), and
    :meth:`update`, which enables those that apply to the session now."""

    def __init__(self, window: QtWidgets.QMainWindow):  # the main window (its session, exports, session files)
        self.window = window
        self._create_file_actions()
        self._create_decode_actions()
        self._create_help_actions()

    def _act(self, text: str, slot, shortcut=None, tip: str = "", name: str = "", icon=None) -> QtGui.QAction:
        a = QtGui.QAction(text, self.window)
        if shortcut is not None:
            a.setShortcut(QtGui.QKeySequence(shortcut))
        a.setStatusTip(tip)
        a.setToolTip(f"{tip} ({a.shortcut().toString()})" if shortcut else tip)
        a.triggered.connect(slot)
        if name:
            a.setObjectName(name)
        if icon is not None:
            a.setIcon(self.window.style().standardIcon(icon))
        return a

    def _create_file_actions(self) -> None:
        act, sp, keys, w = self._act, QtWidgets.QStyle.StandardPixmap, QtGui.QKeySequence.StandardKey, self.window
        self.open = act(translate("main_window", "&Open Model Bundle…"), w.open_model_dialog, keys.Open,
                        translate("main_window", "Open a model bundle folder"), "openAction", sp.SP_DirOpenIcon)
        self.export_figure = act(translate("main_window", "Export &Figure…"), w.exports.figure, "Ctrl+E",
                                 translate("main_window", "Export the current view as PNG, SVG or PDF"), "exportFigureAction", sp.SP_DialogSaveButton)
        self.export_data = act(translate("main_window", "Export &Data…"), w.exports.data, "Ctrl+Shift+E",
                               translate("main_window", "Export the data behind the current view (CSV or NPZ)"), "exportDataAction")
        self.export_animation = act(translate("main_window", "Export A&nimation…"), w.exports.animation, None,
                                    translate("main_window", "The current view, one frame per decoding step, as a GIF (or MP4)"), "exportAnimationAction")
        self.export_training = act(translate("main_window", "Export &Training Animation…"), w.exports.training_animation, None,
                                   translate("main_window", "The open model's probe sentence, one frame per training snapshot, as a GIF (or MP4)"),
                                   "exportTrainingAnimationAction")
        self.export_page = act(translate("main_window", "Export &Web Page…"), w.exports.web_page, None,
                               translate("main_window", "One HTML file to hand out: the sentence, a step slider and the views, readable offline"),
                               "exportWebPageAction")
        self.export_all = act(translate("main_window", "Export &All Heads…"), w.exports.all_heads, None,
                              translate("main_window", "One figure per layer and head, for the chosen attention kind"), "exportAllAction")
        self.save_session = act(translate("main_window", "&Save Session…"), lambda: w.session_files.save_dialog(), keys.Save,
                                translate("main_window", "Save the whole window (model, sentences, decoded steps, selections, layout) as a session file"),
                                "saveSessionAction")
        self.open_session = act(translate("main_window", "Open &Session…"), lambda: w.session_files.open_dialog(), "Ctrl+Shift+O",
                                translate("main_window", "Open a session file: the window as it was saved"), "openSessionAction")
        self.quit = act(translate("main_window", "&Quit"), w.close, keys.Quit, translate("main_window", "Quit attnviz"), "quitAction")

    def _create_decode_actions(self) -> None:
        act, sp, key, w = self._act, QtWidgets.QStyle.StandardPixmap, QtCore.Qt.Key, self.window
        self.step = act(translate("main_window", "Step"), w.session.step, key.Key_Right,
                        translate("main_window", "Decode the next token"), "stepAction", sp.SP_MediaSeekForward)
        self.back = act(translate("main_window", "Back"), w.session.back, key.Key_Left,
                        translate("main_window", "Undo the last token"), "backAction", sp.SP_MediaSeekBackward)
        self.run = act(translate("main_window", "Run to End"), w.session.run_to_end, key.Key_End,
                       translate("main_window", "Decode until EOS or the maximum length"), "runAction", sp.SP_MediaSkipForward)
        self.reset = act(translate("main_window", "Reset"), w.session.reset, key.Key_Home,
                         translate("main_window", "Back to SOS"), "resetAction", sp.SP_MediaSkipBackward)
        for a in self.stepping().values():
            a.setShortcutContext(QtCore.Qt.ShortcutContext.WindowShortcut)
            add_field_shortcut(a)
        self.as_you_type = act(translate("main_window", "Decode as You &Type"), w.set_decode_as_you_type, None,
                               translate("main_window", "Decode a new sentence (typed or chosen) to the end at once"), "decodeAsYouTypeAction")
        self.as_you_type.setCheckable(True)
        self.as_you_type.setChecked(True)
        self.presentation = act(translate("main_window", "&Presentation"), lambda: w.presentation.toggle(), key.Key_F11,
                                translate("main_window", "The view you last clicked fills the screen in larger type, with the step controls (Esc leaves)"),
                                "presentationAction")

    def _create_help_actions(self) -> None:
        """About, the shortcuts, and the tour: in the interface's language (Help → Tour), and in the
        other one (named in that language, as View → Language names it)."""
        act, language, w = self._act, current_language(), self.window
        other = other_tour(language)
        self.about = act(translate("main_window", "&About attnviz"), lambda: show_about(w), None,
                         translate("main_window", "About attnviz and its data"), "aboutAction")
        self.keys = act(translate("main_window", "&Keyboard Shortcuts"), lambda: show_shortcuts(w), None,
                        translate("main_window", "List the keyboard shortcuts"), "shortcutsAction")
        self.tour = act(translate("main_window", "&Tour"), lambda: start_tour(w, tour_for(language)), None,
                        translate("main_window", "Walk through the tutorial's ideas on the live model, one stop at a time"), "tourAction")
        text, tip = other_tour_words(other)
        self.tour_other = act(text, lambda: start_tour(w, other), None, tip, "tourOtherLanguageAction")

    def stepping(self) -> dict[str, QtGui.QAction]:
        """Step, Back, Run to End and Reset by name, as the step bar and the presentation take them."""
        return {"step": self.step, "back": self.back, "run": self.run, "reset": self.reset}

    def update(self) -> None:
        """Step and Run while decoding can go on, Back and Reset while it can go back, the exports
        while there is a sentence (the training animation while the model has snapshots)."""
        s = self.window.session
        self.step.setEnabled(s.can_step())
        self.back.setEnabled(s.can_back())
        self.run.setEnabled(s.can_step())
        self.reset.setEnabled(s.can_back())
        has = s.current is not None
        for a in (self.export_figure, self.export_data, self.export_all, self.export_animation, self.export_page):
            a.setEnabled(has)
        self.export_training.setEnabled(s.bundle is not None and bool(s.bundle.meta.get("snapshots")))
