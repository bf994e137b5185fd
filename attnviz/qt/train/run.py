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
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.model.config import NORM_NAMES
from attnviz.qt.i18n import translate

#: Model sizes offered in the panel (TransformerConfig fields); ``size_label`` names them.
MODEL_SIZES: dict[str, dict[str, Any]] = {
    "tiny": dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64),
    "small": dict(d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=256),
    "base": dict(d_model=128, n_heads=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=512),
    "large": dict(d_model=256, n_heads=8, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024),
}


def size_name(size: str) -> str:
    """A model size's name: ``Small``."""
    return {"tiny": translate("run", "Tiny"), "small": translate("run", "Small"), "base": translate("run", "Base"),
            "large": translate("run", "Large")}[size]


def size_label(size: str) -> str:
    """``Small · d_model 64, 4 heads, 2+2 layers``: a model size as the form offers it."""
    c = MODEL_SIZES[size]
    return translate("run", "{name} · d_model {d_model}, {heads} heads, {enc}+{dec} layers").format(
        name=size_name(size), d_model=c["d_model"], heads=c["n_heads"], enc=c["n_encoder_layers"], dec=c["n_decoder_layers"])


def data_choices() -> dict[str, str]:
    """The data the form offers: key (``TrainRequest.data``) -> its label."""
    return {
        "hsk-zh-en": translate("run", "HSK zh→en (4,354 sentence pairs)"),
        "tatoeba-zh-en": translate("run", "Tatoeba zh→en (56,578 everyday pairs)"),
        "hsk-zh-en,tatoeba-zh-en": translate("run", "HSK + Tatoeba zh→en (60,932 pairs)"),
        "copy": translate("run", "Synthetic · copy digits"),
        "reverse": translate("run", "Synthetic · reverse digits"),
        "sort": translate("run", "Synthetic · sort digits"),
        "tsv": translate("run", "TSV file (source<TAB>target)…"),
    }


#: The synthetic tasks among data_choices(): ``corpora.SYNTHETIC_TASKS``, spelled out so that this module
#: imports no torch (a test keeps the two equal).
SYNTHETIC_CHOICES = ("copy", "reverse", "sort")
#: The data choices with HSK glosses, which the augmentation (``AUGMENT_LABEL``) widens.
GLOSSED_CHOICES = ("hsk-zh-en", "hsk-zh-en,tatoeba-zh-en")
#: The data choices read from the Tatoeba pairs of the hsg package (``corpora.TATOEBA_NAME``, ``corpora.MIX_NAME``).
TATOEBA_CHOICES = ("tatoeba-zh-en", "hsk-zh-en,tatoeba-zh-en")
ACTIVE_STATES = ("preparing", "running", "paused", "stopping")
AUTO_WARMUP = -1  # TrainRequest.warmup: scale the warm-up to the run (``auto_warmup``)
WARMUP_CAP = 400  # the automatic warm-up's upper bound (steps)
WARMUP_SHARE = 0.1  # the automatic warm-up's share of the run's steps


def auto_warmup(total_steps: int) -> int:
    """The warm-up of a run of ``total_steps``: ``min(400, 10% of the steps)``, at least 1."""
    return max(1, min(WARMUP_CAP, int(round(WARMUP_SHARE * total_steps))))


def state_text(state: str) -> str:
    """A run's state (``idle``, ``preparing``, …) as the panel shows it."""
    return {
        "idle": translate("run", "Ready"), "preparing": translate("run", "Preparing data and tokenizers…"), "running": translate("run", "Training"),
        "paused": translate("run", "Paused"), "stopping": translate("run", "Stopping: saving a checkpoint…"), "finished": translate("run", "Finished"),
        "stopped": translate("run", "Stopped"), "failed": translate("run", "Failed"),
    }.get(state, state)


#: What an HSK run's augment adds: in the run's description (meta.json, as is) and the form (translated).
AUGMENT_LABEL = QT_TRANSLATE_NOOP("run", "CC-CEDICT + word and role swaps")


@dataclass
class TrainRequest:
    """Everything one run needs; built from the form (``TrainControls.request()``) or by hand."""

    data: str = "reverse"  # a key of data_choices(): "hsk-zh-en", "tatoeba-zh-en", "hsk-zh-en,tatoeba-zh-en", "copy", "reverse", "sort" or "tsv"
    tsv_path: str = ""  # for data == "tsv"
    n_examples: int = 2000  # synthetic tasks: how many pairs
    augment: bool = False  # HSK (alone or in the mix): add CC-CEDICT word pairs, word and role swaps (as the default model's --augment)
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
        """The run in one line, as meta.json records it (English, whatever the interface's language)."""
        if self.resume_from:
            return f"resume {self.resume_from}"
        return f"{self._data_text(AUGMENT_LABEL)} · {self.size} · {self._norm_name()} ({self.placement}-norm) · {self.epochs} epochs"

    def summary(self) -> str:
        """The run in one line, as the panel's log shows it (in the interface's language)."""
        if self.resume_from:
            return translate("run", "resume {folder}").format(folder=self.resume_from)
        placement = translate("run", "pre-norm") if self.placement == "pre" else translate("run", "post-norm")
        return translate("run", "{data} · {size} · {norm} ({placement}) · {epochs} epochs").format(
            data=self._data_text(translate("run", AUGMENT_LABEL)), size=size_name(self.size), norm=self._norm_name(), placement=placement,
            epochs=self.epochs)

    def _data_text(self, augment_label: str) -> str:
        return f"{self.data} + {augment_label}" if self.augment else self.data

    def _norm_name(self) -> str:
        return NORM_NAMES[self.norm]


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
            raise D.DataError(translate("run", "choose a TSV file of source<TAB>target lines"))
        return D.load_tsv(req.tsv_path)
    raise D.DataError(translate("run", "unknown data choice {choice!r}").format(choice=req.data))


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
        self.post("prepare", translate("run", "loading the {data} data").format(data=req.data))
        dataset = _load_dataset(req)
        if self.stop_requested:
            return None
        size = dict(MODEL_SIZES[req.size])
        cfg = TransformerConfig(src_vocab_size=8, tgt_vocab_size=8, dropout=req.dropout, max_len=req.max_len, norm=req.norm,
                                norm_placement=req.placement, **size)
        warmup = WARMUP_CAP if req.warmup == AUTO_WARMUP else req.warmup
        opts = dict(epochs=req.epochs, lr=req.lr, warmup=warmup, batch_tokens=req.batch_tokens, seed=req.seed, threads=req.threads)
        opts.update(req.extra_options)
        options = TrainOptions(**opts)
        vocab = (64, 64) if req.synthetic else (3000, 2000)
        kind = "word" if req.synthetic else "unigram"
        self.post("prepare", translate("run", "training the tokenizers"))
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
        self.post("prepare", translate("run", "reading the checkpoint in {folder}").format(folder=folder))
        meta = read_json(folder / META, META_LIMIT) if (folder / META).is_file() else {}
        saved = (meta.get("options") or {}).get("epochs") if isinstance(meta, dict) else None
        epochs = None
        if isinstance(saved, int) and isinstance(meta.get("epoch"), int) and meta["epoch"] >= saved:
            if req.epochs <= saved:
                error = TrainingError(translate("run", "{folder} has finished its {epochs} epochs: set Epochs above {epochs} to train it further").format(
                    folder=folder, epochs=saved))
                error.key = "already-finished"  # what the message says, in any language (the panel's error_key)
                raise error
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
