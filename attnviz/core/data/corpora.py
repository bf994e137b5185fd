"""Parallel data: the HSK zh→en sentences, synthetic alignment tasks, user corpora, and batching.

A data set is a ``Dataset`` of ``Pair`` objects split into ``train`` / ``valid`` / ``test``.

* ``load_hsk()`` — the 4,354 Chinese→English sentences of the ``hsk-sentences-audio`` package
  (CC-BY-SA-4.0; the data stays in that package). Each pair keeps the record's word
  segmentation and CC-CEDICT glosses in ``pair.extra["tokens"]``.
* ``synthetic(task)`` — ``copy``, ``reverse`` or ``sort`` of random digit (or letter) strings,
  written with spaces (``"3 1 4"``), whose correct cross-attention is known: a diagonal, an
  anti-diagonal, a permutation.
* ``load_tsv(path)`` / ``load_parallel(src_path, tgt_path)`` — a UTF-8 TSV of
  ``source<TAB>target``, or two line-aligned files. Bad lines (no tab or more than one, an
  empty side, invalid UTF-8, a blank line, files of unequal length) are listed in
  ``dataset.report.problems`` with their line numbers and counted; nothing is dropped silently.

The split is deterministic: a pair goes to train / valid / test (90 / 5 / 5) by the SHA-256
of its key — the record ``id`` for HSK and the synthetic tasks, the *source text* for user
corpora (so a repeated source never lands on both sides of the split).
``dataset.split_hash`` fingerprints the split (ids and texts) and goes into a bundle's meta.json.

Batching is by tokens: ``make_batches`` sorts examples by length (ties broken by a seeded
shuffle), cuts batches whose padded size stays within ``batch_tokens``, and shuffles the
batch order, all from ``(seed, epoch)`` so an epoch's batches can be rebuilt exactly
(resuming mid-epoch depends on it).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import stat
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, TokenizerLike
from attnviz.errors import AttnvizError

SPLITS = ("train", "valid", "test")
SPLIT_PERCENT = (90, 5, 5)
TATOEBA_NAME = "tatoeba-zh-en"
MIX_NAME = "hsk-zh-en,tatoeba-zh-en"  # HSK and Tatoeba together (spec kind ``MIX_KIND``)
MIX_KIND = "mix"
BUILTIN = ("hsk-zh-en", TATOEBA_NAME, MIX_NAME, "copy", "reverse", "sort")  # names --data takes
BUILTIN_KINDS = ("hsk-zh-en", TATOEBA_NAME, MIX_KIND, "copy", "reverse", "sort")  # spec kinds loaded without a file of the user's
SYNTHETIC_TASKS = ("copy", "reverse", "sort")
MAX_SYNTHETIC = 10_000_000  # pairs of a synthetic task
HSK_NAME = "hsk-zh-en"
HSK_LICENSE = "CC-BY-SA-4.0"
HSK_SOURCE = "PyPI package hsk-sentences-audio (HSK 1-6 example sentences with English translations)"


class DataError(AttnvizError, ValueError):
    """A data source that cannot be used at all (one-line message)."""


@dataclass(frozen=True)
class Pair:
    """One source/target sentence pair. ``extra`` holds whatever else the record had
    (for HSK: ``tokens`` with ``word``/``pinyin``/``gloss_en``, ``hsk_level``, ``topic``)."""

    src: str
    tgt: str
    id: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class LineProblem:
    """A line that could not be used: ``file`` (name), 1-based ``line`` and the ``reason``."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass
class DataReport:
    """What happened while reading a data source: counts and every skipped line."""

    source: str
    lines_read: int = 0
    pairs: int = 0
    problems: list[LineProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. pairs left out for being too long
    unlisted: int = 0  # bad lines counted but not listed (a streamed corpus lists the first ``PROBLEM_LIMIT``)

    @property
    def skipped(self) -> int:
        return len(self.problems) + self.unlisted

    def add_problem(self, problem: LineProblem, limit: int | None = None) -> None:
        """List ``problem``, or only count it once ``limit`` problems are listed."""
        if limit is not None and len(self.problems) >= limit:
            self.unlisted += 1
        else:
            self.problems.append(problem)

    def summary(self, limit: int = 10) -> str:
        """Several lines for a terminal: the counts, then up to ``limit`` problems."""
        lines = [f"{self.source}: {self.pairs} pairs from {self.lines_read} lines, {self.skipped} bad line(s) skipped"]
        lines += [f"  {p}" for p in self.problems[:limit]]
        if self.skipped > limit:
            lines.append(f"  ... and {self.skipped - limit} more")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclass
class Dataset:
    """A named parallel data set with a deterministic split."""

    name: str
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    report: DataReport
    spec: dict[str, Any] = field(default_factory=dict)  # how to load it again (goes into meta.json)
    src_lang: str = ""
    tgt_lang: str = ""
    licence: str = ""
    attribution: str = ""
    src_spaces: bool = True  # False for text written without spaces (Chinese): no dummy-prefix piece
    split_rule: str = "90/5/5 by SHA-256 of the key (id for built-in data, source text for user corpora)"
    tokenizer_sample: int = 0  # sentences of each side sentencepiece samples from ``train_texts`` (0: all)

    def split(self, name: str) -> list[Pair]:
        if name not in SPLITS:
            raise DataError(f"unknown split {name!r} (expected one of {', '.join(SPLITS)})")
        return getattr(self, name)

    @property
    def sizes(self) -> dict[str, int]:
        return {s: len(self.split(s)) for s in SPLITS}

    @property
    def split_hash(self) -> str:
        """SHA-256 (hex, first 16 digits) of every pair's split, id and texts."""
        h = hashlib.sha256()
        for s in SPLITS:
            for p in self.split(s):
                h.update(json.dumps([s, p.id, p.src, p.tgt], ensure_ascii=False).encode())
                h.update(b"\n")
        return h.hexdigest()[:16]

    @property
    def train_hash(self) -> str:
        """SHA-256 (hex, first 16 digits) of the exact training pairs, augmented ones included, in order."""
        h = hashlib.sha256()
        for p in self.train:
            h.update(json.dumps([p.id, p.src, p.tgt], ensure_ascii=False).encode())
            h.update(b"\n")
        return h.hexdigest()[:16]

    def train_texts(self, side: str) -> Iterable[str]:
        """The training split's source (``side="src"``) or target (``"tgt"``) texts, for the tokenizers."""
        return [getattr(p, side) for p in self.train]

    def training_batches(self, src_tok: TokenizerLike, tgt_tok: TokenizerLike, max_len: int, batch_tokens: int, seed: int) -> "ExampleBatches":
        """The training split as token ids, in each epoch's batches (pairs too long for ``max_len``
        left out and counted in ``report.notes``)."""
        return ExampleBatches(encode_pairs(self.train, src_tok, tgt_tok, max_len, self.report), batch_tokens, seed)

    def describe(self) -> dict[str, Any]:
        """What meta.json records about the data."""
        return {
            "name": self.name,
            "spec": self.spec,
            "split_hash": self.split_hash,
            "train_hash": self.train_hash,
            "sizes": self.sizes,
            "split": self.split_rule,
            "licence": self.licence,
            "attribution": self.attribution,
            "bad_lines": self.report.skipped,
        }


# -- the split ------------------------------------------------------------------------------
def split_of(key: str) -> str:
    """``"train"``, ``"valid"`` or ``"test"`` for a key, from its SHA-256 (90/5/5)."""
    bucket = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % 100
    if bucket < SPLIT_PERCENT[0]:
        return "train"
    if bucket < SPLIT_PERCENT[0] + SPLIT_PERCENT[1]:
        return "valid"
    return "test"


def _split(pairs: Iterable[Pair], key=lambda p: p.id) -> dict[str, list[Pair]]:
    out: dict[str, list[Pair]] = {s: [] for s in SPLITS}
    for p in pairs:
        out[split_of(key(p))].append(p)
    return out


def _dataset(name: str, pairs: list[Pair], report: DataReport, key=lambda p: p.id, **kw: Any) -> Dataset:
    parts = _split(pairs, key)
    report.pairs = len(pairs)
    return Dataset(name, parts["train"], parts["valid"], parts["test"], report, **kw)


def mostly_unspaced(texts: Iterable[str]) -> bool:
    """True when the texts are mostly CJK (written without spaces between words)."""
    cjk = other = 0
    for t in texts:
        for ch in t:
            if ch.isspace():
                continue
            if "CJK" in unicodedata.name(ch, "") or "\u3000" <= ch <= "\u30ff":
                cjk += 1
            else:
                other += 1
    return cjk > 0.3 * max(1, cjk + other)


# -- HSK ------------------------------------------------------------------------------------
def load_hsk() -> Dataset:
    """The HSK zh→en sentences (``hsk-sentences-audio``), split 90/5/5 by a hash of ``id``."""
    try:
        from hsk_sentences_audio import load_sentences
    except ImportError:
        raise DataError("the HSK data needs the package hsk-sentences-audio (pip install hsk-sentences-audio)") from None
    records = load_sentences()
    report = DataReport(HSK_NAME, lines_read=len(records))
    pairs = []
    for i, r in enumerate(records, 1):
        zh = (r.get("chinese") or "").strip()
        en = ((r.get("translation") or {}).get("en") or "").strip()
        rid = str(r.get("id") or f"record-{i}")
        if not zh or not en:
            report.problems.append(LineProblem(HSK_NAME, i, f"record {rid} has an empty {'Chinese' if not zh else 'English'} side"))
            continue
        extra = {k: r[k] for k in ("tokens", "hsk_level", "topic", "pinyin") if k in r}
        pairs.append(Pair(zh, en, rid, extra))
    return _dataset(
        HSK_NAME,
        pairs,
        report,
        spec={"kind": HSK_NAME},
        src_lang="zh",
        tgt_lang="en",
        licence=HSK_LICENSE,
        attribution=HSK_SOURCE,
        src_spaces=False,
    )


# -- synthetic tasks ----------------------------------------------------------------------
DIGITS = "0123456789"
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def synthetic(
    task: str,
    n: int = 6000,
    min_len: int = 3,
    max_len: int = 10,
    alphabet: str = DIGITS,
    seed: int = 0,
) -> Dataset:
    """``n`` random strings over ``alphabet`` (lengths ``min_len``..``max_len``, symbols separated
    by spaces) with their copy, reverse or sort. Deterministic for a given ``seed``."""
    if task not in SYNTHETIC_TASKS:
        raise DataError(f"unknown synthetic task {task!r} (expected one of {', '.join(SYNTHETIC_TASKS)})")
    for name, value, hi in (("n", n, MAX_SYNTHETIC), ("min_len", min_len, 1000), ("max_len", max_len, 1000), ("seed", seed, 2**63 - 1)):
        if not isinstance(value, int) or isinstance(value, bool) or not (0 if name == "seed" else 1) <= value <= hi:
            raise DataError(f"synthetic {name} must be an integer up to {hi:,}, not {str(value)[:40]}")
    if not min_len <= max_len:
        raise DataError("synthetic lengths need 1 <= min_len <= max_len")
    if not isinstance(alphabet, str) or not 1 <= len(alphabet) <= 1000:
        raise DataError("the synthetic alphabet must be a string of 1 to 1000 symbols")
    rng = random.Random(f"{task}-{seed}")
    pairs = []
    for i in range(n):
        seq = [rng.choice(alphabet) for _ in range(rng.randint(min_len, max_len))]
        out = seq if task == "copy" else seq[::-1] if task == "reverse" else sorted(seq)
        pairs.append(Pair(" ".join(seq), " ".join(out), f"{task}-{i:06d}"))
    report = DataReport(task, lines_read=n)
    spec = {"kind": task, "n": n, "min_len": min_len, "max_len": max_len, "alphabet": alphabet, "seed": seed}
    return _dataset(task, pairs, report, spec=spec, src_lang=task, tgt_lang=task)


# -- user corpora -------------------------------------------------------------------------
def _lines(path: Path) -> list[bytes]:
    try:
        with open(path, "rb", opener=open_regular) as fh:
            data = fh.read()
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]


def open_regular(path: str, flags: int) -> int:
    """``os.open`` for reading a regular file only: a pipe, device or socket is refused at once
    (``O_NONBLOCK``, so opening a FIFO with no writer cannot hang) and a folder too."""
    fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file but a pipe, device or socket"
        raise OSError(errno.EINVAL, f"{what}; give a text file")
    return fd


def _text(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


LINE_LIMIT = 2**20  # bytes of a line, its newline included; a longer line is a bad line, never a sentence


def too_long(size: int) -> str:
    """The reason a line of ``size`` bytes is not used."""
    return f"longer than the line limit of {LINE_LIMIT:,} bytes ({size:,}): skipped"


def parse_tsv_line(raw: bytes) -> tuple[str, str] | str:
    """``(source, target)`` of one TSV line (without its newline), or the reason it cannot be used."""
    if len(raw) >= LINE_LIMIT:
        return too_long(len(raw))
    text = _text(raw)
    if text is None:
        return "invalid UTF-8"
    if not text.strip():
        return "blank line"
    tabs = text.count("\t")
    if tabs != 1:
        return "no tab between source and target" if tabs == 0 else f"{tabs} tabs (expected one)"
    src, tgt = (s.strip() for s in text.split("\t"))
    if not src or not tgt:
        return f"empty {'source' if not src else 'target'}"
    return src, tgt


def load_tsv(path: str | os.PathLike) -> Dataset:
    """A UTF-8 file of ``source<TAB>target`` lines. Bad lines are reported, with line numbers."""
    path = Path(path)
    lines = _lines(path)
    report = DataReport(path.name, lines_read=len(lines))
    pairs = []
    for n, raw in enumerate(lines, 1):
        parsed = parse_tsv_line(raw)
        if isinstance(parsed, str):
            report.problems.append(LineProblem(path.name, n, parsed))
            continue
        pairs.append(Pair(*parsed, f"{path.name}:{n}"))
    return _user_dataset(path.stem, pairs, report, {"kind": "tsv", "path": str(path)})


def load_parallel(src_path: str | os.PathLike, tgt_path: str | os.PathLike) -> Dataset:
    """Two line-aligned UTF-8 files (line n of one translates line n of the other)."""
    sp, tp = Path(src_path), Path(tgt_path)
    s_lines, t_lines = _lines(sp), _lines(tp)
    report = DataReport(f"{sp.name} + {tp.name}", lines_read=max(len(s_lines), len(t_lines)))
    pairs = []
    for n in range(1, report.lines_read + 1):
        if n > len(s_lines) or n > len(t_lines):
            short = sp if n > len(s_lines) else tp
            report.problems.append(LineProblem(short.name, n, "missing (the two files have different numbers of lines)"))
            continue
        if (longest := max(len(s_lines[n - 1]), len(t_lines[n - 1]))) >= LINE_LIMIT:
            report.problems.append(LineProblem(sp.name if len(s_lines[n - 1]) == longest else tp.name, n, too_long(longest)))
            continue
        src, tgt = _text(s_lines[n - 1]), _text(t_lines[n - 1])
        if src is None or tgt is None:
            report.problems.append(LineProblem(sp.name if src is None else tp.name, n, "invalid UTF-8"))
            continue
        src, tgt = src.strip(), tgt.strip()
        if not src or not tgt:
            report.problems.append(LineProblem(sp.name if not src else tp.name, n, "empty line"))
            continue
        pairs.append(Pair(src, tgt, f"{sp.name}:{n}"))
    return _user_dataset(sp.stem, pairs, report, {"kind": "parallel", "src_path": str(sp), "tgt_path": str(tp)})


def _user_dataset(name: str, pairs: list[Pair], report: DataReport, spec: dict[str, Any]) -> Dataset:
    if not pairs:
        raise DataError(f"{report.source}: no usable pairs ({report.skipped} bad line(s); first: {report.problems[0] if report.problems else 'the file is empty'})")
    return _dataset(name, pairs, report, key=lambda p: p.src, spec=spec, src_spaces=not mostly_unspaced(p.src for p in pairs[:2000]))


def spec_paths(spec: dict[str, Any]) -> list[str]:
    """The file paths a ``Dataset.spec`` names (none for a built-in data set)."""
    return [str(spec[k]) for k in ("path", "src_path", "tgt_path") if k in spec]


# -- tensors and batches ------------------------------------------------------------------
@dataclass(frozen=True)
class Example:
    """A pair as token ids (no SOS/EOS): ``src`` for the encoder, ``tgt`` for the decoder/labels."""

    src: tuple[int, ...]
    tgt: tuple[int, ...]
    index: int  # position in the list of pairs it came from


def encode_pairs(pairs: Sequence[Pair], src_tok: TokenizerLike, tgt_tok: TokenizerLike, max_len: int | None = None, report: DataReport | None = None) -> list[Example]:
    """Token ids of ``pairs``. With ``max_len``, pairs whose source is longer than ``max_len`` or whose
    target + EOS is are left out and counted in ``report.notes`` (when given)."""
    out = fitting_examples(((src_tok.encode(p.src), tgt_tok.encode(p.tgt)) for p in pairs), max_len)
    too_long = len(pairs) - len(out)
    if too_long and report is not None:
        report.notes.append(too_long_note(too_long, max_len))
    return out


def fitting_examples(ids: Iterable[tuple[Sequence[int], Sequence[int]]], max_len: int | None = None) -> list[Example]:
    """``Example``s of (source ids, target ids) in order (``index``: the position), leaving out with
    ``max_len`` those whose source is empty or longer than ``max_len``, or whose target + EOS is."""
    return [Example(tuple(s), tuple(t), i) for i, (s, t) in enumerate(ids) if fits(len(s), len(t), max_len)]


def fits(src_len: int, tgt_len: int, max_len: int | None) -> bool:
    """Whether a pair of these token lengths is trained on: a source of 1 to ``max_len`` tokens
    and a target of at most ``max_len`` - 1 (its EOS makes ``max_len``); any without ``max_len``."""
    return max_len is None or (0 < src_len <= max_len and tgt_len + 1 <= max_len)


def too_long_note(n: int, max_len: int | None) -> str:
    return f"{n} pair(s) left out: empty or longer than max_len ({max_len}) tokens"


def batch_cost(examples: Sequence[Example]) -> int:
    """Padded size of a batch: rows x the longer of source and target + 1."""
    return len(examples) * max(max(len(e.src), len(e.tgt) + 1) for e in examples)


def make_batches(examples: Sequence[Example], batch_tokens: int, seed: int = 0, epoch: int = 0, shuffle: bool = True) -> list[list[int]]:
    """Indices into ``examples`` grouped in batches of similar length whose padded size
    (``batch_cost``) is at most ``batch_tokens`` (a single longer example gets a batch alone).
    Deterministic for ``(seed, epoch)``; ``shuffle=False`` keeps length order (evaluation)."""
    rng = random.Random(f"batches-{seed}-{epoch}")
    order = list(range(len(examples)))
    if shuffle:
        rng.shuffle(order)
    order.sort(key=lambda i: (len(examples[i].src), len(examples[i].tgt)))  # stable: shuffled ties
    batches = _cut(order, [max(len(examples[i].src), len(examples[i].tgt) + 1) for i in order], batch_tokens)
    if shuffle:
        rng.shuffle(batches)
    return batches


def count_batches(lengths: Iterable[tuple[int, int]], batch_tokens: int) -> int:
    """How many batches ``make_batches`` cuts from examples of these (source, target) token
    lengths, for every seed and epoch: the cut depends only on the lengths in sorted order."""
    ordered = sorted(lengths)
    return len(_cut(range(len(ordered)), [max(s, t + 1) for s, t in ordered], batch_tokens))


def _cut(order: Sequence[int], widths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """``order`` cut into consecutive batches whose rows x widest row (``widths``: each row's,
    in ``order``) stays within ``batch_tokens``; a single wider row gets a batch alone."""
    batches: list[list[int]] = []
    cur: list[int] = []
    width = 0
    for i, row_width in zip(order, widths):
        w = max(width, row_width)
        if cur and (len(cur) + 1) * w > batch_tokens:
            batches.append(cur)
            cur, w = [], row_width
        cur.append(i)
        width = w
    if cur:
        batches.append(cur)
    return batches


class ExampleBatches:
    """A training split held in memory, batched anew each epoch by ``make_batches(seed, epoch)``
    (a streamed corpus has its own, ``stream.StreamBatches``, with the same two members)."""

    def __init__(self, examples: list[Example], batch_tokens: int, seed: int):
        self.examples = examples
        self.batch_tokens, self.seed = batch_tokens, seed
        self.n_examples = len(examples)
        self.steps_per_epoch = len(make_batches(examples, batch_tokens, seed, 0))  # the same for every epoch

    def epoch(self, epoch: int, start: int = 0) -> Iterator[list[Example]]:
        """The batches of ``epoch`` (0-based) from its ``start``-th on."""
        for rows in make_batches(self.examples, self.batch_tokens, self.seed, epoch)[start:]:
            yield [self.examples[i] for i in rows]


@dataclass(frozen=True)
class Batch:
    """Teacher-forcing tensors: ``src`` (encoder input), ``tgt_in`` (SOS + target), ``labels`` (target + EOS)."""

    src: torch.Tensor  # [B, Ls] PAD-padded
    tgt_in: torch.Tensor  # [B, Lt] SOS y1 .. yn PAD..
    labels: torch.Tensor  # [B, Lt] y1 .. yn EOS PAD..
    indices: tuple[int, ...]  # Example.index of each row
    pad_id: int = PAD_ID  # the id the tensors are padded with

    @property
    def n_tokens(self) -> int:
        """Number of real label tokens (what the loss averages over)."""
        return int((self.labels != self.pad_id).sum())

    def to(self, device: str | torch.device) -> "Batch":
        return Batch(self.src.to(device), self.tgt_in.to(device), self.labels.to(device), self.indices, self.pad_id)


def collate(examples: Sequence[Example], pad_id: int = PAD_ID, bos_id: int = BOS_ID, eos_id: int = EOS_ID) -> Batch:
    """Teacher-forcing tensors of ``examples``, padded to the longest source and target + 1."""
    ls = max(len(e.src) for e in examples)
    lt = max(len(e.tgt) for e in examples) + 1
    src = torch.full((len(examples), ls), pad_id, dtype=torch.long)
    tgt_in = torch.full((len(examples), lt), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), lt), pad_id, dtype=torch.long)
    for r, e in enumerate(examples):
        src[r, : len(e.src)] = torch.tensor(e.src, dtype=torch.long)
        tgt_in[r, : len(e.tgt) + 1] = torch.tensor((bos_id, *e.tgt), dtype=torch.long)
        labels[r, : len(e.tgt) + 1] = torch.tensor((*e.tgt, eos_id), dtype=torch.long)
    return Batch(src, tgt_in, labels, tuple(e.index for e in examples), pad_id)
