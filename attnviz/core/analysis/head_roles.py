"""Head roles over a corpus: for every attention head of every kind, what it does on average over
many sentence pairs, each pair teacher-forced (``attnviz heads``). No Qt.

Each measure is a mean over the query rows of every pair (rows pooled: a long sentence weighs
more), padding rows and padding keys left out; ``HeadRoles.measure(kind, name)`` is ``[layer, head]``:

* ``entropy`` — of the row's distribution over its keys, in nats (uniform over n keys: log n);
* ``eos`` / ``start`` / ``punctuation`` — the mass on keys that are EOS, the start token (SOS/BOS),
  or a punctuation piece (a piece whose characters, its word-start mark left out, are all
  Unicode punctuation): the usual attention sinks;
* ``diagonal`` — self-attention: the mass on key == query; cross-attention: the mass on the
  proportional diagonal, key j = min(S - 1, floor(i S / T + 1/2)) for row i of T rows over S source
  tokens;
* ``previous`` — self-attention only: the mass on key == query - 1 (rows from the second on);
* ``alignment`` — cross-attention only, where the pair has HSK glosses: the HSK alignment score of
  ``alignment.alignment_accuracy`` (argmax of the row that predicts a piece on a right source
  piece), a mean over reference pairs;
* ``importance`` — an encoder-decoder model's: Δ log P of the pair's target (its pieces and EOS)
  per target token when the head alone is zero-ablated (``head_importance.ablated_log_probs``),
  nats, a mean over pairs (negative: the head helps the model to the reference).

A measure that does not apply to a kind (or found no rows) is NaN. An encoder-decoder pair feeds
its source to the encoder and SOS + target to the decoder; a decoder-only model (GPT-2) feeds SOS +
source + target to the decoder; an encoder-only model (BERT) reads the source alone.

The pairs: ``held_out_pairs`` (an evenly spaced sample of the test split of the data a bundle's
meta.json names) or ``file_pairs`` (a TSV file). ``head_roles`` runs them in batches; a
``CorpusRun`` does it a chunk at a time (``advance``), so that a window can show progress and stop
between chunks.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attnviz.core.analysis.alignment import alignment_accuracy, reference_pairs
from attnviz.core.data.corpora import Pair, fits
from attnviz.core.data.pieces import SP_WORD_START
from attnviz.core.decoding.result import check_finite, model_device
from attnviz.core.limits import CORPUS_PAIRS
from attnviz.core.model.sites import KINDS, attention_sites, n_layers
from attnviz.errors import AttnvizError

if TYPE_CHECKING:
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.model.transformer import Transformer

MEASURES: tuple[str, ...] = ("entropy", "eos", "start", "punctuation", "diagonal", "previous", "alignment", "importance")
SELF_ONLY = frozenset({"previous"})
CROSS_ONLY = frozenset({"alignment"})
DEFAULT_PAIRS = CORPUS_PAIRS
BATCH_ROWS = 32  # pairs in one model pass
CHUNK = 25  # pairs one ``advance`` measures
WORD_MARKS = SP_WORD_START + "\u0120\u2423 "  # sentencepiece's ▁, byte-level BPE's Ġ, the app's ␣, a space


class HeadRolesError(AttnvizError, ValueError):
    """No pairs to measure (a model that names no held-out data, an empty file); one line."""


def applies(kind: str, measure: str) -> bool:
    """Whether ``measure`` is defined for attention of ``kind``."""
    return not (measure in SELF_ONLY and kind == "cross") and not (measure in CROSS_ONLY and kind != "cross")


# -- the result ----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class HeadRoles:
    """Sums over rows and their counts: ``sums[kind][measure]`` ``[layer, head]``, ``counts[kind][measure]``
    (rows; reference pairs for ``alignment``); ``sentences`` measured, ``skipped`` (too long, unreadable)."""

    sums: Mapping[str, Mapping[str, np.ndarray]]
    counts: Mapping[str, Mapping[str, int]]
    sentences: int = 0
    skipped: int = 0

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.sums)

    def measure(self, kind: str, name: str) -> np.ndarray:
        """The mean of ``name`` per head, ``[layer, head]`` (NaN where it does not apply or had no rows)."""
        total, n = self.sums[kind][name], self.counts[kind][name]
        return total / n if n else np.full(total.shape, np.nan)

    def plus(self, other: HeadRoles) -> HeadRoles:
        """Both sets of pairs together."""
        sums = {k: {m: self.sums[k][m] + other.sums[k][m] for m in MEASURES} for k in self.sums}
        counts = {k: {m: self.counts[k][m] + other.counts[k][m] for m in MEASURES} for k in self.counts}
        return HeadRoles(sums, counts, self.sentences + other.sentences, self.skipped + other.skipped)

    def to_json(self) -> dict[str, Any]:
        """Per kind, per measure ``[layer][head]`` (NaN as ``None``), and the counts."""
        kinds = {k: {m: [[_number(v) for v in row] for row in self.measure(k, m)] for m in MEASURES} for k in self.kinds}
        return {"sentences": self.sentences, "skipped": self.skipped, "measures": list(MEASURES), "kinds": kinds,
                "rows": {k: dict(self.counts[k]) for k in self.kinds}}


def _number(v: float) -> float | None:
    return round(float(v), 5) if math.isfinite(v) else None


def empty_roles(model: Transformer) -> HeadRoles:
    """No pairs yet: zero sums of the model's kinds."""
    cfg = model.config
    kinds = [k for k in KINDS if n_layers(cfg, k)]
    sums = {k: {m: np.zeros((n_layers(cfg, k), cfg.n_heads)) for m in MEASURES} for k in kinds}
    return HeadRoles(sums, {k: dict.fromkeys(MEASURES, 0) for k in kinds})


# -- the pairs -----------------------------------------------------------------------------------
def evenly_spaced(pairs: Sequence[Pair], n: int) -> list[Pair]:
    """At most ``n`` of ``pairs``, evenly spaced (all of them when there are no more)."""
    if len(pairs) <= n:
        return list(pairs)
    return [pairs[i * len(pairs) // n] for i in range(n)]


def held_out_pairs(spec: Mapping[str, Any] | None, n: int = DEFAULT_PAIRS, name: str = "the model") -> list[Pair]:
    """``n`` evenly spaced pairs of the test split of the data ``spec`` (a meta.json's) names."""
    from attnviz.core.data.sources import load_data

    if spec is None:
        raise HeadRolesError(f"{name} names no training data, so no held-out pairs: give a file of source<TAB>target pairs")
    pairs = evenly_spaced(load_data(dict(spec)).test, n)
    if not pairs:
        raise HeadRolesError(f"the data of {name} has no held-out (test) pairs")
    return pairs


def file_pairs(path: str, n: int = DEFAULT_PAIRS) -> list[Pair]:
    """At most ``n`` pairs of a ``source<TAB>target`` file, evenly spaced, in the file's order."""
    from attnviz.core.data.corpora import load_tsv

    data = load_tsv(path)
    pairs = sorted(data.train + data.valid + data.test, key=lambda p: int(p.id.rsplit(":", 1)[1]))
    if not pairs:
        raise HeadRolesError(f"{path} holds no source<TAB>target pair")
    return evenly_spaced(pairs, n)


# -- the token rows of a batch -------------------------------------------------------------------
def punctuation_table(tokenizer: Tokenizer) -> np.ndarray:
    """``[vocab]`` True for the pieces that are punctuation (word-start marks left out)."""
    out = np.zeros(tokenizer.vocab_size, dtype=bool)
    for i, piece in enumerate(tokenizer.pieces(range(tokenizer.vocab_size))):
        core = piece.strip(WORD_MARKS)
        out[i] = bool(core) and all(unicodedata.category(ch).startswith("P") for ch in core)
    return out


@dataclass(frozen=True)
class _Item:
    src: tuple[int, ...]  # the encoder's tokens (none for a decoder-only model)
    fed: tuple[int, ...]  # the decoder's (none for an encoder-only model)
    src_punct: tuple[bool, ...]
    fed_punct: tuple[bool, ...]
    refs: tuple[tuple[int, frozenset[int]], ...]  # (decoder row, allowed source positions): HSK references


def _item(pair: Pair, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, tables: tuple[np.ndarray, np.ndarray]) -> _Item | None:
    """``pair`` as the model reads it, or ``None`` when it does not fit (empty, too long, unreadable)."""
    cfg = model.config
    try:
        s, t = src_tok.encode(pair.src), tgt_tok.encode(pair.tgt)
    except ValueError:
        return None
    ps, pt = [bool(tables[0][i]) for i in s], [bool(tables[1][i]) for i in t]
    if cfg.kind == "encoder-only":
        return _Item(tuple(s), (), tuple(ps), (), ()) if fits(len(s), 0, cfg.max_len) else None
    if cfg.kind == "decoder-only":
        ok = bool(s) and len(s) + len(t) + 1 <= cfg.max_len
        return _Item((), (cfg.bos_id, *s, *t), (), (False, *ps, *pt), ()) if ok else None
    if not fits(len(s), len(t), cfg.max_len):
        return None
    return _Item(tuple(s), (cfg.bos_id, *t), tuple(ps), (False, *pt), _references(pair, src_tok, tgt_tok, cfg.max_len))


def _references(pair: Pair, src_tok: Tokenizer, tgt_tok: Tokenizer, max_len: int) -> tuple[tuple[int, frozenset[int]], ...]:
    tokens = pair.extra.get("tokens") if isinstance(pair.extra, dict) else None
    if not tokens:
        return ()
    record = {"chinese": pair.src, "translation": {"en": pair.tgt}, "tokens": tokens}
    return tuple((p, allowed) for p, allowed, _ in reference_pairs(record, src_tok, tgt_tok, max_len).pairs)


@dataclass(frozen=True)
class _Batch:
    src: np.ndarray  # [B, Ls] ids (PAD-padded)
    fed: np.ndarray  # [B, Lt]
    src_valid: np.ndarray  # [B, Ls] bool
    fed_valid: np.ndarray
    src_punct: np.ndarray
    fed_punct: np.ndarray
    refs: tuple[tuple[tuple[int, frozenset[int]], ...], ...]


def _padded(rows: Sequence[Sequence[Any]], fill: Any, dtype: Any) -> np.ndarray:
    out = np.full((len(rows), max((len(r) for r in rows), default=0)), fill, dtype=dtype)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def _batch(items: Sequence[_Item], pad_id: int) -> _Batch:
    src, fed = _padded([i.src for i in items], pad_id, np.int64), _padded([i.fed for i in items], pad_id, np.int64)
    return _Batch(src, fed, _padded([[True] * len(i.src) for i in items], False, bool), _padded([[True] * len(i.fed) for i in items], False, bool),
                  _padded([i.src_punct for i in items], False, bool), _padded([i.fed_punct for i in items], False, bool),
                  tuple(i.refs for i in items))


# -- the measures of one site --------------------------------------------------------------------
def site_sums(w: np.ndarray, q_valid: np.ndarray, k_valid: np.ndarray, flags: Mapping[str, np.ndarray], kind: str,
              refs: Sequence[Sequence[tuple[int, frozenset[int]]]] = ()) -> dict[str, tuple[np.ndarray, int]]:
    """Each measure's sum over the valid rows of one site's weights ``w`` ``[B, head, query, key]``
    and its count: ``q_valid`` ``[B, query]``, ``k_valid`` ``[B, key]``, ``flags`` (``eos``, ``start``,
    ``punctuation``: ``[B, key]`` bool), ``refs`` per row of the batch (cross-attention)."""
    w = np.asarray(w, dtype=np.float64) * k_valid[:, None, None, :]  # padding keys out
    rows = q_valid[:, None, :].astype(np.float64)  # [B, 1, Q]
    n = int(q_valid.sum())

    def total(per_row: np.ndarray) -> np.ndarray:  # [B, H, Q] -> [H]
        return (per_row * rows).sum((0, 2))

    logs = np.log(np.where(w > 0, w, 1.0))
    out = {"entropy": (total(-(w * logs).sum(-1)), n)}
    for name, f in flags.items():
        out[name] = (total((w * f[:, None, None, :]).sum(-1)), n)
    out["diagonal"] = (total(_diagonal(w, q_valid, k_valid, kind)), n)
    if kind != "cross":
        below = np.diagonal(w, offset=-1, axis1=2, axis2=3)  # [B, H, Q - 1]: w[q + 1, q]
        later = (q_valid[:, 1:] & k_valid[:, :-1])[:, None, :]
        out["previous"] = ((below * later).sum((0, 2)), int(later.sum()))
    else:
        out["alignment"] = _alignment(w, q_valid, k_valid, refs)
    return out


def proportional_keys(t: int, s: int, rows: int) -> np.ndarray:
    """Key of each of ``rows`` rows on the proportional diagonal of ``t`` valid rows over ``s`` keys."""
    return np.minimum(s - 1, np.floor(np.arange(rows) * s / max(t, 1) + 0.5)).astype(np.int64)


def _diagonal(w: np.ndarray, q_valid: np.ndarray, k_valid: np.ndarray, kind: str) -> np.ndarray:
    if kind != "cross":
        return np.diagonal(w, axis1=2, axis2=3)  # [B, H, Q]
    keys = np.stack([proportional_keys(int(q.sum()), max(int(k.sum()), 1), w.shape[2]) for q, k in zip(q_valid, k_valid)])
    return np.take_along_axis(w, keys[:, None, :, None], -1)[..., 0]


def _alignment(w: np.ndarray, q_valid: np.ndarray, k_valid: np.ndarray, refs) -> tuple[np.ndarray, int]:
    hits, n = np.zeros(w.shape[1]), 0
    for b, pairs in enumerate(refs):
        t, s = int(q_valid[b].sum()), int(k_valid[b].sum())
        usable = [(p, allowed) for p, allowed in pairs if p < t]
        if usable:
            hits += alignment_accuracy(w[b, :, :t, :s], usable, 0) * len(usable)
            n += len(usable)
    return hits, n


# -- running the model ---------------------------------------------------------------------------
def _pass(model: Transformer, batch: _Batch) -> dict[str, np.ndarray]:
    """Every site's weights ``[B, head, query, key]`` of one teacher-forced pass."""
    cfg, device = model.config, model_device(model)
    names = [site.name("weights") for site in attention_sites(cfg)]
    src = torch.as_tensor(batch.src, device=device)  # [B, Ls] (a decoder-only model: [B, 0])
    fed = None if cfg.kind == "encoder-only" else torch.as_tensor(batch.fed, device=device)  # [B, Lt]
    with torch.inference_mode():
        logits, trace = model.run_with_trace(src, fed, names=names, batch_index=None)
    check_finite(logits, "on these pairs")
    return {name: trace[name] for name in names}


def _batch_roles(model: Transformer, batch: _Batch, base: HeadRoles) -> HeadRoles:
    cfg = model.config
    weights = _pass(model, batch)
    sums = {k: {m: v.copy() for m, v in ms.items()} for k, ms in base.sums.items()}
    counts = {k: dict(ms) for k, ms in base.counts.items()}
    for site in attention_sites(cfg):
        k = batch.fed if site.kind == "decoder" else batch.src
        qv = batch.src_valid if site.kind == "encoder" else batch.fed_valid
        kv = batch.fed_valid if site.kind == "decoder" else batch.src_valid
        kp = batch.fed_punct if site.kind == "decoder" else batch.src_punct
        flags = {"eos": k == cfg.eos_id, "start": k == cfg.bos_id, "punctuation": kp}
        for m, (total, n) in site_sums(weights[site.name("weights")], qv, kv, flags, site.kind, batch.refs).items():
            sums[site.kind][m][site.layer] += total
            if site.layer == 0:
                counts[site.kind][m] += n
    return HeadRoles(sums, counts, base.sentences + len(batch.refs), base.skipped)


def head_roles(model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, pairs: Sequence[Pair],
               batch_rows: int = BATCH_ROWS, progress: Callable[[int, int], None] | None = None) -> HeadRoles:
    """Every measure of every head over ``pairs`` (see the module docstring), ``batch_rows`` pairs a
    pass (sorted by length, so little is padded); ``progress(done, total)`` after each pass."""
    tables = (punctuation_table(src_tok), punctuation_table(tgt_tok))
    items = [_item(p, model, src_tok, tgt_tok, tables) for p in pairs]
    kept = sorted((i for i in items if i is not None), key=lambda i: (len(i.src), len(i.fed)))
    roles = empty_roles(model)
    roles = HeadRoles(roles.sums, roles.counts, 0, len(items) - len(kept))
    for start in range(0, len(kept), batch_rows):
        roles = _batch_roles(model, _batch(kept[start:start + batch_rows], model.config.pad_id), roles)
        roles = _with_importance(model, kept[start:start + batch_rows], roles)
        if progress is not None:
            progress(min(start + batch_rows, len(kept)), len(kept))
    return roles


def _with_importance(model: Transformer, items: Sequence[_Item], base: HeadRoles) -> HeadRoles:
    """``base`` with the ``importance`` of ``items`` added (an encoder-decoder model's; one batched
    pass of every head's ablation per pair)."""
    from attnviz.core.analysis.attribution import token_log_probs
    from attnviz.core.analysis.head_importance import ablated_log_probs

    cfg = model.config
    if cfg.kind != "encoder-decoder":
        return base
    sites, sums = attention_sites(cfg), {k: dict(ms) for k, ms in base.sums.items()}
    counts = {k: dict(ms) for k, ms in base.counts.items()}
    for kind in sums:
        sums[kind]["importance"] = sums[kind]["importance"].copy()
    for item in items:
        target = [*item.fed[1:], cfg.eos_id]
        clean = float(token_log_probs(model, [item.src], target)[0][0].sum())
        delta = (ablated_log_probs(model, item.src, target, sites) - clean) / len(target)  # [site * head]
        for i, site in enumerate(sites):
            sums[site.kind]["importance"][site.layer] += delta[i * cfg.n_heads:(i + 1) * cfg.n_heads]
    for kind in counts:
        counts[kind]["importance"] += len(items)
    return HeadRoles(sums, counts, base.sentences, base.skipped)


# -- a run a chunk at a time ---------------------------------------------------------------------
@dataclass(frozen=True)
class CorpusRequest:
    """Which pairs a ``CorpusRun`` measures: ``n`` held-out pairs of the data ``spec`` names, or
    ``fallback`` (the sentence on screen) when it names none."""

    spec: Mapping[str, Any] | None  # a meta.json's data spec (never changed)
    n: int
    fallback: tuple[Pair, ...] = ()

    def pairs(self) -> tuple[list[Pair], str]:
        """The pairs and where they come from (``held-out`` or ``sentence``)."""
        if self.spec is None:
            return list(self.fallback), "sentence"
        return held_out_pairs(self.spec, self.n), "held-out"


@dataclass(frozen=True, eq=False)
class CorpusRun:
    """The pairs of a request, the first ``done`` of them measured (``roles``)."""

    pairs: tuple[Pair, ...]
    origin: str  # "held-out" or "sentence"
    roles: HeadRoles
    done: int = 0

    @property
    def total(self) -> int:
        return len(self.pairs)

    @property
    def complete(self) -> bool:
        return self.done >= self.total


def advance(state: CorpusRequest | CorpusRun, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, chunk: int = CHUNK) -> CorpusRun:
    """The run with its next ``chunk`` pairs measured (a request: its pairs read first); pure: ``state`` is kept as it was."""
    if isinstance(state, CorpusRequest):
        pairs, origin = state.pairs()
        state = CorpusRun(tuple(pairs), origin, empty_roles(model))
    if state.complete:
        return state
    part = head_roles(model, src_tok, tgt_tok, state.pairs[state.done:state.done + chunk])
    return CorpusRun(state.pairs, state.origin, state.roles.plus(part), min(state.total, state.done + chunk))
