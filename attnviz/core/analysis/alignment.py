"""Alignment quality on HSK: ``reference_pairs`` from the data set's word glosses (with the
word helpers ``normalize_word``, ``gloss_words``, ``english_words``, ``piece_spans``),
``alignment_accuracy`` of attention against them, and ``evaluate_hsk_alignment(bundle, records)``,
which runs a bundle's model in teacher-forced passes. No Qt."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from attnviz.core.analysis.rollout import decoder_rollout, rollout

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.data.tokenizer import Tokenizer


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
    """The HSK records of one split of ``attnviz.core.data.corpora`` (90/5/5 by a hash of the record id)."""
    from hsk_sentences_audio import load_sentences

    from attnviz.core.data.corpora import split_of

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
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.core.decoding.teacher_forcing import teacher_forced

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
