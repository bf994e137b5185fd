"""What a run keeps of its finished epochs: the evaluation after each one (a history row of
valid-split metrics and the probe snapshots, both kept in meta.json; ``EpochRecords``) and the
running sum of the last epochs' weights for checkpoint averaging (``WeightAverage``). No Qt.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from attnviz.core.data import corpora as D
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.model.transformer import Transformer
from attnviz.core.training.evaluation import history_row, probe_records, probe_snapshots, valid_metrics
from attnviz.core.training.events import EvalEvent


class RecordOptions(Protocol):
    """What the records read of ``TrainOptions``."""

    n_probes: int
    eval_bleu: bool


class EpochRecords:
    """The history rows and probe snapshots of a run (those of the epochs before a resume come from
    its meta.json), and the probe sentences: the first valid pairs (training pairs without any)."""

    def __init__(self, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, dataset: D.Dataset, options: RecordOptions,
                 meta: dict[str, Any]):
        self.model, self.src_tok, self.tgt_tok, self.options = model, src_tok, tgt_tok, options
        self.dataset = dataset
        self.valid_examples = D.encode_pairs(dataset.valid, src_tok, tgt_tok, model.config.max_len)
        self.probes: list[D.Pair] = list((dataset.valid or dataset.train)[: options.n_probes])
        self.history: list[dict[str, Any]] = list(meta.get("history", []))
        self.snapshots: list[dict[str, Any]] = list(meta.get("snapshots", []))

    def evaluate(self, step: int, epoch: int, train: dict[str, float], lr: float, elapsed_s: float) -> EvalEvent:
        """After epoch ``epoch`` (0-based): the valid-split metrics after ``train`` (the epoch's
        training figures) and the probe snapshots, recorded and returned as an "eval" event."""
        metrics = dict(train)
        metrics.update(valid_metrics(self.model, self.src_tok, self.tgt_tok, self.dataset.valid, self.valid_examples, self.options.eval_bleu))
        metrics["lr"] = lr
        metrics["elapsed_s"] = elapsed_s
        probes, norms = probe_snapshots(self.model, self.src_tok, self.tgt_tok, self.probes)
        self.history.append(history_row(epoch + 1, step, metrics))
        self.snapshots.append({"epoch": epoch + 1, "step": step, "probes": probe_records(probes)})
        return EvalEvent(step, epoch, metrics, tuple(probes), norms)

    def probe_sources(self) -> list[dict[str, Any]]:
        """The probe sentences as meta.json lists them."""
        tok = self.src_tok
        return [{"id": p.id, "source": p.src, "reference": p.tgt, "src_pieces": tok.pieces(tok.encode(p.src))} for p in self.probes]


class WeightAverage:
    """The running sum of a model's weights at the end of some epochs (checkpoint averaging of the
    last epochs): floating tensors are averaged, the others (BatchNorm's batch count) taken from the
    model as it is. Saved with the training state as ``avg.NAME`` tensors."""

    def __init__(self, sums: dict[str, torch.Tensor] | None = None, n: int = 0, first: int | None = None):
        self.sums = dict(sums or {})
        self.n = n
        self.first = first  # the (0-based) epoch of the first weights summed

    @classmethod
    def from_state(cls, info: dict[str, Any], tensors: dict[str, torch.Tensor]) -> "WeightAverage":
        sums = {k[4:]: v for k, v in tensors.items() if k.startswith("avg.")}
        n = int(info.get("averaged_epochs", 0))
        first = info.get("averaged_from")
        return cls(sums, n, int(first) if first is not None else None) if sums and n > 0 else cls()

    def add(self, model: torch.nn.Module, epoch: int, start: int) -> None:
        """Sum the weights at the end of ``epoch``, the averaging window starting at epoch ``start``;
        sums from before the window are dropped first (a run resumed to more epochs moves it)."""
        if self.n and (self.first is None or self.first < start):
            self.sums, self.n = {}, 0
        if not self.n:
            self.first = epoch
        for name, t in model.state_dict().items():
            if t.is_floating_point():
                value = t.detach().to("cpu", torch.float64)
                self.sums[name] = self.sums[name] + value if name in self.sums else value.clone()
        self.n += 1

    def load_into(self, model: torch.nn.Module) -> None:
        state = model.state_dict()
        for name, total in self.sums.items():
            state[name] = (total / self.n).to(state[name].dtype)
        model.load_state_dict(state)

    def state_tensors(self) -> dict[str, torch.Tensor]:
        return {f"avg.{name}": t for name, t in self.sums.items()}
