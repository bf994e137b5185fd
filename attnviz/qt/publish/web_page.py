"""A web page to hand out: one self-contained HTML file that replays a sentence's decoding.

The page holds the model's name, the source sentence, the typed target (if any), the tokens
decoded at each step, a step slider (with previous/next buttons, the arrow keys, Home and End)
and, for each step, the figures of the chosen views as PNG ``data:`` URIs, drawn by the app's own
views in the replay of :func:`attnviz.qt.publish.animation.animation_frames`. It loads nothing
from elsewhere: a Content-Security-Policy forbids every remote load, and its one inline script
and style are allowed by their hashes only.

Numbers on hover: each figure's data (the view's ``figure_data()``) is embedded as JSON, with
where each plotted matrix lies in the figure's PNG. The script maps the mouse over the picture to
the matrix cell under it and shows that cell's number, with its layer, head, query and key, under
the figure. A matrix is placed only when its plotted values are found in the figure's data (one
``[query, key]`` slice, or the slices laid out as tiles with a gap, as the grid draws them), so a
number shown is always the number drawn.

The page opens on ``#step=N`` when the address ends so (steps count from 1). Every text from the
model or the user is escaped. ``notes`` is an optional list of text blocks shown under the
figures (:class:`PageNote`): a paragraph, or a tour stop's title and text in the tour's
language, with the sentence its numbers were measured on when that is not the page's.

Where it is written: the page is always ``index.html`` in the folder asked for (created when
missing). An ``index.html`` already there is replaced only when attnviz wrote it and nobody changed
it since (the mark and hash of :mod:`attnviz.core.outputs`, checked without opening anything but a
regular file); any other file, a link, a pipe or a page edited since is left alone and the export
refused in one line. The frames' memory is checked before any is drawn (``animation_frames``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PySide6 import QtCore, QtGui

from attnviz import __version__
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.bundle import Bundle
from attnviz.core.data.pieces import SP_WORD_START, display_piece, display_pieces
from attnviz.core.outputs import is_ours, write_output
from attnviz.errors import AttnvizError
from attnviz.qt.core_text import strategy_text
from attnviz.qt.i18n import current_language, translate
from attnviz.qt.publish.animation import Panel, animation_frames, progress_dialog
from attnviz.qt.widgets.colormaps import CSS_FONT_FAMILY
from attnviz.qt.widgets.figures import figure_size, figure_source
from attnviz.qt.widgets.matrix_image import MatrixImageItem

PAGE_NAME = "index.html"  # the page's file name in the folder asked for
PAGE_FOLDER = "attnviz-page"  # the folder the export dialog suggests (with -2, -3, … where it is taken)
GENERATOR = "attnviz"  # the page's <meta name="generator"> (whether a page is ours is told by its mark: attnviz.core.outputs)
MAX_HOVER_VALUES = 200_000  # numbers embedded per figure and step; a figure with more is shown without them
SPECIAL_PIECES = ("SOS", "EOS")  # left out of the sentence decoded so far (shown among its tokens)
MAX_SLICES = 64  # leading slices tried when a matrix shows one slice of a larger array


class WebPageError(AttnvizError):
    """A page that cannot be made or written: one line."""


@dataclass(frozen=True)
class PageFigure:
    """One view at one step: its picture and what the page's script needs for its numbers."""

    title: str
    png: bytes
    width: int  # the PNG's pixels
    height: int
    numbers: dict | None  # the figure's data, JSON-ready (None: too large to embed, or none)
    matrices: tuple[dict, ...]  # where each plotted matrix lies in the PNG, and which data it shows


@dataclass(frozen=True)
class PageStep:
    """One step: the tokens decoded so far (or the target's outputs up to this position)."""

    tokens: tuple[str, ...]
    figures: tuple[PageFigure, ...]


@dataclass(frozen=True)
class PageNote:
    """A text block under the figures: a paragraph, or a tour stop's title and its text."""

    text: str
    title: str = ""
    language: str = ""  # the title's and text's language ("zh_CN"); "": the page's
    measured_on: str = ""  # the source sentence the text's numbers were read from; "": the page's


@dataclass(frozen=True)
class WebPage:
    """Everything the page shows; :func:`page_html` writes it."""

    model: str
    source: str
    target: str  # the typed target ("" when decoded)
    how: str  # "greedy decoding", "teacher forcing on the typed target", …
    source_pieces: tuple[str, ...]
    steps: tuple[PageStep, ...]
    theme: str = "light"
    notes: tuple[PageNote, ...] = field(default_factory=tuple)  # text blocks under the figures (the tour's, when there is one)


# ---------------------------------------------------------------------------
# The replay
# ---------------------------------------------------------------------------
def build_page(bundle: Bundle, source: str, target: str, panels: Sequence[Panel], size: tuple[int, int],
               theme: str = "light", strategy=None, notes: Sequence[PageNote | str] = (),
               progress: Callable[[int, int], bool] | None = None) -> WebPage | None:
    """The page of ``source``'s decoding (or of ``target``, teacher-forced): one step per frame
    of :func:`animation_frames`, ``panels`` drawn at ``size`` each. ``None`` when ``progress``
    (called as ``progress(done, total)``) returns ``False``."""
    if not panels:
        raise WebPageError(translate("web_page", "choose at least one view for the page"))
    seen: list[tuple[tuple[str, ...], list[dict]]] = []
    replay: dict = {}

    def frame_drawn(session, views) -> None:
        replay["session"] = session
        seen.append(_frame_record(session, views))

    frames = animation_frames(bundle, source, target, panels, size, theme, strategy, progress, frame_drawn)
    if frames is None:
        return None
    if not frames:
        raise WebPageError(translate("web_page", "nothing to show: the decoding has no steps"))
    steps = tuple(PageStep(tokens, _figures(frame, views)) for frame, (tokens, views) in zip(frames, seen))
    session = replay["session"]
    if session.forced is not None:
        how = translate("web_page", "teacher forcing on the typed target")
    else:
        how = translate("web_page", "{strategy} decoding").format(strategy=strategy_text(session.strategy))
    return WebPage(bundle.name, source, target if session.forced is not None else "", how, tuple(session.src_pieces()),
                   steps, theme, tuple(n if isinstance(n, PageNote) else PageNote(str(n)) for n in notes))


def _frame_record(session, views: list) -> tuple[tuple[str, ...], list[dict]]:
    """What a frame just drawn shows: the tokens so far, and each view's title, size, data and matrices."""
    row = session.current_row()
    tokens = tuple(session.output_pieces()[: (row or 0) + 1])
    return tokens, [_view_record(view) for view in views]


def _view_record(view) -> dict:
    size = figure_size(view)  # the size the frame drew it at (one pixel per logical pixel), left as it was drawn
    try:
        data = view.figure_data()
    except (ValueError, NotImplementedError):
        data = None
    numbers = figure_numbers(data) if data is not None else None
    matrices = plotted_matrices(view, data, (size.width(), size.height())) if numbers is not None else []
    return {"title": view.figure_title(), "size": (max(1, size.width()), max(1, size.height())),
            "numbers": numbers, "matrices": tuple(matrices)}


def _figures(frame: QtGui.QImage, views: list[dict]) -> tuple[PageFigure, ...]:
    """Each view's picture, cut out of the frame (the views side by side, top-aligned, in order)."""
    figures, x = [], 0
    for v in views:
        w, h = v["size"]
        png = png_bytes(frame.copy(x, 0, w, h))
        figures.append(PageFigure(v["title"], png, w, h, v["numbers"], v["matrices"]))
        x += w
    return tuple(figures)


def png_bytes(image: QtGui.QImage) -> bytes:
    buf = QtCore.QBuffer()
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buf, "PNG"):
        raise WebPageError(translate("web_page", "Qt could not encode a figure as PNG"))
    return bytes(buf.data())


# ---------------------------------------------------------------------------
# Numbers on hover
# ---------------------------------------------------------------------------
def figure_numbers(data: FigureData) -> dict | None:
    """``data`` as JSON-ready numbers: dims, shape, the labels along each dimension (pieces as the
    app shows them) and each value array flat in row-major order, 6 significant digits, ``None``
    for a value that is not finite. ``None`` when there are more than :data:`MAX_HOVER_VALUES`."""
    if sum(int(np.size(v)) for v in data.values.values()) > MAX_HOVER_VALUES:
        return None
    return {
        "dims": list(data.dims),
        "shape": list(data.shape),
        "coords": {dim: list(display_pieces(labels)) for dim, labels in data.coords.items()},
        "values": {name: _flat(values) for name, values in data.values.items()},
    }


def _flat(values) -> list[float | None]:
    flat = np.asarray(values, dtype=np.float64).ravel().tolist()
    return [float(f"{v:.6g}") if math.isfinite(v) else None for v in flat]


def plotted_matrices(view, data: FigureData, image_size: tuple[int, int]) -> list[dict]:
    """Where each plotted matrix of ``view`` lies in its picture (``image_size`` pixels, as
    rendered) and which of ``data``'s values it shows (see :func:`matrix_placement`); a matrix
    whose values are not found in ``data`` is left out."""
    source = figure_source(view)
    if source.width() <= 0 or source.height() <= 0:
        return []
    sx, sy = image_size[0] / source.width(), image_size[1] / source.height()
    found = []
    for item in view.figure_canvas().scene().items(QtCore.Qt.SortOrder.AscendingOrder):
        values = item.values() if isinstance(item, MatrixImageItem) and item.isVisible() else None
        if values is None or values.ndim != 2 or values.size == 0:
            continue
        place = matrix_placement(values, data)
        if place is None:
            continue
        top_left, bottom_right = item.mapToScene(QtCore.QPointF(0, 0)), item.mapToScene(QtCore.QPointF(values.shape[1], values.shape[0]))
        corners = {"x0": (top_left.x() - source.left()) * sx, "y0": (top_left.y() - source.top()) * sy,
                   "x1": (bottom_right.x() - source.left()) * sx, "y1": (bottom_right.y() - source.top()) * sy}
        found.append({**place, **{k: round(v, 3) for k, v in corners.items()}, "rows": int(values.shape[0]), "cols": int(values.shape[1])})
    return found


def matrix_placement(matrix: np.ndarray, data: FigureData) -> dict | None:
    """How ``matrix`` (a plotted image, NaN where nothing or a masked cell is drawn) shows one of
    ``data``'s value arrays ``[..., query, key]``: its leading dimensions as tiles (rows of tiles
    along the first, columns along the second) with ``gap`` cells between them, or one fixed
    leading index. ``None`` when every finite cell does not match."""
    for name, values in data.values.items():
        v = np.asarray(values, dtype=np.float32)
        if not 2 <= v.ndim <= 4:
            continue
        for tiles, axes, fixed in _layouts(v):
            gap = _gap(tiles.shape[:2], tiles.shape[2:], matrix.shape)
            if gap is not None and _shows(matrix, tiles, gap):
                return {"value": name, "tiles": list(tiles.shape[:2]), "gap": gap, "q": int(v.shape[-2]), "k": int(v.shape[-1]),
                        "axes": axes, "fixed": fixed}
    return None


def _layouts(v: np.ndarray):
    """``(tiles [a, b, q, k], which tile axis each leading dimension runs along, fixed leading index)``."""
    lead, qk = v.shape[:-2], v.shape[-2:]
    if len(lead) == 0:
        yield v.reshape(1, 1, *qk), [], None
    elif len(lead) == 1:
        yield v.reshape(lead[0], 1, *qk), [0], None
        yield v.reshape(1, lead[0], *qk), [1], None
    else:
        yield v, [0, 1], None
    if lead and math.prod(lead) <= MAX_SLICES:
        for index in np.ndindex(*lead):
            yield v[index].reshape(1, 1, *qk), [], [int(i) for i in index]


def _gap(tiles: tuple[int, int], cell: tuple[int, int], shape: tuple[int, int]) -> int | None:
    """The gap between tiles that makes ``tiles`` of ``cell`` cells fill ``shape`` (None: none does)."""
    gaps = set()
    for n, size, total in zip(tiles, cell, shape):
        if n == 1:
            if size != total:
                return None
            continue
        gap, rest = divmod(total - n * size, n - 1)
        if rest or gap < 0:
            return None
        gaps.add(gap)
    return gaps.pop() if len(gaps) == 1 else (0 if not gaps else None)


def _shows(matrix: np.ndarray, tiles: np.ndarray, gap: int) -> bool:
    a, b, q, k = tiles.shape
    expected = np.full(matrix.shape, np.nan, dtype=np.float32)
    for i in range(a):
        for j in range(b):
            expected[i * (q + gap): i * (q + gap) + q, j * (k + gap): j * (k + gap) + k] = tiles[i, j]
    drawn = np.isfinite(matrix)
    return bool(drawn.any()) and bool(np.allclose(matrix[drawn], expected[drawn], rtol=1e-5, atol=1e-6))


# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------
_STYLE = """
:root { color-scheme: light; --fg: #1d232b; --muted: #5b6570; --bg: #ffffff; --panel: #f3f5f7; --accent: #1f6feb; --line: #d5dae0; }
html.dark { color-scheme: dark; --fg: #e6e8eb; --muted: #a3abb5; --bg: #16191d; --panel: #22262c; --accent: #6ea8ff; --line: #3a4048; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0 auto; padding: 1.2rem 1.5rem 3rem; max-width: 1900px; background: var(--bg); color: var(--fg);
       font: 15px/1.45 FONTS; }
h1 { font-size: 1.35rem; margin: 0 0 .6rem; }
h2 { font-size: 1rem; margin: 0 0 .4rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem .9rem; margin: 0 0 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.sentence { font-size: 1.1rem; }
#controls { position: sticky; top: 0; z-index: 2; display: flex; align-items: center; gap: .6rem; flex-wrap: wrap;
            padding: .5rem .7rem; margin: 0 0 .8rem; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; }
#controls input[type=range] { flex: 1 1 18rem; accent-color: var(--accent); }
#controls button { font: inherit; padding: .2rem .7rem; }
#step-label { min-width: 8rem; font-variant-numeric: tabular-nums; }
.tokens { list-style: none; display: flex; flex-wrap: wrap; gap: .3rem; margin: .2rem 0 1rem; padding: 0; }
.tokens li { padding: .1rem .45rem; border: 1px solid var(--line); border-radius: 4px; background: var(--panel); }
.tokens li.new { border-color: var(--accent); box-shadow: 0 0 0 1px var(--accent) inset; font-weight: 600; }
.figures { display: flex; flex-wrap: wrap; gap: 1.2rem; align-items: flex-start; }
figure { margin: 0; max-width: 100%; }
.frames { position: relative; display: inline-block; max-width: 100%; line-height: 0; }
.frames img { max-width: 100%; height: auto; border: 1px solid var(--line); }
.cell { position: absolute; pointer-events: none; outline: 2px solid var(--accent); outline-offset: 0; }
.readout { min-height: 1.5em; margin: .3rem 0 0; color: var(--fg); font-variant-numeric: tabular-nums; }
figcaption.hint { color: var(--muted); font-size: .85rem; }
#notes p { max-width: 60rem; white-space: pre-wrap; }
#notes .note { margin: 1rem 0 0; }
#notes .measured-on { color: var(--muted); font-size: .9rem; margin: 0; }
footer { margin-top: 2rem; color: var(--muted); font-size: .85rem; }
""".replace("FONTS", CSS_FONT_FAMILY)

_SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("page-data").textContent);
  var total = data.steps.length;
  var slider = document.getElementById("step");
  var label = document.getElementById("step-label");
  var prev = document.getElementById("prev");
  var next = document.getElementById("next");
  var main = document.querySelector("main");
  var words = data.words;
  var current = 1;

  function stepFromHash() {
    var m = /^#step=(\d+)$/.exec(window.location.hash);
    return m ? parseInt(m[1], 10) : 1;
  }

  function show(step) {
    if (!isFinite(step)) { step = 1; }
    current = Math.min(Math.max(step, 1), total);
    slider.value = String(current);
    main.setAttribute("data-step", String(current));
    document.querySelectorAll("[data-step-item]").forEach(function (el) {
      el.hidden = el.getAttribute("data-step-item") !== String(current);
    });
    document.querySelectorAll("figure[data-figure]").forEach(clearHover);
    label.textContent = words.step.replace("{step}", current).replace("{total}", total);
    prev.disabled = current === 1;
    next.disabled = current === total;
    if (window.location.hash !== "#step=" + current) {
      try { window.history.replaceState(null, "", "#step=" + current); } catch (e) { /* a viewer that keeps the address */ }
    }
  }

  function clearHover(fig) {
    fig.querySelector(".cell").hidden = true;
    fig.querySelector(".readout").textContent = "\u00a0";
  }

  function label_of(numbers, dim, i) {
    var c = numbers.coords[dim];
    return c ? c[i] : String(i + 1);
  }

  function name_of(name) {
    return Object.prototype.hasOwnProperty.call(words.names, name) ? words.names[name] : name;
  }

  function number_text(v) {
    if (v === null || v === undefined) { return words.masked; }
    return Math.abs(v) >= 1000 || (v !== 0 && Math.abs(v) < 0.001) ? v.toExponential(3) : v.toFixed(4);
  }

  function cellAt(m, x, y) {
    var c = Math.floor((x - m.x0) / (m.x1 - m.x0) * m.cols);
    var r = Math.floor((y - m.y0) / (m.y1 - m.y0) * m.rows);
    if (r < 0 || c < 0 || r >= m.rows || c >= m.cols) { return null; }
    var tr = Math.floor(r / (m.q + m.gap)), tc = Math.floor(c / (m.k + m.gap));
    var q = r - tr * (m.q + m.gap), k = c - tc * (m.k + m.gap);
    if (q >= m.q || k >= m.k) { return null; }
    var lead = m.fixed ? m.fixed.slice() : m.axes.map(function (a) { return a === 0 ? tr : tc; });
    return { r: r, c: c, index: lead.concat([q, k]) };
  }

  function describe(numbers, m, index) {
    var flat = 0;
    for (var d = 0; d < numbers.shape.length; d++) { flat = flat * numbers.shape[d] + index[d]; }
    var parts = numbers.dims.map(function (dim, d) { return name_of(dim) + " " + label_of(numbers, dim, index[d]); });
    return parts.join(" \u00b7 ") + " \u2192 " + name_of(m.value) + " " + number_text(numbers.values[m.value][flat]);
  }

  function hover(fig, event) {
    var i = parseInt(fig.getAttribute("data-figure"), 10);
    var info = data.steps[current - 1].figures[i];
    var img = fig.querySelector("img:not([hidden])");
    if (!info.numbers || !img) { return; }
    var box = img.getBoundingClientRect();
    var sx = img.naturalWidth / box.width, sy = img.naturalHeight / box.height;
    var x = (event.clientX - box.left) * sx, y = (event.clientY - box.top) * sy;
    for (var j = 0; j < info.matrices.length; j++) {
      var m = info.matrices[j], hit = cellAt(m, x, y);
      if (hit) {
        var cw = (m.x1 - m.x0) / m.cols, ch = (m.y1 - m.y0) / m.rows;
        var cell = fig.querySelector(".cell");
        cell.style.left = (img.offsetLeft + Math.min(m.x0 + hit.c * cw, m.x0 + (hit.c + 1) * cw) / sx) + "px";
        cell.style.top = (img.offsetTop + Math.min(m.y0 + hit.r * ch, m.y0 + (hit.r + 1) * ch) / sy) + "px";
        cell.style.width = Math.abs(cw / sx) + "px";
        cell.style.height = Math.abs(ch / sy) + "px";
        cell.hidden = false;
        fig.querySelector(".readout").textContent = describe(info.numbers, m, hit.index);
        return;
      }
    }
    clearHover(fig);
  }

  slider.addEventListener("input", function () { show(parseInt(slider.value, 10)); });
  prev.addEventListener("click", function () { show(current - 1); });
  next.addEventListener("click", function () { show(current + 1); });
  document.addEventListener("keydown", function (e) {
    if (e.target === slider || e.altKey || e.ctrlKey || e.metaKey) { return; }
    var to = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 1, End: total }[e.key];
    if (to !== undefined) { e.preventDefault(); show(to); }
  });
  window.addEventListener("hashchange", function () { show(stepFromHash()); });
  document.querySelectorAll("figure[data-figure]").forEach(function (fig) {
    var frames = fig.querySelector(".frames");
    frames.addEventListener("mousemove", function (e) { hover(fig, e); });
    frames.addEventListener("mouseleave", function () { clearHover(fig); });
  });
  show(stepFromHash());
})();
"""


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CONTENT_SECURITY_POLICY = (f"default-src 'none'; img-src data:; style-src {_hash(_STYLE)}; script-src {_hash(_SCRIPT)}; "
                           "base-uri 'none'; form-action 'none'")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def page_html(page: WebPage) -> str:
    """The page as one HTML document: nothing in it loads from elsewhere, every text is escaped."""
    if not page.steps:
        raise WebPageError(translate("web_page", "the page has no steps to show"))
    n = len(page.steps)
    footer = translate("web_page", "Made with attnviz. Move the slider, click ◀ ▶ or press ← → (Home, End) to step; "
                                   "hover over a matrix for its numbers. The address can end in #step=N.")
    body = "\n".join([
        '<main data-step="1">',
        _header(page),
        _controls(n),
        _tokens(page),
        _figures_html(page),
        _notes(page),
        "</main>",
        f"<footer>{_e(footer)}</footer>",
        f'<script type="application/json" id="page-data">{_json_for_script(_page_data(page))}</script>',
        f"<script>{_SCRIPT}</script>",
    ])
    lang = current_language().replace("_", "-")  # the page speaks the interface's language
    dark = ' class="dark"' if page.theme == "dark" else ""
    return "\n".join([
        "<!DOCTYPE html>",
        f'<html lang="{_e(lang)}"{dark}>',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CONTENT_SECURITY_POLICY)}">',
        f'<meta name="generator" content="{GENERATOR} {_e(__version__)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(page_title(page))}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        body,
        "</body>",
        "</html>",
        "",
    ])


def _controls(n: int) -> str:
    """The step slider, its buttons and its label (the script keeps them up to date)."""
    step = _e(translate("web_page", "Step"))
    prev_tip, prev = _e(translate("web_page", "Previous step (←)")), _e(translate("web_page", "Previous"))
    next_tip, next_ = _e(translate("web_page", "Next step (→)")), _e(translate("web_page", "Next"))
    return "\n".join([
        f'<nav id="controls" aria-label="{step}">',
        f'<button type="button" id="prev" title="{prev_tip}">◀ {prev}</button>',
        f'<input type="range" id="step" min="1" max="{n}" value="1" step="1" aria-label="{step}">',
        f'<button type="button" id="next" title="{next_tip}">{next_} ▶</button>',
        f'<output id="step-label" for="step">{_e(_step_words().format(step=1, total=n))}</output>',
        "</nav>",
    ])


def _step_words() -> str:
    """``Step {step} of {total}``: the slider's label, in the page and in its script."""
    return translate("web_page", "Step {step} of {total}")


def _words() -> dict:
    """The words the page's script writes: the slider's label, a masked cell, and the names of the
    data's dimensions and values it knows (others are shown as the data name them)."""
    names = {
        "layer": translate("web_page", "layer"), "head": translate("web_page", "head"), "query": translate("web_page", "query"),
        "key": translate("web_page", "key"), "position": translate("web_page", "position"), "token": translate("web_page", "token"),
        "source": translate("web_page", "source"), "feature": translate("web_page", "feature"), "unit": translate("web_page", "unit"),
        "column": translate("web_page", "column"), "run": translate("web_page", "run"), "node": translate("web_page", "node"),
        "weight": translate("web_page", "weight"), "score": translate("web_page", "score"), "hidden": translate("web_page", "hidden"),
    }
    return {"step": _step_words(), "masked": translate("web_page", "masked"), "names": names}


def page_title(page: WebPage) -> str:
    return translate("web_page", "Attention in {model}: {source}").format(model=page.model, source=page.source)


def _header(page: WebPage) -> str:
    facts = [(translate("web_page", "Model"), _e(page.model)), (translate("web_page", "Source"), f'<span class="sentence">{_e(page.source)}</span>'),
             (translate("web_page", "Source pieces"), _e(" ".join(display_pieces(page.source_pieces))))]
    if page.target:
        facts.append((translate("web_page", "Target"), f'<span class="sentence">{_e(page.target)}</span>'))
    facts.append((translate("web_page", "Steps"), f"{len(page.steps)} ({_e(page.how)})"))
    rows = "\n".join(f"<dt>{_e(name)}</dt><dd>{value}</dd>" for name, value in facts)
    return f'<header>\n<h1>{_e(page_title(page))}</h1>\n<dl class="facts">\n{rows}\n</dl>\n</header>'


def _tokens(page: WebPage) -> str:
    """One list of tokens per step, all but the current one hidden; the step's new token marked."""
    items, after = [], translate("web_page", "After step {step}:")
    for i, step in enumerate(page.steps, 1):
        chips = "".join(f'<li class="{"new" if j == len(step.tokens) - 1 else "old"}">{_e(display_piece(t))}</li>'
                        for j, t in enumerate(step.tokens))
        words = "".join(t for t in step.tokens if t not in SPECIAL_PIECES).replace(SP_WORD_START, " ").strip()
        hidden = "" if i == 1 else " hidden"
        items.append(f'<div class="step-tokens" data-step-item="{i}"{hidden}>'
                     f'<p>{_e(after.format(step=i))} <span class="sentence">{_e(words)}</span></p><ol class="tokens">{chips}</ol></div>')
    label, heading = _e(translate("web_page", "Decoded tokens")), _e(translate("web_page", "Decoded so far"))
    return f'<section id="outputs" aria-label="{label}">\n<h2>{heading}</h2>\n' + "\n".join(items) + "\n</section>"


def _figures_html(page: WebPage) -> str:
    figures = []
    for f, first in enumerate(page.steps[0].figures):
        frames = "\n".join(_img(step.figures[f], i) for i, step in enumerate(page.steps, 1))
        hint = _e(translate("web_page", "Hover over a matrix for its numbers.")) if any(s.figures[f].matrices for s in page.steps) else ""
        figures.append(f'<figure data-figure="{f}" aria-label="{_e(first.title)}">\n<div class="frames">\n{frames}\n'
                       f'<div class="cell" hidden></div>\n</div>\n<p class="readout" aria-live="polite">&nbsp;</p>\n'
                       f'<figcaption class="hint">{hint}</figcaption>\n</figure>')
    label = _e(translate("web_page", "Figures"))
    return f'<section class="figures" aria-label="{label}">\n' + "\n".join(figures) + "\n</section>"


def _img(figure: PageFigure, step: int) -> str:
    src = "data:image/png;base64," + base64.b64encode(figure.png).decode("ascii")
    hidden = "" if step == 1 else " hidden"
    alt = translate("web_page", "{title}, step {step}").format(title=figure.title, step=step)
    return (f'<img src="{src}" width="{figure.width}" height="{figure.height}" alt="{_e(alt)}" '
            f'data-step-item="{step}"{hidden}>')


def _notes(page: WebPage) -> str:
    if not page.notes:
        return ""
    label = _e(translate("web_page", "Notes"))
    return f'<section id="notes" aria-label="{label}">\n' + "\n".join(_note(n, page.source) for n in page.notes) + "\n</section>"


def _note(note: PageNote, source: str) -> str:
    """A paragraph; a titled note (a tour stop) as an article: its title, the sentence its
    numbers were read from (when not the page's), its text; all plain text, escaped."""
    lang = f' lang="{_e(note.language.replace("_", "-"))}"' if note.language else ""
    if not note.title:
        return f"<p{lang}>{_e(note.text)}</p>"
    parts = ['<article class="note">', f"<h2{lang}>{_e(note.title)}</h2>"]
    if note.measured_on and note.measured_on != source:
        about = translate("web_page", "Numbers measured on: {source}").format(source=note.measured_on)
        parts.append(f'<p class="measured-on">{_e(about)}</p>')
    parts += [f"<p{lang}>{_e(note.text)}</p>", "</article>"]
    return "".join(parts)


def _page_data(page: WebPage) -> dict:
    return {"words": _words(), "steps": [{"tokens": list(step.tokens),
                       "figures": [{"title": f.title, "numbers": f.numbers, "matrices": list(f.matrices)} for f in step.figures]}
                      for step in page.steps]}


def _json_for_script(data: dict) -> str:
    """JSON that cannot end its <script> element nor open a comment: ``<``, ``>`` and ``&`` as escapes."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_data(text: str) -> dict:
    """The numbers a page embeds (what its script reads), from the page's HTML."""
    start = text.index('<script type="application/json" id="page-data">')
    start = text.index(">", start) + 1
    return json.loads(text[start: text.index("</script>", start)])


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------
def check_page_folder(folder: str | os.PathLike) -> Path:
    """The page's path in ``folder``, checked before any work: ``WebPageError`` in one line when
    ``folder`` is not a folder, cannot be created or written, or holds an ``index.html`` that is
    not an attnviz page as attnviz wrote it (a link, a pipe or anything else is never opened)."""
    folder = Path(folder)
    page = folder / PAGE_NAME
    if folder.exists() and not folder.is_dir():
        raise WebPageError(translate("web_page", "{folder} is not a folder: the page is written as {name} in the folder given").format(folder=folder, name=PAGE_NAME))
    if os.path.lexists(page) and not is_ours(page):
        raise WebPageError(translate("web_page", "{path} exists and is not a page written by attnviz: choose another folder").format(path=page))
    existing = next(p for p in (folder, *folder.absolute().parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise WebPageError(translate("web_page", "cannot write in {folder}: choose a folder you can write to").format(folder=existing))
    return page


def write_web_page(text: str, folder: str | os.PathLike) -> Path:
    """Write the page ``text`` as ``folder``/index.html atomically, with attnviz's mark (the folder
    created when missing); ``WebPageError`` or ``OutputError`` in one line when it cannot."""
    page = check_page_folder(folder)
    try:
        page.parent.mkdir(parents=True, exist_ok=True)
        return write_output(page, text.encode("utf-8"))
    except OSError as exc:
        raise WebPageError(translate("web_page", "cannot write {path}: {reason}").format(path=page, reason=exc.strerror or exc)) from None


# ---------------------------------------------------------------------------
# The window's File → Export Web Page
# ---------------------------------------------------------------------------
def ask_page_folder(parent) -> Path | None:
    """The folder a page is written in, asked in a save dialog that starts in the last export's
    folder (every export dialog's) with a name nothing has yet: a name that is not there is a new
    folder (made when the page is written), an existing folder is that folder, and ``index.html``
    chosen in a folder is its folder. ``None`` when cancelled."""
    from PySide6 import QtWidgets

    from attnviz.qt.export.dialogs import last_export_dir

    start = last_export_dir()
    names = itertools.chain([PAGE_FOLDER], (f"{PAGE_FOLDER}-{i}" for i in itertools.count(2)))
    suggested = next(start / name for name in names if not os.path.lexists(start / name))
    path, _ = QtWidgets.QFileDialog.getSaveFileName(
        parent, translate("web_page", "Export web page: a new folder for it, or {name} in a folder").format(name=PAGE_NAME), str(suggested),
        options=QtWidgets.QFileDialog.Option.DontConfirmOverwrite)  # a page already there is asked about below
    if not path:
        return None
    return Path(path).parent if Path(path).name == PAGE_NAME else Path(path)


def web_page_dialog(parent, bundle: Bundle, source: str, target: str, panels: Sequence[Panel], theme: str, strategy,
                    notes: Sequence[PageNote | str] = (), size: tuple[int, int] = (900, 640)) -> Path | None:
    """File → Export Web Page: asks for a folder (:func:`ask_page_folder`; the page is its
    ``index.html``, one already there replaced after asking), draws the steps with a cancellable
    progress dialog and writes the page. ``None`` when cancelled; ``WebPageError`` (one line) when
    it cannot."""
    from PySide6 import QtWidgets

    from attnviz.qt.export.dialogs import remember_export_dir

    folder = ask_page_folder(parent)
    if folder is None:
        return None
    page = check_page_folder(folder)
    if page.exists():
        answer = QtWidgets.QMessageBox.question(parent, translate("web_page", "Export web page"), translate("web_page", "{path} exists. Replace it?").format(path=page))
        if answer != QtWidgets.QMessageBox.StandardButton.Yes:
            return None
    progress, tick = progress_dialog(parent, translate("web_page", "Drawing the steps…"), "webPageProgress")
    try:
        built = build_page(bundle, source, target, panels, size, theme, strategy, notes, tick)
    finally:
        progress.close()
    if built is None:
        return None
    written = write_web_page(page_html(built), folder)
    remember_export_dir(folder.parent)  # where the page's folder is: the next page gets a new one beside it
    return written
