"""Training: the ``Trainer`` (teacher forcing, label smoothing, Adam with warm-up, checkpoints) and
how a run is set up (``TrainOptions``, the learning-rate schedule, the device, the tokenizers and
freshly initialised model of a new run). No Qt. Around it: ``events`` (the events and their
payloads), ``evaluation`` (greedy decoding, sacrebleu, the per-epoch evaluation), ``step`` (the
loss and update of a batch), ``progress`` (the epoch's sums, the "step" events' window),
``epochs`` (the history, probe snapshots and weight averaging of finished epochs), ``state`` (the
training state a checkpoint carries) and ``checkpoint`` (that state on disk).

Teacher forcing, exactly as the paper's tutorial lays it out::

    encoder input  = source                  x1 .. xm
    decoder input  = SOS + target            SOS y1 .. yn      (shifted right)
    labels         = target + EOS            y1 .. yn EOS
    loss           = cross-entropy with label smoothing, PAD positions ignored

Optimiser and schedule: Adam (beta1 0.9, beta2 0.98, eps 1e-9) and the paper's warm-up shape
with an explicit peak, ``schedule="inverse-sqrt"`` (the default)::

    lr(step) = lr_peak * min(step / warmup, sqrt(warmup / step))        (step = 1, 2, ...)

i.e. a linear rise to ``lr_peak`` over ``warmup`` steps, then decay with 1/sqrt(step) — the
paper's ``d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)`` rescaled so the peak is a number
you choose. ``schedule="linear"`` decays linearly to 0 at the last step instead; ``"constant"``
stays at the peak after the warm-up. Gradients are clipped to ``clip`` (global L2 norm).

Determinism: ``seed`` fixes the initial weights, the dropout stream and every epoch's batches
(``corpora.make_batches`` is a function of ``(seed, epoch)``). A checkpoint stores the optimiser
moments, the step, the position inside the epoch and the RNG state, so a resumed run repeats the
losses of an uninterrupted one bit for bit (same device and thread count).

Checkpoints: at the end of every epoch (and when stopped) the output folder is rewritten as a
model bundle (``bundle.save_bundle``, atomic) plus two side files in the same atomic swap
(``checkpoint`` says which folders may be replaced, reads the state back with every field
checked, and removes what killed saves left behind when a run starts):
``training_state.safetensors`` (optimiser tensors, RNG state) and ``training_state.json``
(step, epoch, options, timing). No pickle. A NaN/Inf loss stops the run without saving, so the
folder keeps the last good checkpoint. ``meta.json`` holds the history (one row per evaluation)
and the probe snapshots (cross-attention averaged over heads, per layer, rounded to 3 decimals).

Checkpoint averaging: with ``average_last`` N > 1 the weights at the end of each of the last N
epochs are summed (``WeightAverage``, saved with the training state as ``avg.*`` tensors so a
resumed run keeps them) and the bundle ships their mean, evaluated by the final evaluation;
the per-epoch history rows are of the weights as trained. The training state also keeps the
weights as trained in float32 (``raw.*``; the bundle stores float16): a resumed run goes on from
them exactly, and a finished run resumed to more epochs from them, not from the mean, averaging
only its own last N epochs. The final evaluation is of the weights as the bundle stores them.

Guided alignment: with ``guided_alignment`` "LAYER.HEAD" the loss adds ``guided_weight`` times
the alignment term of that cross-attention head against the HSK gloss alignments (``guided``;
computed once per training example at construction). The step losses and ``train_loss`` are then
of that sum, the loss optimised; the history rows add ``align_loss``, the epoch's mean alignment
term over its batches with aligned rows.

Precision: ``precision="bf16"`` runs each training step's forward pass and loss under
``torch.autocast(dtype=torch.bfloat16)`` (CPU or CUDA); the weights, their gradients, Adam's
moments and every evaluation stay float32, and the loss is taken of float32 logits. The default
``"float32"`` uses no autocast at all, so such a run computes exactly what it did before the option
existed. meta.json's ``options`` records it, and a resumed run keeps it.

Events. ``trainer.add_callback(event, fn)``; ``fn(payload)`` is called on the training thread
(a GUI forwards it to its own thread). The events and their payloads are listed in ``events``.

``pause()``, ``resume()`` and ``stop()`` may be called from any thread (``threading.Event``);
the loop checks them between steps. ``stop()`` saves a checkpoint at the current step.

Data: an epoch's batches come from ``dataset.training_batches`` (``corpora.ExampleBatches`` for a
split held in memory, ``stream.StreamBatches`` for a TSV file read pool by pool). Several
processes: ``distribute(ranks)`` after construction, then ``fit()`` in every process; each takes
its rows of every global batch, rank 0 alone evaluates, writes and reports, and meta.json's
``distributed`` records the processes and their parameters' digests (``distributed``).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch

from attnviz.core.bundle import Bundle, BundleError, folder_stamp, load_bundle, round_as_stored, save_bundle
from attnviz.core.data import corpora as D
from attnviz.core.data import sources
from attnviz.core.data.augment import augment_as
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.folder_lock import output_lock
from attnviz.core.limits import MAX_THREADS
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.core.training.checkpoint import CheckpointError, check_meta_size, checkpoint_folder, folder_kind, read_training_state, remove_leftovers
from attnviz.core.training.distributed import Ranks, weights_digest
from attnviz.core.training.epochs import EpochRecords, WeightAverage
from attnviz.core.training.evaluation import EvaluationStopped, eval_mode, final_evaluation
from attnviz.core.training.events import EVENTS, CheckpointEvent, EndEvent, MessageEvent, StartEvent, StateEvent, TrainResult
from attnviz.core.training.guided import GuidedAlignment, GuidedHead
from attnviz.core.training.progress import EpochTally, StepWindow
from attnviz.core.training.state import restore_optimizer, restore_rng, state_files, tagged
from attnviz.core.training.step import TrainingStep, label_tokens
from attnviz.errors import AttnvizError

SCHEDULES = ("inverse-sqrt", "linear", "constant")
PRECISIONS = ("float32", "bf16")  # TrainOptions.precision: float32, or bfloat16 autocast in the training step


class TrainingError(AttnvizError, RuntimeError):
    """A training run that cannot start or continue (one-line message)."""


# -- how to train -------------------------------------------------------------------------
# TrainOptions' numbers: field -> (type, smallest, largest, bounds: "[]" both included, "(]" ...).
_RANGES: dict[str, tuple[type, float, float, str]] = {
    "epochs": (int, 1, 100_000, "[]"),
    "lr": (float, 0.0, 10.0, "(]"),
    "warmup": (int, 0, 10**8, "[]"),
    "batch_tokens": (int, 1, 10**7, "[]"),
    "label_smoothing": (float, 0.0, 1.0, "[)"),
    "clip": (float, 0.0, 1e9, "[]"),
    "adam_eps": (float, 0.0, 1.0, "(]"),
    "weight_decay": (float, 0.0, 10.0, "[]"),
    "seed": (int, 0, 2**63 - 1, "[]"),
    "threads": (int, 1, MAX_THREADS, "[]"),
    "log_every": (int, 1, 10**9, "[]"),
    "n_probes": (int, 0, 1000, "[]"),
    "average_last": (int, 0, 100_000, "[]"),
    "guided_weight": (float, 0.0, 100.0, "(]"),
}
DEVICE_TYPES = ("cpu", "cuda", "mps")


def check_number(name: str, value: Any, kind: type, lo: float, hi: float, bounds: str = "[]") -> None:
    """``TrainingError`` unless ``value`` is a finite ``kind`` (int, or float which takes ints too)
    within ``lo``..``hi`` (``bounds``: "[" / "(" includes / excludes ``lo``, "]" / ")" ``hi``)."""
    ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    ok = ok and (isinstance(value, int) or math.isfinite(value)) and (lo <= value if bounds[0] == "[" else lo < value)  # an int may be too large for a float
    ok = ok and (value <= hi if bounds[1] == "]" else value < hi)
    if not ok:
        what = "an integer" if kind is int else "a number"
        low, high = ("from" if bounds[0] == "[" else "above"), ("to" if bounds[1] == "]" else "below")
        raise TrainingError(f"{name} must be {what} {low} {lo:g} {high} {hi:g}, not {str(value)[:40]}")


def parse_device(name: Any) -> torch.device:
    """``TrainOptions.device`` as a torch device ("auto" gives CPU here); ``TrainingError`` for a
    name that is not a device training can use (availability is ``resolve_device``'s check)."""
    if not isinstance(name, str):
        raise TrainingError(f"device must be auto, cpu or cuda, not {str(name)[:40]}")
    if name == "auto":
        return torch.device("cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError, TypeError):
        dev = None
    if dev is None or dev.type not in DEVICE_TYPES:
        raise TrainingError(f"device {name[:40]!r} cannot train a model: use auto, cpu, cuda or cuda:N")
    return dev


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
    average_last: int = 0  # the bundle's weights: the mean of the last N epochs' weights (0 or 1: the last epoch's)
    guided_alignment: str | None = None  # "LAYER.HEAD" (1-based) of the cross-attention head trained toward the glosses; None = off
    guided_weight: float = 0.05  # lambda: the weight of the guided alignment term in the loss (Garg et al. 2019)
    precision: str = "float32"  # "bf16": the training step's forward pass and loss under bfloat16 autocast (weights stay float32)

    def __post_init__(self) -> None:
        """``TrainingError`` (one line) for any field of the wrong type or out of its range."""
        if not isinstance(self.betas, (list, tuple)) or len(self.betas) != 2:
            raise TrainingError(f"betas must be two numbers in [0, 1), not {self.betas!r}"[:160])
        self.betas = tuple(self.betas)  # type: ignore[assignment]
        for name, (kind, lo, hi, bounds) in _RANGES.items():
            check_number(name.replace("_", "-"), getattr(self, name), kind, lo, hi, bounds)
        for beta in self.betas:
            check_number("betas", beta, float, 0.0, 1.0, "[)")
        if self.schedule not in SCHEDULES:
            raise TrainingError(f"schedule must be one of {', '.join(SCHEDULES)}, not {self.schedule!r}"[:160])
        if self.precision not in PRECISIONS:
            raise TrainingError(f"precision must be {' or '.join(PRECISIONS)}, not {str(self.precision)[:40]!r}")
        if not isinstance(self.eval_bleu, bool) or not isinstance(self.final_eval, bool):
            raise TrainingError("eval_bleu and final_eval must be true or false")
        parse_device(self.device)
        if self.guided_alignment is not None:
            try:
                GuidedHead.parse(self.guided_alignment)
            except ValueError as exc:
                raise TrainingError(str(exc)) from None

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
    """The torch device for ``TrainOptions.device`` ("auto": CUDA when present, else CPU)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = parse_device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise TrainingError(f"device {name!r} asked for, but CUDA is not available")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise TrainingError(f"device {name!r} asked for, but there are only {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise TrainingError(f"device {name!r} asked for, but MPS is not available")
    return dev


# -- building a run -------------------------------------------------------------------------
def build_tokenizers(
    dataset: D.Dataset, src_vocab: int = 3000, tgt_vocab: int = 2000, src_type: str = "unigram", tgt_type: str = "unigram"
) -> tuple[Tokenizer, Tokenizer]:
    """sentencepiece models trained on the training split only (source and target separately; on
    a sample of ``dataset.tokenizer_sample`` sentences of each when it is not 0)."""
    sample = dataset.tokenizer_sample
    src = _train_tokenizer("source", dataset.train_texts("src"), src_vocab, src_type, dataset.src_spaces, sample)
    tgt = _train_tokenizer("target", dataset.train_texts("tgt"), tgt_vocab, tgt_type, True, sample)
    return src, tgt


def _train_tokenizer(side: str, texts: Iterable[str], vocab: int, kind: str, dummy_prefix: bool, sample: int = 0) -> Tokenizer:
    try:
        return Tokenizer.train(texts, vocab, kind, add_dummy_prefix=dummy_prefix, input_sentence_size=sample)
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


def _load_checkpoint(out_dir: Path) -> tuple[Bundle, dict[str, Any], dict[str, torch.Tensor]]:
    """The checkpoint of ``out_dir`` (or of the ``.NAME.previous`` an interrupted save left, where
    ``load_bundle`` finds it too): the bundle and its training state."""
    try:
        check_meta_size(checkpoint_folder(out_dir))
        bundle: Bundle = load_bundle(out_dir)
        info, tensors = read_training_state(bundle.path or checkpoint_folder(out_dir))
    except (BundleError, CheckpointError) as exc:
        raise TrainingError(f"cannot resume: {exc}") from None
    except RecursionError:
        raise TrainingError(f"cannot resume: {out_dir}: a JSON file is nested too deeply; not written by attnviz") from None
    return bundle, info, tensors


def _resumed_dataset(folder: Path, meta: dict[str, Any], dataset: D.Dataset | None) -> D.Dataset:
    """``dataset``, or the built-in one meta.json names; its split hash must be the checkpoint's.
    A file named in meta.json is never read on its own: the user passes it again."""
    data = meta.get("data")
    spec = data.get("spec") if isinstance(data, dict) else None
    if dataset is None:
        if not isinstance(spec, dict) or spec.get("kind") not in D.BUILTIN_KINDS:
            named = D.spec_paths(spec) if isinstance(spec, dict) else []
            hint = f" ({', '.join(named)[:200]})" if named else ""
            raise TrainingError(f"cannot resume: {folder}/meta.json names no built-in data set; pass the training data again with --data{hint}")
        try:
            dataset = augment_as(sources.load_data(spec), spec)
        except (KeyError, TypeError, ValueError) as exc:
            raise TrainingError(f"cannot resume: {folder}/meta.json: bad data description ({type(exc).__name__})") from None
    if isinstance(spec, dict) and bool(spec.get("stream")) != bool(dataset.spec.get("stream")):
        again = "pass --stream again" if spec.get("stream") else "leave out --stream"
        raise TrainingError(f"cannot resume: the run read its data {'as a stream' if spec.get('stream') else 'whole'}; {again}")
    want = data.get("split_hash") if isinstance(data, dict) else None
    if want and want != dataset.split_hash:
        raise TrainingError(f"cannot resume: the data's split hash {dataset.split_hash} differs from the checkpoint's {str(want)[:40]}")
    return dataset


def _check_resumed_meta(folder: Path, meta: dict[str, Any]) -> None:
    """``TrainingError`` unless the parts of meta.json a resumed run keeps have the right shape."""
    for key in ("history", "snapshots", "resumed_with"):
        value = meta.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict if key != "resumed_with" else str) for v in value):
            raise TrainingError(f"cannot resume: {folder}/meta.json: '{key}' is not a list of {'objects' if key != 'resumed_with' else 'strings'}")
    for row in meta.get("history", []):
        numbers = all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in row.values())
        if not numbers or not isinstance(row.get("epoch"), int):
            raise TrainingError(f"cannot resume: {folder}/meta.json: a 'history' row holds something else than numbers")


def _check_vocabularies(src_tok: Tokenizer, tgt_tok: Tokenizer, cfg: TransformerConfig) -> None:
    """``TrainingError`` unless the tokenizers' vocabularies are the model's."""
    if src_tok.vocab_size != cfg.src_vocab_size or tgt_tok.vocab_size != cfg.tgt_vocab_size:
        raise TrainingError(
            f"tokenizer vocabularies ({src_tok.vocab_size}/{tgt_tok.vocab_size}) do not match the model "
            f"({cfg.src_vocab_size}/{cfg.tgt_vocab_size})"
        )


# -- the trainer ----------------------------------------------------------------------------
class Trainer:
    """Trains a ``Transformer`` on a ``Dataset``; see the module docstring for events and checkpoints."""

    def __init__(
        self,
        model: Transformer,
        src_tok: Tokenizer,
        tgt_tok: Tokenizer,
        dataset: D.Dataset,
        options: TrainOptions | None = None,
        out_dir: str | Path | None = None,
        meta: dict[str, Any] | None = None,
    ):
        self.options = options or TrainOptions()
        self.device = resolve_device(self.options.device)
        if self.options.precision != "float32" and self.device.type not in ("cpu", "cuda"):
            raise TrainingError(f"precision {self.options.precision} trains on the CPU or CUDA, not on {self.device.type}")
        self.model = model.to(self.device)
        self.src_tok, self.tgt_tok = src_tok, tgt_tok
        self.dataset = dataset
        self.out_dir = Path(out_dir) if out_dir is not None else None
        # what out_dir held when this run was set up; a command that checked it earlier sets its own
        self.out_stamp = folder_stamp(self.out_dir) if self.out_dir is not None else None
        self.meta: dict[str, Any] = dict(meta or {})
        cfg = model.config
        _check_vocabularies(src_tok, tgt_tok, cfg)
        o = self.options
        self.batches = dataset.training_batches(src_tok, tgt_tok, cfg.max_len, o.batch_tokens, o.seed)
        self.train_examples = self.batches.examples  # the training split in memory (none for a streamed corpus)
        self.records = EpochRecords(self.model, src_tok, tgt_tok, dataset, o, self.meta)  # history rows, probe snapshots
        if not self.batches.n_examples:
            raise TrainingError(f"{dataset.name}: no training pairs")
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=o.lr, betas=o.betas, eps=o.adam_eps, weight_decay=o.weight_decay)
        self.steps_per_epoch = self.batches.steps_per_epoch
        self.ranks = Ranks()  # one process until ``distribute``
        self.step = 0  # optimiser steps done
        self.epoch = 0  # current (0-based) epoch
        self.batch_in_epoch = 0  # batches of the current epoch already done
        self.elapsed_s = 0.0  # training time over all sessions
        self.tally = EpochTally()  # the current epoch's loss and alignment sums
        self._callbacks: dict[str, list[Callable[[Any], None]]] = {e: [] for e in EVENTS}
        self._run = threading.Event()
        self._run.set()
        self._stop = threading.Event()
        self._rng_state: dict[str, torch.Tensor] | None = None  # restored at the start of fit()
        self.average = WeightAverage()  # of the last ``options.average_last`` epochs' weights
        self._trained_weights: dict[str, torch.Tensor] = {}  # a finished run's last weights as trained (the bundle ships them rounded, or a mean)
        self.guided = self._guided_alignment()  # None unless ``options.guided_alignment``
        self.steps = TrainingStep(self.model, self.optimizer, o, self.device, self.guided)  # loss and update of a batch

    def _guided_alignment(self) -> GuidedAlignment | None:
        """The reference alignments of the training examples, when ``options.guided_alignment``
        names a head; ``TrainingError`` for a head the model lacks or data without glosses."""
        spec = self.options.guided_alignment
        if spec is None:
            return None
        cfg = self.model.config
        try:
            head = GuidedHead.parse(spec).check(cfg)
        except ValueError as exc:
            raise TrainingError(str(exc)) from None
        guided = GuidedAlignment(head, self.dataset.train, self.train_examples, self.src_tok, self.tgt_tok, cfg.max_len)
        if not guided.rows:
            raise TrainingError(
                f"--guided-alignment needs training pairs with word glosses (the built-in hsk-zh-en data has them); "
                f"{self.dataset.name} has none that align"
            )
        return guided

    # -- construction -----------------------------------------------------------------
    @classmethod
    def create(
        cls,
        dataset: D.Dataset,
        config: TransformerConfig | dict[str, Any] | None = None,
        options: TrainOptions | None = None,
        out_dir: str | Path | None = None,
        src_vocab: int = 3000,
        tgt_vocab: int = 2000,
        src_tokenizer_type: str = "unigram",
        tgt_tokenizer_type: str = "unigram",
        command: str | None = None,
    ) -> "Trainer":
        """A new run: train the tokenizers on the training split, size the model to them, seed it."""
        options = options or TrainOptions()
        src_tok, tgt_tok = build_tokenizers(dataset, src_vocab, tgt_vocab, src_tokenizer_type, tgt_tokenizer_type)
        cfg = config.to_dict() if isinstance(config, TransformerConfig) else dict(config or {})
        cfg.update(src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size)
        model = build_model(TransformerConfig.from_dict(cfg), options.seed)
        meta = {
            "command": command or "",
            "data": dataset.describe(),
            "tokenizers": {
                "source": {"type": src_tokenizer_type, "vocab_size": src_tok.vocab_size, "asked": src_vocab},
                "target": {"type": tgt_tokenizer_type, "vocab_size": tgt_tok.vocab_size, "asked": tgt_vocab},
            },
            "options": options.to_dict(),
        }
        return cls(model, src_tok, tgt_tok, dataset, options, out_dir, meta)

    @classmethod
    def from_checkpoint(
        cls,
        out_dir: str | Path,
        dataset: D.Dataset | None = None,
        epochs: int | None = None,
        threads: int | None = None,
        device: str | None = None,
    ) -> "Trainer":
        """Continue the run saved in ``out_dir``. ``dataset`` defaults to the one its meta.json
        names; its split hash must match. ``epochs`` may extend a finished run."""
        out_dir = Path(out_dir)
        bundle, info, tensors = _load_checkpoint(out_dir)
        meta = dict(bundle.meta)
        _check_resumed_meta(out_dir, meta)
        dataset = _resumed_dataset(out_dir, meta, dataset)
        changes = {k: v for k, v in (("epochs", epochs), ("threads", threads), ("device", device)) if v is not None}
        options = TrainOptions.from_dict({**info["options"], **changes})
        meta["options"] = options.to_dict()
        model = bundle.model
        model.train()
        self = cls(model, bundle.src_tokenizer, bundle.tgt_tokenizer, dataset, options, out_dir, meta)
        self._restore_state(info, tensors)
        return self

    @contextmanager
    def distribute(self, ranks: Ranks) -> Iterator[None]:
        """Train as one of ``ranks.world`` processes for the block (``distributed``), entered in
        every process before ``fit``: every process must have set up the same run (compared by
        digest: tokenizers, data, position, options and weights); the model is wrapped in DDP. The
        wrapper is dropped on leaving, before the process group is (one that outlives its group
        can hang the process as it exits)."""
        if ranks.world > 1:
            ranks.check_same(self._run_digest(), "their data, tokenizers, checkpoint or options")
        self.ranks, self.steps.net = ranks, ranks.wrap(self.model)
        try:
            yield
        finally:
            self.ranks, self.steps.net = Ranks(), self.model

    def _run_digest(self) -> bytes:
        what = [self.src_tok.to_bytes(), self.tgt_tok.to_bytes(), weights_digest(self.model.state_dict())]
        position = [self.dataset.split_hash, self.step, self.epoch, self.batch_in_epoch, self.steps_per_epoch, self.options.to_dict()]
        what.append(json.dumps(position, sort_keys=True).encode())
        return hashlib.sha256(b"".join(hashlib.sha256(w).digest() for w in what)).digest()

    def _restore_state(self, info: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
        """Where a checkpoint left off: optimiser, counters, epoch sums, RNG (restored by ``fit``)."""
        try:
            restore_optimizer(self.optimizer, self.model, info["optimizer"], tensors)
        except (ValueError, KeyError, TypeError, IndexError, RuntimeError) as exc:
            raise TrainingError(f"cannot resume: {self.out_dir}: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}") from None
        self.step = int(info["step"])
        self.epoch = int(info["epoch"])
        self.batch_in_epoch = int(info["batch_in_epoch"])
        self.elapsed_s = float(info.get("elapsed_s", 0.0))
        self.tally = EpochTally.from_state(info)
        self._rng_state = tagged(tensors, "rng.")
        self.average = WeightAverage.from_state(info, tensors)
        trained = tagged(tensors, "raw.")
        if trained:  # a finished run that shipped a mean goes on from its weights as trained
            self._load_trained_weights(trained)

    def _load_trained_weights(self, trained: dict[str, torch.Tensor]) -> None:
        try:
            self.model.load_state_dict(trained)
        except RuntimeError as exc:
            raise TrainingError(f"cannot resume: {self.out_dir}: the saved weights do not fit the model ({str(exc).splitlines()[0][:160]})") from None

    # -- control (any thread) -----------------------------------------------------------
    def add_callback(self, event: str, fn: Callable[[Any], None]) -> None:
        if event not in self._callbacks:
            raise ValueError(f"unknown training event {event!r} (one of {', '.join(EVENTS)})")
        self._callbacks[event].append(fn)

    def pause(self) -> None:
        self._run.clear()

    def resume(self) -> None:
        self._run.set()

    def stop(self) -> None:
        self._stop.set()
        self._run.set()

    @property
    def paused(self) -> bool:
        return not self._run.is_set()

    @property
    def total_steps(self) -> int:
        return self.steps_per_epoch * self.options.epochs

    def _emit(self, event: str, payload: Any) -> None:
        for fn in self._callbacks[event]:
            fn(payload)

    def _message(self, text: str, level: str = "info") -> None:
        self._emit("message", MessageEvent(text, level))

    # -- checkpoints --------------------------------------------------------------------
    def _state_files(self) -> dict[str, bytes]:
        """The training state saved beside the bundle (``state``)."""
        raw = self._trained_weights or {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        counters = {"step": self.step, "epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch, "elapsed_s": self.elapsed_s}
        info = {**counters, **self.tally.state(), "options": self.options.to_dict()}
        return state_files(info, self.optimizer, self.model, self.average, raw, self.device)

    def save_checkpoint(self, reason: str = "epoch", status: str = "running") -> Path | None:
        """Write the output folder (bundle + training state) atomically; returns its path. With
        several processes, every one calls it: they compare their weights, and rank 0 writes."""
        if self.out_dir is None:
            return None
        digests = self._replica_digests()
        if not self.ranks.main:
            return None
        self._record_processes(digests)
        if folder_kind(self.out_dir) not in ("absent", "empty", "bundle"):
            raise TrainingError(f"{self.out_dir} now holds files that are not a model bundle; they are left alone and nothing is saved there")
        self.meta.update(
            history=self.records.history,
            snapshots=self.records.snapshots,
            status=status,
            step=self.step,
            epoch=self.epoch,
            epochs=self.options.epochs,
            training_time_s=round(self.elapsed_s, 1),
            device=str(self.device),
        )
        self.meta["probes"] = self.records.probe_sources()
        with eval_mode(self.model):
            path = save_bundle(self.out_dir, self.model, self.src_tok, self.tgt_tok, self.meta, extra_files=self._state_files())
        self._emit("checkpoint", CheckpointEvent(self.step, self.epoch, str(path), reason))
        return path

    def _replica_digests(self) -> list[str]:
        """Every process's digest of its parameters as trained (none for one process);
        ``TrainingError`` when they differ: the replicas went apart, and nothing is saved."""
        if self.ranks.world == 1:
            return []
        names = {name for name, _ in self.model.named_parameters()}
        weights = self._trained_weights or self.model.state_dict()
        digests = self.ranks.gather(weights_digest({k: v for k, v in weights.items() if k in names}))
        if len(set(digests)) > 1:
            raise TrainingError(f"the {self.ranks.world} processes' weights differ at step {self.step}; nothing is saved")
        return [d.hex() for d in digests]

    def _record_processes(self, digests: list[str]) -> None:
        """meta.json's ``distributed`` (processes, backend, each one's parameter digest) for a run
        of several processes; none for one."""
        if self.ranks.world == 1:
            self.meta.pop("distributed", None)
            return
        self.meta["distributed"] = {"processes": self.ranks.world, "backend": self.ranks.backend, "weights_sha256": digests}

    # -- the loop -------------------------------------------------------------------------
    def fit(self) -> TrainResult:
        """Train until the last epoch, a stop, or a non-finite loss. Never raises for those."""
        prev_threads = torch.get_num_threads()
        torch.set_num_threads(self.options.threads)
        try:
            with torch.inference_mode(False), torch.enable_grad():  # grad mode is per thread: a worker may have turned it off
                writes = self.out_dir is not None and self.ranks.main
                with output_lock(self.out_dir, "train") if writes else nullcontext():  # one run per folder; rank 0 writes
                    self._check_out_unchanged()
                    try:
                        return self._fit()
                    finally:
                        self.out_stamp = folder_stamp(self.out_dir) if self.out_dir is not None else None
        finally:
            torch.set_num_threads(prev_threads)

    def _check_out_unchanged(self) -> None:
        """``TrainingError`` when another run saved in ``out_dir`` since this one checked it (both
        found it free, and the other finished before this one took the lock): nothing is overwritten."""
        if self.out_dir is not None and self.ranks.main and folder_stamp(self.out_dir) != self.out_stamp:
            raise TrainingError(f"{self.out_dir} was saved by another run after this one checked it; this run did not start "
                                "and left that run as it is: continue it with --resume, or choose another folder")

    def _fit(self) -> TrainResult:
        if self.out_dir is not None and self.ranks.main:
            for left in remove_leftovers(self.out_dir):
                self._message(f"removed {left.name}, left by a save that was killed", "info")
        self._restore_rng()
        self.model.train()
        self._announce_start()
        window = StepWindow.begin()
        while self.epoch < self.options.epochs:
            ended = self._train_epoch(window)
            if ended is not None:
                return ended
            if not self._weights_finite():
                return self._fail_non_finite(f"the weights became NaN or infinite by step {self.step} (epoch {self.epoch + 1})")
            self._end_epoch()
        return self._finish()

    def _restore_rng(self) -> None:
        """A resumed run continues the RNG streams of the checkpoint (once)."""
        if self._rng_state is not None:
            restore_rng(self._rng_state, self.device)
            self._rng_state = None

    def _announce_start(self) -> None:
        o = self.options
        self._emit(
            "start",
            StartEvent(
                o.epochs, self.steps_per_epoch, self.total_steps, self.step, self.epoch, self.model.n_parameters(), str(self.device),
                self.model.config.to_dict(), o.to_dict(), self.dataset.describe(),
            ),
        )
        for note in self.dataset.report.notes:
            self._message(note, "warning")
        self._emit("state", StateEvent("running"))

    def _train_epoch(self, window: StepWindow) -> TrainResult | None:
        """The rest of the current epoch's batches; a result when the run stopped or failed in it."""
        n_batches = self.steps_per_epoch
        for rows in self.batches.epoch(self.epoch, self.batch_in_epoch):
            self._wait_while_paused(window)
            if self.ranks.any(self._stop.is_set()):
                return self._stopped(n_batches)
            t0 = time.perf_counter()
            batch, share = self.steps.local_batch(rows, self.ranks)
            lr = self._set_learning_rate()
            loss, align = self.steps.loss(batch)
            lv = self.steps.global_loss(loss, share, self.ranks)
            if not math.isfinite(lv):
                what = "NaN" if math.isnan(lv) else "infinite"
                return self._fail_non_finite(f"the loss became {what} at step {self.step + 1} (epoch {self.epoch + 1})")
            self.steps.optimise(loss if self.ranks.world == 1 else loss * share)
            self.step += 1
            self.batch_in_epoch += 1
            self.tally.add(lv, align)
            window.add(lv, label_tokens(rows))
            self.elapsed_s += time.perf_counter() - t0
            if self.step % self.options.log_every == 0 or self.batch_in_epoch == n_batches:
                event = window.step_event(self.step, self.epoch, self.batch_in_epoch / n_batches, lr, self.elapsed_s, self.total_steps - self.step)
                self._emit("step", event)
        return None

    def _wait_while_paused(self, window: StepWindow) -> None:
        if self._run.is_set():
            return
        self._emit("state", StateEvent("paused"))
        t_pause = time.perf_counter()
        self._run.wait()
        window.skip(time.perf_counter() - t_pause)
        if not self._stop.is_set():
            self._emit("state", StateEvent("running"))

    def _set_learning_rate(self) -> float:
        lr = learning_rate(self.step + 1, self.options, self.total_steps)
        for g in self.optimizer.param_groups:
            g["lr"] = lr
        return lr

    def _weights_finite(self) -> bool:
        return all(bool(torch.isfinite(t).all()) for t in self.model.state_dict().values() if t.is_floating_point())

    def _end_epoch(self) -> None:
        """Evaluate and record the finished epoch (rank 0), move on to the next, and save a
        checkpoint (the last epoch's is saved by ``_finish``)."""
        start = self.options.epochs - self.options.average_last
        if self.ranks.main:
            self._evaluate_epoch()
            if self.epoch >= start:
                self.average.add(self.model, self.epoch, start)
        self.epoch += 1
        self.batch_in_epoch = 0
        self.tally = EpochTally()
        if self.epoch < self.options.epochs:
            self.save_checkpoint("epoch")

    def _evaluate_epoch(self) -> None:
        """The finished epoch's metrics and probe snapshots (``EpochRecords``), sent as an "eval" event."""
        t0 = time.perf_counter()
        lr = self.optimizer.param_groups[0]["lr"]
        self._emit("eval", self.records.evaluate(self.step, self.epoch, self.tally.metrics(self.guided is not None), lr, self.elapsed_s))
        self.elapsed_s += time.perf_counter() - t0

    def _finish(self) -> TrainResult:
        """After the last epoch: the final evaluation (if asked for) and the final checkpoint."""
        final: dict[str, Any] = {}
        self._trained_weights = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
        if not self.ranks.main:  # rank 0 evaluates and writes; this process's weights are compared
            self.save_checkpoint("final", "finished")
            return self._end("finished", f"finished {self.options.epochs} epochs ({self.step} steps)")
        if self.average.n > 1:
            self.average.load_into(self.model)
            self.meta["averaged_epochs"] = self.average.n
            self._message(f"the bundle's weights are the mean of the last {self.average.n} epochs' weights")
        round_as_stored(self.model)  # the final figures are those of the weights the bundle stores
        if self.options.final_eval:
            t0 = time.perf_counter()
            try:
                final = final_evaluation(self.model, self.src_tok, self.tgt_tok, self.dataset, should_stop=self._stop.is_set)
            except EvaluationStopped:
                self.save_checkpoint("final", "finished")
                return self._end("stopped", f"finished {self.options.epochs} epochs ({self.step} steps); the final evaluation was stopped")
            self.meta["final"] = final
            self.elapsed_s += time.perf_counter() - t0
        self.save_checkpoint("final", "finished")
        return self._end("finished", f"finished {self.options.epochs} epochs ({self.step} steps)", final)

    def _stopped(self, n_batches: int) -> TrainResult:
        """A stop asked for: save a checkpoint at the current step and end."""
        self._emit("state", StateEvent("stopping"))
        path = self.save_checkpoint("stopped", "stopped")
        msg = f"stopped at step {self.step} (epoch {self.epoch + 1}, batch {self.batch_in_epoch}/{n_batches})"
        if path:
            msg += f"; checkpoint saved in {path} (continue with --resume)"
        return self._end("stopped", msg)

    def _fail_non_finite(self, what: str) -> TrainResult:
        """End a run whose loss or weights became non-finite (``what`` says which, and when);
        nothing is saved, so the last good checkpoint stays."""
        last = f"epoch {self.epoch}" if self.epoch else "none (no epoch finished yet)"
        where = f" in {self.out_dir}" if self.out_dir else ""
        msg = f"{what}; training stopped. The last good checkpoint{where} is kept: {last}. Try a lower --lr or a longer --warmup."
        self._message(msg, "error")
        return self._end("failed", msg)

    def _end(self, status: str, message: str, final: dict[str, Any] | None = None) -> TrainResult:
        final = final or {}
        self._emit("end", EndEvent(status, message, self.step, self.epoch, self.elapsed_s, final))
        return TrainResult(status, message, self.step, self.epoch, self.elapsed_s, self.records.history, final, self.out_dir)
