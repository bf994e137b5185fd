"""The application's look in the light or the dark theme: style and palette of every widget, in
the colours of the plots' theme (:mod:`attnviz.qt.widgets.colormaps`)."""

from __future__ import annotations

from PySide6 import QtGui, QtWidgets

from attnviz.qt.widgets.colormaps import get_theme

THEMES = ("light", "dark")


def apply_theme(name: str, app: QtWidgets.QApplication | None = None) -> None:
    """The whole application in the ``light`` theme (the platform's own style and palette) or the
    ``dark`` one (the Fusion style with a palette in the colours of the dark plots)."""
    app = app or QtWidgets.QApplication.instance()
    if not hasattr(app, "_attnviz_light"):
        app._attnviz_light = (app.style().name(), QtGui.QPalette(app.palette()))
    style, palette = app._attnviz_light
    if name == "dark":
        style, palette = "fusion", dark_palette()
    if app.style().name().lower() != style.lower():
        app.setStyle(style)
    app.setPalette(palette)


def dark_palette() -> QtGui.QPalette:
    """Window, text and control colours for the dark theme, from the dark plots' theme."""
    theme = get_theme("dark")
    c = QtGui.QColor
    role, group = QtGui.QPalette.ColorRole, QtGui.QPalette.ColorGroup
    p = QtGui.QPalette()
    base, window, text = c(theme.background), c("#2b2d30"), c(theme.foreground)
    for r, color in ((role.Window, window), (role.WindowText, text), (role.Base, base), (role.AlternateBase, window),
                     (role.ToolTipBase, window), (role.ToolTipText, text), (role.Text, text), (role.Button, window),
                     (role.ButtonText, text), (role.BrightText, c("#ff6b6b")), (role.Link, c("#6ea8fe")),
                     (role.Highlight, c("#2f6fde")), (role.HighlightedText, c("#ffffff")),
                     (role.PlaceholderText, c("#9a9da3")), (role.Mid, c("#4a4d52")), (role.Dark, c("#151618")),
                     (role.Light, c("#44474c")), (role.Midlight, c("#393b3f")), (role.Shadow, c("#000000"))):
        p.setColor(r, color)
    muted = c(theme.muted)
    for r in (role.WindowText, role.Text, role.ButtonText):
        p.setColor(group.Disabled, r, muted)
    return p
