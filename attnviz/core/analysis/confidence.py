"""How sure the model is of a sentence, in numbers a learner can read beside the output.

Three measures, each computed here once:

* the mean log-probability per token of the decoded sentence, ``(1/T) Σ_t ln P(y_t | y_<t, x)``
  in nats over the tokens decoded so far (EOS included once decoded): 0 is certain; ``ln 0.5``
  ≈ -0.69 means the model gave its tokens about even odds on average;
* the share of the source's tokens that are UNK (``source_map.SourceMap``);
* whether the source is a training sentence, a held-out one (valid/test) or new
  (``examples.where_seen``).

``Confidence.unsure`` decides when the window says that the attention shown is that of a model that
does not know this sentence.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

# Thresholds, from the bundled HSK model: its training sentences decode at about -0.1 nats per token,
# its wrong translations of new and held-out sentences at -0.3 to -1.4.
LOW_MEAN_LOG_PROB = math.log(0.5)  # below this (≈ -0.69 nats per token) the model is guessing
NEW_SENTENCE_LOG_PROB = math.log(0.75)  # a sentence it was not trained on needs more than this (≈ -0.29)
MUCH_UNK = 0.25  # a quarter of the source's tokens UNK
MIN_PROB = 1e-12  # probabilities are clipped here before the log (a forced token may have P = 0)

SEEN_TEXT = {
    "train": "a training sentence",
    "valid": "held out (valid split)",
    "test": "held out (test split)",
    "new": "a new sentence",
    "": "corpus not available",
    "pending": "looking it up in the corpus…",
}


REASON_TEXT = {
    "unk": "{value:.0%} of the source is UNK",
    "low": "P ≈ {value:.2f} per token",
    "new": "not a training sentence; P ≈ {value:.2f} per token",
}


def mean_log_prob(probs: Iterable[float]) -> float | None:
    """``(1/T) Σ ln p_t`` over the token probabilities ``probs`` (nats); None for no tokens."""
    logs = [math.log(max(float(p), MIN_PROB)) for p in probs]
    return sum(logs) / len(logs) if logs else None


@dataclass(frozen=True)
class Confidence:
    """The three measures of one sentence, and what they add up to."""

    mean_log_prob: float | None  # nats per token (None before the first token)
    n_tokens: int  # how many decoded tokens the mean is over
    unk_share: float  # UNK tokens / source tokens
    mostly_unknown: bool  # most of the source (by tokens or characters) is UNK
    seen: str  # "train" | "valid" | "test" | "new" | "" (the corpus could not be read) | "pending" (being looked up)

    @property
    def mean_prob(self) -> float | None:
        """exp(mean log-probability): the geometric mean of the tokens' probabilities."""
        return None if self.mean_log_prob is None else math.exp(self.mean_log_prob)

    def reason_codes(self) -> tuple[tuple[str, float], ...]:
        """Why the model is unsure of this sentence, as ``(code, value)`` (empty when it is not):
        ``("unk", share of UNK)``, ``("low", P per token)`` or ``("new", P per token)`` (not a
        training sentence); :data:`REASON_TEXT` words them."""
        if self.mostly_unknown or self.unk_share > MUCH_UNK:
            return (("unk", self.unk_share),)  # the probabilities of a translation of UNK say nothing more
        lp = self.mean_log_prob
        if lp is not None and lp < LOW_MEAN_LOG_PROB:
            return (("low", math.exp(lp)),)
        if lp is not None and self.seen not in ("train", "pending") and lp < NEW_SENTENCE_LOG_PROB:
            return (("new", math.exp(lp)),)
        return ()

    def reasons(self) -> tuple[str, ...]:
        """Why the model is unsure of this sentence, in words (empty when it is not)."""
        return tuple(REASON_TEXT[code].format(value=value) for code, value in self.reason_codes())

    @property
    def unsure(self) -> bool:
        return bool(self.reasons())

    def summary(self) -> str:
        """One line: "mean log P -0.23/token (P ≈ 0.79, 6 tokens) · source UNK 0% · a training sentence"."""
        if self.mean_log_prob is None:
            lp = "mean log P: no tokens yet"
        else:
            value = self.mean_log_prob if self.mean_log_prob <= -0.005 else 0.0  # never "-0.00"
            lp = f"mean log P {value:.2f}/token (P ≈ {self.mean_prob:.2f}, {self.n_tokens} tokens)"
        return f"{lp} · source UNK {self.unk_share:.0%} · {SEEN_TEXT.get(self.seen, self.seen)}"


def assess(probs: Iterable[float], unk_share: float, mostly_unknown: bool, seen: str) -> Confidence:
    """The ``Confidence`` of a sentence from its decoded tokens' probabilities, its source's UNK
    share and where the corpus has it."""
    probs = list(probs)
    return Confidence(mean_log_prob(probs), len(probs), float(unk_share), bool(mostly_unknown), seen)
