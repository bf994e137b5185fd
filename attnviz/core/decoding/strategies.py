"""Decoding strategies (``Greedy``, ``Sampling``, ``BeamSearch``), the ranges of their parameters
(``BEAM_WIDTH`` … ``SEED``: what the command line, the window's controls and session files accept),
``parse_strategy`` for the command line, ``DecodingError`` (the one-line error every decoding
module raises), and the strategies' mechanics as plain functions over a ``Hypothesis``:
``sample_token``, ``rank_score``, ``beam_candidates``. No Qt."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnviz.core.model.config import MAX_SIZE, Rule, shown
from attnviz.errors import AttnvizError

SEED_LIMIT = 2**63  # seeds are 0 .. 2**63 - 1 (what torch.Generator.manual_seed takes)

# -- the parameters' ranges: checked when a strategy is made, before anything is allocated --------------
BEAM_WIDTH = Rule(int, 1, 64)  # each step scores width x vocabulary candidates and keeps width beams' matrices
LENGTH_PENALTY = Rule(float, 0.0, 10.0)  # GNMT uses 0.6 .. 1; ((5 + n) / 6) ** 10 stays finite at any length
TEMPERATURE = Rule(float, 0.01, 100.0)  # logits / T: below 0.01 is greedy in all but name, above 100 uniform
TOP_K = Rule(int, 0, MAX_SIZE)  # 0: no limit; no vocabulary is larger
TOP_P = Rule(float, 0.0, 1.0, low_open=True)  # 1: no limit
SEED = Rule(int, 0, SEED_LIMIT - 1)


class DecodingError(AttnvizError, ValueError):
    """Input or a request the decoding cannot honour; ``str(err)`` is one line for the user."""


def check_parameter(what: str, rule: Rule, value: object) -> None:
    """``DecodingError`` naming ``what`` and its range unless ``rule`` accepts ``value``."""
    if not rule.accepts(value):
        raise DecodingError(f"{what} must be {rule.describe()}, not {shown(value)}")


# -- strategies -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Greedy:
    """Always the most likely token (argmax)."""

    def describe(self) -> str:
        return "greedy"


@dataclass(frozen=True)
class Sampling:
    """Draw the next token from softmax(logits / temperature), optionally restricted to the
    ``top_k`` most likely tokens (0: all) and to the smallest set whose probability reaches
    ``top_p`` (1.0: all). Reproducible: the same ``seed`` gives the same tokens."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_parameter("temperature", TEMPERATURE, self.temperature)
        check_parameter("top-k (0: no limit)", TOP_K, self.top_k)
        check_parameter("top-p (1: no limit)", TOP_P, self.top_p)
        check_parameter("the seed", SEED, self.seed)

    def describe(self) -> str:
        extra = "".join(
            [f", top-k {self.top_k}" if self.top_k else "", f", top-p {self.top_p:g}" if self.top_p < 1 else ""]
        )
        return f"sampling (temperature {self.temperature:g}{extra}, seed {self.seed})"


@dataclass(frozen=True)
class BeamSearch:
    """Keep the ``width`` best partial translations. Beams are ranked by
    ``log P / lp``, ``lp = ((5 + n) / 6) ** length_penalty`` (GNMT; ``n`` generated tokens,
    EOS included; 0 ranks by plain log-probability). The search ends when the best-ranked
    beam has ended with EOS, or at the maximum length."""

    width: int = 4
    length_penalty: float = 0.6

    def __post_init__(self) -> None:
        check_parameter("beam width", BEAM_WIDTH, self.width)
        check_parameter("length penalty", LENGTH_PENALTY, self.length_penalty)

    def describe(self) -> str:
        return f"beam search (width {self.width}, length penalty {self.length_penalty:g})"


Strategy = Greedy | Sampling | BeamSearch


def parse_strategy(text: str, seed: int = 0) -> Strategy:
    """``"greedy"``, ``"beam"`` / ``"beam:K"``, ``"sample"`` / ``"sample:T"`` (temperature T)."""
    s = (text or "").strip().lower()
    name, _, arg = s.partition(":")
    try:
        if name == "greedy" and not arg:
            return Greedy()
        if name == "beam":
            return BeamSearch(width=int(arg) if arg else 4)
        if name in ("sample", "sampling"):
            return Sampling(temperature=float(arg) if arg else 1.0, seed=seed)
    except ValueError as exc:
        if isinstance(exc, DecodingError):
            raise
        raise DecodingError(f"bad strategy {text!r}: {arg!r} is not a number") from None
    raise DecodingError(f"unknown strategy {text!r} (expected greedy, beam:K or sample:T)")


# -- mechanics ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hypothesis:
    """One partial translation of a search (greedy and sampling keep one)."""

    tokens: tuple[int, ...]  # SOS first
    log_prob: float  # sum of log-probabilities of the generated tokens
    finished: bool  # ended with EOS
    origin: tuple[tuple[int, bool], ...]  # per step: (row of that step's batch, forced)

    def extend(self, token: int, logp: float, row: int, forced: bool, eos_id: int) -> Hypothesis:
        return Hypothesis(self.tokens + (token,), self.log_prob + logp, token == eos_id, self.origin + ((row, forced),))


def sample_token(logits: torch.Tensor, s: Sampling, gen: torch.Generator, banned: Sequence[int]) -> int:
    """Draw one token from ``logits`` ``[vocab]`` as ``s`` says (``banned`` ids never), advancing ``gen``."""
    x = logits.double() / s.temperature
    x[list(banned)] = -math.inf
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


def rank_score(h: Hypothesis, strategy: Strategy) -> float:
    """What hypotheses are ranked by: ``log P / lp`` in a beam search with a length penalty, else ``log P``."""
    if isinstance(strategy, BeamSearch) and strategy.length_penalty:
        return h.log_prob / (((5.0 + len(h.tokens) - 1) / 6.0) ** strategy.length_penalty)
    return h.log_prob


def beam_candidates(
    live: Sequence[Hypothesis], finished: Sequence[Hypothesis], logp: torch.Tensor, s: BeamSearch, eos_id: int
) -> tuple[tuple[Hypothesis, ...], tuple[Hypothesis, ...]]:
    """One beam-search step: from the ``live`` hypotheses and their next-token ``logp`` ``[n, vocab]``,
    the new live beams (at most ``s.width``) and the best ``s.width`` finished ones, best first."""
    n, v = logp.shape
    scores = torch.tensor([h.log_prob for h in live], dtype=torch.float64)[:, None] + logp  # [n, V]
    top = torch.topk(scores.view(-1), min(2 * s.width, n * v))
    new_live: list[Hypothesis] = []
    fin = list(finished)
    for rank, (sc, idx) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
        if sc == -math.inf:
            break
        row, token = divmod(idx, v)
        hyp = live[row].extend(token, float(logp[row, token]), row, False, eos_id)
        if token == eos_id:
            if rank < s.width:
                fin.append(hyp)
        else:
            new_live.append(hyp)
            if len(new_live) == s.width:
                break
    fin.sort(key=lambda h: rank_score(h, s), reverse=True)
    return tuple(new_live), tuple(fin[: s.width])
