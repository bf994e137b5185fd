"""Circuit: which edges between the model's nodes carry one decision of the sentence on screen,
by edge attribution patching against another sentence (猫吃鱼。 against 鱼吃猫。: cat or fish).

Left: the graph of the top k edges by |EAP score|, in bands: the encoder's nodes on top, the
cross-attention heads between, the decoder's self-attention heads, FFNs, embeddings and logits
below; each node at its place along its stack (embeddings on the left, logits on the right). An
edge's width is its |score|; blue: corrupting it lowers the logit difference (it carries the
clean decision), red: it raises it. Right: the faithfulness curve, the share of the logit
difference that the top k edges recover when every other edge carries the other sentence's value.
The other sentence (default: the first and last characters swapped), k and the integrated-gradient
steps are the view's options; a click on a head selects it in every linked view. The view renders
:class:`CircuitFrame`, computed in a worker (:func:`attnviz.core.analysis.circuit.circuit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.circuit import Circuit, CircuitError, Node, circuit, figure_data, node_positions
from attnviz.core.analysis.compare import swap_ends
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.core.decoding.strategies import DecodingError
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import head_text, kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP, get_colormap, ui_font
from attnviz.qt.widgets.plots import curve, pen, quiet_plot

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 320  # px of canvas before the dock scrolls
DEFAULT_TOP = 20  # edges drawn and measured unless the user asks for others
MAX_TOP = 1000
LABEL_PT = 8.0
SYMBOLS = {"embed": "d", "head": "o", "ffn": "s", "logits": "t1"}
BAND_LABELS = ((2.0, "encoder"), (1.0, "cross"), (0.0, "decoder"))
# A head's label right of it, the embeddings' below and left (clear of their edges), any other below it.
LABEL_ANCHORS = {"head": (-0.15, 0.5), "embed": (0.9, -0.2)}


@dataclass(frozen=True)
class CircuitFrame:
    """What the view draws: the sentence on screen (clean), the other one (corrupted), their
    circuit, or the one-line reason there is none (sentences of different numbers of tokens)."""

    source: str
    other: str
    circuit: Circuit | None
    error: str | None = None


def node_text(node: Node) -> str:
    """A node's short label in its band: ``2.3`` (layer.head, 1-based), ``FFN 2``, ``embeddings``, ``logits``."""
    if node.kind == "head":
        return f"{node.layer + 1}.{node.head + 1}"
    if node.kind == "ffn":
        return translate("circuit", "FFN {layer}").format(layer=node.layer + 1)
    return translate("circuit", "embeddings") if node.kind == "embed" else translate("circuit", "logits")


def node_name(node: Node) -> str:
    """A node in full, as the readout names it: ``cross:3:2``, ``encoder FFN 2``, ``decoder embeddings``."""
    if node.kind == "head":
        return head_text(node.attention, node.layer, node.head)
    return node_text(node) if node.kind == "logits" else f"{kind_name(node.stack)} {node_text(node)}"


class QtCircuitView(FigureViewBase):
    """``set_data(CircuitFrame | None)``; options: the other sentence (``circuitOtherEdit``; empty:
    the default it shows), the edges drawn (``circuitTopSpin``) and the EAP-IG steps
    (``circuitIgSpin``, 0: plain EAP); ``chose({"kind", "layer", "head", "mode"})`` on a head's click."""

    given: CircuitFrame | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._why_not: str | None = None
        self._positions = np.zeros((0, 2))
        self._build_controls()
        self.graph_plot = self._build_graph_plot()
        self.curve_plot = self._build_curve_plot()
        self.canvas.ci.addItem(self.graph_plot, row=1, col=0)
        self.canvas.ci.addItem(self.curve_plot, row=1, col=1)
        self.canvas.ci.layout.setColumnStretchFactor(0, 3)
        self.canvas.ci.layout.setColumnStretchFactor(1, 1)
        self._refresh()

    def _build_controls(self) -> None:
        self.other_edit = QtWidgets.QLineEdit(objectName="circuitOtherEdit")
        self.other_edit.setToolTip(translate("circuit", "The corrupted sentence (same number of tokens); empty: the sentence with its first "
                                                        "and last word (or character) swapped, shown grey in the field. Press Enter."))
        self.other_edit.setPlaceholderText(translate("circuit", "the sentence with its ends swapped"))
        self.other_edit.setMinimumWidth(140)
        self.other_edit.editingFinished.connect(self.optionsChanged.emit)
        self.top_spin = QtWidgets.QSpinBox(objectName="circuitTopSpin", minimum=1, maximum=MAX_TOP, value=DEFAULT_TOP)
        self.top_spin.setToolTip(translate("circuit", "How many edges (the largest |score| first) are drawn and measured"))
        self.top_spin.valueChanged.connect(self._on_top_changed)
        self.ig_spin = QtWidgets.QSpinBox(objectName="circuitIgSpin", minimum=0, maximum=200, value=0)
        self.ig_spin.setSpecialValueText(translate("circuit", "off"))
        self.ig_spin.setToolTip(translate("circuit", "EAP-IG: average the gradients over this many steps from the other sentence's "
                                                     "embeddings to this one's; off: plain EAP (the gradient of this sentence's run)"))
        self.ig_spin.valueChanged.connect(lambda _v: self.optionsChanged.emit())
        self._add_control(translate("circuit", "Other"), self.other_edit)
        self._add_control(translate("circuit", "Edges"), self.top_spin)
        self._add_control(translate("circuit", "IG steps"), self.ig_spin)
        self.controls.addStretch(1)

    def _build_graph_plot(self) -> pg.PlotItem:
        plot = pg.PlotItem(enableMenu=False)
        plot.hideButtons()
        plot.hideAxis("left")
        plot.hideAxis("bottom")
        vb = plot.getViewBox()
        vb.setMouseEnabled(x=False, y=False)
        vb.setMenuEnabled(False)
        vb.disableAutoRange()
        plot.setMinimumWidth(260)
        self.edge_items: list[pg.PlotCurveItem] = []  # reused, one per drawn edge
        self.nodes = pg.ScatterPlotItem(hoverable=True, tip=None, useCache=False)
        self.nodes.setZValue(10)
        self.nodes.sigClicked.connect(self._on_node_clicked)
        self.nodes.sigHovered.connect(self._on_node_hovered)
        plot.addItem(self.nodes)
        self.labels: list[pg.TextItem] = []  # reused, one per labelled node
        self.band_labels = {kind: pg.TextItem(anchor=(1.0, 0.5)) for _, kind in BAND_LABELS}
        for item in self.band_labels.values():
            item.setFont(ui_font(LABEL_PT, bold=True))
            plot.addItem(item)
        return plot

    def _build_curve_plot(self) -> pg.PlotItem:
        plot = quiet_plot(min_height=160)
        plot.setMinimumWidth(170)
        plot.setLabel("bottom", translate("circuit", "edges kept (k)"))
        plot.setLabel("left", translate("circuit", "recovered (%)"))
        self.full_line = pg.InfiniteLine(pos=100.0, angle=0, movable=False)
        plot.addItem(self.full_line)
        self.curve = curve(plot, symbol="o", symbolSize=6)
        self.current = pg.ScatterPlotItem(size=14, brush=None, useCache=False)
        plot.addItem(self.current)
        return plot

    # protocol ------------------------------------------------------------------------------------
    def render(self, frame: CircuitFrame | None) -> None:
        """Draw ``frame``'s circuit; the other sentence's field shows the default it stands for when empty."""
        self._why_not = None
        if frame is not None:
            self.other_edit.setPlaceholderText(swap_ends(frame.source))
            if frame.error:
                self._why_not = frame.error  # one line from the core; the sentences are in the fields above
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view shows the whole graph."""

    def why_empty(self) -> str | None:
        return self._why_not

    def _drawable(self, frame: CircuitFrame) -> bool:
        return frame.circuit is not None

    def result(self) -> Circuit | None:
        return None if self.given is None else self.given.circuit

    def top(self) -> int:
        return self.top_spin.value()

    def shown_edges(self) -> np.ndarray:
        """The edges drawn: the top k of the circuit shown."""
        c = self.result()
        return np.zeros(0, dtype=np.int64) if c is None else c.top(self.top())

    def node_center_in_scene(self, node: int) -> QtCore.QPointF:
        x, y = self._positions[node]
        return self.graph_plot.getViewBox().mapViewToScene(QtCore.QPointF(float(x), float(y)))

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        c = self.result()
        for plot in (self.graph_plot, self.curve_plot):
            plot.setVisible(c is not None)
        if c is None:
            self.title.set_title(translate("circuit", "Circuit"),
                                 self._why_not or translate("circuit", "needs a source sentence and another of the same number of tokens"))
            self.title.set_legend(())
            return
        self._set_title(c)
        self._draw_graph(c)
        self._draw_curve(c)

    def _set_title(self, c: Circuit) -> None:
        clean, other = display_piece(c.clean_token), display_piece(c.corrupt_token)
        method = translate("circuit", "EAP-IG, {n} steps").format(n=c.ig_steps) if c.ig_steps else "EAP"
        self.title.set_title(
            translate("circuit", "Circuit · {this} against {other}: logit({clean}) − logit({corrupt}) at target position {position}").format(
                this="".join(c.clean_pieces), other="".join(c.corrupt_pieces), clean=clean, corrupt=other, position=c.decision.position + 1),
            translate("circuit", "{method} · the top {k} of {n} edges by |score| · {clean:+.2f} here, {corrupt:+.2f} in the other sentence · "
                                 "click a head to select it").format(method=method, k=min(self.top(), c.graph.n_edges), n=c.graph.n_edges,
                                                                     clean=c.metric_clean, corrupt=c.metric_corrupt))
        neg, pos = self._sign_colors()
        self.title.set_legend((("—", neg.name(), translate("circuit", "carries the decision (corrupting it lowers the difference)")),
                               ("—", pos.name(), translate("circuit", "works against it")),
                               ("", None, translate("circuit", "width: |score|"))))

    def _sign_colors(self) -> tuple[QtGui.QColor, QtGui.QColor]:
        cmap = get_colormap(DIVERGING_COLORMAP)
        return cmap.map(0.05, mode="qcolor"), cmap.map(0.95, mode="qcolor")

    def _draw_graph(self, c: Circuit) -> None:
        g = c.graph
        self._positions = pos = node_positions(g)
        edges = self.shown_edges()
        while len(self.edge_items) < len(edges):
            item = pg.PlotCurveItem()
            self.graph_plot.addItem(item)
            self.edge_items.append(item)
        biggest = max(float(np.abs(c.scores[edges]).max()) if len(edges) else 0.0, 1e-12)
        neg, posc = self._sign_colors()
        for rank, (item, e) in enumerate(zip(self.edge_items, edges)):
            u, v = int(g.edge_up[e]), g.edge_down(int(e))
            item.setData(pos[[u, v], 0], pos[[u, v], 1])
            item.setPen(pen(neg if c.scores[e] < 0 else posc, 0.6 + 5.4 * abs(float(c.scores[e])) / biggest))
            item.setZValue(-rank / max(len(edges), 1))  # the largest on top
            item.setVisible(True)
        for item in self.edge_items[len(edges):]:
            item.setVisible(False)
        used = {int(g.edge_up[e]) for e in edges} | {g.edge_down(int(e)) for e in edges}
        self.nodes.setData(spots=[self._spot(n, p, i, i in used) for i, (n, p) in enumerate(zip(g.nodes, pos))])
        self._draw_labels(g.nodes, pos, used)
        self._fit_range(pos)

    def _spot(self, node: Node, xy: np.ndarray, index: int, used: bool) -> dict:
        t = self.theme
        color = t.qcolor("foreground") if used else t.qcolor("muted", 110)
        return {"pos": (float(xy[0]), float(xy[1])), "data": index, "size": 11 if used else 6, "symbol": SYMBOLS[node.kind],
                "brush": pg.mkBrush(color), "pen": pg.mkPen(t.background, width=1)}

    def _draw_labels(self, nodes: tuple[Node, ...], pos: np.ndarray, used: set[int]) -> None:
        shown = sorted(used)
        font = ui_font(LABEL_PT)
        while len(self.labels) < len(shown):
            item = pg.TextItem()
            item.setFont(font)
            item.setZValue(11)
            self.graph_plot.addItem(item)
            self.labels.append(item)
        for item, i in zip(self.labels, shown):
            item.setText(node_text(nodes[i]), color=self.theme.foreground)
            item.setAnchor(LABEL_ANCHORS.get(nodes[i].kind, (0.5, -0.15)))
            item.setPos(float(pos[i, 0]), float(pos[i, 1]))
            item.setVisible(True)
        for item in self.labels[len(shown):]:
            item.setVisible(False)

    def _fit_range(self, pos: np.ndarray) -> None:
        bands = sorted({round(float(y)) for y in pos[:, 1]})
        for y, kind in BAND_LABELS:
            item = self.band_labels[kind]
            item.setText(kind_name(kind), color=self.theme.muted)
            item.setPos(-0.45, y)
            item.setVisible(y in bands)
        self.graph_plot.getViewBox().setRange(xRange=(-1.6, float(pos[:, 0].max()) + 0.9), yRange=(min(bands) - 0.45, max(bands) + 0.45),
                                              padding=0.0)

    def _draw_curve(self, c: Circuit) -> None:
        x = np.arange(len(c.ks), dtype=float)
        share = 100.0 * np.nan_to_num(c.recovered, nan=0.0)
        self.curve.setData(x, share, pen=pen(self.theme.foreground), symbolBrush=self.theme.foreground, symbolPen=None)
        self.full_line.setPen(pen(self.theme.muted, 1.0, QtCore.Qt.PenStyle.DashLine))
        self.curve_plot.getAxis("bottom").setTicks([[(i, str(k)) for i, k in enumerate(c.ks)]])
        low, high = min(-5.0, float(share.min()) - 5), max(105.0, float(share.max()) + 5)
        self.curve_plot.getViewBox().setRange(xRange=(-0.4, len(c.ks) - 0.6), yRange=(low, high), padding=0.0)
        at = [i for i, k in enumerate(c.ks) if k == min(self.top(), c.graph.n_edges)]
        self.current.setData([float(x[i]) for i in at], [float(share[i]) for i in at], pen=pen(self.theme.selection, 2.0))

    # the user's choices ----------------------------------------------------------------------------
    def _on_top_changed(self, _value: int) -> None:
        """Draw the new top k at once; the curve is measured again with it."""
        self._refresh()
        self.optionsChanged.emit()

    def _on_node_clicked(self, _item, points, _ev=None) -> None:
        c = self.result()
        if c is None or not len(points):
            return
        node = c.graph.nodes[int(points[0].data())]
        if node.kind == "head":
            self.chose.emit({"kind": node.attention, "layer": node.layer, "head": node.head, "mode": "head"})

    def _on_node_hovered(self, _item, points, _ev=None) -> None:
        c = self.result()
        if c is None or not len(points):
            self.readout.setText(" ")
            return
        i = int(points[0].data())
        edges = self.shown_edges()
        touching = int(sum(1 for e in edges if int(c.graph.edge_up[e]) == i or c.graph.edge_down(int(e)) == i))
        self.readout.setText(translate("circuit", "{node}: its outgoing scores sum to {score:+.3f} · {n} of the drawn edges").format(
            node=node_name(c.graph.nodes[i]), score=float(c.node_scores()[i]), n=touching))

    def _on_theme_changed(self) -> None:
        self._refresh()

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("circuit", "Circuit")

    def figure_data(self) -> FigureData:
        c = self.result()
        if c is None:
            raise ValueError("the view shows no data yet")
        return figure_data(c)


# -- the registry's entry ----------------------------------------------------------------------
def circuit_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | None:
    """The circuit of the sentence on screen against the other one: model passes (one backward)
    in a worker that may differentiate."""
    bundle, cur = session.bundle, session.current
    if bundle is None or cur is None or not cur.source.text.strip():
        return None
    this = cur.source.text
    other = str(options.get("circuitOtherEdit") or "").strip() or swap_ends(this)
    top, steps = options.get("circuitTopSpin"), options.get("circuitIgSpin")
    top = top if type(top) is int and 0 < top <= MAX_TOP else DEFAULT_TOP
    steps = steps if type(steps) is int and 0 <= steps <= 200 else 0
    return Analysis(circuit_frame, (bundle, this, other, top, steps), gradients=True)


def circuit_frame(bundle: Bundle, this: str, other: str, top: int, ig_steps: int) -> CircuitFrame:
    """:func:`circuit` of ``this`` against ``other`` (the curve measured at ``top`` too) as the frame
    the view draws; sentences that cannot be paired give a frame that says why."""
    try:
        return CircuitFrame(this, other, circuit(bundle, this, other, ig_steps=ig_steps, ks=(top,)))
    except (CircuitError, DecodingError) as exc:
        return CircuitFrame(this, other, None, str(exc))


SPEC = ViewSpec("circuit", QtCircuitView, QT_TRANSLATE_NOOP("views", "Circuit"), "bottom", (), data=circuit_data, reads_options=True,
                needs=("decoder",),
                empty="no circuit: type a source sentence (and another of the same number of tokens)", depends_on=("source",))
