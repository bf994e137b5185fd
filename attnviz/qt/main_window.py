"""The main window: wiring only. The session owns the state; each panel lives in its own module, and
the window's actions, menus, docks, status bar, settings and exports in its ``window_*`` modules."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.bundle import Bundle
from attnviz.core.model.config import TransformerConfig
from attnviz.errors import one_line
from attnviz.paths import default_model
from attnviz.qt.decode_panel import QtInputBar, QtStepBar, QtTokenChips, QtTopKPanel
from attnviz.qt.i18n import LANGUAGES, SETTING, current_language, install, translate
from attnviz.qt.interpreter import freeze_survivors
from attnviz.qt.presentation import PresentationMode
from attnviz.qt.session import Session
from attnviz.qt.session_file import SessionFiles, capture
from attnviz.qt.state import SUFFIX, AppState
from attnviz.qt.theme import THEMES, apply_theme
from attnviz.qt.tour import raise_view
from attnviz.qt.train.panel import TrainPanel
from attnviz.qt.views.registry import ViewSet
from attnviz.qt.widgets.colormaps import SEQUENTIAL_COLORMAPS
from attnviz.qt.widgets.plain_text import plain_label
from attnviz.qt.window_actions import WindowActions
from attnviz.qt.window_docks import WindowDocks
from attnviz.qt.window_exports import WindowExports
from attnviz.qt.window_menus import WindowMenus
from attnviz.qt.window_settings import WindowSettings
from attnviz.qt.window_status import WindowStatus
from attnviz.qt.workers import stop_workers

CLOSE_WAIT_S = 1.0  # how long closing the window waits for a stopped training run
DEFAULT_SIZE = QtCore.QSize(1400, 900)  # the window's size when the screen has room for it
LAYOUT_VERSION = 2  # of the saved dock layout: 2 since the docks are named by the views' modules (headDetailDock, compareDock)


def fitting_size(want: QtCore.QSize, screen: QtGui.QScreen | None) -> QtCore.QSize:
    """``want``, made smaller where the screen's available geometry is (a margin for the frame)."""
    if screen is None:
        return QtCore.QSize(want)
    room = screen.availableGeometry().size() - QtCore.QSize(16, 40)
    return want.boundedTo(room)


class MainWindow(QtWidgets.QMainWindow):
    """The views of the registry around the attention grid, the decoding controls, menus and
    settings (geometry, dock layout, colormap, theme and recent models, kept in ``settings``)."""

    def __init__(self, model: Path | None = None, src: str | None = None, tgt: str | None = None, settings: QtCore.QSettings | None = None,
                 session_file: Path | None = None, state: AppState | None = None):
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowTitle("attnviz")
        self.setAcceptDrops(True)
        self.settings = settings or QtCore.QSettings()
        self.session = Session(self)
        self.views = ViewSet(self.session)
        self.train = TrainPanel()
        self.train.bundleReady.connect(lambda path: self.open_model(Path(path)))
        self.grid = self.views["grid"]
        self.head_detail = self.views["head"]
        self.colormap_name = SEQUENTIAL_COLORMAPS[0]
        self.theme_name = "light"
        self._active_view: QtWidgets.QWidget | None = None
        self.resize_to_default()  # lay the docks out at a realistic size from the start
        self.exports = WindowExports(self)  # File → Export's entries
        self.acts = WindowActions(self)
        self.presentation = PresentationMode(self, self.acts.stepping())
        self.create_central()
        self.topk_panel = QtTopKPanel()
        self.topk_panel.forceRequested.connect(self.session.force)
        self.docks = WindowDocks(self, self.topk_panel, self.train)
        self.menus = WindowMenus(self)
        self.status = WindowStatus(self, self.session)
        self.window_settings = WindowSettings(self)
        self._connect_signals()
        self._needs_default_layout = not self.window_settings.read()
        self._show_first_sentence(src, tgt)
        self.session.actionStarted.connect(self.clear_message)
        self._pending_run = src is None or not tgt  # decode the first sentence to the end once loaded
        self.model_path: Path | None = None  # the open model's folder: set when a load has succeeded
        self.session_files = SessionFiles(self)
        self._open_first(model, session_file, state)
        self._update_actions()

    # -- construction ----------------------------------------------------------------------
    def _connect_signals(self) -> None:
        self.session.modelChanged.connect(self._on_model_changed)
        self.session.modelChanged.connect(freeze_survivors)
        self.session.decodingChanged.connect(self._on_decoding_changed)
        self.session.busyChanged.connect(self.status.show_busy)
        self.session.message.connect(self.show_message)
        self.views.failed.connect(lambda text: self.show_message("error", text))
        self.views["model-map"].viewRequested.connect(lambda name: raise_view(self, name))  # a block clicked on the map: its view in front
        self.session.runFinished.connect(self._update_actions)

    def _show_first_sentence(self, src: str | None, tgt: str | None) -> None:
        """``src`` (else the first example) and ``tgt`` in the input bar and the session."""
        examples = self._load_examples()
        first = src if src is not None else (examples[0].source if examples else "我喜欢吃鱼。")
        self.input_bar.set_texts(first, tgt or "")
        self.session.keep_inputs(first, tgt or "")

    def _open_first(self, model: Path | None, session_file: Path | None, state: AppState | None) -> None:
        """The window ``state`` (a window rebuilt in another language), else the session file, else the model."""
        if state is not None and self.session_files.restore(state):
            self._pending_run = False  # the state says what is decoded
        elif session_file is None or not self.session_files.open(Path(session_file)):
            self.open_model(Path(model) if model else default_model())
        else:
            self._pending_run = False  # the session file says what is decoded

    def create_central(self) -> None:
        central = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.input_bar = QtInputBar(self.session)
        self.step_bar = QtStepBar(self.session, self.acts.stepping())
        self.chips = QtTokenChips()
        self.message_bar = plain_label("", "messageBar")  # messages carry folder names and file contents
        self.message_bar.setWordWrap(True)
        self.message_bar.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message_bar.setContentsMargins(8, 3, 8, 3)
        self.message_bar.hide()
        layout.addWidget(self.input_bar)
        layout.addWidget(self.step_bar)
        layout.addWidget(self.chips)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.views.frames["grid"], 1)
        self.setCentralWidget(central)
        self.connect_view(self.grid)
        self.grid.tileClicked.connect(self._on_grid_clicked)
        self.grid.headToggled.connect(self.session.toggle_head)
        self.grid.ablationKindChosen.connect(self.session.set_ablation_kind)

    def switch_language(self, code: str) -> QtWidgets.QMainWindow | None:
        """The interface in ``code`` from now on (remembered): the window is built again in that
        language and restored to this one's state (model, sentences, steps, selections, layout);
        -> the new window (None when nothing changed or a running training is kept)."""
        if code == current_language() or code not in LANGUAGES or not self.confirm_close():
            self.menus.show_language(current_language())
            return None
        state = capture(self)
        self.settings.setValue(SETTING, code)
        self.window_settings.write()
        install(code)
        successor = MainWindow(settings=self.settings, state=state)
        successor.show()
        app = QtWidgets.QApplication.instance()
        app._attnviz_window = successor  # kept alive by the application, as the first window is by run_app
        self._closing_for = successor
        self.close()
        return successor

    # -- model --------------------------------------------------------------------------------
    def ask_model_folder(self) -> str:
        """A model folder chosen by the user ("" when cancelled)."""
        start = str((self.model_path or default_model()).parent)
        return QtWidgets.QFileDialog.getExistingDirectory(self, translate("main_window", "Choose the session's model folder"), start)

    def apply_look(self, theme: str, colormap: str, layout: bytes, geometry: bytes) -> None:
        """Theme, colormap, dock layout and geometry as a session file gives them (an empty or
        unknown one is left as it is)."""
        if theme in THEMES:
            self.set_theme(theme)
        if colormap in SEQUENTIAL_COLORMAPS:
            self.set_colormap(colormap)
        if geometry:
            self.restoreGeometry(QtCore.QByteArray(geometry))
        if layout and self.restore_layout(QtCore.QByteArray(layout)):
            self._needs_default_layout = False

    def open_model_dialog(self) -> None:
        start = str((self.model_path or default_model()).parent)
        title = translate("main_window", "Open model bundle (a folder with config.json, model.safetensors…)")
        path = QtWidgets.QFileDialog.getExistingDirectory(self, title, start)
        if path:
            self.open_model(Path(path))

    def open_model(self, path: Path) -> None:
        """Open a bundle folder; the window switches when it has loaded (a later Open, or Cancel,
        drops this one), and keeps the open model when it fails."""
        self.session.open_model(Path(path))

    def _on_model_changed(self, bundle: Bundle | None) -> None:
        if bundle is None:
            self.status.show_model(None)
            return
        if self.message_bar.property("level") == "error":  # a model opened: the last failure is over
            self.clear_message()
        if bundle.path:
            self.model_path = Path(bundle.path)
            self.window_settings.add_recent(bundle.path)
        self.setWindowTitle(one_line(f"attnviz — {bundle.name}"))
        self.status.show_model(bundle)
        self._fit_to_model(bundle.config)
        if self._pending_run:  # the first sentence is decoded once the session has rebuilt
            self._pending_run = False
            QtCore.QTimer.singleShot(0, self.session.decode_to_end)

    def _fit_to_model(self, config: TransformerConfig) -> None:
        """Show what applies to the open model: the dock of a view that does not
        (:meth:`~attnviz.qt.views.spec.ViewSpec.applies`) is hidden, its View-menu entry disabled,
        and it comes back with a model it applies to; an encoder-only model has no decoding (no
        top-k list, token chips or Decode menu)."""
        decodes = config.kind != "encoder-only"
        self.docks.fit_to_model(config, decodes)
        self.chips.setVisible(decodes)
        self.menus.decode_menu.menuAction().setEnabled(decodes)

    def _load_examples(self) -> list:
        from attnviz.core.data.examples import load_examples

        examples = list(load_examples())
        self.input_bar.set_examples(examples)
        return examples

    # -- updates --------------------------------------------------------------------------------
    def _on_decoding_changed(self) -> None:
        self._update_actions()
        self.chips.show_session(self.session)
        self.topk_panel.show_session(self.session)

    @property
    def frames(self) -> dict:
        """Each view's frame (its view or its empty state), by view name."""
        return self.views.frames

    def _update_actions(self) -> None:
        self.acts.update()
        self.status.show_step()

    def _on_grid_clicked(self, layer: int, head: int) -> None:
        """The linked selection has moved the head detail already; bring it to the front."""
        dock = self.docks["headDetailDock"]
        dock.show()
        dock.raise_()

    def show_message(self, level: str, text: str) -> None:
        """A one-line message in the message bar and the status bar, shown as plain text."""
        text = one_line(text)
        colors = {"error": ("#fdecea", "#8c1d18"), "warning": ("#fff4e5", "#7a4a00"), "info": ("#e8f1fd", "#174ea6")}
        bg, fg = colors.get(level, colors["info"])
        if self.message_bar.property("level") != level:  # a new style sheet lays the window out again: only for another colour
            self.message_bar.setStyleSheet(f"QLabel#messageBar {{ background: {bg}; color: {fg}; }}")
        if self.message_bar.text() != text:
            self.message_bar.setText(text)
        self.message_bar.setProperty("level", level)
        self.message_bar.show()
        self.statusBar().showMessage(text, 8000)

    def clear_message(self) -> None:
        """The message belongs to the input or action that caused it: the next one clears it."""
        if not (self.message_bar.isVisibleTo(self) or self.message_bar.text()):
            return
        self.statusBar().clearMessage()
        self.message_bar.hide()
        self.message_bar.setText("")
        self.message_bar.setProperty("level", None)

    # -- views: colormap, theme, active view, export -----------------------------------------------
    def connect_view(self, view: QtWidgets.QWidget) -> None:
        """Clicks and focus in ``view`` (and its children) make it the active view."""
        view.installEventFilter(self)
        for child in view.findChildren(QtWidgets.QWidget):
            child.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if event.type() in (QtCore.QEvent.Type.MouseButtonPress, QtCore.QEvent.Type.FocusIn, QtCore.QEvent.Type.ContextMenu):
            w = obj
            while w is not None and not hasattr(w, "figure_data"):
                w = w.parentWidget()
            if w is not None:
                self._active_view = w
        return False

    def active_view(self) -> QtWidgets.QWidget:
        return self._active_view if self._active_view is not None else self.grid

    def set_colormap(self, name: str) -> None:
        self.colormap_name = name
        self.menus.show_colormap(name)
        for v in self.views.all():
            try:
                v.set_colormap(name)
            except Exception:  # noqa: BLE001 - unknown colormap names fall back to the default
                pass

    def set_theme(self, name: str) -> None:
        self.theme_name = name
        self.menus.show_theme(name)
        apply_theme(name)
        for v in self.views.all():
            v.set_theme(name)

    def set_decode_as_you_type(self, on: bool) -> None:
        self.session.set_decode_as_you_type(on)
        with QtCore.QSignalBlocker(self.acts.as_you_type):
            self.acts.as_you_type.setChecked(bool(on))

    # -- geometry, dock layout ----------------------------------------------------------------------
    def resize_to_default(self) -> None:
        """:data:`DEFAULT_SIZE`, or less where the screen is smaller."""
        self.resize(fitting_size(DEFAULT_SIZE, self.screen()))

    def layout_state(self) -> QtCore.QByteArray:
        """The docks' layout (by their objectNames), stamped with :data:`LAYOUT_VERSION`."""
        return self.saveState(LAYOUT_VERSION)

    def restore_layout(self, state: QtCore.QByteArray) -> bool:
        """Restore a layout of :meth:`layout_state`; False (nothing changed) for one of another
        version, whose docks may have other names."""
        return self.restoreState(state, LAYOUT_VERSION)

    def fits_screen(self) -> bool:
        """The window's frame lies inside its screen's available geometry."""
        screen = self.screen()
        return screen is None or screen.availableGeometry().contains(self.frameGeometry())

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self._needs_default_layout:
            self._needs_default_layout = False
            self.docks.default_layout()
        for ms in (0, 300):  # once laid out, and again once a restored layout has settled
            QtCore.QTimer.singleShot(ms, self, self.docks.tidy_tab_bars)

    # -- drag and drop, close -----------------------------------------------------------------------
    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802 - Qt API
        urls = event.mimeData().urls()
        path = Path(urls[0].toLocalFile()) if urls and urls[0].isLocalFile() else None
        if path is not None and (path.is_dir() or path.suffix == SUFFIX):
            event.acceptProposedAction()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802 - Qt API
        """A dropped folder opens as a model, a dropped ``.attnviz`` file as a session."""
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            path = Path(urls[0].toLocalFile())
            if path.suffix == SUFFIX and not path.is_dir():
                self.session_files.open(path)
            else:
                self.open_model(path)
            event.acceptProposedAction()

    def confirm_close(self) -> bool:
        """True unless a training run is in progress and the user keeps it."""
        if not self.train.is_running():
            return True
        answer = QtWidgets.QMessageBox.question(
            self, translate("main_window", "Training in progress"),
            translate("main_window", "A training run is in progress. Stop it and quit? The last finished epoch's checkpoint is kept."),
            QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.No,
            QtWidgets.QMessageBox.StandardButton.No,
        )
        return answer == QtWidgets.QMessageBox.StandardButton.Yes

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 - Qt API
        if getattr(self, "_closing_for", None) is None and not self.confirm_close():
            event.ignore()
            return
        start = time.monotonic()
        self.session.stop_run()
        self.train.shutdown(CLOSE_WAIT_S)
        left = lambda: max(0.0, CLOSE_WAIT_S - (time.monotonic() - start))  # one budget for all of them
        self.session.wait_for_workers(int(left() * 1000))
        stop_workers(left())  # the views' own (the norm-batch measurement, …): joined, not left running
        self.window_settings.write()
        event.accept()
