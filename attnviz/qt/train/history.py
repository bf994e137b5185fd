"""The Train panel's view of a run's history: scrubbing through the probe snapshots (one per
evaluation) and choosing which normalization's statistics are plotted over training.

``TrainHistoryMixin`` is mixed into ``TrainPanel`` (``qt_train_panel``), which records the history
(``snapshots``, ``norm_history``) as the trainer's events arrive.
"""

from __future__ import annotations

import math

import numpy as np


def _site_label(site: str) -> str:
    """``decoder.layers.1.norm2`` → ``decoder layer 2 · norm2``."""
    parts = site.split(".")
    if len(parts) == 4 and parts[1] == "layers" and parts[2].isdigit():
        return f"{parts[0]} layer {int(parts[2]) + 1} · {parts[3]}"
    return site.replace(".", " · ").replace("_", " ")


class TrainHistoryMixin:
    """Probe snapshots and norm-statistic curves of ``TrainPanel`` (mixed into the panel)."""

    def _update_snapshot_controls(self) -> None:
        n = len(self.snapshots)
        follow = self.scrub.value() >= self.scrub.maximum()
        blocked = self.scrub.blockSignals(True)
        self.scrub.setRange(0, max(0, n - 1))
        if follow:
            self.scrub.setValue(n - 1)
        self.scrub.blockSignals(blocked)
        self.scrub.setEnabled(n > 1)
        probes = self.snapshots[-1]["probes"] if n else ()
        layers = sorted(probes[0].cross_attention) if probes else []
        if self.probe_layer.count() != len(layers):
            blocked = self.probe_layer.blockSignals(True)
            self.probe_layer.clear()
            for i in layers:
                self.probe_layer.addItem(str(i + 1), i)
            self.probe_layer.setCurrentIndex(len(layers) - 1)
            self.probe_layer.blockSignals(blocked)
        self._show_snapshot(self.scrub.value())

    def _on_scrub(self, index: int) -> None:
        self._show_snapshot(index)

    def probe_matrix(self, index: int | None = None, layer: int | None = None) -> np.ndarray | None:
        """The probe's cross-attention (mean over heads) ``[out, src]`` of snapshot ``index``."""
        if not self.snapshots:
            return None
        index = self.scrub.value() if index is None else index
        probes = self.snapshots[index]["probes"]
        if not probes:
            return None
        att = probes[0].cross_attention
        layer = self.probe_layer.currentData() if layer is None else layer
        if layer is None or layer not in att:
            layer = max(att)
        return np.asarray(att[layer]).mean(0)

    def _show_snapshot(self, index: int) -> None:
        if not self.snapshots:
            return
        index = min(max(0, index), len(self.snapshots) - 1)
        snap = self.snapshots[index]
        probes = snap["probes"]
        self.scrub_label.setText(f"Snapshot: epoch {snap['epoch']} of {len(self.snapshots)}")
        if not probes:
            return
        p = probes[0]
        layer = self.probe_layer.currentData()
        m = self.probe_matrix(index, layer)
        self.figure.show_probe(m, tuple(p.out_pieces), tuple(p.src_pieces),
                               f"Probe · epoch {snap['epoch']} · decoder layer {(layer if layer is not None else max(p.cross_attention)) + 1}",
                               f"{p.source} → {p.hypothesis or '(nothing yet)'}")

    def _update_norm_sites(self) -> None:
        if not self.norm_history:
            return
        sites = list(self.norm_history[-1][1])
        existing = [self.norm_site.itemData(i) for i in range(self.norm_site.count())]
        if existing != sites:
            blocked = self.norm_site.blockSignals(True)
            current = self.norm_site.currentData()
            self.norm_site.clear()
            for s in sites:
                self.norm_site.addItem(_site_label(s), s)
            i = self.norm_site.findData(current)
            self.norm_site.setCurrentIndex(i if i >= 0 else 0)
            self.norm_site.blockSignals(blocked)

    def norm_curves(self, site: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, str]]:
        """(steps, a, b, names) of the plotted norm statistics of ``site`` (the chosen one)."""
        site = site or self.norm_site.currentData()
        steps = np.asarray([s for s, _ in self.norm_history], float)
        rows = [h.get(site, {}) for _, h in self.norm_history]
        if rows and "token_std" in rows[-1]:
            keys, names = ("token_std", "token_abs_mean"), ("std of a token's features", "|mean| of a token's features")
        else:
            keys, names = ("running_std", "batch_std"), ("running std (eval)", "batch std (probe tokens)")
        a = np.asarray([r.get(keys[0], math.nan) for r in rows], float)
        b = np.asarray([r.get(keys[1], math.nan) for r in rows], float)
        return steps, a, b, names

    def _update_norm_curves(self) -> None:
        site = self.norm_site.currentData()
        if not self.norm_history or site is None:
            return
        steps, a, b, names = self.norm_curves(site)
        self.figure.show_norm_curves(steps, a, b, names, f"Entering {_site_label(site)} (probe tokens)")
