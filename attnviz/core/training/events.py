"""Training events and the result of a run (frozen dataclasses, no Qt).

Events. ``trainer.add_callback(event, fn)``; ``fn(payload)`` is called on the training thread
(a GUI forwards it to its own thread). Events and payloads (frozen dataclasses):

* ``"start"``   ``StartEvent``: epochs, steps_per_epoch, total_steps, start_step, start_epoch,
  n_parameters, device, config (dict), options (dict), data (dict: name, sizes, split_hash).
* ``"step"``    ``StepEvent`` every ``log_every`` steps and at each epoch's last step:
  step, epoch (0-based), epoch_fraction, loss (mean over the steps since the last event),
  lr, tokens_per_s (target tokens), elapsed_s, eta_s.
* ``"eval"``    ``EvalEvent`` after each epoch: step, epoch, metrics (dict: train_loss,
  valid_loss, valid_token_accuracy, valid_bleu, valid_chrf, lr, elapsed_s), probes
  (list of ``ProbeSnapshot``: source, reference, hypothesis, src_pieces, out_pieces,
  cross_attention {layer: float32 [head, out, src]}), norm_stats ({norm name: {field: float32
  array}}; LayerNorm fields ``mean``/``var`` over the probe tokens, BatchNorm fields
  ``batch_mean``/``batch_var``/``running_mean``/``running_var`` [d_model]).
* ``"checkpoint"`` ``CheckpointEvent``: step, epoch, path, reason ("epoch", "stopped", "final").
* ``"state"``   ``StateEvent``: state ("running", "paused", "stopping").
* ``"message"`` ``MessageEvent``: text, level ("info", "warning", "error").
* ``"end"``     ``EndEvent``: status ("finished", "stopped", "failed"), message, step, epoch,
  elapsed_s, final (dict of final metrics, empty unless finished).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

EVENTS = ("start", "step", "eval", "checkpoint", "state", "message", "end")


@dataclass(frozen=True)
class StartEvent:
    epochs: int
    steps_per_epoch: int
    total_steps: int
    start_step: int
    start_epoch: int
    n_parameters: int
    device: str
    config: dict[str, Any]
    options: dict[str, Any]
    data: dict[str, Any]


@dataclass(frozen=True)
class StepEvent:
    step: int  # optimiser steps done so far (1-based after the first)
    epoch: int  # 0-based epoch the step belongs to
    epoch_fraction: float  # how far into that epoch (0..1]
    loss: float  # mean training loss (with label smoothing) over the steps since the last event
    lr: float
    tokens_per_s: float  # target tokens per second since the last event
    elapsed_s: float  # training time so far (all sessions)
    eta_s: float  # estimated seconds to the end of the last epoch


@dataclass(frozen=True)
class ProbeSnapshot:
    source: str
    reference: str
    hypothesis: str
    src_pieces: tuple[str, ...]
    out_pieces: tuple[str, ...]  # the greedy output's pieces, then "EOS" when it ended
    cross_attention: dict[int, np.ndarray]  # decoder layer -> [head, out, src] (rows sum to 1)


@dataclass(frozen=True)
class EvalEvent:
    step: int
    epoch: int
    metrics: dict[str, float]
    probes: tuple[ProbeSnapshot, ...]
    norm_stats: dict[str, dict[str, np.ndarray]]


@dataclass(frozen=True)
class CheckpointEvent:
    step: int
    epoch: int
    path: str
    reason: str


@dataclass(frozen=True)
class StateEvent:
    state: str


@dataclass(frozen=True)
class MessageEvent:
    text: str
    level: str = "info"


@dataclass(frozen=True)
class EndEvent:
    status: str  # "finished", "stopped" or "failed"
    message: str
    step: int
    epoch: int
    elapsed_s: float
    final: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainResult:
    status: str
    message: str
    step: int
    epoch: int
    elapsed_s: float
    history: list[dict[str, Any]]
    final: dict[str, Any]
    path: Path | None

    @property
    def ok(self) -> bool:
        return self.status == "finished"
