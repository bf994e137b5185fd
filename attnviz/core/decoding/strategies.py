"""Decoding strategies (``Greedy``, ``Sampling``, ``BeamSearch``), ``parse_strategy`` for the
command line, and ``DecodingError``, the one-line error every decoding module raises. No Qt."""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnviz.errors import AttnvizError


class DecodingError(AttnvizError, ValueError):
    """Input or a request the decoding cannot honour; ``str(err)`` is one line for the user."""


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
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature) and self.temperature > 0):
            raise DecodingError(f"temperature must be a positive number, not {self.temperature!r}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise DecodingError(f"top-k must be a non-negative integer (0 = no limit), not {self.top_k!r}")
        if not (isinstance(self.top_p, (int, float)) and 0.0 < self.top_p <= 1.0):
            raise DecodingError(f"top-p must be in (0, 1], not {self.top_p!r}")

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
        if not isinstance(self.width, int) or self.width < 1:
            raise DecodingError(f"beam width must be a positive integer, not {self.width!r}")
        if not (isinstance(self.length_penalty, (int, float)) and self.length_penalty >= 0):
            raise DecodingError(f"length penalty must be >= 0, not {self.length_penalty!r}")

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
