"""Beam tree: the beams of the decoding as a tree of prefixes, and the cross-attention behind the
node the user clicks.

Left: one marker per prefix that was ever a beam (x: the step it appeared at; the best path runs
along the top row, each subtree holds a block of rows below it), labelled with its last piece
and its ranking score; lines join a prefix to its extensions. The best final beam's path is in
the highlight colour, pruned branches are muted, finished beams (EOS) are squares, the selected
node is ringed. Right: the selected node's cross-attention (rows: the tokens fed, each choosing
the next token of the node; columns: the source), the mean over the heads of one layer or one
head. Greedy decoding and sampling give a single path.

Clicking a node makes it the view's option (``beamTreeNode``, its token ids), so its attention is
computed off the UI thread, with the tree, by
:func:`attnviz.core.analysis.beam_tree.beam_tree_frame`; the view renders the
:class:`~attnviz.core.analysis.beam_tree.BeamTreeFrame` it returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.beam_tree import BeamNode, BeamTree, BeamTreeFrame, beam_history, beam_tree_frame, figure_data
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import strategy_text
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items, word_start_legend
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.colormaps import ui_font
from attnviz.qt.widgets.heatmap import MINUS, HeatmapPlot, HoverInfo
from attnviz.qt.widgets.plain_text import plain_label
from attnviz.qt.widgets.plots import pen

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

NODE = "beamTreeNode"  # the option holding the selected node: its token ids, SOS first ("": the best final beam)
MIN_HEIGHT = 300  # px of canvas before the dock scrolls
HEATMAP_WIDTH = 330  # px: the attention's least width (its title, axes and colour bar)
MARKER = 10  # px: a node's marker
RING = 18  # px: the ring around the selected node
LABEL_GAP = RING / 2 + 1  # px from a node's centre to its label's left edge (clear of the ring)
LABEL_PT = 8.5  # points: the nodes' labels
RIGHT_ROOM = 0.9  # steps of room right of the last column, for its labels
STYLES = ("kept", "pruned", "best")  # how an edge or node is drawn, by the node (the edge's child)
STYLE_WORDS = {  # each style in words (legend, read-outs)
    "kept": QT_TRANSLATE_NOOP("beam_tree", "kept"),
    "pruned": QT_TRANSLATE_NOOP("beam_tree", "pruned"),
    "best": QT_TRANSLATE_NOOP("beam_tree", "best path"),
}
FINISHED = QT_TRANSLATE_NOOP("beam_tree", "finished (EOS)")


def node_style(node: BeamNode) -> str:
    return "best" if node.best else ("pruned" if node.pruned else "kept")


def score_text(value: float) -> str:
    return f"{value:.2f}".replace("-", MINUS)


def node_text(node: BeamNode) -> str:
    """A node's label: its last piece and score (the root: SOS)."""
    piece = display_piece(node.piece)
    return piece if node.parent is None else f"{piece} {score_text(node.score)}"


def prefix_text(node: BeamNode) -> str:
    """The node's pieces after SOS, as shown (SOS alone for the root)."""
    return " ".join(display_piece(p) for p in node.pieces[1:]) or display_piece(node.pieces[0])


class QtBeamTreeView(FigureViewBase):
    """``set_data(BeamTreeFrame | None)``; options: the selected node (``beamTreeNode``; a click
    sets it and emits ``optionsChanged``), and the layer and head of the attention shown."""

    given: BeamTreeFrame | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._node = ""
        self._layer: int | None = None  # None: the last layer
        self._head: int | None = None  # None: the mean over heads
        self.layer_combo = self._add_control(translate("beam_tree", "Layer"),
                                             make_combo("beamTreeLayer", translate("beam_tree", "The decoder layer whose cross-attention is shown")))
        self.head_combo = self._add_control(translate("beam_tree", "Head"),
                                            make_combo("beamTreeHead", translate("beam_tree", "One head of that layer, or the mean over its heads")))
        for combo in (self.layer_combo, self.head_combo):
            combo.currentIndexChanged.connect(self._on_layer_head_changed)
        self.controls.addStretch(1)
        self.node_label = plain_label("", "beamTreeSelected")  # model output: plain text
        self.node_label.setWordWrap(True)
        self.node_label.setContentsMargins(8, 0, 8, 0)
        self.layout().insertWidget(1, self.node_label)
        self.tree_plot = self._build_tree_plot()
        self.heatmap = HeatmapPlot(self.theme, colorbar_label=translate("beam_tree", "weight"))
        self.heatmap.set_axis_titles(translate("beam_tree", "fed token (rows)"), translate("beam_tree", "source (columns)"))
        self.heatmap.sigHovered.connect(self._on_cell_hovered)
        self.heatmap.setMinimumWidth(HEATMAP_WIDTH)  # a narrow dock scrolls instead
        self.canvas.ci.addItem(self.tree_plot, row=1, col=0)
        self.canvas.ci.addItem(self.heatmap, row=1, col=1)
        self.canvas.ci.layout.setColumnStretchFactor(0, 1)  # the room beyond each one's least width, shared evenly
        self.canvas.ci.layout.setColumnStretchFactor(1, 1)
        self._scroll_canvas()
        self._on_theme_changed()

    def _build_tree_plot(self) -> pg.PlotItem:
        plot = pg.PlotItem(enableMenu=False)
        plot.hideButtons()
        plot.hideAxis("left")
        plot.setLabel("bottom", translate("beam_tree", "step (tokens generated)"))
        vb = plot.getViewBox()
        vb.setMouseEnabled(x=False, y=False)
        vb.setMenuEnabled(False)
        vb.invertY(True)
        vb.disableAutoRange()
        self.edges = {style: pg.PlotCurveItem() for style in STYLES}
        for style in STYLES:  # the best path over the others
            plot.addItem(self.edges[style])
        self.markers = pg.ScatterPlotItem(hoverable=True, tip=None, useCache=False)  # vector symbols: SVG and PDF files too
        self.markers.sigClicked.connect(self._on_marker_clicked)
        self.markers.sigHovered.connect(self._on_marker_hovered)
        plot.addItem(self.markers)
        self.ring = pg.ScatterPlotItem(size=RING, brush=None, useCache=False)
        plot.addItem(self.ring)
        self.labels: list[pg.TextItem] = []  # reused across updates, one per node
        return plot

    # protocol ------------------------------------------------------------------------------------
    def render(self, frame: BeamTreeFrame | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view shows the whole search; its node is its own option."""

    def frame(self) -> BeamTreeFrame | None:
        return self.given

    def options(self) -> dict[str, object]:
        return {**super().options(), NODE: self._node}

    def set_options(self, options: dict[str, object]) -> None:
        layer, head = options.get("beamTreeLayer"), options.get("beamTreeHead")
        if type(layer) is int and layer >= 0:
            self._layer = layer
        if type(head) is int and head >= 0:
            self._head = head - 1 if head else None
        node = options.get(NODE)
        if isinstance(node, str) and node != self._node:
            self._node = node
            self.optionsChanged.emit()
        super().set_options({k: v for k, v in options.items() if k != NODE})

    def select_node(self, index: int) -> None:
        """Select node ``index`` of the tree shown, as a click does: its attention is computed again."""
        frame = self.given
        if frame is None or not 0 <= index < len(frame.tree.nodes):
            return
        node = frame.tree.nodes[index]
        self._node = " ".join(str(t) for t in node.token_ids)
        self._place_ring(frame.tree, index)
        self.node_label.setText(translate("beam_tree", "{prefix} · computing its cross-attention…").format(prefix=prefix_text(node)))
        self.node_label.setProperty("key", "computing")
        self.optionsChanged.emit()

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        frame = self.given
        self.tree_plot.setVisible(frame is not None)
        self.heatmap.setVisible(frame is not None)
        if frame is None:
            self.title.set_title(translate("beam_tree", "Beam tree"),
                                 translate("beam_tree", "needs a decoded sentence: choose Beam in the strategy box (greedy shows one path)"))
            self.title.set_legend(())
            self.node_label.setText("")
            self.node_label.setProperty("key", "")
            return
        self._set_title(frame)
        self._draw_tree(frame.tree)
        self._place_ring(frame.tree, frame.selected)
        self._fit_layer_head(frame)
        self._draw_attention()

    def _set_title(self, frame: BeamTreeFrame) -> None:
        t = self.theme
        tree = frame.tree
        self.title.set_title(translate("beam_tree", "Beam tree · {strategy}: {prefixes} prefixes over {steps} steps").format(
                                 strategy=frame.strategy, prefixes=len(tree.nodes), steps=tree.n_steps),
                             translate("beam_tree", "label: the last piece and its score (log P / length penalty) · click a node for its cross-attention"))
        pieces = tuple(n.piece for n in tree.nodes)
        words = {style: translate("beam_tree", w) for style, w in STYLE_WORDS.items()}
        self.title.set_legend((("—", t.highlight, words["best"]), ("—", t.foreground, words["kept"]), ("—", t.muted, words["pruned"]),
                               ("■", t.foreground, translate("beam_tree", FINISHED)), ("○", t.selection, translate("beam_tree", "selected")),
                               *word_start_legend(pieces)))

    def _draw_tree(self, tree: BeamTree) -> None:
        pos = tree.positions()
        styles = [node_style(n) for n in tree.nodes]
        for style, item in self.edges.items():
            pairs = [pair for pair in tree.edges() if styles[pair[1]] == style]
            xy = pos[np.array(pairs, dtype=int).reshape(-1)] if pairs else np.zeros((0, 2))
            item.setData(xy[:, 0], xy[:, 1], connect="pairs")
        self.markers.setData(spots=[self._spot(n, p, i, s) for i, (n, p, s) in enumerate(zip(tree.nodes, pos, styles))])
        self._draw_labels(tree, pos, styles)
        self._fit_range(tree)

    def _spot(self, node: BeamNode, xy: np.ndarray, index: int, style: str) -> dict:
        color = self._style_color(style)
        return {"pos": (float(xy[0]), float(xy[1])), "data": index, "size": MARKER, "symbol": "s" if node.finished else "o",
                "brush": pg.mkBrush(color), "pen": pg.mkPen(self.theme.background, width=1)}

    def _style_color(self, style: str) -> QtGui.QColor:
        t = self.theme
        return {"best": t.qcolor("highlight"), "kept": t.qcolor("foreground"), "pruned": t.qcolor("muted", 150)}[style]

    def _draw_labels(self, tree: BeamTree, pos: np.ndarray, styles: list[str]) -> None:
        font = ui_font(LABEL_PT)
        while len(self.labels) < len(tree.nodes):
            item = pg.TextItem(anchor=(0.0, 1.0))  # above and right of its node: clear of the lines leaving it
            item.textItem.document().setDocumentMargin(1)
            item.setFont(font)
            self.tree_plot.addItem(item)
            self.labels.append(item)
        for item, node, xy, style in zip(self.labels, tree.nodes, pos, styles):
            item.setText(node_text(node), color=self._style_color(style))
            box = item.textItem.boundingRect()
            item.setAnchor((-LABEL_GAP / max(box.width(), 1.0), 1.0 + 2.0 / max(box.height(), 1.0)))  # LABEL_GAP right, 2 px up
            item.setPos(float(xy[0]), float(xy[1]))
            item.setVisible(True)
        for item in self.labels[len(tree.nodes):]:
            item.setVisible(False)

    def _fit_range(self, tree: BeamTree) -> None:
        """Room for every label: a step as wide as the widest label, its gap and the next node's
        marker; a row a label and a marker tall; a canvas too small for that scrolls."""
        fm = QtGui.QFontMetricsF(ui_font(LABEL_PT))
        widest = max((fm.horizontalAdvance(node_text(n)) for n in tree.nodes), default=0.0) + 2  # the label's margins
        step_px, row_px = max(widest + LABEL_GAP + MARKER / 2 + 4, 48.0), max(fm.height() + MARKER + 4, 28.0)
        left, top = -0.25, -0.75
        self.tree_plot.setMinimumSize(step_px * (tree.n_steps + RIGHT_ROOM - left) + 12, row_px * (tree.n_rows - 0.45 - top) + 48)
        self.tree_plot.getViewBox().setRange(xRange=(left, tree.n_steps + RIGHT_ROOM), yRange=(top, tree.n_rows - 0.45), padding=0.0)
        self.tree_plot.getAxis("bottom").setTicks([[(s, str(s)) for s in range(tree.n_steps + 1)]])

    def _place_ring(self, tree: BeamTree, index: int) -> None:
        x, y = tree.positions()[index]
        symbol = "s" if tree.nodes[index].finished else "o"
        self.ring.setData([float(x)], [float(y)], symbol=symbol, size=RING, brush=None, pen=pen(self.theme.selection, 2.5))

    def _fit_layer_head(self, frame: BeamTreeFrame) -> None:
        n_layers, n_heads = frame.attention.weights.shape[:2]
        layer = n_layers - 1 if self._layer is None else min(self._layer, max(n_layers - 1, 0))
        head = -1 if self._head is None or self._head >= n_heads else self._head
        set_combo_items(self.layer_combo, [(str(i + 1), i) for i in range(n_layers)], layer)
        set_combo_items(self.head_combo, [(translate("beam_tree", "mean"), -1), *((str(h + 1), h) for h in range(n_heads))], head)

    def shown_layer_head(self) -> tuple[int, int | None]:
        """The layer (0-based) and head (``None``: the mean) whose attention is drawn."""
        layer, head = self.layer_combo.currentData(), self.head_combo.currentData()
        return (int(layer) if layer is not None else 0), (None if head is None or head < 0 else int(head))

    def _draw_attention(self) -> None:
        frame = self.given
        if frame is None:
            return
        a, node = frame.attention, frame.node
        status = translate("beam_tree", STYLE_WORDS[node_style(node)])
        end = " · " + translate("beam_tree", FINISHED) if node.finished else ""
        self.node_label.setText(translate("beam_tree", "node {node}, step {step}: {prefix} · log P {log_p} · score {score} · {status}").format(
            node=frame.selected + 1, step=node.step, prefix=prefix_text(node), log_p=score_text(node.log_prob), score=score_text(node.score),
            status=status) + end)
        visible = a.weights.shape[0] > 0 and a.weights.shape[2] > 0
        self.heatmap.setVisible(visible)
        self.node_label.setProperty("key", "node" if visible else "sos-chose-nothing")  # what the label says, in any language
        if not visible:
            self.node_label.setText(self.node_label.text() + translate("beam_tree", " · SOS chose nothing yet: click a later node for its cross-attention"))
            return
        layer, head = self.shown_layer_head()
        self.heatmap.set_matrix(a.shown(layer, head), a.fed_pieces, a.source_pieces, highlight_row=len(a.fed_pieces) - 1, levels=(0.0, 1.0))
        which = translate("beam_tree", "mean of heads") if head is None else translate("beam_tree", "head {head}").format(head=head + 1)
        self.heatmap.set_panel_title(translate("beam_tree", "Cross-attention · layer {layer} · {which}").format(layer=layer + 1, which=which),
                                     color=self.theme.foreground)

    # the user's choices ----------------------------------------------------------------------------
    def _on_layer_head_changed(self, _index: int) -> None:
        layer, head = self.shown_layer_head()
        self._layer, self._head = layer, head
        self._draw_attention()

    def _on_marker_clicked(self, _item, points, _event) -> None:
        if len(points):
            self.select_node(int(points[0].data()))

    def _on_marker_hovered(self, _item, points, _event) -> None:
        frame = self.given
        if frame is None or not len(points):
            self.readout.setText(" ")
            return
        node = frame.tree.nodes[int(points[0].data())]
        flags = [translate("beam_tree", f) for f, on in ((FINISHED, node.finished), (QT_TRANSLATE_NOOP("beam_tree", "final beam"), node.final),
                                                         (STYLE_WORDS["best"], node.best), (STYLE_WORDS["pruned"], node.pruned)) if on]
        self.readout.setText(translate("beam_tree", "step {step}: {prefix} · log P {log_p} · score {score}").format(
            step=node.step, prefix=prefix_text(node), log_p=score_text(node.log_prob), score=score_text(node.score)) + "".join(f" · {f}" for f in flags))

    def _on_cell_hovered(self, info: HoverInfo | None) -> None:
        frame = self.given
        if info is None or frame is None:
            self.readout.setText(" ")
            return
        chose = display_piece(frame.attention.chose_pieces[info.row])
        self.readout.setText(translate("beam_tree", "fed “{fed}” (chose “{chose}”) → source “{source}” (pos {pos}): {value:.4f}").format(
            fed=info.row_label, chose=chose, source=info.col_label, pos=info.col + 1, value=info.value))

    def _on_theme_changed(self) -> None:
        self.heatmap.apply_theme(self.theme)
        self.tree_plot.getAxis("bottom").setPen(pen(self.theme.muted, 1.0))
        self.tree_plot.getAxis("bottom").setTextPen(pg.mkPen(self.theme.foreground))
        self.tree_plot.getAxis("bottom").setStyle(tickFont=ui_font(8))
        for style, item in self.edges.items():
            item.setPen(pen(self._style_color(style), 2.6 if style == "best" else 1.4))
        self._refresh()

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("beam_tree", "Beam tree")

    def figure_data(self) -> FigureData:
        if self.given is None:
            raise ValueError("the view shows no data yet")
        return figure_data(self.given)

    def transient_items(self):
        return [self.heatmap.hover_marker]

    # for tests and scripts ---------------------------------------------------------------------------
    def node_scene_pos(self, index: int) -> QtCore.QPointF:
        """Where node ``index`` is drawn, in scene coordinates (to click it)."""
        x, y = self.given.tree.positions()[index]
        return self.tree_plot.getViewBox().mapViewToScene(QtCore.QPointF(float(x), float(y)))

    def drawn_nodes(self) -> int:
        return len(self.markers.points())

    def label_items(self) -> list[pg.TextItem]:
        return [item for item in self.labels if item.isVisible()]


# -- the registry's entry ----------------------------------------------------------------------
def parse_node(text: object) -> tuple[int, ...] | None:
    """``"2 18 660"`` -> ``(2, 18, 660)``; anything else (``""``): ``None``."""
    parts = str(text or "").split()
    return tuple(int(p) for p in parts) if parts and all(p.isdigit() for p in parts) else None


def beam_tree_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | None:
    """The tree of the session's decoding (its beams read here, in the session's thread) and the
    selected node's cross-attention: one model pass, in a worker."""
    bundle, decoding = session.bundle, session.decoding
    if bundle is None or decoding is None or session.forced is not None:
        return None
    history = session.frames.derive("beam-history", lambda: beam_history(decoding))
    return Analysis(beam_tree_frame, (bundle.model, decoding.source, history, parse_node(options.get(NODE)),
                                      tuple(decoding.interventions), strategy_text(decoding.strategy)))


SPEC = ViewSpec("beam-tree", QtBeamTreeView, QT_TRANSLATE_NOOP("views", "Beam tree"), "bottom", (), data=beam_tree_data, reads_options=True, needs=("decoder",),
                empty="no beam tree: decode a sentence without a typed target (choose Beam in the strategy box; greedy shows one path)")
