"""Ablation: what the heads ablated in the grid change on the sentence on screen.

Above: the greedy translation of the model as trained and with the ablation, side by side.
Left: the next-token distribution at the current row before (grey) and after (the ablation's
colour). Right: where the selected head's attention moved, ΔA = A(after) − A(before), on a
diverging scale; the title names the head whose attention moved most, and that head is drawn
when the selected one is itself ablated (its output is replaced after its softmax: its own
weights are not what changes). The view renders
:class:`attnviz.core.analysis.ablation_effect.AblationEffect`, computed off the UI thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.ablation_effect import AblationEffect, ablation_effect
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import KINDS
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import ablation_name, head_text, heads_text, kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.selection import fit_head
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.small_plots import apply_plot_theme, set_ticks, small_plot
from attnviz.qt.views.spec import ATTENTION_SELECTORS, ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, format_change
from attnviz.qt.widgets.plain_text import plain_label

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 260  # px of canvas before the dock scrolls
BAR = 0.38  # width of one bar of a pair


class QtAblationView(FigureViewBase):
    """``set_data(AblationEffect | None)``; ``apply(choice)`` takes the kind, layer and head whose
    attention change is drawn."""

    given: AblationEffect | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._head = ("cross", 0, 0)
        self.before_label = plain_label("", "ablationBefore")  # model output: plain text
        self.after_label = plain_label("", "ablationAfter")
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(8, 0, 8, 0)
        for label in (self.before_label, self.after_label):
            label.setWordWrap(True)
            row.addWidget(label, 1)
        self.layout().insertLayout(1, row)
        self.bars_plot = small_plot(left=translate("ablation", "P(next token)"))
        self.bars_before = pg.BarGraphItem(x=[], height=[], width=BAR)
        self.bars_after = pg.BarGraphItem(x=[], height=[], width=BAR)
        for bars in (self.bars_before, self.bars_after):
            self.bars_plot.addItem(bars)
        self.canvas.ci.addItem(self.bars_plot, row=1, col=0)
        self.delta_map = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, value_format=format_change, colorbar_label="ΔA")
        self.delta_map.sigHovered.connect(self._on_hovered)
        self.canvas.ci.addItem(self.delta_map, row=1, col=1)
        self._on_theme_changed()

    # protocol ------------------------------------------------------------------------------------
    def render(self, effect: AblationEffect | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        self._head = choice.head_from(self._head)
        self._refresh()

    def effect(self) -> AblationEffect | None:
        return self.given

    def shown_head(self) -> tuple[str, int, int]:
        """The head whose ΔA is drawn (kind, layer, head; 0-based), within the model's heads: the
        selected one, or, when that one is ablated (its own weights are not what changes), the
        head whose attention moved most."""
        if self.given is None:
            return self._head
        head = fit_head(self._head, self.given.delta)
        moved = moved_most(self.given)
        return moved[:3] if head in self.given.heads.heads and moved is not None else head

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        e = self.given
        self.bars_plot.setVisible(e is not None)
        self.delta_map.setVisible(e is not None)
        if e is None:
            self.title.set_title(translate("ablation", "Ablation"), translate("ablation", "nothing ablated: turn on Ablate in the grid and click heads"))
            self.before_label.setText("")
            self.after_label.setText("")
            return
        self.title.set_title(translate("ablation", "Ablation ({kind}) of {heads}").format(kind=ablation_name(e.heads.kind), heads=heads_text(e.heads)),
                             self._moved_most(e))
        self.before_label.setText(translate("ablation", "before: {text}").format(text=e.before))
        self.after_label.setText(translate("ablation", "after: {text}").format(text=e.after))
        self._draw_bars(e)
        self._draw_delta(e)

    def _moved_most(self, e: AblationEffect) -> str:
        kind, layer, head, tv = moved_most(e) or (*self.shown_head(), 0.0)
        return translate("ablation", "next token after {piece} (row {row}): grey before, red after · "
                         "attention moved most in {head} (½Σ|ΔA| = {moved:.3f})").format(
            piece=display_piece(e.row_input), row=e.row + 1, head=head_text(kind, int(layer), int(head)), moved=tv)

    def _draw_bars(self, e: AblationEffect) -> None:
        x = np.arange(len(e.pieces), dtype=float)
        self.bars_before.setOpts(x=x - BAR / 2, height=e.p_before, width=BAR)
        self.bars_after.setOpts(x=x + BAR / 2, height=e.p_after, width=BAR)
        set_ticks(self.bars_plot, [display_piece(p) for p in e.pieces])
        self.bars_plot.setXRange(-0.6, len(x) - 0.4, padding=0)
        self.bars_plot.setYRange(0, max(float(e.p_before.max()), float(e.p_after.max()), 1e-3) * 1.05, padding=0)

    def _draw_delta(self, e: AblationEffect) -> None:
        kind, layer, head = self.shown_head()  # a kind the model has, within its layers and heads
        d = e.delta[kind][layer, head]
        rows, cols = e.labels[kind]
        m = max(float(np.abs(d).max()), 1e-6)
        highlight = None if kind == "encoder" else e.row
        self.delta_map.set_matrix(d, rows, cols, highlight_row=highlight, levels=(-m, m))
        title = translate("ablation", "ΔA of {head} ({kind})").format(head=head_text(kind, layer, head), kind=kind_title(kind))
        selected = fit_head(self._head, e.delta)
        if selected in e.heads.heads and selected != (kind, layer, head):
            title += translate("ablation", " · {head} is ablated: its output is replaced after its softmax, so what "
                                           "changes is the other heads' attention").format(head=head_text(*selected))
        self.delta_map.set_panel_title(title, color=self.theme.foreground)

    def _on_hovered(self, info: HoverInfo | None) -> None:
        if info is None:
            self.readout.setText(" ")
            return
        self.readout.setText(f"{display_piece(info.row_label)} → {display_piece(info.col_label)}: ΔA = {info.value:+.4f}")

    def _on_theme_changed(self) -> None:
        t = self.theme
        self.bars_before.setOpts(brush=pg.mkBrush(t.muted), pen=pg.mkPen(None))
        self.bars_after.setOpts(brush=pg.mkBrush(t.ablated), pen=pg.mkPen(None))
        apply_plot_theme(self.bars_plot, t)
        self.delta_map.apply_theme(t)
        self._refresh()

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        """Names the head whose ΔA is drawn (the ablated heads are in the figure and its data)."""
        if self.given is None:
            return translate("ablation", "Ablation")
        return translate("ablation", "Ablation · ΔA of {head}").format(head=head_text(*self.shown_head()))

    def figure_data(self) -> FigureData:
        e = self.given
        if e is None:
            raise ValueError("the view shows no data yet")
        extras: dict[str, np.ndarray] = {"before": np.array(e.before), "after": np.array(e.after), "row": np.array(e.row + 1),
                                         "heads": np.array(e.heads.text()), "ablation": np.array(e.heads.kind)}
        for kind in e.delta:
            extras[f"delta_{kind}"] = e.delta[kind]
            extras[f"moved_{kind}"] = e.moved[kind]
        return FigureData(f"Ablation ({e.heads.kind}) of {e.heads.text()}: next token at row {e.row + 1}", ("token",),
                          {"p_before": e.p_before, "p_after": e.p_after}, {"token": e.pieces}, extras)

    def transient_items(self):
        return [self.delta_map.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def moved_most(e: AblationEffect) -> tuple[str, int, int, float] | None:
    """(kind, layer, head, ½Σ|ΔA|) of the head not ablated whose attention moved most, or ``None``."""
    best = None
    for kind, m in e.moved.items():
        for (layer, head), tv in np.ndenumerate(m):
            if (kind, layer, head) not in e.heads.heads and (best is None or tv > best[3]):
                best = (kind, int(layer), int(head), float(tv))
    return best


def ablation_data(session: Session, choice: ViewChoice) -> Analysis | None:
    """Before and after the session's ablation at its current row: model runs, in a worker."""
    bundle, frozen, row = session.bundle, session.frames.frozen(), session.current_row()
    if bundle is None or frozen is None or row is None or not session.ablation:
        return None
    return Analysis(ablation_effect, (frozen, row, bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, session.ablation))


SPEC = ViewSpec("ablation", QtAblationView, QT_TRANSLATE_NOOP("views", "Ablation"), "bottom", ATTENTION_SELECTORS, data=ablation_data, kinds=KINDS,
                empty="nothing ablated: turn on Ablate in the grid and click heads (attnviz export --ablate HEADS)", needs=("decoder",))
