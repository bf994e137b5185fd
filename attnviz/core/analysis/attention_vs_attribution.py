"""Attention beside attribution: for one output token y_t, how much each source token matters by
six measures, and how far they agree. No Qt; the window's attribution view renders
:class:`Importance`.

The measures, each a vector over the source tokens:

* ``cross attention``: the cross-attention row t, mean over every decoder layer and head;
* ``attention received``: the encoder self-attention's column sums (how much attention each
  source token receives), mean over layers and heads, divided by the number of source tokens;
* ``rollout`` and ``flow``: row t of the decoder's rollout and attention flow down to the source
  tokens (``rollout.decoder_rollout``, ``flow.decoder_flow``; cross-attention enters both as the
  edges from each decoder layer to the encoder's top, rows rescaled to sum to 1);
* ``grad × input``, ``integrated gradients`` and ``occlusion`` of log P(y_t)
  (``attribution.py``), through the encoder's embedding only.

The attention measures are non-negative; the attribution scores have a sign (a token can make
y_t less likely). Agreement is Spearman's rank correlation of the *magnitudes* (|score|), so that
"matters a lot, against y_t" and "matters a lot, for y_t" both count as mattering, as attention
cannot say which. ``per_head`` keeps each layer's and head's cross-attention row t, so a head
that agrees with the attributions while the mean does not can be seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnviz.core.analysis.attribution import DEFAULT_STEPS, METHOD_TITLES, Question, attribution_of, make_question
from attnviz.core.analysis.flow import decoder_flow
from attnviz.core.analysis.rollout import decoder_rollout, rollout
from attnviz.core.decoding.result import DecodingResult

if TYPE_CHECKING:
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.model.transformer import Transformer

ATTENTION_MEASURES = ("cross attention", "attention received", "rollout", "flow")
ATTRIBUTION_MEASURES = tuple(METHOD_TITLES)  # grad, ig, occlusion
MEASURE_TITLES = {**{m: m for m in ATTENTION_MEASURES}, **METHOD_TITLES}


@dataclass(frozen=True, eq=False)
class Importance:
    """``measures``: name → ``[src]`` scores (attention measures >= 0; attributions signed);
    ``rho``: ``[m, m]`` Spearman correlations of the magnitudes, in ``measures``' order;
    ``per_head``: ``[layer, head, src]`` cross-attention at row t; ``completeness_gap``: integrated
    gradients' relative gap (|Σ scores − (f(x) − f(0))| / |f(x) − f(0)|) at ``n_steps``."""

    question: Question
    measures: dict[str, np.ndarray]
    rho: np.ndarray
    per_head: np.ndarray
    n_steps: int
    completeness_gap: float | None

    @property
    def source_pieces(self) -> tuple[str, ...]:
        return self.question.source.pieces

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.measures)

    def ranking(self, name: str) -> tuple[int, ...]:
        """Source positions by the magnitude of ``name``'s score, largest first."""
        return tuple(int(i) for i in np.argsort(-np.abs(self.measures[name]), kind="stable"))

    def mean_rho(self, a: tuple[str, ...], b: tuple[str, ...]) -> float:
        """The mean correlation between a measure of ``a`` and one of ``b`` (NaN pairs left out)."""
        idx = {n: i for i, n in enumerate(self.names)}
        vals = [self.rho[idx[x], idx[y]] for x in a for y in b if x in idx and y in idx and x != y]
        vals = [v for v in vals if np.isfinite(v)]
        return float(np.mean(vals)) if vals else float("nan")


def importance_for(current: DecodingResult, position: int | None, model: Transformer, tgt_tokenizer: Tokenizer,
                   n_steps: int = DEFAULT_STEPS) -> Importance | None:
    """Every measure for output token ``position`` (0-based; ``None``: the last that is not EOS)
    of ``current``; ``None`` before the first output token or without cross-attention."""
    if not current.output_ids or not current.n_layers("cross"):
        return None
    q = make_question(current.source, current.output_ids, tgt_tokenizer, model.config, position,
                      given=bool(getattr(current, "target", "")))
    return importance_of(current, q, model, n_steps)


def importance_of(current: DecodingResult, q: Question, model: Transformer, n_steps: int = DEFAULT_STEPS) -> Importance:
    """The measures of ``q`` with the attention of ``current`` (the run that produced its tokens)."""
    t = q.position
    cross = current.all_attention("cross")[:, :, : t + 1].astype(np.float64)  # [layer, head, rows, src]
    encoder = current.all_attention("encoder").astype(np.float64)
    decoder = current.all_attention("decoder")[:, :, : t + 1, : t + 1].astype(np.float64)
    measures = {"cross attention": cross[:, :, t].mean((0, 1))}
    measures["attention received"] = encoder.sum(2).mean((0, 1)) / encoder.shape[-1] if encoder.size else np.zeros(len(q.source.ids))
    enc = rollout(encoder) if encoder.size else None
    measures["rollout"] = decoder_rollout(decoder, cross, enc)["source_normalized"][t]
    measures["flow"] = decoder_flow(decoder, cross, encoder if encoder.size else None)["source_normalized"][t]
    ig = None
    for method in ATTRIBUTION_MEASURES:
        result = attribution_of(model, q, method, n_steps)
        measures[method] = np.asarray(result.scores, dtype=np.float64)
        ig = result if method == "ig" else ig
    return Importance(q, measures, rank_correlations(measures), cross[:, :, t], n_steps, ig.relative_gap if ig else None)

def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x``, ties sharing their mean rank (as Spearman's ρ counts them)."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.bincount(inverse, weights=ranks) / counts)[inverse]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation ρ of ``a`` and ``b``: Pearson's r of their average ranks."""
    return float(np.corrcoef(average_ranks(np.asarray(a, float)), average_ranks(np.asarray(b, float)))[0, 1])



def rank_correlations(measures: dict[str, np.ndarray]) -> np.ndarray:
    """Spearman's ρ of the magnitudes of every pair of measures (1 on the diagonal; NaN where a
    measure is constant)."""
    names = list(measures)
    out = np.eye(len(names))
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            a, b = np.abs(measures[names[i]]), np.abs(measures[names[j]])
            rho = np.nan if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0 else spearman(a, b)
            out[i, j] = out[j, i] = rho
    return out


def agreement(result: Importance, top: int = 3) -> dict[str, object]:
    """What :func:`finding` says, as values: ``attention`` and ``attribution`` (cross attention's
    and integrated gradients' ``top`` pieces, space-separated), ``rho`` (the mean Spearman ρ of
    the attention measures against the attributions) and ``verdict`` (a key: ``agree``,
    ``partly agree`` or ``disagree``)."""
    pieces = result.source_pieces
    att, attr = ATTENTION_MEASURES[0], "ig"
    rho = result.mean_rho(ATTENTION_MEASURES, ATTRIBUTION_MEASURES)
    return {"attention": " ".join(pieces[i] for i in result.ranking(att)[:top]),
            "attribution": " ".join(pieces[i] for i in result.ranking(attr)[:top]),
            "rho": rho, "verdict": "agree" if rho >= 0.6 else "partly agree" if rho >= 0.3 else "disagree"}


def finding(result: Importance, top: int = 3) -> str:
    """What the measures say, in one plain sentence: each side's top tokens and how far they agree."""
    return ("cross attention ranks {attention} first; integrated gradients ranks {attribution} first; "
            "attention and attribution {verdict} (mean Spearman ρ of |scores| {rho:+.2f})").format(**agreement(result, top))
