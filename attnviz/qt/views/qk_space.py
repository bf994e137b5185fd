"""Queries and keys: one head's query vectors and key vectors in one 2-D space (AttentionViz,
Yeh et al., IEEE VIS 2023) — each set centred, scaled to the same mean norm (queries by c, keys by
1/c: Q Kᵀ unchanged), projected together by PCA (:mod:`attnviz.core.analysis.qk_space`). For
cross-attention the target's queries sit beside the source's keys.

Queries are circles, keys triangles, each in its own colour; the sentence on screen is drawn large
and labelled with its pieces, held-out pairs of the model's data (``qkHeldOut`` of them: the sample
head roles are measured on) small and faint behind it. Hover a point to read its token and
sentence; click a query of the sentence on screen to select that query row in every linked view.
The view takes the kind, layer and head selectors (its own combos choose them too); its data is
an :class:`~attnviz.qt.analyses.Analysis` (the held-out pairs run through the model in a worker).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.qk_space import DEFAULT_HELD_OUT, QKSpace, qk_space_held_out
from attnviz.core.data.examples import data_spec
from attnviz.core.data.pieces import display_piece, display_pieces
from attnviz.core.limits import MAX_HELD_OUT
from attnviz.core.model.sites import KINDS
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import head_text, kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.spec import SELECTORS, ViewSpec
from attnviz.qt.widgets.colormaps import ui_font

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 300  # px of canvas before the dock scrolls
HELD_OUT_OPTION = "qkHeldOut"
SIZE = {"sentence": 11, "held-out": 6}  # marker sizes, px
ALPHA = {"sentence": 235, "held-out": 70}
SYMBOL = {"query": "o", "key": "t1"}  # a circle, a triangle pointing up
COLOR = {"query": 0, "key": 1}  # the theme's head colours 0 and 1 (blue and orange in the light theme)
LABELS = 60  # pieces of the sentence on screen labelled at most


class QtQkSpaceView(FigureViewBase):
    """``set_data(QKSpace | None)``; ``chose({"kind", "layer", "head", "mode"[, "query"]})`` when the
    user picks a head in the combos or clicks a query of the sentence on screen; ``optionsChanged``
    when the number of held-out pairs changes."""

    given: QKSpace | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._build_controls()
        self.plot = pg.PlotItem(enableMenu=False)
        self.plot.hideButtons()
        self.plot.setAspectLocked(True)
        self.plot.getViewBox().setMenuEnabled(False)
        self.items: dict[tuple[str, str], pg.ScatterPlotItem] = {}
        for group in ("held-out", "sentence"):  # the sentence on screen over the held-out cloud
            for what in ("key", "query"):
                item = pg.ScatterPlotItem(symbol=SYMBOL[what], size=SIZE[group], hoverable=True, tip=None, useCache=False)
                item.setObjectName(f"qk_{what}_{group}")
                item.sigHovered.connect(partial(self._on_hovered, what))
                if what == "query" and group == "sentence":
                    item.sigClicked.connect(self._on_query_clicked)
                self.plot.addItem(item)
                self.items[(what, group)] = item
        self.ring = pg.ScatterPlotItem(size=20, brush=None, symbol="o", useCache=False)  # the chosen query
        self.plot.addItem(self.ring)
        self.labels: list[pg.TextItem] = []  # reused, one per labelled point
        self._shown_labels = 0  # how many of them name a point now
        self.plot.getViewBox().sigResized.connect(self._declutter)
        self.plot.getViewBox().sigRangeChanged.connect(self._declutter)
        self.canvas.ci.addItem(self.plot, row=1, col=0)
        self._on_theme_changed()

    def _build_controls(self) -> None:
        self.kind_combo = self._add_control("", make_combo("qkKindCombo", translate(
            "qk_space", "Which attention: encoder self, decoder masked self or cross (target queries, source keys)")))
        self.layer_combo = self._add_control(translate("qk_space", "Layer"), make_combo("qkLayerCombo", translate("qk_space", "Layer")))
        self.head_combo = self._add_control(translate("qk_space", "Head"), make_combo("qkHeadCombo", translate("qk_space", "Head")))
        for combo in (self.kind_combo, self.layer_combo, self.head_combo):
            combo.currentIndexChanged.connect(self._on_head_changed)
        self.held_out = self._add_control(translate("qk_space", "Held-out pairs:"), QtWidgets.QSpinBox(
            objectName=HELD_OUT_OPTION, minimum=0, maximum=MAX_HELD_OUT, singleStep=10, value=DEFAULT_HELD_OUT, keyboardTracking=False))
        self.held_out.setToolTip(translate("qk_space", "How many held-out sentence pairs of the model's data join the sentence on screen"))
        self.held_out.valueChanged.connect(lambda _n: self.optionsChanged.emit())
        self.controls.addStretch(1)

    # protocol ------------------------------------------------------------------------------------
    def render(self, space: QKSpace | None) -> None:
        self._update_controls()
        self._refresh()

    def space(self) -> QKSpace | None:
        return self.given

    def shown_head(self) -> tuple[str, int, int] | None:
        s = self.given
        return None if s is None else (s.kind, s.layer, s.head)

    # drawing -------------------------------------------------------------------------------------
    def _update_controls(self) -> None:
        s = self.given
        kinds = [k for k in KINDS if s is not None and s.layers.get(k)]
        set_combo_items(self.kind_combo, [(kind_title(k), k) for k in kinds], s.kind if s else None)
        set_combo_items(self.layer_combo, [(str(i + 1), i) for i in range(s.layers.get(s.kind, 0) if s else 0)], s.layer if s else None)
        set_combo_items(self.head_combo, [(str(i + 1), i) for i in range(s.n_heads if s else 0)], s.head if s else None)
        for c in (self.kind_combo, self.layer_combo, self.head_combo):
            c.setEnabled(s is not None)

    def _refresh(self) -> None:
        s = self.given
        self.plot.setVisible(s is not None)
        if s is None:
            self.title.set_title(translate("qk_space", "Queries and keys"), translate("qk_space", "one head's queries and keys in one space (computing…)"))
            for item in (*self.items.values(), self.ring):
                item.setData([])
            self._place_labels([])
            return
        v = s.vectors
        for (what, group), item in self.items.items():
            sentence, xy = (v.query_sentence, s.query_coords) if what == "query" else (v.key_sentence, s.key_coords)
            rows = np.flatnonzero((sentence == 0) if group == "sentence" else (sentence > 0))
            item.setData(pos=xy[rows], data=rows)
        ring = [] if s.query is None else s.query_coords[[s.query]]
        self.ring.setData(pos=ring)
        self._place_labels([(p, xy) for p, sent, xy in zip(v.query_pieces, v.query_sentence, s.query_coords) if sent == 0]
                           + [(p, xy) for p, sent, xy in zip(v.key_pieces, v.key_sentence, s.key_coords) if sent == 0])
        self.plot.setLabel("bottom", translate("qk_space", "PC1 ({share:.0%} of the variance)").format(share=s.explained[0]))
        self.plot.setLabel("left", translate("qk_space", "PC2 ({share:.0%})").format(share=s.explained[1]))
        self.plot.autoRange(padding=0.08)
        self._declutter()
        self.title.set_title(self.figure_title(), self._subtitle(s))
        self.title.set_legend((("●", self.theme.head_colors[COLOR["query"]], translate("qk_space", "queries")),
                               ("▲", self.theme.head_colors[COLOR["key"]], translate("qk_space", "keys"))))

    def _subtitle(self, s: QKSpace) -> str:
        held = len(s.vectors.sentences) - 1
        parts = [translate("qk_space", "centred; queries × {c:.2f}, keys ÷ {c:.2f} (QKᵀ unchanged); PCA").format(c=s.normalised.scale)]
        if held:
            parts.append(translate("qk_space", "faint: {n} held-out pairs").format(n=held))
        parts.append(translate("qk_space", "click a query to select its row"))
        return " · ".join(parts)

    def _place_labels(self, points: list[tuple[str, np.ndarray]]) -> None:
        points = points[:LABELS]
        while len(self.labels) < len(points):
            label = pg.TextItem(anchor=(0, 1))
            label.setFont(ui_font(8))
            self.plot.addItem(label)
            self.labels.append(label)
        for label, (piece, (x, y)) in zip(self.labels, points):
            label.setText(display_piece(piece), color=self.theme.foreground)
            label.setPos(float(x), float(y))
            label.show()
        for label in self.labels[len(points):]:
            label.hide()
        self._shown_labels = len(points)
        self._declutter()

    def _declutter(self, *_args) -> None:
        """Of labels that would overlap, the first (queries before keys) is drawn; the point of a
        label left out still names its token on hover."""
        kept: list[QtCore.QRectF] = []
        vb = self.plot.getViewBox()
        for label in self.labels[: self._shown_labels]:
            label.show()
            at = vb.mapViewToScene(label.pos())  # the text sits above and right of its point, in pixels (it ignores the zoom)
            size = label.textItem.boundingRect().size()
            box = QtCore.QRectF(at.x(), at.y() - size.height(), size.width(), size.height()).adjusted(3, 3, -3, -3)
            if any(box.intersects(k) for k in kept):
                label.hide()
            else:
                kept.append(box)

    def _on_theme_changed(self) -> None:
        for (what, group), item in self.items.items():
            color = QtGui.QColor(self.theme.head_colors[COLOR[what]])
            color.setAlpha(ALPHA[group])
            item.setBrush(pg.mkBrush(color))
            item.setPen(pg.mkPen(self.theme.background if group == "sentence" else None, width=0.8))
        self.ring.setPen(pg.mkPen(self.theme.selection, width=2))
        for axis in ("bottom", "left"):
            self.plot.getAxis(axis).setPen(self.theme.muted)
            self.plot.getAxis(axis).setTextPen(self.theme.foreground)
        if self.given is not None:
            self._refresh()

    # the user's choices ----------------------------------------------------------------------------
    def _on_head_changed(self) -> None:
        s = self.given
        if s is None:
            return
        kind = self.kind_combo.currentData() or s.kind
        layer = min(int(self.layer_combo.currentData() or 0), max(s.layers.get(kind, 1) - 1, 0))
        head = int(self.head_combo.currentData() or 0)
        if (kind, layer, head) != (s.kind, s.layer, s.head):
            self.chose.emit({"kind": kind, "layer": layer, "head": head, "mode": "head"})

    def _on_query_clicked(self, _item, points, _event) -> None:
        s = self.given
        if s is None or not len(points):
            return
        row = int(s.vectors.query_position[int(points[0].data())])
        self.chose.emit({"query": row, "kind": s.kind, "layer": s.layer, "head": s.head, "mode": "head"})

    def _on_hovered(self, what: str, _item, points, _event) -> None:
        s = self.given
        if s is None or not len(points):
            self.readout.setText(" ")
            self.queryHovered.emit(s.kind if s is not None else "", -1)
            return
        i = int(points[0].data())
        self.readout.setText(self.point_text(what, i))
        v = s.vectors
        on_screen = what == "query" and v.query_sentence[i] == 0
        self.queryHovered.emit(s.kind, int(v.query_position[i]) if on_screen else -1)

    def point_text(self, what: str, i: int) -> str:
        """``query 3 “␣love” · sentence on screen: 我爱你。`` (plain text): the point ``i`` of ``what``."""
        v = self.given.vectors
        pieces, sentence, position = ((v.query_pieces, v.query_sentence, v.query_position) if what == "query"
                                      else (v.key_pieces, v.key_sentence, v.key_position))
        where = (translate("qk_space", "sentence on screen") if sentence[i] == 0
                 else translate("qk_space", "held-out pair {n}").format(n=int(sentence[i])))
        text = (translate("qk_space", "query {n} “{piece}”") if what == "query" else translate("qk_space", "key {n} “{piece}”"))
        return f"{text.format(n=int(position[i]) + 1, piece=display_piece(pieces[i]))} · {where}: {v.sentences[int(sentence[i])]}"

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        s = self.given
        if s is None:
            return translate("qk_space", "Queries and keys")
        return translate("qk_space", "Queries and keys · {head}").format(head=head_text(s.kind, s.layer, s.head))

    def figure_data(self) -> FigureData:
        """Every point: PC1, PC2, whether it is a key, its sentence and position; the normalised vectors in the NPZ."""
        s = self.given
        if s is None:
            raise ValueError("the view shows no data yet")
        v = s.vectors
        n = len(s.coords)
        is_key = np.arange(n) >= s.n_queries
        values = {"pc1": s.coords[:, 0], "pc2": s.coords[:, 1], "is_key": is_key.astype(np.int8),
                  "sentence": np.concatenate([v.query_sentence, v.key_sentence]),
                  "position": np.concatenate([v.query_position, v.key_position]) + 1}
        coords = {"point": display_pieces(v.query_pieces + v.key_pieces)}
        extras = {"queries": s.normalised.queries, "keys": s.normalised.keys, "components": s.components, "explained": s.explained,
                  "scale": np.array(s.normalised.scale)}
        return FigureData(self.figure_title(), ("point",), values, coords, extras)


def qk_space_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | None:
    """The chosen head's queries and keys of the frame and of ``qkHeldOut`` held-out pairs, computed in
    a worker (the pairs read once per model and kept); the chosen query row marked."""
    frozen, bundle = session.frames.frozen(), session.bundle
    if frozen is None or bundle is None:
        return None
    n = options.get(HELD_OUT_OPTION, DEFAULT_HELD_OUT)
    n = n if type(n) is int and 0 <= n <= MAX_HELD_OUT else DEFAULT_HELD_OUT
    held = session.frames.derive(f"qk-pairs:{n}", scope="model", build=dict)
    args = (bundle.model, (bundle.src_tokenizer, bundle.tgt_tokenizer), frozen, choice.kind or "cross", choice.layer or 0,
            choice.head or 0, data_spec(bundle.meta), n, held.get("pairs"))
    return Analysis(qk_space_held_out, args, finish=partial(_finish, held, choice.query))


def _finish(held: dict, query: int | None, space: QKSpace | None) -> QKSpace | None:
    """In the UI thread: the pairs kept for the next head; the chosen query marked."""
    if space is None:
        return None
    held.setdefault("pairs", space.pairs)
    return space.with_query(query)


SPEC = ViewSpec("qk", QtQkSpaceView, QT_TRANSLATE_NOOP("views", "Queries and keys"), "bottom", SELECTORS, data=qk_space_data,
                from_choice=True, reads_options=True, kinds=KINDS, empty="no head to project: the model has no attention layers")
