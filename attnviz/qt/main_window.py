"""The main window: wiring only. The session owns the state; each panel lives in its own module."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.analysis.norms import placement_formula
from attnviz.core.bundle import Bundle
from attnviz.core.decoding.strategies import BeamSearch
from attnviz.core.model.config import KIND_NOTES, NORM_NAMES, TransformerConfig
from attnviz.paths import default_model
from attnviz.qt.console import console_action
from attnviz.qt.core_text import ablation_name, heads_text, strategy_text
from attnviz.qt.decode_panel import QtInputBar, QtStepBar, QtTokenChips, QtTopKPanel
from attnviz.qt.help import show_about, show_shortcuts
from attnviz.qt.i18n import LANGUAGES, SETTING, current_language, install, translate
from attnviz.qt.interpreter import freeze_survivors
from attnviz.qt.presentation import PresentationMode
from attnviz.qt.session import Session, one_line
from attnviz.qt.session_file import SessionFiles, capture
from attnviz.qt.state import SUFFIX, AppState
from attnviz.qt.theme import THEMES, apply_theme
from attnviz.qt.tour import other_tour, other_tour_words, raise_view, start_tour, tour_for
from attnviz.qt.tour_recorder import add_tour_menu
from attnviz.qt.train.panel import TrainPanel
from attnviz.qt.views.registry import ViewSet
from attnviz.qt.widgets.colormaps import SEQUENTIAL_COLORMAPS
from attnviz.qt.widgets.plain_text import ElidedLabel, menu_text, plain_label
from attnviz.qt.window_exports import WindowExports
from attnviz.qt.workers import stop_workers

MAX_RECENT = 8
CLOSE_WAIT_S = 1.0  # how long closing the window waits for a stopped training run
DEFAULT_SIZE = QtCore.QSize(1400, 900)  # the window's size when the screen has room for it
AREA = QtCore.Qt.DockWidgetArea
TALL = 820  # a window at least this tall has room for the bottom docks under the grid
GRID_ROOM = 532  # px the grid keeps in the middle: four tiles of 48+ px, its row labels and colour bar (a projector's 1024 px included)
RIGHT_ROOM = 480  # px the right docks keep beside the top-k list; narrower, the list joins their tabs
LAYOUT_VERSION = 2  # of the saved dock layout: 2 since the docks are named by the views' modules (headDetailDock, compareDock)


def placement_text(placement: str) -> str:
    """``pre``/``post`` as the window names it: pre-norm or post-norm."""
    return translate("main_window", "pre-norm") if placement == "pre" else translate("main_window", "post-norm")


def norm_formula(config: TransformerConfig) -> str:
    """Where the model normalizes, as a formula: pre-norm x + Sublayer(LN(x)) or post-norm
    LN(x + Sublayer(x)); BN for BatchNorm, RMS for RMSNorm."""
    name = NORM_NAMES[config.norm]
    return translate("main_window", "{norm}, {placement}: {formula}").format(
        norm=name, placement=placement_text(config.norm_placement), formula=placement_formula(config.norm, config.norm_placement))


def config_text(c: TransformerConfig) -> str:
    """The model's sizes and norm in one line, for the status bar."""
    return translate("main_window", "d_model {d_model}, {heads} heads, {encoder}+{decoder} layers, d_ff {d_ff}, {norm} ({placement}), "
                                    "vocab {source}/{target}").format(
        d_model=c.d_model, heads=c.n_heads, encoder=c.n_encoder_layers, decoder=c.n_decoder_layers, d_ff=c.d_ff,
        norm=NORM_NAMES[c.norm], placement=placement_text(c.norm_placement),
        source=c.src_vocab_size, target=c.tgt_vocab_size)


KIND_NOTE_TEXTS = (  # the core's KIND_NOTES, marked for the translators
    QT_TRANSLATE_NOOP("main_window", "; decoder-only: no encoder, no cross-attention (continues a prompt)"),
    QT_TRANSLATE_NOOP("main_window", "; encoder-only: no decoder, no decoding (predicts masked tokens)"),
)


def kind_note(kind: str) -> str:
    """What the status bar adds for a model of one stack (``config.kind``): what it has not."""
    return translate("main_window", KIND_NOTES[kind]) if KIND_NOTES[kind] else ""


def theme_name_text(name: str) -> str:
    """A theme of :data:`THEMES` as the View menu names it."""
    return {"light": translate("main_window", "Light"), "dark": translate("main_window", "Dark")}.get(name, name)


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
        self._needs_default_layout = True
        self.resize(fitting_size(DEFAULT_SIZE, self.screen()))  # lay the docks out at a realistic size from the start
        self.create_actions()
        self.create_central()
        self.create_docks()
        self.create_menus()
        self.create_tool_bar()
        self.create_status_bar()
        self.session.modelChanged.connect(self._on_model_changed)
        self.session.modelChanged.connect(freeze_survivors)
        self.session.decodingChanged.connect(self._on_decoding_changed)
        self.session.busyChanged.connect(self._on_busy)
        self.session.message.connect(self.show_message)
        self.views.failed.connect(lambda text: self.show_message("error", text))
        self.views["model-map"].viewRequested.connect(lambda name: raise_view(self, name))  # a block clicked on the map: its view in front
        self.session.runFinished.connect(self._update_actions)
        self.read_settings()
        examples = self._load_examples()
        first = src if src is not None else (examples[0].source if examples else "我喜欢吃鱼。")
        self.input_bar.set_texts(first, tgt or "")
        self.session.keep_inputs(first, tgt or "")
        self.session.actionStarted.connect(self.clear_message)
        self._pending_run = src is None or not tgt  # decode the first sentence to the end once loaded
        self.model_path: Path | None = None  # the open model's folder: set when a load has succeeded
        self.session_files = SessionFiles(self)
        if state is not None and self.session_files.restore(state):
            self._pending_run = False  # the state says what is decoded
        elif session_file is None or not self.session_files.open(Path(session_file)):
            self.open_model(Path(model) if model else default_model())
        else:
            self._pending_run = False  # the session file says what is decoded
        self._update_actions()

    # -- construction ----------------------------------------------------------------------
    def create_actions(self) -> None:
        self._create_file_actions()
        self._create_decode_actions()
        self._create_help_actions()

    def _act(self, text: str, slot, shortcut=None, tip: str = "", name: str = "", icon=None) -> QtGui.QAction:
        a = QtGui.QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QtGui.QKeySequence(shortcut))
        a.setStatusTip(tip)
        a.setToolTip(f"{tip} ({a.shortcut().toString()})" if shortcut else tip)
        a.triggered.connect(slot)
        if name:
            a.setObjectName(name)
        if icon is not None:
            a.setIcon(self.style().standardIcon(icon))
        return a

    def _create_file_actions(self) -> None:
        act, sp, keys = self._act, QtWidgets.QStyle.StandardPixmap, QtGui.QKeySequence.StandardKey
        self.exports = WindowExports(self)  # File → Export's entries
        self.open_act = act(translate("main_window", "&Open Model Bundle…"), self.open_model_dialog, keys.Open,
                            translate("main_window", "Open a model bundle folder"), "openAction", sp.SP_DirOpenIcon)
        self.export_fig_act = act(translate("main_window", "Export &Figure…"), self.exports.figure, "Ctrl+E",
                                  translate("main_window", "Export the current view as PNG, SVG or PDF"), "exportFigureAction", sp.SP_DialogSaveButton)
        self.export_data_act = act(translate("main_window", "Export &Data…"), self.exports.data, "Ctrl+Shift+E",
                                   translate("main_window", "Export the data behind the current view (CSV or NPZ)"), "exportDataAction")
        self.export_anim_act = act(translate("main_window", "Export A&nimation…"), self.exports.animation, None,
                                   translate("main_window", "The current view, one frame per decoding step, as a GIF (or MP4)"), "exportAnimationAction")
        self.export_training_act = act(translate("main_window", "Export &Training Animation…"), self.exports.training_animation, None,
                                       translate("main_window", "The open model's probe sentence, one frame per training snapshot, as a GIF (or MP4)"),
                                       "exportTrainingAnimationAction")
        self.export_page_act = act(translate("main_window", "Export &Web Page…"), self.exports.web_page, None,
                                   translate("main_window", "One HTML file to hand out: the sentence, a step slider and the views, readable offline"),
                                   "exportWebPageAction")
        self.export_all_act = act(translate("main_window", "Export &All Heads…"), self.exports.all_heads, None,
                                  translate("main_window", "One figure per layer and head, for the chosen attention kind"), "exportAllAction")
        self.save_session_act = act(translate("main_window", "&Save Session…"), lambda: self.session_files.save_dialog(), keys.Save,
                                    translate("main_window", "Save the whole window (model, sentences, decoded steps, selections, layout) as a session file"),
                                    "saveSessionAction")
        self.open_session_act = act(translate("main_window", "Open &Session…"), lambda: self.session_files.open_dialog(), "Ctrl+Shift+O",
                                    translate("main_window", "Open a session file: the window as it was saved"), "openSessionAction")
        self.quit_act = act(translate("main_window", "&Quit"), self.close, keys.Quit, translate("main_window", "Quit attnviz"), "quitAction")

    def _create_decode_actions(self) -> None:
        act, sp, key = self._act, QtWidgets.QStyle.StandardPixmap, QtCore.Qt.Key
        self.step_act = act(translate("main_window", "Step"), self.session.step, key.Key_Right,
                            translate("main_window", "Decode the next token"), "stepAction", sp.SP_MediaSeekForward)
        self.back_act = act(translate("main_window", "Back"), self.session.back, key.Key_Left,
                            translate("main_window", "Undo the last token"), "backAction", sp.SP_MediaSeekBackward)
        self.run_act = act(translate("main_window", "Run to End"), self.session.run_to_end, key.Key_End,
                           translate("main_window", "Decode until EOS or the maximum length"), "runAction", sp.SP_MediaSkipForward)
        self.reset_act = act(translate("main_window", "Reset"), self.session.reset, key.Key_Home,
                             translate("main_window", "Back to SOS"), "resetAction", sp.SP_MediaSkipBackward)
        for a in (self.step_act, self.back_act, self.run_act, self.reset_act):
            a.setShortcutContext(QtCore.Qt.ShortcutContext.WindowShortcut)
            self._add_field_shortcut(a)
        self.as_you_type_act = act(translate("main_window", "Decode as You &Type"), self.set_decode_as_you_type, None,
                                   translate("main_window", "Decode a new sentence (typed or chosen) to the end at once"), "decodeAsYouTypeAction")
        self.as_you_type_act.setCheckable(True)
        self.as_you_type_act.setChecked(True)
        self.presentation = PresentationMode(self, {"step": self.step_act, "back": self.back_act, "run": self.run_act, "reset": self.reset_act})
        self.presentation_act = act(translate("main_window", "&Presentation"), self.presentation.toggle, key.Key_F11,
                                    translate("main_window", "The view you last clicked fills the screen in larger type, with the step controls (Esc leaves)"),
                                    "presentationAction")

    def _create_help_actions(self) -> None:
        """About, the shortcuts, and the tour: in the interface's language (Help → Tour), and in the
        other one (named in that language, as View → Language names it)."""
        act, language = self._act, current_language()
        other = other_tour(language)
        self.about_act = act(translate("main_window", "&About attnviz"), lambda: show_about(self), None,
                             translate("main_window", "About attnviz and its data"), "aboutAction")
        self.keys_act = act(translate("main_window", "&Keyboard Shortcuts"), lambda: show_shortcuts(self), None,
                            translate("main_window", "List the keyboard shortcuts"), "shortcutsAction")
        self.tour_act = act(translate("main_window", "&Tour"), lambda: start_tour(self, tour_for(language)), None,
                            translate("main_window", "Walk through the tutorial's ideas on the live model, one stop at a time"), "tourAction")
        text, tip = other_tour_words(other)
        self.tour_other_act = act(text, lambda: start_tour(self, other), None, tip, "tourOtherLanguageAction")

    @staticmethod
    def _add_field_shortcut(action: QtGui.QAction) -> None:
        """The plain key steps from anywhere but a text field, which keeps it for its cursor;
        Alt + the key steps from a text field too (the tooltip says both)."""
        key = action.shortcut()
        alt = QtGui.QKeySequence(QtCore.Qt.KeyboardModifier.AltModifier | key[0].key())
        action.setShortcuts([key, alt])
        tip = action.statusTip()
        action.setToolTip(translate("main_window", "{tip} ({key}; in a text field {alt})").format(tip=tip, key=key.toString(), alt=alt.toString()))

    def create_central(self) -> None:
        central = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.input_bar = QtInputBar(self.session)
        self.step_bar = QtStepBar(self.session, {"step": self.step_act, "back": self.back_act, "run": self.run_act, "reset": self.reset_act})
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
        self._connect_view(self.grid)
        self.grid.tileClicked.connect(self._on_grid_clicked)
        self.grid.headToggled.connect(self.session.toggle_head)
        self.grid.ablationKindChosen.connect(self.session.set_ablation_kind)

    def _dock(self, title: str, widget: QtWidgets.QWidget, name: str, area, tab_with: QtWidgets.QDockWidget | None = None) -> QtWidgets.QDockWidget:
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        if tab_with is not None:
            self.tabifyDockWidget(tab_with, dock)
        dock.visibilityChanged.connect(lambda visible, w=widget: visible and self.views.bring_up_to_date(w))  # a raised tab catches up
        self.docks[name] = dock
        self._connect_view(widget)
        return dock

    def create_docks(self) -> None:
        """The top-k list on the left; the registry's views, tabbed, on the right (full height) and
        at the bottom (under the grid and the top-k list), however many there are."""
        self.docks: dict[str, QtWidgets.QDockWidget] = {}
        self._unfit_docks: set[str] = set()  # docks hidden because their view does not apply to the open model
        self.setCorner(QtCore.Qt.Corner.TopRightCorner, AREA.RightDockWidgetArea)
        self.setCorner(QtCore.Qt.Corner.BottomRightCorner, AREA.RightDockWidgetArea)
        self.setCorner(QtCore.Qt.Corner.BottomLeftCorner, AREA.BottomDockWidgetArea)
        self.setDockOptions(self.dockOptions() | QtWidgets.QMainWindow.DockOption.AllowTabbedDocks)
        self.topk_panel = QtTopKPanel()
        self.topk_panel.forceRequested.connect(self.session.force)
        self.topk_dock = self._dock(translate("main_window", "Top-k next tokens"), self.topk_panel, "topkDock", AREA.LeftDockWidgetArea)
        self.area_docks: dict[str, list[QtWidgets.QDockWidget]] = {}
        for area, where in (("right", AREA.RightDockWidgetArea), ("bottom", AREA.BottomDockWidgetArea)):
            docks: list[QtWidgets.QDockWidget] = []
            extra = [(translate("main_window", "Train"), self._train_scroll(), "trainDock")] if area == "bottom" else []
            for title, widget, name in self.views.docks(area) + extra:
                docks.append(self._dock(title, widget, name, where, docks[-1] if docks else None))
            if docks:
                docks[0].raise_()
            self.area_docks[area] = docks
        self.bottom_docks = self.area_docks["bottom"]
        self.head_dock = self.docks["headDetailDock"]

    def _train_scroll(self) -> QtWidgets.QScrollArea:
        scroll = QtWidgets.QScrollArea(objectName="trainScroll")  # the panel is tall; the dock need not be
        scroll.setWidget(self.train)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        return scroll

    def create_menus(self) -> None:
        mb = self.menuBar()
        file_menu = mb.addMenu(translate("main_window", "&File"))
        file_menu.addAction(self.open_act)
        self.recent_menu = file_menu.addMenu(translate("main_window", "Open &Recent"))
        self.recent_menu.setObjectName("recentMenu")
        file_menu.addSeparator()
        file_menu.addAction(self.open_session_act)
        file_menu.addAction(self.save_session_act)
        file_menu.addSeparator()
        file_menu.addAction(self.export_fig_act)
        file_menu.addAction(self.export_data_act)
        file_menu.addAction(self.export_all_act)
        file_menu.addAction(self.export_anim_act)
        file_menu.addAction(self.export_training_act)
        file_menu.addAction(self.export_page_act)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_act)
        self.view_menu = mb.addMenu(translate("main_window", "&View"))
        for dock in self.docks.values():
            self.view_menu.addAction(dock.toggleViewAction())
        self.view_menu.addSeparator()
        self.view_menu.addAction(self.presentation_act)
        self.view_menu.addAction(console_action(self))
        cmap_menu = self.view_menu.addMenu(translate("main_window", "&Colormap"))
        self.cmap_group = QtGui.QActionGroup(self)
        for name in SEQUENTIAL_COLORMAPS:
            a = cmap_menu.addAction(name)
            a.setCheckable(True)
            a.setData(name)
            self.cmap_group.addAction(a)
        self.cmap_group.triggered.connect(lambda a: self.set_colormap(a.data()))
        theme_menu = self.view_menu.addMenu(translate("main_window", "&Theme"))
        self.theme_group = QtGui.QActionGroup(self)
        theme_menu.setToolTipsVisible(True)
        for name in THEMES:
            a = theme_menu.addAction(theme_name_text(name))
            a.setToolTip(translate("main_window", "The whole window and its plots in the {theme} theme").format(theme=theme_name_text(name).lower()))
            a.setCheckable(True)
            a.setData(name)
            self.theme_group.addAction(a)
        self.theme_group.triggered.connect(lambda a: self.set_theme(a.data()))
        self._create_language_menu()
        decode = self.decode_menu = mb.addMenu(translate("main_window", "&Decode"))
        for a in (self.step_act, self.back_act, self.run_act, self.reset_act):
            decode.addAction(a)
        decode.addSeparator()
        decode.addAction(self.as_you_type_act)
        strat = decode.addMenu(translate("main_window", "&Strategy"))
        for i in range(self.step_bar.strategy_combo.count()):
            a = strat.addAction(self.step_bar.strategy_combo.itemText(i))
            a.triggered.connect(lambda _=False, i=i: self.step_bar.strategy_combo.setCurrentIndex(i))
        help_menu = mb.addMenu(translate("main_window", "&Help"))
        help_menu.addAction(self.tour_act)
        help_menu.addAction(self.tour_other_act)
        help_menu.addSeparator()
        help_menu.addAction(self.keys_act)
        help_menu.addAction(self.about_act)
        add_tour_menu(self)  # Tour → Record a Tour, Open a Tour File (before Help)

    def _create_language_menu(self) -> None:
        menu = self.view_menu.addMenu(translate("main_window", "&Language"))
        menu.setObjectName("languageMenu")
        self.language_group = QtGui.QActionGroup(self)
        for code, name in LANGUAGES.items():
            a = menu.addAction(name)  # each language's name in itself: found whatever the interface's language
            a.setObjectName(f"language_{code}")
            a.setCheckable(True)
            a.setChecked(code == current_language())
            a.setData(code)
            self.language_group.addAction(a)
        self.language_group.triggered.connect(lambda a: self.switch_language(a.data()))

    def switch_language(self, code: str) -> QtWidgets.QMainWindow | None:
        """The interface in ``code`` from now on (remembered): the window is built again in that
        language and restored to this one's state (model, sentences, steps, selections, layout);
        -> the new window (None when nothing changed or a running training is kept)."""
        if code == current_language() or code not in LANGUAGES or not self.confirm_close():
            self.language_group.actions()[list(LANGUAGES).index(current_language())].setChecked(True)
            return None
        state = capture(self)
        self.settings.setValue(SETTING, code)
        self.write_settings()
        install(code)
        successor = MainWindow(settings=self.settings, state=state)
        successor.show()
        app = QtWidgets.QApplication.instance()
        app._attnviz_window = successor  # kept alive by the application, as the first window is by run_app
        self._closing_for = successor
        self.close()
        return successor

    def create_tool_bar(self) -> None:
        tb = self.addToolBar(translate("main_window", "Main"))
        tb.setObjectName("mainToolBar")
        tb.addAction(self.open_act)
        tb.addSeparator()
        for a in (self.reset_act, self.back_act, self.step_act, self.run_act):
            tb.addAction(a)
        tb.addSeparator()
        tb.addAction(self.export_fig_act)

    def create_status_bar(self) -> None:
        sb = self.statusBar()
        self.model_label = ElidedLabel("", "modelLabel")  # the folder's name: plain text, cut to the room
        self.norm_label = plain_label("", "normLabel")
        self.norm_label.setToolTip(translate("main_window", "Where the open model normalizes: LN = LayerNorm, BN = BatchNorm"))
        self.step_label = plain_label("", "stepLabel")
        self.step_label.setToolTip(translate("main_window", "Steps and positions are counted from 1, as in every view"))
        self.busy = QtWidgets.QProgressBar(objectName="busyIndicator")
        self.busy.setRange(0, 0)
        self.busy.setMaximumWidth(120)
        self.busy.hide()
        self.cancel_load_button = QtWidgets.QToolButton(objectName="cancelLoadButton")
        self.cancel_load_button.setText(translate("main_window", "Cancel"))
        self.cancel_load_button.setToolTip(translate("main_window", "Stop opening the model; the open model stays"))
        self.cancel_load_button.clicked.connect(lambda: self.session.cancel_load())
        self.cancel_load_button.hide()
        self.ablation_label = plain_label("", "ablationLabel")
        self.ablation_label.setToolTip(translate("main_window", "Heads taken out of the model in every run shown (Ablate in the grid)"))
        self.clear_ablation_button = QtWidgets.QToolButton(objectName="clearAblationButton", text=translate("main_window", "Clear"))
        self.clear_ablation_button.setToolTip(translate("main_window", "Give every ablated head back: the model as trained"))
        self.clear_ablation_button.clicked.connect(lambda: self.session.set_ablation(HeadSet(frozenset(), self.session.ablation.kind)))
        self.session.ablationChanged.connect(self._show_ablation)
        self._show_ablation()
        sb.addWidget(self.model_label, 1)
        sb.addPermanentWidget(self.ablation_label)
        sb.addPermanentWidget(self.clear_ablation_button)
        sb.addPermanentWidget(self.norm_label)
        sb.addPermanentWidget(self.step_label)
        sb.addPermanentWidget(self.busy)
        sb.addPermanentWidget(self.cancel_load_button)

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
            self.model_label.set_full_text(translate("main_window", "No model"))
            self.norm_label.setText("")
            return
        if self.message_bar.property("level") == "error":  # a model opened: the last failure is over
            self.clear_message()
        if bundle.path:
            self.model_path = Path(bundle.path)
            self._add_recent(bundle.path)
        self.setWindowTitle(one_line(f"attnviz — {bundle.name}"))
        c = bundle.config
        self.model_label.set_full_text(one_line(f"{bundle.name}: {config_text(c)}{kind_note(c.kind)}"), tip=str(bundle.path or ""))
        self.norm_label.setText(norm_formula(c))
        self._fit_to_model(c)
        if self._pending_run:  # the first sentence is decoded once the session has rebuilt
            self._pending_run = False
            QtCore.QTimer.singleShot(0, self.session.decode_to_end)

    def _fit_to_model(self, config: TransformerConfig) -> None:
        """Show what applies to the open model: the dock of a view that does not
        (:meth:`~attnviz.qt.views.spec.ViewSpec.applies`) is hidden, its View-menu entry disabled,
        and it comes back with a model it applies to; an encoder-only model has no decoding (no
        top-k list, token chips or Decode menu)."""
        decodes = config.kind != "encoder-only"
        fits = {spec.dock_name: spec.applies(config) for spec in self.views.specs.values() if spec.dock_name}
        fits[self.topk_dock.objectName()] = decodes
        for name, applies in fits.items():
            dock = self.docks[name]
            if not applies and not dock.isHidden():
                self._unfit_docks.add(name)
                dock.hide()
            elif applies and name in self._unfit_docks:
                self._unfit_docks.discard(name)
                dock.show()
            dock.toggleViewAction().setEnabled(applies)
        self.chips.setVisible(decodes)
        self.decode_menu.menuAction().setEnabled(decodes)

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
        s = self.session
        self.step_act.setEnabled(s.can_step())
        self.back_act.setEnabled(s.can_back())
        self.run_act.setEnabled(s.can_step())
        self.reset_act.setEnabled(s.can_back())
        has = s.current is not None
        self.export_fig_act.setEnabled(has)
        self.export_data_act.setEnabled(has)
        self.export_all_act.setEnabled(has)
        self.export_anim_act.setEnabled(has)
        self.export_training_act.setEnabled(s.bundle is not None and bool(s.bundle.meta.get("snapshots")))
        self.export_page_act.setEnabled(has)
        self.step_label.setText(self._step_text())

    def _step_text(self) -> str:
        """The status bar's step: where decoding is, with which strategy, and whether it is done."""
        s = self.session
        if s.forced is not None:
            return translate("main_window", "teacher-forced · position {position}/{n} · mean loss {loss:.3f} · accuracy {accuracy:.0%}").format(
                position=s.forced_cursor + 1, n=len(s.forced.steps), loss=s.forced.loss, accuracy=s.forced.accuracy)
        d = s.decoding
        if d is None:
            return ""
        state = (translate("main_window", "finished") if d.finished else translate("main_window", "running") if s.running
                 else translate("main_window", "ready"))
        strategy = strategy_text(d.strategy)
        if d.steps and d.steps[-1].forced and len(d.beams()) <= 1 and isinstance(d.strategy, BeamSearch):
            strategy += translate("main_window", " · forced: one path until the next step")
        return translate("main_window", "step {step}/{max} · {strategy} · {state}").format(
            step=len(d.steps), max=d.max_len, strategy=strategy, state=state)

    def _show_ablation(self) -> None:
        a = self.session.ablation
        self.ablation_label.setText(translate("main_window", "ablated ({kind}): {heads}").format(kind=ablation_name(a.kind), heads=heads_text(a)) if a else "")
        self.ablation_label.setVisible(bool(a))
        self.clear_ablation_button.setVisible(bool(a))

    def _on_grid_clicked(self, layer: int, head: int) -> None:
        """The linked selection has moved the head detail already; bring it to the front."""
        self.head_dock.show()
        self.head_dock.raise_()

    def _on_busy(self, busy: bool, what: str) -> None:
        self.busy.setVisible(busy)
        self.cancel_load_button.setVisible(busy and self.session.loading)
        if busy:
            self.statusBar().showMessage(one_line(what))
        else:
            self.statusBar().clearMessage()

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
    def _connect_view(self, view: QtWidgets.QWidget) -> None:
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
        for a in self.cmap_group.actions():
            a.setChecked(a.data() == name)
        for v in self.views.all():
            try:
                v.set_colormap(name)
            except Exception:  # noqa: BLE001 - unknown colormap names fall back to the default
                pass

    def set_theme(self, name: str) -> None:
        self.theme_name = name
        for a in self.theme_group.actions():
            a.setChecked(a.data() == name)
        apply_theme(name)
        for v in self.views.all():
            v.set_theme(name)

    def set_decode_as_you_type(self, on: bool) -> None:
        self.session.set_decode_as_you_type(on)
        with QtCore.QSignalBlocker(self.as_you_type_act):
            self.as_you_type_act.setChecked(bool(on))

    # -- settings: geometry, dock layout, colormap, theme, recent models ------------------------------
    def read_settings(self) -> None:
        s = self.settings
        geometry = s.value("window/geometry")
        if geometry is None or not self.restoreGeometry(geometry) or not self.fits_screen():
            self.resize(fitting_size(DEFAULT_SIZE, self.screen()))
        state = s.value("window/state")
        self._needs_default_layout = state is None or not self.restore_layout(state)
        self.set_colormap(str(s.value("view/colormap", SEQUENTIAL_COLORMAPS[0])))
        self.set_theme(str(s.value("view/theme", "light")))
        self.set_decode_as_you_type(str(s.value("decode/as_you_type", "true")).lower() == "true")
        self._update_recent_menu()

    def write_settings(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.layout_state())
        s.setValue("view/colormap", self.colormap_name)
        s.setValue("view/theme", self.theme_name)
        s.setValue("decode/as_you_type", "true" if self.session.decode_as_you_type else "false")
        s.sync()

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

    def default_layout(self) -> None:
        """First run: the top-k list as wide as it reads and the right docks (tabbed, full height)
        half the width (at most 700 px). Where the grid would get under :data:`GRID_ROOM` beside
        both (a projector's 1024 px), the top-k list is a tab of the right docks instead. The bottom docks (tabbed) take about 40% of a tall window's
        height; in a short one (under :data:`TALL` px) they join the right docks' tabs, so the
        grid keeps its height and every panel gets the full height."""
        v, h = QtCore.Qt.Orientation.Vertical, QtCore.Qt.Orientation.Horizontal
        right, bottom = self.area_docks["right"], self.area_docks["bottom"]
        if right and bottom and self.height() < TALL:
            for dock in bottom:
                self.tabifyDockWidget(right[-1], dock)
            right[0].raise_()
            bottom = []
        left = self.topk_panel.minimumSizeHint().width() + 24
        width = min(max(360, self.width() // 2), 700)
        room = self.width() - left - GRID_ROOM  # what the right docks may take beside the top-k list and the grid
        if right and room < RIGHT_ROOM:  # a projector's 1024 px: the top-k list joins the right docks' tabs
            self.addDockWidget(AREA.RightDockWidgetArea, self.topk_dock)
            self.tabifyDockWidget(right[0], self.topk_dock)
            right[0].raise_()
            self.resizeDocks(right[:1], [min(width, self.width() - GRID_ROOM)], h)
        else:
            self.resizeDocks([self.topk_dock] + right[:1], [left, min(width, room)][: 1 + len(right[:1])], h)
        if bottom:
            self.resizeDocks(bottom[:1], [max(240, int(self.height() * 0.4))], v)

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self._needs_default_layout:
            self._needs_default_layout = False
            self.default_layout()
        for ms in (0, 300):  # once laid out, and again once a restored layout has settled
            QtCore.QTimer.singleShot(ms, self, self._tidy_tab_bars)

    def _tidy_tab_bars(self) -> None:
        """Dock tabs show their whole titles (scroll buttons when there are many). Qt can leave the
        tab bar of an earlier stage of a tabified dock group on screen (seen with Qt 6.10, after a
        layout is restored: a copy at the window's corner, over the menus): hide a bar that does not
        sit against the dock its current tab shows."""
        for b in (b for b in self.findChildren(QtWidgets.QTabBar) if b.parent() is self and b.isVisibleTo(self)):
            b.setElideMode(QtCore.Qt.TextElideMode.ElideNone)
            b.setUsesScrollButtons(True)
            if self._stray(b):
                b.hide()

    def _stray(self, bar: QtWidgets.QTabBar) -> bool:
        """``bar`` is not against (above or below, overlapping it) the visible dock of its current tab."""
        title = bar.tabText(bar.currentIndex())
        dock = next((d for d in self.docks.values() if d.windowTitle() == title and d.isVisible()), None)
        if dock is None:
            return True
        g, r = dock.geometry(), bar.geometry()
        against = min(abs(r.top() - g.bottom()), abs(r.bottom() - g.top())) <= 6
        return not (against and r.left() < g.right() and g.left() < r.right())

    def recent_models(self) -> list[str]:
        value = self.settings.value("recent/models", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: Path) -> None:
        items = [str(path)] + [p for p in self.recent_models() if p != str(path)]
        self.settings.setValue("recent/models", items[:MAX_RECENT])
        self._update_recent_menu()

    def _update_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.recent_models()
        for p in recent:
            a = self.recent_menu.addAction(menu_text(p))
            a.triggered.connect(lambda _=False, p=p: self.open_model(Path(p)))
        self.recent_menu.setEnabled(bool(recent))

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
        self.write_settings()
        event.accept()
