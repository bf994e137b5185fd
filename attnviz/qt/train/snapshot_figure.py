"""One training snapshot of a probe sentence on a figure of its own: the Train panel's probe cell
(:class:`~attnviz.qt.train.figure.ProbeCell`, the same drawing) as an exportable view, the frame
of an animation over a run's snapshots."""

from __future__ import annotations

import numpy as np
from PySide6 import QtWidgets

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.training.events import ProbeSnapshot
from attnviz.qt.i18n import translate
from attnviz.qt.train.figure import ProbeCell
from attnviz.qt.train.history import probe_caption
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.widgets.colormaps import Theme


class SnapshotFigure(FigureViewBase):
    """A probe sentence's cross-attention at one snapshot of a run (the last decoder layer, mean
    over heads), titled with the epoch, the step and the model's output then."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme, title_span=0)  # the cell carries its own title
        self.cell = ProbeCell(self.theme, self.colormap())
        self.canvas.addItem(self.cell, row=0, col=0)
        self._snapshot: ProbeSnapshot | None = None
        self._layer = 0

    def show_snapshot(self, epoch: int, step: int, snapshot: ProbeSnapshot) -> None:
        """Draw ``snapshot`` (taken at ``epoch``, ``step``) in its last decoder layer."""
        self._snapshot, self._layer = snapshot, max(snapshot.cross_attention)
        self.cell.title.set_title(*probe_caption(epoch, self._layer, snapshot.source, snapshot.hypothesis, step))
        self.cell.show_matrix(self.matrix(), snapshot.out_pieces, snapshot.src_pieces)

    def matrix(self) -> np.ndarray:
        """The weights shown ``[out, src]`` (mean over heads)."""
        if self._snapshot is None:
            raise ValueError(translate("snapshot_figure", "no snapshot shown"))
        return np.asarray(self._snapshot.cross_attention[self._layer]).mean(0)

    def _on_theme_changed(self) -> None:
        self.cell.apply_theme(self.theme)
        self.cell.heatmap.set_colormap(self.colormap())

    def _on_colormap_changed(self) -> None:
        self.cell.heatmap.set_colormap(self.colormap())

    def figure_title(self) -> str:
        return translate("snapshot_figure", "Probe sentence over training")

    def has_data(self) -> bool:
        return self._snapshot is not None

    def figure_data(self) -> FigureData:
        snap = self._snapshot
        if snap is None:
            raise ValueError(translate("snapshot_figure", "no snapshot shown"))
        return FigureData(self.figure_title(), ("query", "key"), {"weight": self.matrix()},
                          {"query": snap.out_pieces, "key": snap.src_pieces})
