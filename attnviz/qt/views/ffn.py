"""The FFN of one layer: FFN(x) = max(0, x W₁ + b₁) W₂ + b₂, applied to each token on its own.

Top: the hidden activations max(0, x W₁ + b₁) of the chosen layer as a heatmap (tokens × d_ff
units; the selected token's row outlined). Below: the units most active for the selected token,
and the share of units that are off in every layer of both stacks (ReLU: exact zeros; a GELU or
SiLU model has none, so there it is the share ≤ 0, and the labels say so).

The view renders :class:`attnviz.core.analysis.ffn.FfnData`; click a row to select its token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from attnviz.core.analysis.ffn import ACTIVATION_NAMES, FfnData, FfnLayer, ffn_data_for, off_label, off_share, stack_of, top_units
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.pieces import display_piece
from attnviz.qt.views.base import FigureViewBase, make_combo, set_combo_items
from attnviz.qt.views.small_plots import apply_plot_theme, legend_title, series, set_ticks, small_plot
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

TOP_UNITS = 10
UNIT_TICK_EVERY = 64

MIN_HEIGHT = 560  # px of canvas before the dock scrolls

class QtFfnView(FigureViewBase):
    """``set_data(FfnData)``; ``select(stack, layer, query)`` picks the layer and the token (0-based).
    ``chose({kind, layer})`` and ``chose({query})`` when the user picks them in the view."""


    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme, title_span=2)
        self.canvas.setMinimumHeight(MIN_HEIGHT)  # below it the figure scrolls (a short dock)
        self._scroll_canvas()
        self._data: FfnData | None = None
        self._stack, self._layer, self._query = "encoder", 0, None
        self.layer_combo = self._add_control("Layer", make_combo("ffnLayerCombo", "Which layer's FFN"))
        self.controls.addStretch(1)
        self.layer_combo.currentIndexChanged.connect(self._on_layer_changed)
        ci = self.canvas.ci
        self.heatmap = HeatmapPlot(self.theme, colorbar=True, colorbar_label="activation", annotate=False, masked=False,
                                   label_point_size=8.5)
        self.heatmap.set_axis_titles("token", "hidden unit (d_ff)")
        self.heatmap.sigCellClicked.connect(self._on_cell_clicked)
        self.heatmap.sigHovered.connect(self._on_hovered)
        ci.addItem(self.heatmap, row=1, col=0, colspan=2)
        self.top_plot = small_plot("unit", "value")
        self.top_bars = pg.BarGraphItem(x=[], height=[], width=0.7)
        self.top_plot.addItem(self.top_bars)
        ci.addItem(self.top_plot, row=2, col=0)
        self.off_plot = small_plot("layer", "share off")
        self.off_lines = {s: series(self.off_plot, self.theme, i, s) for i, s in enumerate(("encoder", "decoder"))}
        ci.addItem(self.off_plot, row=2, col=1)
        ci.layout.setRowStretchFactor(1, 3)
        ci.layout.setRowStretchFactor(2, 2)
        self._apply_theme()
        self._refresh()

    # data and selection ----------------------------------------------------------------------
    def set_data(self, data: FfnData) -> None:
        self._data = data
        if data.get(self._stack, self._layer) is None and data.layers:
            self._stack, self._layer = data.layers[0].stack, data.layers[0].layer
        self._update_controls()
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """The selected kind's stack (cross-attention sits in the decoder), layer and token."""
        self.select(choice.kind, choice.layer, choice.query)

    def select(self, kind: str | None = None, layer: int | None = None, query: int | None = None) -> None:
        """Show the FFN of ``kind``'s stack (cross: the decoder), ``layer``, token ``query``; ``None`` keeps."""
        stack = stack_of(kind) if kind is not None else self._stack
        layer = self._layer if layer is None else layer
        if self._data is not None and self._data.get(stack, layer) is not None:
            self._stack, self._layer = stack, layer
        if query is not None:
            self._query = query
        self._update_controls()
        self._refresh()

    def has_data(self) -> bool:
        return self._data is not None and bool(self._data.layers)

    def current(self) -> FfnLayer | None:
        return None if self._data is None else self._data.get(self._stack, self._layer)

    def query(self) -> int:
        """The selected token (the last one unless chosen)."""
        f = self.current()
        n = len(f.pieces) if f is not None else 1
        return n - 1 if self._query is None or not 0 <= self._query < n else self._query

    def off_share(self) -> float:
        f = self.current()
        return off_share(f.hidden, self._data.activation) if f is not None else float("nan")

    # drawing ------------------------------------------------------------------------------------
    def _update_controls(self) -> None:
        items = [] if self._data is None else [(f"{f.stack.capitalize()} layer {f.layer + 1}", f"{f.stack}:{f.layer}") for f in self._data.layers]
        set_combo_items(self.layer_combo, items, f"{self._stack}:{self._layer}")
        self.layer_combo.setEnabled(bool(items))

    def _refresh(self) -> None:
        f = self.current()
        for item in (self.heatmap, self.top_plot, self.off_plot):
            item.setVisible(f is not None)
        if f is None:
            self.title.set_title("FFN", "FFN(x) = max(0, xW₁ + b₁)W₂ + b₂, applied to each token on its own")
            return
        act = self._data.activation
        name = "max(0, xW₁ + b₁)" if act == "relu" else f"{ACTIVATION_NAMES.get(act, act)}(xW₁ + b₁)"
        self.title.set_title(
            f"FFN · {f.stack} layer {f.layer + 1} · {name} · {len(f.pieces)} tokens × {f.hidden.shape[1]} units",
            f"FFN(x) = {name}W₂ + b₂, per token · {off_label(act)}: {self.off_share():.1%} in this layer",
        )
        d_ff = f.hidden.shape[1]
        cols = [str(i) if i % UNIT_TICK_EVERY == 0 else "" for i in range(d_ff)]
        m = float(np.max(np.abs(f.hidden))) if f.hidden.size else 1.0
        lo = 0.0 if act == "relu" else -m
        self.heatmap.set_matrix(f.hidden, f.pieces, cols, highlight_row=self.query(), levels=(lo, m or 1.0))
        self._draw_top(f)
        self._draw_off()

    def _draw_top(self, f: FfnLayer) -> None:
        units, values = top_units(f.hidden[self.query()], TOP_UNITS)
        x = np.arange(len(units), dtype=float)
        self.top_bars.setOpts(x=x, height=values, width=0.7, brush=self.theme.head_color(0), pen=None)
        set_ticks(self.top_plot, [str(int(u)) for u in units])
        self.top_plot.setXRange(-0.6, max(len(units), 1) - 0.4, padding=0)
        self.top_plot.enableAutoRange(axis="y")
        piece = display_piece(f.pieces[self.query()])
        self.top_plot.setTitle(f"top {len(units)} units for “{piece}”", size="8.5pt", color=self.theme.foreground)

    def _draw_off(self) -> None:
        names, most = [], 1
        for i, (stack, line) in enumerate(self.off_lines.items()):
            shares = self._data.off_shares(stack)
            line.setData(np.arange(1, len(shares) + 1, dtype=float), shares)
            if len(shares):
                names.append((i, stack))
                most = max(most, len(shares))
        self.off_plot.getAxis("bottom").setTicks([[(i, str(i)) for i in range(1, most + 1)]])
        word = "zeros" if self._data.activation == "relu" else "units ≤ 0"
        legend_title(self.off_plot, f"share of {word}", names, self.theme)
        self.off_plot.setYRange(0.0, 1.0, padding=0.05)
        self.off_plot.setXRange(0.7, most + 0.3, padding=0)

    def _apply_theme(self) -> None:
        self.heatmap.apply_theme(self.theme)
        for p in (self.top_plot, self.off_plot):
            apply_plot_theme(p, self.theme)
        for i, line in enumerate(self.off_lines.values()):
            c = self.theme.head_color(i)
            line.setPen(pg.mkPen(c, width=1.8))
            line.setSymbolBrush(c)

    def _on_theme_changed(self) -> None:
        self._apply_theme()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        self.heatmap.set_colormap(self.colormap())

    def _on_layer_changed(self) -> None:
        key = self.layer_combo.currentData()
        if key:
            stack, _, layer = str(key).partition(":")
            self.select(stack, int(layer))
            self.chose.emit({"kind": stack, "layer": int(layer)})

    def _on_cell_clicked(self, row: int, col: int) -> None:
        self.select(query=row)
        self.chose.emit({"query": row})

    def _on_hovered(self, info: HoverInfo | None) -> None:
        if info is None:
            self.readout.setText(" ")
            return
        self.readout.setText(f"“{display_piece(info.row_label)}”, unit {info.col}: {info.value:.4f}")

    # figure protocol ----------------------------------------------------------------------------
    def figure_title(self) -> str:
        return f"FFN · {self._stack} layer {self._layer + 1}"

    def figure_data(self) -> FigureData:
        f = self.current()
        if f is None:
            raise ValueError("the view shows no data yet")
        units, values = top_units(f.hidden[self.query()], TOP_UNITS)
        extras = {f"off_share_{s}": self._data.off_shares(s) for s in self._data.stacks()}
        extras.update(top_units=units, top_activations=values, off_share_per_token=f.off_per_token(self._data.activation))
        return FigureData(self.figure_title(), ("token", "unit"), {"hidden": f.hidden}, {"token": f.pieces}, extras)

    def transient_items(self):
        return [self.heatmap.hover_marker]



# -- the registry's entry ----------------------------------------------------------------------
def ffn_data(session: Session, choice: ViewChoice) -> FfnData | None:
    """The FFN activations the session's decoding recorded (no extra pass)."""
    if session.bundle is None or session.current is None:
        return None
    return ffn_data_for(session.current, session.bundle.config)


SPEC = ViewSpec("ffn", QtFfnView, "FFN", "bottom", ("kind", "layer", "query"), data=ffn_data,
                kinds=("encoder", "decoder"), stack_view=True)
