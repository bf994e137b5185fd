"""What the main window keeps between runs in its ``settings`` (a ``QSettings``): geometry, dock
layout, colormap, theme, Decode as You Type and the recent models: :class:`WindowSettings`, owned by
the main window."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtWidgets

from attnviz.qt.widgets.colormaps import SEQUENTIAL_COLORMAPS

MAX_RECENT = 8


class WindowSettings:
    """:meth:`read` gives ``window`` what it kept, :meth:`write` keeps it; :meth:`recent_models`
    and :meth:`add_recent` keep File → Open Recent."""

    def __init__(self, window: QtWidgets.QMainWindow):  # the main window (its settings, session, look and menus)
        self.window = window

    def read(self) -> bool:
        """Geometry (the default size where the kept one is off the screen), layout, colormap,
        theme, Decode as You Type and the recent models -> whether a kept dock layout was restored."""
        w, s = self.window, self.window.settings
        geometry = s.value("window/geometry")
        if geometry is None or not w.restoreGeometry(geometry) or not w.fits_screen():
            w.resize_to_default()
        state = s.value("window/state")
        restored = state is not None and w.restore_layout(state)
        w.set_colormap(str(s.value("view/colormap", SEQUENTIAL_COLORMAPS[0])))
        w.set_theme(str(s.value("view/theme", "light")))
        w.set_decode_as_you_type(str(s.value("decode/as_you_type", "true")).lower() == "true")
        w.menus.show_recent(self.recent_models())
        return restored

    def write(self) -> None:
        w, s = self.window, self.window.settings
        s.setValue("window/geometry", w.saveGeometry())
        s.setValue("window/state", w.layout_state())
        s.setValue("view/colormap", w.colormap_name)
        s.setValue("view/theme", w.theme_name)
        s.setValue("decode/as_you_type", "true" if w.session.decode_as_you_type else "false")
        s.sync()

    def recent_models(self) -> list[str]:
        value = self.window.settings.value("recent/models", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def add_recent(self, path: Path) -> None:
        """``path`` first in File → Open Recent (once; at most :data:`MAX_RECENT` models)."""
        items = [str(path)] + [p for p in self.recent_models() if p != str(path)]
        self.window.settings.setValue("recent/models", items[:MAX_RECENT])
        self.window.menus.show_recent(self.recent_models())
