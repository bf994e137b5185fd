"""Analyses of captured arrays: plain numpy functions, no model and no Qt (except the HSK
alignment evaluation at the end, which runs a bundle's model in teacher-forced passes).

Shapes follow the trace contract: attention weights are ``[..., head, query, key]`` (any
leading axes, e.g. ``[layer, head, query, key]`` from ``DecodingSession.all_attention``).

* Per head: ``head_statistics`` (entropy, mean attention distance, maximum weight);
  ``alignment`` (argmax key per query) and ``alignment_pairs`` (as pieces).
* ``rollout`` (Abnar & Zuidema 2020) for the encoder, and ``decoder_rollout`` through the
  decoder to the source (formulation in its docstring).
* ``norm_statistics`` per norm site (LayerNorm: per-token mean/std; BatchNorm: per-feature
  batch and running statistics) and ``compare_norms``: both normalizations of the same
  activations, to show their axes (LN over the features of one token, BN over the tokens of
  one feature).
* Positional encoding: ``positional_encoding``, ``positional_curves``,
  ``positional_similarity``, ``embedding_positional_ratio``.
* Alignment quality on HSK: ``reference_pairs`` from the data set's word glosses,
  ``alignment_accuracy`` of attention against them, ``evaluate_hsk_alignment(bundle, records)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .bundle import Bundle
    from .tokenizer import Tokenizer


# -- attention per head ----------------------------------------------------------------------
def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy (nats) of every attention row: ``[..., query, key]`` -> ``[..., query]`` (0·log 0 = 0)."""
    w = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, -w * np.log(np.where(w > 0, w, 1.0)), 0.0)
    return terms.sum(-1)


def mean_distance(weights: np.ndarray, query_offset: int = 0) -> np.ndarray:
    """Mean attention distance per head: the average over queries of ``sum_k w[q, k] |q - k|``
    (positions; query ``q`` sits at ``q + query_offset``). ``[..., head, query, key]`` -> ``[..., head]``.
    Meaningful for self-attention; for cross-attention it compares target with source positions."""
    w = np.asarray(weights, dtype=np.float64)
    nq, nk = w.shape[-2:]
    dist = np.abs(np.arange(nq)[:, None] + query_offset - np.arange(nk)[None, :])  # [query, key]
    return (w * dist).sum(-1).mean(-1) if nq else np.zeros(w.shape[:-2])


def head_statistics(weights: np.ndarray, query_offset: int = 0) -> dict[str, np.ndarray]:
    """Per head, averaged over the query rows: ``entropy`` (nats), ``distance`` (see
    ``mean_distance``) and ``max_weight`` (the mean of each row's largest weight: 1 = always one
    key). ``[..., head, query, key]`` -> each ``[..., head]``."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape[-2] == 0:
        z = np.zeros(w.shape[:-2])
        return {"entropy": z, "distance": z.copy(), "max_weight": z.copy()}
    return {
        "entropy": row_entropy(w).mean(-1),
        "distance": mean_distance(w, query_offset),
        "max_weight": w.max(-1).mean(-1),
    }


def alignment(weights: np.ndarray) -> np.ndarray:
    """The key each query attends to most: ``[..., query, key]`` -> ``[..., query]`` (int)."""
    return np.asarray(weights).argmax(-1)


def alignment_pairs(weights: np.ndarray, query_pieces: Sequence[str], key_pieces: Sequence[str]) -> list[tuple[str, str, float]]:
    """For a ``[query, key]`` matrix (one head, or a head mean): per query row
    ``(query piece, key piece it attends to most, that weight)``."""
    w = np.asarray(weights)
    if w.ndim != 2:
        raise ValueError(f"alignment_pairs needs one [query, key] matrix, not shape {w.shape}")
    best = w.argmax(-1)
    return [(query_pieces[i], key_pieces[int(j)], float(w[i, j])) for i, j in enumerate(best)]


# -- attention rollout ---------------------------------------------------------------------------
def _with_residual(weights: np.ndarray, residual: float) -> np.ndarray:
    """``(1 - residual) * mean_head(A) + residual * I``, rows renormalized. ``[head, q, k]`` -> ``[q, k]``."""
    a = np.asarray(weights, dtype=np.float64).mean(0)
    a = (1.0 - residual) * a + residual * np.eye(a.shape[0], a.shape[1])
    return a / a.sum(-1, keepdims=True)


def rollout(layers: Sequence[np.ndarray] | np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020) through a self-attention stack.

    ``layers``: ``[layer, head, n, n]`` (first layer first). Each layer becomes
    ``Ã_l = rownorm(0.5 · mean_h A_l + 0.5 · I)`` (the identity accounts for the residual
    connection) and ``R = Ã_L · … · Ã_1``: row ``i`` says how much each input token reaches
    position ``i`` after the last layer. Returns ``[n, n]``; rows sum to 1.
    """
    layers = [np.asarray(a) for a in layers]
    if not layers:
        raise ValueError("rollout needs at least one layer")
    r = np.eye(layers[0].shape[-1])
    for a in layers:
        r = _with_residual(a, residual) @ r
    return r


def decoder_rollout(
    self_layers: Sequence[np.ndarray] | np.ndarray,
    cross_layers: Sequence[np.ndarray] | np.ndarray,
    encoder_rollout: np.ndarray | None = None,
    residual: float = 0.5,
) -> dict[str, np.ndarray]:
    """Rollout through the decoder, down to the source tokens.

    Every decoder position carries a relevance row over the fed target tokens and the source
    tokens, ``R = [R_tgt | R_src]`` (``[t, t + s]``), starting at ``[I | 0]``. Per layer:

    * masked self-attention (with its residual): ``R <- Ã_self · R``,
      ``Ã_self = rownorm(0.5 · mean_h A_self + 0.5 · I)``;
    * cross-attention (with its residual): ``R <- 0.5 · R + 0.5 · [0 | mean_h A_cross · E]``,
      where ``E`` (``[s, s]``) is the encoder's rollout (what each encoder output carries of each
      source token; identity when ``encoder_rollout`` is None);
    * the FFN works on each position alone and leaves ``R`` unchanged.

    Rows of ``R`` sum to 1. Returns ``source`` ``[t, s]`` (the source share of each target
    position), ``source_normalized`` (rows rescaled to sum to 1: comparable with a cross-attention
    row) and ``target`` ``[t, t]``.
    """
    self_layers = [np.asarray(a, dtype=np.float64) for a in self_layers]
    cross_layers = [np.asarray(a, dtype=np.float64) for a in cross_layers]
    if len(self_layers) != len(cross_layers) or not self_layers:
        raise ValueError("decoder_rollout needs as many self- as cross-attention layers (at least one)")
    t, s = cross_layers[0].shape[-2:]
    e = np.eye(s) if encoder_rollout is None else np.asarray(encoder_rollout, dtype=np.float64)
    r = np.concatenate([np.eye(t), np.zeros((t, s))], axis=1)  # [t, t + s]
    for a_self, a_cross in zip(self_layers, cross_layers):
        r = _with_residual(a_self, residual) @ r
        bring = np.concatenate([np.zeros((t, t)), a_cross.mean(0) @ e], axis=1)
        r = (1.0 - residual) * bring + residual * r
    src = r[:, t:]
    total = src.sum(-1, keepdims=True)
    return {"source": src, "source_normalized": src / np.where(total > 0, total, 1.0), "target": r[:, :t]}


# -- normalization ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class NormStats:
    """Statistics of one normalization site (a trace prefix such as ``encoder.layers.0.norm1``).

    LayerNorm (``kind == "layer"``): ``input_mean``/``input_std``/``output_mean``/``output_std``
    are per token over the features, ``[pos]``. BatchNorm (``kind == "batch"``): they are per
    feature over the tokens, ``[d_model]``, and ``batch_mean``/``batch_var`` (the tokens' own
    statistics) and ``running_mean``/``running_var`` (what the model normalizes with in
    evaluation) are ``[d_model]``. Standard deviations are biased (divide by n), as the norms use.
    """

    site: str
    kind: str
    input_mean: np.ndarray
    input_std: np.ndarray
    output_mean: np.ndarray
    output_std: np.ndarray
    batch_mean: np.ndarray | None = None
    batch_var: np.ndarray | None = None
    running_mean: np.ndarray | None = None
    running_var: np.ndarray | None = None


def norm_sites(trace: Mapping[str, np.ndarray]) -> list[str]:
    """The normalization prefixes present in ``trace`` (in trace order)."""
    out = []
    for name in trace:
        if name.endswith((".mean", ".running_mean")) and (".norm" in name or ".final_norm" in name):
            site = name.rsplit(".", 1)[0]
            if site not in out and f"{site}.input" in trace:
                out.append(site)
    return out


def norm_statistics(trace: Mapping[str, np.ndarray], site: str) -> NormStats:
    """``NormStats`` of ``site`` from a trace (or ``DecodingSession.accumulated`` values in a dict)."""
    x = np.asarray(trace[f"{site}.input"], dtype=np.float64)  # [pos, d_model]
    y = np.asarray(trace[f"{site}.output"], dtype=np.float64)
    if f"{site}.running_mean" in trace:
        bm = trace[f"{site}.batch_mean"] if f"{site}.batch_mean" in trace else x.mean(0)
        bv = trace[f"{site}.batch_var"] if f"{site}.batch_var" in trace else x.var(0)
        return NormStats(
            site, "batch", x.mean(0), x.std(0), y.mean(0), y.std(0),
            np.asarray(bm), np.asarray(bv), np.asarray(trace[f"{site}.running_mean"]), np.asarray(trace[f"{site}.running_var"]),
        )
    return NormStats(site, "layer", x.mean(-1), x.std(-1), y.mean(-1), y.std(-1))


@dataclass(frozen=True)
class NormComparison:
    """Both normalizations (no learned scale/shift) of the same activations ``x`` ``[pos, d_model]``.

    LayerNorm normalizes the features of one token: ``layer_mean``/``layer_std`` ``[pos]``.
    BatchNorm normalizes one feature over the tokens: ``batch_mean``/``batch_std`` ``[d_model]``
    (over the ``valid`` tokens only). ``layer_output``/``batch_output`` are ``[pos, d_model]``.
    """

    layer_mean: np.ndarray
    layer_std: np.ndarray
    layer_output: np.ndarray
    batch_mean: np.ndarray
    batch_std: np.ndarray
    batch_output: np.ndarray


def compare_norms(x: np.ndarray, valid: np.ndarray | None = None, eps: float = 1e-5) -> NormComparison:
    """What LayerNorm and BatchNorm (training-mode batch statistics) make of the same ``x``."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"compare_norms needs [pos, d_model] activations, not shape {x.shape}")
    lm = x.mean(-1)
    lv = x.var(-1)
    tokens = x if valid is None else x[np.asarray(valid, bool)]
    bm = tokens.mean(0)
    bv = tokens.var(0)
    return NormComparison(
        lm, np.sqrt(lv), (x - lm[:, None]) / np.sqrt(lv[:, None] + eps),
        bm, np.sqrt(bv), (x - bm[None, :]) / np.sqrt(bv[None, :] + eps),
    )


# -- positional encoding ----------------------------------------------------------------------------
def positional_encoding(n_positions: int, d_model: int) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...): ``[pos, d_model]``."""
    pos = np.arange(n_positions, dtype=np.float64)[:, None]
    two_i = np.arange(0, d_model, 2, dtype=np.float64)
    angle = pos / np.power(10000.0, two_i / d_model)  # [pos, d_model/2]
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe


def positional_curves(pe: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """Chosen dimensions of a PE matrix as curves over the positions: ``[len(dims), pos]``."""
    pe = np.asarray(pe)
    return np.stack([pe[:, int(d)] for d in dims]) if len(dims) else np.zeros((0, pe.shape[0]))


def positional_similarity(pe: np.ndarray, cosine: bool = False) -> np.ndarray:
    """PE·PEᵀ ``[pos, pos]`` (the dot product of every pair of positions); with ``cosine``,
    divided by the norms (every PE row has norm sqrt(d_model/2), so only the scale differs)."""
    pe = np.asarray(pe, dtype=np.float64)
    sim = pe @ pe.T
    if cosine:
        n = np.linalg.norm(pe, axis=-1)
        sim = sim / np.outer(n, n)
    return sim


def embedding_positional_ratio(tokens: np.ndarray, positional: np.ndarray) -> dict[str, np.ndarray | float]:
    """How large PE is next to the (scaled) token embeddings it is added to: per position the
    norms ``token_norm`` and ``positional_norm`` ``[pos]``, ``ratio = positional / token``, and
    ``mean_ratio``. Inputs: ``embed.tokens`` and ``embed.positional`` ``[pos, d_model]``."""
    t = np.linalg.norm(np.asarray(tokens, dtype=np.float64), axis=-1)
    p = np.linalg.norm(np.asarray(positional, dtype=np.float64), axis=-1)
    ratio = p / np.where(t > 0, t, np.nan)
    return {"token_norm": t, "positional_norm": p, "ratio": ratio, "mean_ratio": float(np.nanmean(ratio)) if ratio.size else float("nan")}


# -- alignment quality on HSK --------------------------------------------------------------------------
# Words that carry no lexical meaning of their own in a gloss or a translation.
STOP_WORDS = frozenset(
    "a an the to of be is are am was were been and or in on at for with by as from sb sth s "
    "etc used particle also esp e g i.e classifier measure word cl one's oneself it's".split()
)
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def normalize_word(word: str) -> str:
    """A light English stemmer shared by glosses and translations (``teachers``, ``teacher`` ->
    ``teacher``; ``likes``, ``liked``, ``like`` -> ``lik``); enough to match a gloss to a word."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("es") and (w[-3] in "sxz" or w[-4:-2] in ("ch", "sh")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed") and not w.endswith("eed"):
        w = w[:-2]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def gloss_words(gloss: str) -> set[str]:
    """The normalized content words of a CC-CEDICT gloss (``"teacher; (polite) you"``); notes in
    parentheses or brackets and cross-references (``see ...``, ``CL:...``) are left out."""
    out: set[str] = set()
    for alt in re.split(r"[;/]", gloss or ""):
        alt = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", alt).strip()
        if not alt or alt.lower().startswith(("see ", "variant of", "cl:", "surname ", "old variant")):
            continue
        for w in _WORD.findall(alt):
            if w.lower() not in STOP_WORDS:
                out.add(normalize_word(w))
    return out


def english_words(text: str) -> list[tuple[str, int, int]]:
    """The content words of an English text: ``(normalized word, start, end)`` character spans."""
    return [(normalize_word(m.group()), m.start(), m.end()) for m in _WORD.finditer(text) if m.group().lower() not in STOP_WORDS]


def piece_spans(text: str, pieces: Sequence[str], unk: str = "<unk>") -> list[tuple[int, int]]:
    """Character span of every sentencepiece piece in ``text`` (the word-start mark ``▁`` stands
    for a space; an ``unk`` piece covers the characters up to the next known piece)."""
    spans: list[tuple[int, int] | None] = []
    pending: list[int] = []
    pos = 0
    for i, p in enumerate(pieces):
        if p == unk:
            spans.append(None)
            pending.append(i)
            continue
        surface = p.replace("\u2581", " ").strip(" ")
        if not surface:
            spans.append((pos, pos))
            continue
        j = text.find(surface, pos)
        if j < 0:
            j = pos
        for u in pending:
            spans[u] = (pos, j)
        pending.clear()
        spans.append((j, j + len(surface)))
        pos = j + len(surface)
    for u in pending:
        spans[u] = (pos, len(text))
    return [s if s is not None else (0, 0) for s in spans]


@dataclass(frozen=True)
class AlignmentReference:
    """Reference alignment of one sentence pair: for each target piece position (index into the
    labels y + EOS) the set of source piece positions that translate it."""

    source: str
    target: str
    pairs: tuple[tuple[int, frozenset[int], str], ...]  # (target position, source positions, English word)


def reference_pairs(
    record: Mapping[str, Any], src_tokenizer: "Tokenizer", tgt_tokenizer: "Tokenizer", max_len: int | None = None
) -> AlignmentReference:
    """Reference pairs of an HSK record (``chinese``, ``translation.en``, ``tokens`` with ``word`` and
    ``gloss_en``): an English content word of the translation that occurs (after
    ``normalize_word``) in a source word's gloss is aligned to the source pieces covering that
    word; the source word is located in the Chinese text from left to right. Each target piece
    of the English word gives one pair. A word matching several source words accepts all of them."""
    zh = (record.get("chinese") or "").strip()
    en = ((record.get("translation") or {}).get("en") or "").strip()
    src_pieces = src_tokenizer.encode_pieces(zh)
    tgt_pieces = tgt_tokenizer.encode_pieces(en)
    if max_len is not None:
        src_pieces = src_pieces[:max_len]
        tgt_pieces = tgt_pieces[: max_len - 1]
    s_spans = piece_spans(zh, src_pieces)
    t_spans = piece_spans(en, tgt_pieces)
    # source words -> character spans -> piece positions
    glossed: list[tuple[set[str], frozenset[int]]] = []
    cursor = 0
    for tok in record.get("tokens") or []:
        word = tok.get("word") or ""
        j = zh.find(word, cursor) if word else -1
        if j < 0:
            continue
        cursor = j + len(word)
        covered = frozenset(i for i, (a, b) in enumerate(s_spans) if a < cursor and b > j)
        words = gloss_words(tok.get("gloss_en") or "")
        if covered and words:
            glossed.append((words, covered))
    pairs = []
    for w, a, b in english_words(en):
        allowed = frozenset().union(*[cov for words, cov in glossed if w in words]) if glossed else frozenset()
        if not allowed:
            continue
        for p, (pa, pb) in enumerate(t_spans):
            if pa < b and pb > a:
                pairs.append((p, allowed, w))
    return AlignmentReference(zh, en, tuple(pairs))


def alignment_accuracy(
    weights: np.ndarray, pairs: Iterable[tuple[int, Iterable[int]] | tuple[int, Iterable[int], str]], row_shift: int = 0
) -> np.ndarray:
    """Share of reference pairs whose target row attends most to an allowed source position.

    ``weights``: cross-attention ``[..., query, key]`` (e.g. ``[layer, head, tgt, src]``);
    ``pairs``: ``(target position, allowed source positions[, word])``; the row used for target
    position ``p`` is ``p + row_shift`` (0: the row whose distribution predicts the piece; 1: the
    row where the piece is fed back). Returns ``[...]`` (NaN without pairs)."""
    w = np.asarray(weights)
    best = w.argmax(-1)  # [..., query]
    hits = np.zeros(w.shape[:-2])
    n = 0
    for pair in pairs:
        p, allowed = pair[0], pair[1]
        row = p + row_shift
        if not 0 <= row < w.shape[-2]:
            continue
        hits = hits + np.isin(best[..., row], list(allowed))
        n += 1
    return hits / n if n else np.full(w.shape[:-2], np.nan)


def hsk_records(split: str = "test") -> list[dict[str, Any]]:
    """The HSK records of one split of ``attnviz.core.data`` (90/5/5 by a hash of the record id)."""
    from hsk_sentences_audio import load_sentences

    from .data import split_of

    return [r for r in load_sentences() if split_of(str(r.get("id"))) == split]


def evaluate_hsk_alignment(bundle: "Bundle", records: Sequence[Mapping[str, Any]], residual: float = 0.5) -> dict[str, Any]:
    """How often cross-attention's argmax lands on a right source piece, on HSK ``records``.

    Each record's reference translation is teacher-forced through ``bundle``'s model; every
    reference pair (``reference_pairs``) is one item. Scores for the row that predicts the piece
    (``predicting``) and for the row where it is fed back (``fed``), each with ``per_head``
    ``[layer][head]``, ``layer_mean`` (argmax of the head-mean, per layer), ``mean`` (all layers and
    heads averaged), ``rollout`` (``decoder_rollout``'s source part), ``best`` head, and two
    baselines: ``chance`` (a uniformly random source piece) and ``diagonal`` (the source piece at
    the same relative position).
    """
    from .decoding import DecodingError, teacher_forced

    names = ["encoder.layers.*.self_attn.weights", "decoder.layers.*.self_attn.weights", "decoder.layers.*.cross_attn.weights"]
    cfg = bundle.model.config
    L, H = cfg.n_decoder_layers, cfg.n_heads
    acc = {
        shift: {"per_head": np.zeros((L, H)), "layer_mean": np.zeros(L), "mean": 0.0, "rollout": 0.0, "diagonal": 0.0, "chance": 0.0, "n": 0}
        for shift in (0, 1)
    }
    sentences = 0
    for rec in records:
        ref = reference_pairs(rec, bundle.src_tokenizer, bundle.tgt_tokenizer, cfg.max_len)
        if not ref.pairs:
            continue
        try:
            tf = teacher_forced(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, ref.source, ref.target, top_k=1, names=names)
        except DecodingError:
            continue
        sentences += 1
        cross = tf.all_attention("cross")  # [layer, head, tgt, src]
        enc = tf.all_attention("encoder") if cfg.n_encoder_layers else None
        roll = decoder_rollout(tf.all_attention("decoder"), cross, rollout(enc, residual) if enc is not None else None, residual)["source"]
        t, s = cross.shape[-2:]
        diag = np.zeros((t, s))
        diag[np.arange(t), np.minimum(s - 1, (np.arange(t) * s) // max(t, 1))] = 1.0
        for shift, a in acc.items():
            usable = [(p, al) for p, al, _ in ref.pairs if 0 <= p + shift < t]
            k = len(usable)
            if not k:
                continue
            a["per_head"] += alignment_accuracy(cross, usable, shift) * k
            a["layer_mean"] += alignment_accuracy(cross.mean(1), usable, shift) * k
            a["mean"] += float(alignment_accuracy(cross.mean((0, 1)), usable, shift)) * k
            a["rollout"] += float(alignment_accuracy(roll, usable, shift)) * k
            a["diagonal"] += float(alignment_accuracy(diag, usable, shift)) * k
            a["chance"] += sum(len(al) / s for _, al in usable)
            a["n"] += k
    out: dict[str, Any] = {"sentences": sentences}
    for shift, a in acc.items():
        n = max(a["n"], 1)
        per_head = a["per_head"] / n
        best = np.unravel_index(int(per_head.argmax()), per_head.shape) if per_head.size else (0, 0)
        out["predicting" if shift == 0 else "fed"] = {
            "pairs": a["n"],
            "per_head": _rounded(per_head),
            "layer_mean": _rounded(a["layer_mean"] / n),
            "mean": round(a["mean"] / n, 4),
            "rollout": round(a["rollout"] / n, 4),
            "best": {"layer": int(best[0]), "head": int(best[1]), "accuracy": round(float(per_head[best]) if per_head.size else math.nan, 4)},
            "chance": round(a["chance"] / n, 4),
            "diagonal": round(a["diagonal"] / n, 4),
        }
    return out


def _rounded(a: np.ndarray) -> Any:
    return np.round(np.asarray(a, dtype=np.float64), 4).tolist()
