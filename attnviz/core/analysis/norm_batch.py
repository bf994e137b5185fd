"""LayerNorm vs BatchNorm on a real batch: the norm-batch view's data and the accuracy gap.

A batch of several sentences of different lengths (the session's own, then a few example
sentences), padded with PAD, goes through the model; every normalization's input is recorded
with the batch axis kept (:class:`NormBatchBuilder` runs it in parts and, from one decoding step
to the next, redoes only the session's sentence in the decoder). From it:

* BatchNorm's per-feature statistics over the batch's tokens with the PAD positions left out
  (what ``MaskedBatchNorm`` uses in training) and with them counted, next to the running
  statistics a BatchNorm model normalizes with in evaluation, and the statistics of the first
  sentence alone (batch size 1). A BatchNorm model's batch goes through a training-mode pass
  (:class:`TrainingPassBuilder`): every BatchNorm normalizes with its batch's statistics, so a
  deep site's input comes from layers normalized as in training, not with the running ones;
* LayerNorm's per-token statistics, which do not depend on the batch: before the norm, after
  the normalization (mean 0, std 1) and after the learned γ, β.

:func:`accuracy_gap` measures what this costs a BatchNorm model: its teacher-forced token
accuracy with each batch's own statistics, with the running ones, and with batch size 1. No Qt.
"""

from __future__ import annotations

import copy
import functools
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnviz.core.data import corpora as D
from attnviz.core.data import sources
from attnviz.core.model.interventions import BatchStatistics
from attnviz.core.model.modules import MaskedBatchNorm
from attnviz.core.model.trace import Recorder, trace_schema

PAD_LABEL = "PAD"
COMPANIONS = 3  # example sentences added to the session's own
ACCURACY_PAIRS = 200  # training pairs measured by default
ACCURACY_BATCH_TOKENS = 500  # padded tokens per batch, as the bundled BatchNorm model was trained


@dataclass(frozen=True, eq=False)
class FeatureStats:
    """Per-feature statistics ``[d_model]`` over ``n`` tokens (``n`` = 0: the running ones)."""

    mean: np.ndarray
    var: np.ndarray
    n: int


def feature_stats(x: np.ndarray, valid: np.ndarray | None = None) -> FeatureStats:
    """Mean and (biased) variance of each feature of ``x`` ``[B, L, d]`` over the tokens where
    ``valid`` ``[B, L]`` is True (every position when ``valid`` is None)."""
    flat = np.asarray(x, np.float64).reshape(-1, x.shape[-1])
    if valid is not None:
        flat = flat[np.asarray(valid, bool).reshape(-1)]
    return FeatureStats(flat.mean(0), flat.var(0), int(flat.shape[0]))


def token_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, std) over the features of each token of ``x`` ``[..., d]``: LayerNorm's statistics."""
    a = np.asarray(x, np.float64)
    return a.mean(-1), a.std(-1)


@dataclass(frozen=True, eq=False)
class NormSiteBatch:
    """One normalization site over the batch. ``x`` ``[B, L, d]`` is its input (PAD rows
    included), ``valid`` ``[B, L]`` marks the real tokens, ``alone`` ``[L0, d]`` is its input for
    the first sentence run alone; ``gamma``/``beta``/``eps`` are the norm's own."""

    site: str
    x: np.ndarray
    valid: np.ndarray
    alone: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    eps: float
    running: FeatureStats | None  # BatchNorm's running statistics; None for LayerNorm

    @property
    def stack(self) -> str:
        return self.site.split(".")[0]

    def without_pad(self) -> FeatureStats:
        return feature_stats(self.x, self.valid)

    def with_pad(self) -> FeatureStats:
        return feature_stats(self.x)

    def batch_size_one(self) -> FeatureStats:
        return feature_stats(self.alone[None])

    def layer_norm_stages(self, x: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per-token (mean, std) of ``x`` ``[..., d]`` before LayerNorm, after its normalization
        (x − μ)/√(σ² + ε), and after the learned γ, β."""
        a = np.asarray(x, np.float64)
        mean, std = token_stats(a)
        normalized = (a - mean[..., None]) / np.sqrt(std[..., None] ** 2 + self.eps)
        return {"before": (mean, std), "normalized": token_stats(normalized),
                "after γ, β": token_stats(normalized * self.gamma + self.beta)}


@dataclass(frozen=True, eq=False)
class NormBatch:
    norm: str  # "layer" | "batch"
    src_pieces: tuple[tuple[str, ...], ...]  # per sentence, padded with PAD_LABEL
    tgt_pieces: tuple[tuple[str, ...], ...]
    sites: tuple[NormSiteBatch, ...]
    batch_statistics: bool = False  # every BatchNorm normalized with the batch's own statistics (a training-mode pass)

    def pieces(self, stack: str) -> tuple[tuple[str, ...], ...]:
        return self.src_pieces if stack == "encoder" else self.tgt_pieces

    def get(self, site: str) -> NormSiteBatch | None:
        return next((s for s in self.sites if s.site == site), None)


@functools.lru_cache(maxsize=1)
def companion_sentences() -> tuple[tuple[str, str], ...]:
    """(source, reference) of the app's example sentences that have a reference."""
    from attnviz.core.data.examples import load_examples

    return tuple((e.source, e.reference) for e in load_examples() if e.reference)


def batch_rows(bundle, src_ids: Sequence[int], tgt_ids: Sequence[int], n: int = COMPANIONS) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The session's (source, SOS + target) ids first, then up to ``n`` example sentences whose
    source lengths differ from every earlier one."""
    cfg = bundle.config
    rows = [(tuple(src_ids), tuple(tgt_ids) or (cfg.bos_id,))]
    lengths = {len(rows[0][0])}
    for src, ref in companion_sentences():
        if len(rows) > n:
            break
        s = tuple(bundle.src_tokenizer.encode(src))[: cfg.max_len]
        if s and len(s) not in lengths:
            lengths.add(len(s))
            rows.append((s, (cfg.bos_id, *bundle.tgt_tokenizer.encode(ref))[: cfg.max_len]))
    return rows


def _padded(rows: Sequence[Sequence[int]], pad_id: int, length: int = 0) -> torch.Tensor:
    """``rows`` ``[B, L]`` padded with ``pad_id`` to the longest one, or to ``length`` where that is more."""
    out = torch.full((len(rows), max(length, *(len(r) for r in rows))), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(list(r), dtype=torch.long)
    return out


def _labels(tokenizer, ids: torch.Tensor, valid: torch.Tensor) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(tokenizer.piece(int(i)) if v else PAD_LABEL for i, v in zip(row, ok)) for row, ok in zip(ids, valid))


def _norm_names(config, stack: str) -> list[str]:
    """The trace names of every normalization input of ``stack``."""
    return [n for n, _, _ in trace_schema(config) if n.startswith(f"{stack}.") and n.endswith(".input") and "norm" in n.split(".")[-2]]


def _recorded(names: list[str], run: Callable[[Recorder], object], training: bool = False) -> tuple[object, dict[str, np.ndarray]]:
    """(what ``run(recorder)`` returns, the recorded ``names`` ``[B, L, d]`` by site); ``training``:
    every BatchNorm of the call normalizes with its batch's statistics (the ``BatchStatistics``
    intervention; the model is not changed)."""
    rec = Recorder(names, batch_index=None, interventions=(BatchStatistics(),) if training else ())
    with torch.inference_mode():
        out = run(rec)
    trace = rec.trace()
    return out, {n[: -len(".input")]: np.asarray(trace[n]) for n in names}


@dataclass(frozen=True, eq=False)
class _SourcePart:
    """What one source needs, whatever the step: the batch's rows (the session's source first),
    its padded sources, the encoder's norm inputs in the batch and for the first sentence alone,
    and the encoder results the decoder passes use."""

    rows: list[tuple[tuple[int, ...], tuple[int, ...]]]
    src: torch.Tensor  # [B, Ls] padded
    encoder: dict[str, np.ndarray]  # site -> [B, Ls, d]
    encoder_alone: dict[str, np.ndarray]  # site -> [1, L0, d]
    first: object  # Encoded of the first sentence alone
    others: object  # Encoded of the other sentences


class NormBatchBuilder:
    """Builds the :class:`NormBatch` of a LayerNorm bundle step after step, doing only what the step changes.

    Evaluation mode makes every sentence's numbers independent of the others in the batch (and
    a PAD position's of how much PAD follows), so the batch is assembled from parts: once per
    source, the encoder on the batch and on the first sentence alone; once per source (and again
    only when the session's target outgrows them), the decoder on the other sentences; on each
    step, the decoder on the session's sentence alone, padded to the batch's length.
    """

    def __init__(self, bundle):
        self.bundle = bundle
        self._lock = threading.Lock()  # one build at a time: a superseded one may still run in a worker
        self._source: tuple[tuple[int, ...], _SourcePart] | None = None
        self._others: tuple[int, dict[str, np.ndarray]] | None = None  # padded length, site -> [B-1, Lt, d]

    def build(self, src_ids: Sequence[int], tgt_ids: Sequence[int]) -> NormBatch:
        """The batch of :func:`batch_rows` through the model, and the first sentence alone."""
        with self._lock:
            return self._build(src_ids, tgt_ids)

    def _build(self, src_ids: Sequence[int], tgt_ids: Sequence[int]) -> NormBatch:
        model, cfg = self.bundle.model, self.bundle.config
        part = self._source_part(tuple(src_ids), tuple(tgt_ids))
        first_tgt = tuple(tgt_ids) or (cfg.bos_id,)
        tgt = _padded([first_tgt, *(r[1] for r in part.rows[1:])], cfg.pad_id)
        names = _norm_names(cfg, "decoder")
        _, first = _recorded(names, lambda rec: model.decode(tgt[:1], part.first, rec))
        others = self._other_targets(part, tgt.shape[1], names)
        decoder = {site: np.concatenate([x, others[site][:, : tgt.shape[1]]]) if len(part.rows) > 1 else x for site, x in first.items()}
        alone = {**part.encoder_alone, **{site: x[:, : len(first_tgt)] for site, x in first.items()}}
        return assemble(self.bundle, part.src, tgt, {**part.encoder, **decoder}, alone)

    def _source_part(self, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...]) -> _SourcePart:
        if self._source is None or self._source[0] != src_ids:
            model, cfg = self.bundle.model, self.bundle.config
            rows = batch_rows(self.bundle, src_ids, tgt_ids)
            src = _padded([r[0] for r in rows], cfg.pad_id)
            names = _norm_names(cfg, "encoder")
            _, encoder = _recorded(names, lambda rec: model.encode(src, rec))
            first, encoder_alone = _recorded(names, lambda rec: model.encode(src[:1, : len(rows[0][0])], rec))
            with torch.inference_mode():
                others = model.encode(src[1:]) if len(rows) > 1 else None
            self._source = (src_ids, _SourcePart(rows, src, encoder, encoder_alone, first, others))
            self._others = None
        return self._source[1]

    def _other_targets(self, part: _SourcePart, length: int, names: list[str]) -> dict[str, np.ndarray]:
        """The decoder's norm inputs of the other sentences, padded to at least ``length``."""
        if len(part.rows) < 2:
            return {}
        if self._others is None or self._others[0] < length:
            cfg = self.bundle.config
            tgt = _padded([r[1] for r in part.rows[1:]], cfg.pad_id, length)
            _, found = _recorded(names, lambda rec: self.bundle.model.decode(tgt, part.others, rec))
            self._others = (tgt.shape[1], found)
        return self._others[1]



@dataclass(frozen=True, eq=False)
class _TrainingSource:
    """What a training-mode pass keeps per source: the batch's rows, its padded sources, the
    encoder's norm inputs in the batch and for the first sentence alone, and both encoder results."""

    rows: list[tuple[tuple[int, ...], tuple[int, ...]]]
    src: torch.Tensor  # [B, Ls] padded
    encoder: dict[str, np.ndarray]  # site -> [B, Ls, d]
    encoder_alone: dict[str, np.ndarray]  # site -> [1, L0, d]
    batch: object  # Encoded of the batch
    first: object  # Encoded of the first sentence alone


class TrainingPassBuilder:
    """Builds the :class:`NormBatch` of a BatchNorm bundle from a training-mode pass: every
    BatchNorm normalizes with the statistics of the batch it is given (PAD left out), so each
    deeper site's input comes from layers normalized the same way, as in training. The model is
    never changed (it may be running in another thread): the ``BatchStatistics`` intervention
    travels with each call's recorder; the running statistics are neither used nor updated and
    dropout stays off, which gives the numbers of ``model.train()`` with dropout p = 0.

    Batch statistics tie each sentence to the others: the encoder runs once per source, the
    decoder on the whole batch at every step (the session's target is in it); the first
    sentence alone is its own batch of one.
    """

    def __init__(self, bundle):
        self.bundle = bundle
        self._lock = threading.Lock()  # one build at a time: a superseded one may still run in a worker
        self._source: tuple[tuple[int, ...], _TrainingSource] | None = None

    def build(self, src_ids: Sequence[int], tgt_ids: Sequence[int]) -> NormBatch:
        """The batch of :func:`batch_rows` through the model in training mode, and the first sentence alone."""
        with self._lock:
            model, cfg = self.bundle.model, self.bundle.config
            part = self._source_part(tuple(src_ids), tuple(tgt_ids))
            first_tgt = tuple(tgt_ids) or (cfg.bos_id,)
            tgt = _padded([first_tgt, *(r[1] for r in part.rows[1:])], cfg.pad_id)
            names = _norm_names(cfg, "decoder")
            _, decoder = _recorded(names, lambda rec: model.decode(tgt, part.batch, rec), training=True)
            _, alone = _recorded(names, lambda rec: model.decode(tgt[:1, : len(first_tgt)], part.first, rec), training=True)
            return assemble(self.bundle, part.src, tgt, {**part.encoder, **decoder}, {**part.encoder_alone, **alone}, True)

    def _source_part(self, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...]) -> _TrainingSource:
        if self._source is None or self._source[0] != src_ids:
            model, cfg = self.bundle.model, self.bundle.config
            rows = batch_rows(self.bundle, src_ids, tgt_ids)
            src = _padded([r[0] for r in rows], cfg.pad_id)
            names = _norm_names(cfg, "encoder")
            batch, encoder = _recorded(names, lambda rec: model.encode(src, rec), training=True)
            first, alone = _recorded(names, lambda rec: model.encode(src[:1, : len(rows[0][0])], rec), training=True)
            self._source = (src_ids, _TrainingSource(rows, src, encoder, alone, batch, first))
        return self._source[1]


def assemble(bundle, src: torch.Tensor, tgt: torch.Tensor, inputs: dict[str, np.ndarray], alone: dict[str, np.ndarray],
             batch_statistics: bool = False) -> NormBatch:
    """The :class:`NormBatch` of the padded ``src`` ``[B, Ls]`` and ``tgt`` ``[B, Lt]``: ``inputs``
    (site -> ``[B, L, d]``) and ``alone`` (site -> ``[1, L0, d]``) are each norm's input in the batch
    and for the first sentence alone."""
    model, cfg = bundle.model, bundle.config
    src_valid, tgt_valid = model.masks.source(src)[1], model.masks.target(tgt)[1]
    sites = [site_batch(bundle, site, x, (src_valid if site.startswith("encoder") else tgt_valid).numpy(), alone[site][0])
             for site, x in inputs.items()]
    return NormBatch(cfg.norm, _labels(bundle.src_tokenizer, src, src_valid), _labels(bundle.tgt_tokenizer, tgt, tgt_valid),
                     tuple(sites), batch_statistics)


def site_batch(bundle, site: str, x: np.ndarray, valid: np.ndarray, alone: np.ndarray) -> NormSiteBatch:
    """One site's :class:`NormSiteBatch`, with the norm's own γ, β, ε and running statistics."""
    module = bundle.model.get_submodule(site)
    running = None
    if isinstance(module, MaskedBatchNorm):
        running = FeatureStats(module.running_mean.detach().double().numpy(), module.running_var.detach().double().numpy(), 0)
    gamma = module.weight.detach().double().numpy()
    bias = getattr(module, "bias", None)  # a norm without β (RMSNorm) adds nothing
    beta = np.zeros_like(gamma) if bias is None else bias.detach().double().numpy()
    return NormSiteBatch(site, x, valid, alone, gamma, beta, float(module.eps), running)


def norm_batch_builder(bundle) -> NormBatchBuilder | TrainingPassBuilder:
    """The builder of ``bundle``'s batch: a training-mode pass for a BatchNorm model (its batch
    statistics as in training), the evaluation pass in parts for a LayerNorm one (which has no
    batch statistics: both passes are the same with dropout off)."""
    return TrainingPassBuilder(bundle) if bundle.config.norm == "batch" else NormBatchBuilder(bundle)


def norm_batch_for(bundle, src_ids: Sequence[int], tgt_ids: Sequence[int]) -> NormBatch:
    """The batch of :func:`batch_rows` through ``bundle``'s model, and the first sentence alone
    (a builder of :func:`norm_batch_builder` keeps what later steps of the same source can reuse)."""
    return norm_batch_builder(bundle).build(src_ids, tgt_ids)


# -- the accuracy gap -------------------------------------------------------------------------------
def batch_statistics() -> Recorder:
    """A recorder for one call whose BatchNorms normalize with the batch's own statistics (PAD
    left out), as in training, though the model is in evaluation mode (the ``BatchStatistics``
    intervention: the running statistics are neither used nor changed, and another thread's run of
    the same model is not affected)."""
    return Recorder((), None, (BatchStatistics(),))


@dataclass(frozen=True)
class AccuracyGap:
    """Teacher-forced token accuracy (argmax = label, PAD left out, EOS counted) of ``pairs`` pairs."""

    batch: float  # each batch's own statistics (as in training)
    running: float  # the running statistics (evaluation)
    single: float  # each sentence's own statistics (batch size 1)
    pairs: int
    tokens: int


def training_examples(bundle, n: int = ACCURACY_PAIRS, seed: int = 0) -> list[D.Example]:
    """``n`` pairs drawn (with ``seed``) from the training split of the data the bundle was trained
    on, as token ids. ``DataError`` when the bundle does not say which data that was."""
    spec = (bundle.meta.get("data") or {}).get("spec")
    if not spec:
        raise D.DataError("this model's meta.json does not name its training data: cannot draw training pairs")
    train = sources.load_data(spec).train
    pairs = random.Random(seed).sample(train, min(n, len(train)))
    return D.encode_pairs(pairs, bundle.src_tokenizer, bundle.tgt_tokenizer, max_len=bundle.config.max_len)


def _correct(model, examples: Sequence[D.Example], batches: Sequence[Sequence[int]], tick: Callable[[], bool],
             batch: bool = False) -> tuple[int, int] | None:
    cfg = model.config
    correct = tokens = 0
    for idx in batches:
        if not tick():
            return None
        b = D.collate([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
        logits = model(b.src, b.tgt_in, batch_statistics() if batch else None)  # [B, Lt, V]
        mask = b.labels != cfg.pad_id  # [B, Lt]
        correct += int(((logits.argmax(-1) == b.labels) & mask).sum())
        tokens += int(mask.sum())
    return correct, tokens


def accuracy_gap(model, examples: Sequence[D.Example], batch_tokens: int = ACCURACY_BATCH_TOKENS,
                 progress: Callable[[int, int], None] | None = None, should_stop: Callable[[], bool] | None = None) -> AccuracyGap | None:
    """The three accuracies of ``examples`` (batches of similar length up to ``batch_tokens``
    padded tokens); ``progress(done, total)`` after each batch; ``None`` once ``should_stop()``."""
    batches = D.make_batches(examples, batch_tokens, shuffle=False)
    singles = [[i] for i in range(len(examples))]
    total, done = 2 * len(batches) + len(singles), [0]

    def tick() -> bool:
        if should_stop is not None and should_stop():
            return False
        if progress is not None:
            progress(done[0], total)
        done[0] += 1
        return True

    with torch.inference_mode():
        running = _correct(model, examples, batches, tick)
        batch = _correct(model, examples, batches, tick, batch=True) if running else None
        single = _correct(model, examples, singles, tick, batch=True) if batch else None
    if single is None or not examples:
        return None
    n = running[1]
    return AccuracyGap(batch[0] / n, running[0] / n, single[0] / n, len(examples), n)


def measure_accuracy(bundle, n: int, progress: Callable[[int, int], None] | None = None,
                     should_stop: Callable[[], bool] | None = None) -> AccuracyGap | None:
    """:func:`accuracy_gap` of ``n`` training pairs (:func:`training_examples`) of ``bundle``, on a
    copy of its model, so that a measurement in the background never changes what the bundle's
    model computes meanwhile."""
    examples = training_examples(bundle, n)
    return accuracy_gap(copy.deepcopy(bundle.model), examples, progress=progress, should_stop=should_stop)
