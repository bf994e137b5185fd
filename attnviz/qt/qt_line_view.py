"""Line view (as in BertViz): a line from each query token (left) to each key token (right).

A line's opacity is the attention weight; each head has its colour and the selected heads
are drawn on top of each other. Hovering a token shows only its lines (a query's weights
over the keys, or what attends to a key); clicking a token pins that isolation.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from .colormaps import Theme, ui_font
from .figures import is_vector_painter
from .heatmap import TitleItem
from .workers import FunctionWorker
from .view_base import FigureViewBase, make_combo, set_combo_items
from .view_data import KIND_FORMULAS, KIND_TITLES, AttentionData, FigureData, as_attention_sets

_ALPHA_LEVELS = 32
_MIN_WEIGHT = 0.01  # lines fainter than this are not drawn
_SYNC_LINES = 160  # up to this many lines are drawn at once; more are drawn off the GUI thread
_CACHE_SIZE = 4  # line layers kept (e.g. all lines while a hovered token shows only its own)

# A line layer as plain data: per colour, (r, g, b, a) and an [n, 4] array of x0, y0, x1, y1.
LineGroups = list[tuple[tuple[int, int, int, int], np.ndarray]]


def select_lines(weights: np.ndarray, heads: Iterable[int], focus: tuple[str, int] | None):
    """Per selected head: (head, query indices, key indices, weights) of the lines to draw.

    ``weights`` is one layer's ``[head, query, key]``; lines below ``_MIN_WEIGHT`` are left
    out; with a ``focus`` token ("query"/"key", index) only that token's lines remain.
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
        q, k = np.nonzero(mask)
        yield head, q, k, w[q, k]


def line_groups(weights, heads, focus, colours: dict[int, tuple[int, int, int]], x0, x1, top, pitch) -> LineGroups:
    """The lines grouped by head colour and opacity level (opacity = weight); numpy only."""
    groups: LineGroups = []
    for head, q_idx, k_idx, w in select_lines(weights, heads, focus):
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


def count_lines(weights, heads, focus) -> int:
    return sum(len(w) for _, _, _, w in select_lines(weights, heads, focus))


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
    return _render_pool


@dataclass(frozen=True)
class LineSpec:
    head: int
    query: int
    key: int
    weight: float


class _LinesItem(pg.GraphicsWidget):
    """Paints the two token columns and the lines between them; reports hovered tokens.

    On screen the lines are a cached image: many lines (all heads of a long sentence) are
    drawn off the GUI thread and appear when ready, so stepping never waits for them.
    """

    layerReady = QtCore.Signal()

    def __init__(self, owner: "QtLineView"):
        super().__init__()
        self._owner = owner
        self._cache: OrderedDict = OrderedDict()
        self._job: FunctionWorker | None = None
        self._job_key = None
        self._wanted = None
        self._last_drawn: QtGui.QImage | None = None
        self._elided: dict[tuple[str, float], str] = {}
        self._font = ui_font(10)
        self._bold = ui_font(10, bold=True)
        self._small = ui_font(8.5)
        self.setFlag(QtWidgets.QGraphicsItem.GraphicsItemFlag.ItemClipsToShape, True)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Expanding)
        self.setMinimumSize(200, 120)

    # geometry -------------------------------------------------------------------
    def layout_geometry(self):
        """(x of the left column's right edge, x of the right column's left edge, top, pitch)."""
        o = self._owner
        rect = self.boundingRect()
        fm = QtGui.QFontMetricsF(self._bold)
        labels = list(o._query_labels) + list(o._key_labels)
        sub = QtGui.QFontMetricsF(self._small)
        headers = max(sub.horizontalAdvance(o._axes[0][1]), sub.horizontalAdvance(o._axes[1][1]))
        text_w = max((fm.horizontalAdvance(s) for s in labels), default=20.0) + 6
        text_w = min(max(text_w, headers + 4), rect.width() * 0.3)
        n = max(len(o._query_labels), len(o._key_labels), 1)
        header = fm.height() * 2.6
        pitch = max(6.0, min(28.0, (rect.height() - header - 4) / n))
        gap = min(max(rect.width() - 2 * text_w - 24, 60.0), 420.0)
        total = 2 * text_w + gap
        left = rect.left() + max(8.0, (rect.width() - total) / 2)
        return left + text_w, left + text_w + gap, rect.top() + header, pitch, text_w

    def token_at(self, pos: QtCore.QPointF) -> tuple[str, int] | None:
        o = self._owner
        xl, xr, top, pitch, text_w = self.layout_geometry()
        row = int((pos.y() - top) // pitch)
        if pos.x() <= xl + 8 and pos.x() >= xl - text_w - 8 and 0 <= row < len(o._query_labels) and pos.y() >= top:
            return "query", row
        if pos.x() >= xr - 8 and pos.x() <= xr + text_w + 8 and 0 <= row < len(o._key_labels) and pos.y() >= top:
            return "key", row
        return None

    def token_pos(self, side: str, index: int) -> QtCore.QPointF:
        xl, xr, top, pitch, text_w = self.layout_geometry()
        y = top + (index + 0.5) * pitch
        return QtCore.QPointF(xl - text_w / 2 if side == "query" else xr + text_w / 2, y)

    # events -----------------------------------------------------------------------
    def hoverEvent(self, ev):
        token = None if ev.isExit() else self.token_at(ev.pos())
        self._owner._set_hover(token)

    def mouseClickEvent(self, ev):
        if ev.button() != QtCore.Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        ev.accept()
        self._owner._toggle_pin(self.token_at(ev.pos()))

    # painting -----------------------------------------------------------------------
    def paint(self, p, *args):
        o = self._owner
        if o._weights is None:
            return
        theme = o.theme
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
        for (head, sub), x, align in ((o._axes[0], xl - 2 * text_w, right), (o._axes[1], xr, left)):
            w = 2 * text_w if align == right else max(rect.right() - xr, text_w)
            p.setFont(self._bold)
            p.setPen(QtGui.QColor(theme.foreground))
            p.drawText(QtCore.QRectF(x, top - hh * 2.3, w, hh), align, head)
            p.setFont(self._small)
            p.setPen(QtGui.QColor(theme.muted))
            p.drawText(QtCore.QRectF(x, top - hh * 1.35, w, hh), align, sub)

        focus = o.focus_token()
        self._paint_lines(p, xl + 6, xr - 6, top, pitch)
        # tokens
        self._paint_column(p, o._query_labels, "query", xl - text_w, text_w, top, pitch, focus,
                           QtCore.Qt.AlignmentFlag.AlignRight, o._highlight)
        self._paint_column(p, o._key_labels, "key", xr, text_w, top, pitch, focus,
                           QtCore.Qt.AlignmentFlag.AlignLeft, None)
        p.restore()

    # lines -----------------------------------------------------------------------------
    def line_spec(self, x0: float, x1: float, top: float, pitch: float) -> tuple:
        """The arguments of :func:`line_groups` for the lines to draw now (plain data)."""
        o = self._owner
        heads = o.selected_heads()
        colours = {h: o.theme.head_color(h).getRgb()[:3] for h in heads}
        return (o._weights, heads, o.focus_token(), colours, x0, x1, top, pitch)

    def _paint_lines(self, p: QtGui.QPainter, x0: float, x1: float, top: float, pitch: float) -> None:
        if not isinstance(p.device(), QtWidgets.QWidget) or is_vector_painter(p):
            # files and grabs: draw every line now, wider, as vector shapes where the device allows
            paint_line_groups(p, line_groups(*self.line_spec(x0, x1, top, pitch)), 1.6, cosmetic=False)
            return
        rect = self.boundingRect()
        dpr = p.device().devicePixelRatioF()
        area = (float(x0) - 1, rect.top(), float(x1 - x0) + 2, rect.height())
        key = (self._owner._state_key(), tuple(round(v, 2) for v in (*area, top, pitch)), dpr)
        image = self._cache.get(key)
        if image is None:
            spec = self.line_spec(x0, x1, top, pitch)
            args = (key, (area[2], area[3]), (area[0], area[1]), dpr, spec)
            if count_lines(*spec[:3]) <= _SYNC_LINES:
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

    def _paint_column(self, p, labels, side, x, w, top, pitch, focus, align, highlight):
        theme = self._owner.theme
        fm = QtGui.QFontMetricsF(self._font)
        connected = self._owner._connected(side) if focus is not None and focus[0] != side else None
        for i, label in enumerate(labels):
            rect = QtCore.QRectF(x, top + i * pitch, w, pitch)
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


class QtLineView(FigureViewBase):
    """BertViz-style lines for one layer of one kind of attention.

    ``set_data(data)`` takes an :class:`AttentionData` ([layer, head, query, key]) or a
    mapping kind → AttentionData. ``set_layer(layer)``, ``set_heads(heads)`` choose what is
    drawn (0-based). ``set_focus(side, index)`` pins a token ("query"/"key") as a click does.
    Signals: ``selectionChanged(kind, layer, heads)``, ``tokenHovered(side, index)``
    (``("", -1)`` when the mouse leaves the tokens).
    """

    selectionChanged = QtCore.Signal(str, int, object)
    tokenHovered = QtCore.Signal(str, int)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self.setObjectName("lineView")
        self._datasets: dict[str, AttentionData] = {}
        self._kind: str | None = None
        self._layer = 0
        self._heads: tuple[int, ...] | None = None  # None: all heads
        self._hover: tuple[str, int] | None = None
        self._pinned: tuple[str, int] | None = None
        self._exporting = False
        self._weights: np.ndarray | None = None  # [head, query, key] of the layer
        self._query_labels: tuple[str, ...] = ()
        self._key_labels: tuple[str, ...] = ()
        self._highlight: int | None = None
        self._axes = (("queries", ""), ("keys", ""))
        self._data_version = 0

        self.kind_combo = self._add_control("", make_combo("lineKindCombo", "Which attention: encoder self, decoder masked self or cross"))
        self.layer_combo = self._add_control("Layer", make_combo("lineLayerCombo", "Layer"))
        self.controls.addWidget(QtWidgets.QLabel("Heads"))
        self._head_box = QtWidgets.QHBoxLayout()
        self._head_box.setSpacing(2)
        self.controls.addLayout(self._head_box)
        self._head_buttons: list[QtWidgets.QToolButton] = []
        self.all_button = QtWidgets.QToolButton(text="All", objectName="lineAllHeads")
        self.all_button.setToolTip("Select all heads")
        self.all_button.clicked.connect(lambda: self._user_set_heads(None))
        self.controls.addWidget(self.all_button)
        self.controls.addStretch(1)
        self.kind_combo.currentIndexChanged.connect(self._on_kind_combo)
        self.layer_combo.currentIndexChanged.connect(self._on_layer_combo)

        self.title = TitleItem(self.theme)
        self.canvas.addItem(self.title, row=0, col=0)
        self.lines = _LinesItem(self)
        self.canvas.addItem(self.lines, row=1, col=0)
        self.canvas.ci.layout.setRowStretchFactor(1, 1)
        self._set_title()

    # data ----------------------------------------------------------------------------
    def set_data(self, data: AttentionData | Mapping[str, AttentionData]) -> None:
        self._datasets = as_attention_sets(data)
        self._data_version += 1
        if self._kind not in self._datasets:
            self._kind = next(iter(self._datasets))
        self._refresh(controls=True)

    def has_data(self) -> bool:
        return bool(self._datasets)

    def data(self) -> AttentionData | None:
        return self._datasets.get(self._kind) if self._kind else None

    def kind(self) -> str | None:
        return self._kind

    def set_kind(self, kind: str) -> None:
        if kind not in self._datasets:
            raise ValueError(f"no {kind!r} attention was given to this view")
        self._kind = kind
        self._pinned = None
        self._refresh(controls=True)

    def layer(self) -> int:
        return self._layer

    def set_layer(self, layer: int) -> None:
        self._layer = int(layer)
        self._refresh(controls=True)

    def selected_heads(self) -> tuple[int, ...]:
        d = self.data()
        n = d.n_heads if d else 0
        return tuple(range(n)) if self._heads is None else tuple(h for h in self._heads if h < n)

    def set_heads(self, heads: Iterable[int] | None) -> None:
        """Draw these heads (0-based); ``None`` draws all."""
        self._heads = None if heads is None else tuple(sorted({int(h) for h in heads}))
        self._refresh(controls=True)

    def set_focus(self, side: str | None, index: int = -1) -> None:
        """Pin a token's lines (``side`` "query" or "key"); ``None`` clears."""
        if side is None:
            self._pinned = None
        else:
            if side not in ("query", "key"):
                raise ValueError("side must be 'query' or 'key'")
            self._pinned = (side, int(index))
        self.lines.update()

    def set_hover(self, side: str | None, index: int = -1) -> None:
        """Act as if the mouse were over a token (``None``: over none)."""
        self._set_hover(None if side is None else (side, int(index)))

    def _state_key(self) -> tuple:
        """Everything the drawn lines depend on, apart from the geometry."""
        return (self._data_version, self._kind, self._layer, self.selected_heads(), self.focus_token(), self.theme.name)

    def focus_token(self) -> tuple[str, int] | None:
        """The token whose lines are isolated: the hovered one, else the pinned one."""
        if self._exporting:
            return self._pinned
        return self._hover or self._pinned

    def visible_lines(self) -> list[LineSpec]:
        """Every line drawn now (head, query, key, weight)."""
        out = []
        for head, q, k, w in self._line_arrays():
            out.extend(LineSpec(head, int(a), int(b), float(c)) for a, b, c in zip(q, k, w))
        return out

    # internals --------------------------------------------------------------------------
    def _line_arrays(self):
        if self._weights is None:
            return iter(())
        return select_lines(self._weights, self.selected_heads(), self.focus_token())

    def _connected(self, side: str) -> set[int]:
        """Indices on ``side`` that have a drawn line to the focused token."""
        out: set[int] = set()
        for _, q, k, _ in self._line_arrays():
            out.update((k if side == "key" else q).tolist())
        return out

    def _set_hover(self, token: tuple[str, int] | None) -> None:
        if token == self._hover:
            return
        self._hover = token
        self.lines.update()
        if token is None:
            self.readout.setText(" ")
            self.tokenHovered.emit("", -1)
            return
        self._describe(token)
        self.tokenHovered.emit(*token)

    def _describe(self, token: tuple[str, int]) -> None:
        side, idx = token
        if self._weights is None:
            return
        heads = self.selected_heads()
        if side == "query" and idx < len(self._query_labels):
            w = self._weights[list(heads), idx, :] if heads else np.zeros((0, len(self._key_labels)))
            best = np.argsort(-w.mean(axis=0))[:3] if len(heads) else []
            parts = ", ".join(f"“{self._key_labels[k]}” {w.mean(axis=0)[k]:.2f}" for k in best)
            self.readout.setText(f"query “{self._query_labels[idx]}” (pos {idx}) attends most to: {parts}  (mean over shown heads)")
        elif side == "key" and idx < len(self._key_labels):
            w = self._weights[list(heads), :, idx] if heads else np.zeros((0, len(self._query_labels)))
            best = np.argsort(-w.mean(axis=0))[:3] if len(heads) else []
            parts = ", ".join(f"“{self._query_labels[q]}” {w.mean(axis=0)[q]:.2f}" for q in best)
            self.readout.setText(f"key “{self._key_labels[idx]}” (pos {idx}) is read most by: {parts}  (mean over shown heads)")

    def _toggle_pin(self, token: tuple[str, int] | None) -> None:
        self._pinned = None if token is None or token == self._pinned else token
        self.lines.update()

    def _user_set_heads(self, heads) -> None:
        self.set_heads(heads)
        self._emit_selection()

    def _emit_selection(self) -> None:
        if self._kind is not None:
            self.selectionChanged.emit(self._kind, self._layer, self.selected_heads())

    def _on_kind_combo(self) -> None:
        kind = self.kind_combo.currentData()
        if kind and kind != self._kind:
            self._kind = kind
            self._pinned = None
            self._refresh(controls=True)
            self._emit_selection()

    def _on_layer_combo(self) -> None:
        layer = self.layer_combo.currentData()
        if layer is not None and layer != self._layer:
            self._layer = int(layer)
            self._refresh(controls=False)
            self._emit_selection()

    def _on_head_toggled(self) -> None:
        heads = tuple(i for i, b in enumerate(self._head_buttons) if b.isChecked())
        self._heads = None if len(heads) == len(self._head_buttons) else heads
        self._refresh(controls=False)
        self._emit_selection()

    def _sync_head_buttons(self, n_heads: int) -> None:
        while len(self._head_buttons) < n_heads:
            i = len(self._head_buttons)
            b = QtWidgets.QToolButton(text=str(i + 1), objectName=f"lineHead{i + 1}")
            b.setCheckable(True)
            b.setAutoRaise(False)
            b.setToolTip(f"Show head {i + 1}")
            b.toggled.connect(self._on_head_toggled)
            self._head_box.addWidget(b)
            self._head_buttons.append(b)
        selected = set(self.selected_heads())
        for i, b in enumerate(self._head_buttons):
            b.setVisible(i < n_heads)
            blocked = b.blockSignals(True)
            b.setChecked(i in selected)
            b.blockSignals(blocked)
            self._style_head_button(i, b)

    def _style_head_button(self, i: int, b: QtWidgets.QToolButton) -> None:
        c = self.theme.head_color(i).name()
        key = f"{c}:{b.isChecked()}"
        if b.property("styleKey") == key:
            return
        b.setProperty("styleKey", key)
        if b.isChecked():
            b.setStyleSheet(f"QToolButton {{ background: {c}; color: white; border: 1px solid {c}; border-radius: 3px; min-width: 18px; font-weight: 600; }}")
        else:
            b.setStyleSheet(f"QToolButton {{ background: transparent; color: {c}; border: 1px solid {c}; border-radius: 3px; min-width: 18px; }}")

    def _refresh(self, controls: bool) -> None:
        d = self.data()
        if d is not None:
            self._layer = min(max(self._layer, 0), d.n_layers - 1)
            self._weights = d.weights[self._layer]
            self._query_labels, self._key_labels = d.query_labels, d.key_labels
            self._highlight = d.highlight
            self._axes = {
                "encoder": (("queries", "source"), ("keys", "source")),
                "decoder": (("queries", "target"), ("keys", "target")),
                "cross": (("queries", "target · C_decoder"), ("keys", "source · C_encoder")),
            }[d.kind]
            if self._pinned is not None:
                side, idx = self._pinned
                if idx >= (len(self._query_labels) if side == "query" else len(self._key_labels)):
                    self._pinned = None
        if controls or d is None:
            set_combo_items(self.kind_combo, [(KIND_TITLES[k], k) for k in self._datasets], self._kind)
            self.kind_combo.setVisible(len(self._datasets) > 1)
            set_combo_items(self.layer_combo, [(str(i + 1), i) for i in range(d.n_layers if d else 0)], self._layer)
        self._sync_head_buttons(d.n_heads if d else 0)
        self._set_title()
        self.lines.update()

    def _set_title(self) -> None:
        d = self.data()
        if d is None:
            self.title.set_title("No attention to show yet")
            return
        heads = self.selected_heads()
        which = "all heads" if len(heads) == d.n_heads else ("heads " + ", ".join(str(h + 1) for h in heads) if heads else "no head")
        self.title.set_title(
            f"{KIND_TITLES[d.kind]} · layer {self._layer + 1} · {which}",
            "opacity = A_i[query, key],  " + KIND_FORMULAS[d.kind].replace("A =", "A_i =", 1).split(",")[0]
            + ";  one colour per head i",
        )

    def _on_theme_changed(self) -> None:
        self.title.apply_theme(self.theme)
        for i, b in enumerate(self._head_buttons):
            self._style_head_button(i, b)
        self.lines.update()

    # figure protocol --------------------------------------------------------------------
    @contextlib.contextmanager
    def export_mode(self) -> Iterator[None]:
        """Exports show the pinned token's isolation, never a passing hover."""
        self._exporting = True
        self.lines.update()
        try:
            yield
        finally:
            self._exporting = False
            self.lines.update()

    def figure_title(self) -> str:
        d = self.data()
        if d is None:
            return "Attention lines"
        return f"{KIND_TITLES[d.kind]} · layer {self._layer + 1} · lines"

    def figure_data(self) -> FigureData:
        d = self.data()
        if d is None:
            raise ValueError("the view shows no data yet")
        heads = self.selected_heads()
        return FigureData(
            title=self.figure_title(),
            dims=("head", "query", "key"),
            values={"weight": d.weights[self._layer][list(heads)]},
            coords={"head": tuple(str(h + 1) for h in heads), "query": d.query_labels, "key": d.key_labels},
        )
