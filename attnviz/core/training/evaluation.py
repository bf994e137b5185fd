"""Evaluation: greedy decoding with the KV cache (``greedy_decode``, ``greedy_translate``),
teacher-forced loss and token accuracy, corpus BLEU and chrF (sacrebleu), and the ``Trainer``'s
evaluation after each epoch (``TrainerEvaluation``: probe translations with their
cross-attention and norm statistics, valid-split metrics, the final evaluation). No Qt.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.core.data import corpora as D
from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer
from attnviz.core.model.trace import Recorder
from attnviz.core.model.transformer import Transformer
from attnviz.core.training.events import EvalEvent, ProbeSnapshot

CROSS_ATTN = "decoder.layers.*.cross_attn.weights"
NORM_PATTERNS = ("*norm*.mean", "*norm*.var", "*norm*.batch_mean", "*norm*.batch_var", "*norm*.running_mean", "*norm*.running_var")


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

def _finite_or_none(v: float, digits: int = 5) -> float | None:
    v = float(v)
    return round(v, digits) if math.isfinite(v) else None


def _round(a: np.ndarray, digits: int = 3) -> list:
    return np.round(a.astype(np.float64), digits).tolist()


# -- the trainer's evaluation --------------------------------------------------------------
class TrainerEvaluation:
    """The ``Trainer``'s evaluation methods (a mixin: the state is the ``Trainer``'s)."""

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
