"""Attention vs attribution: for one output token, how much each source token matters by four
attention measures (cross-attention, attention received, rollout, flow) and three attributions
(gradient × input, integrated gradients, occlusion), side by side, with their rank correlations
and one plain sentence saying whether they agree.

Left: one column per measure, one row per source token (so every piece of a long sentence keeps
its label, upright); each column is divided by its largest magnitude, so every column spans −1…1
(attributions keep their sign: red helps the token, blue works against it). Right: Spearman's ρ between the magnitudes of every two measures. The row of
the decoder (which output token) follows the linked query row; by default the last word the
model wrote. The view renders :class:`attnviz.core.analysis.attention_vs_attribution.Importance`,
computed in a worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6 import QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.attention_vs_attribution import (
    ATTENTION_MEASURES,
    ATTRIBUTION_MEASURES,
    MEASURE_TITLES,
    Importance,
    agreement,
    importance_for,
)
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import SP_WORD_START, display_piece
from attnviz.qt.analyses import Analysis
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.spec import TourAsk, ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, format_change
from attnviz.qt.widgets.regions import Region, cells

if TYPE_CHECKING:
    from attnviz.core.decoding.teacher_forcing import TeacherForced
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 300  # px of canvas before the dock scrolls
ROW_PX = 18  # px a source piece's row takes at least: every piece keeps its label, upright
HEAD_ROOM = 200  # px of the canvas above and below the rows (titles, the measures' labels, the colour bar)
SHORT = {  # row labels that fit (the attention measures' names fit as they are)
    "grad": QT_TRANSLATE_NOOP("attention_vs_attribution", "grad × input"),
    "ig": QT_TRANSLATE_NOOP("attention_vs_attribution", "int. gradients"),
    "occlusion": QT_TRANSLATE_NOOP("attention_vs_attribution", "occlusion"),
}
#: The measures' titles (MEASURE_TITLES' values, shown as ``translate("attention_vs_attribution", title)``).
MARKED_TITLES = (
    QT_TRANSLATE_NOOP("attention_vs_attribution", "cross attention"),
    QT_TRANSLATE_NOOP("attention_vs_attribution", "attention received"),
    QT_TRANSLATE_NOOP("attention_vs_attribution", "rollout"),
    QT_TRANSLATE_NOOP("attention_vs_attribution", "flow"),
    QT_TRANSLATE_NOOP("attention_vs_attribution", "gradient x input"),
    QT_TRANSLATE_NOOP("attention_vs_attribution", "integrated gradients"),
    QT_TRANSLATE_NOOP("attention_vs_attribution", "occlusion (leave one out)"),
)
VERDICTS = {  # agreement()'s verdicts
    "agree": QT_TRANSLATE_NOOP("attention_vs_attribution", "agree"),
    "partly agree": QT_TRANSLATE_NOOP("attention_vs_attribution", "partly agree"),
    "disagree": QT_TRANSLATE_NOOP("attention_vs_attribution", "disagree"),
}


def normalized(scores: np.ndarray) -> np.ndarray:
    """``scores`` divided by their largest magnitude (all zero stays zero)."""
    m = float(np.abs(scores).max()) if scores.size else 0.0
    return scores / m if m > 0 else np.zeros_like(scores)


def finding_text(result: Importance) -> str:
    """What the measures say (the core's :func:`~attnviz.core.analysis.attention_vs_attribution.finding`),
    in the interface's language."""
    values = agreement(result)
    values["verdict"] = translate("attention_vs_attribution", VERDICTS[values["verdict"]])
    return translate("attention_vs_attribution", "cross attention ranks {attention} first; integrated gradients ranks {attribution} first; "
                     "attention and attribution {verdict} (mean Spearman ρ of |scores| {rho:+.2f})").format(**values)


class QtAttentionVsAttributionView(FigureViewBase):
    """``set_data(Importance | None)``; ``apply(choice)``: nothing to take (the data is computed
    for the chosen row)."""

    given: Importance | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self.measures = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, value_format=format_change,
                                    colorbar_label=translate("attention_vs_attribution", "score / max |score|"))
        self.measures.set_axis_titles(translate("attention_vs_attribution", "source token"), translate("attention_vs_attribution", "measure"))
        self.measures.sigHovered.connect(self._on_hovered)
        self.rho = HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, value_format=format_change, colorbar_label=translate("attention_vs_attribution", "Spearman ρ"))
        self.rho.set_axis_titles(None, None)
        self.canvas.ci.addItem(self.measures, row=1, col=0)
        self.canvas.ci.addItem(self.rho, row=1, col=1)
        self.canvas.ci.layout.setColumnStretchFactor(0, 5)
        self.canvas.ci.layout.setColumnStretchFactor(1, 2)
        self._refresh()

    def render(self, result: Importance | None) -> None:
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the row chosen is in the data."""

    def result(self) -> Importance | None:
        return self.given

    def _refresh(self) -> None:
        r = self.given
        self.measures.setVisible(r is not None)
        self.rho.setVisible(r is not None)
        if r is None:
            self.title.set_title(translate("attention_vs_attribution", "Attention vs attribution"),
                                 translate("attention_vs_attribution", "needs a decoded token and a model with cross-attention"))
            return
        q = r.question
        gap = "" if r.completeness_gap is None else translate(
            "attention_vs_attribution", " · integrated gradients: {steps} steps, completeness gap {gap:.2%}").format(steps=r.n_steps, gap=r.completeness_gap)
        self.title.set_title(translate("attention_vs_attribution", "Attention vs attribution · what makes the model write {piece} (output {position})").format(
            piece=display_piece(q.token_piece), position=q.position + 1), finding_text(r) + gap)
        numbers = [str(i + 1) for i in range(len(r.names))]
        names = [f"{i} {translate('attention_vs_attribution', SHORT.get(n, n))}" for i, n in zip(numbers, r.names)]
        matrix = np.stack([normalized(r.measures[n]) for n in r.names], axis=1)  # a row per source piece: each piece labelled, upright
        self.canvas.setMinimumHeight(max(MIN_HEIGHT, HEAD_ROOM + ROW_PX * len(r.source_pieces)))
        self.measures.set_matrix(matrix, r.source_pieces, names, levels=(-1.0, 1.0))
        self.rho.set_matrix(r.rho, numbers, numbers, levels=(-1.0, 1.0))
        self.rho.set_panel_title(translate("attention_vs_attribution", "Spearman ρ of |scores|"), color=self.theme.foreground)

    def _on_hovered(self, info: HoverInfo | None) -> None:
        r = self.given
        if info is None or r is None:
            self.readout.setText(" ")
            return
        name, piece = r.names[info.col], info.row
        rank = r.ranking(name).index(piece) + 1
        self.readout.setText(translate("attention_vs_attribution", "{measure} · {piece}: {score:+.4f} (rank {rank} of {n} by magnitude)").format(
            measure=translate("attention_vs_attribution", MEASURE_TITLES[name]), piece=display_piece(r.source_pieces[piece]),
            score=float(r.measures[name][piece]), rank=rank, n=len(r.source_pieces)))

    def _on_theme_changed(self) -> None:
        self.measures.apply_theme(self.theme)
        self.rho.apply_theme(self.theme)
        self._refresh()

    def figure_title(self) -> str:
        r = self.given
        if r is None:
            return translate("attention_vs_attribution", "Attention vs attribution")
        return translate("attention_vs_attribution", "Attention vs attribution of output {position}").format(position=r.question.position + 1)

    def figure_data(self) -> FigureData:
        r = self.given
        if r is None:
            raise ValueError("the view shows no data yet")
        values = {n.replace(" ", "_"): r.measures[n] for n in r.names}
        extras = {"spearman_rho": r.rho, "measures": np.array(r.names), "cross_attention_per_head": r.per_head,
                  "position": np.array(r.question.position + 1), "token": np.array(r.question.token_piece), "n_steps": np.array(r.n_steps)}
        return FigureData(self.figure_title(), ("source",), values, {"source": r.source_pieces}, extras)

    def transient_items(self):
        return [self.measures.hover_marker, self.rho.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def attribution_data(session: Session, choice: ViewChoice) -> Analysis | None:
    """Every measure for the output token of the chosen row (default: the last word written):
    gradients and a max-flow per source token, run in a worker."""
    bundle, frozen = session.bundle, session.frames.frozen()
    if bundle is None or frozen is None:
        return None
    row = choice.query if choice.kind != "encoder" and choice.query is not None else None
    if row is not None and frozen.output_ids:
        row = min(row, len(frozen.output_ids) - 1)
    return Analysis(importance_for, (frozen, row, bundle.model, bundle.tgt_tokenizer), gradients=True)


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("attr_token", "attr_position", "attr_sources", "attr_focus_ranks", "attr_attention_top", "attr_ig_top", "attr_rho",
                 "attr_known", "attr_targets", "attr_accuracy")


def word_pieces(pieces: tuple[str, ...], word: str) -> list[int]:
    """The positions of the pieces that spell ``word`` where it first occurs in ``pieces``."""
    texts = [p.replace(SP_WORD_START, "") for p in pieces]
    starts = np.cumsum([0, *map(len, texts)])
    at = "".join(texts).find(word)
    if at < 0:
        return []
    return [i for i, t in enumerate(texts) if starts[i] < at + len(word) and starts[i] + len(t) > at]


def focus_ranks(pieces: tuple[str, ...], ranking: tuple[int, ...], words: tuple[str, ...]) -> str | None:
    """``开 26 · 心 10``: each piece of the focus words and its rank (1 = first) in ``ranking``."""
    found = [i for word in words for i in word_pieces(pieces, word)]
    return " · ".join(f"{display_piece(pieces[i])} {ranking.index(i) + 1}" for i in found) or None


def top_pieces(pieces: tuple[str, ...], ranking: tuple[int, ...], n: int = 3) -> str:
    """The first ``n`` pieces of ``ranking``, as shown."""
    return " ".join(display_piece(pieces[i]) for i in ranking[:n])


def known_measures(forced: TeacherForced | None) -> dict[str, Any]:
    """How well the model knows the typed translation: teacher-forced, how many of its tokens it
    predicts (``None`` each without a typed target)."""
    if forced is None or not forced.steps:
        return {"attr_known": None, "attr_targets": None, "attr_accuracy": None}
    return {"attr_known": sum(p.match for p in forced.steps), "attr_targets": len(forced.steps), "attr_accuracy": forced.accuracy}


def tour_measures(view: QtAttentionVsAttributionView, ask: TourAsk) -> dict[str, Any]:
    """The token explained, how attention and integrated gradients rank its source pieces (the
    stop's focus words among them), how much they agree, and how well the model knows the target."""
    r = view.result()
    pieces, att, ig = r.source_pieces, r.ranking(ATTENTION_MEASURES[0]), r.ranking("ig")
    return {"attr_token": display_piece(r.question.token_piece), "attr_position": r.question.position + 1,
            "attr_sources": len(pieces), "attr_focus_ranks": focus_ranks(pieces, att, ask.state.focus),
            "attr_attention_top": top_pieces(pieces, att), "attr_ig_top": top_pieces(pieces, ig),
            "attr_rho": r.mean_rho(ATTENTION_MEASURES, ATTRIBUTION_MEASURES), **known_measures(ask.session.forced)}


def region_cross_row(view: QtAttentionVsAttributionView, ask: TourAsk) -> Region | None:
    """The cross-attention measure of every source piece (the first row of the plot's matrix)."""
    return cells(view.measures, 0, 0, len(view.result().source_pieces), 1)


SPEC = ViewSpec("attribution", QtAttentionVsAttributionView, QT_TRANSLATE_NOOP("views", "Attention vs attribution"), "bottom", ("query",),
                data=attribution_data, from_choice=True, query_rows="target", needs=("cross",),
                empty="nothing to attribute: decode a token first (a model with no cross layers has no source to attribute to)",
                measures=tour_measures, measure_names=TOUR_MEASURES, regions={"attribution-cross-row": region_cross_row})
