"""The interface's words for what the core names in English: the kinds of attention, a head's
label, the ablations, the decoding strategies and the word-start legend.

The core keeps its English (files, the command line, ``attnviz export`` without a language); the
views show these, in the installed language (context ``core_text``). Where the core's table is
the source (:data:`~attnviz.core.analysis.figure_data.KIND_TITLES`), its entries are marked here
for ``pyside6-lupdate`` and translated as the core spells them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.figure_data import KIND_TITLES, ScoreForm, attention_formula
from attnviz.core.data.pieces import WORD_START
from attnviz.qt.i18n import translate

if TYPE_CHECKING:
    from attnviz.core.analysis.ablation import HeadSet
    from attnviz.core.decoding.strategies import Strategy

#: The core's titles of the kinds (KIND_TITLES' values), for lupdate.
MARKED_KIND_TITLES = (
    QT_TRANSLATE_NOOP("core_text", "Encoder self-attention"),
    QT_TRANSLATE_NOOP("core_text", "Decoder masked self-attention"),
    QT_TRANSLATE_NOOP("core_text", "Cross-attention"),
)
#: The words of cross-attention's formula (the core's CROSS_SOURCES), for lupdate.
MARKED_CROSS_SOURCES = QT_TRANSLATE_NOOP("core_text", "Q from C_decoder,  K, V from C_encoder")
#: A kind (or a stack) in one word, as in a head's label (``cross:2:3``).
_KIND_NAMES = {
    "encoder": QT_TRANSLATE_NOOP("core_text", "encoder"),
    "decoder": QT_TRANSLATE_NOOP("core_text", "decoder"),
    "cross": QT_TRANSLATE_NOOP("core_text", "cross"),
}
#: How an ablated head is taken out (ABLATION_KINDS).
_ABLATION_NAMES = {
    "zero": QT_TRANSLATE_NOOP("core_text", "zero"),
    "mean": QT_TRANSLATE_NOOP("core_text", "mean"),
    "uniform": QT_TRANSLATE_NOOP("core_text", "uniform"),
}


def kind_title(kind: str) -> str:
    """``Cross-attention``: the title of a kind of attention."""
    return translate("core_text", KIND_TITLES[kind])


def kind_formula(kind: str, form: ScoreForm = ScoreForm()) -> str:
    """``A = softmax(QKᵀ/√d_k + M)``: the formula a kind's weights come from in a model whose
    scores take ``form`` (the core's ``attention_formula``, its words translated)."""
    return attention_formula(kind, form, lambda text: translate("core_text", text))


def kind_name(kind: str) -> str:
    """``cross``: a kind of attention (or ``encoder``/``decoder``, a stack) in one word."""
    return translate("core_text", _KIND_NAMES[kind]) if kind in _KIND_NAMES else kind


def head_text(kind: str, layer: int, head: int) -> str:
    """``cross:3:2``: a head as on screen (0-based ``layer`` and ``head``, shown 1-based)."""
    return f"{kind_name(kind)}:{layer + 1}:{head + 1}"


def heads_text(heads: HeadSet) -> str:
    """``cross:3:2, encoder:1:1``: the heads of a set, in the set's order."""
    comma = translate("core_text", ", ")  # between two heads
    return comma.join(head_text(site.kind, site.layer, h) for site, hs in heads.by_site().items() for h in hs)


def ablation_name(kind: str) -> str:
    """``zero``, ``mean`` or ``uniform``: how an ablated head is taken out."""
    return translate("core_text", _ABLATION_NAMES[kind]) if kind in _ABLATION_NAMES else kind


def word_start_legend() -> str:
    """``␣ = start of a word`` (the core's WORD_START_LEGEND)."""
    return translate("core_text", "{mark} = start of a word").format(mark=WORD_START)


def strategy_text(strategy: Strategy) -> str:
    """The decoding strategy with its settings (``beam search (width 4, length penalty 0.6)``)."""
    from attnviz.core.decoding.strategies import BeamSearch, Sampling  # here: the views do not load torch

    if isinstance(strategy, BeamSearch):
        return translate("core_text", "beam search (width {width}, length penalty {penalty:g})").format(
            width=strategy.width, penalty=strategy.length_penalty)
    if isinstance(strategy, Sampling):
        extra = "".join((translate("core_text", ", top-k {k}").format(k=strategy.top_k) if strategy.top_k else "",
                         translate("core_text", ", top-p {p:g}").format(p=strategy.top_p) if strategy.top_p < 1 else ""))
        return translate("core_text", "sampling (temperature {temperature:g}{extra}, seed {seed})").format(
            temperature=strategy.temperature, extra=extra, seed=strategy.seed)
    return translate("core_text", "greedy")


def empty_source_text() -> str:
    """What the panels and the views say while no source sentence is typed."""
    return translate("decode_panel", "Type a source sentence or choose an example")
