"""Activation patching: which layer and position of the sentence on screen carry what makes
another sentence translate differently (猫吃鱼。 against 鱼吃猫。: where word order lives).

The other sentence (default: the sentence with its first and last characters swapped, as in the
word-order view) is run; each layer's output at one position is copied from its run into the run
of the sentence on screen, one cell at a time, and the map shows how much of the other sentence's
log P of one of its output tokens comes back: 0 (nothing), 1 (all of it). Above: the encoder
(its embeddings, then each layer; columns the source positions), below: the decoder (each
layer; columns the fed target positions). Click a cell to decode the sentence on screen with that
one value patched in: its translation is shown above the map. The view renders
:class:`attnviz.core.analysis.patching.PatchingPair`, computed in a worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PySide6 import QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.compare import swap_ends
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.patching import PatchingPair, figure_data, map_and_patch
from attnviz.core.data.pieces import display_piece
from attnviz.core.model.interventions import InterventionError
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import kind_name
from attnviz.qt.i18n import translate
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.spec import ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, format_change
from attnviz.qt.widgets.plain_text import plain_label

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session

MIN_HEIGHT = 320  # px of canvas before the dock scrolls
CELL = "patchCell"  # the option holding the clicked cell: "stack:row:position", 0-based


def row_label(stack: str, row: int) -> str:
    """``encoder embeddings``, ``encoder 2``, ``decoder 1``: a row of the map (``row`` 0-based
    within its stack; the encoder's row 0 is its embeddings), as the core's ``layer_labels`` count."""
    if stack == "encoder" and row == 0:
        return translate("patching_map", "encoder embeddings")
    return f"{kind_name(stack)} {row if stack == 'encoder' else row + 1}"


@dataclass(frozen=True)
class PatchingFrame:
    """What the view draws: the sentence on screen (its ends swapped are the other sentence where
    none is typed: the field shows it), the other sentence, and their pair, or the one-line reason
    they cannot be paired (sentences of different numbers of tokens)."""

    source: str
    other: str
    pair: PatchingPair | None
    error: str | None = None


class QtPatchingMapView(FigureViewBase):
    """``set_data(PatchingFrame | None)``; options: the other sentence (``patchOtherEdit``; empty:
    the default it shows), the scored token (``patchTokenSpin``, 0: where the runs differ most) and
    the clicked cell."""

    given: PatchingFrame | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme=None):
        super().__init__(parent, theme=theme)
        self.canvas.setMinimumHeight(MIN_HEIGHT)
        self._why_not: str | None = None  # why the sentences cannot be paired
        self._cell = ""
        self.other_edit = QtWidgets.QLineEdit(objectName="patchOtherEdit")
        self.other_edit.setToolTip(translate("patching_map", "The other sentence, whose values are patched in (same number of tokens); "
                                                             "empty: the sentence with its first and last word (or character) swapped, "
                                                             "shown grey in the field. Press Enter."))
        self.other_edit.setPlaceholderText(translate("patching_map", "the sentence with its ends swapped"))
        self.other_edit.setMinimumWidth(140)
        self.other_edit.editingFinished.connect(self._on_inputs)
        self.token_spin = QtWidgets.QSpinBox(objectName="patchTokenSpin", minimum=0, maximum=512)
        self.token_spin.setSpecialValueText(translate("patching_map", "auto"))
        self.token_spin.setToolTip(translate("patching_map", "Which output token of the other sentence is scored (1-based); "
                                                             "auto: the one the runs differ on most"))
        self.token_spin.valueChanged.connect(self._on_inputs)
        self._add_control(translate("patching_map", "Other"), self.other_edit)
        self._add_control(translate("patching_map", "Token"), self.token_spin)
        self.controls.addStretch(1)
        self.result_label = plain_label("", "patchResult")  # model output: plain text
        self.result_label.setWordWrap(True)
        self.result_label.setContentsMargins(8, 0, 8, 0)
        self.layout().insertWidget(1, self.result_label)
        self.maps = {stack: HeatmapPlot(self.theme, colormap=DIVERGING_COLORMAP, value_format=format_change,
                                        colorbar_label=translate("patching_map", "recovery"))
                     for stack in ("encoder", "decoder")}
        for row, (stack, plot) in enumerate(self.maps.items()):
            plot.set_axis_titles(None, translate("patching_map", "source position") if stack == "encoder"
                                 else translate("patching_map", "target position (the token fed)"))
            plot.sigCellClicked.connect(lambda r, c, s=stack: self._on_cell(s, r, c))
            plot.sigHovered.connect(lambda info, s=stack: self._on_hovered(s, info))
            self.canvas.ci.addItem(plot, row=1 + row, col=0)
        self._refresh()

    # protocol ------------------------------------------------------------------------------------
    def render(self, frame: PatchingFrame | None) -> None:
        """Draw ``frame``'s pair; the other sentence's field shows the default it stands for when empty."""
        self._why_not = None
        if frame is not None:
            self.other_edit.setPlaceholderText(swap_ends(frame.source))
            if frame.error:
                self._why_not = translate("patching_map", "cannot patch {other} into {this}: {error}").format(
                    other=frame.other, this=frame.source, error=frame.error)
        self._refresh()

    def apply(self, choice: ViewChoice) -> None:
        """Nothing to take: the view compares two whole runs."""

    def why_empty(self) -> str | None:
        return self._why_not

    def _drawable(self, frame: PatchingFrame) -> bool:
        return frame.pair is not None

    def pair(self) -> PatchingPair | None:
        return None if self.given is None else self.given.pair

    def options(self) -> dict[str, object]:
        return {**super().options(), CELL: self._cell}

    def set_options(self, options: dict[str, object]) -> None:
        cell = options.get(CELL)
        if isinstance(cell, str) and cell != self._cell:
            self._cell = cell
            self.optionsChanged.emit()
        super().set_options(options)

    # drawing -------------------------------------------------------------------------------------
    def _refresh(self) -> None:
        pair = self.pair()
        for plot in self.maps.values():
            plot.setVisible(pair is not None)
        if pair is None:
            self.title.set_title(translate("patching_map", "Activation patching"),
                                 self._why_not or translate("patching_map", "needs a source sentence and another of the same number of tokens"))
            self.result_label.setText("")
            return
        m = pair.map
        token = display_piece(m.target_pieces[m.target_position])
        self.title.set_title(
            translate("patching_map", "Activation patching · {other} into {this}: how much of log P({token}) comes back").format(
                other="".join(m.clean_pieces), this="".join(m.corrupt_pieces), token=token),
            translate("patching_map", "log P({token}): {here:.2f} here, {other:.2f} in the other sentence · "
                                      "1 = all of the difference, 0 = none · click a cell to decode with that one value patched in").format(
                token=token, here=m.log_prob_corrupt, other=m.log_prob_clean))
        self.result_label.setText(self._result_text(pair))
        self._draw(m)

    def _result_text(self, pair: PatchingPair) -> str:
        m = pair.map
        text = translate("patching_map", "here: {here}   ·   other: {other}").format(here=m.corrupt_translation, other=m.clean_translation)
        if pair.patch is not None and pair.cell is not None:
            stack, row, pos = pair.cell
            text += translate("patching_map", "   ·   patched at {row}, position {position}: {translation}").format(
                row=row_label(stack, row), position=pos + 1, translation=pair.patch.patched)
        return text

    def _draw(self, m) -> None:
        prompt = m.clean_pieces if m.decoder_only else ()  # a decoder-only model's decoder reads the prompt before the target
        fed = ("SOS", *prompt, *m.target_pieces[:-1])
        for stack, values, cols in (("encoder", m.encoder, m.clean_pieces), ("decoder", m.decoder, fed)):
            rows = [row_label(stack, r) for r in range(len(values))]
            plot = self.maps[stack]
            plot.setVisible(values.size > 0)
            if values.size:
                rec = m.recovery(values)
                plot.set_matrix(rec, rows, cols[: values.shape[1]], levels=(-1.0, 1.0))

    # the user's choices ----------------------------------------------------------------------------
    def _on_inputs(self, *_args) -> None:
        self._cell = ""
        self.optionsChanged.emit()

    def _on_cell(self, stack: str, row: int, col: int) -> None:
        self._cell = f"{stack}:{row}:{col}"
        self.optionsChanged.emit()

    def _on_hovered(self, stack: str, info: HoverInfo | None) -> None:
        pair = self.pair()
        if info is None or pair is None:
            self.readout.setText(" ")
            return
        m = pair.map
        raw = (m.encoder if stack == "encoder" else m.decoder)[info.row, info.col]
        self.readout.setText(translate("patching_map", "{row} · position {position} ({piece}): log P {raw:.3f} · recovery {recovery:+.3f}").format(
            row=row_label(stack, info.row), position=info.col + 1, piece=display_piece(info.col_label), raw=raw,
            recovery=float(m.recovery(np.array(raw)))))

    def _on_theme_changed(self) -> None:
        for plot in self.maps.values():
            plot.apply_theme(self.theme)
        self._refresh()

    # figure protocol -------------------------------------------------------------------------------
    def figure_title(self) -> str:
        return translate("patching_map", "Activation patching")

    def figure_data(self) -> FigureData:
        if self.pair() is None:
            raise ValueError("the view shows no data yet")
        return figure_data(self.pair().map)

    def transient_items(self):
        return [plot.hover_marker for plot in self.maps.values()]


# -- the registry's entry ----------------------------------------------------------------------
def parse_cell(text: object) -> tuple[str, int, int] | None:
    """``"encoder:1:2"`` -> ``("encoder", 1, 2)``; anything else: ``None``."""
    parts = str(text or "").split(":")
    if len(parts) == 3 and parts[0] in ("encoder", "decoder") and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return None


def patching_data(session: Session, choice: ViewChoice, options: dict) -> Analysis | None:
    """The map of the other sentence patched into the one on screen (and the clicked cell's
    patch): model passes in a worker."""
    bundle, cur = session.bundle, session.current
    if bundle is None or cur is None or not cur.source.text.strip():
        return None
    this = cur.source.text
    other = str(options.get("patchOtherEdit") or "").strip() or swap_ends(this)
    token = options.get("patchTokenSpin")
    position = token - 1 if isinstance(token, int) and token > 0 else None
    return Analysis(patching_frame, (bundle, this, other, position, parse_cell(options.get(CELL))))


def patching_frame(bundle: Bundle, this: str, other: str, position: int | None, cell: tuple[str, int, int] | None) -> PatchingFrame:
    """:func:`map_and_patch` of ``other`` into ``this`` as the frame the view draws; sentences that
    cannot be paired give a frame that says why."""
    try:
        return PatchingFrame(this, other, map_and_patch(bundle, this, other, position, cell))
    except InterventionError as exc:
        return PatchingFrame(this, other, None, str(exc))


SPEC = ViewSpec("patching", QtPatchingMapView, QT_TRANSLATE_NOOP("views", "Activation patching"), "bottom", (), data=patching_data, reads_options=True, needs=("cross",),
                empty="nothing to patch: type a source sentence (and another of the same number of tokens)", depends_on=("source",))

