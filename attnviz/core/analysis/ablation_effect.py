"""What an ablation changes on the sentence on screen: the translation before and after, the
next-token distribution at the current row before and after, and where every head's attention
moved. No Qt; the window's ablation view renders :class:`AblationEffect`.

"Before" is the model as trained; "after" is the model with the window's ablated heads
(:class:`~attnviz.core.analysis.ablation.HeadSet`). The translations are greedy, whatever
strategy the window uses. The distributions and the attention are those of two teacher-forced
passes over the tokens on screen (the ablated run's), one without and one with the ablation, so
both read the same prefix: the change is the ablation's alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.decoding.result import DecodingResult, model_device
from attnviz.core.decoding.session import DecodingSession, forced_first_of
from attnviz.core.model.interventions import checked
from attnviz.core.model.sites import KINDS, attention_sites

if TYPE_CHECKING:
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.model.trace import Change
    from attnviz.core.model.transformer import Transformer

TOP = 8  # tokens shown of the next-token distributions (the union of both top lists, cut to this)


@dataclass(frozen=True, eq=False)
class AblationEffect:
    """``before``/``after``: greedy translations; ``row``: the decoder row compared (its input
    ``row_input``); ``pieces``: the most likely next tokens of either run, with ``p_before`` and
    ``p_after``; ``delta``: kind → ``[layer, head, query, key]`` attention after minus before;
    ``moved``: kind → ``[layer, head]`` how far each head's attention row moved (total
    variation ½Σ|ΔA| at ``row`` for the decoder kinds, its mean over the source rows for the
    encoder); ``labels``: kind → (query labels, key labels)."""

    heads: HeadSet
    before: str
    after: str
    row: int
    row_input: str
    pieces: tuple[str, ...]
    p_before: np.ndarray
    p_after: np.ndarray
    delta: dict[str, np.ndarray]
    moved: dict[str, np.ndarray]
    labels: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]


def ablation_effect(result: DecodingResult, row: int, model: Transformer, src_tokenizer: Tokenizer,
                    tgt_tokenizer: Tokenizer, heads: HeadSet) -> AblationEffect | None:
    """The effect of ``heads`` on ``result`` (the ablated run on screen) at decoder ``row``;
    ``None`` without heads or before the first row."""
    if not heads or not result.input_ids or not 0 <= row < len(result.input_ids):
        return None
    clean = _greedy(model, src_tokenizer, tgt_tokenizer, result.source.text, ())
    plan = heads.plan(model, clean.source.ids, clean.output_ids)
    ablated = _greedy(model, src_tokenizer, tgt_tokenizer, result.source.text, plan)
    p0, a0 = _forced(model, result, row, ())
    p1, a1 = _forced(model, result, row, plan)
    top = _top(p0, p1)
    delta = {k: a1[k] - a0[k] for k in a0}
    return AblationEffect(
        heads, clean.translation(), ablated.translation(), row, result.input_pieces[row], tuple(tgt_tokenizer.pieces(top)),
        p0[top], p1[top], delta, {k: _moved(k, d, row) for k, d in delta.items()}, _labels(result, delta),
    )


def _greedy(model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, source: str, plan: list[Change] | tuple) -> DecodingSession:
    run = DecodingSession(model, src_tok, tgt_tok, source, capture=False, interventions=plan, forced_first_token=forced_first_of(tgt_tok))
    run.run()
    return run


def _forced(model: Transformer, result: DecodingResult, row: int, plan) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The next-token distribution at ``row`` and every kind's ``[layer, head, q, k]`` attention of
    one teacher-forced pass over ``result``'s fed tokens, with ``plan``."""
    cfg = model.config
    sites = {k: attention_sites(cfg, k) for k in KINDS}
    names = [s.name("weights") for ss in sites.values() for s in ss]
    device = model_device(model)
    with torch.inference_mode():
        logits, trace = model.run_with_trace(torch.tensor([list(result.source.ids)], device=device),
                                             torch.tensor([list(result.input_ids)], device=device),
                                             names=names, interventions=checked(plan, cfg))
    probs = torch.softmax(logits[0, row].double(), -1).cpu().numpy()
    attention = {k: np.stack([np.asarray(trace[s.name("weights")], dtype=np.float64) for s in ss]) for k, ss in sites.items() if ss}
    return probs, attention


def _top(p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """The ids most likely before or after, by the larger of the two probabilities, best first."""
    both = np.maximum(p0, p1)
    return np.argsort(-both, kind="stable")[:TOP]


def _moved(kind: str, delta: np.ndarray, row: int) -> np.ndarray:
    tv = 0.5 * np.abs(delta).sum(-1)  # [layer, head, query]
    return tv.mean(-1) if kind == "encoder" else tv[..., row]


def _labels(result: DecodingResult, delta: dict[str, np.ndarray]) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    src, tgt = tuple(result.src_pieces), tuple(result.input_pieces)
    axes = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}
    return {k: axes[k] for k in delta}
