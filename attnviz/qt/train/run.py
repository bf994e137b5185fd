"""The Train panel's run plumbing: what a run needs and the part that runs in the worker thread.

``TrainRequest`` (the form's choices), the model sizes and data choices the form offers, the
dataset loading, ``summarize_norm_stats`` (one number per norm site and statistic, for curves over
training) and ``TrainRun``, the state shared between the GUI thread and the worker thread of one run:
the trainer's callbacks only append to its event queue, which the panel drains on the GUI thread.

No widgets here, and no torch at import time: the worker's function imports the core inside the worker.
"""

from __future__ import annotations

import collections
import math
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Model sizes offered in the panel (TransformerConfig fields).
MODEL_SIZES: dict[str, tuple[str, dict[str, Any]]] = {
    "tiny": ("Tiny · d_model 32, 2 heads, 1+1 layers", dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64)),
    "small": ("Small · d_model 64, 4 heads, 2+2 layers", dict(d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=256)),
    "base": ("Base · d_model 128, 4 heads, 3+3 layers", dict(d_model=128, n_heads=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=512)),
    "large": ("Large · d_model 256, 8 heads, 3+3 layers", dict(d_model=256, n_heads=8, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024)),
}
DATA_CHOICES: dict[str, str] = {
    "hsk-zh-en": "HSK zh→en (4,354 sentence pairs)  汉英句子",
    "copy": "Synthetic · copy digits",
    "reverse": "Synthetic · reverse digits",
    "sort": "Synthetic · sort digits",
    "tsv": "TSV file (source<TAB>target)…",
}
#: The synthetic tasks among DATA_CHOICES: ``corpora.SYNTHETIC_TASKS``, spelled out so that this module
#: imports no torch (a test keeps the two equal).
SYNTHETIC_CHOICES = ("copy", "reverse", "sort")
STATE_TEXT = {
    "idle": "Ready", "preparing": "Preparing data and tokenizers…", "running": "Training", "paused": "Paused",
    "stopping": "Stopping: saving a checkpoint…", "finished": "Finished", "stopped": "Stopped", "failed": "Failed",
}
ACTIVE_STATES = ("preparing", "running", "paused", "stopping")


@dataclass
class TrainRequest:
    """Everything one run needs; built from the form (``TrainControls.request()``) or by hand."""

    data: str = "reverse"  # "hsk-zh-en", "copy", "reverse", "sort" or "tsv"
    tsv_path: str = ""  # for data == "tsv"
    n_examples: int = 2000  # synthetic tasks: how many pairs
    size: str = "small"  # a key of MODEL_SIZES
    norm: str = "layer"  # "layer" | "batch"
    placement: str = "pre"  # "pre" | "post"
    epochs: int = 10
    lr: float = 1e-3
    warmup: int = 400
    batch_tokens: int = 500
    dropout: float = 0.1
    threads: int = 1
    out_dir: str = ""
    seed: int = 0
    max_len: int = 64
    extra_options: dict[str, Any] = field(default_factory=dict)  # further TrainOptions fields

    @property
    def synthetic(self) -> bool:
        return self.data in SYNTHETIC_CHOICES

    def describe(self) -> str:
        norm = "LayerNorm" if self.norm == "layer" else "BatchNorm"
        return f"{self.data} · {self.size} · {norm} ({self.placement}-norm) · {self.epochs} epochs"


# ---------------------------------------------------------------------------------------------
# The part that runs in the worker thread (imports the core there)
# ---------------------------------------------------------------------------------------------
def summarize_norm_stats(norm_stats: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, float]]:
    """One number per statistic and norm site, for curves over training.

    LayerNorm sites (``mean``/``var`` per probe token): ``token_std`` (mean of √var: how large the
    activations entering the norm are) and ``token_abs_mean`` (mean |mean|). BatchNorm sites:
    ``running_std`` and ``batch_std`` (means over the features of √running_var and √batch_var)
    and ``running_mean_abs``/``batch_mean_abs``."""
    out: dict[str, dict[str, float]] = {}
    for site, fields in norm_stats.items():
        s: dict[str, float] = {}
        if "var" in fields:
            s["token_std"] = float(np.mean(np.sqrt(np.maximum(fields["var"], 0.0)))) if fields["var"].size else math.nan
            s["token_abs_mean"] = float(np.mean(np.abs(fields["mean"]))) if "mean" in fields and fields["mean"].size else math.nan
        for kind in ("running", "batch"):
            if f"{kind}_var" in fields:
                s[f"{kind}_std"] = float(np.mean(np.sqrt(np.maximum(fields[f"{kind}_var"], 0.0))))
            if f"{kind}_mean" in fields:
                s[f"{kind}_mean_abs"] = float(np.mean(np.abs(fields[f"{kind}_mean"])))
        out[site] = s
    return out


TRAINING_NICENESS = 10  # how much lower than the GUI thread the training thread is scheduled


def _lower_thread_priority() -> None:
    """Schedule the calling (training) thread after the GUI thread when the CPUs are busy.

    The GUI thread needs the GIL back from the training thread many times per redraw; each
    hand-over waits for the training thread to be given a CPU. At a lower priority it yields the
    CPU to the GUI thread first. Linux schedules threads by their own nice value; elsewhere
    this does nothing. (The panel runs training in a pool of its own, so no other work inherits it.)
    """
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), TRAINING_NICENESS))
    except (AttributeError, OSError):
        pass


def _load_dataset(req: TrainRequest):
    from attnviz.core.data import corpora as D

    if req.data == "hsk-zh-en":
        return D.load_hsk()
    if req.synthetic:
        return D.synthetic(req.data, n=int(req.n_examples), seed=int(req.seed))
    if req.data == "tsv":
        if not req.tsv_path:
            raise D.DataError("choose a TSV file of source<TAB>target lines")
        return D.load_tsv(req.tsv_path)
    raise D.DataError(f"unknown data choice {req.data!r}")


class TrainRun:
    """State shared between the GUI thread and the worker thread of one run."""

    def __init__(self, request: TrainRequest, callbacks: list[tuple[str, Any]]):
        self.request = request
        self.events: collections.deque = collections.deque()  # (event name, payload); deque appends are thread-safe
        self.trainer: Any = None
        self.stop_requested = False
        self.pause_requested = False
        self.callbacks = list(callbacks)

    def post(self, name: str, payload: Any) -> None:
        self.events.append((name, payload))

    def work(self) -> Any:
        """Build the data, tokenizers and model, then ``Trainer.fit()`` (runs in the worker)."""
        from attnviz.core.model.config import TransformerConfig
        from attnviz.core.training.events import EVENTS
        from attnviz.core.training.trainer import Trainer, TrainOptions

        req = self.request
        _lower_thread_priority()
        self.post("prepare", f"loading {req.data} data")
        dataset = _load_dataset(req)
        if self.stop_requested:
            return None
        size = dict(MODEL_SIZES[req.size][1])
        cfg = TransformerConfig(src_vocab_size=8, tgt_vocab_size=8, dropout=req.dropout, max_len=req.max_len, norm=req.norm,
                                norm_placement=req.placement, **size)
        opts = dict(epochs=req.epochs, lr=req.lr, warmup=req.warmup, batch_tokens=req.batch_tokens, seed=req.seed, threads=req.threads)
        opts.update(req.extra_options)
        options = TrainOptions(**opts)
        vocab = (64, 64) if req.synthetic else (3000, 2000)
        kind = "word" if req.synthetic else "unigram"
        self.post("prepare", "training the tokenizers")
        # (dataset, config, options, out_dir, src_vocab, tgt_vocab, src tokenizer type, tgt tokenizer type, command)
        trainer = Trainer.create(dataset, cfg, options, req.out_dir or None, vocab[0], vocab[1], kind, kind,
                                   f"attnviz (Train panel): {req.describe()}")
        for event in EVENTS:
            trainer.add_callback(event, lambda payload, e=event: self._on_event(e, payload))
        for event, fn in self.callbacks:
            trainer.add_callback(event, fn)
        self.trainer = trainer
        if self.pause_requested:
            trainer.pause()
        if self.stop_requested:
            trainer.stop()
        return trainer.fit()

    def _on_event(self, name: str, payload: Any) -> None:
        """Trainer thread: keep it cheap; summarize big arrays here, off the GUI thread."""
        if name == "eval":
            self.post("eval", (payload, summarize_norm_stats(payload.norm_stats)))
        else:
            self.post(name, payload)
