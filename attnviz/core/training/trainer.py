"""Training: the ``Trainer`` (teacher forcing, label smoothing, Adam with warm-up, checkpoints).
No Qt. Around it: ``training_setup`` (``TrainOptions``, the learning-rate schedule, new tokenizers
and models), ``training_events`` (the events and their payloads), ``evaluation`` (greedy
decoding, sacrebleu, the per-epoch evaluation) and ``checkpoint_state`` (the optimiser state on
disk); their public names are re-exported here.

Teacher forcing, exactly as the paper's tutorial lays it out::

    encoder input  = source                  x1 .. xm
    decoder input  = SOS + target            SOS y1 .. yn      (shifted right)
    labels         = target + EOS            y1 .. yn EOS
    loss           = cross-entropy with label smoothing, PAD positions ignored

Optimiser: Adam (beta1 0.9, beta2 0.98, eps 1e-9) with the warm-up schedule of
``training_setup.learning_rate``; gradients are clipped to ``clip`` (global L2 norm).

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
(a GUI forwards it to its own thread). The events and their payloads are listed in
``training_events``.

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
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from attnviz.core.bundle import Bundle, BundleError, load_bundle, save_bundle
from attnviz.core.data import corpora as D
from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.core.training.checkpoint import STATE_JSON, STATE_TENSORS, _opt_state_from_files, _opt_state_to_files
from attnviz.core.training.evaluation import TrainerEvaluation
from attnviz.core.training.events import EVENTS, CheckpointEvent, EndEvent, MessageEvent, StartEvent, StateEvent, StepEvent, TrainResult
from attnviz.core.training.setup import TrainingError, TrainOptions, build_model, build_tokenizers, learning_rate, resolve_device


# -- the trainer ----------------------------------------------------------------------------
class Trainer(TrainerEvaluation):
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
