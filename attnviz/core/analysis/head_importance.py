"""Head importance on one sentence: for every attention head of every kind, how much the target's
log-probability changes when that head alone is ablated (``attnviz head-importance``). No Qt.

Every single-head ablation is one row of one batched teacher-forced pass (``RowHeads``): row 0 is
the clean model, row 1 + k ablates the k-th head of ``heads_in_order``. The target is the typed one
or, without one, the clean model's greedy output, as in ``ablation.ablate`` (a decoder-only model's:
what follows its prompt, scored in the same pass as ``attribution.token_log_probs``); a ``mean``
ablation replaces a head's Z_i by its mean over the positions of the clean pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.analysis.ablation import scored_log_prob
from attnviz.core.analysis.attribution import after_prompt, token_log_probs
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.core.model.interventions import ABLATION_KINDS, InterventionError, RowHeads
from attnviz.core.model.sites import KINDS, AttentionSite, attention_sites, n_layers
from attnviz.core.model.trace import Trace

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.decoding.result import DecodingResult
    from attnviz.core.model.transformer import Transformer

ROWS_PER_PASS = 64  # ablations per batched pass: bounds the memory of a large model's pass


@dataclass(frozen=True)
class HeadImportance:
    """Δ log P(target) per ablated head: ``delta[kind]`` is ``[layer, head]`` (0-based), nats;
    negative: the head helped the model toward the target."""

    source_pieces: tuple[str, ...]
    target_ids: tuple[int, ...]
    target_pieces: tuple[str, ...]
    target_given: bool
    kind: str  # zero | mean | uniform
    log_prob: float  # clean log P(target | source), nats
    delta: dict[str, np.ndarray]
    notices: tuple[str, ...]

    def ranked(self) -> list[tuple[str, int, int, float]]:
        """(kind, layer, head, Δ) of every head, 0-based, the largest |Δ| first."""
        rows = [(k, int(layer), int(h), float(d[layer, h])) for k, d in self.delta.items() for layer, h in np.ndindex(d.shape)]
        return sorted(rows, key=lambda r: -abs(r[3]))


def head_importance(bundle: Bundle, source: str, target: str | None = None, kind: str = "zero",
                    kinds: Sequence[str] = KINDS, max_len: int | None = None) -> HeadImportance:
    """Ablate each head of ``kinds`` alone on ``source``; see the module docstring."""
    source_ids, target_ids, notices = _target(bundle, source, target, max_len)
    return importance_of(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, source_ids, target_ids, kind, kinds,
                         target is not None, notices)


def head_importance_for(current: DecodingResult, model: Transformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer,
                        kind: str = "zero") -> HeadImportance | None:
    """The heads' importance for the tokens of ``current`` (a decoding result as it stands, or a
    teacher-forced target): the window's view; ``None`` before the first decoded token, or for a
    model with no attention layers (no heads)."""
    target_ids = after_prompt(model.config, current.src_ids, current.output_ids)
    if not target_ids or not any(n_layers(model.config, k) for k in KINDS):
        return None
    return importance_of(model, src_tokenizer, tgt_tokenizer, current.src_ids, target_ids, kind,
                         given=bool(getattr(current, "target", "")))


def importance_of(model: Transformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, source_ids: Sequence[int],
                  target_ids: Sequence[int], kind: str = "zero", kinds: Sequence[str] = KINDS, given: bool = False,
                  notices: Sequence[str] = ()) -> HeadImportance:
    """Every head of ``kinds`` ablated alone on ``source_ids``, scoring ``target_ids`` (a decoder-only
    model's: what follows its prompt, ``source_ids``)."""
    if kind not in ABLATION_KINDS:
        raise InterventionError(f"unknown ablation kind {kind!r} (one of {', '.join(ABLATION_KINDS)})")
    sites = [s for k in kinds for s in attention_sites(model.config, k)]
    clean, reference = scored_log_prob(model, source_ids, target_ids, names=[s.name("z") for s in sites] if kind == "mean" else ())
    deltas = ablated_log_probs(model, source_ids, target_ids, sites, kind, reference) - clean
    h = model.config.n_heads
    delta = {k: np.stack([deltas[i * h:(i + 1) * h] for i, s in enumerate(sites) if s.kind == k]) for k in kinds if n_layers(model.config, k)}
    return HeadImportance(tuple(src_tokenizer.pieces(source_ids)), tuple(target_ids), tuple(tgt_tokenizer.pieces(target_ids)),
                          given, kind, clean, delta, tuple(notices))


def _target(bundle: Bundle, source: str, target: str | None, max_len: int | None) -> tuple[list[int], list[int], list[str]]:
    """The source ids, the target ids to score (typed: y + EOS; else the clean greedy output; a
    decoder-only model's without its prompt) and notices."""
    if target is not None:
        forced = teacher_forced_from_bundle(bundle, source, target, top_k=1, names=())
        return list(forced.source.ids), list(after_prompt(bundle.config, forced.source.ids, forced.output_ids)), list(forced.notices)
    clean = DecodingSession.from_bundle(bundle, source, capture=False, max_len=max_len)
    clean.run()
    return list(clean.source.ids), list(after_prompt(bundle.config, clean.source.ids, clean.output_ids)), list(clean.notices)


def ablated_log_probs(model: Transformer, source_ids: Sequence[int], target_ids: Sequence[int],
                      sites: Sequence[AttentionSite], kind: str = "zero", reference: Trace | None = None) -> np.ndarray:
    """log P(target) with each head of ``sites`` ablated alone, in the order site by site, head by
    head: ``[len(sites) * n_heads]``, batched ``ROWS_PER_PASS`` ablations to a pass."""
    h = model.config.n_heads
    heads = [(i, j) for i in range(len(sites)) for j in range(h)]
    out = [_log_probs(model, source_ids, target_ids, sites, heads[a:a + ROWS_PER_PASS], kind, reference)
           for a in range(0, len(heads), ROWS_PER_PASS)]
    return np.concatenate(out) if out else np.zeros(0)


def _log_probs(model: Transformer, source_ids: Sequence[int], target_ids: Sequence[int], sites: Sequence[AttentionSite],
               heads: Sequence[tuple[int, int]], kind: str, reference: Trace | None) -> np.ndarray:
    """One batched pass: row r ablates head ``heads[r]`` = (site index, head)."""
    cfg, n = model.config, len(heads)
    plan = []
    for i, site in enumerate(sites):
        rows = torch.zeros(n, cfg.n_heads, dtype=torch.bool)
        for r, (si, j) in enumerate(heads):
            rows[r, j] = si == i
        if rows.any():
            plan.append(RowHeads(site, rows, kind, _mean(site, reference) if kind == "mean" else None))
    return token_log_probs(model, [source_ids] * n, target_ids, plan)[0].sum(-1)


def _mean(site: AttentionSite, reference: Trace) -> torch.Tensor:
    z = torch.from_numpy(np.array(reference[site.name("z")], dtype=np.float32))  # [head, q, d_k]
    return z.mean(dim=1)


def head_label(kind: str, layer: int, head: int) -> str:
    """``kind:layer:head``, 1-based as on screen."""
    return f"{kind}:{layer + 1}:{head + 1}"


def figure_data(report: HeadImportance) -> FigureData:
    """Δ log P as ``[kind, layer, head]`` (kinds in order, layers and heads labelled 1-based), with
    the clean log P and the scored target ids: what the view and ``attnviz head-importance`` write.
    A kind with fewer layers than another (1 encoder and 2 decoder layers) has NaN past its last."""
    kinds = tuple(report.delta)
    depth = max(report.delta[k].shape[0] for k in kinds)
    delta = np.full((len(kinds), depth, next(iter(report.delta.values())).shape[1]), np.nan)
    for i, k in enumerate(kinds):
        delta[i, : report.delta[k].shape[0]] = report.delta[k]
    coords = {"kind": kinds, "layer": tuple(str(i + 1) for i in range(delta.shape[1])),
              "head": tuple(str(i + 1) for i in range(delta.shape[2]))}
    extras = {"log_prob": np.array(report.log_prob), "target_ids": np.array(report.target_ids)}
    return FigureData(f"head importance · Δ log P(target) when one head is ablated ({report.kind})", ("kind", "layer", "head"),
                      {"delta_log_prob": delta}, coords, extras)
