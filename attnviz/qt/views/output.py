"""Output distribution: what the output layer (Linear → softmax) says at the current step, and,
for a typed target, how well the model predicts every position under teacher forcing.

* **Output layer at the step** — the top-k of P(y_t | y_<t, x) as bars with their probabilities, the chosen
  token marked (forced by the user, or not in the top-k, said so), the entropy of the whole
  distribution H = −Σ p log p (nats) and its perplexity e^H, and how much probability the top-k cover.
* **Teacher forcing** — "SOS + y in, y + EOS out": per position the fed token (top), the
  probability the model gives the target token (bars: filled when the argmax is the target),
  the predicted token written above each bar, and the loss −log P(target) (lower plot, the
  targets along its bottom axis).

The view renders an :class:`~attnviz.core.analysis.figure_data.OutputFrame` of objects
``attnviz.core.decoding.session`` already computes, and never runs the model:
a ``DecodeStep`` (``topk``, ``entropy``, ``token_id``, ``prob``, ``forced``, ``index``) and a
``TeacherForced`` result (``steps``, one ``ForcedPosition`` per row: ``input_piece``,
``piece`` (the target), ``predicted_piece``, ``match``, ``prob`` (P(target)), ``loss``, ``entropy``, ``topk``).

In a short dock the figure keeps a readable height and scrolls: every top-k row is at least a
line of text tall, and the teacher-forcing plots never shrink below their labels. Labels above
narrow bars are shortened with "…" (the read-out under the mouse gives them whole), and the loss
values are left out, as the title says, when the bars are narrower than a number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData, OutputFrame
from attnviz.core.data.pieces import WORD_START, display_piece, display_pieces
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.spec import TourAsk, ViewSpec
from attnviz.qt.widgets.colormaps import Theme, ui_font
from attnviz.qt.widgets.regions import Region, items_region
from attnviz.qt.widgets.title_item import TitleItem
from attnviz.qt.widgets.token_axis import TokenAxis

if TYPE_CHECKING:  # importing the core would import torch
    from attnviz.core.decoding.teacher_forcing import TeacherForced
    from attnviz.qt.session import Session

MATCH_COLOR = "#2f9e44"  # the argmax is the target
MISS_COLOR = "#e8590c"  # it is not
ROW_PX = 18  # least height of a top-k row: a line of 9 pt text
BARS_PX = 64  # least height of the bars of each teacher-forcing plot
TITLE_PX = 62  # a title, its formula line and its legend line
WIDE_PX = 1000  # from this width on, teacher forcing shows the top-k beside its plots


def _mk_pen(color: str, width: float = 1.0) -> QtGui.QPen:
    pen = pg.mkPen(color, width=width)
    pen.setCosmetic(True)
    return pen


class _TextPool:
    """Text items reused across updates (never rebuilt per step)."""

    def __init__(self, plot: pg.PlotItem, anchor: tuple[float, float], point_size: float = 8.0):
        self.plot = plot
        self.anchor = anchor
        self.font = ui_font(point_size)
        self.items: list[pg.TextItem] = []

    def show(self, entries: Sequence[tuple[float, float, str, str]], max_px: float | None = None) -> None:
        """``entries``: (x, y, text, colour); a text wider than ``max_px`` pixels ends in "…"."""
        fm = QtGui.QFontMetricsF(self.font)
        if max_px is not None:
            mode = QtCore.Qt.TextElideMode.ElideRight
            entries = [(x, y, fm.elidedText(t, mode, max(max_px, fm.horizontalAdvance("…"))), c) for x, y, t, c in entries]
        while len(self.items) < len(entries):
            item = pg.TextItem(anchor=self.anchor)
            item.textItem.document().setDocumentMargin(0)  # the box is the text: neighbours never overlap
            item.setFont(self.font)
            self.plot.addItem(item)
            self.items.append(item)
        for item, (x, y, text, color) in zip(self.items, entries):
            item.setText(text, color=color)
            item.setPos(x, y)
            item.setVisible(True)
        for item in self.items[len(entries):]:
            item.setVisible(False)

    def texts(self) -> list[str]:
        return [i.toPlainText() for i in self.items if i.isVisible()]

    def widest(self, texts: Sequence[str]) -> float:
        """Pixels of the widest of ``texts`` in this pool's font."""
        fm = QtGui.QFontMetricsF(self.font)
        return max((fm.horizontalAdvance(t) for t in texts), default=0.0)


NO_OUTPUT = OutputFrame()  # what the view shows before its data


class QtOutputView(FigureViewBase):
    """The next-token distribution (top-k bars, entropy) and the teacher-forced table.

    ``set_data(OutputFrame(step=None, forced=None, position=None))``:

    * ``step`` — a ``DecodeStep`` (``DecodingSession.steps[-1]``): its top-k is shown;
    * ``forced`` — a ``TeacherForced`` result (``decoding.teacher_forced``): the per-position
      plots are shown, and with ``step`` None the top-k of position ``position`` (the cursor,
      default 0) is shown above them.

    ``positionClicked(position)`` when the user clicks a teacher-forcing position.
    """

    given: OutputFrame | None  # the data set_data was given (FigureViewBase)

    positionClicked = QtCore.Signal(int)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme)
        self._topk: tuple[tuple[str, int, float], ...] = ()

        self.hint = QtWidgets.QLabel(translate("output", "Type a target sentence to compare every position's prediction with it (teacher forcing)."))
        self.hint.setObjectName("outputHint")
        self.controls.addWidget(self.hint)
        self.controls.addStretch(1)

        ci = self.canvas.ci
        # top-k: horizontal bars, pieces down the left
        self.topk_axis = TokenAxis("left", self.theme, 9.0)
        self.topk_plot = pg.PlotItem(axisItems={"left": self.topk_axis}, enableMenu=False)
        self._setup_plot(self.topk_plot)
        self.topk_plot.getViewBox().invertY(True)
        self.topk_plot.setLabel("bottom", translate("output", "probability P(token)"))
        self.topk_bars = pg.BarGraphItem(x0=[], y=[], height=0.72, width=[], brushes=[], pen=pg.mkPen(None))
        self.topk_plot.addItem(self.topk_bars)
        self.topk_text = _TextPool(self.topk_plot, (0.0, 0.5))
        ci.addItem(self.topk_plot, row=1, col=0)

        self.forced_title = TitleItem(self.theme)
        ci.addItem(self.forced_title, row=2, col=0)
        self.in_axis = TokenAxis("top", self.theme, 9.0)
        self.prob_plot = pg.PlotItem(axisItems={"top": self.in_axis}, enableMenu=False)
        self._setup_plot(self.prob_plot)
        self.prob_plot.showAxis("top")
        self.prob_plot.hideAxis("bottom")  # the loss plot below carries the positions
        self.prob_plot.setLabel("left", translate("output", "P(target)"))
        self.in_axis.set_title(translate("output", "fed: SOS + y"))
        self.prob_bars = pg.BarGraphItem(x=[], height=[], width=0.7, brushes=[], pen=pg.mkPen(None))
        self.prob_plot.addItem(self.prob_bars)
        self.pred_text = _TextPool(self.prob_plot, (0.5, 1.0))
        self.cursor = QtWidgets.QGraphicsRectItem()
        self.cursor.setZValue(-5)
        self.cursor.setPen(QtGui.QPen(QtCore.Qt.PenStyle.NoPen))
        self.prob_plot.addItem(self.cursor)
        ci.addItem(self.prob_plot, row=3, col=0)

        self.target_axis = TokenAxis("bottom", self.theme, 9.0)
        self.loss_plot = pg.PlotItem(axisItems={"bottom": self.target_axis}, enableMenu=False)
        self._setup_plot(self.loss_plot)
        self.loss_plot.setLabel("left", translate("output", "loss −log P"))
        self.target_axis.set_title(translate("output", "expected: y + EOS"))
        self.loss_plot.setXLink(self.prob_plot)
        self.loss_bars = pg.BarGraphItem(x=[], height=[], width=0.7, brushes=[], pen=pg.mkPen(None))
        self.loss_plot.addItem(self.loss_bars)
        self.loss_text = _TextPool(self.loss_plot, (0.5, 1.0), 7.5)
        self.loss_cursor = QtWidgets.QGraphicsRectItem()
        self.loss_cursor.setZValue(-5)
        self.loss_cursor.setPen(QtGui.QPen(QtCore.Qt.PenStyle.NoPen))
        self.loss_plot.addItem(self.loss_cursor)
        ci.addItem(self.loss_plot, row=4, col=0)
        self.canvas.scene().sigMouseClicked.connect(self._on_scene_clicked)
        self.canvas.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self._scroll_canvas()
        self.loss_values_shown = True
        self._wide = False  # the top-k beside the teacher-forcing plots (see _arrange)
        for axis in (self.in_axis, self.target_axis):  # rotated labels make an axis taller: the canvas grows with it
            axis.geometryChanged.connect(self._on_axis_resized)
        self.prob_plot.getViewBox().sigResized.connect(self._on_bars_resized)  # labels fit the bars' new width
        self._apply_theme_to_items()
        self._refresh()

    def _setup_plot(self, plot: pg.PlotItem) -> None:
        plot.setMenuEnabled(False)
        plot.hideButtons()
        vb = plot.getViewBox()
        vb.setMouseEnabled(x=False, y=False)
        vb.setMenuEnabled(False)
        vb.setDefaultPadding(0.02)
        for name in ("left", "bottom", "top"):
            ax = plot.getAxis(name)
            ax.setStyle(tickFont=ui_font(8))
            ax.enableAutoSIPrefix(False)

    # data ------------------------------------------------------------------------------
    def render(self, data: OutputFrame) -> None:
        """Show the step's distribution and/or the teacher-forced per-position table (updated in place)."""
        self._refresh()

    @property
    def _shown(self) -> OutputFrame:
        """The frame given (an empty one before any)."""
        return self.given if self.given is not None else NO_OUTPUT

    def set_position(self, position: int) -> None:
        """Move the teacher-forcing cursor (its distribution is shown when no step is given)."""
        if self._shown.forced is not None:
            self.set_data(OutputFrame(self.given.step, self.given.forced, position))

    def _drawable(self, data: OutputFrame) -> bool:
        """A teacher-forced table, or a step with a top-k to show."""
        return data.forced is not None or (data.step is not None and bool(data.step.topk))

    def topk(self) -> tuple[tuple[str, int, float], ...]:
        """The (piece, id, probability) rows the bars show, most likely first."""
        return self._topk

    def bar_probabilities(self) -> np.ndarray:
        """The widths of the top-k bars (= the probabilities shown)."""
        w = self.topk_bars.opts.get("width")
        return np.asarray([] if w is None else w, dtype=np.float64)

    def forced_arrays(self) -> dict[str, np.ndarray]:
        """What the teacher-forcing plots show: ``target_prob`` and ``loss`` per position."""
        return {
            "target_prob": np.asarray(self.prob_bars.opts.get("height") if self._shown.forced is not None else [], dtype=np.float64),
            "loss": np.asarray(self.loss_bars.opts.get("height") if self._shown.forced is not None else [], dtype=np.float64),
        }

    def predicted_labels(self) -> list[str]:
        return self.pred_text.texts()

    # drawing ---------------------------------------------------------------------------
    def _distribution(self) -> tuple[Any, str]:
        """The object whose top-k is shown and a caption saying which distribution it is."""
        shown = self._shown
        if shown.step is not None:
            s = shown.step
            return s, translate("output", "step {step}").format(step=s.index + 1)
        if shown.forced is not None and shown.forced.steps:
            p = shown.forced.steps[shown.position or 0]
            return p, translate("output", "position {position} (after “{piece}”)").format(position=p.index + 1, piece=display_piece(p.input_piece))
        return None, ""

    def _refresh(self) -> None:
        th, step = self.theme, self._shown.step
        dist, where = self._distribution()
        self._topk = tuple(dist.topk) if dist is not None else ()
        ids = [i for _, i, _ in self._topk]
        chosen = None
        chosen_prob = math.nan
        forced_note = ""
        if step is not None:
            chosen = int(step.token_id)
            chosen_prob = float(getattr(step, "prob", math.nan))
            forced_note = translate("output", "forced by you") if step.forced else translate("output", "chosen")
        elif dist is not None:
            chosen = int(dist.token_id)
            chosen_prob = float(dist.prob)
            forced_note = translate("output", "target")
        self.title.setProperty("key", "forced" if step is not None and step.forced else "")  # the title says "forced by you"
        n = len(self._topk)
        probs = [p for _, _, p in self._topk]
        labels = [piece for piece, _, _ in self._topk]
        brushes = [th.qcolor("highlight") if i == chosen else th.qcolor("selection", 170) for i in ids]
        self.topk_bars.setOpts(x0=np.zeros(n), y=np.arange(n, dtype=float), height=0.72, width=np.asarray(probs, float), brushes=brushes)
        self.topk_axis.set_labels(labels, ids.index(chosen) if chosen in ids else None)
        self.topk_text.show([(p, float(r), f" {p:.3f}", th.foreground) for r, p in enumerate(probs)])
        vb = self.topk_plot.getViewBox()
        top_p = max(probs, default=1.0)
        # the whole [0, 1] once a token is likely; zoomed in on a flat distribution (the values are written on the bars)
        vb.setRange(xRange=(0.0, 1.12 if top_p > 0.45 else max(0.05, top_p * 1.4)), yRange=(-0.6, max(n, 1) - 0.4), padding=0.0)
        if dist is not None:
            h = float(dist.entropy)
            piece = display_piece(step.piece if step is not None else dist.piece)
            note = translate("output", "{what}: “{piece}” with p = {p:.4f}").format(what=forced_note, piece=piece, p=chosen_prob)
            if chosen is not None and chosen not in ids:
                note += translate("output", " (not in the top {n})").format(n=n)
            self.title.set_title(translate("output", "Output distribution · {where}").format(where=where),
                                 translate("output", "P(y_t | y_<t, x) = softmax(logits) · H = {h:.3f} nats · perplexity e^H = {ppl:.2f} · "
                                                     "top-{n} hold {share:.1f}%").format(h=h, ppl=math.exp(h), n=n, share=sum(probs) * 100))
            self.title.set_legend((("", "", note), (WORD_START, th.muted, translate("output", "= start of a word"))))
        else:
            self.title.set_title(translate("output", "Output distribution"),
                                 translate("output", "decode a step to see P(y_t | y_<t, x), the output layer's softmax"))
            self.title.set_legend(())
        self._refresh_forced()

    def _refresh_forced(self) -> None:
        f = self._shown.forced
        visible = f is not None
        self.hint.setVisible(not visible)
        for item in (self.forced_title, self.prob_plot, self.loss_plot):
            item.setVisible(visible)
        ci = self.canvas.ci.layout
        for r in (2, 3, 4):
            ci.setRowMaximumHeight(r, 1e6 if visible else 0)
        ci.setRowStretchFactor(1, 1)
        ci.setRowStretchFactor(3, 1 if visible else 0)
        ci.setRowStretchFactor(4, 1 if visible else 0)
        if f is None:
            for bars in (self.prob_bars, self.loss_bars):
                bars.setOpts(x=[], height=[], brushes=[])
            self.pred_text.show([])
            self.loss_text.show([])
            self.cursor.setVisible(False)
            self.loss_cursor.setVisible(False)
            self.prob_plot.getViewBox().update()
            self._fit_height()
            return
        self._draw_forced(f)
        self._fit_height()
        self._fit_forced_labels()

    def _draw_forced(self, f: "TeacherForced") -> None:
        """The per-position bars, axes, cursor and title (labels above the bars: ``_fit_forced_labels``)."""
        th = self.theme
        pos = f.steps
        n = len(pos)
        x = np.arange(n, dtype=float)
        tp = np.asarray([p.prob for p in pos], float)
        loss = np.asarray([p.loss for p in pos], float)
        match = [bool(p.match) for p in pos]
        fill = [QtGui.QColor(MATCH_COLOR) if m else QtGui.QColor(MISS_COLOR) for m in match]
        self.prob_bars.setOpts(x=x, height=tp, width=0.7, brushes=fill)
        loss_brush = [th.qcolor("muted", 160) if m else QtGui.QColor(MISS_COLOR) for m in match]
        self.loss_bars.setOpts(x=x, height=loss, width=0.7, brushes=loss_brush)
        self.in_axis.set_labels([p.input_piece for p in pos], self._shown.position)
        self.target_axis.set_labels([p.piece for p in pos], self._shown.position)
        top = max(1.0, float(loss.max()) if n else 1.0) * 1.4
        self.prob_plot.getViewBox().setRange(xRange=(-0.6, n - 0.4), yRange=(0.0, 1.3), padding=0.0)
        self.loss_plot.getViewBox().setRange(xRange=(-0.6, n - 0.4), yRange=(0.0, top), padding=0.0)
        self.prob_plot.getAxis("left").setTicks([[(0.0, "0"), (0.5, "0.5"), (1.0, "1")], []])
        cur = self._shown.position if self._shown.position is not None else 0
        brush = th.qcolor("highlight", 40)
        self.cursor.setBrush(brush)
        self.cursor.setRect(QtCore.QRectF(cur - 0.5, 0.0, 1.0, 1.3))
        self.cursor.setVisible(True)
        self.loss_cursor.setBrush(brush)
        self.loss_cursor.setRect(QtCore.QRectF(cur - 0.5, 0.0, 1.0, top))
        self.loss_cursor.setVisible(True)

    def _bar_pitch(self) -> float:
        """Pixels per position in the teacher-forcing plots (from the canvas width before the first layout)."""
        n = max(1, len(self._shown.forced.steps)) if self._shown.forced is not None else 1
        width = self.prob_plot.getViewBox().width()
        if width <= 1:
            width = max(1.0, self.canvas.width() - 80.0)
        return width / n

    def _fit_forced_labels(self) -> None:
        """The predicted token above each bar (shortened to the bar's width) and the loss values
        (left out when the bars are narrower than a number)."""
        f = self._shown.forced
        if f is None:
            return
        th = self.theme
        pos = f.steps
        pitch = self._bar_pitch()
        entries = [(float(i), 1.02, display_piece(p.predicted_piece), MATCH_COLOR if p.match else MISS_COLOR) for i, p in enumerate(pos)]
        self.pred_text.show(entries, max_px=pitch - 6)
        loss = [float(p.loss) for p in pos]
        lift = 0.02 * max(1.0, max(loss, default=1.0))
        texts = [f"{v:.2f}" for v in loss]
        self.loss_values_shown = self.loss_text.widest(texts) + 6 <= pitch
        self.loss_text.show([(float(i), v + lift, t, th.muted) for i, (v, t) in enumerate(zip(loss, texts))] if self.loss_values_shown else [])
        hits = sum(bool(p.match) for p in pos)
        values = "" if self.loss_values_shown else translate("output", " (values under the mouse)")
        self.forced_title.set_title(
            translate("output", "Teacher forcing · mean loss {loss:.3f} nats · {hits}/{n} positions predicted").format(loss=f.loss, hits=hits, n=len(pos)),
            translate("output", "SOS + y in, y + EOS out · bars: P(target), green where the argmax is the target"))
        self.forced_title.set_legend((
            ("", "", translate("output", "above the bars: the predicted token; below: loss = −log P(target){values}").format(values=values)),
            (WORD_START, th.muted, translate("output", "= start of a word"))))

    def _arrange(self) -> bool:
        """Teacher forcing in a wide view: the top-k beside the per-position plots rather than above
        them (a short dock then needs less scrolling). Returns whether they sit side by side."""
        wide = self._shown.forced is not None and self.width() >= WIDE_PX
        if wide != self._wide:
            self._wide = wide  # first: moving the items resizes the axes, which calls back here
            ci = self.canvas.ci
            for item in (self.title, self.topk_plot):
                ci.removeItem(item)
            ci.addItem(self.title, row=0, col=0, colspan=2 if wide else 1)
            if wide:
                ci.addItem(self.topk_plot, row=3, col=1, rowspan=2)  # level with the bars
            else:
                ci.addItem(self.topk_plot, row=1, col=0)
            ci.layout.setColumnStretchFactor(0, 5)
            ci.layout.setColumnStretchFactor(1, 2 if wide else 0)
        return wide

    def _fit_height(self) -> None:
        """The least canvas height at which every label is readable; the scroll area scrolls the rest."""
        wide = self._arrange()
        n = max(3, len(self._topk))
        ci = self.canvas.ci.layout
        topk_px = ROW_PX * n + 46  # the rows, the probability axis and its title
        ci.setRowMinimumHeight(1, 0 if wide else topk_px)
        ci.setRowMaximumHeight(1, 0 if wide else 1e6)
        height = TITLE_PX + topk_px
        if self._shown.forced is not None:
            prob_px = BARS_PX + 24 + self.in_axis.height()  # bars, the predicted tokens, the fed tokens
            loss_px = BARS_PX + 14 + self.target_axis.height()
            ci.setRowMinimumHeight(3, prob_px)
            ci.setRowMinimumHeight(4, loss_px)
            forced_px = TITLE_PX + prob_px + loss_px
            height = TITLE_PX + max(forced_px, topk_px) if wide else height + forced_px
        else:
            ci.setRowMinimumHeight(3, 0)
            ci.setRowMinimumHeight(4, 0)
        self.scroll.fit.set_min_height(int(height) + 16)

    def _on_bars_resized(self) -> None:
        if self._shown.forced is not None:
            self._fit_forced_labels()

    def _on_axis_resized(self) -> None:
        if self._shown.forced is not None:
            self._fit_height()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._shown.forced is not None:
            self._fit_height()  # side by side or not; the fed tokens' axis turns its labels with the width

    def _apply_theme_to_items(self) -> None:
        th = self.theme
        for plot in (self.topk_plot, self.prob_plot, self.loss_plot):
            for name in ("left", "bottom", "top"):
                ax = plot.getAxis(name)
                if isinstance(ax, TokenAxis):
                    ax.apply_theme(th)
                else:
                    ax.setPen(_mk_pen(th.muted))
                    ax.setTextPen(_mk_pen(th.foreground))
                    if ax.label is not None:
                        ax.label.setDefaultTextColor(QtGui.QColor(th.muted))
        self.forced_title.apply_theme(th)
        self.hint.setStyleSheet(f"color: {th.muted};")

    def _on_theme_changed(self) -> None:
        self._apply_theme_to_items()
        self._refresh()

    # interaction ------------------------------------------------------------------------
    def _forced_index_at(self, scene_pos: QtCore.QPointF) -> int | None:
        if self._shown.forced is None:
            return None
        for plot in (self.prob_plot, self.loss_plot):
            vb = plot.getViewBox()
            if vb.sceneBoundingRect().contains(scene_pos):
                x = vb.mapSceneToView(scene_pos).x()
                i = int(round(x))
                if 0 <= i < len(self._shown.forced.steps):
                    return i
        return None

    def _on_scene_clicked(self, ev) -> None:
        i = self._forced_index_at(ev.scenePos())
        if i is not None:
            self.set_position(i)
            self.positionClicked.emit(i)

    def _on_mouse_moved(self, scene_pos) -> None:
        i = self._forced_index_at(scene_pos)
        if i is not None:
            p = self._shown.forced.steps[i]
            self.readout.setText(translate(
                "output", "position {position}: fed “{fed}” → expected “{expected}”, predicted “{predicted}”   "
                          "P(target) = {p:.4f}   loss = {loss:.4f}   H = {h:.3f} nats").format(
                position=i + 1, fed=display_piece(p.input_piece), expected=display_piece(p.piece),
                predicted=display_piece(p.predicted_piece), p=p.prob, loss=p.loss, h=p.entropy))
            return
        vb = self.topk_plot.getViewBox()
        if self._topk and vb.sceneBoundingRect().contains(scene_pos):
            r = int(round(vb.mapSceneToView(scene_pos).y()))
            if 0 <= r < len(self._topk):
                piece, tid, p = self._topk[r]
                self.readout.setText(translate("output", "rank {rank}: “{piece}” (id {id})   P = {p:.5f}   −log P = {nll:.3f}").format(
                    rank=r + 1, piece=display_piece(piece), id=tid, p=p, nll=-math.log(max(p, 1e-300))))
                return
        self.readout.setText(" ")

    # figure protocol -----------------------------------------------------------------------
    def figure_title(self) -> str:
        dist, where = self._distribution()
        if self._shown.forced is not None:
            return translate("output", "Output distribution · teacher forcing ({n} positions)").format(n=len(self._shown.forced.steps))
        if dist is None:
            return translate("output", "Output distribution")
        return translate("output", "Output distribution · {where}").format(where=where)

    def figure_data(self) -> FigureData:
        """Teacher forcing (when shown): one CSV row per position; the top-k as NPZ extras.
        Otherwise the top-k: one CSV row per rank."""
        if not self.has_data():
            raise ValueError("the view shows no data yet")
        extras = {"topk_id": np.asarray([i for _, i, _ in self._topk], np.int64), "topk_prob": np.asarray([p for _, _, p in self._topk])}
        f = self._shown.forced
        if f is not None:
            pos = f.steps
            values = {
                "target_prob": np.asarray([p.prob for p in pos]),
                "loss": np.asarray([p.loss for p in pos]),
                "entropy": np.asarray([p.entropy for p in pos]),
                "match": np.asarray([float(p.match) for p in pos]),
                "target_id": np.asarray([p.token_id for p in pos], np.float64),
                "predicted_id": np.asarray([p.predicted_id for p in pos], np.float64),
            }
            coords = {"position": tuple(f"{p.input_piece} → {p.piece}" for p in pos)}
            return FigureData(self.figure_title(), ("position",), values, coords, extras)
        values = {"probability": np.asarray([p for _, _, p in self._topk]), "token_id": np.asarray([i for _, i, _ in self._topk], np.float64)}
        dist, _ = self._distribution()
        extras["entropy"] = np.asarray(float(dist.entropy))
        return FigureData(self.figure_title(), ("rank",), values, {"rank": tuple(p for p, _, _ in self._topk)}, extras)


def output_frame(session: Session, choice: ViewChoice) -> OutputFrame:
    """The step decoded last and the teacher-forced pass with its cursor (either may be missing)."""
    forced = session.forced
    return OutputFrame(session.current_step(), forced, session.forced_cursor if forced is not None else None)


# -- what the tour reads and outlines ---------------------------------------------------------------
FORCED_MEASURES = ("out_fed", "out_labels", "out_positions", "out_loss")  # teacher-forced
STEP_MEASURES = ("out_step", "out_token", "out_prob", "out_entropy")  # a decoding step


def tour_measures(view: QtOutputView, ask: TourAsk) -> dict[str, Any]:
    """Teacher-forced: the decoder's input, the labels and the mean loss; else the step shown,
    its most likely piece and the distribution's entropy."""
    loss = view.forced_arrays()["loss"]
    if loss.size:
        return {"out_fed": " ".join(display_pieces(view.in_axis.labels())), "out_labels": " ".join(display_pieces(view.target_axis.labels())),
                "out_positions": int(loss.size), "out_loss": float(loss.mean())}
    if not view.topk():
        return {}
    piece, _, p = view.topk()[0]
    return {"out_step": ask.session.n_rows(), "out_token": display_piece(piece), "out_prob": float(p),
            "out_entropy": float(view.figure_data().extras["entropy"])}


def region_forced(view: QtOutputView, ask: TourAsk) -> Region | None:
    """The teacher-forcing plots: each position's probability of its label and its loss."""
    return items_region(view.prob_plot, view.loss_plot)


def region_topk(view: QtOutputView, ask: TourAsk) -> Region | None:
    """The top-k bars."""
    return items_region(view.topk_plot)


SPEC = ViewSpec("output", QtOutputView, QT_TRANSLATE_NOOP("views", "Output distribution"), "bottom", (), data=output_frame, needs=("decoder",),
                measures=tour_measures, measure_names=FORCED_MEASURES + STEP_MEASURES,
                regions={"output-forced": region_forced, "output-topk": region_topk})
