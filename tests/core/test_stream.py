"""A TSV corpus read as a stream (``attnviz.core.data.stream``; ``attnviz train --stream``)."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.data import corpora as D
from attnviz.core.data import sources, stream
from attnviz.core.data.tokenizer import Tokenizer, sample_texts

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--d-model", "32", "--heads", "2", "--layers", "1", "--d-ff", "64", "--dropout", "0", "--warmup", "10", "--batch-tokens", "200"]


def write_corpus(path: Path, n: int, seed: int = 0) -> None:
    """``n`` lines of 3 to 9 source words TAB 3 to 9 target words, from 300-word vocabularies."""
    rng = random.Random(seed)
    src, tgt = [f"s{i}" for i in range(300)], [f"t{i}" for i in range(300)]
    with open(path, "w", encoding="utf-8") as fh:
        for start in range(0, n, 1000):
            fh.write("".join(
                " ".join(rng.choices(src, k=rng.randint(3, 9))) + "\t" + " ".join(rng.choices(tgt, k=rng.randint(3, 9))) + "\n"
                for _ in range(min(1000, n - start))
            ))


@pytest.fixture()
def corpus(tmp_path, monkeypatch):
    """A 1,200-line file with three bad lines, in pools of 100 lines, 20 held-out pairs kept."""
    monkeypatch.setattr(stream, "POOL_LINES", 100)
    monkeypatch.setattr(stream, "HELD_OUT_LIMIT", 20)
    path = tmp_path / "c.tsv"
    write_corpus(path, 1200)
    lines = path.read_bytes().split(b"\n")
    lines[4], lines[10], lines[700] = b"no tab here", b"a\tb\tc", b"\xff\xfe\tx"
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines))
    return path


def test_a_streamed_file_splits_and_reports_as_a_whole_one(corpus):
    whole, streamed = D.load_tsv(corpus), stream.load_streamed_tsv(corpus)
    assert streamed.sizes == {s: len(whole.split(s)) for s in D.SPLITS}
    assert [str(p) for p in streamed.report.problems] == [str(p) for p in whole.report.problems]
    assert [str(p) for p in streamed.report.problems] == ["c.tsv:5: no tab between source and target", "c.tsv:11: 2 tabs (expected one)", "c.tsv:701: invalid UTF-8"]
    assert streamed.valid == whole.valid[:20] and streamed.test == whole.test[:20]  # the first 20 of each held-out split
    assert set(streamed.train) <= set(whole.train) and len(streamed.train) == min(len(whole.train), stream.TRAIN_SAMPLE)
    assert [pool.line for pool in streamed.stream.pools] == list(range(1, 1201, 100))
    assert list(streamed.train_texts("src")) == [p.src for p in whole.train]
    assert streamed.spec == {"kind": "tsv", "path": str(corpus), "stream": True}
    assert stream.load_streamed_tsv(corpus).split_hash == streamed.split_hash
    assert any("valid: the first 20 of" in note for note in streamed.report.notes)


def test_a_changed_file_is_refused_and_a_change_changes_the_hash(corpus):
    streamed = stream.load_streamed_tsv(corpus)
    with open(corpus, "ab") as fh:
        fh.write(b"\r\nnew\tline")
    with pytest.raises(D.DataError, match="changed during the run"):
        next(iter(streamed.train_texts("tgt")))
    assert stream.load_streamed_tsv(corpus).split_hash != streamed.split_hash


def test_streamed_batches_cover_the_split_once_per_epoch(corpus):
    data = stream.load_streamed_tsv(corpus)
    src = Tokenizer.train(data.train_texts("src"), 400, "word")
    tgt = Tokenizer.train(data.train_texts("tgt"), 400, "word")
    batches = data.training_batches(src, tgt, 128, 120, seed=3)
    whole = sorted((tuple(src.encode(p.src)), tuple(tgt.encode(p.tgt))) for p in D.load_tsv(corpus).train)
    epochs = [list(batches.epoch(e)) for e in (0, 1)]
    for rows in epochs:
        assert len(rows) == batches.steps_per_epoch == sum(batches.counts)
        assert sorted((e.src, e.tgt) for batch in rows for e in batch) == whole
        assert all(D.batch_cost(batch) <= 120 or len(batch) == 1 for batch in rows)
    assert [b[0].src for b in epochs[0]] != [b[0].src for b in epochs[1]]  # each epoch has its own order
    assert [b[0].src for b in batches.epoch(0, 7)] == [b[0].src for b in epochs[0][7:]]  # resuming mid-epoch


def test_count_batches_is_the_number_make_batches_cuts():
    rng = random.Random(1)
    examples = [D.Example(tuple(range(rng.randint(1, 20))), tuple(range(rng.randint(0, 20))), i) for i in range(300)]
    for batch_tokens in (15, 100, 500):
        counts = {len(D.make_batches(examples, batch_tokens, seed, epoch)) for seed, epoch in ((0, 0), (1, 5), (2, 9))}
        assert counts == {D.count_batches([(len(e.src), len(e.tgt)) for e in examples], batch_tokens)}


def test_tokenizer_sample_is_reproducible_and_bounded():
    texts = [f"sentence {i}" for i in range(1000)]
    sample = sample_texts(iter(texts), 100)
    assert len(sample) == 100 and len(set(sample)) == 100 and set(sample) <= set(texts)
    assert sample_texts(iter(texts), 100) == sample and sample != texts[:100]
    assert sample_texts(iter(texts[:5]), 100) == texts[:5]


def test_load_data_streams_when_asked_or_above_the_size(corpus, monkeypatch):
    assert not isinstance(sources.load_data(str(corpus)), stream.StreamedDataset)
    assert isinstance(sources.load_data(str(corpus), stream=True), stream.StreamedDataset)
    assert isinstance(sources.load_data({"kind": "tsv", "path": str(corpus), "stream": True}), stream.StreamedDataset)
    monkeypatch.setattr(sources, "STREAM_ABOVE", corpus.stat().st_size - 1)
    assert isinstance(sources.load_data(str(corpus)), stream.StreamedDataset)
    with pytest.raises(D.DataError, match="--stream reads a TSV file"):
        sources.load_data("copy", stream=True)


@pytest.mark.slow
def test_train_streams_a_tsv_and_resumes_it(corpus, tmp_path, capsys):
    out = tmp_path / "m"
    flags = ["--data", str(corpus), "--stream", "--src-tokenizer", "word", "--tgt-tokenizer", "word", "--src-vocab", "400", "--tgt-vocab", "400"]
    assert main(["train", *flags, "--out", str(out), "--epochs", "1", "--quiet", *TINY]) == 0
    assert "3 bad line(s)" in capsys.readouterr().err
    assert main(["train", "--data", str(corpus), "--out", str(out), "--resume", "--epochs", "2", "--quiet"]) == 1
    assert "pass --stream again" in capsys.readouterr().err
    assert main(["train", *flags[:3], "--out", str(out), "--resume", "--epochs", "2", "--quiet"]) == 0
    meta = load_bundle(out).meta
    assert meta["data"]["spec"]["stream"] is True and meta["data"]["sizes"]["valid"] > 20
    assert [h["epoch"] for h in meta["history"]] == [1, 2] and meta["final"]["valid"]["sampled"] == 20


@pytest.mark.slow
def test_a_million_line_corpus_trains_in_bounded_memory(tmp_path):
    """A generated 1,000,000-line TSV (56 MB) trains with ``--stream``: the file is scanned, both
    tokenizers are trained on 300,000-sentence samples, every pool is tokenised to count the
    batches, ten steps run and Ctrl-C saves a checkpoint. Its peak resident memory must stay under
    ``BOUND_MB``.

    Measured here: 447 MB with ``--stream`` (a process that has imported torch holds 225 MB),
    1,335 MB for the same command without it (the file read whole: ``load_tsv`` alone peaks at
    727 MB, then the tokenizers train on 900,000 sentences and 900,000 pairs become examples).
    """
    BOUND_MB = 700
    tsv = tmp_path / "million.tsv"
    write_corpus(tsv, 1_000_000)
    cmd = [sys.executable, "-m", "attnviz", "train", "--data", str(tsv), "--stream", "--out", str(tmp_path / "m"), "--epochs", "1",
           "--src-vocab", "400", "--tgt-vocab", "400", *TINY]
    peak_mb, code, err = _peak_memory_until_first_steps(cmd)
    assert code == 130, err
    assert "checkpoint saved" in err and load_bundle(tmp_path / "m").meta["data"]["sizes"]["train"] > 890_000
    assert peak_mb < BOUND_MB, f"peak {peak_mb:.0f} MB"


def _peak_memory_until_first_steps(cmd: list[str]) -> tuple[float, int, str]:
    """Run ``cmd``, Ctrl-C it once a progress line shows steps ran; (peak RSS in MB, exit code, stderr).

    The peak is the program's own high-water mark (``VmHWM`` of its address space), read at every
    line it writes: ``ru_maxrss`` of a child would also count the pages of this (large) test process
    that the child held between fork and exec."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    seen, peak_kb, stopped = [], 0, False
    try:
        for line in proc.stderr:
            seen.append(line)
            peak_kb = max(peak_kb, _high_water_kb(proc.pid))
            if line.startswith("epoch 1/1 [") and not stopped:
                proc.send_signal(signal.SIGINT)  # once: a second Ctrl-C would not wait for the save
                stopped = True
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    return peak_kb / 1024, proc.returncode, "".join(seen)


def _high_water_kb(pid: int) -> int:
    """The process's peak resident memory so far, in kB (0 once it has gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return int(match.group(1)) if match else 0
