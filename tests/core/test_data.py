"""Data sets, the deterministic split, bad-line reports and token batching."""

from __future__ import annotations

import os

import pytest
import torch

from attnviz.core.data import corpora as D
from attnviz.core.data import sources
from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer


@pytest.fixture(scope="module")
def hsk():
    return D.load_hsk()


def test_hsk_pairs_split_and_glosses(hsk):
    assert sum(hsk.sizes.values()) == 4354
    assert hsk.sizes["train"] > 0.85 * 4354 and hsk.sizes["valid"] > 100 and hsk.sizes["test"] > 100
    ids = {s: {p.id for p in hsk.split(s)} for s in D.SPLITS}
    assert not ids["train"] & ids["test"] and not ids["train"] & ids["valid"] and not ids["valid"] & ids["test"]
    first = next(p for p in hsk.train + hsk.valid + hsk.test if p.id == "hsk1-0001")
    assert first.src == "老师，您好！" and first.tgt == "Hello, teacher!"
    assert first.extra["tokens"][0]["word"] == "老师" and first.extra["tokens"][0]["gloss_en"] == "teacher"
    assert hsk.src_spaces is False and hsk.licence == "CC-BY-SA-4.0"


def test_split_is_deterministic_and_hash_tracks_content(hsk):
    again = D.load_hsk()
    assert again.split_hash == hsk.split_hash and len(hsk.split_hash) == 16
    assert [p.id for p in again.test] == [p.id for p in hsk.test]
    assert all(D.split_of(p.id) == "test" for p in hsk.test)
    a, b = D.synthetic("copy", n=50), D.synthetic("copy", n=50, seed=1)
    assert a.split_hash != b.split_hash
    assert D.synthetic("copy", n=50).split_hash == a.split_hash


@pytest.mark.parametrize(
    "task,expect",
    [("copy", lambda s: s), ("reverse", lambda s: s[::-1]), ("sort", sorted)],
)
def test_synthetic_tasks(task, expect):
    ds = D.synthetic(task, n=200, min_len=3, max_len=7, seed=3)
    pairs = ds.train + ds.valid + ds.test
    assert len(pairs) == 200
    for p in pairs:
        src = p.src.split()
        assert 3 <= len(src) <= 7
        assert p.tgt.split() == list(expect(src))
    letters = D.synthetic(task, n=20, alphabet=D.LETTERS)
    assert all(c.isalpha() for p in letters.train for c in p.src.replace(" ", ""))


def test_tsv_bad_lines_reported_with_line_numbers(tmp_path):
    f = tmp_path / "corpus.tsv"
    f.write_bytes(
        "你好\thello\n"  # 1 ok
        "no tab here\n"  # 2
        "\tempty source\n"  # 3
        "empty target\t \n"  # 4
        .encode()
        + b"bad \xff\xfe utf8\tx\n"  # 5
        + "\n"  # 6 blank
        "a\tb\tc\n"  # 7 two tabs
        "谢谢\tthank you\r\n".encode()  # 8 ok (CRLF)
    )
    ds = D.load_tsv(f)
    rep = ds.report
    assert rep.pairs == 2 and rep.lines_read == 8 and rep.skipped == 6
    got = {p.line: p.reason for p in rep.problems}
    assert set(got) == {2, 3, 4, 5, 6, 7}
    assert "tab" in got[2] and "source" in got[3] and "target" in got[4] and "UTF-8" in got[5] and "tabs" in got[7]
    assert "corpus.tsv:5: invalid UTF-8" in rep.summary()
    pairs = ds.train + ds.valid + ds.test
    assert sorted((p.src, p.tgt) for p in pairs) == [("你好", "hello"), ("谢谢", "thank you")]
    assert ds.spec == {"kind": "tsv", "path": str(f)}


def test_user_corpus_split_keys_on_source(tmp_path):
    f = tmp_path / "dup.tsv"
    f.write_text("".join(f"same source\ttarget {i}\n" for i in range(30)) + "".join(f"s{i}\tt{i}\n" for i in range(200)), encoding="utf-8")
    ds = D.load_tsv(f)
    homes = {s for s in D.SPLITS for p in ds.split(s) if p.src == "same source"}
    assert len(homes) == 1  # a repeated source never straddles the split
    assert ds.sizes["valid"] + ds.sizes["test"] > 0


def test_parallel_files(tmp_path):
    s, t = tmp_path / "a.zh", tmp_path / "a.en"
    s.write_text("一\n二\n\n四\n五\n", encoding="utf-8")
    t.write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    ds = D.load_parallel(s, t)
    got = {(p.file, p.line) for p in ds.report.problems}
    assert got == {("a.zh", 3), ("a.en", 5)}
    assert ds.report.pairs == 3
    assert sources.load_data(str(s), str(t)).split_hash == ds.split_hash


def test_load_data_errors(tmp_path):
    with pytest.raises(D.DataError, match="no such file"):
        sources.load_data(str(tmp_path / "missing.tsv"))
    bad = tmp_path / "bad.tsv"
    bad.write_text("only\nbad lines\n", encoding="utf-8")
    with pytest.raises(D.DataError, match="no usable pairs"):
        D.load_tsv(bad)
    assert sources.load_data({"kind": "reverse", "n": 30}).split_hash == D.synthetic("reverse", n=30).split_hash


def test_batches_by_tokens_and_teacher_forcing_tensors():
    ds = D.synthetic("copy", n=300, min_len=2, max_len=12)
    tok = Tokenizer.train([p.src for p in ds.train], 64, "word")
    ex = D.encode_pairs(ds.train, tok, tok)
    batches = D.make_batches(ex, 120, seed=0, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(len(ex)))
    assert all(D.batch_cost([ex[i] for i in b]) <= 120 for b in batches)
    assert D.make_batches(ex, 120, seed=0, epoch=0) == batches
    assert D.make_batches(ex, 120, seed=0, epoch=1) != batches
    e = ex[batches[0][0]]
    b = D.collate([ex[i] for i in batches[0]])
    row = list(b.indices).index(e.index)
    n = len(e.tgt)
    assert b.tgt_in[row, 0] == BOS_ID and b.tgt_in[row, 1 : n + 1].tolist() == list(e.tgt)  # SOS + target
    assert b.labels[row, :n].tolist() == list(e.tgt) and b.labels[row, n] == EOS_ID  # target + EOS
    assert (b.labels[row, n + 1 :] == PAD_ID).all() and b.src[row, : len(e.src)].tolist() == list(e.src)
    assert b.n_tokens == int(sum(len(ex[i].tgt) + 1 for i in batches[0]))
    assert b.src.dtype == torch.long


def test_too_long_pairs_are_counted_not_silent():
    ds = D.synthetic("copy", n=100, min_len=3, max_len=12)
    tok = Tokenizer.train([p.src for p in ds.train], 64, "word")
    rep = D.DataReport("x")
    ex = D.encode_pairs(ds.train, tok, tok, max_len=6, report=rep)
    left_out = sum(1 for p in ds.train if len(p.src.split()) > 5)
    assert len(ex) == len(ds.train) - left_out and left_out > 0
    assert rep.notes and str(left_out) in rep.notes[0]


def test_a_fifo_or_folder_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "pairs.tsv"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    with pytest.raises(D.DataError, match="not a regular file"):
        sources.load_data(str(fifo))
    with pytest.raises(D.DataError, match="not a regular file"):
        sources.load_data(str(fifo), str(fifo))


def test_synthetic_size_is_honoured_and_checked():
    assert sum(sources.load_data("copy", n_examples=90).sizes.values()) == 90
    assert sources.load_data("copy", n_examples=90).split_hash == sources.load_data({"kind": "copy", "n": 90}).split_hash
    for spec in ({"kind": "copy", "n": "x"}, {"kind": "copy", "n": 10**12}, {"kind": "sort", "alphabet": ""}, {"kind": "reverse", "seed": -1}):
        with pytest.raises(D.DataError):
            sources.load_data(spec)
