"""Queries and keys in one space (AttentionViz, Yeh et al., IEEE VIS 2023): one head's query
vectors and key vectors, normalised so that nearness in the picture means attention, projected
together into two dimensions (``attnviz qk``, the "Queries and keys" view). No Qt.

For a head ``(kind, layer, head)`` the queries are ``Q_i = X W_i^Q (+ bias)`` and the keys
``K_i = X W_i^K (+ bias)`` of the trace (``<site>.q``, ``<site>.k``): encoder self-attention has the
source's queries and keys, decoder self-attention the fed target's, cross-attention the fed
target's queries beside the source's keys (the encoder's output through W^K). The sentence on
screen comes first; a sample of held-out pairs (:func:`attnviz.core.analysis.head_roles.held_out_pairs`,
the sample head roles are measured on) may join it, each run teacher-forced.

What the normalisation keeps. The head's weights are ``A = softmax(Q Kᵀ / √d_k + M)``, a softmax
of each query row over its keys.

* **Keys, centred** (``k_j − μ_k``): every score of row ``i`` drops by ``q_i · μ_k``, the same for
  every key of the row, so each row's softmax is unchanged — exactly.
* **Queries, centred** (``q_i − μ_q``): every score of column ``j`` drops by ``μ_q · k_j``, a term of
  the key alone, the same in every row: ``exp`` of column ``j`` is multiplied by
  ``exp(−μ_q · k_j / √d_k)`` before each row is normalised. That is *not* an invariance: a row's
  keys may reorder. The query points are centred for the picture only; :meth:`Normalised.scores`
  adds the query mean back, ``(q̂_i + c μ_q) · k̂_j = q_i · k_j − q_i · μ_k``, whose order along each
  row is the order of the head's weights (ties aside; masked keys aside; a relative position bias,
  T5's, is not part of ``q · k``).
* **Scaled** (queries by ``c``, keys by ``1/c``, ``c = √(mean‖k − μ_k‖ / mean‖q − μ_q‖)``): every
  ``q · k`` is unchanged, and both clouds get the same mean norm, so neither is a dot in the other's
  middle.

AttentionViz moves the keys onto the queries' centroid instead of centring both; the principal
components of the joint cloud (centred by its mean) are the same either way. The projection is a
PCA by numpy's SVD of the joint cloud: the first two right singular vectors, each signed so that
its largest loading is positive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attnviz.core.analysis.head_roles import held_out_pairs
from attnviz.core.data.corpora import Pair, fits
from attnviz.core.decoding.result import model_device
from attnviz.core.model.sites import KINDS, AttentionSite, n_layers

if TYPE_CHECKING:
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.decoding.result import DecodingResult
    from attnviz.core.model.transformer import Transformer

DEFAULT_HELD_OUT = 20  # held-out pairs beside the sentence on screen


@dataclass(frozen=True)
class HeadVectors:
    """One head's queries and keys over some sentences (sentence 0: the one on screen)."""

    queries: np.ndarray  # [nq, d_k]
    keys: np.ndarray  # [nk, d_k]
    query_pieces: tuple[str, ...]  # [nq]
    key_pieces: tuple[str, ...]  # [nk]
    query_sentence: np.ndarray  # [nq] int: which sentence each query is of
    key_sentence: np.ndarray  # [nk] int
    query_position: np.ndarray  # [nq] int: its row in its sentence (0-based)
    key_position: np.ndarray  # [nk] int: its key position in its sentence
    sentences: tuple[str, ...]  # each sentence's source text

    def plus(self, other: HeadVectors) -> HeadVectors:
        """Both sets of sentences, ``other``'s numbered after these."""
        n = len(self.sentences)
        return HeadVectors(np.concatenate([self.queries, other.queries]), np.concatenate([self.keys, other.keys]),
                           self.query_pieces + other.query_pieces, self.key_pieces + other.key_pieces,
                           np.concatenate([self.query_sentence, other.query_sentence + n]),
                           np.concatenate([self.key_sentence, other.key_sentence + n]),
                           np.concatenate([self.query_position, other.query_position]),
                           np.concatenate([self.key_position, other.key_position]), self.sentences + other.sentences)


def _one_sentence(q: np.ndarray, k: np.ndarray, q_pieces: Sequence[str], k_pieces: Sequence[str], text: str) -> HeadVectors:
    nq, nk = q.shape[0], k.shape[0]
    return HeadVectors(np.asarray(q, np.float64), np.asarray(k, np.float64), tuple(q_pieces), tuple(k_pieces), np.zeros(nq, np.int64),
                       np.zeros(nk, np.int64), np.arange(nq), np.arange(nk), (text,))


def sentence_vectors(result: DecodingResult, kind: str, layer: int, head: int) -> HeadVectors:
    """The head's queries and keys of a decoding ``result`` (a session or a teacher-forced pass):
    source pieces for the encoder and as cross-attention keys, the fed target pieces (SOS first)
    for the decoder's queries and keys."""
    site = AttentionSite(kind, layer)
    q = result.accumulated(site.name("q"))[head]  # [query, d_k]
    k = result.accumulated(site.name("k"))[head]  # [key, d_k]
    src, fed = tuple(result.src_pieces), tuple(result.input_pieces)
    return _one_sentence(q, k, src if kind == "encoder" else fed, fed if kind == "decoder" else src, result.source.text)


def _pair_ids(pair: Pair, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer) -> tuple[list[int], list[int] | None] | None:
    """(encoder ids, decoder ids or ``None``) of ``pair`` as a teacher-forced pass reads it; ``None``: it does not fit."""
    cfg = model.config
    try:
        s, t = src_tok.encode(pair.src), tgt_tok.encode(pair.tgt)
    except ValueError:
        return None
    if cfg.kind == "encoder-only":
        return (s, None) if fits(len(s), 0, cfg.max_len) else None
    if cfg.kind == "decoder-only":
        return ([], [cfg.bos_id, *s, *t]) if s and len(s) + len(t) + 1 <= cfg.max_len else None
    return (s, [cfg.bos_id, *t]) if fits(len(s), len(t), cfg.max_len) else None


def held_out_vectors(model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, pairs: Sequence[Pair],
                     kind: str, layer: int, head: int) -> HeadVectors | None:
    """The head's queries and keys over ``pairs``, one teacher-forced pass each (a pair that does
    not fit is left out); ``None`` when none fits."""
    site = AttentionSite(kind, layer)
    names, device, parts = [site.name("q"), site.name("k")], model_device(model), []
    for pair in pairs:
        ids = _pair_ids(pair, model, src_tok, tgt_tok)
        if ids is None:
            continue
        src, fed = ids
        with torch.inference_mode():
            _, trace = model.run_with_trace(torch.tensor([src], dtype=torch.long, device=device),
                                            None if fed is None else torch.tensor([fed], device=device), names=names)
        src_pieces, fed_pieces = src_tok.pieces(src), tgt_tok.pieces(fed or [])
        parts.append(_one_sentence(trace[names[0]][head], trace[names[1]][head], src_pieces if kind == "encoder" else fed_pieces,
                                   fed_pieces if kind == "decoder" else src_pieces, pair.src))
    if not parts:
        return None
    out = parts[0]
    for part in parts[1:]:
        out = out.plus(part)
    return out


# -- the normalisation and the projection --------------------------------------------------------
@dataclass(frozen=True)
class Normalised:
    """``queries = c (q − μ_q)``, ``keys = (k − μ_k) / c`` (see the module docstring)."""

    queries: np.ndarray  # [nq, d_k]
    keys: np.ndarray  # [nk, d_k]
    query_mean: np.ndarray  # [d_k] μ_q
    key_mean: np.ndarray  # [d_k] μ_k
    scale: float  # c

    def scores(self) -> np.ndarray:
        """``[nq, nk]``: ``(q̂_i + c μ_q) · k̂_j = q_i · k_j − q_i · μ_k``: along each row, the order of
        the head's scores ``q_i · k_j`` (the key shift only subtracts a constant per row)."""
        return (self.queries + self.scale * self.query_mean) @ self.keys.T


def _mean_norm(x: np.ndarray) -> float:
    return float(np.linalg.norm(x, axis=1).mean()) if len(x) else 0.0


def normalise(queries: np.ndarray, keys: np.ndarray) -> Normalised:
    """Centre queries and keys each on its own mean, then scale queries by ``c`` and keys by ``1/c``
    so that both have the same mean norm (``c`` = 1 where either set has no spread)."""
    q, k = np.asarray(queries, np.float64), np.asarray(keys, np.float64)
    mq, mk = q.mean(0), k.mean(0)
    qc, kc = q - mq, k - mk
    nq, nk = _mean_norm(qc), _mean_norm(kc)
    c = float(np.sqrt(nk / nq)) if nq > 0 and nk > 0 else 1.0
    return Normalised(qc * c, kc / c, mq, mk, c)


def pca_2d(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(coordinates ``[n, 2]``, components ``[2, d]``, share of variance of each ``[2]``) of the
    points' first two principal components (numpy SVD of the centred points; each component signed
    so that its largest loading is positive; a missing component is zeros)."""
    x = np.asarray(points, np.float64)
    x = x - x.mean(0)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    comps = np.zeros((2, x.shape[1]))
    comps[: min(2, len(vt))] = vt[:2]
    for c in comps:
        if c.any() and c[np.argmax(np.abs(c))] < 0:
            c *= -1
    var = s**2
    explained = np.zeros(2)
    explained[: min(2, len(var))] = (var / var.sum())[:2] if var.sum() > 0 else 0.0
    return x @ comps.T, comps, explained


@dataclass(frozen=True, eq=False)
class QKSpace:
    """One head's queries and keys in one 2-D picture: ``coords`` ``[nq + nk, 2]`` (queries first,
    then keys), the vectors and their normalisation, and what the view offers to choose."""

    kind: str
    layer: int
    head: int
    vectors: HeadVectors
    normalised: Normalised
    coords: np.ndarray  # [nq + nk, 2]
    components: np.ndarray  # [2, d_k]
    explained: np.ndarray  # [2] share of the joint cloud's variance on each axis
    layers: Mapping[str, int] = field(default_factory=dict)  # layers of each kind the model has
    n_heads: int = 1
    pairs: tuple[Pair, ...] = ()  # the held-out pairs used
    query: int | None = None  # the chosen query row of the sentence on screen

    @property
    def n_queries(self) -> int:
        return len(self.vectors.query_pieces)

    @property
    def query_coords(self) -> np.ndarray:
        return self.coords[: self.n_queries]

    @property
    def key_coords(self) -> np.ndarray:
        return self.coords[self.n_queries:]

    def with_query(self, query: int | None) -> QKSpace:
        """The same picture with query row ``query`` of the sentence on screen chosen (``None``, or a row it has not: none)."""
        rows = int((self.vectors.query_sentence == 0).sum())
        return replace(self, query=query if query is not None and 0 <= query < rows else None)

    def to_json(self) -> dict[str, Any]:
        v = self.vectors
        points = [{"type": t, "piece": p, "sentence": int(s), "position": int(i), "x": round(float(x), 5), "y": round(float(y), 5)}
                  for t, pieces, sent, pos, xy in (("query", v.query_pieces, v.query_sentence, v.query_position, self.query_coords),
                                                   ("key", v.key_pieces, v.key_sentence, v.key_position, self.key_coords))
                  for p, s, i, (x, y) in zip(pieces, sent, pos, xy)]
        return {"kind": self.kind, "layer": self.layer + 1, "head": self.head + 1, "projection": "pca",
                "explained": [round(float(e), 5) for e in self.explained], "scale": round(self.normalised.scale, 6),
                "sentences": list(v.sentences), "queries": self.n_queries, "keys": len(v.key_pieces), "points": points}


def project(vectors: HeadVectors, kind: str, layer: int, head: int, **kw: Any) -> QKSpace:
    """``vectors`` normalised and projected on the joint cloud's first two principal components."""
    norm = normalise(vectors.queries, vectors.keys)
    coords, comps, explained = pca_2d(np.concatenate([norm.queries, norm.keys]))
    return QKSpace(kind, layer, head, vectors, norm, coords, comps, explained, **kw)


def fitted_head(config: Any, kind: str, layer: int, head: int, rows: int) -> tuple[str, int, int] | None:
    """``(kind, layer, head)`` within the model: a kind it has no layers of becomes its first of
    cross, decoder, encoder; no decoder rows yet: the encoder; a layer or head past the last the
    last; ``None`` for a model without attention layers."""
    if kind != "encoder" and rows == 0:
        kind = "encoder"
    if not n_layers(config, kind):
        kind = next((k for k in ("cross", "decoder", "encoder") if n_layers(config, k)), "")
    if not kind:
        return None
    return kind, max(0, min(layer, n_layers(config, kind) - 1)), max(0, min(head, config.n_heads - 1))


def qk_space(model: Transformer, result: DecodingResult, kind: str, layer: int, head: int, pairs: Sequence[Pair] = (),
             tokenizers: tuple[Tokenizer, Tokenizer] | None = None) -> QKSpace | None:
    """The head's queries and keys of ``result`` and, with ``tokenizers`` (source, target), of
    ``pairs``, in one picture; the head fitted to the model (:func:`fitted_head`); ``None`` for a
    model without attention layers."""
    cfg = model.config
    fitted = fitted_head(cfg, kind, layer, head, len(result.steps))
    if fitted is None:
        return None
    kind, layer, head = fitted
    vectors = sentence_vectors(result, kind, layer, head)
    if pairs and tokenizers is not None:
        more = held_out_vectors(model, *tokenizers, pairs, kind, layer, head)
        vectors = vectors if more is None else vectors.plus(more)
    return project(vectors, kind, layer, head, layers={k: n_layers(cfg, k) for k in KINDS}, n_heads=cfg.n_heads, pairs=tuple(pairs))


def qk_space_held_out(model: Transformer, tokenizers: tuple[Tokenizer, Tokenizer], result: DecodingResult, kind: str, layer: int,
                      head: int, spec: Mapping[str, Any] | None, n: int, pairs: tuple[Pair, ...] | None = None) -> QKSpace | None:
    """:func:`qk_space` with ``n`` held-out pairs of the data ``spec`` (a meta.json's) names
    (``pairs``, when already read; none when ``n`` is 0 or the model names no data)."""
    if pairs is None:
        pairs = tuple(held_out_pairs(spec, n)) if spec is not None and n > 0 else ()
    return qk_space(model, result, kind, layer, head, pairs[:n], tokenizers)
