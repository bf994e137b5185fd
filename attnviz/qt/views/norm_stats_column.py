"""One normalization site's column in the normalization-statistics view: the means, the spreads
and the histogram of the activations before and after the norm (``_SiteColumn``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from attnviz.core.analysis.norms import NormSiteData, histogram, site_title
from attnviz.qt.widgets.colormaps import Theme, ui_font
from attnviz.qt.widgets.title_item import TitleItem
from attnviz.qt.widgets.token_axis import TokenAxis

if TYPE_CHECKING:
    from attnviz.qt.views.norm_stats import QtNormStatsView


def _pen(color: Any, width: float = 1.6, style: QtCore.Qt.PenStyle = QtCore.Qt.PenStyle.SolidLine) -> QtGui.QPen:
    pen = pg.mkPen(color, width=width, style=style)
    pen.setCosmetic(True)
    return pen


def _translucent(color: QtGui.QColor, alpha: int = 70) -> QtGui.QColor:
    c = QtGui.QColor(color)
    c.setAlpha(alpha)
    return c


class _SiteColumn:
    """The three plots of one site: means, spreads, histogram (built once, updated in place)."""

    def __init__(self, view: "QtNormStatsView", layout: pg.GraphicsLayout, col: int):
        th = view.theme
        self.title = TitleItem(th)
        layout.addItem(self.title, row=0, col=col)
        self.mean_axis = TokenAxis("bottom", th, 8.0)
        self.std_axis = TokenAxis("bottom", th, 8.0)
        self.mean_plot = view._small_plot({"bottom": self.mean_axis})
        self.std_plot = view._small_plot({"bottom": self.std_axis})
        self.hist_plot = view._small_plot({})
        for r, p in enumerate((self.mean_plot, self.std_plot, self.hist_plot), start=1):
            layout.addItem(p, row=r, col=col)
        c0, c1 = th.head_color(0), th.head_color(1)
        self.mean_a = self.mean_plot.plot([], [], pen=_pen(c0), symbol="o", symbolSize=4, symbolBrush=c0, symbolPen=None, name="a")
        self.mean_b = self.mean_plot.plot([], [], pen=_pen(c1, 1.6, QtCore.Qt.PenStyle.DashLine), symbol="s", symbolSize=4,
                                          symbolBrush=c1, symbolPen=None, name="b")
        self.std_a = self.std_plot.plot([], [], pen=_pen(c0), symbol="o", symbolSize=4, symbolBrush=c0, symbolPen=None, name="a")
        self.std_b = self.std_plot.plot([], [], pen=_pen(c1, 1.6, QtCore.Qt.PenStyle.DashLine), symbol="s", symbolSize=4,
                                        symbolBrush=c1, symbolPen=None, name="b")
        self.hist_before = self.hist_plot.plot([], [], stepMode="center", fillLevel=0, pen=_pen(c0), brush=_translucent(c0), name="before")
        self.hist_after = self.hist_plot.plot([], [], stepMode="center", fillLevel=0, pen=_pen(c1), brush=_translucent(c1), name="after")
        self.hist_plot.setLabel("bottom", "activation value")
        self.items = (self.title, self.mean_plot, self.std_plot, self.hist_plot)
        self.site: NormSiteData | None = None
        self._axis_kind = "layer"

    def _use_axes(self, kind: str, theme: Theme) -> None:
        """Tokens along x for LayerNorm (piece labels), feature indices for BatchNorm (a numeric axis)."""
        if kind == self._axis_kind:
            return
        for attr, plot in (("mean_axis", self.mean_plot), ("std_axis", self.std_plot)):
            if kind == "layer":
                axis: pg.AxisItem = TokenAxis("bottom", theme, 8.0)
            else:
                axis = pg.AxisItem("bottom")
                axis.setStyle(tickFont=ui_font(7.5))
                axis.enableAutoSIPrefix(False)
                axis.setPen(_pen(theme.muted, 1.0))
                axis.setTextPen(_pen(theme.foreground, 1.0))
            plot.setAxisItems({"bottom": axis})
            setattr(self, attr, axis)
        self._axis_kind = kind

    def set_visible(self, visible: bool) -> None:
        for item in self.items:
            item.setVisible(visible)

    @staticmethod
    def _titled(plot: pg.PlotItem, text: str, names: tuple[str, str], theme: Theme) -> None:
        """A plot title with the two series' colours as swatches (no legend over the data)."""
        sw = [f"<span style='color:{theme.head_color(i).name()}'>{'●' if i == 0 else '■'}</span> {n}" for i, n in enumerate(names)]
        plot.setTitle(f"{text}: {sw[0]}  {sw[1]}", size="8.5pt", color=theme.foreground)

    def show(self, site: NormSiteData, placement: str, theme: Theme) -> None:
        self.site = site
        st = site.stats
        title, formula = site_title(site, placement)
        self.title.set_title(title, formula)
        self._use_axes(site.kind, theme)
        if site.kind == "layer":
            x = np.arange(len(site.pieces), dtype=float)
            self.mean_a.setData(x, np.asarray(st.input_mean, float))
            self.mean_b.setData(x, np.asarray(st.output_mean, float))
            self.std_a.setData(x, np.asarray(st.input_std, float))
            self.std_b.setData(x, np.asarray(st.output_std, float))
            self.mean_axis.set_labels(site.pieces)
            self.std_axis.set_labels(site.pieces)
            self._titled(self.mean_plot, "per-token mean of the features", ("before", "after"), theme)
            self._titled(self.std_plot, "per-token std of the features", ("before", "after"), theme)
            for p in (self.mean_plot, self.std_plot):
                p.getAxis("bottom").setLabel(None)
            self.mean_plot.setXRange(-0.5, len(x) - 0.5, padding=0)
            self.std_plot.setXRange(-0.5, len(x) - 0.5, padding=0)
        else:
            d = np.arange(site.x_in.shape[1], dtype=float)
            self.mean_a.setData(d, np.asarray(st.batch_mean, float))
            self.mean_b.setData(d, np.asarray(st.running_mean, float))
            self.std_a.setData(d, np.asarray(st.batch_var, float))
            self.std_b.setData(d, np.asarray(st.running_var, float))
            self._titled(self.mean_plot, f"per-feature mean ({len(site.pieces)} tokens)", ("batch", "running"), theme)
            self._titled(self.std_plot, "per-feature variance", ("batch", "running"), theme)
            self.mean_plot.setXRange(-0.5, len(d) - 0.5, padding=0)
            self.std_plot.setXRange(-0.5, len(d) - 0.5, padding=0)
        for p in (self.mean_plot, self.std_plot):
            p.enableAutoRange(axis="y")
        edges, before, after = histogram(site.x_in, site.x_out)
        self.hist_before.setData(edges, before.astype(float))
        self.hist_after.setData(edges, after.astype(float))
        self._titled(self.hist_plot, "histogram of the activations", ("before", "after"), theme)
        self.hist_plot.enableAutoRange()
