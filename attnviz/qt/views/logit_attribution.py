"""Direct logit attribution: the logit of the token the current step predicted (or of the row the
linked query picks), split into what each part of the decoder wrote into the residual stream,
through the final norm with its scale held at this pass.

Top: the attention heads, one row per kind and layer, one column per head, coloured by the
head's term (red: it raises the logit, blue: it lowers it); click a head to select it in every
linked view. Below: the other terms as bars (the embedding, each attention's W^O bias, each FFN,
the norms' biases). A contrast token (the view's own option) splits logit(token) − logit(contrast)
instead. A model without a decoder shows why instead of a plot.

The view renders :class:`LogitAttributionFrame` (a
:class:`attnviz.core.analysis.logit_attribution.LogitAttribution`, or the reason there is none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.attribution import AttributionError
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.logit_attribution import LogitAttribution, Term, figure_data, logit_attribution_for, not_applicable
from attnviz.core.analysis.residual import SUBLAYER_MARKS
from attnviz.core.data.pieces import display_piece
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import head_text, kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.small_plots import apply_plot_theme, set_ticks, small_plot
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, format_change
from attnviz.qt.widgets.plain_text import plain_label

if TYPE_CHECKING:
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.decoding.result import DecodingResult
    from attnviz.core.model.transformer import Transformer
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 420  # px of canvas before the dock scrolls
CONTRAST = "contrastEdit"  # the option holding the contrast token ("" : none)
UP, DOWN = "#d6604d", "#4393c3"  # a bar that raises the logit, one that lowers it (the diverging map's ends)


@dataclass(frozen=True)
class LogitAttributionFrame:
    """What the view draws: the attribution, or the one-line reason there is none."""

    result: LogitAttribution | None
    reason: str | None = None


def bar_label(term: Term) -> str:
    """``emb``, ``A2b`` / ``C2b`` (an attention's W^O bias), ``F2``, ``N2.1`` (a post-norm's norm), ``N`` (the final norm)."""
    if term.group == "attn_bias":
        return f"{SUBLAYER_MARKS[term.kind]}{term.layer + 1}b"
    if term.group == "ffn":
        return f"F{term.layer + 1}"
    if term.group == "norm_bias":
        return "N" if term.layer is None else f"N{term.layer + 1}.{term.sublayer}"
    return "emb"


class QtLogitAttributionView(FigureViewBase):
    """``set_data(LogitAttributionFrame | None)``; ``chose({"kind", "layer", "head", "mode"})`` when
    the user clicks a head; ``optionsChanged`` when the contrast token changes (computed again)."""

    given: LogitAttributionFrame | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._rows: list[tuple[str, int]] = []  # (kind, layer) of each heatmap row
        self._others: list[tuple[Term, float]] = []
        self.contrast = self._add_control(translate("logit_attribution", "Contrast:"), QtWidgets.QLineEdit(objectName=CONTRAST))
        self.contrast.setPlaceholderText(translate("logit_attribution", "none"))
        self.contrast.setToolTip(translate("logit_attribution", "A target piece (the leading ▁ may be left out) or an id: the view splits "
                                                                "logit(token) − logit(contrast) instead. Press Enter; empty: none"))
        self.contrast.setMaximumWidth(160)
        self.contrast.editingFinished.connect(self._on_contrast_changed)
        self.controls.addStretch(1)
        self.reason_label = plain_label("", "notApplicable")  # may quote a token typed by the user
        self.reason_label.setWordWrap(True)
        self.reason_label.setContentsMargins(8, 0, 8, 0)
        self.layout().insertWidget(1, self.reason_label)
        self.heatmap = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, value_format=format_change, colorbar_label="Δ logit")
        self.heatmap.set_axis_titles(translate("logit_attribution", "kind and layer"), translate("logit_attribution", "head"))
        self.heatmap.sigHovered.connect(self._on_hovered)
        self.heatmap.sigCellClicked.connect(self._on_cell_clicked)
        self.bars_plot = small_plot(left="Δ logit")
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.7, brushes=[], pen=pg.mkPen(None))
        self.bars_plot.addItem(self.bars)
        self.canvas.ci.addItem(self.heatmap, row=1, col=0)
        self.canvas.ci.addItem(self.bars_plot, row=2, col=0)
        self.canvas.ci.layout.setRowStretchFactor(1, 3)
        self.canvas.ci.layout.setRowStretchFactor(2, 2)
        self.canvas.scene().sigMouseMoved.connect(self._on_bars_hovered)
        apply_plot_theme(self.bars_plot, self.theme)
        self._refresh()

    # protocol ------------------------------------------------------------------------------------
    def render(self, frame: LogitAttributionFrame | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the row chosen is in the data."""

    def _drawable(self, frame: LogitAttributionFrame) -> bool:
        return frame.result is not None

    def result(self) -> LogitAttribution | None:
        return None if self.given is None else self.given.result

    def reason(self) -> str | None:
        """Why there is nothing to draw (a model without a decoder, a contrast token not in the vocabulary), or None."""
        return None if self.given is None else self.given.reason

    def contrast_token(self) -> str | None:
        text = self.contrast.text().strip()
        return text or None

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        r = self.result()
        for item in (self.heatmap, self.bars_plot):
            item.setVisible(r is not None)
        self.reason_label.setVisible(self.reason() is not None)
        self.reason_label.setText(self.reason() or "")
        if r is None:
            self.title.set_title(translate("logit_attribution", "Logit attribution"),
                                 translate("logit_attribution", "the predicted token's logit split into the decoder's pieces (needs a decoded step)"))
            return
        self.title.set_title(
            translate("logit_attribution", "Logit attribution · {quantity} at output {position} = {logit:.2f}").format(
                quantity=display_piece(r.quantity), position=r.position + 1, logit=r.logit),
            translate("logit_attribution", "each piece through {norms} and the output row · "
                                           "terms sum to {total:.3f}, output bias {bias:+.3f} · red raises the logit, blue lowers it · "
                                           "emb = embedding + PE, A/C = self-/cross-attention W^O bias, F = FFN, N = norm bias · "
                                           "click a head to select it").format(norms=self._norms_text(r), total=float(r.values.sum()), bias=r.output_bias))
        self._draw_heads(r)
        self._draw_others(r)

    @staticmethod
    def _norms_text(r: LogitAttribution) -> str:
        """The norms a piece goes through on its way out, as the core's notes say."""
        if r.frozen_scales == 0:
            return translate("logit_attribution", "the final norm (its running statistics: linear)")
        if r.placement == "post":
            return translate("logit_attribution", "every norm after it (each scale held at this pass)")
        return translate("logit_attribution", "the final norm (scale held at this pass)")

    def _draw_heads(self, r: LogitAttribution) -> None:
        blocks = [(k, r.heads(k)) for k in ("decoder", "cross") if r.heads(k).size]
        self._rows = [(k, layer) for k, m in blocks for layer in range(m.shape[0])]
        matrix = np.concatenate([m for _, m in blocks]) if blocks else np.zeros((0, 0))
        m = max(float(np.abs(matrix).max()) if matrix.size else 0.0, 1e-6)
        rows = [f"{kind_name(k)} {layer + 1}" for k, layer in self._rows]
        self.heatmap.set_matrix(matrix, rows, [str(h + 1) for h in range(matrix.shape[1])], levels=(-m, m))

    def _draw_others(self, r: LogitAttribution) -> None:
        self._others = r.others()
        values = np.array([v for _, v in self._others])
        x = np.arange(len(values), dtype=float)
        self.bars.setOpts(x=x, height=values, width=0.7, brushes=[pg.mkBrush(UP if v >= 0 else DOWN) for v in values])
        set_ticks(self.bars_plot, [bar_label(t) for t, _ in self._others])
        self.bars_plot.setXRange(-0.6, len(x) - 0.4, padding=0)
        lo, hi = (min(0.0, float(values.min())), max(0.0, float(values.max()))) if values.size else (0.0, 1.0)
        self.bars_plot.setYRange(lo, hi if hi > lo else lo + 1.0, padding=0.05)

    def _on_theme_changed(self) -> None:
        self.heatmap.apply_theme(self.theme)
        apply_plot_theme(self.bars_plot, self.theme)
        self._refresh()

    def _on_contrast_changed(self) -> None:
        self.optionsChanged.emit()  # the data is computed against the new contrast token

    # the user's choices ----------------------------------------------------------------------------
    def _on_cell_clicked(self, row: int, col: int) -> None:
        if 0 <= row < len(self._rows):
            kind, layer = self._rows[row]
            self.chose.emit({"kind": kind, "layer": layer, "head": col, "mode": "head"})

    def _on_hovered(self, info: HoverInfo | None) -> None:
        r = self.result()
        if info is None or r is None or not 0 <= info.row < len(self._rows):
            self.readout.setText(" ")
            return
        kind, layer = self._rows[info.row]
        value = float(r.heads(kind)[layer, info.col])
        self.readout.setText(f"{head_text(kind, layer, info.col)}: {value:+.4f} ({display_piece(r.quantity)})")

    def _on_bars_hovered(self, pos) -> None:
        if not self._others or not self.bars_plot.isVisible() or not self.bars_plot.sceneBoundingRect().contains(pos):
            return
        i = int(round(self.bars_plot.getViewBox().mapSceneToView(pos).x()))
        if 0 <= i < len(self._others):
            term, value = self._others[i]
            self.readout.setText(f"{term.label}: {value:+.4f}")

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("logit_attribution", "Logit attribution")

    def figure_data(self) -> FigureData:
        r = self.result()
        if r is None:
            raise ValueError("the view shows no data yet")
        return figure_data(r)

    def transient_items(self):
        return [self.heatmap.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def attributed(current: DecodingResult, row: int | None, model: Transformer, tgt_tokenizer: Tokenizer,
               contrast: str | None) -> LogitAttributionFrame | None:
    """The worker's call: the core's attribution, or the reason a contrast token cannot be used."""
    try:
        result = logit_attribution_for(current, row, model, tgt_tokenizer, contrast)
    except AttributionError as exc:
        return LogitAttributionFrame(None, str(exc))
    return None if result is None else LogitAttributionFrame(result)


def logit_attribution_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | LogitAttributionFrame | None:
    """The frame's row (the linked query, else the current step) split into its terms: one model pass, run in a worker."""
    bundle, frozen = session.bundle, session.frames.frozen()
    if bundle is None or frozen is None:
        return None
    why = not_applicable(bundle.config)
    if why:
        return LogitAttributionFrame(None, why)
    row = choice.query if choice.kind != "encoder" and choice.query is not None else None
    contrast = options.get(CONTRAST)
    contrast = contrast.strip() if isinstance(contrast, str) and contrast.strip() else None
    return Analysis(attributed, (frozen, row, bundle.model, bundle.tgt_tokenizer, contrast))


SPEC = ViewSpec("logit-attribution", QtLogitAttributionView, QT_TRANSLATE_NOOP("views", "Logit attribution"), "bottom", ("query",),
                data=logit_attribution_data, from_choice=True, reads_options=True, query_rows="target", needs=("decoder",),
                empty="nothing for logit attribution: decode a step first (a model without a decoder has no logit to split)")
