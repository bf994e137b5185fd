"""Setting up a training run: ``TrainOptions`` (how to train), the learning-rate schedule, the
device, and the tokenizers and freshly initialised model of a new run. No Qt.

Optimiser and schedule: Adam (beta1 0.9, beta2 0.98, eps 1e-9) and the paper's warm-up shape
with an explicit peak, ``schedule="inverse-sqrt"`` (the default)::

    lr(step) = lr_peak * min(step / warmup, sqrt(warmup / step))        (step = 1, 2, ...)

i.e. a linear rise to ``lr_peak`` over ``warmup`` steps, then decay with 1/sqrt(step) — the
paper's ``d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)`` rescaled so the peak is a number
you choose. ``schedule="linear"`` decays linearly to 0 at the last step instead; ``"constant"``
stays at the peak after the warm-up. Gradients are clipped to ``clip`` (global L2 norm).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch

from attnviz.core.data import corpora as D
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.errors import AttnvizError

SCHEDULES = ("inverse-sqrt", "linear", "constant")


class TrainingError(AttnvizError, RuntimeError):
    """A training run that cannot start or continue (one-line message)."""


@dataclass
class TrainOptions:
    """How to train (the model's shape is ``TransformerConfig``'s business)."""

    epochs: int = 30  # passes over the training split
    lr: float = 1e-3  # peak learning rate (reached at the end of the warm-up)
    warmup: int = 400  # warm-up steps (linear rise from 0 to lr)
    schedule: str = "inverse-sqrt"  # after the warm-up: "inverse-sqrt", "linear" (to 0), "constant"
    batch_tokens: int = 500  # padded tokens per batch (rows x longest side)
    label_smoothing: float = 0.1  # epsilon_ls; 0 = plain cross-entropy
    clip: float = 1.0  # max global gradient L2 norm (0 = no clipping)
    betas: tuple[float, float] = (0.9, 0.98)  # Adam betas
    adam_eps: float = 1e-9  # Adam epsilon
    weight_decay: float = 0.0  # Adam (L2) weight decay
    seed: int = 0  # weights, dropout and batch order
    threads: int = 1  # torch.set_num_threads while training
    device: str = "auto"  # "auto" (CUDA when present, else CPU), "cpu", "cuda", "cuda:1", ...
    log_every: int = 10  # a "step" event every N steps
    n_probes: int = 4  # probe sentences (the first valid pairs) translated at each evaluation
    eval_bleu: bool = True  # greedy-translate the valid split at each evaluation (BLEU, chrF)
    final_eval: bool = True  # at the end: token accuracy on every split, BLEU/chrF on every split

    def __post_init__(self) -> None:
        self.betas = tuple(self.betas)  # type: ignore[assignment]
        if self.schedule not in SCHEDULES:
            raise TrainingError(f"schedule must be one of {', '.join(SCHEDULES)}, not {self.schedule!r}")
        if self.epochs < 1 or self.batch_tokens < 1 or self.lr <= 0 or self.warmup < 0 or self.threads < 1:
            raise TrainingError("epochs, batch_tokens, threads must be >= 1, lr > 0 and warmup >= 0")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise TrainingError("label_smoothing must be in [0, 1)")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainOptions":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def learning_rate(step: int, options: TrainOptions, total_steps: int) -> float:
    """The learning rate for ``step`` (1-based); see the module docstring."""
    step = max(1, step)
    warm = max(1, options.warmup)
    if step <= options.warmup:
        return options.lr * step / warm
    if options.schedule == "inverse-sqrt":
        return options.lr * math.sqrt(warm / step)
    if options.schedule == "linear":
        span = max(1, total_steps - options.warmup)
        return options.lr * max(0.0, (total_steps - step) / span)
    return options.lr


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise TrainingError(f"device {name!r} asked for, but CUDA is not available")
    return dev


# -- building a run -------------------------------------------------------------------------
def build_tokenizers(
    dataset: D.Dataset, src_vocab: int = 3000, tgt_vocab: int = 2000, src_type: str = "unigram", tgt_type: str = "unigram"
) -> tuple[Tokenizer, Tokenizer]:
    """sentencepiece models trained on the training split only (source and target separately)."""
    src = _train_tokenizer("source", [p.src for p in dataset.train], src_vocab, src_type, dataset.src_spaces)
    tgt = _train_tokenizer("target", [p.tgt for p in dataset.train], tgt_vocab, tgt_type, True)
    return src, tgt


def _train_tokenizer(side: str, texts: list[str], vocab: int, kind: str, dummy_prefix: bool) -> Tokenizer:
    try:
        return Tokenizer.train(texts, vocab, kind, add_dummy_prefix=dummy_prefix)
    except RuntimeError as exc:  # sentencepiece explains in its own words; keep the useful part on one line
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        chars = len({c for t in texts for c in t if not c.isspace()})
        if "smaller than required_chars" in text:
            flag = "--src-vocab" if side == "source" else "--tgt-vocab"
            raise TrainingError(
                f"the {side} vocabulary ({vocab}) is smaller than the {chars} distinct characters of the training text; "
                f"use {flag} {chars + 50} or more"
            ) from None
        raise TrainingError(f"cannot train the {side} tokenizer ({text.split('] ')[-1][:200]})") from None


def build_model(config: TransformerConfig, seed: int = 0) -> Transformer:
    """A freshly initialised model; ``seed`` fixes the weights."""
    torch.manual_seed(seed)
    return Transformer(config)
