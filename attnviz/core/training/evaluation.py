"""Evaluation, as plain functions of a model and its tokenizers: greedy decoding with the KV cache
(``greedy_decode``, ``greedy_translate``), teacher-forced loss and token accuracy, corpus BLEU and
chrF (sacrebleu), the metrics of a split, and the probe translations with their cross-attention
and norm statistics that the ``Trainer`` records after each epoch. ``eval_mode`` runs a block in
eval mode and restores the previous mode. No Qt.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.core.data import corpora as D
from attnviz.core.data.examples import normalise
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.decoding.result import check_eval_mode
from attnviz.core.model.sites import attention_sites
from attnviz.core.model.trace import Recorder, Trace
from attnviz.core.model.transformer import Transformer
from attnviz.core.training.events import ProbeSnapshot

NORM_PATTERNS = ("*norm*.mean", "*norm*.var", "*norm*.batch_mean", "*norm*.batch_var", "*norm*.running_mean", "*norm*.running_var")


@contextmanager
def eval_mode(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Run the block with ``model`` in eval mode; its previous mode comes back afterwards."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def _pad(rows: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """``rows`` as one ``[B, longest row]`` long tensor, padded with ``pad_id`` on the right."""
    out = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long)
    for r, row in enumerate(rows):
        out[r, : len(row)] = torch.tensor(list(row), dtype=torch.long)
    return out


# -- greedy decoding ----------------------------------------------------------------------
@dataclass(frozen=True)
class GreedyResult:
    ids: tuple[int, ...]  # output ids, without SOS and EOS (a decoder-only model's: its prompt, then the continuation)
    finished: bool  # True when EOS was produced within the length limit
    topk: tuple[tuple[tuple[int, float], ...], ...] = ()  # per step: (id, probability) best first


class EvaluationStopped(Exception):
    """An evaluation given ``should_stop`` stopped early because it returned True."""


def _never() -> bool:
    return False


def _check_stop(should_stop: Callable[[], bool]) -> None:
    if should_stop():
        raise EvaluationStopped("the evaluation was stopped")


def default_max_new(src_len: int, max_len: int) -> int:
    """How many target tokens greedy decoding may produce for a source of ``src_len`` tokens."""
    return max(1, min(max_len, 2 * src_len + 10))


def _limit(cfg, n: int, max_new: int | None) -> int:
    """The most output tokens for a source of ``n`` tokens: ``max_new`` (default ``2 x n + 10``),
    never more than the model's ``max_len``; a decoder-only model's output starts with its prompt,
    so ``max_new`` counts the tokens after it (as in a decoding session)."""
    if max_new is None:
        return default_max_new(n, cfg.max_len)
    return min(cfg.max_len, max_new + (n if cfg.kind == "decoder-only" else 0))


def _check_sources(cfg, sources: Sequence[Sequence[int]]) -> None:
    """``ValueError`` for an empty source or one longer than the model reads (a decoder-only
    model's prompt follows SOS, which takes a position)."""
    prompted = cfg.kind == "decoder-only"
    longest = cfg.max_len - 1 if prompted else cfg.max_len
    for s in sources:
        if not s:
            raise ValueError("cannot translate an empty source")
        if len(s) > longest:
            what = f"a prompt of {len(s)} tokens exceeds the model's max_len less SOS" if prompted else f"a source of {len(s)} tokens exceeds the model's max_len"
            raise ValueError(f"{what} ({longest})")


def _batches(order: Sequence[int], sources: Sequence[Sequence[int]], size: int, same_length: bool) -> Iterator[list[int]]:
    """``order`` in runs of at most ``size`` indices; with ``same_length`` each run's sources are equally long."""
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) == size or (same_length and len(sources[i]) != len(sources[batch[0]]))):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    sources: Sequence[Sequence[int]],
    max_new: int | None = None,
    top_k: int = 0,
    batch_size: int = 64,
    should_stop: Callable[[], bool] = _never,
) -> list[GreedyResult]:
    """Greedy decoding of source id lists with the KV cache (``start_decoding``/``decode_step``).

    Runs in eval mode (and restores the previous mode). Sources are batched by length; each has
    its own limit (``max_new``, default ``2 x source tokens + 10``), so batching does not change
    a result. An empty source or one longer than the model's ``max_len`` raises ``ValueError``, an
    encoder-only model (BERT: no decoder) ``DecodingError`` (a ``ValueError`` too, in one line).
    ``should_stop`` is asked before every step; when it returns True, ``EvaluationStopped`` is raised.
    A model whose decoder starts from PAD (Marian) never produces PAD, as in a decoding session.
    A decoder-only model (GPT-2) reads each source as its prompt: SOS and the prompt in one
    ``prefill`` pass, then the continuation (its result's ids and top-k start with the prompt's
    forced steps, as a decoding session's output does); a batch holds prompts of one length.
    """
    cfg = model.config
    _check_sources(cfg, sources)
    out: list[GreedyResult | None] = [None] * len(sources)
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    with eval_mode(model):
        check_eval_mode(model)  # in eval mode now: refuses only a model that cannot decode
        for idx in _batches(order, sources, batch_size, cfg.kind == "decoder-only"):
            batch = [sources[i] for i in idx]
            limits = [_limit(cfg, len(s), max_new) for s in batch]
            for i, result in zip(idx, _greedy_batch(model, batch, limits, top_k, should_stop)):
                out[i] = result
    return out  # type: ignore[return-value]


def _start(model: Transformer, sources: Sequence[Sequence[int]]) -> tuple[torch.Tensor, Any, torch.Tensor]:
    """(logits ``[B, n + 1, V]``, the cache after them, the forced tokens ``[B, n]``): an encoder-decoder
    model's first step from SOS (``n`` = 0); a decoder-only model's one pass over SOS and its prompt
    (the sources, all ``n`` tokens long), row ``j`` the distribution that prompt token ``j`` is forced over."""
    cfg = model.config
    device = _device(model)
    if cfg.kind != "decoder-only":
        cache = model.start_decoding(model.encode(_pad(sources, cfg.pad_id).to(device)))
        logits, cache = model.decode_step(torch.full((len(sources),), cfg.bos_id, dtype=torch.long, device=device), cache)
        return logits[:, None], cache, torch.zeros(len(sources), 0, dtype=torch.long, device=device)
    prompt = torch.tensor([list(s) for s in sources], dtype=torch.long, device=device)  # [B, n]
    fed = torch.cat([torch.full((len(sources), 1), cfg.bos_id, dtype=torch.long, device=device), prompt], 1)  # [B, n + 1]
    cache = model.start_decoding(model.encode(torch.zeros(len(sources), 0, dtype=torch.long, device=device)))
    logits, cache = model.prefill(fed, cache)
    return logits, cache, prompt


def _topk(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(probabilities ``[B, k]``, ids ``[B, k]``) of the ``k`` most likely tokens of ``logits`` ``[B, V]``, on the CPU."""
    p, t = torch.softmax(logits.float(), -1).topk(min(k, logits.shape[-1]), -1)
    return p.cpu(), t.cpu()


def _greedy_batch(
    model: Transformer, sources: Sequence[Sequence[int]], limits: Sequence[int], top_k: int, should_stop: Callable[[], bool]
) -> list[GreedyResult]:
    """One batch of ``greedy_decode``: step until every row has produced EOS or the longest limit."""
    cfg = model.config
    _check_stop(should_stop)
    start, cache, forced = _start(model, sources)
    n = forced.shape[1]
    steps: list[torch.Tensor] = list(forced.unbind(1))
    tops = [_topk(start[:, j], top_k) for j in range(n)] if top_k else []  # per step: probabilities [B, k], ids [B, k]
    logits = start[:, n]  # the first free step's distribution
    done = torch.zeros(len(sources), dtype=torch.bool, device=forced.device)  # [B]
    free = max(limits) - n  # the steps after the prompt
    for i in range(free):
        if cfg.bos_id == cfg.pad_id != cfg.eos_id:  # the decoder starts from PAD: never choose it
            logits[:, cfg.pad_id] = -math.inf
        if top_k:
            tops.append(_topk(logits, top_k))
        token = torch.where(done, torch.full_like(done, cfg.pad_id, dtype=torch.long), logits.argmax(-1))
        steps.append(token)
        done |= token == cfg.eos_id
        if bool(done.all()) or i == free - 1:
            break
        _check_stop(should_stop)
        logits, cache = model.decode_step(token, cache)  # [B, V]
    ids = torch.stack(steps, 1).cpu().tolist() if steps else [[] for _ in sources]
    return [_greedy_result(ids[r][: limits[r]], [(p[r], t[r]) for p, t in tops], cfg.eos_id) for r in range(len(sources))]


def _greedy_result(row: list[int], tops: list[tuple[torch.Tensor, torch.Tensor]], eos_id: int) -> GreedyResult:
    """One row's ids cut at its first EOS, with the top-k of each step up to and including it."""
    n = row.index(eos_id) if eos_id in row else len(row)
    finished = n < len(row)
    steps = tops[: n + 1 if finished else n]
    topk = tuple(tuple((int(t), float(p)) for p, t in zip(ps.tolist(), ts.tolist())) for ps, ts in steps)
    return GreedyResult(tuple(row[:n]), finished, topk)


def greedy_translate(
    model: Transformer,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    texts: Sequence[str],
    max_len: int | None = None,
    batch_size: int = 64,
    should_stop: Callable[[], bool] = _never,
) -> list[str]:
    """Greedy translations of ``texts`` (in order). Unknown characters become UNK and are translated anyway."""
    results = greedy_decode(model, [src_tok.encode(t) for t in texts], max_new=max_len, batch_size=batch_size, should_stop=should_stop)
    return [tgt_tok.decode(r.ids) for r in results]


# -- metrics --------------------------------------------------------------------------------
def sacrebleu_scores(hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]]) -> dict[str, float]:
    """Corpus BLEU and chrF from ``sacrebleu`` (defaults: 13a tokenisation; chrF n=6, beta=2).
    ``references``: one string per hypothesis, or a list of every reference of each hypothesis."""
    import sacrebleu

    if not hypotheses:
        return {"bleu": 0.0, "chrf": 0.0}
    rows = [[r] if isinstance(r, str) else list(r) for r in references]
    width = max(len(r) for r in rows)
    refs = [[r[k] if k < len(r) else None for r in rows] for k in range(width)]  # sacrebleu skips None references
    return {
        "bleu": float(sacrebleu.corpus_bleu(list(hypotheses), refs).score),
        "chrf": float(sacrebleu.corpus_chrf(list(hypotheses), refs).score),
    }


@torch.no_grad()
def teacher_forced_metrics(
    model: Transformer, examples: Sequence[D.Example], batch_tokens: int = 2000, should_stop: Callable[[], bool] = _never
) -> dict[str, float]:
    """Loss (plain cross-entropy, no smoothing) and token accuracy (argmax == label, PAD excluded,
    EOS included) under teacher forcing, in eval mode."""
    if not examples:
        return {"loss": float("nan"), "token_accuracy": float("nan"), "tokens": 0}
    cfg = model.config
    device = _device(model)
    total_loss = 0.0
    correct = tokens = 0
    with eval_mode(model):
        for idx in D.make_batches(examples, batch_tokens, shuffle=False):
            _check_stop(should_stop)
            b = D.collate([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id).to(device)
            logits = model(b.src, b.tgt_in)  # [B, Lt, V]
            mask = b.labels != cfg.pad_id  # [B, Lt]
            total_loss += float(F.cross_entropy(logits.transpose(1, 2), b.labels, ignore_index=cfg.pad_id, reduction="sum"))
            correct += int(((logits.argmax(-1) == b.labels) & mask).sum())
            tokens += int(mask.sum())
    return {"loss": total_loss / tokens, "token_accuracy": correct / tokens, "tokens": tokens}


def translation_scores(
    model: Transformer,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    pairs: Sequence[D.Pair],
    examples: Sequence[D.Example],
    should_stop: Callable[[], bool] = _never,
) -> dict[str, float]:
    """Greedy BLEU, chrF and the share of exact translations on the pairs kept as ``examples``: each
    source once, scored against every reference it has (a Tatoeba sentence often has several)."""
    refs: dict[str, list[str]] = {}
    for e in examples:
        refs.setdefault(pairs[e.index].src, []).append(pairs[e.index].tgt)
    sources = list(refs)
    hyps = greedy_translate(model, src_tok, tgt_tok, sources, should_stop=should_stop)
    out = sacrebleu_scores(hyps, [refs[s] for s in sources])
    out["exact"] = sum(h in refs[s] for h, s in zip(hyps, sources)) / max(1, len(sources))
    out["sources"] = len(sources)
    return out


def evaluate_split(
    model: Transformer,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    pairs: Sequence[D.Pair],
    bleu: bool = True,
    batch_tokens: int = 2000,
    should_stop: Callable[[], bool] = _never,
) -> dict[str, float]:
    """Teacher-forced loss and token accuracy, plus greedy BLEU and chrF (sacrebleu) on ``pairs``."""
    examples = D.encode_pairs(pairs, src_tok, tgt_tok, model.config.max_len)
    out = dict(teacher_forced_metrics(model, examples, batch_tokens, should_stop))
    if bleu:
        out.update(translation_scores(model, src_tok, tgt_tok, pairs, examples, should_stop))
    return out


def valid_metrics(
    model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, pairs: Sequence[D.Pair], examples: Sequence[D.Example], bleu: bool
) -> dict[str, float]:
    """The per-epoch metrics of the valid split (``examples``, encoded from ``pairs``): teacher-forced
    loss and token accuracy, and (with ``bleu``) greedy BLEU and chrF."""
    m = teacher_forced_metrics(model, examples)
    out = {"valid_loss": m["loss"], "valid_token_accuracy": m["token_accuracy"]}
    if bleu and examples:
        s = translation_scores(model, src_tok, tgt_tok, pairs, examples)
        out.update(valid_bleu=s["bleu"], valid_chrf=s["chrf"])
    return out


TRAIN_SAMPLE = 3000  # the final evaluation scores at most this many training pairs (evenly spaced)


def _corpora(pairs: Sequence[D.Pair]) -> dict[str, list[D.Pair]]:
    """The pairs of each corpus of a mix (``extra["corpus"]``); empty when there is one corpus only."""
    out: dict[str, list[D.Pair]] = {}
    for p in pairs:
        out.setdefault(p.extra.get("corpus") or p.extra.get("augmented") or "", []).append(p)
    return out if len(out) > 1 else {}


def final_evaluation(
    model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, dataset: D.Dataset, should_stop: Callable[[], bool] = _never,
    splits: Sequence[str] = D.SPLITS,
) -> dict[str, Any]:
    """Token accuracy on every split, greedy BLEU/chrF on every split (the README's numbers), and per
    corpus for a mix (``"test:tatoeba-zh-en"``...). A training split above ``TRAIN_SAMPLE`` pairs is
    scored on an evenly spaced sample; ``"sampled"`` gives the pairs scored whenever they are fewer
    than the split's (also for a streamed corpus, which holds only part of it).
    ``EvaluationStopped`` when ``should_stop`` returns True (asked between batches and steps)."""
    res = {}
    for split in splits:
        pairs = dataset.split(split)
        if split == "train" and len(pairs) > TRAIN_SAMPLE:
            pairs = [pairs[i * len(pairs) // TRAIN_SAMPLE] for i in range(TRAIN_SAMPLE)]
        sampled = len(pairs) < dataset.sizes[split]
        groups = {split: pairs, **{f"{split}:{name}": part for name, part in _corpora(pairs).items()}}
        for key, part in groups.items():
            if part:
                m = evaluate_split(model, src_tok, tgt_tok, part, bleu=True, should_stop=should_stop)
                res[key] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()}
                if sampled:
                    res[key]["sampled"] = len(part)
    return res


def file_scores(model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, pairs: Sequence[D.Pair]) -> dict[str, Any]:
    """Greedy BLEU and chrF on ``pairs`` (each source once, against all its references) and how many
    sources are translated exactly (one of their references up to case, spaces and final punctuation)."""
    refs: dict[str, list[str]] = {}
    for p in pairs:
        refs.setdefault(p.src, []).append(p.tgt)
    sources = list(refs)
    hyps = greedy_translate(model, src_tok, tgt_tok, sources)
    exact = sum(normalise(h) in {normalise(r) for r in refs[s]} for h, s in zip(hyps, sources))
    return {**sacrebleu_scores(hyps, [refs[s] for s in sources]), "exact": exact, "sources": len(sources)}


def history_row(epoch: int, step: int, metrics: dict[str, float]) -> dict[str, Any]:
    """One row of a run's history (meta.json): the metrics rounded, non-finite ones as ``None``."""
    return {"epoch": epoch, "step": step, **{k: _finite_or_none(v) for k, v in metrics.items()}}


def _finite_or_none(v: float, digits: int = 5) -> float | None:
    v = float(v)
    return round(v, digits) if math.isfinite(v) else None


# -- probe sentences ----------------------------------------------------------------------
@torch.no_grad()
def probe_snapshots(
    model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, probes: Sequence[D.Pair]
) -> tuple[list[ProbeSnapshot], dict[str, dict[str, np.ndarray]]]:
    """Greedy translations of the probe sentences with their cross-attention, and the norm
    layers' statistics on them (eval mode)."""
    if not probes:
        return [], {}
    cfg = model.config
    cross = attention_sites(cfg, "cross")
    with eval_mode(model):
        src_ids = [src_tok.encode(p.src)[: cfg.max_len] or [cfg.unk_id] for p in probes]
        results = greedy_decode(model, src_ids)
        outs = [list(r.ids) + ([cfg.eos_id] if r.finished else []) for r in results]
        lt = min(cfg.max_len, max(len(o) for o in outs) + 1)
        src = _pad(src_ids, cfg.pad_id)  # [B, Ls]
        tgt = _pad([[cfg.bos_id, *o][:lt] for o in outs], cfg.pad_id)  # [B, Lt]: SOS + output (+ EOS)
        rec = Recorder([*(site.name("weights") for site in cross), *NORM_PATTERNS], batch_index=None)
        device = _device(model)
        model(src.to(device), tgt.to(device), rec)
        trace = rec.trace()
    snaps = []
    for r, (p, s, o, res) in enumerate(zip(probes, src_ids, outs, results)):
        rows = max(1, min(len(o), lt))
        att = {site.layer: trace[site.name("weights")][r, :, :rows, : len(s)].copy() for site in cross}  # [head, out, src]
        pieces = tuple(tgt_tok.pieces(o[:rows])) if o else ("",)
        snaps.append(ProbeSnapshot(p.src, p.tgt, tgt_tok.decode(res.ids), tuple(src_tok.pieces(s)), pieces, att))
    skip = {site.name("weights") for site in cross}
    return snaps, _norm_stats(trace, skip, (src != cfg.pad_id).numpy(), (tgt != cfg.pad_id).numpy())


def _norm_stats(trace: Trace, skip: set[str], src_valid: np.ndarray, tgt_valid: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """``{norm layer: {field: float32 array}}`` from the probe trace; LayerNorm's per-token fields
    keep the real (non-PAD) tokens only."""
    norms: dict[str, dict[str, np.ndarray]] = {}
    for name, arr in trace.items():
        if name in skip:
            continue
        layer, fld = name.rsplit(".", 1)
        if fld in ("mean", "var"):  # LayerNorm: per token, keep the real tokens
            arr = arr[src_valid if name.startswith("encoder") else tgt_valid]
        norms.setdefault(layer, {})[fld] = np.asarray(arr, dtype=np.float32)
    return norms


def probe_records(snapshots: Sequence[ProbeSnapshot]) -> list[dict[str, Any]]:
    """The probe snapshots as meta.json keeps them: cross-attention averaged over heads, per
    layer, rounded to 3 decimals."""
    return [
        {"hypothesis": s.hypothesis, "out_pieces": list(s.out_pieces), "cross_attention": [_round(a.mean(0)) for _, a in sorted(s.cross_attention.items())]}
        for s in snapshots
    ]


def stored_probe_snapshots(meta: dict[str, Any], probe: int) -> list[tuple[int, int, ProbeSnapshot]]:
    """Probe sentence ``probe`` (0-based) of every snapshot in a bundle's ``meta.json``, as
    ``(epoch, step, snapshot)``; each layer's cross-attention is ``[1, out, src]`` (the stored
    mean over heads, see :func:`probe_records`). ``IndexError`` when there is no such probe."""
    info = meta.get("probes", [])[probe]
    out = []
    for snap in meta.get("snapshots", []):
        rec = snap["probes"][probe]
        att = {layer: np.asarray(a, dtype=np.float32)[None] for layer, a in enumerate(rec["cross_attention"])}  # [1, out, src]
        out.append((int(snap["epoch"]), int(snap["step"]), ProbeSnapshot(
            info["source"], info.get("reference", ""), rec["hypothesis"], tuple(info["src_pieces"]), tuple(rec["out_pieces"]), att)))
    return out


def _round(a: np.ndarray, digits: int = 3) -> list:
    return np.round(a.astype(np.float64), digits).tolist()
