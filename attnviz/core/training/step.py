"""One optimisation step of a run, as ``Trainer.fit`` takes it: this process's rows of a global
batch as tensors, the teacher-forced loss (label smoothing, guided alignment, bfloat16 autocast
for ``precision="bf16"``), the global batch's loss over the processes, and the update (gradient
clipping, Adam). The module docstring of ``trainer`` gives the formulas. No Qt.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

import torch
import torch.nn.functional as F

from attnviz.core.data import corpora as D
from attnviz.core.model.transformer import Transformer
from attnviz.core.training.distributed import Ranks
from attnviz.core.training.guided import GuidedAlignment


class StepOptions(Protocol):
    """What a step reads of ``TrainOptions`` (at every step: a caller may change them in between)."""

    label_smoothing: float
    clip: float
    precision: str
    guided_weight: float


def label_tokens(rows: list[D.Example]) -> int:
    """The label tokens of a batch's rows (each target and its EOS): what the loss averages over."""
    return sum(len(e.tgt) + 1 for e in rows)


class TrainingStep:
    """The loss and update of one batch for ``model``, trained as ``net``: the model itself, or the
    model in DDP while ``Trainer.distribute`` runs."""

    def __init__(self, model: Transformer, optimizer: torch.optim.Optimizer, options: StepOptions, device: torch.device,
                 guided: GuidedAlignment | None):
        self.model, self.optimizer, self.options, self.device, self.guided = model, optimizer, options, device, guided
        self.net: torch.nn.Module = model

    def local_batch(self, rows: list[D.Example], ranks: Ranks) -> tuple[D.Batch, float]:
        """This process's rows of a global batch as tensors, and its share: the factor that turns
        their mean loss into their part of the global batch's loss times the number of processes
        (DDP averages the gradients; ``distributed``). 1 for one process, 0 for a stand-in row."""
        mine, real = ranks.shard(rows)
        cfg = self.model.config
        batch = D.collate(mine, cfg.pad_id, cfg.bos_id, cfg.eos_id).to(self.device)
        if ranks.world == 1:
            return batch, 1.0
        return batch, batch.n_tokens * ranks.world / label_tokens(rows) if real else 0.0

    def loss(self, batch: D.Batch) -> tuple[torch.Tensor, float | None]:
        """Teacher-forced cross-entropy with label smoothing, PAD labels ignored; with guided
        alignment, plus ``guided_weight`` times the batch's alignment term (``guided``), which comes
        second (``None`` without one). Under bfloat16 autocast with ``precision="bf16"``."""
        with self._autocast():
            if self.guided is None:
                return self._cross_entropy(self.net(batch.src, batch.tgt_in), batch), None  # logits [B, Lt, V]
            logits, align = self.guided.forward(self.net, batch)
            loss = self._cross_entropy(logits, batch)
        if align is None:
            return loss, None
        return loss + self.options.guided_weight * align, float(align.detach())

    def _autocast(self) -> AbstractContextManager[Any]:
        """bfloat16 autocast on the training device for ``precision="bf16"``; nothing for float32."""
        if self.options.precision == "float32":
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)

    def _cross_entropy(self, logits: torch.Tensor, batch: D.Batch) -> torch.Tensor:
        """Of float32 logits (bf16 under autocast; ``float()`` leaves float32 ones as they are)."""
        ignore = self.model.config.pad_id
        return F.cross_entropy(logits.float().transpose(1, 2), batch.labels, ignore_index=ignore, label_smoothing=self.options.label_smoothing)

    @staticmethod
    def global_loss(loss: torch.Tensor, share: float, ranks: Ranks) -> float:
        """The loss of the whole global batch (the same number in every process)."""
        value = float(loss.detach())
        if ranks.world == 1:
            return value
        return ranks.total(value * share / ranks.world if share else 0.0)[0]

    def optimise(self, loss: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.options.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.options.clip)
        self.optimizer.step()
