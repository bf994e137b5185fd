"""A training run's history as the Train panel records it, and the bar that scrubs through it.

``TrainHistory`` holds what the trainer's events reported (the logged steps, one row of metrics
per evaluation, the probe snapshots and the normalization statistics); ``SnapshotBar`` is the row
below the figure that chooses the snapshot, the decoder layer and the norm site the figure shows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.qt.core_text import kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.train.figure import TrainingFigure

#: A norm site in a layer, as the snapshot bar names it: ``decoder layer 2 · norm2``.
LAYER_SITE = QT_TRANSLATE_NOOP("history", "{stack} layer {layer} · {norm}")


def site_label(site: str) -> str:
    """``decoder.layers.1.norm2`` → ``decoder layer 2 · norm2``."""
    parts = site.split(".")
    if len(parts) == 4 and parts[1] == "layers" and parts[2].isdigit():
        return translate("history", LAYER_SITE).format(stack=kind_name(parts[0]), layer=int(parts[2]) + 1, norm=parts[3])
    return " · ".join(kind_name(p) for p in parts).replace("_", " ")


def probe_caption(epoch: int, layer: int, source: str, hypothesis: str, step: int | None = None) -> tuple[str, str]:
    """The probe figure's title and subtitle for a snapshot: its epoch (and ``step``, when given),
    the decoder ``layer`` (0-based) shown, the source and the model's output then."""
    if step is None:
        title = translate("history", "Probe · epoch {epoch}").format(epoch=epoch)
    else:
        title = translate("history", "Probe · epoch {epoch} · step {step}").format(epoch=epoch, step=step)
    output = hypothesis or translate("history", "(nothing yet)")
    return title, translate("history", "cross-attn layer {layer}: {source} → {output}").format(layer=layer + 1, source=source, output=output)


class TrainHistory:
    """What one run has reported so far (the panel appends to it on the GUI thread)."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.steps: list[tuple[int, float, float]] = []  # step, loss, lr
        self.evals: list[dict[str, Any]] = []  # step, epoch, metrics
        self.snapshots: list[dict[str, Any]] = []  # epoch, step, probes (ProbeSnapshot list)
        self.norm_history: list[tuple[int, dict[str, dict[str, float]]]] = []  # step, site -> summary
        self.total_steps = 0
        self.last_checkpoint = ""

    def add_step(self, event: Any) -> None:
        """A ``StepEvent``."""
        self.steps.append((int(event.step), float(event.loss), float(event.lr)))

    def add_eval(self, event: Any, norms: dict[str, dict[str, float]]) -> None:
        """An ``EvalEvent`` and its summarized norm statistics (``summarize_norm_stats``)."""
        epoch, step = int(event.epoch) + 1, int(event.step)
        self.evals.append({"step": step, "epoch": epoch, **{k: float(v) for k, v in event.metrics.items()}})
        self.snapshots.append({"epoch": epoch, "step": step, "probes": tuple(event.probes)})
        self.norm_history.append((step, norms))

    def steps_array(self) -> np.ndarray:
        """The logged steps ``[n, 3]``: step, loss, lr."""
        return np.asarray(self.steps, float).reshape(-1, 3)

    def probe_layers(self) -> list[int]:
        """The decoder layers of the latest snapshot's probe (none before the first evaluation)."""
        probes = self.snapshots[-1]["probes"] if self.snapshots else ()
        return sorted(probes[0].cross_attention) if probes else []

    def probe_matrix(self, index: int, layer: int | None = None) -> np.ndarray | None:
        """The probe's cross-attention (mean over heads) ``[out, src]`` of snapshot ``index`` in
        decoder ``layer`` (the last layer when ``layer`` is None or not there)."""
        if not self.snapshots:
            return None
        probes = self.snapshots[index]["probes"]
        if not probes:
            return None
        att = probes[0].cross_attention
        if layer is None or layer not in att:
            layer = max(att)
        return np.asarray(att[layer]).mean(0)

    def norm_sites(self) -> list[str]:
        """The norm sites of the latest evaluation."""
        return list(self.norm_history[-1][1]) if self.norm_history else []

    def norm_curves(self, site: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, str]]:
        """(steps, a, b, names) of the statistics plotted for ``site``: a LayerNorm site's token std and
        |mean|, a BatchNorm site's running and batch std."""
        steps = np.asarray([s for s, _ in self.norm_history], float)
        rows = [h.get(site, {}) for _, h in self.norm_history]
        if rows and "token_std" in rows[-1]:
            keys, names = ("token_std", "token_abs_mean"), (translate("history", "std of a token"), translate("history", "|mean| of a token"))
        else:
            keys, names = ("running_std", "batch_std"), (translate("history", "running std"), translate("history", "batch std"))
        a = np.asarray([r.get(keys[0], math.nan) for r in rows], float)
        b = np.asarray([r.get(keys[1], math.nan) for r in rows], float)
        return steps, a, b, names


class SnapshotBar(QtWidgets.QWidget):
    """The row below the figure: the snapshot slider, the probe's decoder layer and the norm site.
    Shows what it chooses of ``history`` in ``figure``; ``refresh()`` after each evaluation."""

    def __init__(self, history: TrainHistory, figure: TrainingFigure, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.figure = figure
        self.scrub_label = QtWidgets.QLabel(translate("history", "Snapshot"), objectName="trainScrubLabel")
        self.scrub = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal, objectName="trainScrubSlider")
        self.scrub.setToolTip(translate("history", "Scrub through the probe sentence's cross-attention, epoch by epoch"))
        self.probe_layer = QtWidgets.QComboBox(objectName="trainProbeLayerCombo")
        self.probe_layer.setToolTip(translate("history", "Which decoder layer's cross-attention (mean over heads)"))
        self.norm_site = QtWidgets.QComboBox(objectName="trainNormSiteCombo")
        self.norm_site.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.norm_site.setToolTip(translate("history", "Which normalization's statistics are plotted over training"))
        row = QtWidgets.QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.scrub_label)
        row.addWidget(self.scrub, 1)
        row.addWidget(QtWidgets.QLabel(translate("history", "Layer")))
        row.addWidget(self.probe_layer)
        row.addSpacing(12)
        row.addWidget(QtWidgets.QLabel(translate("history", "Norm")))
        row.addWidget(self.norm_site)
        self.reset()
        self.scrub.valueChanged.connect(self.show_snapshot)
        self.probe_layer.currentIndexChanged.connect(lambda _i: self.show_snapshot(self.scrub.value()))
        self.norm_site.currentIndexChanged.connect(lambda _i: self._update_norm_curves())

    def reset(self) -> None:
        """Nothing to scrub (a new run)."""
        self.scrub.setEnabled(False)
        self.scrub.setRange(0, 0)

    def refresh(self) -> None:
        """Follow the history after an evaluation: the slider's range, the layers, the norm sites, the figure."""
        self._update_snapshot_controls()
        self._update_norm_sites()
        self._update_norm_curves()

    def _update_snapshot_controls(self) -> None:
        n = len(self.history.snapshots)
        follow = self.scrub.value() >= self.scrub.maximum()
        blocked = self.scrub.blockSignals(True)
        self.scrub.setRange(0, max(0, n - 1))
        if follow:
            self.scrub.setValue(n - 1)
        self.scrub.blockSignals(blocked)
        self.scrub.setEnabled(n > 1)
        layers = self.history.probe_layers()
        if self.probe_layer.count() != len(layers):
            blocked = self.probe_layer.blockSignals(True)
            self.probe_layer.clear()
            for i in layers:
                self.probe_layer.addItem(str(i + 1), i)
            self.probe_layer.setCurrentIndex(len(layers) - 1)
            self.probe_layer.blockSignals(blocked)
        self.show_snapshot(self.scrub.value())

    def show_snapshot(self, index: int) -> None:
        """Show snapshot ``index`` of the probe in the figure (in the chosen decoder layer)."""
        snapshots = self.history.snapshots
        if not snapshots:
            return
        index = min(max(0, index), len(snapshots) - 1)
        snap = snapshots[index]
        self.scrub_label.setText(translate("history", "Snapshot: epoch {epoch} of {count}").format(epoch=snap["epoch"], count=len(snapshots)))
        if not snap["probes"]:
            return
        p = snap["probes"][0]
        layer = self.probe_layer.currentData()
        shown = layer if layer is not None else max(p.cross_attention)
        self.figure.show_probe(self.history.probe_matrix(index, layer), tuple(p.out_pieces), tuple(p.src_pieces),
                               *probe_caption(snap["epoch"], shown, p.source, p.hypothesis))

    def _update_norm_sites(self) -> None:
        sites = self.history.norm_sites()
        existing = [self.norm_site.itemData(i) for i in range(self.norm_site.count())]
        if not self.history.norm_history or existing == sites:
            return
        blocked = self.norm_site.blockSignals(True)
        current = self.norm_site.currentData()
        self.norm_site.clear()
        for s in sites:
            self.norm_site.addItem(site_label(s), s)
        i = self.norm_site.findData(current)
        self.norm_site.setCurrentIndex(i if i >= 0 else 0)
        self.norm_site.blockSignals(blocked)

    def _update_norm_curves(self) -> None:
        site = self.norm_site.currentData()
        if not self.history.norm_history or site is None:
            return
        steps, a, b, names = self.history.norm_curves(site)
        self.figure.show_norm_curves(steps, a, b, names, site_label(site))  # short: the plot may be 190 px wide
