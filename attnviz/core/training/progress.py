"""How a run is going: the running sums of the current epoch (its training loss and guided
alignment term, saved with a checkpoint so a resumed epoch goes on counting) and the window of
steps behind each "step" event (mean loss, tokens per second, the ETA). No Qt.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from attnviz.core.training.events import StepEvent


@dataclass
class EpochTally:
    """The current epoch's sums: the loss of its batches, and the guided alignment term over its
    batches with aligned rows."""

    loss_sum: float = 0.0
    loss_n: int = 0
    align_sum: float = 0.0
    align_n: int = 0

    @classmethod
    def from_state(cls, info: dict[str, Any]) -> "EpochTally":
        """The sums a checkpoint's training_state.json saved (``state``)."""
        return cls(float(info.get("epoch_loss_sum", 0.0)), int(info.get("epoch_loss_n", 0)),
                   float(info.get("epoch_align_sum", 0.0)), int(info.get("epoch_align_n", 0)))

    def state(self) -> dict[str, Any]:
        """The sums as training_state.json keeps them."""
        return {"epoch_loss_sum": self.loss_sum, "epoch_loss_n": self.loss_n, "epoch_align_sum": self.align_sum, "epoch_align_n": self.align_n}

    def add(self, loss: float, align: float | None) -> None:
        """One batch: its loss, and its alignment term (``None``: no aligned row, or no guidance)."""
        self.loss_sum += loss
        self.loss_n += 1
        if align is not None:
            self.align_sum += align
            self.align_n += 1

    def metrics(self, guided: bool) -> dict[str, float]:
        """``train_loss``, the epoch's mean loss, and with ``guided`` ``align_loss`` (NaN without an aligned batch)."""
        metrics = {"train_loss": self.loss_sum / max(1, self.loss_n)}
        if guided:
            metrics["align_loss"] = self.align_sum / self.align_n if self.align_n else math.nan
        return metrics


@dataclass
class StepWindow:
    """The steps since the last "step" event (mean loss, tokens per second) and the pace of this
    session (for the ETA). Pauses are left out of both clocks."""

    session_t0: float  # when this session's training began
    t0: float  # when the window began
    session_steps: int = 0
    loss: float = 0.0  # sum over the window
    n: int = 0
    tokens: int = 0

    @classmethod
    def begin(cls) -> "StepWindow":
        now = time.perf_counter()
        return cls(now, now)

    def add(self, loss: float, tokens: int) -> None:
        self.session_steps += 1
        self.loss += loss
        self.n += 1
        self.tokens += tokens

    def skip(self, seconds: float) -> None:
        """Leave ``seconds`` (a pause) out of both clocks."""
        self.session_t0 += seconds
        self.t0 += seconds

    def step_event(self, step: int, epoch: int, epoch_fraction: float, lr: float, elapsed_s: float, remaining: int) -> StepEvent:
        """The "step" event of the window (``remaining``: the run's steps still to take, for the
        ETA at this session's pace); the window then starts again."""
        now = time.perf_counter()
        rate = (now - self.session_t0) / self.session_steps
        tokens_per_s = self.tokens / max(1e-9, now - self.t0)
        event = StepEvent(step, epoch, epoch_fraction, self.loss / self.n, lr, tokens_per_s, elapsed_s, max(0.0, remaining * rate))
        self.loss, self.n, self.tokens, self.t0 = 0.0, 0, 0, now
        return event
