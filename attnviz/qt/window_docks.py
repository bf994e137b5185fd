"""The main window's docks: the top-k list, the registry's views and the training panel, by their
objectNames (:class:`WindowDocks`, owned by the main window), where they sit on a first run, which
of them apply to the open model, and their tab bars."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from PySide6 import QtCore, QtWidgets

from attnviz.core.model.config import TransformerConfig
from attnviz.qt.i18n import translate

AREA = QtCore.Qt.DockWidgetArea
TALL = 820  # a window at least this tall has room for the bottom docks under the grid
GRID_ROOM = 532  # px the grid keeps in the middle: four tiles of 48+ px, its row labels and colour bar (a projector's 1024 px included)
RIGHT_ROOM = 480  # px the right docks keep beside the top-k list; narrower, the list joins their tabs
TOPK = "topkDock"  # the top-k list's dock


def scrolled(widget: QtWidgets.QWidget, name: str) -> QtWidgets.QScrollArea:
    """``widget`` in a frameless scroll area named ``name`` (a tall panel; the dock need not be)."""
    scroll = QtWidgets.QScrollArea(objectName=name)
    scroll.setWidget(widget)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    return scroll


class WindowDocks(Mapping[str, QtWidgets.QDockWidget]):
    """``window``'s docks by objectName: the top-k list on the left; the registry's views, tabbed,
    on the right (full height) and at the bottom (under the grid and the top-k list), however many
    there are, and the training panel with the bottom ones."""

    def __init__(self, window: QtWidgets.QMainWindow, topk_panel: QtWidgets.QWidget, train: QtWidgets.QWidget):
        self.window = window  # the main window (its views, and connect_view for the active view)
        self._docks: dict[str, QtWidgets.QDockWidget] = {}
        self._unfit: set[str] = set()  # docks hidden because their view does not apply to the open model
        window.setCorner(QtCore.Qt.Corner.TopRightCorner, AREA.RightDockWidgetArea)
        window.setCorner(QtCore.Qt.Corner.BottomRightCorner, AREA.RightDockWidgetArea)
        window.setCorner(QtCore.Qt.Corner.BottomLeftCorner, AREA.BottomDockWidgetArea)
        window.setDockOptions(window.dockOptions() | QtWidgets.QMainWindow.DockOption.AllowTabbedDocks)
        self._add(translate("main_window", "Top-k next tokens"), topk_panel, TOPK, AREA.LeftDockWidgetArea)
        self._areas: dict[str, list[QtWidgets.QDockWidget]] = {}
        for area, where in (("right", AREA.RightDockWidgetArea), ("bottom", AREA.BottomDockWidgetArea)):
            docks: list[QtWidgets.QDockWidget] = []
            extra = [(translate("main_window", "Train"), scrolled(train, "trainScroll"), "trainDock")] if area == "bottom" else []
            for title, widget, name in window.views.docks(area) + extra:
                docks.append(self._add(title, widget, name, where, docks[-1] if docks else None))
            if docks:
                docks[0].raise_()
            self._areas[area] = docks

    def __getitem__(self, name: str) -> QtWidgets.QDockWidget:
        return self._docks[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._docks)

    def __len__(self) -> int:
        return len(self._docks)

    def _add(self, title: str, widget: QtWidgets.QWidget, name: str, area, tab_with: QtWidgets.QDockWidget | None = None) -> QtWidgets.QDockWidget:
        w = self.window
        dock = QtWidgets.QDockWidget(title, w)
        dock.setObjectName(name)
        dock.setWidget(widget)
        w.addDockWidget(area, dock)
        if tab_with is not None:
            w.tabifyDockWidget(tab_with, dock)
        dock.visibilityChanged.connect(lambda visible, v=widget: visible and w.views.bring_up_to_date(v))  # a raised tab catches up
        self._docks[name] = dock
        w.connect_view(widget)
        return dock

    def fit_to_model(self, config: TransformerConfig, decodes: bool) -> None:
        """Show what applies to the open model: the dock of a view that does not
        (:meth:`~attnviz.qt.views.spec.ViewSpec.applies`) is hidden, its View-menu entry disabled,
        and it comes back with a model it applies to; the top-k list only where the model
        ``decodes``."""
        fits = {spec.dock_name: spec.applies(config) for spec in self.window.views.specs.values() if spec.dock_name}
        fits[TOPK] = decodes
        for name, applies in fits.items():
            dock = self._docks[name]
            if not applies and not dock.isHidden():
                self._unfit.add(name)
                dock.hide()
            elif applies and name in self._unfit:
                self._unfit.discard(name)
                dock.show()
            dock.toggleViewAction().setEnabled(applies)

    def default_layout(self) -> None:
        """First run: the top-k list as wide as it reads and the right docks (tabbed, full height)
        half the width (at most 700 px). Where the grid would get under :data:`GRID_ROOM` beside
        both (a projector's 1024 px), the top-k list is a tab of the right docks instead. The bottom docks (tabbed) take about 40% of a tall window's
        height; in a short one (under :data:`TALL` px) they join the right docks' tabs, so the
        grid keeps its height and every panel gets the full height."""
        w = self.window
        v, h = QtCore.Qt.Orientation.Vertical, QtCore.Qt.Orientation.Horizontal
        right, bottom, topk = self._areas["right"], self._areas["bottom"], self._docks[TOPK]
        if right and bottom and w.height() < TALL:
            for dock in bottom:
                w.tabifyDockWidget(right[-1], dock)
            right[0].raise_()
            bottom = []
        left = topk.widget().minimumSizeHint().width() + 24
        width = min(max(360, w.width() // 2), 700)
        room = w.width() - left - GRID_ROOM  # what the right docks may take beside the top-k list and the grid
        if right and room < RIGHT_ROOM:  # a projector's 1024 px: the top-k list joins the right docks' tabs
            w.addDockWidget(AREA.RightDockWidgetArea, topk)
            w.tabifyDockWidget(right[0], topk)
            right[0].raise_()
            w.resizeDocks(right[:1], [min(width, w.width() - GRID_ROOM)], h)
        else:
            w.resizeDocks([topk] + right[:1], [left, min(width, room)][: 1 + len(right[:1])], h)
        if bottom:
            w.resizeDocks(bottom[:1], [max(240, int(w.height() * 0.4))], v)

    def tidy_tab_bars(self) -> None:
        """Dock tabs show their whole titles (scroll buttons when there are many). Qt can leave the
        tab bar of an earlier stage of a tabified dock group on screen (seen with Qt 6.10, after a
        layout is restored: a copy at the window's corner, over the menus): hide a bar that does not
        sit against the dock its current tab shows."""
        w = self.window
        for b in (b for b in w.findChildren(QtWidgets.QTabBar) if b.parent() is w and b.isVisibleTo(w)):
            b.setElideMode(QtCore.Qt.TextElideMode.ElideNone)
            b.setUsesScrollButtons(True)
            if self._stray(b):
                b.hide()

    def _stray(self, bar: QtWidgets.QTabBar) -> bool:
        """``bar`` is not against (above or below, overlapping it) the visible dock of its current tab."""
        title = bar.tabText(bar.currentIndex())
        dock = next((d for d in self._docks.values() if d.windowTitle() == title and d.isVisible()), None)
        if dock is None:
            return True
        g, r = dock.geometry(), bar.geometry()
        against = min(abs(r.top() - g.bottom()), abs(r.bottom() - g.top())) <= 6
        return not (against and r.left() < g.right() and g.left() < r.right())
