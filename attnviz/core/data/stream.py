"""A TSV corpus too large to hold in memory, read line by line and never whole: ``load_streamed_tsv``.

``--data FILE.tsv`` streams a file larger than ``STREAM_ABOVE`` bytes, and any TSV file with
``--stream`` (``sources.load_data``). What is read, and what is kept:

* **One pass when it is opened** checks every line as ``corpora.load_tsv`` does (bad lines
  reported with their line numbers: the first ``PROBLEM_LIMIT`` listed, the rest counted), splits
  the pairs 90/5/5 by the SHA-256 of the source text like every user corpus, and fingerprints the
  split (``split_hash``: every line's split, id and texts, in file order). It keeps only the first
  ``HELD_OUT_LIMIT`` valid and test pairs (the ones evaluated; ``sizes`` counts them all), a seeded
  sample of ``TRAIN_SAMPLE`` training pairs (``train``: the final evaluation's), and where each
  pool of ``POOL_LINES`` lines starts in the file.
* **The tokenizers**: sentencepiece reads the training texts through an iterator over the file and
  keeps a seeded random sample of ``TOKENIZER_SAMPLE`` sentences per side (``input_sentence_size``,
  ``shuffle_input_sentence``).
* **The batches** (``StreamBatches``): one pool at a time, its training pairs are tokenised and cut
  into token-bucketed batches by ``corpora.make_batches``, as a corpus in memory is cut whole; the
  pools are visited in an order drawn from ``(seed, epoch)``, each pool's batches in an order
  drawn from ``(seed, epoch, pool)``. A pass when training is set up counts each pool's batches
  (the count depends only on the sorted lengths, not on the epoch), so the epoch's length, the
  learning-rate schedule, the progress and a resume in the middle of an epoch (whole pools skipped
  unread) work as for a corpus in memory. Lengths are bucketed within a pool, not across the file.

The file must not change during a run: each read checks its size and modification time.
No line is held longer than ``LINE_LIMIT`` bytes: a longer one (a file with no newline, say) is
read past in ``SKIP_CHUNK``-byte pieces and reported as a bad line, with its number and the limit.
Memory: a pool's pairs and token ids, the held-out pairs and sentencepiece's sample; the test
``test_stream.py`` measures a one-million-line file.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from attnviz.core.data.corpora import (
    LINE_LIMIT,
    SPLITS,
    DataError,
    DataReport,
    Dataset,
    Example,
    LineProblem,
    Pair,
    count_batches,
    fits,
    fitting_examples,
    make_batches,
    mostly_unspaced,
    open_regular,
    parse_tsv_line,
    split_of,
    too_long_note,
)
from attnviz.core.data.tokenizer import Tokenizer

STREAM_ABOVE = 64 * 2**20  # bytes: a larger TSV file is streamed even without --stream
POOL_LINES = 50_000  # lines tokenised and bucketed together
HELD_OUT_LIMIT = 2_000  # valid and test pairs kept (the first of each split), evaluated every epoch and at the end
TRAIN_SAMPLE = 3_000  # training pairs kept (a seeded sample) for the final evaluation
TOKENIZER_SAMPLE = 300_000  # sentences per side sentencepiece trains on
PROBLEM_LIMIT = 1_000  # bad lines listed (the others are counted)
SKIP_CHUNK = 2**20  # bytes read at a time past a line longer than LINE_LIMIT
UNSPACED_PROBE = 2_000  # first sources looked at to tell whether the source is written without spaces
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Pool:
    """``POOL_LINES`` consecutive lines of the file (fewer for the last)."""

    offset: int  # byte where its first line starts
    line: int  # its first line's number (1-based)


@dataclass(frozen=True)
class TsvStream:
    """The training split of a TSV file, read again pool by pool."""

    path: Path
    pools: tuple[Pool, ...]
    stamp: tuple[int, int]  # the file's size and modification time when it was scanned

    def lines(self, pool: Pool | None = None) -> Iterator[tuple[int, int, bytes | None]]:
        """(line number, byte offset, line without its newline) of ``pool``, or of the whole file;
        ``None`` for a line longer than ``LINE_LIMIT``."""
        start = pool or Pool(0, 1)
        with _open(self.path) as fh:
            if _stamp(fh) != self.stamp:
                raise DataError(f"{self.path}: the file changed during the run; train again on the new file (or restore the old one)")
            fh.seek(start.offset)
            lines = _bounded_lines(fh)
            yield from _numbered(lines if pool is None else itertools.islice(lines, POOL_LINES), start)

    def train_pairs(self, pool: Pool | None = None) -> Iterator[tuple[str, str]]:
        """The (source, target) training pairs of ``pool`` (of the whole file when ``None``), in file order."""
        for _, _, raw in self.lines(pool):
            if raw is None:
                continue
            parsed = parse_tsv_line(raw)
            if not isinstance(parsed, str) and split_of(parsed[0]) == "train":
                yield parsed


class TrainTexts:
    """One side of a streamed training split: each iteration reads the file again."""

    def __init__(self, stream: TsvStream, side: str):
        self.stream, self.side = stream, ("src", "tgt").index(side)

    def __iter__(self) -> Iterator[str]:
        return (pair[self.side] for pair in self.stream.train_pairs())


@dataclass
class StreamedDataset(Dataset):
    """A ``Dataset`` whose training split stays in its file (``train`` holds a sample of it)."""

    stream: TsvStream | None = None
    full_sizes: dict[str, int] = field(default_factory=dict)  # every pair of each split
    hashes: tuple[str, str] = ("", "")  # (split hash, train hash) of the whole file

    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.full_sizes)

    @property
    def split_hash(self) -> str:
        return self.hashes[0]

    @property
    def train_hash(self) -> str:
        return self.hashes[1]

    def train_texts(self, side: str) -> Iterable[str]:
        assert self.stream is not None
        return TrainTexts(self.stream, side)

    def training_batches(self, src_tok: Tokenizer, tgt_tok: Tokenizer, max_len: int, batch_tokens: int, seed: int) -> "StreamBatches":
        assert self.stream is not None
        return StreamBatches(self.stream, (src_tok, tgt_tok), max_len, batch_tokens, seed, self.report)


class StreamBatches:
    """A streamed training split's batches, epoch by epoch (see the module docstring); the counting
    pass runs here. Same members as ``corpora.ExampleBatches``."""

    def __init__(self, stream: TsvStream, tokenizers: tuple[Tokenizer, Tokenizer], max_len: int, batch_tokens: int, seed: int, report: DataReport):
        self.stream, self.tokenizers, self.max_len = stream, tokenizers, max_len
        self.batch_tokens, self.seed = batch_tokens, seed
        self.examples: list[Example] = []  # none held: read pool by pool
        self.counts: list[int] = []  # batches of each pool
        self.n_examples = left_out = 0
        for pool in stream.pools:
            lengths = [(len(s), len(t)) for s, t in self._ids(pool)]
            kept = [(s, t) for s, t in lengths if fits(s, t, max_len)]
            self.counts.append(count_batches(kept, batch_tokens))
            self.n_examples += len(kept)
            left_out += len(lengths) - len(kept)
        if left_out:
            report.notes.append(too_long_note(left_out, max_len))
        self.steps_per_epoch = sum(self.counts)

    def _ids(self, pool: Pool) -> zip:
        """(source ids, target ids) of the pool's training pairs."""
        pairs = list(self.stream.train_pairs(pool))
        src_tok, tgt_tok = self.tokenizers
        return zip(src_tok.encode_many([p[0] for p in pairs]), tgt_tok.encode_many([p[1] for p in pairs]))

    def epoch(self, epoch: int, start: int = 0) -> Iterator[list[Example]]:
        """The batches of ``epoch`` (0-based) from its ``start``-th on; pools before it are not read."""
        order = list(range(len(self.counts)))
        random.Random(f"pools-{self.seed}-{epoch}").shuffle(order)
        for p in order:
            if start >= self.counts[p]:
                start -= self.counts[p]
                continue
            examples = fitting_examples(self._ids(self.stream.pools[p]), self.max_len)
            for rows in make_batches(examples, self.batch_tokens, self.seed, epoch * len(order) + p)[start:]:
                yield [examples[i] for i in rows]
            start = 0


# -- the pass when the file is opened --------------------------------------------------------
def load_streamed_tsv(path: str | os.PathLike) -> StreamedDataset:
    """A UTF-8 file of ``source<TAB>target`` lines, scanned once and kept in its file."""
    path = Path(path)
    scan = _Scan(path)
    with _open(path) as fh:
        stamp = _stamp(fh)
        for n, offset, raw in _numbered(_bounded_lines(fh), Pool(0, 1)):
            scan.add(n, offset, raw)
    return scan.dataset(stamp)


class _Scan:
    """What the pass over the file keeps (see the module docstring)."""

    def __init__(self, path: Path):
        self.path, self.name = path, path.name
        self.report = DataReport(path.name)
        self.pools: list[Pool] = []
        self.kept: dict[str, list[Pair]] = {s: [] for s in SPLITS}
        self.counts = dict.fromkeys(SPLITS, 0)
        self.split_hash, self.train_hash = hashlib.sha256(), hashlib.sha256()
        self.rng = random.Random(f"stream-sample-{path.name}")
        self.first_sources: list[str] = []

    def add(self, n: int, offset: int, raw: bytes | None) -> None:
        if (n - 1) % POOL_LINES == 0:
            self.pools.append(Pool(offset, n))
        self.report.lines_read = n
        parsed = f"longer than the line limit of {LINE_LIMIT:,} bytes: skipped, not read whole" if raw is None else parse_tsv_line(raw)
        if isinstance(parsed, str):
            self.report.add_problem(LineProblem(self.name, n, parsed), PROBLEM_LIMIT)
            return
        split = split_of(parsed[0])
        line = b"%d\t%s\n" % (n, raw)  # the pair's id is its line number
        self.split_hash.update(split.encode() + b"\t" + line)
        if split == "train":
            self.train_hash.update(line)
        if len(self.first_sources) < UNSPACED_PROBE:
            self.first_sources.append(parsed[0])
        self._keep(split, n, parsed)

    def _keep(self, split: str, n: int, parsed: tuple[str, str]) -> None:
        """Held-out pairs up to ``HELD_OUT_LIMIT``; training pairs by reservoir sampling."""
        seen, kept = self.counts[split], self.kept[split]
        self.counts[split] += 1
        limit = TRAIN_SAMPLE if split == "train" else HELD_OUT_LIMIT
        slot = seen if seen < limit or split != "train" else self.rng.randrange(seen + 1)
        if slot >= limit:
            return
        pair = Pair(*parsed, f"{self.name}:{n}")
        if slot == len(kept):
            kept.append(pair)
        else:
            kept[slot] = pair

    def dataset(self, stamp: tuple[int, int]) -> StreamedDataset:
        report, total = self.report, sum(self.counts.values())
        if not total:
            first = report.problems[0] if report.problems else "the file is empty"
            raise DataError(f"{report.source}: no usable pairs ({report.skipped} bad line(s); first: {first})")
        report.pairs = total
        for split in ("valid", "test"):
            if self.counts[split] > HELD_OUT_LIMIT:
                report.notes.append(f"{split}: the first {HELD_OUT_LIMIT:,} of {self.counts[split]:,} pairs are evaluated")
        return StreamedDataset(
            self.path.stem, self.kept["train"], self.kept["valid"], self.kept["test"], report,
            spec={"kind": "tsv", "path": str(self.path), "stream": True},
            src_spaces=not mostly_unspaced(self.first_sources), tokenizer_sample=TOKENIZER_SAMPLE,
            stream=TsvStream(self.path, tuple(self.pools), stamp), full_sizes=dict(self.counts),
            hashes=(self.split_hash.hexdigest()[:16], self.train_hash.hexdigest()[:16]),
        )


# -- reading ----------------------------------------------------------------------------------
def _open(path: Path):
    """The file opened for binary reading (a regular file only); ``DataError`` in one line."""
    try:
        return open(path, "rb", opener=open_regular)
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _stamp(fh) -> tuple[int, int]:
    st = os.fstat(fh.fileno())
    return st.st_size, st.st_mtime_ns


def _bounded_lines(fh) -> Iterator[tuple[bytes | None, int]]:
    """(line with its newline, its size in bytes) of each line from where ``fh`` is; the line is
    ``None`` when longer than ``LINE_LIMIT`` bytes: such a line is read past, never held whole."""
    while raw := fh.readline(LINE_LIMIT + 1):
        size = len(raw)
        if size <= LINE_LIMIT:
            yield raw, size
            continue
        while not raw.endswith(b"\n") and (raw := fh.readline(SKIP_CHUNK)):
            size += len(raw)
        yield None, size


def _numbered(lines: Iterable[tuple[bytes | None, int]], start: Pool) -> Iterator[tuple[int, int, bytes | None]]:
    """(line number, byte offset, line without its newline, CR or the file's BOM; ``None`` when too long)."""
    offset = start.offset
    for n, (raw, size) in enumerate(lines, start.line):
        if raw is None:
            yield n, offset, None
            offset += size
            continue
        line = raw[3:] if offset == 0 and raw.startswith(BOM) else raw
        line = line[:-1] if line.endswith(b"\n") else line
        yield n, offset, line[:-1] if line.endswith(b"\r") else line
        offset += size
