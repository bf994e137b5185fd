"""Source vs target contributions (ALTI+): for every decoded token, the share of its prediction
that comes from the source (through cross-attention) against the target prefix (through the
decoder's self-attention).

One line per decoder layer (its cross-attention block alone, or rolled up to it: the view's own
choice) and a thick line for the overall share, over the decoded tokens; 0.5 is marked. A model
with no cross-attention (GPT-2) shows why there is no share instead of a plot.

The view renders :class:`ContributionsFrame` (a
:class:`attnviz.core.analysis.contributions.Contributions`, or the reason there is none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.contributions import Contributions, contributions_for, figure_data, not_applicable
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.qt.analyses import Analysis
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.small_plots import apply_plot_theme, legend_title, series, set_ticks, small_plot
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.plain_text import plain_label
from attnviz.qt.widgets.plots import curve, pen

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 260  # px of canvas before the dock scrolls
LAYERS = "contributionLayers"  # the option: 0 each layer's cross-attention alone, 1 rolled up to the layer
READINGS = (
    QT_TRANSLATE_NOOP("contributions", "its cross-attention alone"),
    QT_TRANSLATE_NOOP("contributions", "rolled up to it"),
)


@dataclass(frozen=True)
class ContributionsFrame:
    """What the view draws: the contributions, or the one-line reason there are none."""

    result: Contributions | None
    reason: str | None = None


class QtContributionsView(FigureViewBase):
    """``set_data(ContributionsFrame | None)``; the per-layer reading is the view's own option (drawn, not computed)."""

    given: ContributionsFrame | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self.reading = self._add_control(translate("contributions", "Each layer:"), QtWidgets.QComboBox(objectName=LAYERS))
        for text in READINGS:
            self.reading.addItem(translate("contributions", text))
        self.reading.setToolTip(translate("contributions", "A layer's line: what its cross-attention block alone takes from the source "
                                                           "against its residual, or the source share of the prediction after layers 1 to it"))
        self.reading.currentIndexChanged.connect(self._refresh)
        self.controls.addStretch(1)
        self.reason_label = plain_label("", "notApplicable")
        self.reason_label.setWordWrap(True)
        self.reason_label.setContentsMargins(8, 0, 8, 0)
        self.layout().insertWidget(1, self.reason_label)
        self.plot = small_plot(translate("contributions", "decoded token"), translate("contributions", "share from the source"))
        self.canvas.ci.addItem(self.plot, row=1, col=0)
        self.half = pg.InfiniteLine(pos=0.5, angle=0, pen=pen(self.theme.muted, 1.0, QtCore.Qt.PenStyle.DotLine))
        self.plot.addItem(self.half)
        self.layer_lines: list[pg.PlotDataItem] = []
        self.overall = curve(self.plot, pen=pen(self.theme.foreground, 3.0), symbol="o", symbolSize=7,
                             symbolBrush=self.theme.foreground, symbolPen=None)
        self.overall.setZValue(10)
        self.canvas.scene().sigMouseMoved.connect(self._on_hovered)
        apply_plot_theme(self.plot, self.theme)
        self._refresh()

    # protocol ------------------------------------------------------------------------------------
    def render(self, frame: ContributionsFrame | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view shows every token and layer."""

    def _drawable(self, frame: ContributionsFrame) -> bool:
        return frame.result is not None

    def result(self) -> Contributions | None:
        return None if self.given is None else self.given.result

    def reason(self) -> str | None:
        return None if self.given is None else self.given.reason

    def layer_values(self) -> np.ndarray | None:
        """``[layer, token]``: what each layer's line shows (the option's reading)."""
        r = self.result()
        if r is None:
            return None
        return r.rolled_source if self.reading.currentIndex() == 1 else r.layer_source

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        r = self.result()
        self.plot.setVisible(r is not None)
        self.reason_label.setVisible(self.reason() is not None)
        self.reason_label.setText(translate("contributions", "No source contributions: {reason}").format(reason=self.reason()) if self.reason() else "")
        if r is None:
            self.title.set_title(translate("contributions", "Source vs target contributions"),
                                 translate("contributions", "how much of each prediction comes from the source (needs a decoded step)"))
            return
        self.title.set_title(
            translate("contributions", "Source vs target contributions (ALTI+) · mean source share {share:.2f}").format(share=r.mean_source_share),
            translate("contributions", "share of each decoded token's prediction from the source through cross-attention; "
                                       "the target prefix has the rest · thick: overall · thin: each decoder layer, {reading}").format(
                reading=translate("contributions", READINGS[self.reading.currentIndex()])))
        self._draw(r)

    def _draw(self, r: Contributions) -> None:
        values = self.layer_values()
        x = np.arange(len(r.output_pieces), dtype=float)
        while len(self.layer_lines) < values.shape[0]:
            self.layer_lines.append(series(self.plot, self.theme, len(self.layer_lines), f"layer {len(self.layer_lines) + 1}"))
        for i, line in enumerate(self.layer_lines):
            line.setVisible(i < values.shape[0])
            line.setData(x, values[i]) if i < values.shape[0] else line.setData([], [])
        self.overall.setData(x, r.source_share)
        set_ticks(self.plot, [display_piece(p) for p in r.output_pieces])
        self.plot.setXRange(-0.4, max(len(x) - 0.6, 0.4), padding=0)
        self.plot.setYRange(0.0, 1.0, padding=0.04)
        names = [(i, translate("contributions", "layer {layer}").format(layer=i + 1)) for i in range(values.shape[0])]
        legend_title(self.plot, translate("contributions", "source share"), names, self.theme)

    def _on_theme_changed(self) -> None:
        apply_plot_theme(self.plot, self.theme)
        self.overall.setPen(pen(self.theme.foreground, 3.0))
        self.overall.setSymbolBrush(self.theme.foreground)
        for i, line in enumerate(self.layer_lines):
            line.setPen(pen(self.theme.head_color(i), 1.8))
            line.setSymbolBrush(self.theme.head_color(i))
        self._refresh()

    def _on_hovered(self, pos) -> None:
        r = self.result()
        if r is None or not self.plot.sceneBoundingRect().contains(pos):
            return
        i = int(round(self.plot.getViewBox().mapSceneToView(pos).x()))
        if 0 <= i < len(r.output_pieces):
            layers = "  ".join(f"L{k + 1} {v:.2f}" for k, v in enumerate(self.layer_values()[:, i]))
            self.readout.setText(translate("contributions", "{piece} (output {position}): source {source:.3f}, target prefix {target:.3f} · {layers}").format(
                piece=display_piece(r.output_pieces[i]), position=i + 1, source=float(r.source_share[i]), target=float(r.target_share[i]), layers=layers))

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("contributions", "Source vs target contributions")

    def figure_data(self) -> FigureData:
        r = self.result()
        if r is None:
            raise ValueError("the view shows no data yet")
        return figure_data(r)


# -- the registry's entry ----------------------------------------------------------------------
def framed(result: Contributions | None) -> ContributionsFrame | None:
    return None if result is None else ContributionsFrame(result)


def contributions_data(session: Session, choice: ViewChoice) -> Analysis | ContributionsFrame | None:
    """The shares of the frame's tokens: one model pass, run in a worker; the reason where the model has no source to share."""
    bundle, frozen = session.bundle, session.frames.frozen()
    if bundle is None or frozen is None:
        return None
    why = not_applicable(bundle.config)
    if why:
        return ContributionsFrame(None, why)
    return Analysis(contributions_for, (frozen, bundle.model, bundle.tgt_tokenizer), finish=framed)


SPEC = ViewSpec("contributions", QtContributionsView, QT_TRANSLATE_NOOP("views", "Source vs target"), "bottom", (), data=contributions_data,
                needs=("decoder", "cross"), empty="nothing for source contributions: decode a step first")  # no cross-attention: no source share
