"""The walkthrough's words: the figure's title and formula line (:func:`walk_title`) and the
read-out of a hovered cell (:func:`readout_text`; a cell of Z_i writes out its weighted sum,
:func:`z_sum_text`). Positions are 1-based, dimensions 0-based, as on screen.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.data.pieces import display_piece
from attnviz.qt.core_text import kind_title
from attnviz.qt.i18n import translate
from attnviz.qt.views.walkthrough_tables import StageSpec, format_value, plain, title_text
from attnviz.qt.widgets.heatmap import MINUS

Z_TERMS = 6  # terms of Σⱼ a_ij v_j written out in the read-out (the largest weights), the rest summed
ROW_SUM_NOTE = QT_TRANSLATE_NOOP("walkthrough", "   (row sums to 1)")  # after a weight in the read-out


def walk_title(w: Any) -> tuple[str, str]:
    """The figure's title (kind, layer, head, query) and its formula line (the head's sizes) of the walkthrough ``w``."""
    if w is None:
        return (translate("walkthrough", "One-head walkthrough"),
                translate("walkthrough", "choose a model and a sentence; the numbers of one head appear here"))
    q = display_piece(w.query_labels[w.query])
    title = translate("walkthrough", "{kind} · layer {layer} · head {head} of {heads} · query “{query}” (row {row})").format(
        kind=kind_title(w.kind), layer=w.layer + 1, head=w.head + 1, heads=w.n_heads, query=q, row=w.query + 1)
    i = w.head + 1
    scores = f"Q_{i}K_{i}ᵀ / √d_k" if w.scaled else f"Q_{i}K_{i}ᵀ"
    bias = " + B" if w.position_bias is not None else ""
    d_k = f"d_k = d_model / h = {w.d_k}" if w.d_k * w.n_heads == w.d_model else f"d_k = {w.d_k}"
    root = f"√d_k = {math.sqrt(w.d_k):.3g}" if w.scaled else translate("walkthrough", "no ÷√d_k")
    formula = f"Z_{i} = softmax({scores}{bias} + M) V_{i}  ·  d_model = {w.d_model}, h = {w.n_heads}, {d_k}, {root}  ·  "
    formula += translate("walkthrough", "Z_{i} fills columns {first}–{last} of Concat(Z_1..Z_h)").format(
        i=i, first=w.head * w.d_k, last=(w.head + 1) * w.d_k - 1)
    return title, formula


def readout_text(walk: Any, spec: StageSpec, row: int, col: int, value: float) -> str:
    """What the read-out says of cell ``[row, col]`` (of the whole matrix) of ``spec``'s table."""
    shown = format_value(value) if not math.isfinite(value) else f"{value:.5f}"
    text = f"{plain(title_text(spec.title))}   [{where(walk, spec.rows, row)}, {where(walk, spec.cols, col)}]   = {shown}"
    if spec.name == "weights":
        text += translate("walkthrough", ROW_SUM_NOTE)
    elif spec.name == "concat":
        text += translate("walkthrough", "   (column {column} belongs to head {head})").format(column=col, head=col // walk.d_k + 1)
    elif spec.name == "z":
        text = translate("walkthrough", "Z_{head}[{query}, dim {column}] = {sum}").format(
            head=walk.head + 1, query=where(walk, "query", row), column=col, sum=z_sum_text(walk, row, col))
    return text


def where(walk: Any, axis: str, index: int) -> str:
    """``query 4 “␣eat”``, ``key 2 “喜”``, ``dim 5``, ``b``: one index of a table's axis, as on screen (positions 1-based)."""
    if axis in ("query", "key"):
        labels = walk.query_labels if axis == "query" else walk.key_labels
        text = translate("walkthrough", "query {n} “{piece}”") if axis == "query" else translate("walkthrough", "key {n} “{piece}”")
        return text.format(n=index + 1, piece=display_piece(labels[index]))
    return "b" if axis == "bias" else translate("walkthrough", "dim {n}").format(n=index)


def z_sum_text(walk: Any, row: int, col: int) -> str:
    """Z_i[row, col] written out as Σⱼ a_ij v_j: the terms of the largest weights (key j 1-based),
    the rest summed, then the total. Masked keys (weight 0) are left out."""
    a = np.asarray(walk.weights[row], np.float64)  # [key]
    v = np.asarray(walk.v[:, col], np.float64)  # [key]
    keys = [j for j in np.argsort(-a, kind="stable") if a[j] > 0]
    shown = sorted(keys[:Z_TERMS])
    terms = [translate("walkthrough", "{weight}·{value} (key {key})").format(weight=f"{a[j]:.3f}", value=_signed(v[j]), key=j + 1) for j in shown]
    rest = keys[Z_TERMS:]
    if rest:
        terms.append(translate("walkthrough", "{sum} ({n} more keys)").format(sum=_signed(float(np.sum(a[rest] * v[rest]))), n=len(rest)))
    total = float(np.sum(a * v))
    return "Σⱼ a_ij v_j = " + " + ".join(terms) + f" = {total:.5f}"


def _signed(x: float) -> str:
    """A term's factor: negative numbers in brackets, with a real minus sign."""
    return f"({MINUS}{abs(x):.3f})" if x < 0 else f"{x:.3f}"
