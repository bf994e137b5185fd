"""Shared look of every view: colour maps, light/dark themes, head colours and fonts.

Views take a :class:`Theme` and a colour-map name as view settings; nothing here is
global state. Colour maps are always fresh objects (``pg.colormap.get(..., skipCache=True)``
or built here), so changing one never leaks into another view.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtGui

# ---------------------------------------------------------------------------
# Colour maps
# ---------------------------------------------------------------------------
# Sequential maps for attention weights in [0, 1]; the first is the light theme's default.
_CUSTOM_STOPS: dict[str, list[str]] = {
    # ColorBrewer "Blues": white for 0, so the exact-zero cells of a masked matrix read as empty.
    "blues": ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"],
    "greys": ["#ffffff", "#d9d9d9", "#969696", "#525252", "#000000"],
    # ColorBrewer "RdBu" reversed: blue below zero, white at zero, red above (raw scores).
    "diverging": ["#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d", "#b2182b"],
}
_PYQTGRAPH_MAPS = ("viridis", "magma", "inferno", "plasma", "cividis")

#: Colour maps a user can choose for attention weights (View → Colormap).
SEQUENTIAL_COLORMAPS: tuple[str, ...] = ("blues", "viridis", "magma", "inferno", "cividis", "greys")
#: The map used for signed scores (QKᵀ/√d_k), centred on zero.
DIVERGING_COLORMAP = "diverging"


def get_colormap(name: str) -> pg.ColorMap:
    """A fresh :class:`pyqtgraph.ColorMap` named ``name`` (safe to modify).

    ``"solid:#rrggbb"`` is a one-colour map (used where a matrix only has 0 and −∞).
    """
    if name.startswith("solid:"):
        colour = QtGui.QColor(name[len("solid:"):])
        if not colour.isValid():
            raise ValueError(f"invalid colour in {name!r}")
        return pg.ColorMap([0.0, 1.0], [colour, colour], name=name)
    if name in _CUSTOM_STOPS:
        stops = _CUSTOM_STOPS[name]
        pos = np.linspace(0.0, 1.0, len(stops))
        return pg.ColorMap(pos, [QtGui.QColor(c) for c in stops], name=name)
    if name in _PYQTGRAPH_MAPS:
        return pg.colormap.get(name, skipCache=True)
    raise ValueError(f"unknown colour map {name!r}; choose one of {', '.join(SEQUENTIAL_COLORMAPS + (DIVERGING_COLORMAP,))}")


def lookup_table(name: str, n: int = 256) -> np.ndarray:
    """``[n, 4]`` uint8 RGBA lookup table of the colour map ``name``."""
    return np.ascontiguousarray(get_colormap(name).getLookupTable(0.0, 1.0, n, alpha=True), dtype=np.uint8)


# ---------------------------------------------------------------------------
# Themes
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Theme:
    """Colours of a view. All are ``#rrggbb`` strings (or ``#aarrggbb``)."""

    name: str
    background: str  # canvas background (also the exported figure's background)
    foreground: str  # titles and token labels
    muted: str  # axis lines, secondary text
    separator: str  # lines between tiles, panel frames
    highlight: str  # the current decoding step's row
    departure: str  # where two runs part (teacher forcing vs free running): never the current step's colour
    selection: str  # the selected tile / hovered cell outline
    ablated: str  # the cross over an ablated head
    masked: str  # cells masked to −∞ (no colour-map value)
    allowed: str  # cells of a mask that let attention through (M = 0)
    colormap: str  # default sequential colour map for weights
    head_colors: tuple[str, ...]  # one colour per head (line view, legends)

    def qcolor(self, attr: str, alpha: int | None = None) -> QtGui.QColor:
        c = QtGui.QColor(getattr(self, attr))
        if alpha is not None:
            c.setAlpha(alpha)
        return c

    def head_color(self, head: int) -> QtGui.QColor:
        return QtGui.QColor(self.head_colors[head % len(self.head_colors)])


# Distinct, colour-blind-aware hues (Tableau 10 order, then Paul Tol's "muted").
_HEADS_LIGHT = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#332288", "#117733", "#882255", "#44aa99", "#999933", "#aa4499",
)
_HEADS_DARK = (
    "#4dabf7", "#ffa94d", "#69db7c", "#ff6b6b", "#b197fc", "#e599f7", "#f783ac", "#ced4da",
    "#d8f5a2", "#66d9e8", "#748ffc", "#38d9a9", "#faa2c1", "#63e6be", "#ffe066", "#da77f2",
)

LIGHT = Theme(
    name="light",
    background="#ffffff",
    foreground="#1f2328",
    muted="#6e7781",
    separator="#d0d7de",
    highlight="#e8590c",
    departure="#7b2cbf",
    selection="#1c7ed6",
    ablated="#c92a2a",
    masked="#c9ced4",
    allowed="#ffffff",
    colormap="blues",
    head_colors=_HEADS_LIGHT,
)
DARK = Theme(
    name="dark",
    background="#1e1f22",
    foreground="#e6e6e6",
    muted="#9aa0a6",
    separator="#3c3f44",
    highlight="#ff922b",
    departure="#c77dff",
    selection="#4dabf7",
    ablated="#ff6b6b",
    masked="#4a4e55",
    allowed="#2a2c30",
    colormap="viridis",
    head_colors=_HEADS_DARK,
)
THEMES: dict[str, Theme] = {"light": LIGHT, "dark": DARK}


def get_theme(theme: "Theme | str | None") -> Theme:
    if theme is None:
        return LIGHT
    if isinstance(theme, Theme):
        return theme
    try:
        return THEMES[theme]
    except KeyError:
        raise ValueError(f"unknown theme {theme!r}; choose one of {', '.join(THEMES)}") from None


# ---------------------------------------------------------------------------
# Fonts
# ---------------------------------------------------------------------------
#: Font families in order of preference: a Latin sans first, then CJK families per platform, so
#: Chinese token pieces render wherever the app runs (Linux: fonts-wqy-microhei).
FONT_FAMILIES: tuple[str, ...] = (
    "DejaVu Sans",
    "Segoe UI",
    "Helvetica Neue",
    "WenQuanYi Micro Hei",
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "Microsoft YaHei",
    "PingFang SC",
    "Sans Serif",
)
#: The same list as a CSS ``font-family`` value (written into exported SVG text).
CSS_FONT_FAMILY = ", ".join(f"'{f}'" for f in FONT_FAMILIES[:-1]) + ", sans-serif"


def ui_font(point_size: float = 9.0, *, bold: bool = False) -> QtGui.QFont:
    """The font used for token labels and titles, with CJK fallbacks."""
    font = QtGui.QFont()
    font.setFamilies(list(FONT_FAMILIES))
    font.setPointSizeF(point_size)
    font.setBold(bold)
    font.setStyleHint(QtGui.QFont.StyleHint.SansSerif)
    return font
