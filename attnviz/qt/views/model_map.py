"""Model map: the open model as a diagram of its blocks, drawn from its config — the source
embedding and its positions, the encoder's layers, the target embedding, the decoder's layers,
the output layer (Linear → softmax); a model of one stack (GPT-2, BERT) draws the one it has.
The first layer of each stack is drawn block by block, with each sublayer's norm and residual
add where the model's norm placement puts them; the others as compact rows (or one "× N" row).

The blocks the current step passes through are lit: the decoder at the current target position,
the encoder as run once for the sentence; an attention block with an ablated head is crossed.
A block's tooltip names it and its shape; clicking it opens the view that shows it (an attention
block: the grid, with its kind and layer selected) through ``chose(changes)`` and
``viewRequested(name)``, which the window answers by raising that view's dock.

The blocks and where they go are computed by :mod:`attnviz.core.analysis.model_diagram`; the view
renders its :class:`~attnviz.core.analysis.model_diagram.MapFrame`.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.model_diagram import Block, Diagram, MapFrame, Placement, figure_data, map_frame, model_diagram, place, shape_values
from attnviz.core.analysis.norms import placement_formula
from attnviz.core.data.pieces import display_piece
from attnviz.qt.i18n import translate
from attnviz.qt.views import attention_grid, ffn, masked_prediction, masks, norm_stats, output, positional, residual
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.colormaps import ui_font

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

# The core's texts this view shows (block labels, shapes), marked for the translators.
CORE_TEXTS = (
    QT_TRANSLATE_NOOP("model_map", "Source embedding"), QT_TRANSLATE_NOOP("model_map", "Target embedding"),
    QT_TRANSLATE_NOOP("model_map", "Token embedding"), QT_TRANSLATE_NOOP("model_map", "Positional encoding (sin/cos)"),
    QT_TRANSLATE_NOOP("model_map", "Learned positions"), QT_TRANSLATE_NOOP("model_map", "Relative position bias"),
    QT_TRANSLATE_NOOP("model_map", "LayerNorm (embeddings)"), QT_TRANSLATE_NOOP("model_map", "Multi-head self-attention"),
    QT_TRANSLATE_NOOP("model_map", "Masked multi-head self-attention"), QT_TRANSLATE_NOOP("model_map", "Multi-head cross-attention"),
    QT_TRANSLATE_NOOP("model_map", "Mask"), QT_TRANSLATE_NOOP("model_map", "Add (residual)"), QT_TRANSLATE_NOOP("model_map", "Add & {norm}"),
    QT_TRANSLATE_NOOP("model_map", "{norm}"), QT_TRANSLATE_NOOP("model_map", "{symbol}"), QT_TRANSLATE_NOOP("model_map", "Final {norm}"),
    QT_TRANSLATE_NOOP("model_map", "Feed-forward (FFN)"), QT_TRANSLATE_NOOP("model_map", "Gated feed-forward (FFN)"),
    QT_TRANSLATE_NOOP("model_map", "FFN"), QT_TRANSLATE_NOOP("model_map", "self-attn"),
    QT_TRANSLATE_NOOP("model_map", "cross-attn"), QT_TRANSLATE_NOOP("model_map", "Masked-token head (dense, LayerNorm)"),
    QT_TRANSLATE_NOOP("model_map", "Linear"), QT_TRANSLATE_NOOP("model_map", "Softmax"),
    QT_TRANSLATE_NOOP("model_map", "[tokens × d_model] = [{n} × {d_model}]"),
    QT_TRANSLATE_NOOP("model_map", "E [tokens × d_model] = [{n} × {d_model}]"),
    QT_TRANSLATE_NOOP("model_map", "PE [positions × d_model] = [{n} × {d_model}]"),
    QT_TRANSLATE_NOOP("model_map", "P [positions × d_model] = [{n} × {d_model}]"),
    QT_TRANSLATE_NOOP("model_map", "B [heads × queries × keys] = [{heads} × {n} × {n}], {buckets} buckets"),
    QT_TRANSLATE_NOOP("model_map", "[heads × queries × keys] = [{heads} × {q} × {k}], d_k = {d_k}"),
    QT_TRANSLATE_NOOP("model_map", "M [queries × keys] = [{q} × {k}]"),
    QT_TRANSLATE_NOOP("model_map", "[tokens × d_model] → [tokens × d_ff] → [tokens × d_model], d_ff = {d_ff}"),
    QT_TRANSLATE_NOOP("model_map", "W [d_model × vocabulary] = [{d_model} × {vocab}]"),
    QT_TRANSLATE_NOOP("model_map", "p [vocabulary] = [{vocab}]"),
)

# Where a click on a block goes: the view that shows it (by block kind; the output layer of an
# encoder-only model: its masked-token view).
TARGETS: dict[str, ViewSpec] = {
    "embedding": positional.SPEC, "positional": positional.SPEC, "norm": norm_stats.SPEC, "add_norm": norm_stats.SPEC,
    "add": residual.SPEC, "attention": attention_grid.SPEC, "mask": masks.SPEC, "ffn": ffn.SPEC,
    "head": masked_prediction.SPEC, "linear": output.SPEC, "softmax": output.SPEC,
}
KIND_COLOURS = {  # a block's hue, by kind
    "embedding": "#4f9d69", "positional": "#2f9e9a", "norm": "#c9962c", "add_norm": "#c9962c", "add": "#8a929b",
    "attention": "#3d7fd1", "mask": "#7b61c9", "ffn": "#c9568a", "head": "#d9822b", "linear": "#d9822b", "softmax": "#d9822b",
}
FILL_ALPHA = {"idle": 40, "once": 70, "active": 105}  # a block's fill, by state
LABEL_PT, CHIP_PT, SMALL_PT = 9.0, 8.0, 8.5  # points: a block's label, a compact row's chip, row labels and headers


def label_text(diagram: Diagram, block: Block, *, full: bool = False) -> str:
    """A block's label (``full``: its full name) in the interface's language."""
    return translate("model_map", block.title if full else block.label).format(norm=diagram.norm_name, symbol=diagram.norm_symbol)


def layers_text(layers: tuple[int, ...]) -> str:
    """``layer 2`` or ``layers 2–12`` (1-based, as on screen)."""
    if len(layers) == 1:
        return translate("model_map", "layer {n}").format(n=layers[0] + 1)
    return translate("model_map", "layers {first}–{last}").format(first=layers[0] + 1, last=layers[-1] + 1)


def block_spec(diagram: Diagram, block: Block) -> ViewSpec:
    """The view that shows ``block``."""
    if block.kind in ("linear", "softmax") and diagram.kind == "encoder-only":
        return masked_prediction.SPEC
    return TARGETS[block.kind]


def block_target(diagram: Diagram, block: Block) -> tuple[str, dict[str, object]]:
    """The name of the view that shows ``block`` and the selection it opens on (``{}``: none):
    an attention or mask block's kind and layer; a norm's, add's or FFN's stack and layer (the
    final norm: the last layer's; the embeddings' norm: the first's)."""
    name = block_spec(diagram, block).name
    if block.kind in ("attention", "mask"):
        return name, {"kind": block.site, "layer": block.layer}
    column = diagram.column(block.stack)
    if block.kind not in ("norm", "add_norm", "add", "ffn") or column is None or not column.n_layers:
        return name, {}
    layer = block.layer if block.layer is not None else (column.n_layers - 1 if block.key.endswith("final_norm") else 0)
    return name, {"kind": block.stack, "layer": layer}


class BlockItem(QtWidgets.QGraphicsRectItem):
    """One block: a rounded box in its kind's hue, filled by its state, its label elided to fit;
    crossed when ablated. Hovering shows its readout; a click (pyqtgraph's ``mouseClickEvent``) asks the owner."""

    def __init__(self, owner: QtModelMapView, block: Block, compact: bool):
        super().__init__()
        self.owner, self.block = owner, block  # the owner: a weak proxy of the view (the view holds its items, not they the view)
        self.state, self.ablated, self.hovered = "idle", False, False
        self.font = ui_font(CHIP_PT if compact else LABEL_PT)
        self.setAcceptHoverEvents(True)
        self.setCursor(QtCore.Qt.CursorShape.PointingHandCursor)
        self.setPen(QtGui.QPen(QtCore.Qt.PenStyle.NoPen))

    def paint(self, painter: QtGui.QPainter, option, widget=None) -> None:  # noqa: ARG002 - Qt API
        theme, rect = self.owner.theme, self.rect().adjusted(1, 1, -1, -1)
        hue = QtGui.QColor(KIND_COLOURS[self.block.kind])
        fill = QtGui.QColor(hue)
        fill.setAlpha(FILL_ALPHA[self.state])
        border = theme.qcolor("ablated") if self.ablated else theme.qcolor("highlight") if self.state == "active" else hue
        pen = QtGui.QPen(border, 2.4 if self.state == "active" or self.ablated or self.hovered else 1.2)
        if self.state == "once":
            pen.setStyle(QtCore.Qt.PenStyle.DashLine)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        painter.setPen(pen)
        painter.setBrush(fill)
        painter.drawRoundedRect(rect, 5, 5)
        painter.setFont(self.font)
        painter.setPen(theme.qcolor("foreground"))
        _draw_label(painter, self.font, rect.adjusted(12 if self.ablated else 3, 0, -3, 0), label_text(self.owner.diagram, self.block))
        if self.ablated:
            painter.setPen(QtGui.QPen(theme.qcolor("ablated"), 2.0))
            mark = QtCore.QRectF(rect.left() + 3, rect.top() + 3, 7, 7)  # top left: clear of the flow arrow into the row
            painter.drawLine(mark.topLeft(), mark.bottomRight())
            painter.drawLine(mark.topRight(), mark.bottomLeft())

    def hoverEnterEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.hovered = True
        self.owner.show_readout(self.block)
        self.update()

    def hoverLeaveEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.hovered = False
        self.owner.show_readout(None)
        self.update()

    def mouseClickEvent(self, event) -> None:  # noqa: N802 - pyqtgraph's click protocol
        if event.button() == QtCore.Qt.MouseButton.LeftButton:
            event.accept()
            self.owner.click_block(self.block.key)


class MapItem(pg.GraphicsWidget):
    """The diagram: re-placed (:func:`place`) whenever its size or its frame changes."""

    def __init__(self, owner: QtModelMapView):
        super().__init__()
        self.owner = weakref.proxy(owner)  # weak: the view holds its map, not the map the view
        self.placement: Placement | None = None
        self.items: dict[str, BlockItem] = {}
        self._texts: list[QtWidgets.QGraphicsItem] = []
        self.arrows = {lit: QtWidgets.QGraphicsPathItem(self) for lit in (False, True)}  # idle and lit connections
        self.frames = QtWidgets.QGraphicsPathItem(self)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Expanding)

    def clear(self) -> None:
        """No blocks, labels or connections (no model)."""
        for item in list(self.items.values()) + self._texts:
            _remove(item)
        self.items, self._texts, self.placement = {}, [], None
        for path in (*self.arrows.values(), self.frames):
            path.setPath(QtGui.QPainterPath())

    def build(self, diagram: Diagram) -> None:
        """New blocks for a new model."""
        self.clear()
        compact = {b.key for c in diagram.columns for r in c.rows if r.layers for b in r.blocks}
        self.items = {b.key: BlockItem(self.owner, b, b.key in compact) for b in diagram.blocks()}
        for item in self.items.values():
            item.setParentItem(self)
        self.relayout()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self.relayout()

    def relayout(self) -> None:
        diagram = self.owner.diagram
        if diagram is None:
            return
        small = QtGui.QFontMetricsF(ui_font(SMALL_PT))
        widest = max((small.horizontalAdvance(layers_text(r.layers)) for c in diagram.columns for r in c.rows if r.layers), default=0.0)
        size = self.size()
        self.placement = place(diagram, size.width(), size.height(), text_h=small.height(), label_w=widest + 8)
        for key, item in self.items.items():
            box = self.placement.blocks[key]
            item.setRect(box.x, box.y, box.w, box.h)
        self._draw_texts(diagram, small)
        self.restyle()

    def _draw_texts(self, diagram: Diagram, small: QtGui.QFontMetricsF) -> None:
        """Compact rows' layer labels, the columns' headers and the first layers' tags."""
        for item in self._texts:
            _remove(item)
        self._texts = []
        p, theme = self.placement, self.owner.theme
        for layers, box in p.labels:
            if len(layers) > 1:  # a row standing for several layers: "× N" over which they are
                line = small.height()
                self._text(translate("model_map", "× {n}").format(n=len(layers)), box.x, box.cy - line, box.w, "foreground", bold=True)
                self._text(layers_text(layers), box.x, box.cy, box.w, "muted")
            else:
                self._text(layers_text(layers), box.x, box.cy - small.height() / 2, box.w, "muted")
        for column in diagram.columns:
            box, frame = p.headers[column.stack], p.frames.get(column.stack)
            title, status = self.owner.header_texts(column.stack)
            self._text(title, box.x, box.y, box.w, "foreground", bold=True)
            self._text(status, box.x, box.y + small.height() + 2, box.w, "highlight" if self.owner.column_state(column.stack) == "active" else "muted")
            if frame is not None:
                self._text(layers_text((0,)), frame.x + 6, frame.y + 2, frame.w - 12, "muted")
        self.frames.setPen(pg.mkPen(theme.separator, width=1, style=QtCore.Qt.PenStyle.DashLine))

    def _text(self, text: str, x: float, y: float, width: float, colour: str, bold: bool = False) -> None:
        font = ui_font(SMALL_PT, bold=bold)
        item = QtWidgets.QGraphicsSimpleTextItem(QtGui.QFontMetricsF(font).elidedText(text, QtCore.Qt.TextElideMode.ElideRight, max(width, 10)), self)
        item.setFont(font)
        item.setBrush(self.owner.theme.qcolor(colour))
        item.setPos(x, y)
        if item.text() != text:
            item.setToolTip(text)
        self._texts.append(item)

    def restyle(self) -> None:
        """The blocks' states and marks, and the connections, lit where the step runs."""
        frame, p = self.owner.given, self.placement
        if p is None:
            return
        for key, item in self.items.items():
            item.state = frame.states.get(key, "idle") if frame is not None else "idle"
            item.ablated = frame is not None and key in frame.ablated
            item.setToolTip(self.owner.tooltip(item.block))
            item.update()
        frames = QtGui.QPainterPath()
        for box in p.frames.values():
            frames.addRoundedRect(QtCore.QRectF(box.x, box.y, box.w, box.h), 7, 7)
        self.frames.setPath(frames)
        paths = {False: QtGui.QPainterPath(), True: QtGui.QPainterPath()}
        for stack, lines in p.arrows.items():
            lit = self.owner.column_state("decoder" if stack == "memory" else stack) == "active"
            for line in lines:
                _add_arrow(paths[lit], line)
        theme = self.owner.theme
        for lit, item in self.arrows.items():
            item.setPath(paths[lit])
            item.setPen(pg.mkPen(theme.highlight if lit else theme.muted, width=1.6 if lit else 1.1))


def _draw_label(painter: QtGui.QPainter, font: QtGui.QFont, rect: QtCore.QRectF, text: str) -> None:
    """``text`` centred in ``rect``: on one line, on two where it is too long and ``rect`` is tall
    enough, else on one line a point or two smaller, else cut with "…"."""
    fm = QtGui.QFontMetricsF(font)
    centre = QtCore.Qt.AlignmentFlag.AlignCenter
    if fm.horizontalAdvance(text) > rect.width() and rect.height() >= 2 * fm.height():
        wrapped = fm.boundingRect(rect, int(centre | QtCore.Qt.TextFlag.TextWordWrap), text)
        if wrapped.height() <= rect.height() and wrapped.width() <= rect.width():
            painter.drawText(rect, int(centre | QtCore.Qt.TextFlag.TextWordWrap), text)
            return
    for smaller in (1.0, 2.0):  # a chip's label a point or two smaller before it is cut (wide glyphs: 简体中文)
        small = QtGui.QFont(font)
        small.setPointSizeF(max(font.pointSizeF() - smaller, 6.0))
        if QtGui.QFontMetricsF(small).horizontalAdvance(text) <= rect.width():
            painter.setFont(small)
            painter.drawText(rect, centre, text)
            painter.setFont(font)
            return
    painter.drawText(rect, centre, fm.elidedText(text, QtCore.Qt.TextElideMode.ElideRight, rect.width()))


def _remove(item: QtWidgets.QGraphicsItem) -> None:
    if item.scene() is not None:
        item.scene().removeItem(item)


def _add_arrow(path: QtGui.QPainterPath, line: tuple[tuple[float, float], ...]) -> None:
    """A polyline ending in an arrowhead."""
    path.moveTo(*line[0])
    for point in line[1:]:
        path.lineTo(*point)
    (x0, y0), (x1, y1) = line[-2], line[-1]
    length = max(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5, 1e-6)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    for side in (-1, 1):
        path.moveTo(x1, y1)
        path.lineTo(x1 - 6 * ux + side * 3.5 * uy, y1 - 6 * uy - side * 3.5 * ux)


class QtModelMapView(FigureViewBase):
    """``set_data(MapFrame | None)``: the model's blocks, the current step's path lit.

    ``click_block(key)`` does what a click on a block does: ``chose(changes)`` with the selection
    the block's view opens on (when it has one), then ``viewRequested(name)``."""

    given: MapFrame | None  # the data set_data was given (FigureViewBase)

    viewRequested = QtCore.Signal(str)  # the view (its --view name) that shows the clicked block

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.diagram: Diagram | None = None  # the model's blocks, of the frame drawn
        self.map = MapItem(self)
        self.canvas.ci.addItem(self.map, row=1, col=0)
        self.canvas.setMinimumHeight(360)
        self._scroll_canvas()
        self._set_title()

    # data -------------------------------------------------------------------------------
    def render(self, frame: MapFrame | None) -> None:
        new_model = frame is None or self.diagram is not frame.diagram
        self.diagram = None if frame is None else frame.diagram
        if new_model and self.diagram is not None:
            self.map.build(self.diagram)
            self._fit_height()
        elif self.diagram is None:
            self.map.clear()
        self._set_title()
        self.map.relayout()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the map shows the whole model."""

    def _fit_height(self) -> None:
        """The canvas is at least as tall as the map at its smallest blocks (the dock scrolls)."""
        if self.diagram is None:
            return
        needed = place(self.diagram, max(self.canvas.width(), 300), 0).height
        self.canvas.setMinimumHeight(int(needed + self.title.boundingRect().height() + 24))

    # what is shown ------------------------------------------------------------------------
    def column_state(self, stack: str) -> str:
        """How the current step uses ``stack``: ``active``, ``once`` or ``idle``."""
        column = self.diagram.column(stack) if self.diagram is not None else None
        if self.given is None or column is None or not column.rows:
            return "idle"
        return self.given.states.get(column.rows[0].blocks[0].key, "idle")

    def header_texts(self, stack: str) -> tuple[str, str]:
        """A column's title and what the current step does in it."""
        column, frame = self.diagram.column(stack), self.given
        title = (translate("model_map", "Encoder · {n} layers") if stack == "encoder" else translate("model_map", "Decoder · {n} layers")).format(n=column.n_layers)
        state = self.column_state(stack)
        if state == "once":
            status = translate("model_map", "ran once for this sentence ({n} tokens)").format(n=frame.src_len)
        elif state == "active" and stack == "decoder" and frame.position is not None:
            fed, out = (display_piece(p) for p in frame.pieces)
            status = translate("model_map", "step {step}: position {step} reads “{fed}” → “{out}”").format(step=frame.position + 1, fed=fed, out=out)
        elif state == "active":
            status = translate("model_map", "runs over the whole sentence ({n} tokens)").format(n=frame.src_len)
        else:
            status = translate("model_map", "not run yet")
        return title, status

    def tooltip(self, block: Block) -> str:
        spec = block_spec(self.diagram, block)
        where = translate("views", spec.title) if spec.title else translate("model_map", "the attention grid")
        lines = [label_text(self.diagram, block, full=True)] + ([layers_text(block.layers)] if block.layers else []) + [self.shape_text(block)]
        lines.append(translate("model_map", "click: open {view}").format(view=where))
        return "\n".join(lines)

    def shape_text(self, block: Block) -> str:
        frame = self.given
        src, tgt = (frame.src_len, frame.tgt_len) if frame is not None else (0, 0)
        return translate("model_map", block.shape).format(**shape_values(self.diagram, block, src, tgt))

    def show_readout(self, block: Block | None) -> None:
        self.readout.setText(" " if block is None else f"{label_text(self.diagram, block, full=True)} · {self.shape_text(block)}")

    def _set_title(self) -> None:
        title = translate("model_map", "Model map")
        if self.diagram is None:
            self.title.set_title(title, translate("model_map", "no model open"))
            self.title.set_legend(())
            return
        self.title.set_title(title, translate("model_map", "{placement}: {formula} · click a block to open its view").format(
            placement=translate("model_map", "pre-norm") if self.diagram.placement == "pre" else translate("model_map", "post-norm"),
            formula=placement_formula(self.diagram.norm, self.diagram.placement)))
        self.title.set_legend(self._legend())

    def _legend(self) -> tuple[tuple[str, str, str], ...]:
        t, frame = self.theme, self.given
        entries = [("▭", t.highlight, translate("model_map", "this step passes through"))]
        if frame is not None and "once" in frame.states.values():
            entries.append(("▭", t.muted, translate("model_map", "ran once for this sentence")))
        if frame is not None and frame.ablated:
            entries.append(("✕", t.ablated, translate("model_map", "ablated heads")))
        return tuple(entries)

    # clicks -----------------------------------------------------------------------------------
    def click_block(self, key: str) -> None:
        """Open the view of block ``key``: select what it shows, then ask for its dock."""
        name, changes = block_target(self.diagram, self.diagram.block(key))
        if changes:
            self.chose.emit(changes)
        self.viewRequested.emit(name)

    def lit_keys(self) -> tuple[str, ...]:
        """The blocks drawn lit: the current step passes through them."""
        return tuple(k for k, item in self.map.items.items() if item.state == "active")

    def block_items(self) -> dict[str, BlockItem]:
        return dict(self.map.items)

    # theme and export -----------------------------------------------------------------------------
    def _on_theme_changed(self) -> None:
        self._set_title()
        self.map.relayout()

    def figure_title(self) -> str:
        return translate("model_map", "Model map")

    def figure_data(self) -> FigureData:
        if self.given is None:
            raise ValueError("the view shows no data yet")
        return figure_data(self.given)

    def sizeHint(self) -> QtCore.QSize:  # noqa: N802 - Qt API
        return QtCore.QSize(640, 700)


def model_map_data(session: Session, choice: ViewChoice) -> MapFrame | None:
    """The open model's map (its blocks kept while the model stays open) at the current frame."""
    bundle = session.bundle
    if bundle is None:
        return None
    diagram = session.frames.derive("model_map", scope="model", build=lambda: model_diagram(bundle.config))
    row = session.current_row() if diagram.column("decoder") is not None else None
    fed, out = session.input_pieces(), session.output_pieces()
    pieces = (fed[row], out[row]) if row is not None and row < len(fed) and row < len(out) else ("", "")
    return map_frame(diagram, position=row, src_len=len(session.src_pieces()), tgt_len=len(fed),
                     ablated=session.ablation.heads, pieces=pieces)


SPEC = ViewSpec("model-map", QtModelMapView, QT_TRANSLATE_NOOP("views", "Model map"), "right", (), data=model_map_data, empty="no model open")
