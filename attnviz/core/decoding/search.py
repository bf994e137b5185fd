"""The search state a ``DecodingSession`` keeps (hypotheses, states, model-call records) and
the strategies' mechanics (``SessionSearch``: sampling, ranking, beam candidates). No Qt."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID
from attnviz.core.decoding.common import _row_trace
from attnviz.core.decoding.strategies import BeamSearch, Sampling
from attnviz.core.model.trace import Trace
from attnviz.core.model.transformer import DecoderCache


# -- internal state -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Hyp:
    tokens: tuple[int, ...]  # SOS first
    log_prob: float
    finished: bool
    origin: tuple[tuple[int, bool], ...]  # per step: (row of that step's batch, forced)

    def extend(self, token: int, logp: float, row: int, forced: bool) -> "_Hyp":
        return _Hyp(self.tokens + (token,), self.log_prob + logp, token == EOS_ID, self.origin + ((row, forced),))


@dataclass(frozen=True)
class _State:
    live: tuple[_Hyp, ...]  # unfinished hypotheses; the cache's batch rows follow this order
    finished: tuple[_Hyp, ...]
    ranked: tuple[_Hyp, ...]  # live + finished, best first; ranked[0] is the session's hypothesis
    cache: DecoderCache | None
    rng_state: torch.Tensor | None
    done: bool
    notice: str | None = None


@dataclass
class _Record:
    """What one model call produced (batch = the live hypotheses it was fed)."""

    trace: Trace
    batched: bool  # trace keeps a batch dimension (beam search with several rows)
    logits: torch.Tensor  # [n, V]
    probs: torch.Tensor  # [n, V] float32 softmax (= generator.probs)
    rows: dict[int, Trace] = field(default_factory=dict)

    def row_trace(self, row: int) -> Trace:
        if not self.batched:
            return self.trace
        if row not in self.rows:
            self.rows[row] = _row_trace(self.trace, row)
        return self.rows[row]


class SessionSearch:
    """How a ``DecodingSession`` chooses tokens (a mixin: the state is the session's)."""

    def _sample(self, logits: torch.Tensor, s: Sampling, gen: torch.Generator) -> int:
        x = logits.double() / s.temperature
        x[PAD_ID] = -math.inf
        x[BOS_ID] = -math.inf
        probs = torch.softmax(x, -1)
        if s.top_k and s.top_k < probs.numel():
            kth = torch.topk(probs, s.top_k).values[-1]
            probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
        if s.top_p < 1.0:
            sorted_p, order = torch.sort(probs, descending=True)
            cum = torch.cumsum(sorted_p, 0) / sorted_p.sum()
            keep = (cum - sorted_p / sorted_p.sum()) < s.top_p  # the smallest prefix reaching top_p
            mask = torch.zeros_like(probs, dtype=torch.bool)
            mask[order[keep]] = True
            probs = torch.where(mask, probs, torch.zeros_like(probs))
        return int(torch.multinomial(probs / probs.sum(), 1, generator=gen))

    def _rank_key(self, h: _Hyp) -> float:
        s = self._strategy
        if isinstance(s, BeamSearch) and s.length_penalty:
            return h.log_prob / (((5.0 + len(h.tokens) - 1) / 6.0) ** s.length_penalty)
        return h.log_prob

    def _beam_candidates(self, st: _State, logp: torch.Tensor, s: BeamSearch) -> tuple[tuple[_Hyp, ...], tuple[_Hyp, ...]]:
        n, v = logp.shape
        scores = torch.tensor([h.log_prob for h in st.live], dtype=torch.float64)[:, None] + logp  # [n, V]
        k2 = min(2 * s.width, n * v)
        top = torch.topk(scores.view(-1), k2)
        live: list[_Hyp] = []
        fin = list(st.finished)
        for rank, (sc, idx) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
            if sc == -math.inf:
                break
            row, token = divmod(idx, v)
            hyp = st.live[row].extend(token, float(logp[row, token]), row, False)
            if token == EOS_ID:
                if rank < s.width:
                    fin.append(hyp)
            else:
                live.append(hyp)
                if len(live) == s.width:
                    break
        fin.sort(key=self._rank_key, reverse=True)
        return tuple(live), tuple(fin[: s.width])
