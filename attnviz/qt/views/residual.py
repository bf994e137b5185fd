"""The residual stream across depth: ‖x‖ after the embedding and after every sublayer, and
‖Sublayer(x)‖, what each sublayer adds, one plot per stack (mean over the tokens; the selected
token as a dotted line). Click a point to select that layer and sublayer in the other views:
the view emits ``chose({kind, layer})`` (head and query kept).

The view renders :class:`attnviz.core.analysis.residual.ResidualStack` (one per stack).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.norms import placement_formula
from attnviz.core.analysis.residual import ResidualFrame, ResidualStack, residual_data_for
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import KINDS
from attnviz.qt.core_text import kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.small_plots import apply_plot_theme, legend_title, series, set_ticks, small_plot
from attnviz.qt.views.spec import TourAsk, ViewSpec
from attnviz.qt.widgets.plots import curve, pen
from attnviz.qt.widgets.regions import Region, items_region

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

STACKS = ("encoder", "decoder")


class StackPlot:
    """One stack's plot: the stream, what each sublayer adds, the selected token, the selected point."""

    def __init__(self, theme, layout: pg.GraphicsLayout, col: int):
        self.plot = small_plot("", translate("residual", "mean ‖·‖ over the tokens"))
        layout.addItem(self.plot, row=1, col=col)
        self.stream = series(self.plot, theme, 0, "‖x‖")
        self.added = series(self.plot, theme, 1, "‖Sublayer(x)‖", dashed=True, symbol="s")
        self.token = curve(self.plot, pen=pen(theme.muted, 1.2, QtCore.Qt.PenStyle.DotLine))
        self.marker = pg.ScatterPlotItem(size=16, symbol="o", brush=None)
        self.marker.setZValue(20)
        self.plot.addItem(self.marker)
        self.data: ResidualStack | None = None

    def show(self, data: ResidualStack | None, query: int | None, point: int | None, theme) -> None:
        self.data = data
        self.plot.setVisible(data is not None)
        if data is None:
            return
        x = np.arange(len(data.labels()), dtype=float)
        self.stream.setData(x, data.mean_stream())
        self.added.setData(x[1:], data.mean_added())
        q = query if query is not None and 0 <= query < len(data.pieces) else None
        self.token.setData(x, data.stream[:, q]) if q is not None else self.token.setData([], [])
        set_ticks(self.plot, [translate("residual", "emb"), *data.labels()[1:]])  # the core's "emb", then 1A, 1F, …
        if point is not None and 0 < point < len(x):
            self.marker.setData([x[point]], [data.mean_stream()[point]], pen=pen(theme.highlight, 2.5))
        else:
            self.marker.setData([], [])
        token = f" · ··· “{display_piece(data.pieces[q])}”" if q is not None else ""
        title = translate("residual", "{stack} · {n} tokens{token}").format(stack=kind_name(data.stack), n=len(data.pieces), token=token)
        legend_title(self.plot, title, [], theme)
        self.plot.setXRange(-0.6, len(x) - 0.4, padding=0)
        self.plot.enableAutoRange(axis="y")

MIN_HEIGHT = 400  # px of canvas before the dock scrolls


def legend_entries(theme) -> tuple[tuple[str, str, str], ...]:
    """The marks of both plots, in the title's legend line."""
    return (("●", theme.head_color(0).name(), translate("residual", "‖x‖ after each point")),
            ("■ - -", theme.head_color(1).name(), translate("residual", "‖Sublayer(x)‖ added there")),
            ("···", theme.muted, translate("residual", "the selected token")))


class QtResidualView(FigureViewBase):
    """``set_data(stacks)``; ``select(kind, layer, query)`` marks a layer's sublayer and a token."""


    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)  # below it the figure scrolls (a short dock)
        self._scroll_canvas()
        self._stacks: dict[str, ResidualStack] = {}
        self._formula = "x + Sublayer(LN(x))"  # the open model's, given with the data
        self._kind, self._layer, self._query = "encoder", 0, None
        self._point: tuple[str, int] | None = None  # a clicked point; None: the selected kind's sublayer
        ci = self.canvas.ci
        self.plots = {s: StackPlot(self.theme, ci, i) for i, s in enumerate(STACKS)}
        for sp in self.plots.values():
            for item in (sp.stream, sp.added):
                item.sigPointsClicked.connect(self._on_points_clicked)
        self._apply_theme()
        self._refresh()

    def render(self, frame: ResidualFrame) -> None:
        self._formula = frame.formula
        self._stacks = {s.stack: s for s in frame.stacks}
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        self.select(choice.kind, choice.layer, choice.query)

    def select(self, kind: str | None = None, layer: int | None = None, query: int | None = None) -> None:
        if kind is not None or layer is not None:
            self._point = None
        if kind is not None:
            self._kind = kind
        if layer is not None:
            self._layer = layer
        if query is not None:
            self._query = query
        self._refresh()

    def _drawable(self, frame: ResidualFrame) -> bool:
        return bool(frame.stacks)

    def stack(self, name: str) -> ResidualStack | None:
        return self._stacks.get(name)

    def selected_point(self) -> tuple[str, int] | None:
        """(stack, point) of the selected sublayer: the one clicked, else the selected kind's
        attention sublayer of the selected layer."""
        if self._point is not None:
            return self._point
        stack = "encoder" if self._kind == "encoder" else "decoder"
        data = self._stacks.get(stack)
        if data is None:
            return None
        return next(((stack, p) for p, s in enumerate(data.sublayers, 1) if s.layer == self._layer and s.kind == self._kind), None)

    def _refresh(self) -> None:
        sel = self.selected_point()
        for name, sp in self.plots.items():
            query = self._query if (self._kind == "encoder") == (name == "encoder") else None
            sp.show(self._stacks.get(name), query, sel[1] if sel and sel[0] == name else None, self.theme)
        enc = self._stacks.get("encoder")
        growth = translate("residual", " · encoder: mean ‖x‖ {first:.1f} → {last:.1f}").format(
            first=enc.mean_stream()[0], last=enc.mean_stream()[-1]) if enc is not None else ""
        self.title.set_title(translate("residual", "The residual stream") + growth, translate(
            "residual", "x ← {formula} · ‖·‖: length of a token's d_model vector, mean over the tokens · emb = embedding + PE, "
                        "A = self-attention, C = cross-attention, F = FFN, after layer 1, 2, … · click a point to select that sublayer").format(
            formula=self._formula))
        self.title.set_legend(legend_entries(self.theme))

    def _apply_theme(self) -> None:
        for sp in self.plots.values():
            apply_plot_theme(sp.plot, self.theme)

    def _on_theme_changed(self) -> None:
        self._apply_theme()
        self._refresh()

    def _on_points_clicked(self, item, points, *_) -> None:
        stack = next((n for n, sp in self.plots.items() if item in (sp.stream, sp.added)), None)
        data = self._stacks.get(stack) if stack else None
        if data is None or not len(points):
            return
        index = int(round(points[0].pos().x()))
        if 1 <= index <= len(data.sublayers):
            self.request_point(stack, index)

    def request_point(self, stack: str, point: int) -> None:
        """Select point ``point`` (1-based: after sublayer ``point``) of ``stack`` and ask the other views to follow."""
        sub = self._stacks[stack].sublayers[point - 1]
        self.select(sub.selection_kind, sub.layer)
        self._point = (stack, point)
        self._refresh()
        self.chose.emit({"kind": sub.selection_kind, "layer": sub.layer})

    def figure_title(self) -> str:
        """``Residual stream · cross layer 2 marked``: the kind and layer the marked point belongs to."""
        sel = self.selected_point()
        if sel is None:
            return translate("residual", "Residual stream")
        sub = self._stacks[sel[0]].sublayers[sel[1] - 1]
        return translate("residual", "Residual stream · {kind} layer {layer} marked").format(kind=kind_name(sub.selection_kind), layer=sub.layer + 1)

    def figure_data(self) -> FigureData:
        if not self._stacks:
            raise ValueError("the view shows no data yet")
        labels, stream, added = [], [], []
        for s in self._stacks.values():
            labels += [f"{s.stack} · {label}" for label in s.labels()]
            stream += list(s.mean_stream())
            added += [np.nan, *s.mean_added()]
        extras = {f"{s.stack}_{k}": v for s in self._stacks.values() for k, v in (("stream_per_token", s.stream), ("added_per_token", s.added))}
        return FigureData(self.figure_title(), ("point",), {"mean_stream_norm": np.array(stream), "mean_added_norm": np.array(added)},
                          {"point": tuple(labels)}, extras)


# -- the registry's entry ----------------------------------------------------------------------
def residual_data(session: Session, choice: ViewChoice) -> ResidualFrame | None:
    """The stream's norms from what the session's decoding recorded (no extra pass)."""
    if session.bundle is None or session.current is None:
        return None
    cfg = session.bundle.config
    return ResidualFrame(residual_data_for(session.current, cfg), placement_formula(cfg.norm, cfg.norm_placement))


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("res_formula", "res_first", "res_last")


def tour_measures(view: QtResidualView, ask: TourAsk) -> dict[str, Any]:
    """Where the model normalizes, and the encoder's mean ‖x‖ after its embedding and after its
    last sublayer (none without an encoder)."""
    cfg = ask.session.bundle.config
    out: dict[str, Any] = {"res_formula": placement_formula(cfg.norm, cfg.norm_placement)}
    stack = view.stack("encoder")
    if stack is not None:
        stream = stack.mean_stream()
        out.update(res_first=float(stream[0]), res_last=float(stream[-1]))
    return out


def region_encoder(view: QtResidualView, ask: TourAsk) -> Region | None:
    """The encoder's plot."""
    return items_region(view.plots["encoder"].plot)


SPEC = ViewSpec("residual", QtResidualView, QT_TRANSLATE_NOOP("views", "Residual stream"), "bottom", ("kind", "layer", "query"), data=residual_data,
                kinds=KINDS, measures=tour_measures, measure_names=TOUR_MEASURES, regions={"residual-encoder": region_encoder})
