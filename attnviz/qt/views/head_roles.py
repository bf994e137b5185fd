"""Head roles: what each attention head does over many held-out sentence pairs, one measure at a
time — mean entropy, the mass on EOS, on the start token and on punctuation (attention sinks),
the diagonal and previous-token scores, the HSK alignment score.

A heatmap with one row per kind and layer and one column per head; the measure is the view's
choice (``headMeasure``), the number of pairs too (``headSentences``). Click a head to select it
in every linked view. The pairs are the held-out (test) pairs of the model's own data; a model
that names none is measured on the sentence on screen.

The run goes through :class:`~attnviz.qt.analyses.Analysis` a chunk of pairs at a time
(:func:`attnviz.core.analysis.head_roles.advance`, ``CHUNK`` pairs, a worker each): an analysis
cannot report progress or be stopped while it runs, so the view draws each chunk's result as it
comes (the bar shows how many pairs are done) and asks for the next one (``optionsChanged``);
*Stop* (``headRolesStop``, an option) keeps it from asking, and a newer request supersedes the
chunk in flight. Run inline (``attnviz export``), it does every chunk. The view renders
:class:`attnviz.core.analysis.head_roles.CorpusRun`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.attribution import after_prompt
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.head_roles import CHUNK, DEFAULT_PAIRS, MEASURES, CorpusRequest, CorpusRun, advance, applies
from attnviz.core.data.corpora import Pair
from attnviz.core.data.examples import data_spec
from attnviz.core.model.sites import KINDS, n_layers
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import head_text, kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo

if TYPE_CHECKING:
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 280  # px of canvas before the dock scrolls
MAX_SENTENCES = 3000  # the spin box's top: the default model's test split
CHUNK_PAIRS = CHUNK  # pairs one analysis measures
MEASURE_TEXT = {  # shown as translate("head_roles", text)
    "entropy": QT_TRANSLATE_NOOP("head_roles", "entropy (nats)"),
    "eos": QT_TRANSLATE_NOOP("head_roles", "mass on EOS"),
    "start": QT_TRANSLATE_NOOP("head_roles", "mass on the start token"),
    "punctuation": QT_TRANSLATE_NOOP("head_roles", "mass on punctuation"),
    "diagonal": QT_TRANSLATE_NOOP("head_roles", "diagonal"),
    "previous": QT_TRANSLATE_NOOP("head_roles", "previous token"),
    "alignment": QT_TRANSLATE_NOOP("head_roles", "HSK alignment"),
    "importance": QT_TRANSLATE_NOOP("head_roles", "importance (Δ log P per token)"),
}
MEASURE_TIPS = {
    "entropy": QT_TRANSLATE_NOOP("head_roles", "Mean entropy of a query row's attention over its keys (uniform over n keys: log n)"),
    "eos": QT_TRANSLATE_NOOP("head_roles", "Mean attention on keys that are EOS"),
    "start": QT_TRANSLATE_NOOP("head_roles", "Mean attention on keys that are the start token (SOS)"),
    "punctuation": QT_TRANSLATE_NOOP("head_roles", "Mean attention on punctuation keys"),
    "diagonal": QT_TRANSLATE_NOOP("head_roles", "Self-attention: mass on the query's own position; cross-attention: on the source "
                                                "position at the same relative place"),
    "previous": QT_TRANSLATE_NOOP("head_roles", "Self-attention: mass on the position just before the query"),
    "alignment": QT_TRANSLATE_NOOP("head_roles", "Cross-attention: how often the row that predicts a word attends most to its "
                                                 "source word (pairs with HSK glosses)"),
    "importance": QT_TRANSLATE_NOOP("head_roles", "The change in log P of each pair's reference, per token, with the head alone set to zero "
                                                  "(negative: the head helps); a mean over the pairs"),
}


def format_measure(v: float) -> str:
    """A cell's value: two decimals; nothing where the measure does not apply (NaN)."""
    return f"{v:.2f}" if np.isfinite(v) else ""


class QtHeadRolesView(FigureViewBase):
    """``set_data(CorpusRun | None)``; ``chose({"kind", "layer", "head", "mode"})`` when the user
    clicks a head; ``optionsChanged`` when the number of pairs or *Stop* changes, and after a chunk
    while the run is not complete (the next chunk is computed)."""

    given: CorpusRun | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._rows: list[tuple[str, int]] = []  # (kind, layer) of each heatmap row
        self._build_controls()
        self.heatmap = HeatmapPlot(self.theme, value_format=format_measure, colorbar_label=translate("head_roles", MEASURE_TEXT[MEASURES[0]]))
        self.heatmap.set_axis_titles(translate("head_roles", "kind and layer"), translate("head_roles", "head"))
        self.heatmap.sigHovered.connect(self._on_hovered)
        self.heatmap.sigCellClicked.connect(self._on_cell_clicked)
        self.canvas.ci.addItem(self.heatmap, row=1, col=0)
        self._next = QtCore.QTimer(self, singleShot=True, interval=0)  # asks for the next chunk on a later turn
        self._next.timeout.connect(self.optionsChanged.emit)
        self._refresh()

    def _build_controls(self) -> None:
        self.measure = self._add_control(translate("head_roles", "Measure:"), QtWidgets.QComboBox(objectName="headMeasure"))
        for m in MEASURES:
            self.measure.addItem(translate("head_roles", MEASURE_TEXT[m]), m)
            self.measure.setItemData(self.measure.count() - 1, translate("head_roles", MEASURE_TIPS[m]), QtCore.Qt.ItemDataRole.ToolTipRole)
        self.measure.currentIndexChanged.connect(self._refresh)
        self.sentences = self._add_control(translate("head_roles", "Pairs:"), QtWidgets.QSpinBox(
            objectName="headSentences", minimum=1, maximum=MAX_SENTENCES, singleStep=50, value=DEFAULT_PAIRS, keyboardTracking=False))
        self.sentences.setToolTip(translate("head_roles", "How many held-out sentence pairs the heads are measured on"))
        self.sentences.valueChanged.connect(self._on_sentences_changed)
        self.progress = QtWidgets.QProgressBar(objectName="headRolesProgress", minimum=0, maximum=1, textVisible=True)
        self.progress.setMaximumWidth(160)
        self.progress.setFormat(translate("head_roles", "%v of %m pairs"))
        self.controls.addWidget(self.progress)
        self.stop = QtWidgets.QPushButton(translate("head_roles", "Stop"), objectName="headRolesStop", checkable=True)
        self.stop.setToolTip(translate("head_roles", "Stop measuring after the pairs in hand; press again to go on"))
        self.stop.toggled.connect(self._on_stop_toggled)
        self.controls.addWidget(self.stop)
        self.controls.addStretch(1)

    # protocol ------------------------------------------------------------------------------------
    def render(self, run: CorpusRun | None) -> None:
        self._refresh()
        if run is not None and not run.complete and not self.stop.isChecked():
            self._next.start()  # the next chunk, once this one is drawn

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view shows every head."""

    def run(self) -> CorpusRun | None:
        return self.given

    def measure_name(self) -> str:
        return self.measure.currentData() or MEASURES[0]

    def select_measure(self, name: str) -> None:
        self.measure.setCurrentIndex(MEASURES.index(name))

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        run = self.given
        self.heatmap.setVisible(run is not None and run.done > 0)
        self._update_progress()
        if run is None or run.done == 0:
            self.title.set_title(translate("head_roles", "Head roles over a corpus"),
                                 translate("head_roles", "what each head does on average over many sentence pairs (measuring…)"))
            return
        name = self.measure_name()
        roles = run.roles
        self._rows = [(k, layer) for k in roles.kinds for layer in range(roles.sums[k][name].shape[0])]
        matrix = np.concatenate([roles.measure(k, name) for k in roles.kinds])
        finite = matrix[np.isfinite(matrix)]
        top = float(finite.max()) if name == "entropy" and finite.size else 1.0
        rows = [f"{kind_name(k)} {layer + 1}" for k, layer in self._rows]
        self.heatmap.set_matrix(matrix, rows, [str(h + 1) for h in range(matrix.shape[1])], levels=(0.0, max(top, 1e-6)))
        self.heatmap.colorbar.getAxis("left").setLabel(translate("head_roles", MEASURE_TEXT[name]))
        self.title.set_title(translate("head_roles", "Head roles · {measure} · mean over {n} pairs").format(
            measure=translate("head_roles", MEASURE_TEXT[name]), n=roles.sentences), self._subtitle(run))

    def _subtitle(self, run: CorpusRun) -> str:
        where = (translate("head_roles", "held-out pairs of the model's data") if run.origin == "held-out"
                 else translate("head_roles", "the sentence on screen (the model names no held-out data)"))
        grey = translate("head_roles", "grey: the measure does not apply to this kind") if any(
            not applies(k, self.measure_name()) for k in run.roles.kinds) else ""
        return " · ".join(t for t in (where, translate("head_roles", "padding left out"), grey,
                                      translate("head_roles", "click a head to select it")) if t)

    def _update_progress(self) -> None:
        run = self.given
        total = run.total if run is not None else self.sentences.value()
        self.progress.setMaximum(max(total, 1))
        self.progress.setValue(run.done if run is not None else 0)
        running = run is None or not run.complete
        self.progress.setVisible(running)
        self.stop.setVisible(running)
        self.stop.setText(translate("head_roles", "Go on") if self.stop.isChecked() else translate("head_roles", "Stop"))

    def _on_sentences_changed(self, _value: int) -> None:
        self.stop.setChecked(False)
        self.optionsChanged.emit()  # measured again on that many pairs

    def _on_stop_toggled(self, stopped: bool) -> None:
        self._next.stop()
        self._update_progress()
        self.optionsChanged.emit()  # stopped: the run as it stands; going on: its next chunk

    def _on_theme_changed(self) -> None:
        self.heatmap.apply_theme(self.theme)
        self._refresh()

    # the user's choices ----------------------------------------------------------------------------
    def _on_cell_clicked(self, row: int, col: int) -> None:
        if 0 <= row < len(self._rows):
            kind, layer = self._rows[row]
            self.chose.emit({"kind": kind, "layer": layer, "head": col, "mode": "head"})

    def _on_hovered(self, info: HoverInfo | None) -> None:
        run = self.given
        if info is None or run is None or not 0 <= info.row < len(self._rows):
            self.readout.setText(" ")
            return
        kind, layer = self._rows[info.row]
        name = self.measure_name()
        value = float(run.roles.measure(kind, name)[layer, info.col])
        n = run.roles.counts[kind][name]
        shown = translate("head_roles", "does not apply") if not applies(kind, name) else (f"{value:.3f}" if np.isfinite(value) else "—")
        self.readout.setText(translate("head_roles", "{head} · {measure}: {value} (over {n} rows)").format(
            head=head_text(kind, layer, info.col), measure=translate("head_roles", MEASURE_TEXT[name]), value=shown, n=n))

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("head_roles", "Head roles · {measure}").format(measure=translate("head_roles", MEASURE_TEXT[self.measure_name()]))

    def figure_data(self) -> FigureData:
        """Every measure as ``[kind, layer, head]`` (NaN where a kind has fewer layers or the measure does not apply)."""
        run = self.given
        if run is None or run.done == 0:
            raise ValueError("the view shows no data yet")
        roles = run.roles
        depth = max(roles.sums[k][MEASURES[0]].shape[0] for k in roles.kinds)
        heads = roles.sums[roles.kinds[0]][MEASURES[0]].shape[1]
        values = {}
        for m in MEASURES:
            a = np.full((len(roles.kinds), depth, heads), np.nan)
            for i, k in enumerate(roles.kinds):
                a[i, : roles.sums[k][m].shape[0]] = roles.measure(k, m)
            values[m] = a
        coords = {"kind": roles.kinds, "layer": tuple(str(i + 1) for i in range(depth)), "head": tuple(str(i + 1) for i in range(heads))}
        return FigureData(self.figure_title(), ("kind", "layer", "head"), values, coords, {"pairs": np.array(roles.sentences)})

    def transient_items(self):
        return [self.heatmap.hover_marker]


# -- the registry's entry ----------------------------------------------------------------------
@dataclass(frozen=True)
class ChunkedRun(Analysis):
    """``fn(state, *rest)`` measures one chunk: in the window each chunk is a worker of its own
    (the view asks for the next); run inline (``attnviz export``: no event loop) it does them all."""

    def run(self) -> Any:
        state = self.fn(*self.args)
        while not state.complete:
            state = self.fn(state, *self.args[1:])
        return self.done(state)


def _keep(held: dict, run: CorpusRun) -> CorpusRun:
    """The newest chunk's run, kept for the next request (in the UI thread)."""
    held["run"] = run
    return run


def sentence_pair(session: Session) -> Pair:
    """The sentence on screen and its typed target or, without one, what was decoded so far."""
    frozen, bundle = session.frames.frozen(), session.bundle
    target = session.target.strip()
    if not target and frozen is not None and frozen.output_ids:
        ids = [i for i in after_prompt(bundle.config, frozen.src_ids, frozen.output_ids) if i != bundle.config.eos_id]
        target = bundle.tgt_tokenizer.decode(ids)
    return Pair(session.source.strip(), target, "on screen")


def head_roles_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | CorpusRun | None:
    """The run on the model's held-out pairs (or the sentence on screen), one chunk at a time; the
    run as it stands when it is complete or stopped."""
    bundle = session.bundle
    if bundle is None or session.current is None or not any(n_layers(bundle.config, k) for k in KINDS):
        return None
    n = options.get("headSentences", DEFAULT_PAIRS)
    n = n if type(n) is int and 1 <= n <= MAX_SENTENCES else DEFAULT_PAIRS
    spec = data_spec(bundle.meta)
    fallback = () if spec is not None else (sentence_pair(session),)
    key = f"head-roles:{n}" if spec is not None else f"head-roles:on-screen:{fallback[0].src}\t{fallback[0].tgt}"
    held = session.frames.derive(key, scope="model", build=dict)
    run = held.get("run")
    if run is not None and (run.complete or options.get("headRolesStop") is True):
        return run
    state = run if run is not None else CorpusRequest(spec, n, fallback)
    return ChunkedRun(advance, (state, bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, CHUNK_PAIRS), finish=partial(_keep, held))


SPEC = ViewSpec("heads", QtHeadRolesView, QT_TRANSLATE_NOOP("views", "Head roles"), "bottom", (), data=head_roles_data, reads_options=True,
                depends_on=("source",),
                empty="no heads to measure: the model has no attention layers")
