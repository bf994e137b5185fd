"""Training: the ``Trainer`` (teacher forcing, label smoothing, Adam with warm-up, checkpoints),
evaluation with sacrebleu, and ``greedy_translate``. No Qt.

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
(``data.make_batches`` is a function of ``(seed, epoch)``). A checkpoint stores the optimiser
moments, the step, the position inside the epoch and the RNG state, so a resumed run repeats the
losses of an uninterrupted one bit for bit (same device and thread count).

Checkpoints: at the end of every epoch (and when stopped) the output folder is rewritten as a
model bundle (``bundle.save_bundle``, atomic) plus two side files in the same atomic swap:
``training_state.safetensors`` (optimiser tensors, RNG state) and ``training_state.json``
(step, epoch, options, timing). No pickle. A NaN/Inf loss stops the run without saving, so the
folder keeps the last good checkpoint. ``meta.json`` holds the history (one row per evaluation)
and the probe snapshots (cross-attention averaged over heads, per layer, rounded to 3 decimals).

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

``pause()``, ``resume()`` and ``stop()`` may be called from any thread (``threading.Event``);
the loop checks them between steps. ``stop()`` saves a checkpoint at the current step.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from . import data as D
from .bundle import Bundle, BundleError, load_bundle, save_bundle
from .config import TransformerConfig
from .model import Transformer
from .tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer
from .trace import Recorder

STATE_TENSORS = "training_state.safetensors"
STATE_JSON = "training_state.json"
SCHEDULES = ("inverse-sqrt", "linear", "constant")
EVENTS = ("start", "step", "eval", "checkpoint", "state", "message", "end")
CROSS_ATTN = "decoder.layers.*.cross_attn.weights"
NORM_PATTERNS = ("*norm*.mean", "*norm*.var", "*norm*.batch_mean", "*norm*.batch_var", "*norm*.running_mean", "*norm*.running_var")


class TrainingError(RuntimeError):
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


# -- events ---------------------------------------------------------------------------------
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


# -- greedy decoding ----------------------------------------------------------------------
@dataclass(frozen=True)
class GreedyResult:
    ids: tuple[int, ...]  # output ids, without SOS and EOS
    finished: bool  # True when EOS was produced within the length limit
    topk: tuple[tuple[tuple[int, float], ...], ...] = ()  # per step: (id, probability) best first


def default_max_new(src_len: int, max_len: int) -> int:
    """How many target tokens greedy decoding may produce for a source of ``src_len`` tokens."""
    return max(1, min(max_len, 2 * src_len + 10))


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    sources: Sequence[Sequence[int]],
    max_new: int | None = None,
    top_k: int = 0,
    batch_size: int = 64,
) -> list[GreedyResult]:
    """Greedy decoding of source id lists with the KV cache (``start_decoding``/``decode_step``).

    Runs in eval mode (and restores the previous mode). Sources are batched by length; each has
    its own limit (``max_new``, default ``2 x source tokens + 10``), so batching does not change
    a result. An empty source or one longer than the model's ``max_len`` raises ``ValueError``.
    """
    cfg = model.config
    for s in sources:
        if not s:
            raise ValueError("cannot translate an empty source")
        if len(s) > cfg.max_len:
            raise ValueError(f"a source of {len(s)} tokens exceeds the model's max_len ({cfg.max_len})")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out: list[GreedyResult | None] = [None] * len(sources)
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    try:
        for b in range(0, len(order), batch_size):
            idx = order[b : b + batch_size]
            ls = max(len(sources[i]) for i in idx)
            src = torch.full((len(idx), ls), cfg.pad_id, dtype=torch.long)
            for r, i in enumerate(idx):
                src[r, : len(sources[i])] = torch.tensor(list(sources[i]), dtype=torch.long)
            src = src.to(device)
            limits = [min(cfg.max_len, max_new if max_new is not None else default_max_new(len(sources[i]), cfg.max_len)) for i in idx]
            cache = model.start_decoding(model.encode(src))
            token = torch.full((len(idx),), cfg.bos_id, dtype=torch.long, device=device)
            done = torch.zeros(len(idx), dtype=torch.bool, device=device)
            steps: list[torch.Tensor] = []
            tops: list[tuple[torch.Tensor, torch.Tensor]] = []
            for _ in range(max(limits)):
                logits, cache = model.decode_step(token, cache)  # [B, V]
                if top_k:
                    p, t = torch.softmax(logits.float(), -1).topk(min(top_k, logits.shape[-1]), -1)
                    tops.append((p.cpu(), t.cpu()))
                token = logits.argmax(-1)
                token = torch.where(done, torch.full_like(token, cfg.pad_id), token)
                steps.append(token)
                done |= token == cfg.eos_id
                if bool(done.all()):
                    break
            ids = torch.stack(steps, 1).cpu().tolist() if steps else [[] for _ in idx]
            for r, i in enumerate(idx):
                row = ids[r][: limits[r]]  # each source has its own length limit
                n = row.index(cfg.eos_id) if cfg.eos_id in row else len(row)
                finished = n < len(row)
                tk: tuple = ()
                if top_k:
                    m = n + 1 if finished else n
                    tk = tuple(
                        tuple((int(t), float(p)) for p, t in zip(tops[s][0][r].tolist(), tops[s][1][r].tolist())) for s in range(m)
                    )
                out[i] = GreedyResult(tuple(row[:n]), finished, tk)
    finally:
        model.train(was_training)
    return out  # type: ignore[return-value]


def greedy_translate(
    model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, texts: Sequence[str], max_len: int | None = None, batch_size: int = 64
) -> list[str]:
    """Greedy translations of ``texts`` (in order). Unknown characters become UNK and are translated anyway."""
    results = greedy_decode(model, [src_tok.encode(t) for t in texts], max_new=max_len, batch_size=batch_size)
    return [tgt_tok.decode(r.ids) for r in results]


def sacrebleu_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Corpus BLEU and chrF from ``sacrebleu`` (defaults: 13a tokenisation; chrF n=6, beta=2)."""
    import sacrebleu

    if not hypotheses:
        return {"bleu": 0.0, "chrf": 0.0}
    refs = [list(references)]
    return {
        "bleu": float(sacrebleu.corpus_bleu(list(hypotheses), refs).score),
        "chrf": float(sacrebleu.corpus_chrf(list(hypotheses), refs).score),
    }


@torch.no_grad()
def teacher_forced_metrics(model: Transformer, examples: Sequence[D.Example], batch_tokens: int = 2000) -> dict[str, float]:
    """Loss (plain cross-entropy, no smoothing) and token accuracy (argmax == label, PAD excluded,
    EOS included) under teacher forcing, in eval mode."""
    if not examples:
        return {"loss": float("nan"), "token_accuracy": float("nan"), "tokens": 0}
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total_loss = 0.0
    correct = tokens = 0
    try:
        for idx in D.make_batches(examples, batch_tokens, shuffle=False):
            b = D.collate([examples[i] for i in idx], PAD_ID, BOS_ID, EOS_ID).to(device)
            logits = model(b.src, b.tgt_in)  # [B, Lt, V]
            mask = b.labels != PAD_ID
            total_loss += float(F.cross_entropy(logits.transpose(1, 2), b.labels, ignore_index=PAD_ID, reduction="sum"))
            correct += int(((logits.argmax(-1) == b.labels) & mask).sum())
            tokens += int(mask.sum())
    finally:
        model.train(was_training)
    return {"loss": total_loss / tokens, "token_accuracy": correct / tokens, "tokens": tokens}


def evaluate_split(
    model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, pairs: Sequence[D.Pair], bleu: bool = True, batch_tokens: int = 2000
) -> dict[str, float]:
    """Teacher-forced loss and token accuracy, plus greedy BLEU and chrF (sacrebleu) on ``pairs``."""
    examples = D.encode_pairs(pairs, src_tok, tgt_tok, model.config.max_len)
    out = dict(teacher_forced_metrics(model, examples, batch_tokens))
    if bleu:
        kept = [pairs[e.index] for e in examples]
        hyps = greedy_translate(model, src_tok, tgt_tok, [p.src for p in kept])
        out.update(sacrebleu_scores(hyps, [p.tgt for p in kept]))
        out["exact"] = sum(h == p.tgt for h, p in zip(hyps, kept)) / max(1, len(kept))
    return out


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


def _opt_state_to_files(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"optimizer.{pid}.{k}"] = v.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(pid), {})[k] = v
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in sd["param_groups"]]
    return tensors, {"param_groups": groups, "scalars": scalars}


def _opt_state_from_files(tensors: dict[str, torch.Tensor], info: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for name, t in tensors.items():
        if name.startswith("optimizer."):
            _, pid, k = name.split(".", 2)
            state.setdefault(int(pid), {})[k] = t
    for pid, sc in info.get("scalars", {}).items():
        state.setdefault(int(pid), {}).update(sc)
    groups = []
    for g in info["param_groups"]:
        g = dict(g)
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    return {"state": state, "param_groups": groups}


def _finite_or_none(v: float, digits: int = 5) -> float | None:
    v = float(v)
    return round(v, digits) if math.isfinite(v) else None


def _round(a: np.ndarray, digits: int = 3) -> list:
    return np.round(a.astype(np.float64), digits).tolist()


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
        self.model = model.to(self.device)
        self.src_tok, self.tgt_tok = src_tok, tgt_tok
        self.dataset = dataset
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.meta: dict[str, Any] = dict(meta or {})
        cfg = model.config
        if src_tok.vocab_size != cfg.src_vocab_size or tgt_tok.vocab_size != cfg.tgt_vocab_size:
            raise TrainingError(
                f"tokenizer vocabularies ({src_tok.vocab_size}/{tgt_tok.vocab_size}) do not match the model "
                f"({cfg.src_vocab_size}/{cfg.tgt_vocab_size})"
            )
        self.train_examples = D.encode_pairs(dataset.train, src_tok, tgt_tok, cfg.max_len, dataset.report)
        self.valid_examples = D.encode_pairs(dataset.valid, src_tok, tgt_tok, cfg.max_len)
        if not self.train_examples:
            raise TrainingError(f"{dataset.name}: no training pairs")
        pool = dataset.valid or dataset.train
        self.probes: list[D.Pair] = list(pool[: self.options.n_probes])
        o = self.options
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=o.lr, betas=o.betas, eps=o.adam_eps, weight_decay=o.weight_decay)
        self.steps_per_epoch = len(D.make_batches(self.train_examples, o.batch_tokens, o.seed, 0))
        self.step = 0  # optimiser steps done
        self.epoch = 0  # current (0-based) epoch
        self.batch_in_epoch = 0  # batches of the current epoch already done
        self.elapsed_s = 0.0  # training time over all sessions
        self.history: list[dict[str, Any]] = list(self.meta.get("history", []))
        self.snapshots: list[dict[str, Any]] = list(self.meta.get("snapshots", []))
        self._epoch_loss_sum = 0.0
        self._epoch_loss_n = 0
        self._callbacks: dict[str, list[Callable[[Any], None]]] = {e: [] for e in EVENTS}
        self._run = threading.Event()
        self._run.set()
        self._stop = threading.Event()
        self._rng_state: dict[str, torch.Tensor] | None = None  # restored at the start of fit()

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
        try:
            bundle: Bundle = load_bundle(out_dir)
        except BundleError as exc:
            raise TrainingError(f"cannot resume: {exc}") from None
        sfile, jfile = out_dir / STATE_TENSORS, out_dir / STATE_JSON
        if not sfile.is_file() or not jfile.is_file():
            raise TrainingError(f"cannot resume: {out_dir} has no training state ({STATE_JSON}, {STATE_TENSORS})")
        try:
            info = json.loads(jfile.read_text(encoding="utf-8"))
            from safetensors.torch import load as st_load

            tensors = st_load(sfile.read_bytes())
        except Exception as exc:  # noqa: BLE001 - any damage means the same thing here
            raise TrainingError(f"cannot resume: {out_dir}: damaged training state ({type(exc).__name__}: {str(exc)[:120]})") from None
        meta = dict(bundle.meta)
        if dataset is None:
            spec = (meta.get("data") or {}).get("spec")
            if not spec:
                raise TrainingError(f"cannot resume: {out_dir}/meta.json does not say which data it was trained on")
            dataset = D.load_data(spec)
        want = (meta.get("data") or {}).get("split_hash")
        if want and want != dataset.split_hash:
            raise TrainingError(f"cannot resume: the data's split hash {dataset.split_hash} differs from the checkpoint's {want}")
        options = TrainOptions.from_dict(info["options"])
        if epochs is not None:
            options.epochs = epochs
        if threads is not None:
            options.threads = threads
        if device is not None:
            options.device = device
        meta["options"] = options.to_dict()
        model = bundle.model
        model.train()
        self = cls(model, bundle.src_tokenizer, bundle.tgt_tokenizer, dataset, options, out_dir, meta)
        self.optimizer.load_state_dict(_opt_state_from_files(tensors, info["optimizer"]))
        self.step = int(info["step"])
        self.epoch = int(info["epoch"])
        self.batch_in_epoch = int(info["batch_in_epoch"])
        self.elapsed_s = float(info.get("elapsed_s", 0.0))
        self._epoch_loss_sum = float(info.get("epoch_loss_sum", 0.0))
        self._epoch_loss_n = int(info.get("epoch_loss_n", 0))
        self._rng_state = {k[4:]: v for k, v in tensors.items() if k.startswith("rng.")}
        return self

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
        from safetensors.torch import save as st_save

        tensors, opt_info = _opt_state_to_files(self.optimizer)
        tensors["rng.cpu"] = torch.get_rng_state()
        if torch.cuda.is_available() and self.device.type == "cuda":
            tensors["rng.cuda"] = torch.cuda.get_rng_state(self.device)
        info = {
            "step": self.step,
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "elapsed_s": self.elapsed_s,
            "epoch_loss_sum": self._epoch_loss_sum,
            "epoch_loss_n": self._epoch_loss_n,
            "options": self.options.to_dict(),
            "optimizer": opt_info,
        }
        return {STATE_TENSORS: st_save(tensors), STATE_JSON: json.dumps(info, indent=1).encode()}

    def save_checkpoint(self, reason: str = "epoch", status: str = "running") -> Path | None:
        """Write the output folder (bundle + training state) atomically; returns its path."""
        if self.out_dir is None:
            return None
        self.meta.update(
            history=self.history,
            snapshots=self.snapshots,
            status=status,
            step=self.step,
            epoch=self.epoch,
            epochs=self.options.epochs,
            training_time_s=round(self.elapsed_s, 1),
            device=str(self.device),
        )
        self.meta["probes"] = [{"id": p.id, "source": p.src, "reference": p.tgt, "src_pieces": self.src_tok.pieces(self.src_tok.encode(p.src))} for p in self.probes]
        was = self.model.training
        self.model.eval()
        try:
            path = save_bundle(self.out_dir, self.model, self.src_tok, self.tgt_tok, self.meta, extra_files=self._state_files())
        finally:
            self.model.train(was)
        self._emit("checkpoint", CheckpointEvent(self.step, self.epoch, str(path), reason))
        return path

    # -- evaluation ---------------------------------------------------------------------
    @torch.no_grad()
    def probe(self) -> tuple[list[ProbeSnapshot], dict[str, dict[str, np.ndarray]]]:
        """Greedy translations of the probe sentences with their cross-attention, and the norm
        layers' statistics on them (eval mode)."""
        if not self.probes:
            return [], {}
        model = self.model
        was = model.training
        model.eval()
        try:
            src_ids = [self.src_tok.encode(p.src)[: model.config.max_len] or [model.config.unk_id] for p in self.probes]
            results = greedy_decode(model, src_ids)
            ls = max(len(s) for s in src_ids)
            outs = [list(r.ids) + ([EOS_ID] if r.finished else []) for r in results]
            lt = min(model.config.max_len, max(len(o) for o in outs) + 1)
            src = torch.full((len(outs), ls), PAD_ID, dtype=torch.long)
            tgt = torch.full((len(outs), lt), PAD_ID, dtype=torch.long)
            for r, (s, o) in enumerate(zip(src_ids, outs)):
                src[r, : len(s)] = torch.tensor(s)
                row = [BOS_ID, *o][:lt]
                tgt[r, : len(row)] = torch.tensor(row)
            rec = Recorder([CROSS_ATTN, *NORM_PATTERNS], batch_index=None)
            model(src.to(self.device), tgt.to(self.device), rec)
            trace = rec.trace()
        finally:
            model.train(was)
        snaps = []
        n_layers = model.config.n_decoder_layers
        for r, (p, s, o, res) in enumerate(zip(self.probes, src_ids, outs, results)):
            rows = max(1, min(len(o), lt))
            att = {i: trace[f"decoder.layers.{i}.cross_attn.weights"][r, :, :rows, : len(s)].copy() for i in range(n_layers)}
            pieces = tuple(self.tgt_tok.pieces(o[:rows])) if o else ("",)
            snaps.append(ProbeSnapshot(p.src, p.tgt, self.tgt_tok.decode(res.ids), tuple(self.src_tok.pieces(s)), pieces, att))
        src_valid = (src != PAD_ID).numpy()
        tgt_valid = (tgt != PAD_ID).numpy()
        norms: dict[str, dict[str, np.ndarray]] = {}
        for name, arr in trace.items():
            if "cross_attn" in name:
                continue
            layer, fld = name.rsplit(".", 1)
            if fld in ("mean", "var"):  # LayerNorm: per token, keep the real tokens
                arr = arr[src_valid if name.startswith("encoder") else tgt_valid]
            norms.setdefault(layer, {})[fld] = np.asarray(arr, dtype=np.float32)
        return snaps, norms

    def evaluate(self) -> dict[str, float]:
        """Valid-split metrics: teacher-forced loss and token accuracy, greedy BLEU and chrF."""
        m = teacher_forced_metrics(self.model, self.valid_examples)
        out = {"valid_loss": m["loss"], "valid_token_accuracy": m["token_accuracy"]}
        if self.options.eval_bleu and self.valid_examples:
            kept = [self.dataset.valid[e.index] for e in self.valid_examples]
            hyps = greedy_translate(self.model, self.src_tok, self.tgt_tok, [p.src for p in kept])
            s = sacrebleu_scores(hyps, [p.tgt for p in kept])
            out.update(valid_bleu=s["bleu"], valid_chrf=s["chrf"])
        return out

    def final_evaluation(self) -> dict[str, Any]:
        """Token accuracy on every split, greedy BLEU/chrF on every split (the README's numbers)."""
        res = {}
        for split in D.SPLITS:
            pairs = self.dataset.split(split)
            if pairs:
                m = evaluate_split(self.model, self.src_tok, self.tgt_tok, pairs, bleu=True)
                res[split] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()}
        return res

    def _eval_and_record(self) -> None:
        t0 = time.perf_counter()
        metrics = {"train_loss": self._epoch_loss_sum / max(1, self._epoch_loss_n)}
        metrics.update(self.evaluate())
        metrics["lr"] = self.optimizer.param_groups[0]["lr"]
        metrics["elapsed_s"] = self.elapsed_s
        probes, norms = self.probe()
        self.history.append({"epoch": self.epoch + 1, "step": self.step, **{k: _finite_or_none(v) for k, v in metrics.items()}})
        self.snapshots.append(
            {
                "epoch": self.epoch + 1,
                "step": self.step,
                "probes": [
                    {"hypothesis": s.hypothesis, "out_pieces": list(s.out_pieces), "cross_attention": [_round(a.mean(0)) for _, a in sorted(s.cross_attention.items())]}
                    for s in probes
                ],
            }
        )
        self._emit("eval", EvalEvent(self.step, self.epoch, metrics, tuple(probes), norms))
        self.elapsed_s += time.perf_counter() - t0

    # -- the loop -------------------------------------------------------------------------
    def fit(self) -> TrainResult:
        """Train until the last epoch, a stop, or a non-finite loss. Never raises for those."""
        o = self.options
        prev_threads = torch.get_num_threads()
        torch.set_num_threads(o.threads)
        try:
            with torch.inference_mode(False), torch.enable_grad():  # grad mode is per thread: a worker may have turned it off
                return self._fit()
        finally:
            torch.set_num_threads(prev_threads)

    def _fit(self) -> TrainResult:
        o = self.options
        if self._rng_state is not None:
            torch.set_rng_state(self._rng_state["cpu"])
            if "cuda" in self._rng_state and self.device.type == "cuda":
                torch.cuda.set_rng_state(self._rng_state["cuda"], self.device)
            self._rng_state = None
        self.model.train()
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
        session_steps = 0
        session_t0 = time.perf_counter()
        win_loss, win_n, win_tokens, win_t0 = 0.0, 0, 0, time.perf_counter()
        status, message = "finished", ""
        while self.epoch < o.epochs:
            batches = D.make_batches(self.train_examples, o.batch_tokens, o.seed, self.epoch)
            while self.batch_in_epoch < len(batches):
                if not self._run.is_set():
                    self._emit("state", StateEvent("paused"))
                    t_pause = time.perf_counter()
                    self._run.wait()
                    session_t0 += time.perf_counter() - t_pause
                    win_t0 += time.perf_counter() - t_pause
                    if not self._stop.is_set():
                        self._emit("state", StateEvent("running"))
                if self._stop.is_set():
                    self._emit("state", StateEvent("stopping"))
                    path = self.save_checkpoint("stopped", "stopped")
                    msg = f"stopped at step {self.step} (epoch {self.epoch + 1}, batch {self.batch_in_epoch}/{len(batches)})"
                    if path:
                        msg += f"; checkpoint saved in {path} (continue with --resume)"
                    return self._end("stopped", msg)
                t0 = time.perf_counter()
                batch = D.collate([self.train_examples[i] for i in batches[self.batch_in_epoch]], PAD_ID, BOS_ID, EOS_ID).to(self.device)
                lr = learning_rate(self.step + 1, o, self.total_steps)
                for g in self.optimizer.param_groups:
                    g["lr"] = lr
                logits = self.model(batch.src, batch.tgt_in)  # [B, Lt, V]
                loss = F.cross_entropy(logits.transpose(1, 2), batch.labels, ignore_index=PAD_ID, label_smoothing=o.label_smoothing)
                lv = float(loss.detach())
                if not math.isfinite(lv):
                    last = f"epoch {self.epoch}" if self.epoch else "none (no epoch finished yet)"
                    where = f" in {self.out_dir}" if self.out_dir else ""
                    what = "NaN" if math.isnan(lv) else "infinite"
                    msg = (
                        f"the loss became {what} at step {self.step + 1} (epoch {self.epoch + 1}); training stopped. "
                        f"The last good checkpoint{where} is kept: {last}. Try a lower --lr or a longer --warmup."
                    )
                    self._message(msg, "error")
                    return self._end("failed", msg)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if o.clip > 0:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), o.clip)
                self.optimizer.step()
                self.step += 1
                self.batch_in_epoch += 1
                session_steps += 1
                self._epoch_loss_sum += lv
                self._epoch_loss_n += 1
                win_loss += lv
                win_n += 1
                win_tokens += batch.n_tokens
                self.elapsed_s += time.perf_counter() - t0
                if self.step % o.log_every == 0 or self.batch_in_epoch == len(batches):
                    now = time.perf_counter()
                    rate = (now - session_t0) / session_steps
                    remaining = self.total_steps - self.step
                    self._emit(
                        "step",
                        StepEvent(
                            self.step, self.epoch, self.batch_in_epoch / len(batches), win_loss / win_n, lr,
                            win_tokens / max(1e-9, now - win_t0), self.elapsed_s, max(0.0, remaining * rate),
                        ),
                    )
                    win_loss, win_n, win_tokens, win_t0 = 0.0, 0, 0, now
            if not self._weights_finite():
                last = f"epoch {self.epoch}" if self.epoch else "none (no epoch finished yet)"
                where = f" in {self.out_dir}" if self.out_dir else ""
                msg = (
                    f"the weights became NaN or infinite by step {self.step} (epoch {self.epoch + 1}); training stopped. "
                    f"The last good checkpoint{where} is kept: {last}. Try a lower --lr or a longer --warmup."
                )
                self._message(msg, "error")
                return self._end("failed", msg)
            self._eval_and_record()
            self.epoch += 1
            self.batch_in_epoch = 0
            self._epoch_loss_sum, self._epoch_loss_n = 0.0, 0
            if self.epoch < o.epochs:
                self.save_checkpoint("epoch")
        final: dict[str, Any] = {}
        if o.final_eval:
            t0 = time.perf_counter()
            final = self.final_evaluation()
            self.meta["final"] = final
            self.elapsed_s += time.perf_counter() - t0
        self.save_checkpoint("final", "finished")
        return self._end(status, message or f"finished {o.epochs} epochs ({self.step} steps)", final)

    def _weights_finite(self) -> bool:
        return all(bool(torch.isfinite(t).all()) for t in self.model.state_dict().values() if t.is_floating_point())

    def _end(self, status: str, message: str, final: dict[str, Any] | None = None) -> TrainResult:
        final = final or {}
        self._emit("end", EndEvent(status, message, self.step, self.epoch, self.elapsed_s, final))
        return TrainResult(status, message, self.step, self.epoch, self.elapsed_s, self.history, final, self.out_dir)


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed (for meta.json): ``attnviz`` plus the arguments, shell-quoted."""
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["attnviz", *args])
