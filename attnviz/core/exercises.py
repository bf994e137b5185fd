"""The tour's predict-then-reveal exercises: each kind asks one question about the open model on
the sentence in the window and computes its answer from the model there, never from the tour file.

One function per kind (:data:`EXERCISES`, keyed by the names of
:data:`attnviz.core.tour_data.EXERCISE_KINDS`), each ``fn(bundle, question, **options)`` →
:class:`Exercise`: the choices, the right one(s), a number per choice where a choice has one
(a weight, a probability, a Δ log P) and the other numbers the feedback quotes. A choice is a
token piece, a shape ``3 × 5``, a head's number, a cell of a grid (``mask-cells``: row-major), or
one of the answer words :data:`YES_NO` / :data:`SHARPNESS`, which the window translates. No Qt.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attnviz.core.analysis.ablation import scored_log_prob
from attnviz.core.analysis.attribution import after_prompt
from attnviz.core.analysis.compare import swap_ends, translations_with_and_without_pe
from attnviz.core.analysis.head_importance import ablated_log_probs
from attnviz.core.analysis.norm_batch import batch_statistics, norm_batch_for
from attnviz.core.analysis.scaling import SCALED, UNSCALED, RowScaling, site_scaling
from attnviz.core.data.pieces import display_piece, display_pieces
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.core.model.sites import AttentionSite

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.decoding.result import DecodingResult

YES_NO = ("yes", "no")
SHARPNESS = ("sharper", "flatter", "unchanged")  # softmax without ÷√d_k, against with it
NEXT_CHOICES = 4  # top-k tokens offered by next-token
SHAPE_CHOICES = 4  # shapes offered by shape: the true one and three distractors
MAX_GRID = 10  # mask-cells asks about at most the first MAX_GRID × MAX_GRID cells
NORM_TOLERANCE = 1e-3  # a norm output that moves less than this (float noise) has not changed
ENTROPY_TOLERANCE = 1e-9  # nats: the same entropy


@dataclass(frozen=True)
class Question:
    """Where an exercise asks: the window's sentence(s), the tokens decoded (teacher-forced: the
    1-based position; ``None``: to the end) and the linked selection, 0-based (``head`` ``None``:
    the mean of the heads; ``query`` ``None``: the current step's row)."""

    source: str
    target: str = ""
    steps: int | None = None
    kind: str = "cross"
    layer: int = 0
    head: int | None = 0
    query: int | None = None


@dataclass(frozen=True, eq=False)
class Exercise:
    """One exercise's question and answer: ``choices`` (labels), ``answers`` (indices of the right
    ones: one, except for a grid of cells), ``values`` (a number per choice, or empty), ``numbers``
    (what the feedback quotes) and, for a grid, its ``columns``."""

    kind: str
    choices: tuple[str, ...]
    answers: tuple[int, ...]
    values: tuple[float, ...] = ()
    numbers: dict[str, Any] = field(default_factory=dict)
    columns: int = 0  # a grid of cells, row-major, this many columns (0: a list of choices, pick one)

    @property
    def answer(self) -> int:
        return self.answers[0]

    @property
    def multiple(self) -> bool:
        return self.columns > 0

    def is_right(self, chosen: set[int] | frozenset[int]) -> bool:
        return set(chosen) == set(self.answers)

    def ranked(self) -> list[int]:
        """The choices by their value, the largest |value| first (the order the feedback lists them)."""
        return sorted(range(len(self.values)), key=lambda i: -abs(self.values[i]))


# -- the model on the question's sentence -----------------------------------------------------------
def decoded(bundle: Bundle, q: Question) -> DecodingResult:
    """The question's sentence through the model as the window runs it: teacher-forced on a typed
    target, else greedy decoding to ``q.steps`` tokens."""
    if q.target:
        return teacher_forced_from_bundle(bundle, q.source, q.target)
    run = DecodingSession.from_bundle(bundle, q.source)
    run.go_to(q.steps)
    return run


def current_row(result: DecodingResult, q: Question) -> int:
    """The decoder row the question is about: its query, else the current step's (a teacher-forced
    pass: position ``q.steps``; a decoding: its last step)."""
    n = len(result.steps)
    if q.query is not None:
        return min(q.query, n - 1)
    if q.target and q.steps is not None:
        return max(0, min(q.steps, n) - 1)
    return n - 1


def head_matrix(result: DecodingResult, q: Question) -> np.ndarray:
    """``[query, key]``: the selected head's attention (its layer's mean over heads for ``head`` None)."""
    a = np.asarray(result.attention(q.kind, q.layer), np.float64)  # [head, query, key]
    return a.mean(axis=0) if q.head is None else a[q.head]


def labelled(pieces: tuple[str, ...]) -> tuple[str, ...]:
    """Pieces as choices: shown as on screen, a piece that occurs twice with its position (1-based)."""
    shown = display_pieces(pieces)
    return tuple(f"{p} ({i + 1})" if shown.count(p) > 1 else p for i, p in enumerate(shown))


# -- the kinds ------------------------------------------------------------------------------------
def cross_argmax(bundle: Bundle, q: Question, heads: str = "selected") -> Exercise:
    """Which source piece the current step's cross-attention row weighs most: the selected head's
    row (``heads`` ``mean``: the layer's mean over heads)."""
    q = Question(q.source, q.target, q.steps, "cross", q.layer, None if heads == "mean" else q.head, q.query)
    result = decoded(bundle, q)
    row = current_row(result, q)
    w = head_matrix(result, q)[row]  # [key]
    numbers = {"row": row + 1, "fed": display_piece(result.input_pieces[row]), "layer": q.layer + 1,
               "head": None if q.head is None else q.head + 1, "row_sum": float(w.sum())}
    return Exercise("cross-argmax", labelled(result.src_pieces), (int(np.argmax(w)),), tuple(float(x) for x in w), numbers)


def next_token(bundle: Bundle, q: Question, seed: int = 0) -> Exercise:
    """Which token greedy decoding appends next, after the tokens decoded: the top
    :data:`NEXT_CHOICES` of the model's distribution, shuffled with ``seed``."""
    run = DecodingSession.from_bundle(bundle, q.source)
    run.go_to(q.steps)
    if not run.can_step:  # decoding has finished: ask about its last token, after the tokens before it
        run.back()
    prefix = display_pieces(run.output_pieces)
    step = run.step()
    top = list(step.topk[:NEXT_CHOICES])
    if step.token_id not in [t for _, t, _ in top]:  # greedy never picks a banned token (PAD, SOS): keep its pick
        top[-1] = (step.piece, step.token_id, float(step.prob))
    order = list(range(len(top)))
    random.Random(seed).shuffle(order)
    shuffled = [top[i] for i in order]
    answer = next(i for i, (_, t, _) in enumerate(shuffled) if t == step.token_id)
    numbers = {"prefix": " ".join(prefix), "step": step.index + 1, "token": display_piece(step.piece), "prob": float(step.prob),
               "entropy": float(step.entropy)}
    return Exercise("next-token", labelled(tuple(p for p, _, _ in shuffled)), (answer,), tuple(float(p) for _, _, p in shuffled), numbers)


def pe_off_order(bundle: Bundle, q: Question) -> Exercise:
    """Without positional encoding, do the source and its word-swapped twin (猫吃鱼。 / 鱼吃猫。)
    get the same translation? Both greedy-translated with the encoder's PE and without it."""
    a, b = q.source, swap_ends(q.source)
    t = translations_with_and_without_pe(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, a, b)
    same = t[("A", False)] == t[("B", False)]
    numbers = {"a": a, "b": b, "a_pe": t[("A", True)], "b_pe": t[("B", True)], "a_no_pe": t[("A", False)], "b_no_pe": t[("B", False)]}
    return Exercise("pe-off-order", YES_NO, (0 if same else 1,), (), numbers)


def mask_cells(bundle: Bundle, q: Question) -> Exercise:
    """Which cells of the decoder self-attention the look-ahead mask zeroes: those where the mask
    the model adds (the trace's ``mask``) is −∞, of the first :data:`MAX_GRID` rows and columns."""
    result = decoded(bundle, q)
    site = AttentionSite("decoder", q.layer)
    mask = np.asarray(result.accumulated(site.name("mask")), np.float64)  # [query, key]  0 / −∞
    n = min(mask.shape[0], mask.shape[1], MAX_GRID)
    blocked = np.isneginf(mask[:n, :n])
    weights = head_matrix(result, Question(q.source, q.target, q.steps, "decoder", q.layer, q.head))[:n, :n]
    cells = tuple(f"{r + 1},{c + 1}" for r in range(n) for c in range(n))
    answers = tuple(int(i) for i in np.flatnonzero(blocked))
    numbers = {"size": n, "masked": len(answers), "blocked_max": float(weights[blocked].max()) if answers else 0.0,
               "pieces": " ".join(display_pieces(result.input_pieces[:n]))}
    return Exercise("mask-cells", cells, answers, tuple(float(x) for x in weights.reshape(-1)), numbers, columns=n)


def important_head(bundle: Bundle, q: Question) -> Exercise:
    """Which head of the selected layer matters most for the current output token: each head
    ablated alone (zeroed), the change of log P(that token | the tokens before it), Δ =
    Δ log P(y_≤t) − Δ log P(y_<t) from head importance's batched passes; the largest |Δ| wins."""
    result = decoded(bundle, q)
    model, t = bundle.model, current_row(result, q)
    source = list(result.src_ids)
    target = list(after_prompt(bundle.config, result.src_ids, result.output_ids))
    site = AttentionSite(q.kind, q.layer)

    def change(n: int) -> np.ndarray:  # [head] Δ log P(first n target tokens)
        if n == 0:
            return np.zeros(bundle.config.n_heads)
        return ablated_log_probs(model, source, target[:n], [site]) - scored_log_prob(model, source, target[:n])[0]

    delta = change(t + 1) - change(t)
    clean = scored_log_prob(model, source, target[: t + 1])[0] - (scored_log_prob(model, source, target[:t])[0] if t else 0.0)
    numbers = {"token": display_piece(result.output_pieces[t]), "position": t + 1, "log_prob": float(clean), "layer": q.layer + 1}
    choices = tuple(str(h + 1) for h in range(len(delta)))
    return Exercise("important-head", choices, (int(np.argmax(np.abs(delta))),), tuple(float(d) for d in delta), numbers)


def norm_batch(bundle: Bundle, q: Question) -> Exercise:
    """Does a norm's output for the sentence change when the batch around it changes? The norm
    batch (:func:`~attnviz.core.analysis.norm_batch.norm_batch_for`: the sentence with a few others,
    a BatchNorm model's in training mode) and the sentence alone, each through every norm of the
    model as its own module normalizes them; the largest difference of the sentence's outputs."""
    result = decoded(bundle, q)
    batch = norm_batch_for(bundle, result.src_ids, result.input_ids)
    change, where = 0.0, ""
    for site in batch.sites:
        d = norm_change(bundle, site)
        if d >= change:
            change, where = d, site.site
    numbers = {"norm": bundle.config.norm, "sentences": len(batch.src_pieces), "change": change, "site": where,
               "sites": len(batch.sites)}
    return Exercise("norm-batch", YES_NO, (0 if change > NORM_TOLERANCE else 1,), (), numbers)


def norm_change(bundle: Bundle, site) -> float:
    """max |output in the batch − output alone| over the first sentence's tokens of one norm site."""
    module = bundle.model.get_submodule(site.site)
    length = site.alone.shape[0]
    x = torch.tensor(np.asarray(site.x, np.float32))  # [B, L, d]
    valid = torch.tensor(np.asarray(site.valid, bool))  # [B, L]
    alone = torch.tensor(np.asarray(site.alone, np.float32))[None]  # [1, L0, d]
    with torch.inference_mode():
        in_batch = module(x, valid, batch_statistics())[0, :length]
        by_itself = module(alone, torch.ones(alone.shape[:2], dtype=torch.bool), batch_statistics())[0]
    return float((in_batch - by_itself).abs().max())


def scaling(bundle: Bundle, q: Question) -> Exercise:
    """Without ÷√d_k, does the selected head's softmax row get sharper or flatter? Its entropy
    with the scaling and without it (:mod:`~attnviz.core.analysis.scaling`)."""
    result = decoded(bundle, q)
    comparison = site_scaling(result, AttentionSite(q.kind, q.layer))
    n = comparison.by_scaling.shape[2]
    row = (q.query if q.query is not None else n - 1) if q.kind == "encoder" else current_row(result, q)
    r = RowScaling.of(comparison, q.head or 0, min(row, n - 1))
    scaled, unscaled = float(r.entropy[SCALED]), float(r.entropy[UNSCALED])
    answer = 2 if abs(unscaled - scaled) <= ENTROPY_TOLERANCE else 0 if unscaled < scaled else 1
    queries = result.src_pieces if q.kind == "encoder" else result.input_pieces
    numbers = {"query": display_piece(queries[r.row]), "sqrt_dk": float(np.sqrt(r.d_k)), "entropy_scaled": scaled,
               "entropy_unscaled": unscaled, "max_scaled": float(r.max_weight[SCALED]), "max_unscaled": float(r.max_weight[UNSCALED])}
    return Exercise("scaling", SHARPNESS, (answer,), (), numbers)


def shape(bundle: Bundle, q: Question, seed: int = 0) -> Exercise:
    """What shape the selected head's attention matrix has (queries × keys): the true one among
    the swapped and off-by-one shapes, shuffled with ``seed``."""
    result = decoded(bundle, q)
    rows, keys = np.asarray(result.attention(q.kind, q.layer)).shape[1:]
    true = (int(rows), int(keys))
    candidates = [(keys, rows), (rows + 1, keys), (rows, keys + 1), (rows - 1, keys), (rows, keys - 1), (rows + 1, keys + 1)]
    distractors = [c for c in dict.fromkeys((int(a), int(b)) for a, b in candidates) if c != true and min(c) >= 1]
    shapes = [true, *distractors[: SHAPE_CHOICES - 1]]
    random.Random(seed).shuffle(shapes)
    queries = result.src_pieces if q.kind == "encoder" else result.input_pieces
    keys_of = result.input_pieces if q.kind == "decoder" else result.src_pieces
    numbers = {"queries": true[0], "keys": true[1], "query_pieces": " ".join(display_pieces(queries[: true[0]])),
               "key_pieces": " ".join(display_pieces(keys_of[: true[1]])), "d_k": bundle.config.d_k}
    return Exercise("shape", tuple(f"{a} × {b}" for a, b in shapes), (shapes.index(true),), (), numbers)


#: Each exercise kind's function: ``fn(bundle, question, **options)`` → :class:`Exercise`.
EXERCISES: dict[str, Callable[..., Exercise]] = {
    "cross-argmax": cross_argmax, "next-token": next_token, "pe-off-order": pe_off_order, "mask-cells": mask_cells,
    "important-head": important_head, "norm-batch": norm_batch, "scaling": scaling, "shape": shape,
}


def compute(bundle: Bundle, kind: str, question: Question, options: tuple[tuple[str, str], ...] = ()) -> Exercise:
    """The exercise of ``kind`` on ``question`` (``options``: the tour's, as name–value pairs)."""
    return EXERCISES[kind](bundle, question, **dict(options))
