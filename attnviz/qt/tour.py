"""Help → Tour: the tutorial's ideas in its order, one stop at a time, on the live window.

A stop (:class:`attnviz.core.tour_data.Stop`, read from ``resources/tour/<language>.json``) sets
the window's state (the sentences, the tokens decoded, the linked selection), raises its view,
outlines the part of it that matters (:class:`TourHighlight`) and explains it in two or three
sentences whose numbers are read from the window as it is then (:data:`MEASURE_GROUPS`, one
function per view). :class:`TourPanel` is a dock with Back, Next and Leave: the window stays
usable at every stop, a change the user makes there is explained anew with the new numbers, and
:meth:`TourPanel.resume` goes back to the stop that was left.

The main window offers it as Help → Tour through :func:`start_tour`, in the interface's language
(:func:`tour_for`), and the tour in the other language beside it (:func:`other_tour`). The panel's
own words (title, counter, buttons) come with the tour, so it speaks the tour's language.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.attention_vs_attribution import ATTENTION_MEASURES, ATTRIBUTION_MEASURES
from attnviz.core.analysis.norms import placement_formula
from attnviz.core.analysis.scaling import SCALED, UNSCALED
from attnviz.core.data.pieces import SP_WORD_START, display_piece, display_pieces
from attnviz.core.decoding.strategies import Greedy
from attnviz.core.tour_data import LANGUAGES, Stop, Tour, TourError, fill, load_tour, stop_misfit
from attnviz.qt.core_text import kind_name
from attnviz.qt.exercises import ExerciseHost
from attnviz.qt.i18n import translate
from attnviz.qt.widgets.plain_text import plain_label

POLL_MS = 40  # how often a stop looks whether its view has drawn its data
READY_TIMEOUT_S = 120.0  # a view that has not drawn by then is explained with what it shows
SETTLE_S = 0.6  # s after a stop is explained during which its region is kept scrolled into view
PANEL_WIDTH = 280  # px of the left dock column when the tour opens (the grid in the centre keeps its room)
PANEL_SHARE = 0.62  # of the left column's height the tour takes when it opens
OUTLINE = QtGui.QColor(255, 120, 0, 230)  # the highlight: a semi-transparent orange outline
FILL = QtGui.QColor(255, 120, 0, 38)

Region = tuple[QtWidgets.QWidget, QtGui.QPolygonF]  # a widget and a polygon in its coordinates


@dataclass(frozen=True)
class Context:
    """A stop in the window (a ``qt.main_window.MainWindow``): what measures and regions read."""

    window: QtWidgets.QMainWindow
    stop: Stop

    @property
    def session(self):
        return self.window.session

    @property
    def views(self):
        return self.window.views

    @property
    def view(self):
        return self.window.views.views[self.stop.view]


# -- measures: the numbers a stop's text quotes, read from the window -----------------------------
def model_measures(ctx: Context) -> dict[str, Any]:
    cfg = ctx.session.bundle.config
    return {"d_model": cfg.d_model, "d_k": cfg.d_model // cfg.n_heads, "n_heads": cfg.n_heads, "d_ff": cfg.d_ff,
            "encoder_layers": cfg.n_encoder_layers, "decoder_layers": cfg.n_decoder_layers, "target_vocab": cfg.tgt_vocab_size}


def head_row(ctx: Context) -> int:
    """The head detail's row a stop talks about: its query row, else the current step's, else the last."""
    d = ctx.view.data()
    n = d.weights.shape[2]
    q = ctx.stop.state.query
    if q is None:
        q = d.highlight if d.highlight is not None else n - 1
    return min(max(q, 0), n - 1)


def head_measures(ctx: Context) -> dict[str, Any]:
    view, row = ctx.view, head_row(ctx)
    d = view.data()
    w = np.asarray(view.current_matrix(), np.float64)[row]
    j = int(np.argmax(w))
    return {"head_layer": view.layer() + 1, "head_head": view.head() + 1, "head_query": display_piece(d.query_labels[row]),
            "head_keys": int(w.size), "head_row_sum": float(w.sum()), "head_max_weight": float(w[j]),
            "head_max_key": display_piece(d.key_labels[j])}


def word_pieces(pieces: tuple[str, ...], word: str) -> list[int]:
    """The positions of the pieces that spell ``word`` where it first occurs in ``pieces``."""
    texts = [p.replace(SP_WORD_START, "") for p in pieces]
    starts = np.cumsum([0, *map(len, texts)])
    at = "".join(texts).find(word)
    if at < 0:
        return []
    return [i for i, t in enumerate(texts) if starts[i] < at + len(word) and starts[i] + len(t) > at]


def focus_ranks(pieces: tuple[str, ...], ranking: tuple[int, ...], words: tuple[str, ...]) -> str | None:
    """``开 26 · 心 10``: each piece of the focus words and its rank (1 = first) in ``ranking``."""
    found = [i for word in words for i in word_pieces(pieces, word)]
    return " · ".join(f"{display_piece(pieces[i])} {ranking.index(i) + 1}" for i in found) or None


def top_pieces(pieces: tuple[str, ...], ranking: tuple[int, ...], n: int = 3) -> str:
    return " ".join(display_piece(pieces[i]) for i in ranking[:n])


def attribution_measures(ctx: Context) -> dict[str, Any]:
    r = ctx.view.result()
    pieces, att, ig = r.source_pieces, r.ranking(ATTENTION_MEASURES[0]), r.ranking("ig")
    return {"attr_token": display_piece(r.question.token_piece), "attr_position": r.question.position + 1,
            "attr_sources": len(pieces), "attr_focus_ranks": focus_ranks(pieces, att, ctx.stop.state.focus),
            "attr_attention_top": top_pieces(pieces, att), "attr_ig_top": top_pieces(pieces, ig),
            "attr_rho": r.mean_rho(ATTENTION_MEASURES, ATTRIBUTION_MEASURES), **known_measures(ctx.session.forced)}


def known_measures(forced) -> dict[str, Any]:
    """How well the model knows the typed translation: teacher-forced, how many of its tokens it
    predicts (``None`` each without a typed target)."""
    if forced is None or not forced.steps:
        return {"attr_known": None, "attr_targets": None, "attr_accuracy": None}
    return {"attr_known": sum(p.match for p in forced.steps), "attr_targets": len(forced.steps), "attr_accuracy": forced.accuracy}


def walkthrough_measures(ctx: Context) -> dict[str, Any]:
    w = ctx.view.data()
    q = w.query
    a = np.asarray(w.weights[q], np.float64)
    j = int(np.argmax(a))
    return {"walk_query": display_piece(w.query_labels[q]), "walk_top_key": display_piece(w.key_labels[j]),
            "walk_top_score": float(w.scores[q, j]), "walk_top_weight": float(a[j]), "walk_row_sum": float(a.sum()),
            "walk_min_weight": float(a.min()), "walk_z": float(w.z[q, 0]), "walk_head": w.head + 1,
            "walk_head_first": w.head_columns[0], "walk_head_last": w.head_columns[1] - 1}


def scaling_measures(ctx: Context) -> dict[str, Any]:
    view = ctx.view
    stats, i = view.layer_stats(), view.layer()
    return {"scale_sqrt_dk": math.sqrt(view.comparison().d_k), "scale_max_scaled": float(stats.max_weight[SCALED][i]),
            "scale_max_unscaled": float(stats.max_weight[UNSCALED][i]), "scale_entropy_scaled": float(stats.entropy[SCALED][i]),
            "scale_entropy_unscaled": float(stats.entropy[UNSCALED][i])}


def compare_measures(ctx: Context) -> dict[str, Any]:
    r, t = ctx.view.comparison(), ctx.view.translations()
    return {"cmp_a": r.a.text, "cmp_b": r.b.text, "cmp_max_difference": r.max_deviation if r.positional else None,
            "cmp_translation_a": t.get(("A", True)), "cmp_translation_b": t.get(("B", True)),
            "cmp_translation_no_pe": t.get(("A", False))}


def residual_measures(ctx: Context) -> dict[str, Any]:
    cfg = ctx.session.bundle.config
    stream = ctx.view.stack("encoder").mean_stream()
    return {"res_formula": placement_formula(cfg.norm, cfg.norm_placement), "res_first": float(stream[0]), "res_last": float(stream[-1])}


def norm_measures(ctx: Context) -> dict[str, Any]:
    site = ctx.view.compared_site()
    row, col = ctx.view.marked()
    c = site.comparison
    return {"norm_token": display_piece(site.pieces[row]), "norm_ln_mean": float(c.layer_mean[row]), "norm_ln_std": float(c.layer_std[row]),
            "norm_feature": col, "norm_bn_mean": float(c.batch_mean[col]), "norm_bn_std": float(c.batch_std[col]),
            "norm_tokens": len(site.pieces)}


def ffn_measures(ctx: Context) -> dict[str, Any]:
    f, q = ctx.view.current(), ctx.view.query()
    return {"ffn_layer": f.layer + 1, "ffn_off": ctx.view.off_share(), "ffn_token": display_piece(f.pieces[q]),
            "ffn_active": int(np.count_nonzero(f.hidden[q] > 0))}


def info_measures(ctx: Context) -> dict[str, Any]:
    return {"info_parameters": ctx.view.info().total}


def output_measures(ctx: Context) -> dict[str, Any]:
    view, out = ctx.view, {}
    loss = view.forced_arrays()["loss"]
    if loss.size:
        out.update(out_fed=" ".join(display_pieces(view.in_axis.labels())), out_labels=" ".join(display_pieces(view.target_axis.labels())),
                   out_positions=int(loss.size), out_loss=float(loss.mean()))
    elif view.topk():
        piece, _, p = view.topk()[0]
        out.update(out_step=ctx.session.n_rows(), out_token=display_piece(piece), out_prob=float(p),
                   out_entropy=float(view.figure_data().extras["entropy"]))
    return out


def teacher_free_measures(ctx: Context) -> dict[str, Any]:
    r = ctx.view.result()
    d = r.departure
    if d is None:
        return {}
    free, ref = r.free.predicted_pieces, r.reference_pieces
    return {"tvf_departure": d + 1, "tvf_free": display_piece(free[d]) if d < len(free) else None,
            "tvf_reference": display_piece(ref[d]) if d < len(ref) else None}


def mask_measures(ctx: Context) -> dict[str, Any]:
    m = ctx.view.matrices()
    w = np.asarray(m["weights"], np.float64)
    n, step = w.shape[0], ctx.view.data().step
    row = n - 1 if step is None else step
    upper = w[np.triu_indices(n, 1)]
    return {"mask_upper_max": float(upper.max()) if upper.size else 0.0, "mask_masked": int(upper.size), "mask_row": row + 1,
            "mask_row_sum": float(w[row].sum()), "mask_allowed": int(np.isfinite(m["mask"][row]).sum())}


#: Each view's measures (``None``: the open model's), one function each: name → value.
MEASURE_GROUPS: dict[str | None, Callable[[Context], dict[str, Any]]] = {
    None: model_measures, "head": head_measures, "attribution": attribution_measures, "walkthrough": walkthrough_measures,
    "scaling": scaling_measures, "compare": compare_measures, "residual": residual_measures,
    "norm": norm_measures, "ffn": ffn_measures, "model-info": info_measures, "output": output_measures,
    "teacher-vs-free": teacher_free_measures, "mask": mask_measures,
}


def measure_values(ctx: Context) -> dict[str, Any]:
    """The measures of the stop's view and of the model; a group that cannot be read (the view has
    nothing to show) gives none, and the text shows "—" for them."""
    values: dict[str, Any] = {}
    for key in (None, ctx.stop.view):
        group = MEASURE_GROUPS.get(key)
        try:
            values.update(group(ctx) if group is not None else {})
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            continue
    return values


# -- regions: what a stop outlines ------------------------------------------------------------
def widget_region(widget: QtWidgets.QWidget) -> Region:
    return widget, QtGui.QPolygonF(QtCore.QRectF(widget.rect()))


def scene_region(item: QtWidgets.QGraphicsItem, polygon: QtGui.QPolygonF) -> Region:
    """``polygon`` (scene coordinates of ``item``'s scene) in its canvas's viewport."""
    canvas = item.scene().views()[0]
    return canvas.viewport(), QtGui.QPolygonF(canvas.mapFromScene(polygon))


def items_region(*items: QtWidgets.QGraphicsItem) -> Region:
    """The box around ``items``."""
    box = QtCore.QRectF()
    for item in items:
        box |= item.sceneBoundingRect()
    return scene_region(items[0], QtGui.QPolygonF(box))


def cells_polygon(plot, points: list[tuple[float, float]]) -> Region:
    """A polygon of matrix coordinates (column, row; a cell spans ±0.5) of a matrix plot."""
    poly = QtGui.QPolygonF([QtCore.QPointF(x, y) for x, y in points])
    return scene_region(plot, plot.getViewBox().mapViewToScene(poly))


def cells(plot, col0: int, row0: int, col1: int, row1: int) -> Region:
    """Cells ``[row0, row1) × [col0, col1)`` of a matrix plot."""
    x0, y0, x1, y1 = col0 - 0.5, row0 - 0.5, col1 - 0.5, row1 - 0.5
    return cells_polygon(plot, [(x0, y0), (x1, y0), (x1, y1), (x0, y1)])


def upper_triangle(n: int) -> list[tuple[float, float]]:
    """The cells above the diagonal of an n × n matrix, as a staircase polygon."""
    points = [(0.5, -0.5), (n - 0.5, -0.5), (n - 0.5, n - 1.5)]
    for r in range(n - 2, -1, -1):
        points += [(r + 0.5, r + 0.5), (r + 0.5, r - 0.5)]
    return points


def region_mask_triangle(ctx: Context) -> Region:
    plot = ctx.view.panels["weights"]
    n = ctx.view.matrices()["weights"].shape[0]
    return cells_polygon(plot, upper_triangle(n)) if n > 1 else items_region(plot)


def region_head_row(ctx: Context) -> Region:
    row, n = head_row(ctx), ctx.view.current_matrix().shape[1]
    return cells(ctx.view.plot, 0, row, n, row + 1)


def region_walk_row(ctx: Context) -> Region:
    table = ctx.view.tables["weights"]
    rows, cols = table.window
    row = ctx.view.data().query - rows.start
    return cells(table, 0, row, cols.stop - cols.start, row + 1)


def region_attribution(ctx: Context) -> Region:
    view = ctx.view
    return cells(view.measures, 0, 0, len(view.result().source_pieces), 1)  # row 1: cross attention


#: How each region of :data:`attnviz.core.tour_data.REGIONS` is found in the window.
REGION_FUNCS: dict[str, Callable[[Context], Region]] = {
    "view": lambda ctx: widget_region(ctx.views.frames[ctx.stop.view]),
    "head-row": region_head_row,
    "attribution-cross-row": region_attribution,
    "walk-scores": lambda ctx: items_region(ctx.view.tables["scores"]),
    "walk-weights-row": region_walk_row,
    "walk-z": lambda ctx: items_region(ctx.view.tables["z"]),
    "scaling-heatmaps": lambda ctx: items_region(ctx.view.heat_scaled, ctx.view.heat_unscaled),
    "walk-concat": lambda ctx: items_region(ctx.view.tables["concat"], ctx.view.tables["w_o"]),
    "compare-difference": lambda ctx: items_region(ctx.view.panels["out_diff"]),
    "residual-encoder": lambda ctx: items_region(ctx.view.plots["encoder"].plot),
    "norm-compare": lambda ctx: items_region(*ctx.view.cmp_plots.values()),
    "ffn-hidden": lambda ctx: items_region(ctx.view.heatmap),
    "model-table": lambda ctx: widget_region(ctx.view.table),
    "output-forced": lambda ctx: items_region(ctx.view.prob_plot, ctx.view.loss_plot),
    "output-topk": lambda ctx: items_region(ctx.view.topk_plot),
    "teacher-table": lambda ctx: items_region(ctx.view.table),
    "mask-upper-triangle": region_mask_triangle,
}


def region_of(ctx: Context) -> Region | None:
    """The stop's region now (``None``: its view has nothing to outline yet)."""
    try:
        return REGION_FUNCS[ctx.stop.highlight](ctx)
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return None


def visible_rect(widget: QtWidgets.QWidget, top: QtWidgets.QWidget) -> QtCore.QRect:
    """The part of ``widget`` its ancestors up to ``top`` leave on screen, in ``top``'s coordinates."""
    rect = QtCore.QRect(widget.mapTo(top, QtCore.QPoint(0, 0)), widget.size())
    w = widget.parentWidget()
    while w is not None and w is not top:
        rect &= QtCore.QRect(w.mapTo(top, QtCore.QPoint(0, 0)), w.size())
        w = w.parentWidget()
    return rect & top.rect()


def scroll_into_view(region: Region) -> None:
    """Scroll every scroll area around the region's widget so that the region is in view."""
    widget, polygon = region
    box = polygon.boundingRect()
    w = widget.parentWidget()
    while w is not None:
        inner = w.widget() if isinstance(w, QtWidgets.QScrollArea) else None
        if inner is not None and inner.isAncestorOf(widget):
            centre = widget.mapTo(inner, box.center().toPoint())
            w.ensureVisible(centre.x(), centre.y(), int(min(box.width() / 2 + 8, 400)), int(min(box.height() / 2 + 8, 300)))
        w = w.parentWidget()


POSITIONAL_TEXT = {  # shown as translate("tour", text)
    "sinusoidal": QT_TRANSLATE_NOOP("tour", "sinusoidal positional encoding added to its embeddings"),
    "learned": QT_TRANSLATE_NOOP("tour", "learned positions (a table of position vectors added to its embeddings)"),
    "relative": QT_TRANSLATE_NOOP("tour", "relative position biases on its attention scores (nothing added to its embeddings)"),
}


def misfit_text(stop: str, what: str, words: tuple[str, ...]) -> str:
    """:func:`~attnviz.core.tour_data.stop_misfit`'s reason for stop ``stop`` in the interface's language."""
    if what == "kind":
        return translate("tour", "the stop “{stop}” shows {kind}, and this model has no layers of it").format(stop=stop, kind=kind_name(words[0]))
    described = translate("tour", " or ").join(translate("tour", POSITIONAL_TEXT[p]) for p in words[1:])
    return translate("tour", "the stop “{stop}” explains {described}; this model has {has}").format(
        stop=stop, described=described, has=translate("tour", POSITIONAL_TEXT[words[0]]))


class TourHighlight(QtWidgets.QWidget):
    """A semi-transparent outline over a region of the window, placed again whenever the widget
    it lies in (or one of its ancestors) moves, is resized, shown or hidden; hidden while the
    region is off screen. It lets every mouse event through to the window."""

    MARGIN = 4  # px around the outline (its pen is drawn inside the widget)

    def __init__(self, parent: QtWidgets.QWidget):
        super().__init__(parent)
        self.setObjectName("tourHighlight")
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self._find: Callable[[], Region | None] | None = None
        self._watched: list[QtWidgets.QWidget] = []
        self._polygon = QtGui.QPolygonF()
        self._scheduled = False
        self._scroll_until = 0.0
        self._scene: QtWidgets.QGraphicsScene | None = None  # the scene of the region, followed too
        self.target: QtWidgets.QWidget | None = None  # the widget the region lies in
        self.hide()

    def follow(self, find: Callable[[], Region | None]) -> None:
        """Outline what ``find()`` returns, now and whenever the layout changes; while the
        view settles (:data:`SETTLE_S`) the region is also scrolled into view."""
        self._find = find
        self._scroll_until = time.monotonic() + SETTLE_S
        self.place()

    def clear(self) -> None:
        self._find = None
        self._watch(None)
        self.hide()

    def polygon_in_window(self) -> QtGui.QPolygonF:
        """The outline in the coordinates of the window it is drawn in (empty when hidden)."""
        return self._polygon.translated(QtCore.QPointF(self.pos())) if self.isVisible() else QtGui.QPolygonF()

    def place(self) -> None:
        self._scheduled = False
        region = self._find() if self._find is not None else None
        if region is None:
            self._watch(None)
            self.hide()
            return
        widget, polygon = region
        if time.monotonic() < self._scroll_until:
            scroll_into_view(region)
        top = widget.window()
        if self.parentWidget() is not top:
            self.setParent(top)
        self._watch(widget)
        shown = polygon.translated(QtCore.QPointF(widget.mapTo(top, QtCore.QPoint(0, 0))))
        shown = shown.intersected(QtGui.QPolygonF(QtCore.QRectF(visible_rect(widget, top))))
        if shown.isEmpty() or shown.boundingRect().isEmpty() or not widget.isVisible():
            self.hide()
            return
        box = shown.boundingRect().toAlignedRect().adjusted(-self.MARGIN, -self.MARGIN, self.MARGIN, self.MARGIN)
        self.setGeometry(box)
        self._polygon = shown.translated(-QtCore.QPointF(box.topLeft()))
        self.show()
        self.raise_()
        self.update()

    def _watch(self, widget: QtWidgets.QWidget | None) -> None:
        """Follow ``widget`` and its ancestors (none: stop following)."""
        chain = []
        while widget is not None:
            chain.append(widget)
            widget = widget.parentWidget()
        if chain == self._watched:
            return
        for w in self._watched:
            w.removeEventFilter(self)
        for w in chain:
            w.installEventFilter(self)
        self._watched = chain
        self.target = chain[0] if chain else None
        self._follow_scene(chain[1] if len(chain) > 1 and isinstance(chain[1], QtWidgets.QGraphicsView) else None)

    def _follow_scene(self, canvas: QtWidgets.QGraphicsView | None) -> None:
        """A region in a canvas moves with its scene's layout, which no widget event reports."""
        scene = canvas.scene() if canvas is not None else None
        if scene is self._scene:
            return
        if self._scene is not None:
            self._scene.changed.disconnect(self._schedule)
        if scene is not None:
            scene.changed.connect(self._schedule)
        self._scene = scene

    def _schedule(self, *_) -> None:
        if not self._scheduled:
            self._scheduled = True
            QtCore.QTimer.singleShot(0, self, self.place)

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 - Qt API
        moved = (QtCore.QEvent.Type.Resize, QtCore.QEvent.Type.Move, QtCore.QEvent.Type.Show, QtCore.QEvent.Type.Hide)
        if event.type() in moved:
            self._schedule()
        return False

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802 - Qt API
        painter = QtGui.QPainter(self)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        pen = QtGui.QPen(OUTLINE, 3)
        pen.setJoinStyle(QtCore.Qt.PenJoinStyle.RoundJoin)
        painter.setPen(pen)
        painter.setBrush(FILL)
        painter.drawPolygon(self._polygon)
        painter.end()


# -- a stop's state -----------------------------------------------------------------------------
def apply_stop(window: QtWidgets.QMainWindow, stop: Stop) -> None:
    """Raise the stop's view (linked again if the user unlinked it) and give the window the
    stop's selection, sentences and tokens. The view is raised first, so that the one it covers
    does not compute what nobody sees; the selection is set before the sentences, so that a view
    computed from its choice (the walkthrough, the attribution) computes the new sentence for the
    stop's choice at once (set after, the ViewSet takes the choice for the one it already shows
    while the feed of the previous choice is still running, and shows that one)."""
    st, views = stop.state, window.views
    raise_view(window, stop.view)
    views.set_linked(stop.view, True)
    views.selection.update(kind=st.kind, layer=st.layer, head=st.head, mode="head", query=st.query)
    set_inputs(window, st.source, st.target)
    window.session.go_to(st.steps)
    views.bring_up_to_date(views.frames[stop.view])


def set_inputs(window: QtWidgets.QMainWindow, source: str, target: str) -> None:
    """The sentences (and greedy decoding): re-encoded only when they change; the stop says how far
    to decode."""
    s = window.session
    greedy = type(s.strategy) is Greedy
    if (s.source, s.target) == (source, target) and s.current is not None and greedy:
        return
    window.input_bar.set_texts(source, target)
    if not greedy:
        window.step_bar.show_strategy(Greedy())
    s.set_inputs(source, target, strategy=None if greedy else Greedy(), to_end=False)


def raise_view(window: QtWidgets.QMainWindow, name: str) -> None:
    """Show view ``name``'s dock in front (the central grid has none)."""
    dock = window.docks.get(window.views.specs[name].dock_name)
    if dock is not None:
        dock.show()
        dock.raise_()


def stop_ready(window: QtWidgets.QMainWindow, stop: Stop) -> bool:
    """The stop's view shows the window's current data: nothing decoding, loading or computing."""
    s, views, name = window.session, window.views, stop.view
    if s.bundle is None or s.loading or s.running or s.analyses.pending() or name in views.stale:
        return False
    return not views.frames[name].is_empty() and views.views[name].has_data()


# -- the panel -------------------------------------------------------------------------------------
class TourPanel(QtWidgets.QDockWidget):
    """The tour's dock (objectName ``tourPanel``): the stop's title, its counter, its text (plain
    text) and Back / Next / Leave (``tourBack``, ``tourNext``, ``tourLeave``).

    ``go(i)`` sets stop ``i``'s state and, once its view has drawn, shows its text and outline
    (``stopShown(i)``; ``ready`` is then True and ``values`` holds the measures quoted). While a
    stop is shown, a change in the window (another step, another head) explains it again.
    ``visited_stops()`` gives each stop explained since the panel opened, as last explained
    (File → Export Web Page puts them on the page). ``leave()`` hides the panel and the outline and leaves the window as it is; ``resume()`` goes
    back to the stop that was left.
    """

    stopShown = QtCore.Signal(int)
    left = QtCore.Signal()

    def __init__(self, window: QtWidgets.QMainWindow, tour: Tour):
        super().__init__(tour.labels.title, window)
        self.setObjectName("tourPanel")
        self.main = window
        self.tour = tour
        self.index = 0
        self.values: dict[str, Any] = {}
        self._visited: dict[int, tuple[dict[str, Any], str]] = {}  # stop index → its measures and the source they were read on
        self.active = False
        self.ready = False
        self._needs_apply = False
        self._applying = False
        self._started = 0.0
        self._settled = 0  # ticks the stop's view has been ready for
        self.highlight = TourHighlight(window)
        self._poll = QtCore.QTimer(self, interval=POLL_MS)
        self._poll.timeout.connect(self._tick)
        self._build()
        window.session.decodingChanged.connect(self._on_window_changed)
        window.views.selection.changed.connect(self._on_window_changed)
        self._dock_in(window)

    def _build(self) -> None:
        box = QtWidgets.QWidget(objectName="tourBox")
        layout = QtWidgets.QVBoxLayout(box)
        self.title_label = plain_label("", "tourTitle")
        font = self.title_label.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title_label.setFont(font)
        self.counter = plain_label("", "tourCounter")
        self.text_label = plain_label("", "tourText")  # quotes token pieces: never read as rich text
        self.text_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        for label in (self.title_label, self.text_label):
            label.setWordWrap(True)
        buttons = QtWidgets.QHBoxLayout()
        self.back_button = QtWidgets.QPushButton(objectName="tourBack")
        self.next_button = QtWidgets.QPushButton(objectName="tourNext")
        self.leave_button = QtWidgets.QPushButton(objectName="tourLeave")
        self.back_button.clicked.connect(self.back)
        self.next_button.clicked.connect(self.next)
        self.leave_button.clicked.connect(self.leave)
        for b in (self.back_button, self.next_button, self.leave_button):
            buttons.addWidget(b)
        scroll = QtWidgets.QScrollArea(objectName="tourTextScroll")  # a long text in a short dock scrolls
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.text_label)
        self.text_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        for w in (self.title_label, self.counter):
            layout.addWidget(w)
        layout.addWidget(scroll, 1)
        self.exercises = ExerciseHost(self, scroll)  # a stop's exercise, asked before its text and view show
        layout.addWidget(self.exercises.panel, 1)
        layout.addLayout(buttons)
        self.setWidget(box)
        self.setMinimumWidth(240)
        self._set_words()

    def _dock_in(self, window: QtWidgets.QMainWindow) -> None:
        """Below the top-k list; once laid out, the left column :data:`PANEL_WIDTH` wide and the
        tour :data:`PANEL_SHARE` of its height."""
        area, vertical = QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, QtCore.Qt.Orientation.Vertical
        self._layout_before = window.saveState()  # leaving the tour gives the window this layout back
        window.addDockWidget(area, self)
        topk = window.docks.get("topkDock")
        beside = topk is not None and not topk.isFloating() and window.dockWidgetArea(topk) == area
        if beside:
            window.splitDockWidget(topk, self, vertical)
        QtCore.QTimer.singleShot(0, self, lambda: self._size_in(window, topk if beside else None))

    def _size_in(self, window: QtWidgets.QMainWindow, topk: QtWidgets.QDockWidget | None) -> None:
        window.resizeDocks([self], [PANEL_WIDTH], QtCore.Qt.Orientation.Horizontal)
        if topk is not None:
            column = topk.height() + self.height()
            share = int(column * PANEL_SHARE)
            window.resizeDocks([topk, self], [column - share, share], QtCore.Qt.Orientation.Vertical)

    # -- moving through the stops ---------------------------------------------------------
    def stop(self) -> Stop:
        return self.tour.stops[self.index]

    def go(self, index: int) -> None:
        """Stop ``index``: its state set (once a model is open), then its text and outline."""
        self.index = max(0, min(int(index), len(self.tour.stops) - 1))
        self.active = True
        self.show()
        self.raise_()
        self.highlight.clear()
        self.exercises.clear()
        self._needs_apply = True
        self._wait()

    def next(self) -> None:
        if self.index + 1 < len(self.tour.stops):
            self.go(self.index + 1)

    def back(self) -> None:
        if self.index > 0:
            self.go(self.index - 1)

    def leave(self) -> None:
        """Hide the panel and the outline; the docks are laid out again as they were before the
        tour opened (the views and sentences stay as the tour left them)."""
        self._deactivate()
        self.hide()
        self.main.restoreState(self._layout_before)

    def resume(self) -> None:
        """Back to the stop that was left (its state set again)."""
        self.go(self.index)

    def set_tour(self, tour: Tour) -> None:
        """Another language's tour (the same stops): the stop shown is explained in it."""
        self.tour = tour
        self.index = min(self.index, len(tour.stops) - 1)
        self.setWindowTitle(tour.labels.title)
        self._set_words()

    def play(self, tour: Tour) -> None:
        """Another tour (a tour file opened) from its first stop; what the last one explained is forgotten."""
        self._visited.clear()
        self.exercises.forget()
        self.index = 0
        self.set_tour(tour)
        self.go(0)

    def text(self) -> str:
        return self.text_label.text()

    def visited_stops(self) -> list[tuple[Stop, str, str]]:
        """Each stop explained since the panel opened, in the tour's order: the stop (in the
        tour's language now), its text as the panel showed it when last explained (the same
        measures filled in), and the source sentence those measures were read on."""
        return [(self.tour.stops[i], fill(self.tour.stops[i].text, values), source)
                for i, (values, source) in sorted(self._visited.items())]

    # -- waiting for the view, then explaining ----------------------------------------------
    def _wait(self) -> None:
        self.ready = False
        self._settled = 0
        self._started = time.monotonic()
        self._set_words()
        self._tick()
        if not self.ready:
            self._poll.start()

    def _tick(self) -> None:
        late = time.monotonic() - self._started > READY_TIMEOUT_S
        if self._explain_mismatch():
            return
        if self._needs_apply and not self._apply():
            if late:  # no model opened in all that time: the panel waits for the next Back, Next or resume
                self._poll.stop()
            return
        self._settled = self._settled + 1 if late or stop_ready(self.main, self.stop()) else 0
        if self._settled < 2:  # ready for one more turn of the event loop: the view's layout has settled
            return
        self._poll.stop()
        self._explain()

    def _explain_mismatch(self) -> bool:
        """Say at once, in one line, that the stop does not apply to the open model (its kind of
        attention or its positional scheme is not the model's): no waiting for a view that cannot
        show it. True when it did."""
        s = self.main.session
        misfit = None if s.bundle is None or s.loading else stop_misfit(self.stop(), s.bundle.config)
        if misfit is None:
            return False
        self._poll.stop()
        self._needs_apply = False
        self.text_label.setText(translate("tour", "This stop does not apply to the open model: {why}").format(why=misfit_text(self.stop().id, *misfit)))
        self.ready = True
        return True

    def _apply(self) -> bool:
        """Set the stop's state once a model is open (False: none is yet)."""
        s = self.main.session
        if s.bundle is None or s.loading:
            return False
        self._needs_apply, self._applying = False, True
        try:
            apply_stop(self.main, self.stop())
        finally:
            self._applying = False
        return True

    def _explain(self) -> None:
        ctx = Context(self.main, self.stop())
        self.values = measure_values(ctx)
        self._visited[self.index] = (self.values, self.main.session.source)
        self.text_label.setText(fill(self.stop().text, self.values))
        self.highlight.follow(partial(region_of, ctx))  # scrolled into view while the view settles
        self.ready = True
        self.exercises.ask(self.main, self.tour, self.index)
        self.stopShown.emit(self.index)

    def _on_window_changed(self, *_) -> None:
        """The user changed the window at a stop: explain what it shows now."""
        if self.active and not self._applying and not self._needs_apply:
            self._wait()

    def _set_words(self) -> None:
        labels, stop = self.tour.labels, self.stop()
        self.title_label.setText(stop.title)
        self.title_label.setVisible(bool(stop.title))  # a teacher's stop may have none
        self.counter.setText(labels.counter.format(n=self.index + 1, total=len(self.tour.stops)))
        if self._needs_apply:  # a stop being set up (a change at a stop keeps its text until the new one)
            self.text_label.setText(labels.waiting)
        self.back_button.setText(labels.back)
        self.next_button.setText(labels.next)
        self.leave_button.setText(labels.leave)
        self.back_button.setEnabled(self.index > 0)
        self.next_button.setEnabled(self.index + 1 < len(self.tour.stops))

    def _deactivate(self) -> None:
        self.active = False
        self._needs_apply = False
        self._poll.stop()
        self.highlight.clear()
        self.exercises.clear()
        self.left.emit()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 - Qt API
        """The dock's own close button leaves the tour."""
        if self.active:
            self._deactivate()
        super().closeEvent(event)


def tour_for(language: str) -> str:
    """The tour that goes with the interface's ``language`` (English when there is none in it)."""
    return language if language in LANGUAGES else "en"


def other_tour(language: str) -> str:
    """The tour in the other language than the one that goes with the interface's ``language``."""
    return next(code for code in LANGUAGES if code != tour_for(language))


def other_tour_words(tour: str) -> tuple[str, str]:
    """The Help menu's text and tip for the tour in ``tour`` when the interface is in another
    language: the Chinese tour is named in Chinese (its readers find it in any interface), the
    English one in the interface's language."""
    if tour == "zh_CN":
        return "导览（简体中文）", "按教程的顺序，在当前模型上逐站讲解"
    return translate("tour", "Tour in English"), translate("tour", "The same tour, with its texts in English")


def start_tour(window: QtWidgets.QMainWindow, language: str = "en") -> TourPanel | None:
    """Help → Tour: open the tour in ``language`` (``en`` or ``zh_CN``) at its first stop, or
    resume the one left (in ``language`` now); ``None`` when the tour file cannot be read (the
    message bar says why)."""
    try:
        tour = load_tour(language)
    except TourError as exc:
        window.show_message("error", str(exc))
        return None
    panel = window.findChild(TourPanel, "tourPanel")
    if panel is None or panel.tour.ids() != tour.ids():  # none yet, or one playing a tour file
        return play_tour(window, tour)
    panel.set_tour(tour)
    panel.resume()
    return panel


def play_tour(window: QtWidgets.QMainWindow, tour: Tour) -> TourPanel:
    """Play ``tour`` from its first stop in the tour's panel (made when there is none): the bundled
    tour (:func:`start_tour`) and a tour file opened (Tour → Open) alike."""
    panel = window.findChild(TourPanel, "tourPanel")
    if panel is None:
        panel = TourPanel(window, tour)
        panel.go(0)
        return panel
    panel.play(tour)
    return panel
