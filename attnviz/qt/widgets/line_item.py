"""The drawing behind the line view: the line layers and the graphics item that shows them.

A line layer is plain data (numpy only), grouped by head colour and opacity level; many
lines are drawn into an image off the GUI thread. ``LinesItem`` paints the two token
columns and the lines between them from what its owner hands it.
"""

from __future__ import annotations

import atexit
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.data.pieces import display_piece
from attnviz.qt.i18n import translate
from attnviz.qt.widgets.colormaps import Theme, ui_font
from attnviz.qt.widgets.figures import is_vector_painter
from attnviz.qt.widgets.token_axis import labels_every, thinned
from attnviz.qt.workers import FunctionWorker

_ALPHA_LEVELS = 32
_MIN_WEIGHT = 0.01  # lines fainter than this are not drawn
_SYNC_LINES = 160  # up to this many lines are drawn at once; more are drawn off the GUI thread
_CACHE_SIZE = 4  # line layers kept (e.g. all lines while a hovered token shows only its own)

# A line layer as plain data: per colour, (r, g, b, a) and an [n, 4] array of x0, y0, x1, y1.
LineGroups = list[tuple[tuple[int, int, int, int], np.ndarray]]


def top_k_mask(w: np.ndarray, k: int) -> np.ndarray:
    """``[query, key]`` True at each query's ``k`` largest weights."""
    if k >= w.shape[1]:
        return np.ones(w.shape, bool)
    mask = np.zeros(w.shape, bool)
    np.put_along_axis(mask, np.argpartition(-w, k - 1, axis=1)[:, :k], True, axis=1)
    return mask


def select_lines(weights: np.ndarray, heads: Iterable[int], focus: tuple[str, int] | None, top_k: int | None = None):
    """Per selected head: (head, query indices, key indices, weights) of the lines to draw.

    ``weights`` is one layer's ``[head, query, key]``; lines below ``_MIN_WEIGHT`` are left
    out; with a ``focus`` token ("query"/"key", index) only that token's lines remain; else,
    with ``top_k``, only each query's ``top_k`` largest (k·n lines, not n²: a long input).
    """
    for head in heads:
        w = weights[head]
        mask = w >= _MIN_WEIGHT
        if focus is not None:
            side, idx = focus
            keep = np.zeros_like(mask)
            if side == "query" and idx < w.shape[0]:
                keep[idx, :] = True
            elif side == "key" and idx < w.shape[1]:
                keep[:, idx] = True
            mask &= keep
        elif top_k is not None:
            mask &= top_k_mask(w, top_k)
        q, k = np.nonzero(mask)
        yield head, q, k, w[q, k]


def line_groups(weights, heads, focus, top_k, colours: dict[int, tuple[int, int, int]], x0, x1, top, pitch) -> LineGroups:
    """The lines grouped by head colour and opacity level (opacity = weight); numpy only."""
    groups: LineGroups = []
    for head, q_idx, k_idx, w in select_lines(weights, heads, focus, top_k):
        levels = np.minimum((w * _ALPHA_LEVELS).astype(np.int32), _ALPHA_LEVELS - 1)
        segs = np.empty((len(w), 4), dtype=np.float64)
        segs[:, 0] = x0
        segs[:, 1] = top + (q_idx + 0.5) * pitch
        segs[:, 2] = x1
        segs[:, 3] = top + (k_idx + 0.5) * pitch
        r, g, b = colours[head]
        for level in np.unique(levels):
            alpha = int(round(255 * min(1.0, (level + 1) / _ALPHA_LEVELS)))
            groups.append(((r, g, b, alpha), segs[levels == level]))
    return groups


def count_lines(weights, heads, focus, top_k=None) -> int:
    return sum(len(w) for _, _, _, w in select_lines(weights, heads, focus, top_k))


def paint_line_groups(p: QtGui.QPainter, groups: LineGroups, width: float, cosmetic: bool) -> None:
    """Draw the groups with antialiased pens (the same code on screen, off thread and in exports)."""
    p.save()
    p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
    for rgba, segments in groups:
        pen = QtGui.QPen(QtGui.QColor(*rgba), width)
        pen.setCosmetic(cosmetic)
        pen.setCapStyle(QtCore.Qt.PenCapStyle.FlatCap if cosmetic else QtCore.Qt.PenCapStyle.RoundCap)
        p.setPen(pen)
        p.drawLines([QtCore.QLineF(*seg) for seg in segments.tolist()])
    p.restore()


def render_line_layer(key, size: tuple[float, float], origin: tuple[float, float], dpr: float, spec: tuple):
    """The lines as a transparent image (``size`` in logical pixels); safe in a worker thread.

    ``spec`` is the argument tuple of :func:`line_groups`.
    """
    groups = line_groups(*spec)
    w, h = max(1, int(np.ceil(size[0] * dpr))), max(1, int(np.ceil(size[1] * dpr)))
    image = QtGui.QImage(w, h, QtGui.QImage.Format.Format_ARGB32_Premultiplied)
    image.setDevicePixelRatio(dpr)
    image.fill(0)
    painter = QtGui.QPainter(image)
    try:
        painter.translate(-origin[0], -origin[1])
        paint_line_groups(painter, groups, 1.0, cosmetic=True)
    finally:
        painter.end()
    return key, image


_render_pool: QtCore.QThreadPool | None = None


def _line_render_pool() -> QtCore.QThreadPool:
    """One thread for drawing line layers, apart from the pool that runs the model."""
    global _render_pool
    if _render_pool is None:
        _render_pool = QtCore.QThreadPool()
        _render_pool.setMaxThreadCount(1)
        # PySide destroys every Qt object in an exit hook registered when QtCore was imported;
        # exit hooks run last registered first, so a layer still being drawn finishes before that
        # (a worker signalling into objects being destroyed crashes the interpreter's exit).
        atexit.register(_render_pool.waitForDone)
    return _render_pool


@dataclass(frozen=True)
class LineSpec:
    head: int
    query: int
    key: int
    weight: float


class LinesItem(pg.GraphicsWidget):
    """Paints the two token columns and the lines between them; reports hovered and clicked tokens.

    The owner hands it what to draw: ``set_layer`` (one layer's ``[head, query, key]`` weights
    and the token labels), ``set_selection`` (the heads and the focused token) and
    ``set_theme``. On screen the lines are a cached image: many lines (all heads of a long
    sentence) are drawn off the GUI thread and appear when ready, so stepping never waits.
    Signals: ``tokenHovered(token)`` and ``tokenClicked(token)`` with ``(side, index)`` or ``None``.
    """

    layerReady = QtCore.Signal()
    tokenHovered = QtCore.Signal(object)
    tokenClicked = QtCore.Signal(object)

    def __init__(self, theme: Theme):
        super().__init__()
        self.theme = theme
        self._weights: np.ndarray | None = None  # [head, query, key] of the layer
        self._layer_key: object = None  # names the layer's weights in the cache
        self._query_labels: tuple[str, ...] = ()
        self._key_labels: tuple[str, ...] = ()
        self._axes = ((translate("line_item", "queries"), ""), (translate("line_item", "keys"), ""))
        self._highlight: int | None = None
        self._heads: tuple[int, ...] = ()
        self._focus: tuple[str, int] | None = None
        self._top_k: int | None = None  # each query's k strongest lines only (a long input); None: all
        self._cache: OrderedDict = OrderedDict()
        self._job: FunctionWorker | None = None
        self._job_key = None
        self._wanted = None
        self._last_drawn: QtGui.QImage | None = None
        self._elided: dict[tuple[str, float], str] = {}
        self._widest: float | None = None  # the widest token label (layout_geometry)
        self._font = ui_font(10)
        self._bold = ui_font(10, bold=True)
        self._small = ui_font(8.5)
        self.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemClipsToShape, True)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Expanding)
        self.setMinimumSize(200, 120)

    # what is drawn ------------------------------------------------------------------
    def set_layer(self, weights: np.ndarray | None, query_labels, key_labels, axes, highlight: int | None, key: object) -> None:
        """One layer's ``[head, query, key]`` weights, the token labels, the column headers
        ``((title, subtitle), (title, subtitle))`` and the highlighted query; ``key`` names the
        weights (the same key: the same lines)."""
        self._weights = weights
        query_labels = tuple(display_piece(str(x)) for x in query_labels)
        key_labels = tuple(display_piece(str(x)) for x in key_labels)
        if (query_labels, key_labels) != (self._query_labels, self._key_labels):
            self._query_labels, self._key_labels, self._widest = query_labels, key_labels, None
        self._axes = axes
        self._highlight = highlight
        self._layer_key = key
        self.update()

    def set_selection(self, heads: Iterable[int], focus: tuple[str, int] | None, top_k: int | None = None) -> None:
        """The heads drawn, the token whose lines are isolated (``None``: every line) and, with
        none isolated, how many lines each query draws (``None``: all)."""
        self._heads = tuple(heads)
        self._focus = focus
        self._top_k = top_k
        self.update()

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.update()

    def query_labels(self) -> tuple[str, ...]:
        return self._query_labels

    def key_labels(self) -> tuple[str, ...]:
        return self._key_labels

    def line_arrays(self):
        """Per drawn head: (head, query indices, key indices, weights) of its lines."""
        if self._weights is None:
            return iter(())
        return select_lines(self._weights, self._heads, self._focus, self._top_k)

    def connected(self, side: str) -> set[int]:
        """Indices on ``side`` that have a drawn line to the focused token."""
        out: set[int] = set()
        for _, q, k, _ in self.line_arrays():
            out.update((k if side == "key" else q).tolist())
        return out

    def _state_key(self) -> tuple:
        """Everything the drawn lines depend on, apart from the geometry."""
        return (self._layer_key, self._heads, self._focus, self._top_k, self.theme.name)

    # geometry -------------------------------------------------------------------
    def layout_geometry(self):
        """(x of the left column's right edge, x of the right column's left edge, top, pitch)."""
        rect = self.boundingRect()
        fm = QtGui.QFontMetricsF(self._bold)
        labels = list(self._query_labels) + list(self._key_labels)
        sub = QtGui.QFontMetricsF(self._small)
        headers = max(sub.horizontalAdvance(self._axes[0][1]), sub.horizontalAdvance(self._axes[1][1]))
        if self._widest is None:  # measured once per layer's labels
            self._widest = max((fm.horizontalAdvance(s) for s in labels), default=20.0)
        text_w = min(max(self._widest + 6, headers + 4), rect.width() * 0.3)
        n = max(len(self._query_labels), len(self._key_labels), 1)
        header = fm.height() * 2.6
        pitch = min(28.0, max((rect.height() - header - 4) / n, 0.1))  # a long input: rows under a pixel, every k-th label
        gap = min(max(rect.width() - 2 * text_w - 24, 60.0), 420.0)
        total = 2 * text_w + gap
        left = rect.left() + max(8.0, (rect.width() - total) / 2)
        return left + text_w, left + text_w + gap, rect.top() + header, pitch, text_w

    def content_rect(self) -> QtCore.QRectF:
        """The part of the item that is drawn on (headers, both columns, the lines), in item coordinates."""
        xl, xr, top, pitch, text_w = self.layout_geometry()
        n = max(len(self._query_labels), len(self._key_labels), 1)
        header = QtGui.QFontMetricsF(self._bold).height() * 2.3
        rect = QtCore.QRectF(xl - text_w - 6, top - header - 2, (xr + text_w) - (xl - text_w) + 12, n * pitch + header + 8)
        return rect.intersected(self.boundingRect())

    def token_at(self, pos: QtCore.QPointF) -> tuple[str, int] | None:
        xl, xr, top, pitch, text_w = self.layout_geometry()
        row = int((pos.y() - top) // pitch)
        if pos.x() <= xl + 8 and pos.x() >= xl - text_w - 8 and 0 <= row < len(self._query_labels) and pos.y() >= top:
            return "query", row
        if pos.x() >= xr - 8 and pos.x() <= xr + text_w + 8 and 0 <= row < len(self._key_labels) and pos.y() >= top:
            return "key", row
        return None

    def token_pos(self, side: str, index: int) -> QtCore.QPointF:
        xl, xr, top, pitch, text_w = self.layout_geometry()
        y = top + (index + 0.5) * pitch
        return QtCore.QPointF(xl - text_w / 2 if side == "query" else xr + text_w / 2, y)

    # events -----------------------------------------------------------------------
    def hoverEvent(self, ev):
        self.tokenHovered.emit(None if ev.isExit() else self.token_at(ev.pos()))

    def mouseClickEvent(self, ev):
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        ev.accept()
        self.tokenClicked.emit(self.token_at(ev.pos()))

    # painting -----------------------------------------------------------------------
    def paint(self, p, *args):
        if self._weights is None:
            return
        theme = self.theme
        xl, xr, top, pitch, text_w = self.layout_geometry()
        p.save()
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        p.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        fm = QtGui.QFontMetricsF(self._bold)
        # column headers: "queries" / "keys" and what they are, above each column
        rect = self.boundingRect()
        hh = fm.height()
        right = int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        left = int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter)
        for (head, sub), x, align in ((self._axes[0], xl - 2 * text_w, right), (self._axes[1], xr, left)):
            w = 2 * text_w if align == right else max(rect.right() - xr, text_w)
            p.setFont(self._bold)
            p.setPen(QtGui.QColor(theme.foreground))
            p.drawText(QtCore.QRectF(x, top - hh * 2.3, w, hh), align, head)
            p.setFont(self._small)
            p.setPen(QtGui.QColor(theme.muted))
            p.drawText(QtCore.QRectF(x, top - hh * 1.35, w, hh), align, sub)

        focus = self._focus
        self._paint_lines(p, xl + 6, xr - 6, top, pitch)
        # tokens
        self._paint_column(p, self._query_labels, "query", xl - text_w, text_w, top, pitch, focus,
                           QtCore.Qt.AlignmentFlag.AlignRight, self._highlight)
        self._paint_column(p, self._key_labels, "key", xr, text_w, top, pitch, focus,
                           QtCore.Qt.AlignmentFlag.AlignLeft, None)
        p.restore()

    # lines -----------------------------------------------------------------------------
    def line_spec(self, x0: float, x1: float, top: float, pitch: float) -> tuple:
        """The arguments of :func:`line_groups` for the lines to draw now (plain data)."""
        colours = {h: self.theme.head_color(h).getRgb()[:3] for h in self._heads}
        return (self._weights, self._heads, self._focus, self._top_k, colours, x0, x1, top, pitch)

    def _paint_lines(self, p: QtGui.QPainter, x0: float, x1: float, top: float, pitch: float) -> None:
        if not isinstance(p.device(), QtWidgets.QWidget) or is_vector_painter(p):
            # files and grabs: draw every line now, wider, as vector shapes where the device allows
            paint_line_groups(p, line_groups(*self.line_spec(x0, x1, top, pitch)), 1.6, cosmetic=False)
            return
        rect = self.boundingRect()
        dpr = p.device().devicePixelRatioF()
        area = (float(x0) - 1, rect.top(), float(x1 - x0) + 2, rect.height())
        key = (self._state_key(), tuple(round(v, 2) for v in (*area, top, pitch)), dpr)
        image = self._cache.get(key)
        if image is None:
            spec = self.line_spec(x0, x1, top, pitch)
            args = (key, (area[2], area[3]), (area[0], area[1]), dpr, spec)
            if count_lines(*spec[:4]) <= _SYNC_LINES:
                image = self._store(*render_line_layer(*args))
            else:
                self._request(args)
                image = self._last_drawn  # keep showing the previous lines until the new ones are ready
        if image is not None:
            p.drawImage(QtCore.QPointF(area[0], area[1]), image)
            self._last_drawn = image

    def _store(self, key, image: QtGui.QImage) -> QtGui.QImage:
        self._cache[key] = image
        self._cache.move_to_end(key)
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return image

    def _request(self, args) -> None:
        if self._job is not None and self._job_key == args[0]:
            self._wanted = None  # already being drawn
            return
        self._wanted = args
        if self._job is None:
            self._start_job()

    def _start_job(self) -> None:
        args, self._wanted = self._wanted, None
        if args is None:
            return
        job = FunctionWorker(render_line_layer, *args, inference=False, pool=_line_render_pool())
        job.returned.connect(self._on_rendered)
        job.errored.connect(self._on_render_failed)
        self._job, self._job_key = job, args[0]
        job.start()

    def _on_rendered(self, result) -> None:
        key, image = result
        self._job = self._job_key = None
        self._store(key, image)
        self.update()
        if self._wanted is not None:
            if self._wanted[0] == key:
                self._wanted = None
            else:
                self._start_job()
        self.layerReady.emit()

    def _on_render_failed(self, exc) -> None:  # pragma: no cover - drawing into a QImage does not fail
        self._job = self._job_key = None
        self._wanted = None

    def pending(self) -> bool:
        """True while a line layer is being drawn off the GUI thread."""
        return self._job is not None or self._wanted is not None

    def shown_labels(self, side: str, pitch: float) -> list[int]:
        """The rows of ``side``'s column ("query"/"key") whose labels are drawn: all of them, or every
        k-th when the rows are shorter than a line (the current step and a focused token kept)."""
        labels = self._query_labels if side == "query" else self._key_labels
        keep = [i for i in (self._highlight if side == "query" else None,
                            self._focus[1] if self._focus is not None and self._focus[0] == side else None) if i is not None]
        return thinned(len(labels), labels_every(pitch, QtGui.QFontMetricsF(self._bold).height()), keep)

    def label_boxes(self) -> list[tuple[str, QtCore.QRectF]]:
        """Each token label drawn now and its box (scene coordinates): what a layout check compares."""
        if self._weights is None:
            return []
        xl, xr, top, pitch, text_w = self.layout_geometry()
        line_h = QtGui.QFontMetricsF(self._bold).height()
        out = []
        for side, labels, x, align in (("query", self._query_labels, xl - text_w, "right"), ("key", self._key_labels, xr, "left")):
            fm = QtGui.QFontMetricsF(self._font)
            for i in self.shown_labels(side, pitch):
                text = fm.elidedText(labels[i], QtCore.Qt.TextElideMode.ElideRight, text_w - 2)
                width = QtGui.QFontMetricsF(self._bold).horizontalAdvance(text)
                left = x + text_w - width if align == "right" else x
                box = QtCore.QRectF(left, top + (i + 0.5) * pitch - line_h / 2, width, line_h)
                out.append((text, self.mapRectToScene(box)))
        return out

    def _paint_column(self, p, labels, side, x, w, top, pitch, focus, align, highlight):
        theme = self.theme
        fm = QtGui.QFontMetricsF(self._font)
        connected = self.connected(side) if focus is not None and focus[0] != side else None
        height = max(pitch, QtGui.QFontMetricsF(self._bold).height())
        for i in self.shown_labels(side, pitch):
            label = labels[i]
            rect = QtCore.QRectF(x, top + (i + 0.5) * pitch - height / 2, w, height)
            is_focus = focus == (side, i)
            if is_focus:
                bg = QtGui.QColor(theme.selection)
                bg.setAlpha(50)
                p.setPen(QtCore.Qt.PenStyle.NoPen)
                p.setBrush(bg)
                p.drawRoundedRect(rect.adjusted(-3, 1, 3, -1), 3, 3)
            if i == highlight:
                p.setFont(self._bold)
                p.setPen(QtGui.QColor(theme.highlight))
            else:
                p.setFont(self._bold if is_focus else self._font)
                colour = QtGui.QColor(theme.foreground)
                if focus is not None and not is_focus and connected is not None and i not in connected:
                    colour.setAlpha(90)
                p.setPen(colour)
            text = self._elided.get((label, w))
            if text is None:
                text = self._elided[(label, w)] = fm.elidedText(label, QtCore.Qt.TextElideMode.ElideRight, w - 2)
            p.drawText(rect, int(align | QtCore.Qt.AlignmentFlag.AlignVCenter), text)
