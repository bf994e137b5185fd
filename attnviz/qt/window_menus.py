"""The main window's menu bar (File, View, Decode, Tour, Help) and tool bar: :class:`WindowMenus`,
owned by the main window, which keeps the actions (:class:`~attnviz.qt.window_actions.WindowActions`),
the docks and what the choices change (colormap, theme, language, the open model)."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtGui, QtWidgets

from attnviz.qt.console import console_action
from attnviz.qt.i18n import LANGUAGES, current_language, translate
from attnviz.qt.theme import THEMES
from attnviz.qt.tour_recorder import add_tour_menu
from attnviz.qt.widgets.colormaps import SEQUENTIAL_COLORMAPS
from attnviz.qt.widgets.plain_text import menu_text


def theme_name_text(name: str) -> str:
    """A theme of :data:`THEMES` as the View menu names it."""
    return {"light": translate("main_window", "Light"), "dark": translate("main_window", "Dark")}.get(name, name)


def check_data(group: QtGui.QActionGroup, value: str) -> None:
    """Check the action of ``group`` whose data is ``value`` (and no other)."""
    for a in group.actions():
        a.setChecked(a.data() == value)


class WindowMenus:
    """``window``'s menus and tool bar; :meth:`show_recent` lists the recent models, and
    :meth:`show_colormap`, :meth:`show_theme` and :meth:`show_language` check the one in use."""

    def __init__(self, window: QtWidgets.QMainWindow):  # the main window (its actions, docks, step bar)
        self.window = window
        mb = window.menuBar()
        self._create_file_menu(mb)
        self.view_menu = mb.addMenu(translate("main_window", "&View"))
        self._create_view_menu()
        self._create_decode_menu(mb)
        self._create_help_menu(mb)
        add_tour_menu(window)  # Tour → Record a Tour, Open a Tour File (before Help)
        self._create_tool_bar()

    def _create_file_menu(self, mb: QtWidgets.QMenuBar) -> None:
        acts = self.window.acts
        file_menu = mb.addMenu(translate("main_window", "&File"))
        file_menu.addAction(acts.open)
        self.recent_menu = file_menu.addMenu(translate("main_window", "Open &Recent"))
        self.recent_menu.setObjectName("recentMenu")
        file_menu.addSeparator()
        file_menu.addAction(acts.open_session)
        file_menu.addAction(acts.save_session)
        file_menu.addSeparator()
        for a in (acts.export_figure, acts.export_data, acts.export_all, acts.export_animation, acts.export_training, acts.export_page):
            file_menu.addAction(a)
        file_menu.addSeparator()
        file_menu.addAction(acts.quit)

    def _create_view_menu(self) -> None:
        """The docks (shown or hidden), Presentation, the console, Colormap, Theme and Language."""
        w = self.window
        for dock in w.docks.values():
            self.view_menu.addAction(dock.toggleViewAction())
        self.view_menu.addSeparator()
        self.view_menu.addAction(w.acts.presentation)
        self.view_menu.addAction(console_action(w))
        cmap_menu = self.view_menu.addMenu(translate("main_window", "&Colormap"))
        self.cmap_group = QtGui.QActionGroup(w)
        for name in SEQUENTIAL_COLORMAPS:
            a = cmap_menu.addAction(name)
            a.setCheckable(True)
            a.setData(name)
            self.cmap_group.addAction(a)
        self.cmap_group.triggered.connect(lambda a: w.set_colormap(a.data()))
        self._create_theme_menu()
        self._create_language_menu()

    def _create_theme_menu(self) -> None:
        w = self.window
        theme_menu = self.view_menu.addMenu(translate("main_window", "&Theme"))
        self.theme_group = QtGui.QActionGroup(w)
        theme_menu.setToolTipsVisible(True)
        for name in THEMES:
            a = theme_menu.addAction(theme_name_text(name))
            a.setToolTip(translate("main_window", "The whole window and its plots in the {theme} theme").format(theme=theme_name_text(name).lower()))
            a.setCheckable(True)
            a.setData(name)
            self.theme_group.addAction(a)
        self.theme_group.triggered.connect(lambda a: w.set_theme(a.data()))

    def _create_language_menu(self) -> None:
        w = self.window
        menu = self.view_menu.addMenu(translate("main_window", "&Language"))
        menu.setObjectName("languageMenu")
        self.language_group = QtGui.QActionGroup(w)
        for code, name in LANGUAGES.items():
            a = menu.addAction(name)  # each language's name in itself: found whatever the interface's language
            a.setObjectName(f"language_{code}")
            a.setCheckable(True)
            a.setChecked(code == current_language())
            a.setData(code)
            self.language_group.addAction(a)
        self.language_group.triggered.connect(lambda a: w.switch_language(a.data()))

    def _create_decode_menu(self, mb: QtWidgets.QMenuBar) -> None:
        w = self.window
        decode = self.decode_menu = mb.addMenu(translate("main_window", "&Decode"))
        for a in (w.acts.step, w.acts.back, w.acts.run, w.acts.reset):
            decode.addAction(a)
        decode.addSeparator()
        decode.addAction(w.acts.as_you_type)
        strat = decode.addMenu(translate("main_window", "&Strategy"))
        combo = w.step_bar.strategy_combo
        for i in range(combo.count()):
            a = strat.addAction(combo.itemText(i))
            a.triggered.connect(lambda _=False, i=i: combo.setCurrentIndex(i))

    def _create_help_menu(self, mb: QtWidgets.QMenuBar) -> None:
        acts = self.window.acts
        help_menu = mb.addMenu(translate("main_window", "&Help"))
        help_menu.addAction(acts.tour)
        help_menu.addAction(acts.tour_other)
        help_menu.addSeparator()
        help_menu.addAction(acts.keys)
        help_menu.addAction(acts.about)

    def _create_tool_bar(self) -> None:
        acts = self.window.acts
        tb = self.window.addToolBar(translate("main_window", "Main"))
        tb.setObjectName("mainToolBar")
        tb.addAction(acts.open)
        tb.addSeparator()
        for a in (acts.reset, acts.back, acts.step, acts.run):
            tb.addAction(a)
        tb.addSeparator()
        tb.addAction(acts.export_figure)

    def show_recent(self, paths: list[str]) -> None:
        """File → Open Recent lists ``paths`` (the newest first); each opens its model."""
        self.recent_menu.clear()
        for p in paths:
            a = self.recent_menu.addAction(menu_text(p))
            a.triggered.connect(lambda _=False, p=p: self.window.open_model(Path(p)))
        self.recent_menu.setEnabled(bool(paths))

    def show_colormap(self, name: str) -> None:
        check_data(self.cmap_group, name)

    def show_theme(self, name: str) -> None:
        check_data(self.theme_group, name)

    def show_language(self, code: str) -> None:
        check_data(self.language_group, code)
