"""What the main window remembers between runs (QSettings): geometry, dock layout, colormap,
theme and recent models; and the first-run layout."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.qt.widgets.colormaps import SEQUENTIAL_COLORMAPS

MAX_RECENT = 8


class WindowStateMixin:
    """Mixed into ``MainWindow`` (a ``QMainWindow`` with ``settings``, docks and ``recent_menu``)."""

    def read_settings(self) -> None:
        s = self.settings
        geometry = s.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1400, 900)
        state = s.value("window/state")
        self._needs_default_layout = state is None or not self.restoreState(state)
        self.set_colormap(str(s.value("view/colormap", SEQUENTIAL_COLORMAPS[0])))
        self.set_theme(str(s.value("view/theme", "light")))
        self._update_recent_menu()

    def default_layout(self) -> None:
        """First run: the grid gets the room; docks take their share of it."""
        v, h = QtCore.Qt.Orientation.Vertical, QtCore.Qt.Orientation.Horizontal
        self.resizeDocks([self.topk_dock, self.head_dock], [240, max(420, self.width() // 3)], h)
        if self.inside_docks:
            self.resizeDocks([self.inside_docks[0]], [max(260, self.height() // 3)], v)

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self._needs_default_layout:
            self._needs_default_layout = False
            self.default_layout()
        QtCore.QTimer.singleShot(0, self, self._hide_stale_tab_bars)

    def _hide_stale_tab_bars(self) -> None:
        """Qt can leave the tab bar of an earlier stage of a tabified dock group on screen
        (seen with Qt 6.10): hide a bar whose tabs are all in a larger bar."""
        bars = [b for b in self.findChildren(QtWidgets.QTabBar) if b.parent() is self and b.isVisibleTo(self)]
        tabs = {b: {b.tabText(i) for i in range(b.count())} for b in bars}
        for b in bars:
            if any(o is not b and tabs[b] < tabs[o] for o in bars):
                b.hide()

    def write_settings(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("view/colormap", self._colormap)
        s.setValue("view/theme", self._theme)
        s.sync()

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
            a = self.recent_menu.addAction(p)
            a.triggered.connect(lambda _=False, p=p: self.open_model(Path(p)))
        self.recent_menu.setEnabled(bool(recent))
