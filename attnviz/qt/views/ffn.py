"""The FFN of one layer: FFN(x) = max(0, x W₁ + b₁) W₂ + b₂, applied to each token on its own.

Top: the hidden activations max(0, x W₁ + b₁) of the chosen layer as a heatmap (tokens × d_ff
units; the selected token's row outlined); for a gated FFN (T5 v1.1: (GELU(xW₁) ⊙ xW_up)W₂) the
hidden units GELU(xW₁) ⊙ xW_up beside the gate GELU(xW₁), and the caption writes the model's own
form (:class:`attnviz.core.analysis.ffn.FfnForm`). Below: the units most active for the selected token,
and the share of units that are off in every layer of both stacks (ReLU: exact zeros; a GELU or
SiLU model has none, so there it is the share ≤ 0, and the labels say so). Then the FFN's role:
one unit's response at every position (the same w₁, b₁ for each; its pre-activation cut at 0 by
ReLU, the non-linear part attention's weighted sums lack), FFN(x_i) computed for each position
alone against the layer's output, and the model's next token and greedy translation with each
layer's FFN removed (computed in a worker: :func:`attnviz.core.analysis.ffn.ffn_roles_for`).

The view renders :class:`attnviz.core.analysis.ffn.FfnData`; click a cell to select its token and unit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.ffn import (
    ACTIVATION_NAMES,
    ALL,
    STACKS,
    FfnData,
    FfnLayer,
    FfnRemoval,
    ffn_roles_for,
    layer_key,
    off_share,
    stack_of,
    top_units,
)
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.small_plots import apply_plot_theme, legend_title, series, set_ticks, small_plot
from attnviz.qt.views.spec import TourAsk, ViewSpec
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo
from attnviz.qt.widgets.plots import curve, pen
from attnviz.qt.widgets.regions import Region, items_region

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

TOP_UNITS = 10
UNIT_TICK_EVERY = 64
MIN_HEIGHT = 640  # px of canvas before the dock scrolls
TOP = -1  # the unit spin box's "top": the selected token's most active unit
SHORT_STACKS = {"encoder": QT_TRANSLATE_NOOP("ffn", "enc {layer}"), "decoder": QT_TRANSLATE_NOOP("ffn", "dec {layer}")}


def _short(key: str) -> str:
    """``encoder:0`` → ``enc 1``; ``all`` → ``all``."""
    if key == ALL:
        return translate("ffn", "all")
    stack, _, layer = key.partition(":")
    return translate("ffn", SHORT_STACKS[stack]).format(layer=int(layer) + 1)


def off_text(activation: str, gate: str = "max(0, xW₁ + b₁)") -> str:
    """What :func:`~attnviz.core.analysis.ffn.off_share` counts, in words (the core's ``off_label``)."""
    if activation == "relu":
        return translate("ffn", "ReLU sparsity: share of exact zeros in {gate}").format(gate=gate)
    return translate("ffn", "share of units ≤ 0 after {activation} (it has no exact zeros)").format(
        activation=ACTIVATION_NAMES.get(activation, activation))


def stack_layer_text(stack: str, layer: int, capital: bool = False) -> str:
    """``encoder layer 2`` (``layer`` 0-based; ``capital``: ``Encoder layer 2``)."""
    name = kind_name(stack)
    return translate("ffn", "{stack} layer {layer}").format(stack=name.capitalize() if capital else name, layer=layer + 1)


class QtFfnView(FigureViewBase):
    """``set_data(FfnData)``; ``select(stack, layer, query, unit)`` picks the layer, the token and
    the unit (0-based; unit −1: the token's most active). ``chose({kind, layer})`` and
    ``chose({query})`` when the user picks them in the view."""

    given: FfnData | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)  # below it the figure scrolls (a short dock)
        self._scroll_canvas()
        self._stack, self._layer, self._query = "encoder", 0, None
        self.layer_combo = self._add_control(translate("ffn", "Layer"), make_combo("ffnLayerCombo", translate("ffn", "Which layer's FFN")))
        self.unit_spin = self._add_control(translate("ffn", "Unit"), QtWidgets.QSpinBox(objectName="ffnUnitSpin"))
        self.unit_spin.setRange(TOP, 0)
        self.unit_spin.setValue(TOP)
        self.unit_spin.setSpecialValueText(translate("ffn", "top"))
        self.unit_spin.setToolTip(translate("ffn", "The hidden unit shown at every position (top: the selected token's most active; "
                                                  "a click on the heatmap picks one)"))
        self.controls.addStretch(1)
        self.layer_combo.currentIndexChanged.connect(self._on_layer_changed)
        self.unit_spin.valueChanged.connect(self._on_unit_changed)
        self._build_heatmap()
        self._build_plots()
        self._apply_theme()
        self._refresh()

    def _build_heatmap(self) -> None:
        """The hidden units and (shown beside them for a gated FFN only) the gate."""
        self.maps = self.canvas.ci.addLayout(row=1, col=0, colspan=2)
        self.heatmap = self._unit_map(translate("ffn", "activation"))
        self.gate_heatmap = self._unit_map(translate("ffn", "gate"))
        self.maps.addItem(self.heatmap, row=0, col=0)

    def _unit_map(self, label: str) -> HeatmapPlot:
        plot = HeatmapPlot(self.theme, colorbar=True, colorbar_label=label, annotate=False, masked=False, label_point_size=8.5)
        plot.set_axis_titles(translate("ffn", "token"), translate("ffn", "hidden unit (d_ff)"))
        plot.sigCellClicked.connect(self._on_cell_clicked)
        plot.sigHovered.connect(self._on_hovered)
        return plot

    def _build_plots(self) -> None:
        ci = self.canvas.ci
        self.top_plot = small_plot(translate("ffn", "unit"), translate("ffn", "value"))
        self.top_bars = pg.BarGraphItem(x=[], height=[], width=0.7)
        self.top_plot.addItem(self.top_bars)
        self.off_plot = small_plot(translate("ffn", "layer"), translate("ffn", "share off"))
        self.off_lines = {s: series(self.off_plot, self.theme, i, s) for i, s in enumerate(STACKS)}
        self.unit_plot = small_plot(translate("ffn", "token"), translate("ffn", "activation"))
        self.unit_bars = pg.BarGraphItem(x=[], height=[], width=0.6)
        self.unit_plot.addItem(self.unit_bars)
        self.unit_pre = curve(self.unit_plot)
        self.unit_plot.addItem(pg.InfiniteLine(angle=0, pos=0.0, movable=False, pen=pen("#888888", 1.0)), ignoreBounds=True)
        self.removal_plot = small_plot(translate("ffn", "FFN removed"), translate("ffn", "probability"))
        self.removal_bars = pg.BarGraphItem(x=[], height=[], width=0.6)
        self.removal_plot.addItem(self.removal_bars)
        self.intact_line = pg.InfiniteLine(angle=0, movable=False)
        self.removal_plot.addItem(self.intact_line, ignoreBounds=True)
        self.removal_texts: list[pg.TextItem] = []
        for item, row, col in ((self.top_plot, 2, 0), (self.off_plot, 2, 1), (self.unit_plot, 3, 0), (self.removal_plot, 3, 1)):
            ci.addItem(item, row=row, col=col)
        for row, stretch in ((1, 5), (2, 4), (3, 4)):
            ci.layout.setRowStretchFactor(row, stretch)

    # data and selection ----------------------------------------------------------------------
    def render(self, data: FfnData) -> None:
        if data.get(self._stack, self._layer) is None and data.layers:
            self._stack, self._layer = data.layers[0].stack, data.layers[0].layer
        self._update_controls()
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """The selected kind's stack (cross-attention sits in the decoder), layer and token."""
        self.select(choice.kind, choice.layer, choice.query)

    def select(self, kind: str | None = None, layer: int | None = None, query: int | None = None, unit: int | None = None) -> None:
        """Show the FFN of ``kind``'s stack (cross: the decoder), ``layer``, token ``query``, hidden
        unit ``unit`` (−1: the token's most active); ``None`` keeps."""
        stack = stack_of(kind) if kind is not None else self._stack
        layer = self._layer if layer is None else layer
        if self.given is not None and self.given.get(stack, layer) is not None:
            self._stack, self._layer = stack, layer
        if query is not None:
            self._query = query
        self._update_controls()
        if unit is not None:
            self.unit_spin.setValue(int(unit))  # redraws through _on_unit_changed when it changes
        self._refresh()

    def _drawable(self, data: FfnData) -> bool:
        return bool(data.layers)

    def current(self) -> FfnLayer | None:
        return None if self.given is None else self.given.get(self._stack, self._layer)

    def removal(self) -> FfnRemoval | None:
        return None if self.given is None else self.given.removal

    def query(self) -> int:
        """The selected token (the last one unless chosen)."""
        f = self.current()
        n = len(f.pieces) if f is not None else 1
        return n - 1 if self._query is None or not 0 <= self._query < n else self._query

    def unit(self) -> int:
        """The unit shown at every position: the one chosen, else the selected token's most active."""
        f = self.current()
        if f is None:
            return 0
        chosen = self.unit_spin.value()
        return chosen if 0 <= chosen < f.hidden.shape[1] else int(top_units(f.hidden[self.query()], 1)[0][0])

    def off_share(self) -> float:
        f = self.current()
        return off_share(f.activated, self.given.activation) if f is not None else float("nan")

    # drawing ------------------------------------------------------------------------------------
    def _update_controls(self) -> None:
        items = [] if self.given is None else [(stack_layer_text(f.stack, f.layer, capital=True), f"{f.stack}:{f.layer}") for f in self.given.layers]
        set_combo_items(self.layer_combo, items, f"{self._stack}:{self._layer}")
        self.layer_combo.setEnabled(bool(items))
        f = self.current()
        with QtCore.QSignalBlocker(self.unit_spin):
            self.unit_spin.setMaximum(f.hidden.shape[1] - 1 if f is not None else 0)

    def _refresh(self) -> None:
        f = self.current()
        for item in (self.heatmap, self.top_plot, self.off_plot, self.unit_plot, self.removal_plot):
            item.setVisible(f is not None)
        self._show_gate(f is not None and f.gate is not None)
        if f is None:
            self.title.set_title("FFN", translate("ffn", "FFN(x) = max(0, xW₁ + b₁)W₂ + b₂, applied to each token on its own"))
            self.title.set_legend(())
            return
        self._set_title(f)
        form = self.given.form
        self._draw_map(self.heatmap, f.hidden, f.pieces, nonnegative=form.activation == "relu" and not form.gated)
        if f.gate is not None:
            self._draw_map(self.gate_heatmap, f.gate, f.pieces, nonnegative=form.activation == "relu")
            self.heatmap.set_panel_title(translate("ffn", "hidden units {hidden}").format(hidden=form.hidden_text), size="9pt")
            self.gate_heatmap.set_panel_title(translate("ffn", "gate {gate}").format(gate=form.gate_text), size="9pt")
        self._draw_top(f)
        self._draw_off()
        self._draw_unit(f)
        self._draw_removal()

    def _draw_map(self, plot: HeatmapPlot, values: np.ndarray, pieces: tuple[str, ...], nonnegative: bool) -> None:
        """Tokens × units, the selected token's row outlined; levels from 0 (``nonnegative``) or ±max."""
        cols = [str(i) if i % UNIT_TICK_EVERY == 0 else "" for i in range(values.shape[1])]
        m = float(np.max(np.abs(values))) if values.size else 1.0
        plot.set_matrix(values, pieces, cols, highlight_row=self.query(), levels=(0.0 if nonnegative else -m, m or 1.0))

    def _show_gate(self, shown: bool) -> None:
        """The gate's heatmap beside the hidden units' (a gated FFN), or out of the layout; the
        hidden units' title says which is which only when both are shown."""
        if shown == (self.gate_heatmap.scene() is not None):
            return
        if shown:
            self.maps.addItem(self.gate_heatmap, row=0, col=1)
        else:
            self.maps.removeItem(self.gate_heatmap)
            self.heatmap.set_panel_title("")

    def _hidden_name(self) -> str:
        return self.given.form.hidden_text

    def _set_title(self, f: FfnLayer) -> None:
        name = self._hidden_name()
        form = self.given.form
        alone = ""
        if f.alone is not None:
            alone = translate("ffn", " · the same weights at every position: FFN(x_i) alone = output row i (max |Δ| = {error:.1e})").format(
                error=f.positionwise_error)
        self.title.set_title(
            translate("ffn", "FFN · {layer} · {name} · {tokens} tokens × {units} units").format(
                layer=stack_layer_text(f.stack, f.layer), name=name, tokens=len(f.pieces), units=f.hidden.shape[1]),
            translate("ffn", "{formula}, per token{alone} · {off}: {share:.1%} in this layer").format(
                formula=form.formula, alone=alone, off=off_text(form.activation, form.gate_text), share=self.off_share()),
        )
        self.title.set_legend((("", "", self.removal_text()),) if self.removal() is not None else ())

    def removal_text(self) -> str:
        """The shown layer's FFN removed, in words: the next token and the greedy translation."""
        r = self.removal()
        if r is None:
            return ""
        key = layer_key(self._stack, self._layer)
        p, i = r.removed[key], r.intact
        return translate("ffn", "without this FFN: next token at decoder row {row} (“{fed}” fed) “{piece}” {prob:.2f} "
                         "(with it “{intact}” {intact_prob:.2f}); greedy “{translation}” → “{without}”; "
                         "without every FFN: “{without_all}”").format(
            row=r.row + 1, fed=display_piece(r.fed), piece=display_piece(p.piece), prob=p.prob, intact=display_piece(i.piece), intact_prob=i.prob,
            translation=r.translation, without=r.translations[key], without_all=r.translations[ALL])

    def _draw_top(self, f: FfnLayer) -> None:
        units, values = top_units(f.hidden[self.query()], TOP_UNITS)
        x = np.arange(len(units), dtype=float)
        self.top_bars.setOpts(x=x, height=values, width=0.7, brush=self.theme.head_color(0), pen=None)
        set_ticks(self.top_plot, [str(int(u)) for u in units])
        self.top_plot.setXRange(-0.6, max(len(units), 1) - 0.4, padding=0)
        self.top_plot.enableAutoRange(axis="y")
        piece = display_piece(f.pieces[self.query()])
        self.top_plot.setTitle(translate("ffn", "top {n} units for “{piece}”").format(n=len(units), piece=piece), size="8.5pt", color=self.theme.foreground)

    def _draw_off(self) -> None:
        names, most = [], 1
        for i, (stack, line) in enumerate(self.off_lines.items()):
            shares = self.given.off_shares(stack)
            line.setData(np.arange(1, len(shares) + 1, dtype=float), shares)
            if len(shares):
                names.append((i, kind_name(stack)))
                most = max(most, len(shares))
        self.off_plot.getAxis("bottom").setTicks([[(i, str(i)) for i in range(1, most + 1)]])
        what = translate("ffn", "share of zeros") if self.given.activation == "relu" else translate("ffn", "share of units ≤ 0")
        legend_title(self.off_plot, what, names, self.theme)
        self.off_plot.setYRange(0.0, 1.0, padding=0.05)
        self.off_plot.setXRange(0.7, most + 0.3, padding=0)

    def _draw_unit(self, f: FfnLayer) -> None:
        """Unit u at every position: its activation (bars) and, where computed, x_i·w₁ + b₁ (dashed)."""
        u = self.unit()
        x = np.arange(len(f.pieces), dtype=float)
        self.unit_bars.setOpts(x=x, height=f.hidden[:, u], width=0.6, brush=self.theme.head_color(0), pen=None)
        pre = f.pre[:, u] if f.pre is not None else np.array([])
        self.unit_pre.setData(x[: len(pre)], pre)
        set_ticks(self.unit_plot, [display_piece(p) for p in f.pieces])
        self.unit_plot.setXRange(-0.6, max(len(x), 1) - 0.4, padding=0)
        self.unit_plot.enableAutoRange(axis="y")
        weights = "w₁, b₁" if self.given.form.bias else "w₁"
        dashed = f" · <span style='color:{self.theme.head_color(1).name()}'>■</span> x·{weights.replace(', ', ' + ')}" if f.pre is not None else ""
        self.unit_plot.setTitle(translate("ffn", "unit {unit} at every position: {hidden}, one {weights}{dashed}").format(
            unit=u, hidden=self._hidden_name().replace('xW', 'x·w'), weights=weights, dashed=dashed), size="8.5pt", color=self.theme.foreground)

    def _draw_removal(self) -> None:
        r = self.removal()
        self.removal_plot.setVisible(r is not None)
        if r is None:
            return
        keys = list(r.removed)
        x = np.arange(len(keys), dtype=float)
        shown = keys.index(layer_key(self._stack, self._layer))
        brushes = [self.theme.head_color(1 if i == shown else 0) for i in range(len(keys))]
        self.removal_bars.setOpts(x=x, height=[r.removed[k].intact_prob for k in keys], width=0.6, brushes=brushes, pen=None)
        self.intact_line.setValue(r.intact.prob)
        set_ticks(self.removal_plot, [_short(k) for k in keys])
        self._place_removal_texts(r, keys)
        self.removal_plot.setXRange(-0.6, len(keys) - 0.4, padding=0)
        self.removal_plot.setYRange(0.0, 1.12, padding=0)
        piece = display_piece(r.intact.piece)
        self.removal_plot.setTitle(translate("ffn", "decoder row {row}: P(“{piece}”) with each FFN removed (line: {prob:.2f} with all)").format(
            row=r.row + 1, piece=piece, prob=r.intact.prob), size="8.5pt", color=self.theme.foreground)

    def _place_removal_texts(self, r: FfnRemoval, keys: list[str]) -> None:
        """Over each bar, the top token when it differs from the intact model's."""
        while len(self.removal_texts) < len(keys):
            text = pg.TextItem(anchor=(0.5, 1.0))
            self.removal_plot.addItem(text)
            self.removal_texts.append(text)
        for i, text in enumerate(self.removal_texts):
            p = r.removed[keys[i]] if i < len(keys) else None
            changed = p is not None and p.token_id != r.intact.token_id
            text.setText(f"“{display_piece(p.piece)}”" if changed else "")
            text.setColor(self.theme.foreground)
            if p is not None:
                text.setPos(float(i), p.intact_prob)

    def _apply_theme(self) -> None:
        for plot in (self.heatmap, self.gate_heatmap):
            plot.apply_theme(self.theme)
        for p in (self.top_plot, self.off_plot, self.unit_plot, self.removal_plot):
            apply_plot_theme(p, self.theme)
        for i, line in enumerate(self.off_lines.values()):
            c = self.theme.head_color(i)
            line.setPen(pg.mkPen(c, width=1.8))
            line.setSymbolBrush(c)
        c = self.theme.head_color(1)
        self.unit_pre.setPen(pen(c, 1.5, QtCore.Qt.PenStyle.DashLine))
        self.unit_pre.setSymbol("s")
        self.unit_pre.setSymbolSize(5)
        self.unit_pre.setSymbolBrush(c)
        self.unit_pre.setSymbolPen(None)
        self.intact_line.setPen(pen(self.theme.muted, 1.2, QtCore.Qt.PenStyle.DashLine))

    def _on_theme_changed(self) -> None:
        self._apply_theme()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        for plot in (self.heatmap, self.gate_heatmap):
            plot.set_colormap(self.colormap())

    def _on_layer_changed(self) -> None:
        key = self.layer_combo.currentData()
        if key:
            stack, _, layer = str(key).partition(":")
            self.select(stack, int(layer))
            self.chose.emit({"kind": stack, "layer": int(layer)})

    def _on_unit_changed(self) -> None:
        self._refresh()

    def _on_cell_clicked(self, row: int, col: int) -> None:
        self.select(query=row, unit=col)
        self.chose.emit({"query": row})

    def _on_hovered(self, info: HoverInfo | None) -> None:
        if info is None:
            self.readout.setText(" ")
            return
        self.readout.setText(translate("ffn", "“{piece}”, unit {unit}: {value:.4f}").format(piece=display_piece(info.row_label), unit=info.col, value=info.value))

    # figure protocol ----------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("ffn", "FFN · {layer}").format(layer=stack_layer_text(self._stack, self._layer))

    def figure_data(self) -> FigureData:
        f = self.current()
        if f is None:
            raise ValueError("the view shows no data yet")
        units, values = top_units(f.hidden[self.query()], TOP_UNITS)
        extras = {f"off_share_{s}": self.given.off_shares(s) for s in self.given.stacks()}
        extras.update(top_units=units, top_activations=values, off_share_per_token=f.off_per_token(self.given.activation))
        extras.update(unit=np.array(self.unit()), unit_activation=f.hidden[:, self.unit()])
        if f.gate is not None:
            extras.update(gate=f.gate, unit_gate=f.gate[:, self.unit()])
        extras.update(self._role_extras(f))
        return FigureData(self.figure_title(), ("token", "unit"), {"hidden": f.hidden}, {"token": f.pieces}, extras)

    def _role_extras(self, f: FfnLayer) -> dict[str, np.ndarray]:
        """The FFN's role, where computed: pre-activations, FFN(x_i) alone and the pass's output,
        and the removals (each FFN and ``all``: the top token, its probability, P(intact top), greedy)."""
        out = {}
        if f.alone is not None:
            out.update(pre_activation=f.pre, unit_pre_activation=f.pre[:, self.unit()], ffn_output=f.output, ffn_alone=f.alone,
                       positionwise_max_abs_diff=np.array(f.positionwise_error))
        r = self.removal()
        if r is not None:
            keys = list(r.removed)
            out.update(removal_row=np.array(r.row), removed=np.array(keys), intact_top=np.array(r.intact.piece),
                       intact_prob=np.array(r.intact.prob), removed_top=np.array([r.removed[k].piece for k in keys]),
                       removed_top_prob=np.array([r.removed[k].prob for k in keys]),
                       removed_intact_prob=np.array([r.removed[k].intact_prob for k in keys]),
                       translation=np.array(r.translation), removed_translation=np.array([r.translations[k] for k in keys]))
        return out

    def transient_items(self):
        return [self.heatmap.hover_marker, self.gate_heatmap.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
def ffn_data(session: Session, choice: ViewChoice) -> Analysis | None:
    """The FFN activations the session's decoding recorded and the FFN's role, which runs the
    model (each position alone; each FFN removed at the current row): an analysis for a worker."""
    if session.bundle is None or session.current is None:
        return None
    b = session.bundle
    return Analysis(ffn_roles_for, (session.frames.frozen(), b.model, b.src_tokenizer, b.tgt_tokenizer, session.current_row()))


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("ffn_layer", "ffn_off", "ffn_token", "ffn_active")


def tour_measures(view: QtFfnView, ask: TourAsk) -> dict[str, Any]:
    """The layer shown, its share of hidden units at 0, the selected token and its active units."""
    f, q = view.current(), view.query()
    if f is None:
        return {}
    return {"ffn_layer": f.layer + 1, "ffn_off": view.off_share(), "ffn_token": display_piece(f.pieces[q]),
            "ffn_active": int(np.count_nonzero(f.hidden[q] > 0))}


def region_hidden(view: QtFfnView, ask: TourAsk) -> Region | None:
    """The hidden units' heatmap."""
    return items_region(view.heatmap)


SPEC = ViewSpec("ffn", QtFfnView, QT_TRANSLATE_NOOP("views", "FFN"), "bottom", ("kind", "layer", "query"), data=ffn_data,
                kinds=("encoder", "decoder"), stack_view=True, measures=tour_measures, measure_names=TOUR_MEASURES,
                regions={"ffn-hidden": region_hidden})
