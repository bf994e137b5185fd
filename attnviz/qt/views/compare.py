"""Compare view: two sources through the same encoder, side by side (猫吃鱼。 vs 鱼吃猫。).

Top row: C_encoder of A and of B (tokens × features) and their difference at matched tokens;
bottom row: the selected encoder head's attention for A and for B and their difference (B put in
A's token order). "PE off" re-runs both without positional encoding: the encoder then sees a bag
of tokens, and B's vectors are exactly A's, reordered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6 import QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.compare import CompareFrame, SourceComparison, compare_both, swap_ends
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.examples import accepted_translations, is_accepted
from attnviz.core.data.pieces import display_piece, display_pieces
from attnviz.qt.analyses import Analysis
from attnviz.qt.core_text import word_start_legend
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import FigureViewBase, LayerHeadChoice, LayerHeadViewMixin, make_combo
from attnviz.qt.views.spec import ATTENTION_SELECTORS, TourAsk, ViewSpec
from attnviz.qt.widgets.colormaps import DIVERGING_COLORMAP, Theme
from attnviz.qt.widgets.heatmap import HeatmapPlot, HoverInfo, format_score
from attnviz.qt.widgets.regions import Region, items_region

if TYPE_CHECKING:
    from attnviz.qt.session import Session

#: (text A, text B, positional) -> the comparison; what the registry hands the view.

PANELS: dict[str, str] = {  # shown as translate("compare", title)
    "out_a": "C_encoder · A",
    "out_b": "C_encoder · B",
    "out_diff": QT_TRANSLATE_NOOP("compare", "C_A − C_B (same token)"),
    "att_a": "A: softmax(QKᵀ/√d_k)",
    "att_b": "B: softmax(QKᵀ/√d_k)",
    "att_diff": QT_TRANSLATE_NOOP("compare", "A − B (B in A's order)"),
}

MIN_CANVAS = (900, 640)  # px: the smallest size at which every panel's rows and labels read
ATTENTION_EXTRAS: dict[str, str] = {"att_a": "attention_a", "att_b": "attention_b", "att_diff": "attention_difference"}  # NPZ names


def _diverging(theme: Theme, label: str) -> HeatmapPlot:
    return HeatmapPlot(theme, colormap=DIVERGING_COLORMAP, value_format=format_score, colorbar_label=label)


class QtCompareView(LayerHeadViewMixin, FigureViewBase):
    """Sources A (the session's) and B (typed here; default: A with its first and last word or
    character swapped) through the encoder, with or without PE.

    ``set_data(CompareFrame)``; ``set_other(text)``, ``set_positional(on)`` (options: a new
    comparison is asked for through ``optionsChanged``);
    ``select(layer=, head=)`` (0-based encoder layer and head). ``comparison()`` is what is shown.
    """

    given: CompareFrame | None  # the data set_data was given (FigureViewBase)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None):
        super().__init__(parent, theme=theme, title_span=3)
        self.other_edit = QtWidgets.QLineEdit(objectName="compareOtherEdit")
        self.other_edit.setToolTip(translate("compare", "Source B; empty: A with its first and last word swapped. Press Enter to compare."))
        self.other_edit.setMinimumWidth(160)
        self.pe_off = QtWidgets.QCheckBox(translate("compare", "PE off"), objectName="comparePeOff")
        self.pe_off.setToolTip(translate("compare", "Re-run both sources without positional encoding: x = token embedding·√d_model only"))
        self._add_control("B", self.other_edit)
        self.controls.addWidget(self.pe_off)
        self.layer_combo = self._add_control(translate("compare", "Layer"), make_combo("compareLayerCombo", translate("compare", "Encoder layer")))
        self.head_combo = self._add_control(translate("compare", "Head"), make_combo("compareHeadCombo", translate("compare", "Head i")))
        self.layer_head = LayerHeadChoice(self.layer_combo, self.head_combo)
        self.controls.addStretch(1)
        self.other_edit.editingFinished.connect(self.optionsChanged)
        self.pe_off.toggled.connect(self.optionsChanged)
        self.layer_combo.currentIndexChanged.connect(self._on_controls_changed)
        self.head_combo.currentIndexChanged.connect(self._on_controls_changed)
        self._build_canvas()

    def _build_canvas(self) -> None:
        t = self.theme
        self.panels: dict[str, HeatmapPlot] = {
            "out_a": _diverging(t, translate("compare", "value")),
            "out_b": _diverging(t, translate("compare", "value")),
            "out_diff": _diverging(t, translate("compare", "difference")),
            "att_a": HeatmapPlot(t, colormap=self.colormap(), colorbar_label=translate("compare", "weight")),
            "att_b": HeatmapPlot(t, colormap=self.colormap(), colorbar_label=translate("compare", "weight")),
            "att_diff": _diverging(t, translate("compare", "difference")),
        }
        for i, (name, plot) in enumerate(self.panels.items()):
            plot.set_panel_title(translate("compare", PANELS[name]))
            self.canvas.addItem(plot, row=1 + i // 3, col=i % 3)
            plot.sigHovered.connect(self._on_plot_hovered)
        self.canvas.ci.layout.setHorizontalSpacing(14)
        self.canvas.setMinimumSize(*MIN_CANVAS)  # six heatmaps stay readable; a smaller dock scrolls
        self._scroll_canvas()  # the controls stay in view
        self._set_title()

    # data -------------------------------------------------------------------------------
    def render(self, frame: CompareFrame) -> None:
        """Source A and its comparisons with B (computed from this view's options: B's text, PE off)."""
        self.other_edit.setPlaceholderText(swap_ends(frame.source))
        self._fit_choice()
        self._refresh()

    def set_other(self, text: str) -> None:
        """Source B (empty: the default, A with its ends swapped): compared anew (``optionsChanged``)."""
        self.other_edit.setText(text)
        self.optionsChanged.emit()

    def set_positional(self, on: bool) -> None:
        """With (True) or without positional encoding: compared anew (``optionsChanged``)."""
        self.pe_off.setChecked(not on)

    def other_text(self) -> str:
        return self.other_edit.text().strip() or swap_ends(self.given.source if self.given is not None else "")

    def comparison(self) -> SourceComparison | None:
        return None if self.given is None else self.given.result

    def _drawable(self, frame: CompareFrame) -> bool:
        return frame.result is not None

    def _show_choice(self) -> None:
        self._refresh()

    def matrices(self) -> dict[str, np.ndarray]:
        """The six matrices shown, by panel name."""
        r = self.comparison()
        if r is None:
            return {}
        out = {"out_a": r.a.output, "out_b": r.b.output, "out_diff": r.difference}
        if r.a.weights.shape[0]:  # a model without encoder layers has no attention to compare
            lh = self.layer_head.index
            out.update(att_a=r.a.weights[lh], att_b=r.b.weights[lh], att_diff=r.attention_difference[lh])
        return out

    # internals ----------------------------------------------------------------------------
    def _fit_choice(self) -> None:
        r = self.comparison()
        shape = r.a.weights.shape if r is not None else (0, 0)
        self.layer_head.fit(shape[0], shape[1])

    def _on_controls_changed(self) -> None:
        self.layer_head.read()
        self._refresh()
        layer, head = self.layer_head.index
        self.chose.emit({"kind": "encoder", "layer": layer, "head": head, "mode": "head"})

    def labels(self) -> dict[str, tuple[str, ...]]:
        """Row labels of A and B (pieces), and A's pieces with their matched position in B."""
        r = self.comparison()
        if r is None:
            return {}
        a = display_pieces(r.a.pieces)
        b = display_pieces(r.b.pieces)
        matched = tuple(f"{p}↔{j + 1}" if j >= 0 else f"{p}↔·" for p, j in zip(a, r.match))
        return {"a": a, "b": b, "matched": matched, "features": tuple(str(j) for j in range(r.a.output.shape[1]))}

    def _refresh(self) -> None:
        self._set_title()
        r = self.comparison()
        if r is None:
            return
        m, lab = self.matrices(), self.labels()
        bound = max(float(np.abs(r.a.output).max()), float(np.abs(r.b.output).max()), 1e-6)
        feats = lab["features"]
        self.panels["out_a"].set_matrix(m["out_a"], lab["a"], feats, levels=(-bound, bound))
        self.panels["out_b"].set_matrix(m["out_b"], lab["b"], feats, levels=(-bound, bound))
        self.panels["out_diff"].set_matrix(m["out_diff"], lab["matched"], feats, levels=(-bound, bound))
        for name in ("att_a", "att_b", "att_diff"):
            self.panels[name].setVisible(name in m)
        if "att_a" in m:
            self.panels["att_a"].set_matrix(m["att_a"], lab["a"], lab["a"], levels=(0.0, 1.0))
            self.panels["att_b"].set_matrix(m["att_b"], lab["b"], lab["b"], levels=(0.0, 1.0))
            self.panels["att_diff"].set_matrix(m["att_diff"], lab["matched"], lab["matched"], levels=(-1.0, 1.0))
        rows, features, keys = translate("compare", "tokens (rows)"), translate("compare", "features of d_model"), translate("compare", "keys")
        for name, plot in self.panels.items():
            plot.set_axis_titles(rows if name.endswith("_a") else None, features if name.startswith("out") else keys)

    def summary(self) -> str:
        """The numbers that make the point, without PE and with it: the largest deviation of
        C_A from C_B over matched tokens, and (with PE) each token's cosine."""
        r = self.comparison()
        if r is None:
            return ""
        if not np.isfinite(r.max_deviation):
            return translate("compare", "A and B share no token: nothing to match")
        by_pe = {c.positional: c for c in (r, self.given.contrast) if c is not None}
        parts = []
        if False in by_pe:
            dev = by_pe[False].max_deviation
            exact = dev < 1e-5 and by_pe[False].is_permutation
            parts.append(translate("compare", "without PE max |C_A − C_B| = {deviation:.2g}").format(deviation=dev)
                         + (translate("compare", " (B's vectors are A's, reordered)") if exact else ""))
        if True in by_pe:
            c = by_pe[True]
            cos = ", ".join(f"{display_piece(p)} {v:.2f}" for p, v in zip(c.a.pieces, c.cosine) if np.isfinite(v))
            parts.append(translate("compare", "with PE {deviation:.3g}; cos per token: {cosines}").format(deviation=c.max_deviation, cosines=cos))
        return translate("compare", ";  ").join(parts)  # the summary's parts: "; " in English

    def _set_title(self) -> None:
        r = self.comparison()
        if r is None:
            error = None if self.given is None else self.given.error
            why = translate("compare", "cannot compare ({error})").format(error=error) if error else translate("compare", "no source to compare yet")
            self.title.set_title(translate("compare", "Word order: {why}").format(why=why))
            return
        pe = translate("compare", "PE off: x = embedding·√d_model") if not r.positional else translate("compare", "with PE: x = embedding·√d_model + PE")
        self.title.set_title(
            translate("compare", "Word order · A “{a}” vs B “{b}” · {pe} · encoder layer {layer} · head {head}").format(
                a=r.a.text, b=r.b.text, pe=pe, layer=self.layer_head.layer + 1, head=self.layer_head.head + 1),
            f"{self.summary()}    ({word_start_legend()})",
        )
        self.title.set_legend(self.translation_legend())

    def translation_legend(self) -> tuple:
        """Both sentences' translations with PE and without it, one legend entry each way."""
        t = self.translations()
        if not t:
            return ()
        same = t[("A", False)] == t[("B", False)]
        note = translate("compare", "   (the same: the order never reached the output)") if same else ""
        return ((translate("compare", "with PE"), self.theme.foreground, f"A → {self._judged('A')}   B → {self._judged('B')}"),
                (translate("compare", "without PE"), self.theme.foreground, f"A → {t[('A', False)]}   B → {t[('B', False)]}" + note))

    def translations(self) -> dict[tuple[str, bool], str]:
        """(A or B, with PE) -> greedy translation, of the comparison drawn."""
        return dict(self.given.translations or {}) if self.given is not None else {}

    def translation_fields(self) -> dict[str, str]:
        """The translations the legend shows, as a data file carries them: ``translation_a_with_pe``,
        ``translation_a_without_pe``, then B's (none before the comparison's first run)."""
        t = self.translations()
        return {f"translation_{which.lower()}_{'with' if pe else 'without'}_pe": t[(which, pe)]
                for which in ("A", "B") for pe in (True, False) if (which, pe) in t}

    def verdicts(self) -> dict[str, bool | None]:
        """A's and B's translation with PE: right (``True``) or wrong against the translations the
        examples accept for that sentence, ``None`` where they know none."""
        r, t = self.comparison(), self.translations()
        if r is None or not t:
            return {}
        return {"A": is_accepted(r.a.text, t[("A", True)]), "B": is_accepted(r.b.text, t[("B", True)])}

    def _judged(self, which: str) -> str:
        """A translation with PE, marked ✓ or ✗ (with the expected one) where the examples know the sentence."""
        out, verdict = self.translations()[(which, True)], self.verdicts()[which]
        if verdict is None:
            return out
        if verdict:
            return f"{out} ✓"
        r = self.comparison()
        text = r.a.text if which == "A" else r.b.text
        return out + translate("compare", " ✗ (right: {reference})").format(reference=accepted_translations(text)[0])

    def _on_plot_hovered(self, info: HoverInfo | None) -> None:
        sender = self.sender()
        panel = next(n for n, p in self.panels.items() if p is sender)
        if info is None:
            self.readout.setText(" ")
            return
        self.readout.setText(translate("compare", "{panel}:  row “{row}”  column “{column}”     value = {value:.4g}").format(
            panel=translate("compare", PANELS[panel]), row=info.row_label, column=info.col_label, value=info.value))

    def _on_theme_changed(self) -> None:
        for plot in self.panels.values():
            plot.apply_theme(self.theme)
        if self._colormap is None:
            self._on_colormap_changed()
        self._refresh()

    def _on_colormap_changed(self) -> None:
        for name in ("att_a", "att_b"):
            self.panels[name].set_colormap(self.colormap())

    # figure protocol ------------------------------------------------------------------------
    def figure_title(self) -> str:
        r = self.comparison()
        if r is None:
            return translate("compare", "Word order")
        pe = translate("compare", "without PE") if not r.positional else translate("compare", "with PE")
        return translate("compare", "Word order · {a} vs {b} · {pe} · encoder layer {layer} · head {head}").format(
            a=r.a.text, b=r.b.text, pe=pe, layer=self.layer_head.layer + 1, head=self.layer_head.head + 1)

    def figure_data(self) -> FigureData:
        r = self.comparison()
        if r is None:
            raise ValueError("the view shows no data yet")
        ok = r.match >= 0
        b_matched = np.where(ok[:, None], r.b.output[np.where(ok, r.match, 0)], np.nan)
        m, lab = self.matrices(), self.labels()
        return FigureData(
            title=self.figure_title(),
            dims=("token", "feature"),
            values={"c_encoder_a": r.a.output, "c_encoder_b_matched": b_matched, "difference": r.difference},
            coords={"token": lab["a"], "feature": lab["features"]},
            extras={
                "c_encoder_b": r.b.output, "cosine": r.cosine, "match_in_b": r.match,
                "max_deviation": np.array(r.max_deviation), "positional": np.array(r.positional),
                **{out: m[panel] for panel, out in ATTENTION_EXTRAS.items() if panel in m},
                **{key: np.array(text, dtype=str) for key, text in self.translation_fields().items()},
            },
        )

    def transient_items(self):
        return [p.hover_marker for p in self.panels.values()]

    def export_data_dialog(self) -> None:
        """The data, headed by what it is of and by the translations the legend shows (NPZ: also
        as arrays), as ``attnviz export --view compare`` writes it."""
        from attnviz.qt.export.dialogs import export_data_dialog

        export_data_dialog(self, self, metadata={**(self.provenance() if self.provenance is not None else {}), **self.translation_fields()})


# -- the registry's entry ----------------------------------------------------------------------
def compare_data(session: Session, choice: ViewChoice, options: dict[str, object]) -> Analysis | None:
    """The session's source as A against the view's B (its options), through the session's
    model in a worker (four encoder passes: A and B, with and without PE; skipped while the
    model, A, B and PE stay)."""
    bundle, cur = session.bundle, session.current
    if bundle is None or cur is None:
        return None
    a = cur.source.text
    b = str(options.get("compareOtherEdit") or "").strip() or swap_ends(a)
    return Analysis(compare_both, (bundle.model, bundle.src_tokenizer, a, b, not options.get("comparePeOff"), bundle.tgt_tokenizer))


# -- what the tour reads and outlines ---------------------------------------------------------------
TOUR_MEASURES = ("cmp_a", "cmp_b", "cmp_max_difference", "cmp_translation_a", "cmp_translation_b", "cmp_translation_no_pe")


def tour_measures(view: QtCompareView, ask: TourAsk) -> dict[str, Any]:
    """The two sources, how far their encodings differ with positions, and their translations."""
    r, t = view.comparison(), view.translations()
    return {"cmp_a": r.a.text, "cmp_b": r.b.text, "cmp_max_difference": r.max_deviation if r.positional else None,
            "cmp_translation_a": t.get(("A", True)), "cmp_translation_b": t.get(("B", True)),
            "cmp_translation_no_pe": t.get(("A", False))}


def region_difference(view: QtCompareView, ask: TourAsk) -> Region | None:
    """The panel of the encodings' difference."""
    return items_region(view.panels["out_diff"])


SPEC = ViewSpec("compare", QtCompareView, QT_TRANSLATE_NOOP("views", "Word order (compare)"), "bottom", ATTENTION_SELECTORS, data=compare_data,
                reads_options=True, kinds=("encoder",), needs=("decoder",), empty="nothing to compare: type a source sentence", depends_on=("source",),
                measures=tour_measures, measure_names=TOUR_MEASURES, regions={"compare-difference": region_difference})
