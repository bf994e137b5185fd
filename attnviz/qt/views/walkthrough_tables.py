"""The walkthrough view's tables: what each step's table shows (``StageSpec``, the figure's
``SECTIONS``), how cells are formatted, and ``StageTable``, one step's matrix drawn as a small
table of a window of its cells. :mod:`attnviz.qt.views.walkthrough_sections` lays them out and
fills them; :mod:`attnviz.qt.views.walkthrough_windows` chooses the windows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.qt.i18n import translate
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP, Theme
from attnviz.qt.widgets.heatmap import MINUS, HeatmapPlot, format_weight

CELL_W, CELL_H = 44, 19  # px per table cell


def format_value(v: float) -> str:
    """Two decimals with a real minus sign; ``−∞`` where masked."""
    if math.isinf(v):
        return MINUS + "∞" if v < 0 else "∞"
    if math.isnan(v):
        return ""
    if v == 0.0:
        return "0"
    return f"{v:.2f}".replace("-", MINUS)


def plain(html: str) -> str:
    """A table title without markup: ``W<sub>i</sub><sup>Q</sup>`` → ``W_i^Q``, ``<sup>T</sup>`` → ``ᵀ``."""
    text = html.replace("<sup>T</sup>", "ᵀ")
    text = re.sub(r"<sub>(.*?)</sub>", r"_\1", text)
    text = re.sub(r"<sup>(.*?)</sup>", r"^\1", text)
    return re.sub(r"<[^>]+>", "", text)


def title_text(title: str) -> str:
    """A title of :data:`SECTIONS`, :data:`CROSS_TITLES` or :data:`CROSS_SECTION_1` in the interface's
    language (the ones with words are marked for translation; notation stays as it is)."""
    return translate("walkthrough_tables", title)


def format_mask(v: float) -> str:
    return MINUS + "∞" if (math.isinf(v) and v < 0) else "0"


@dataclass(frozen=True)
class StageSpec:
    """How one table is drawn: which walkthrough field, its notation, the kind of each axis."""

    name: str  # field of HeadWalkthrough
    title: str  # notation shown above the table
    rows: str  # "query" | "key" | "model" | "k" | "bias"  (what the rows index; "bias": the one row of a bias)
    cols: str  # "model" | "k" | "key"
    scale: str = "signed"  # "signed" (diverging, ±max), "weights" (0..1), "mask"
    highlight: bool = True  # outline the chosen query row (rows == "query")


# The three sections of the figure: rows of tables joined by operators (titles are HTML, shown through title_text).
SECTIONS: tuple[tuple[str, tuple[tuple[StageSpec | str, ...], ...]], ...] = (
    (QT_TRANSLATE_NOOP("walkthrough_tables", "1 · Projections: Q<sub>i</sub> = XW<sub>i</sub><sup>Q</sup> + b<sub>i</sub><sup>Q</sup>, "
     "K<sub>i</sub> = XW<sub>i</sub><sup>K</sup> + b<sub>i</sub><sup>K</sup>, V<sub>i</sub> = XW<sub>i</sub><sup>V</sup> + b<sub>i</sub><sup>V</sup>"), (
        (StageSpec("x", "X", "query", "model"), "×", StageSpec("w_q", "W<sub>i</sub><sup>Q</sup>", "model", "k"), "+",
         StageSpec("b_q", "b<sub>i</sub><sup>Q</sup>", "bias", "k"), "=",
         StageSpec("q", "Q<sub>i</sub> = XW<sub>i</sub><sup>Q</sup> + b<sub>i</sub><sup>Q</sup>", "query", "k")),
        (StageSpec("x_kv", "X", "key", "model"), "×", StageSpec("w_k", "W<sub>i</sub><sup>K</sup>", "model", "k"), "+",
         StageSpec("b_k", "b<sub>i</sub><sup>K</sup>", "bias", "k"), "=",
         StageSpec("k", "K<sub>i</sub> = XW<sub>i</sub><sup>K</sup> + b<sub>i</sub><sup>K</sup>", "key", "k")),
        (StageSpec("x_kv", "X", "key", "model"), "×", StageSpec("w_v", "W<sub>i</sub><sup>V</sup>", "model", "k"), "+",
         StageSpec("b_v", "b<sub>i</sub><sup>V</sup>", "bias", "k"), "=",
         StageSpec("v", "V<sub>i</sub> = XW<sub>i</sub><sup>V</sup> + b<sub>i</sub><sup>V</sup>", "key", "k")),
    )),
    (QT_TRANSLATE_NOOP("walkthrough_tables", "2 · Scores and weights: A<sub>i</sub> = softmax(Q<sub>i</sub>K<sub>i</sub><sup>T</sup> / √d<sub>k</sub> + M)"), (
        (StageSpec("xx_t", QT_TRANSLATE_NOOP("walkthrough_tables", "X·X<sup>T</sup> (no projection)"), "query", "key"), "",
         StageSpec("scores", "Q<sub>i</sub>K<sub>i</sub><sup>T</sup>", "query", "key"), "→",
         StageSpec("scaled_scores", "Q<sub>i</sub>K<sub>i</sub><sup>T</sup> ÷ √d<sub>k</sub>", "query", "key")),
        (StageSpec("position_bias", "B", "query", "key"), "+",  # a relative position bias (T5's); hidden when the model has none
         StageSpec("mask", "M", "query", "key", scale="mask", highlight=False), "→",
         StageSpec("masked_scores", "Q<sub>i</sub>K<sub>i</sub><sup>T</sup>/√d<sub>k</sub> + M", "query", "key"), "→",
         StageSpec("weights", "A<sub>i</sub> = softmax(…)", "query", "key", scale="weights")),
    )),
    (QT_TRANSLATE_NOOP("walkthrough_tables", "3 · Output: Z<sub>i</sub> = A<sub>i</sub>V<sub>i</sub> fills its columns of Concat(Z<sub>1</sub>..Z<sub>h</sub>), "
     "which meets W<sup>O</sup>"), (
        (StageSpec("weights", "A<sub>i</sub>", "query", "key", scale="weights"), "×",
         StageSpec("v", "V<sub>i</sub>", "key", "k"), "=", StageSpec("z", "Z<sub>i</sub> = A<sub>i</sub>V<sub>i</sub>", "query", "k")),
        (StageSpec("concat", "Concat(Z<sub>1</sub>..Z<sub>h</sub>)", "query", "model"), "×",
         StageSpec("w_o", "W<sup>O</sup>", "model", "model", highlight=False), "=",
         StageSpec("output", "Concat(Z<sub>1</sub>..Z<sub>h</sub>)·W<sup>O</sup> + b<sup>O</sup>", "query", "model")),
    )),
)


#: Cross-attention's keys and values come from the encoder's output: titles that say so, by table field.
CROSS_TITLES: dict[str, str] = {
    "x": QT_TRANSLATE_NOOP("walkthrough_tables", "X = C<sub>decoder</sub> (queries)"),
    "x_kv": QT_TRANSLATE_NOOP("walkthrough_tables", "C<sub>encoder</sub> (keys, values)"),
    "k": QT_TRANSLATE_NOOP("walkthrough_tables", "K<sub>i</sub> = C<sub>encoder</sub>W<sub>i</sub><sup>K</sup> + b<sub>i</sub><sup>K</sup>"),
    "v": QT_TRANSLATE_NOOP("walkthrough_tables", "V<sub>i</sub> = C<sub>encoder</sub>W<sub>i</sub><sup>V</sup> + b<sub>i</sub><sup>V</sup>"),
    "xx_t": QT_TRANSLATE_NOOP("walkthrough_tables", "X·C<sub>encoder</sub><sup>T</sup> (no projection)"),
}
#: The steps as a model computes them that does not divide by √d_k, or adds a position bias B (T5).
UNSCALED_TITLE = QT_TRANSLATE_NOOP("walkthrough_tables", "Q<sub>i</sub>K<sub>i</sub><sup>T</sup> (no ÷√d<sub>k</sub>)")
SECTION_2 = "2 · {scores}: A<sub>i</sub> = softmax({softmax})"
SCORES_AND_WEIGHTS = QT_TRANSLATE_NOOP("walkthrough_tables", "Scores and weights")


def softmax_input(scaled: bool, biased: bool) -> str:
    """What softmax takes, in HTML: Q_iK_iᵀ/√d_k (+ B) + M."""
    scores = "Q<sub>i</sub>K<sub>i</sub><sup>T</sup>" + (" / √d<sub>k</sub>" if scaled else "")
    return scores + (" + B" if biased else "") + " + M"


CROSS_SECTION_1 = QT_TRANSLATE_NOOP("walkthrough_tables", "1 · Projections: Q<sub>i</sub> = XW<sub>i</sub><sup>Q</sup> + b<sub>i</sub><sup>Q</sup>, "
                                                  "K<sub>i</sub> = C<sub>encoder</sub>W<sub>i</sub><sup>K</sup> + b<sub>i</sub><sup>K</sup>, "
                                                  "V<sub>i</sub> = C<sub>encoder</sub>W<sub>i</sub><sup>V</sup> + b<sub>i</sub><sup>V</sup>")


class StageTable(HeatmapPlot):
    """One step's matrix as a small table: a window of its cells, each coloured and labelled."""

    def __init__(self, theme: Theme, spec: StageSpec, key: str):
        fmt = format_weight if spec.scale == "weights" else format_mask if spec.scale == "mask" else format_value
        cmap = theme.colormap if spec.scale == "weights" else DIVERGING_COLORMAP
        super().__init__(theme, colormap=cmap, colorbar=False, annotate=True, value_format=fmt, aspect_locked=False, label_point_size=8.0)
        self.spec = spec
        self.key = key  # unique name in the view (the same field can appear twice)
        self.window: tuple[slice, slice] = (slice(0, 0), slice(0, 0))
        self.full_shape: tuple[int, int] = (0, 0)
        self._titles: tuple[str, str] | None = None
        self._title: tuple[str, str] | None = None
        self.set_title(title_text(spec.title), theme.foreground)

    def set_title(self, text: str, color: str) -> None:
        if (text, color) != self._title:
            self.setTitle(text, size="9pt", color=color)
            self._title = (text, color)

    def show_window(self, full: np.ndarray, rows: slice, cols: slice, row_labels: Sequence[str], col_labels: Sequence[str],
                    highlight: int | None, levels: tuple[float, float], titles: tuple[str, str]) -> None:
        self.full_shape = (int(full.shape[0]), int(full.shape[1]))
        self.window = (rows, cols)
        part = np.asarray(full)[rows, cols]
        if titles != self._titles:  # text layout is the costly part of an update: only when it changes
            self.set_axis_titles(*titles)
            self._titles = titles
        self.set_matrix(part, list(row_labels)[rows], list(col_labels)[cols], highlight, levels=levels)
        r, c = part.shape
        left = self.getAxis("left").maximumWidth()  # the axis's fixed width (its geometry may lag)
        top = self.getAxis("top").maximumHeight()
        self.setFixedWidth(left + c * CELL_W + 6)
        self.setFixedHeight(30 + top + r * CELL_H + 4)

    def elided(self) -> bool:
        rows, cols = self.window
        return (rows.stop - rows.start) < self.full_shape[0] or (cols.stop - cols.start) < self.full_shape[1]
