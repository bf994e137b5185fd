"""A web page to hand out: one self-contained HTML file in which a reader explores a sentence's attention.

The page holds the model's name, the source sentence, the typed target (if any), the tokens
decoded at each step and a step slider (with previous/next buttons, the arrow keys, Home and End).
The reader chooses the kind of attention (encoder, decoder, cross), the layer and the head (or the
mean over heads): a small inline script draws that matrix at the chosen step on a ``<canvas>``, the
tokens as its labels, the current step's row outlined, and shows the row's and column's tokens and
the weight of the cell under the mouse in a tooltip.

The matrices travel as data: one JSON ``<script type="application/json">`` element holds, for
every step and kind, the weights of every layer and head and their mean over heads as integer
thousandths (a weight rounded to 3 decimals: :data:`SCALE`); a step stores only the query rows
that are not the previous step's unchanged (:func:`carried_rows`), so a decoding's matrices cost
about one matrix of the last step. The chosen views' figures at the last step are kept in a
``<noscript>`` element for a reader without scripts.

It loads nothing from elsewhere: a Content-Security-Policy forbids every remote load, and its one
inline script and style are allowed by their SHA-256 hashes only. Text from the model or the user
reaches the script as JSON data with ``<``, ``>`` and ``&`` escaped, and the script puts it in the
page with ``textContent`` (or draws it on the canvas), never as markup; the page's own text around
it is HTML-escaped.

The page opens on ``#step=N`` when the address ends so (steps count from 1). ``notes`` is an
optional list of text blocks shown under the matrix (:class:`PageNote`): a paragraph, or a tour
stop's title and text in the tour's language, with the sentence its numbers were measured on when
that is not the page's. The tour's stops play one at a time (back and next), each setting the
kind, layer, head and step it is about (:class:`PageChoice`) when it is shown. A stop with an
exercise asks it first (:mod:`attnviz.qt.publish.page_exercises`: worked out when the page is
written, on the page's model and sentence, its answer in the page's data): its question, its
choices (radio buttons, or a grid of check boxes), Check and Skip, with the stop's text and the
matrix hidden until it is answered or skipped; then the verdict and the feedback with the live
numbers, and the running score under the stops.

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
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PySide6 import QtCore, QtGui
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz import __version__
from attnviz.core.bundle import Bundle
from attnviz.core.data.pieces import SP_WORD_START, display_piece, display_pieces
from attnviz.core.exercises import Question
from attnviz.core.model.sites import KINDS
from attnviz.core.outputs import is_ours, write_output
from attnviz.core.tour_data import StopExercise
from attnviz.errors import AttnvizError
from attnviz.qt.core_text import kind_title, strategy_text
from attnviz.qt.i18n import current_language, translate
from attnviz.qt.publish.animation import Panel, animation_frames, progress_dialog
from attnviz.qt.publish.page_exercises import PageExercise, exercise_data, page_exercise
from attnviz.qt.widgets.colormaps import CSS_FONT_FAMILY, get_theme, lookup_table
from attnviz.qt.widgets.figures import figure_size

TIP_NAMES = (QT_TRANSLATE_NOOP("web_page", "query"), QT_TRANSLATE_NOOP("web_page", "key"), QT_TRANSLATE_NOOP("web_page", "weight"))  # the hover tip's names

PAGE_NAME = "index.html"  # the page's file name in the folder asked for
PAGE_FOLDER = "attnviz-page"  # the folder the export dialog suggests (with -2, -3, … where it is taken)
GENERATOR = "attnviz"  # the page's <meta name="generator"> (whether a page is ours is told by its mark: attnviz.core.outputs)
SPECIAL_PIECES = ("SOS", "EOS")  # left out of the sentence decoded so far (shown among its tokens)
SCALE = 1000  # weights travel as integers: the weight times SCALE, rounded (3 decimals)
KIND_ORDER = ("cross", "decoder", "encoder")  # the kind the page opens on: the first of these the model has


class WebPageError(AttnvizError):
    """A page that cannot be made or written: one line."""


@dataclass(frozen=True)
class PageFigure:
    """One view's picture, for a reader without scripts."""

    title: str
    png: bytes
    width: int  # the PNG's pixels
    height: int


@dataclass(frozen=True)
class PageAttention:
    """One kind's attention at one step: what the page's canvas draws."""

    weights: np.ndarray  # [layer, head, query, key]
    rows: tuple[str, ...]  # the query pieces
    cols: tuple[str, ...]  # the key pieces
    highlight: int | None = None  # the current step's query row (None: encoder self-attention)


@dataclass(frozen=True)
class PageStep:
    """One step: the tokens decoded so far (or the target's outputs up to this position), and each kind's attention then."""

    tokens: tuple[str, ...]
    attention: Mapping[str, PageAttention] = field(default_factory=dict)


@dataclass(frozen=True)
class PageChoice:
    """What the page's matrix shows: a kind, a layer and a head (``None``: the mean over heads),
    0-based, and a step (1-based; ``None``: the last); ``query``: the row a stop's exercise asks
    about (0-based; ``None``: the step's)."""

    kind: str = "cross"
    layer: int = 0
    head: int | None = 0
    step: int | None = None
    query: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")


@dataclass(frozen=True)
class PageNote:
    """A text block under the matrix: a paragraph, or a tour stop's title and its text."""

    text: str
    title: str = ""
    language: str = ""  # the title's and text's language ("zh_CN"); "": the page's
    measured_on: str = ""  # the source sentence the text's numbers were read from; "": the page's
    choice: PageChoice | None = None  # what the matrix shows while the stop is shown (None: a paragraph; it changes nothing)
    exercise: StopExercise | None = None  # asked before the stop's text and the matrix show (worked out by build_page)

    @property
    def is_stop(self) -> bool:
        """A tour stop (titled, setting the matrix's choice), played one at a time; else a paragraph."""
        return bool(self.title) and self.choice is not None


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
    notes: tuple[PageNote, ...] = field(default_factory=tuple)  # text blocks under the matrix (the tour's, when there is one)
    figures: tuple[PageFigure, ...] = ()  # the chosen views at the last step, for a reader without scripts
    start: PageChoice = PageChoice()  # what the matrix shows when the page opens (its step: the address's, else 1)
    exercises: tuple[PageExercise | None, ...] = ()  # each tour stop's exercise, in the stops' order (None: it asks nothing)


# ---------------------------------------------------------------------------
# The replay
# ---------------------------------------------------------------------------
def build_page(bundle: Bundle, source: str, target: str, panels: Sequence[Panel], size: tuple[int, int],
               theme: str = "light", strategy=None, notes: Sequence[PageNote | str] = (),
               progress: Callable[[int, int], bool] | None = None) -> WebPage | None:
    """The page of ``source``'s decoding (or of ``target``, teacher-forced): one step per frame
    of :func:`animation_frames`, each kind's attention recorded at each step, ``panels`` drawn at
    ``size`` each (the last step's pictures are kept). ``None`` when ``progress`` (called as
    ``progress(done, total)``) returns ``False``."""
    if not panels:
        raise WebPageError(translate("web_page", "choose at least one view for the page"))
    steps: list[PageStep] = []
    replay: dict = {}

    def frame_drawn(session, views) -> None:
        replay["session"], replay["views"] = session, [(view.figure_title(), figure_size(view)) for view in views]
        steps.append(_step_record(session))

    frames = animation_frames(bundle, source, target, panels, size, theme, strategy, progress, frame_drawn)
    if frames is None:
        return None
    if not frames:
        raise WebPageError(translate("web_page", "nothing to show: the decoding has no steps"))
    session = replay["session"]
    if session.forced is not None:
        how = translate("web_page", "teacher forcing on the typed target")
    else:
        how = translate("web_page", "{strategy} decoding").format(strategy=strategy_text(session.strategy))
    typed = target if session.forced is not None else ""
    notes = tuple(n if isinstance(n, PageNote) else PageNote(str(n)) for n in notes)
    exercises = asked_exercises(bundle, source, typed, notes, len(steps), progress)
    if exercises is None:
        return None
    return WebPage(bundle.name, source, typed, how, tuple(session.src_pieces()), tuple(steps), theme, notes,
                   _figures(frames[-1], replay["views"]), _start_choice(panels), exercises)


def asked_exercises(bundle: Bundle, source: str, target: str, notes: Sequence[PageNote], steps: int,
                    progress: Callable[[int, int], bool] | None = None) -> tuple[PageExercise | None, ...] | None:
    """Each tour stop's exercise among ``notes``, worked out on the page's sentence (``target``:
    teacher-forced on it) with the stop's kind, layer, head and query at the page's step the stop
    shows (of ``steps``); ``None`` for a stop that asks nothing or whose exercise cannot be. The
    whole is ``None`` when ``progress`` (called after each exercise) returns ``False``."""
    stops = [n for n in notes if n.is_stop]
    asked: list[PageExercise | None] = []
    for done, note in enumerate(stops, 1):
        c = note.choice
        step = None if c.step is None else min(max(c.step, 1), steps)
        question = Question(source, target, step, c.kind, c.layer, c.head, c.query)
        asked.append(None if note.exercise is None else page_exercise(bundle, note.exercise, question, note.language))
        if note.exercise is not None and progress is not None and progress(done, len(stops)) is False:
            return None
    return tuple(asked)


def _step_record(session) -> PageStep:
    """What the replay's session shows now: the tokens so far and each kind's attention."""
    row = session.current_row()
    attention = {}
    for kind in KINDS:
        data = session.frames.attention_data(kind)
        if data is not None and data.weights.size:
            attention[kind] = PageAttention(np.array(data.weights, dtype=np.float32), tuple(data.query_labels),
                                            tuple(data.key_labels), data.highlight)
    return PageStep(tuple(session.output_pieces()[: (row or 0) + 1]), attention)


def _start_choice(panels: Sequence[Panel]) -> PageChoice:
    """The first panel's kind, layer and head (or mean) that names a kind of attention."""
    for panel in panels:
        c = panel.choice
        if c.kind in KINDS:
            return PageChoice(c.kind, c.layer or 0, None if c.mode == "mean" else (c.head or 0))
    return PageChoice()


def _figures(frame: QtGui.QImage, views: list[tuple[str, QtCore.QSize]]) -> tuple[PageFigure, ...]:
    """Each view's picture, cut out of the frame (the views side by side, top-aligned, in order)."""
    figures, x = [], 0
    for title, size in views:
        w, h = max(1, size.width()), max(1, size.height())
        figures.append(PageFigure(title, png_bytes(frame.copy(x, 0, w, h)), w, h))
        x += w
    return tuple(figures)


def png_bytes(image: QtGui.QImage) -> bytes:
    buf = QtCore.QBuffer()
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buf, "PNG"):
        raise WebPageError(translate("web_page", "Qt could not encode a figure as PNG"))
    return bytes(buf.data())


# ---------------------------------------------------------------------------
# The matrices as data
# ---------------------------------------------------------------------------
def thousandths(weights: np.ndarray) -> np.ndarray:
    """``[layer, head, query, key]`` weights with their mean over heads as one more head, each
    times :data:`SCALE` rounded to an integer (a weight that is not finite as 0)."""
    w = np.asarray(weights, dtype=np.float64)
    w = np.concatenate([w, w.mean(axis=1, keepdims=True)], axis=1)
    return np.rint(np.nan_to_num(w, nan=0.0, posinf=0.0, neginf=0.0) * SCALE).astype(np.int64)


def carried_rows(before: np.ndarray | None, now: np.ndarray) -> int:
    """How many leading query rows of ``now`` (``[layer, head, query, key]``) are ``before``'s
    rows unchanged, the keys ``now`` has beyond ``before``'s all 0 in them (masked then)."""
    if before is None or before.shape[:2] != now.shape[:2] or before.shape[3] > now.shape[3]:
        return 0
    n, keys = min(before.shape[2], now.shape[2]), before.shape[3]
    same = (now[:, :, :n, :keys] == before[:, :, :n]).all(axis=(0, 1, 3)) & (now[:, :, :n, keys:] == 0).all(axis=(0, 1, 3))
    return n if same.all() else int(np.argmin(same))


def attention_entries(steps: Sequence[PageStep]) -> list[dict]:
    """Each step's attention as the page's script reads it, per kind: ``shape`` (layer, head + 1
    for the mean, query, key), ``keep`` (the leading rows that are the previous step's, padded
    with 0 for new keys), ``rows`` (the other rows, flat, in thousandths), ``highlight``, and the
    query and key labels where they are not the previous step's (``rowLabels``, ``colLabels``)."""
    kinds = [k for k in KINDS if all(k in s.attention for s in steps)]
    before: dict[str, tuple[np.ndarray, PageAttention]] = {}
    entries = []
    for step in steps:
        entry = {}
        for kind in kinds:
            now, values = step.attention[kind], thousandths(step.attention[kind].weights)
            prev = before.get(kind)
            keep = carried_rows(prev[0] if prev else None, values)
            e = {"shape": list(values.shape), "keep": keep, "rows": values[:, :, keep:].ravel().tolist(), "highlight": now.highlight}
            if prev is None or prev[1].rows != now.rows:
                e["rowLabels"] = list(display_pieces(now.rows))
            if prev is None or prev[1].cols != now.cols:
                e["colLabels"] = list(display_pieces(now.cols))
            entry[kind], before[kind] = e, (values, now)
        entries.append(entry)
    return entries

# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------
_STYLE = """
:root { color-scheme: light; --fg: #1d232b; --muted: #5b6570; --bg: #ffffff; --panel: #f3f5f7; --accent: #1f6feb; --line: #d5dae0;
        --right: #147828; --wrong: #aa1e1e; }
html.dark { color-scheme: dark; --fg: #e6e8eb; --muted: #a3abb5; --bg: #16191d; --panel: #22262c; --accent: #6ea8ff; --line: #3a4048;
            --right: #5cc46f; --wrong: #ff7b72; }
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
#controls input[type=range] { flex: 1 1 14rem; accent-color: var(--accent); }
#controls button, #controls select, #stop-controls button { font: inherit; padding: .2rem .6rem; }
#controls label { display: inline-flex; align-items: center; gap: .35rem; color: var(--muted); }
#step-label { min-width: 8rem; font-variant-numeric: tabular-nums; }
.tokens { list-style: none; display: flex; flex-wrap: wrap; gap: .3rem; margin: .2rem 0 1rem; padding: 0; }
.tokens li { padding: .1rem .45rem; border: 1px solid var(--line); border-radius: 4px; background: var(--panel); }
.tokens li.new { border-color: var(--accent); box-shadow: 0 0 0 1px var(--accent) inset; font-weight: 600; }
#explorer { margin: 0 0 1rem; }
#canvas-wrap { position: relative; max-width: 100%; }
#matrix { display: block; }
#tip { position: absolute; z-index: 3; pointer-events: none; padding: .3rem .55rem; background: var(--panel); color: var(--fg);
       border: 1px solid var(--line); border-radius: 4px; line-height: 1.4; white-space: nowrap; font-variant-numeric: tabular-nums;
       box-shadow: 0 2px 6px rgba(0, 0, 0, .25); }
#tip .tip-name { color: var(--muted); }
#tip-weight { font-weight: 600; }
.hint { color: var(--muted); font-size: .85rem; margin: .3rem 0 0; }
.figures { display: flex; flex-wrap: wrap; gap: 1.2rem; align-items: flex-start; }
figure { margin: 0; max-width: 100%; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
#stop-controls { display: flex; align-items: center; gap: .6rem; margin: 0 0 .4rem; }
#stop-label { font-variant-numeric: tabular-nums; }
#notes p { max-width: 60rem; white-space: pre-wrap; }
#notes .note { margin: 1rem 0 0; }
#notes .measured-on { color: var(--muted); font-size: .9rem; margin: 0; }
#matrix-cover { margin: 0 0 1rem; padding: 2.5rem 1rem; max-width: 60rem; text-align: center; color: var(--muted);
                background: var(--panel); border: 1px dashed var(--line); border-radius: 6px; }
.exercise { margin: .6rem 0; padding: .6rem .9rem; max-width: 60rem; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; }
#notes .exercise p { margin: 0 0 .4rem; }
#notes .exercise .exercise-question { font-weight: 600; }
#notes .exercise .exercise-context { color: var(--muted); }
.exercise-choices label { display: flex; align-items: baseline; gap: .4rem; width: fit-content; padding: .1rem .4rem; border-radius: 4px; }
.exercise-grid { border-collapse: collapse; margin: 0 0 .3rem; }
.exercise-grid th { padding: 0 .35rem; color: var(--muted); font-weight: normal; font-variant-numeric: tabular-nums; }
.exercise-grid td { padding: 0; text-align: center; border-radius: 3px; }
.exercise-grid input { margin: .2rem; }
.exercise .is-answer { box-shadow: 0 0 0 2px var(--right) inset; }
.exercise .chosen-wrong { box-shadow: 0 0 0 2px var(--wrong) inset; }
.exercise-buttons { display: flex; gap: .6rem; margin: .4rem 0; }
.exercise-buttons button { font: inherit; padding: .2rem .8rem; }
#notes .exercise .exercise-feedback { margin: .4rem 0 0; font-weight: 600; }
.exercise-feedback[data-verdict=right] { color: var(--right); }
.exercise-feedback[data-verdict=wrong] { color: var(--wrong); }
#exercise-score { font-weight: 600; font-variant-numeric: tabular-nums; }
footer { margin-top: 2rem; color: var(--muted); font-size: .85rem; }
""".replace("FONTS", CSS_FONT_FAMILY)

_SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("page-data").textContent);
  var words = data.words, total = data.steps.length, kinds = data.kinds;
  function byId(id) { return document.getElementById(id); }
  var slider = byId("step"), label = byId("step-label"), prev = byId("prev"), next = byId("next");
  var kindBox = byId("kind"), layerBox = byId("layer"), headBox = byId("head");
  var canvas = byId("matrix"), title = byId("matrix-title"), tip = byId("tip"), main = document.querySelector("main");
  var chosen = { kind: data.start.kind, layer: data.start.layer, head: data.start.head, step: 1 };
  var built = {}, drawn = null, current = 1;

  function rebuild(before, e) {  /* a step's matrices: the rows kept from the step before (0 for new keys), then its own */
    var Q = e.shape[2], K = e.shape[3], fresh = Q - e.keep, values = new Int32Array(e.shape[0] * e.shape[1] * Q * K);
    for (var lh = 0; lh < e.shape[0] * e.shape[1]; lh++) {
      for (var q = 0; q < Q; q++) {
        for (var k = 0; k < K; k++) {
          values[(lh * Q + q) * K + k] = q >= e.keep ? e.rows[(lh * fresh + q - e.keep) * K + k]
            : (k < before.shape[3] ? before.values[(lh * before.shape[2] + q) * before.shape[3] + k] : 0);
        }
      }
    }
    return { shape: e.shape, values: values, highlight: e.highlight,
             rows: e.rowLabels || before.rows, cols: e.colLabels || before.cols };
  }

  function matrices(kind, step) {
    var list = built[kind] || (built[kind] = []);
    while (list.length < step) { list.push(rebuild(list[list.length - 1], data.steps[list.length].attention[kind])); }
    return list[step - 1];
  }

  function colour(v) {
    var i = Math.round(Math.min(Math.max(v / data.scale, 0), 1) * 255);
    return "#" + data.colors.lut.substr(i * 6, 6);
  }

  function widest(ctx, labels) {
    return labels.reduce(function (w, t) { return Math.max(w, ctx.measureText(t).width); }, 0);
  }

  function choiceText() {
    var head = chosen.head === null ? words.mean : words.head.replace("{n}", chosen.head + 1);
    return [words.kinds[chosen.kind], words.layer.replace("{n}", chosen.layer + 1), head,
            words.step.replace("{step}", chosen.step).replace("{total}", total)].join(" \u00b7 ");
  }

  function draw() {
    if (!canvas) { return; }
    var m = matrices(chosen.kind, chosen.step), H = m.shape[1], Q = m.shape[2], K = m.shape[3];
    var base = (chosen.layer * H + (chosen.head === null ? H - 1 : chosen.head)) * Q * K;
    var ctx = canvas.getContext("2d"), font = "13px " + window.getComputedStyle(document.body).fontFamily;
    ctx.font = font;
    var left = Math.ceil(widest(ctx, m.rows)) + 12, top = Math.ceil(widest(ctx, m.cols) * 0.71) + 18;
    var fitWidth = Math.floor((canvas.parentNode.clientWidth - left - top) / K);
    var fitHeight = Math.floor((window.innerHeight - byId("controls").offsetHeight - 90 - top) / Q);
    var cell = Math.max(14, Math.min(36, fitWidth, fitHeight));
    var width = left + K * cell + top, height = top + Q * cell + 4, ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.fillStyle = data.colors.background;
    ctx.fillRect(0, 0, width, height);
    for (var q = 0; q < Q; q++) {
      for (var k = 0; k < K; k++) {
        ctx.fillStyle = colour(m.values[base + q * K + k]);
        ctx.fillRect(left + k * cell, top + q * cell, cell, cell);
      }
    }
    ctx.font = font;
    ctx.fillStyle = data.colors.foreground;
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    m.rows.forEach(function (t, i) { ctx.fillText(t, left - 6, top + (i + 0.5) * cell); });
    ctx.textAlign = "left";
    m.cols.forEach(function (t, i) {
      ctx.save();
      ctx.translate(left + (i + 0.5) * cell, top - 6);
      ctx.rotate(-Math.PI / 4);
      ctx.fillText(t, 0, 0);
      ctx.restore();
    });
    if (m.highlight !== null && m.highlight < Q) {
      ctx.strokeStyle = data.colors.highlight;
      ctx.lineWidth = 2;
      ctx.strokeRect(left + 1, top + m.highlight * cell + 1, K * cell - 2, cell - 2);
    }
    drawn = { m: m, base: base, left: left, top: top, cell: cell, width: width };
    canvas.setAttribute("data-choice", [chosen.kind, chosen.layer, chosen.head === null ? "mean" : chosen.head, chosen.step].join(" "));
    canvas.setAttribute("data-geometry", [left, top, cell].join(" "));
    title.textContent = choiceText();
    canvas.setAttribute("aria-label", title.textContent);
    tip.hidden = true;
  }

  function hover(event) {
    if (!drawn) { return; }
    var box = canvas.getBoundingClientRect(), s = drawn.width / box.width, m = drawn.m;
    var x = (event.clientX - box.left) * s, y = (event.clientY - box.top) * s;
    var k = Math.floor((x - drawn.left) / drawn.cell), q = Math.floor((y - drawn.top) / drawn.cell);
    if (q < 0 || k < 0 || q >= m.shape[2] || k >= m.shape[3]) { tip.hidden = true; return; }
    byId("tip-row").textContent = m.rows[q];
    byId("tip-col").textContent = m.cols[k];
    byId("tip-weight").textContent = (m.values[drawn.base + q * m.shape[3] + k] / data.scale).toFixed(3);
    tip.setAttribute("data-cell", q + " " + k);
    tip.hidden = false;
    var wrap = canvas.parentNode.getBoundingClientRect(), px = event.clientX - wrap.left + 14;
    if (event.clientX + 14 + tip.offsetWidth > document.documentElement.clientWidth) { px -= tip.offsetWidth + 28; }
    tip.style.left = px + "px";
    tip.style.top = (event.clientY - wrap.top + 14) + "px";
  }

  function fillLayers() {
    var n = matrices(chosen.kind, 1).shape[0];
    chosen.layer = Math.min(Math.max(chosen.layer, 0), n - 1);
    while (layerBox.firstChild) { layerBox.removeChild(layerBox.firstChild); }
    for (var i = 0; i < n; i++) {
      var option = document.createElement("option");
      option.value = String(i);
      option.textContent = String(i + 1);
      layerBox.appendChild(option);
    }
    layerBox.value = String(chosen.layer);
  }

  function choose(kind, layer, head) {
    if (!canvas) { return; }
    chosen.kind = kinds.indexOf(kind) >= 0 ? kind : chosen.kind;
    chosen.layer = layer;
    chosen.head = head === null || head < matrices(chosen.kind, 1).shape[1] - 1 ? head : chosen.head;
    kindBox.value = chosen.kind;
    fillLayers();
    headBox.value = chosen.head === null ? "mean" : String(chosen.head);
  }

  function stepFromHash() {
    var m = /^#step=(\d+)$/.exec(window.location.hash);
    return m ? parseInt(m[1], 10) : 1;
  }

  function show(step) {
    if (!isFinite(step)) { step = 1; }
    current = Math.min(Math.max(step, 1), total);
    chosen.step = current;
    slider.value = String(current);
    main.setAttribute("data-step", String(current));
    document.querySelectorAll("[data-step-item]").forEach(function (el) {
      el.hidden = el.getAttribute("data-step-item") !== String(current);
    });
    label.textContent = words.step.replace("{step}", current).replace("{total}", total);
    prev.disabled = current === 1;
    next.disabled = current === total;
    if (window.location.hash !== "#step=" + current) {
      try { window.history.replaceState(null, "", "#step=" + current); } catch (e) { /* a viewer that keeps the address */ }
    }
    draw();
  }

  var stops = Array.prototype.slice.call(document.querySelectorAll("#notes [data-stop]")), stopAt = 0;
  var panels = {}, outcomes = {};  /* by stop: its exercise's parts once built; its verdict and the choices made once answered */

  function element(tag, className, text) {
    var el = document.createElement(tag);
    if (className) { el.className = className; }
    if (text !== undefined) { el.textContent = text; }
    return el;
  }

  function choiceList(ex, name) {  /* a radio button per choice */
    var list = element("div", "exercise-choices"), inputs = [];
    list.setAttribute("role", "radiogroup");
    ex.choices.forEach(function (text, i) {
      var label = element("label"), input = element("input");
      input.type = "radio";
      input.name = name;
      input.value = String(i);
      label.appendChild(input);
      label.appendChild(element("span", "", text));
      list.appendChild(label);
      inputs.push(input);
    });
    return { el: list, inputs: inputs };
  }

  function cellGrid(ex) {  /* a check box per cell, row-major, the rows and columns numbered from 1 */
    var table = element("table", "exercise-grid"), inputs = [], n = ex.columns, row = table.insertRow();
    row.appendChild(element("th"));
    for (var c = 0; c < n; c++) { row.appendChild(element("th", "", String(c + 1))); }
    ex.choices.forEach(function (text, i) {
      if (i % n === 0) { row = table.insertRow(); row.appendChild(element("th", "", String(i / n + 1))); }
      var input = element("input");
      input.type = "checkbox";
      input.value = String(i);
      input.title = text;
      input.setAttribute("aria-label", text);
      row.insertCell().appendChild(input);
      inputs.push(input);
    });
    return { el: table, inputs: inputs };
  }

  function buildExercise(i) {  /* stop i's question, its context, its choices, Check and Skip, and the place of the feedback */
    var ex = data.exercises[i], box = stops[i].querySelector(".exercise"), question = element("p", "exercise-question", ex.question);
    if (ex.lang) { question.lang = ex.lang; }
    var choices = ex.columns ? cellGrid(ex) : choiceList(ex, "exercise-" + i), buttons = element("div", "exercise-buttons");
    var check = element("button", "exercise-check", words.check), skip = element("button", "exercise-skip", words.skip);
    var feedback = element("p", "exercise-feedback");
    check.type = skip.type = "button";
    buttons.appendChild(check);
    buttons.appendChild(skip);
    feedback.hidden = true;
    feedback.setAttribute("aria-live", "polite");
    box.appendChild(question);
    if (ex.context) { box.appendChild(element("p", "exercise-context", ex.context)); }
    [choices.el, buttons, feedback].forEach(function (el) { box.appendChild(el); });
    var panel = { ex: ex, inputs: choices.inputs, check: check, buttons: buttons, feedback: feedback };
    panel.inputs.forEach(function (input) { input.addEventListener("change", function () { enableCheck(panel); }); });
    check.addEventListener("click", function () { answer(i, null); });
    skip.addEventListener("click", function () { answer(i, "skipped"); });
    box.hidden = false;
    enableCheck(panel);
    return panel;
  }

  function chosenOf(panel) {
    return panel.inputs.filter(function (b) { return b.checked; }).map(function (b) { return parseInt(b.value, 10); });
  }

  function enableCheck(panel) {  /* a list: once a choice is made; a grid: always (no cell ticked is an answer too) */
    panel.check.disabled = !panel.ex.columns && !chosenOf(panel).length;
  }

  function isRight(ex, chosen) {
    return chosen.length === ex.answers.length && chosen.every(function (c) { return ex.answers.indexOf(c) >= 0; });
  }

  function feedbackText(ex, verdict, chosen) {  /* a grid's wrong or skipped feedback counts the cells ticked */
    var text = ex.feedback[verdict];
    if (!ex.columns) { return text; }
    var hits = chosen.filter(function (c) { return ex.answers.indexOf(c) >= 0; }).length;
    return text.split("{hits}").join(String(hits)).split("{extra}").join(String(chosen.length - hits));
  }

  function showOutcome(panel, outcome) {  /* the choices as made, the answer marked, the verdict and its feedback */
    panel.inputs.forEach(function (input, j) {
      var isAnswer = panel.ex.answers.indexOf(j) >= 0;
      input.disabled = true;
      input.parentNode.classList.toggle("is-answer", isAnswer);
      input.parentNode.classList.toggle("chosen-wrong", input.checked && !isAnswer);
    });
    panel.buttons.hidden = true;
    panel.feedback.textContent = feedbackText(panel.ex, outcome.verdict, outcome.chosen);
    panel.feedback.setAttribute("data-verdict", outcome.verdict);
    panel.feedback.hidden = false;
  }

  function answer(i, verdict) {  /* Check (verdict null: right or wrong) or Skip: the outcome shown, the text and the matrix uncovered */
    var panel = panels[i], chosen = chosenOf(panel);
    outcomes[i] = { verdict: verdict || (isRight(panel.ex, chosen) ? "right" : "wrong"), chosen: chosen };
    showOutcome(panel, outcomes[i]);
    ask(i);
    updateScore();
    panel.feedback.scrollIntoView({ block: "nearest" });
  }

  function ask(i) {  /* stop i is shown: while its exercise is not answered, its text and the matrix are hidden */
    var ex = data.exercises[i], asking = !!ex && !outcomes[i], text = stops[i].querySelector(".stop-text");
    if (ex && !panels[i]) { panels[i] = buildExercise(i); }
    if (text) { text.hidden = asking; }
    var cover = byId("matrix-cover");
    if (canvas && cover) {
      var covered = byId("explorer").hidden;
      byId("explorer").hidden = asking;
      cover.hidden = !asking;
      if (covered && !asking) { draw(); }  /* drawn while hidden it had no room to fit */
    }
  }

  function updateScore() {  /* "n of m right": once an exercise is answered, and always at the last stop */
    var score = byId("exercise-score");
    if (!score) { return; }
    var total = data.exercises.filter(function (e) { return e; }).length, answered = Object.keys(outcomes);
    var right = answered.filter(function (k) { return outcomes[k].verdict === "right"; }).length;
    score.textContent = words.score.replace("{n}", right).replace("{m}", total);
    score.setAttribute("data-right", String(right));
    score.setAttribute("data-total", String(total));
    score.hidden = !answered.length && stopAt !== stops.length - 1;
  }

  function showStop(i) {
    stopAt = Math.min(Math.max(i, 0), stops.length - 1);
    stops.forEach(function (el, j) { el.hidden = j !== stopAt; });
    byId("stop-label").textContent = words.stop.replace("{n}", stopAt + 1).replace("{total}", stops.length);
    byId("stop-prev").disabled = stopAt === 0;
    byId("stop-next").disabled = stopAt === stops.length - 1;
    ask(stopAt);
    var c = data.stops[stopAt];
    choose(c.kind, c.layer, c.head);
    show(c.step === null ? total : c.step);
    updateScore();
  }

  slider.addEventListener("input", function () { show(parseInt(slider.value, 10)); });
  prev.addEventListener("click", function () { show(current - 1); });
  next.addEventListener("click", function () { show(current + 1); });
  document.addEventListener("keydown", function (e) {
    if (/^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName) || e.altKey || e.ctrlKey || e.metaKey) { return; }
    var to = { ArrowLeft: current - 1, ArrowRight: current + 1, Home: 1, End: total }[e.key];
    if (to !== undefined) { e.preventDefault(); show(to); }
  });
  window.addEventListener("hashchange", function () { show(stepFromHash()); });
  if (canvas) {
    byId("explorer").hidden = false;
    kindBox.addEventListener("change", function () { choose(kindBox.value, chosen.layer, chosen.head); draw(); });
    layerBox.addEventListener("change", function () { chosen.layer = parseInt(layerBox.value, 10); draw(); });
    headBox.addEventListener("change", function () { chosen.head = headBox.value === "mean" ? null : parseInt(headBox.value, 10); draw(); });
    canvas.addEventListener("mousemove", hover);
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
    window.addEventListener("resize", draw);
    choose(chosen.kind, chosen.layer, chosen.head);
  }
  if (stops.length) {
    byId("stop-controls").hidden = false;
    byId("stop-prev").addEventListener("click", function () { showStop(stopAt - 1); });
    byId("stop-next").addEventListener("click", function () { showStop(stopAt + 1); });
  }
  if (stops.length && !/^#step=\d+$/.test(window.location.hash)) { showStop(0); } else { show(stepFromHash()); }
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
    data = _page_data(page)
    footer = translate("web_page", "Made with attnviz. Move the slider, click ◀ ▶ or press ← → (Home, End) to step; "
                                   "hover over a matrix for its numbers. The address can end in #step=N.")
    body = "\n".join([
        '<main data-step="1">',
        _header(page),
        _controls(len(page.steps), data),
        _tokens(page),
        _explorer(data),
        _noscript_figures(page),
        _notes(page),
        "</main>",
        f"<footer>{_e(footer)}</footer>",
        f'<script type="application/json" id="page-data">{_json_for_script(data)}</script>',
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


def _controls(n: int, data: dict) -> str:
    """The kind, layer and head boxes (when there is attention to draw), the step slider, its
    buttons and its label (the script keeps them up to date)."""
    step = _e(translate("web_page", "Step"))
    prev_tip, prev = _e(translate("web_page", "Previous step (←)")), _e(translate("web_page", "Previous"))
    next_tip, next_ = _e(translate("web_page", "Next step (→)")), _e(translate("web_page", "Next"))
    return "\n".join([
        f'<nav id="controls" aria-label="{step}">',
        *(_choice_boxes(data) if data["kinds"] else []),
        f'<button type="button" id="prev" title="{prev_tip}">◀ {prev}</button>',
        f'<input type="range" id="step" min="1" max="{n}" value="1" step="1" aria-label="{step}">',
        f'<button type="button" id="next" title="{next_tip}">{next_} ▶</button>',
        f'<output id="step-label" for="step">{_e(_step_words().format(step=1, total=n))}</output>',
        "</nav>",
    ])


def _choice_boxes(data: dict) -> list[str]:
    """``<select>`` boxes of the kinds the page has, the start kind's layers, and the heads and their mean."""
    start, first = data["start"], data["steps"][0]["attention"][data["start"]["kind"]]["shape"]
    kinds = "".join(f'<option value="{k}"{" selected" if k == start["kind"] else ""}>{_e(kind_title(k))}</option>' for k in data["kinds"])
    layers = "".join(f'<option value="{i}"{" selected" if i == start["layer"] else ""}>{i + 1}</option>' for i in range(first[0]))
    heads = "".join(f'<option value="{i}"{" selected" if i == start["head"] else ""}>{i + 1}</option>' for i in range(first[1] - 1))
    mean = " selected" if start["head"] is None else ""
    heads += f'<option value="mean"{mean}>{_e(data["words"]["mean"])}</option>'
    return [f'<label>{_e(translate("web_page", "attention"))} <select id="kind">{kinds}</select></label>',
            f'<label>{_e(translate("web_page", "layer"))} <select id="layer">{layers}</select></label>',
            f'<label>{_e(translate("web_page", "head"))} <select id="head">{heads}</select></label>']


def _step_words() -> str:
    """``Step {step} of {total}``: the slider's label, in the page and in its script."""
    return translate("web_page", "Step {step} of {total}")


def _words(kinds: Sequence[str]) -> dict:
    """The words the page's script writes: the slider's label, the tour's counter, the parts of the
    matrix's title (the page's ``kinds`` only), and an exercise's buttons and the score (the window's words)."""
    return {"step": _step_words(), "stop": translate("web_page", "Stop {n} of {total}"),
            "kinds": {k: kind_title(k) for k in kinds}, "layer": translate("selection", "layer {n}"),
            "head": translate("selection", "head {n}"), "mean": translate("selection", "mean of heads"),
            "check": translate("exercise", "Check"), "skip": translate("exercise", "Skip"), "score": translate("exercise", "{n} of {m} right")}


def _colors(theme: str) -> dict:
    """The theme's colours the canvas draws with, and its colour map as 256 ``rrggbb`` in one string."""
    t = get_theme(theme)
    lut = "".join(f"{r:02x}{g:02x}{b:02x}" for r, g, b, _ in lookup_table(t.colormap).tolist())
    return {"lut": lut, "background": t.background, "foreground": t.foreground, "highlight": t.highlight}


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


def _explorer(data: dict) -> str:
    """The canvas the script draws the chosen matrix on, its title and the tooltip of the cell
    under the mouse (hidden until the script shows it: nothing to see without scripts)."""
    if not data["kinds"]:
        return ""
    names = {n: _e(translate("web_page", n)) for n in TIP_NAMES}
    hint = _e(translate("web_page", "Hover over a matrix for its numbers."))
    cover = _e(translate("web_page", "The matrix shows once the tour's question below is answered or skipped."))
    return "\n".join([
        *([f'<p id="matrix-cover" hidden>{cover}</p>'] if any(data["exercises"]) else []),
        f'<section id="explorer" aria-label="{_e(translate("web_page", "Figures"))}" hidden>',
        '<h2 id="matrix-title"></h2>',
        '<div id="canvas-wrap"><canvas id="matrix" role="img"></canvas>',
        f'<div id="tip" role="tooltip" hidden><span class="tip-name">{names["query"]}</span> <span id="tip-row"></span><br>'
        f'<span class="tip-name">{names["key"]}</span> <span id="tip-col"></span><br>'
        f'<span class="tip-name">{names["weight"]}</span> <span id="tip-weight"></span></div></div>',
        f'<p class="hint">{hint}</p>',
        "</section>",
    ])


def _noscript_figures(page: WebPage) -> str:
    """The chosen views' pictures at the last step, for a reader without scripts."""
    if not page.figures:
        return ""
    n, alt = len(page.steps), translate("web_page", "{title}, step {step}")
    figures = "\n".join(
        f'<figure><img src="data:image/png;base64,{base64.b64encode(f.png).decode("ascii")}" width="{f.width}" height="{f.height}" '
        f'alt="{_e(alt.format(title=f.title, step=n))}"><figcaption>{_e(f.title)}</figcaption></figure>' for f in page.figures)
    return f'<noscript>\n<section class="figures" aria-label="{_e(translate("web_page", "Figures"))}">\n{figures}\n</section>\n</noscript>'


def _notes(page: WebPage) -> str:
    if not page.notes:
        return ""
    label = _e(translate("web_page", "Notes"))
    nav = ""
    if any(n.is_stop for n in page.notes):
        back, forward = _e(translate("web_page", "Previous")), _e(translate("web_page", "Next"))
        nav = (f'<nav id="stop-controls" hidden><button type="button" id="stop-prev">◀ {back}</button>'
               f'<output id="stop-label"></output><button type="button" id="stop-next">{forward} ▶</button></nav>\n')
    count, asked = itertools.count(), {i for i, e in enumerate(page.exercises) if e is not None}
    stops = [next(count) if n.is_stop else None for n in page.notes]
    notes = "\n".join(_note(n, page.source, stop, stop in asked) for n, stop in zip(page.notes, stops))
    score = '\n<p id="exercise-score" aria-live="polite" hidden></p>' if asked else ""
    return f'<section id="notes" aria-label="{label}">\n{nav}{notes}{score}\n</section>'


def _note(note: PageNote, source: str, stop: int | None, asks: bool = False) -> str:
    """A paragraph; a titled note (a tour stop) as an article: its title, the sentence its
    numbers were read from (when not the page's), its text; all plain text, escaped. A stop
    that sets the matrix's choice carries its index among those (``data-stop``); one that
    ``asks`` an exercise has a place for it before its text (the script fills it from the data)."""
    lang = f' lang="{_e(note.language.replace("_", "-"))}"' if note.language else ""
    if not note.title:
        return f"<p{lang}>{_e(note.text)}</p>"
    parts = ['<article class="note">' if stop is None else f'<article class="note" data-stop="{stop}">', f"<h2{lang}>{_e(note.title)}</h2>"]
    if note.measured_on and note.measured_on != source:
        about = translate("web_page", "Numbers measured on: {source}").format(source=note.measured_on)
        parts.append(f'<p class="measured-on">{_e(about)}</p>')
    if asks:
        parts.append(f'<div class="exercise" role="group" aria-label="{_e(translate("web_page", "Exercise"))}" hidden></div>')
    text_class = ' class="stop-text"' if asks else ""  # hidden while the exercise is asked
    parts += [f"<p{lang}{text_class}>{_e(note.text)}</p>", "</article>"]
    return "".join(parts)


def _page_data(page: WebPage) -> dict:
    """What the script reads: its words and colours, the kinds of attention, where the matrix
    starts, each tour stop's choice and exercise (``None``: it asks nothing; :func:`exercise_data`),
    and each step's tokens and attention (:func:`attention_entries`)."""
    entries = attention_entries(page.steps)
    kinds = list(entries[0]) if entries else []
    stops, asked = [n for n in page.notes if n.is_stop], dict(enumerate(page.exercises))
    exercises = [exercise_data(asked[i]) if asked.get(i) is not None else None for i in range(len(stops))]
    return {"words": _words(kinds), "scale": SCALE, "colors": _colors(page.theme), "kinds": kinds,
            "start": _fitted(page.start, entries), "stops": [_fitted(n.choice, entries) for n in stops], "exercises": exercises,
            "steps": [{"tokens": list(step.tokens), "attention": entry} for step, entry in zip(page.steps, entries)]}


def _fitted(choice: PageChoice, entries: list[dict]) -> dict:
    """``choice`` within what the page has: a kind it has (else the first of :data:`KIND_ORDER`),
    a layer and head it has (else its last), a step it has (``None``: the last)."""
    first = entries[0] if entries else {}
    kind = choice.kind if choice.kind in first else next((k for k in KIND_ORDER if k in first), choice.kind)
    layers, heads = first[kind]["shape"][:2] if kind in first else (1, 2)
    step = None if choice.step is None else min(max(choice.step, 1), max(len(entries), 1))
    head = None if choice.head is None else min(choice.head, heads - 2)
    return {"kind": kind, "layer": min(choice.layer, layers - 1), "head": head, "step": step}


def _json_for_script(data: dict) -> str:
    """JSON that cannot end its <script> element nor open a comment: ``<``, ``>`` and ``&`` as escapes."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_data(text: str) -> dict:
    """The data a page embeds (what its script reads), from the page's HTML."""
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
