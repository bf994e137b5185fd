"""Hostile destinations and requests for the files attnviz makes, through the command line: a pipe
where the page goes is never opened; a corpus line with no end is never held whole; a file
attnviz did not write (or one it wrote and the user changed since) is never replaced and a
symbolic link never written through; frames that would not fit the memory budget are refused
before any is drawn. Each refusal is one line on stderr, and the files are as they were."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from alarms import fails_after

from attnviz.cli import main
from attnviz.core import outputs
from attnviz.core.data import stream

ROOT = Path(__file__).resolve().parents[2]
SRC = "猫吃鱼。"
SMALL = ["--view", "head", "--size", "300x200"]


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("attnviz: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def no_hang():
    """Fail (instead of waiting forever) when the command blocks on a pipe."""
    with fails_after(60, "blocked: a pipe was opened"):
        yield


@pytest.fixture
def nothing_drawn(monkeypatch):
    """Any view built or figure drawn fails the test: a refusal must come before them."""
    from attnviz.qt.views import registry
    from attnviz.qt.widgets import figures

    def drawn(*_, **__):
        raise AssertionError("a frame was drawn before the refusal")

    monkeypatch.setattr(figures, "render_qimage", drawn)
    monkeypatch.setattr(registry, "build_view", drawn)


# ---------------------------------------------------------------------------
# 1. A pipe where the page goes
# ---------------------------------------------------------------------------
def test_page_refuses_a_pipe_named_index_html_without_opening_it(qapp, tmp_path, capsys, no_hang):
    fifo = tmp_path / "index.html"
    os.mkfifo(fifo)
    assert main(["page", "--src", SRC, *SMALL, "--out", str(tmp_path)]) == 1
    assert str(fifo) in one_line_error(capsys)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["index.html"]


def test_the_export_web_page_check_does_not_open_a_pipe_either(tmp_path, no_hang):
    from attnviz.qt.publish.web_page import WebPageError, check_page_folder

    os.mkfifo(tmp_path / "index.html")
    with pytest.raises(WebPageError, match="not a page written by attnviz"):
        check_page_folder(tmp_path)


# ---------------------------------------------------------------------------
# 2. A corpus line with no end
# ---------------------------------------------------------------------------
class _Reads:
    """A file whose every read is recorded (and which cannot be iterated: only bounded reads)."""

    def __init__(self, fh, sizes: list[int]):
        self.fh, self.sizes = fh, sizes

    def readline(self, limit: int = -1) -> bytes:
        assert limit > 0, "an unbounded readline"
        data = self.fh.readline(limit)
        self.sizes.append(len(data))
        return data

    def seek(self, *args):
        return self.fh.seek(*args)

    def fileno(self) -> int:
        return self.fh.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


def test_train_stream_over_a_file_with_no_newline_reads_it_in_bounded_pieces(tmp_path, capsys, monkeypatch):
    """A 64 MiB file (sparse, no newline) is one line 64 times the cap: it is read past in pieces of
    at most the cap, reported by its number and the cap in one line, and no model folder is made."""
    corpus = tmp_path / "big.tsv"
    with open(corpus, "wb") as fh:
        fh.truncate(64 * stream.LINE_LIMIT)
    sizes: list[int] = []
    opened = stream._open
    monkeypatch.setattr(stream, "_open", lambda path: _Reads(opened(path), sizes))
    out = tmp_path / "model"
    assert main(["train", "--data", str(corpus), "--stream", "--out", str(out), "--quiet"]) == 1
    err = one_line_error(capsys)
    assert "big.tsv:1: longer than the line limit of 1,048,576 bytes" in err and "no usable pairs" in err
    assert max(sizes) <= max(stream.LINE_LIMIT + 1, stream.SKIP_CHUNK) and sum(sizes) == corpus.stat().st_size
    assert not out.exists()


def test_an_over_long_line_among_good_ones_is_skipped_and_reported(tmp_path, monkeypatch):
    """The line's number, the pools' offsets and the pairs read again all stay right past it."""
    monkeypatch.setattr(stream, "LINE_LIMIT", 64)
    monkeypatch.setattr(stream, "SKIP_CHUNK", 16)
    monkeypatch.setattr(stream, "POOL_LINES", 3)
    lines = [f"s{i} a b\tt{i} c d\n".encode() for i in range(12)]
    lines[4] = b"x" * 500 + b"\tno end to this line\n"
    corpus = tmp_path / "c.tsv"
    corpus.write_bytes(b"".join(lines))
    data = stream.load_streamed_tsv(corpus)
    assert [str(p) for p in data.report.problems] == ["c.tsv:5: longer than the line limit of 64 bytes: skipped, not read whole"]
    assert sum(data.full_sizes.values()) == 11 and [p.line for p in data.stream.pools] == [1, 4, 7, 10]
    assert [p.offset for p in data.stream.pools] == [sum(map(len, lines[:i])) for i in (0, 3, 6, 9)]
    again = [n for pool in data.stream.pools for n, _, raw in data.stream.lines(pool) if raw is not None]
    assert again == [n for n in range(1, 13) if n != 5]


# ---------------------------------------------------------------------------
# 3. Files attnviz did not write, and symbolic links
# ---------------------------------------------------------------------------
def test_animate_never_writes_through_a_symbolic_link(qapp, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "mine.gif"
    victim.write_bytes(b"GIF89a my own")
    link = tmp_path / "link.gif"
    link.symlink_to(victim)
    assert main(["animate", "--src", SRC, *SMALL, "--out", str(link)]) == 1
    err = one_line_error(capsys)
    assert str(link) in err and "symbolic link" in err
    assert victim.read_bytes() == b"GIF89a my own" and link.is_symlink() and os.readlink(link) == str(victim)
    assert sorted(os.listdir(tmp_path)) == ["link.gif", "outside"]


def test_animate_replaces_its_own_file_only_while_unchanged(qapp, tmp_path, capsys):
    gif = tmp_path / "a.gif"
    gif.write_bytes(b"GIF89a not from attnviz")
    assert main(["animate", "--src", SRC, *SMALL, "--out", str(gif)]) == 1
    assert f"{gif} exists and is not a file attnviz wrote" in one_line_error(capsys)
    assert gif.read_bytes() == b"GIF89a not from attnviz"
    gif.unlink()
    for _ in range(2):  # written, then replaced: it is its own
        assert main(["animate", "--src", SRC, *SMALL, "--fps", "4", "--out", str(gif)]) == 0
    assert outputs.is_ours(gif)
    edited = gif.read_bytes().replace(b"NETSCAPE2.0", b"NETSCAPE2.1", 1)  # changed by someone else since
    gif.write_bytes(edited)
    assert main(["animate", "--src", SRC, *SMALL, "--out", str(gif)]) == 1
    assert str(gif) in one_line_error(capsys) and gif.read_bytes() == edited and os.listdir(tmp_path) == ["a.gif"]


def test_an_edited_page_is_no_longer_its_own(qapp, tmp_path, capsys):
    page = tmp_path / "index.html"
    assert main(["page", "--src", SRC, *SMALL, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    edited = page.read_text(encoding="utf-8").replace("<title>", "<title>My notes: ", 1)
    page.write_text(edited, encoding="utf-8")
    assert main(["page", "--src", SRC, *SMALL, "--out", str(tmp_path)]) == 1
    assert "not a page written by attnviz" in one_line_error(capsys) and page.read_text(encoding="utf-8") == edited


def test_export_refuses_a_foreign_file_and_a_link_before_loading_the_model(qapp, tmp_path, capsys, monkeypatch):
    from attnviz.core import bundle

    monkeypatch.setattr(bundle, "load_bundle", lambda *a, **k: pytest.fail("the model was loaded before the refusal"))
    name = "head_cross_layer1_head1.png"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / name).write_bytes(b"\x89PNG my own figure")
    linked = tmp_path / "linked"
    linked.mkdir()
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"not to be overwritten")
    (linked / name).symlink_to(victim)
    for out in (foreign, linked):
        assert main(["export", "--src", SRC, "--view", "head", "--out", str(out)]) == 1
        assert str(out / name) in one_line_error(capsys)
    assert (foreign / name).read_bytes() == b"\x89PNG my own figure" and victim.read_bytes() == b"not to be overwritten"
    assert os.listdir(foreign) == [name] and os.listdir(linked) == [name] and (linked / name).is_symlink()


def test_export_replaces_its_own_files_but_not_edited_ones(qapp, tmp_path, capsys):
    args = ["export", "--src", SRC, "--view", "head", "--format", "csv", "--out", str(tmp_path)]
    assert main(args) == 0 and main(args) == 0
    csv = tmp_path / "head_cross_layer1_head1.csv"
    assert outputs.is_ours(csv) and csv.read_text(encoding="utf-8").startswith("# ")
    with open(csv, "a", encoding="utf-8") as fh:
        fh.write("my,own,row\n")
    before = csv.read_bytes()
    assert main(args) == 1
    assert str(csv) in one_line_error(capsys) and csv.read_bytes() == before


def test_export_all_heads_checks_every_name_before_drawing(qapp, tmp_path, capsys, monkeypatch):
    from attnviz.qt.export import files

    monkeypatch.setattr(files, "iter_export_all_heads", lambda *a, **k: pytest.fail("figures were drawn before the refusal"))
    foreign = tmp_path / "encoder_layer2_head3.png"
    foreign.write_bytes(b"mine")
    assert main(["export", "--src", SRC, "--view", "head", "--head", "all", "--kind", "encoder", "--out", str(tmp_path)]) == 1
    assert str(foreign) in one_line_error(capsys)
    assert os.listdir(tmp_path) == [foreign.name] and foreign.read_bytes() == b"mine"


def test_every_output_format_keeps_its_mark_only_while_unchanged(tmp_path):
    """Each format's mark goes where the format keeps a comment; a byte changed anywhere, or a
    file of the right name that attnviz did not write, is not its own."""
    import io

    import numpy as np
    from PIL import Image

    png, gif, npz = io.BytesIO(), io.BytesIO(), io.BytesIO()
    Image.new("RGB", (8, 4), "red").save(png, "PNG")
    Image.new("RGB", (8, 4), "red").save(gif, "GIF")
    np.savez(npz, a=np.arange(3))
    files = {"png": png.getvalue(), "gif": gif.getvalue(), "npz": npz.getvalue(), "mp4": b"\0\0\0\x08ftyp",
             "html": b"<!DOCTYPE html><p>x</p>", "svg": b"<svg/>\n", "csv": b"# a: b\nx,y\n", "pdf": b"%PDF-1.4\n%%EOF\n"}
    assert set(files) == set(outputs.OUTPUT_FORMATS)
    for fmt, data in files.items():
        path = tmp_path / f"out.{fmt}"
        path.write_bytes(data)
        assert not outputs.is_ours(path), fmt
        path.unlink()
        outputs.write_output(path, data)
        assert outputs.is_ours(path), fmt
        written = path.read_bytes()
        for i in (0, len(written) // 2, len(written) - 1):
            path.write_bytes(written[:i] + bytes([written[i] ^ 1]) + written[i + 1:])
            assert not outputs.is_ours(path), (fmt, i)
    with np.load(tmp_path / "out.npz") as z:  # each format still reads as itself
        assert z["a"].tolist() == [0, 1, 2]


# ---------------------------------------------------------------------------
# 4. Frames that would not fit in memory
# ---------------------------------------------------------------------------
BUDGET = re.compile(r"about (\d+\.\d) GiB of memory \(8 bytes a pixel\), more than the 2 GiB budget")


@pytest.mark.parametrize("argv", [
    ["--view", "head", "--size", "10000x10000"],  # the largest --size
    ["--view", "grid,head,lines,mask,output,pe", "--size", "4000x3000"],  # six views side by side
    ["--view", "head", "--size", "3000x3000", "--tgt", " ".join(["fish"] * 300)],  # 300 positions at 3000x3000
])
def test_animate_refuses_frames_over_the_memory_budget_before_drawing(qapp, tmp_path, capsys, nothing_drawn, argv):
    assert main(["animate", "--src", SRC, *argv, "--out", str(tmp_path / "a.gif")]) == 1
    estimate = BUDGET.search(one_line_error(capsys))
    assert estimate and float(estimate.group(1)) > 2 and not list(tmp_path.iterdir())


def test_page_refuses_frames_over_the_memory_budget_before_drawing(qapp, tmp_path, capsys, nothing_drawn):
    assert main(["page", "--src", SRC, "--view", "head", "--size", "10000x10000", "--out", str(tmp_path)]) == 1
    assert BUDGET.search(one_line_error(capsys)) and not list(tmp_path.iterdir())
    assert main(["page", "--src", SRC, "--size", "10000x10000", "--out", str(tmp_path)]) == 1  # two views: one frame too large
    assert "one frame would be 20,000 x 10,000 pixels, more than 100 megapixels" in one_line_error(capsys)
    assert not list(tmp_path.iterdir())


def test_what_fits_the_budget_is_still_drawn(qapp, tmp_path, capsys):
    assert main(["animate", "--src", SRC, "--view", "grid,head", "--size", "400x300", "--out", str(tmp_path / "a.gif")]) == 0
    assert outputs.is_ours(tmp_path / "a.gif") and capsys.readouterr().out.strip().endswith("frames)")


# ---------------------------------------------------------------------------
# 5. CI waits for another apt run
# ---------------------------------------------------------------------------
def test_ci_apt_waits_for_the_dpkg_lock():
    calls = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if re.search(r"apt-get\s+(\S+\s+)*(update|install)\b", line)]
    assert len(calls) == 2 and all("-o DPkg::Lock::Timeout=" in line for line in calls), calls


def test_the_export_animation_dialog_refuses_a_foreign_file_before_drawing(qapp, tmp_path, monkeypatch, nothing_drawn):
    from PySide6 import QtWidgets

    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model
    from attnviz.qt.publish.animation import AnimationError, Panel, animation_dialog
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.views.registry import view_spec

    foreign = tmp_path / "head.gif"
    foreign.write_bytes(b"GIF89a mine")
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(foreign), ""))
    panel = Panel(view_spec("head"), ViewChoice(kind="cross", layer=0, head=0, mode="head"))
    with pytest.raises(AnimationError, match="is not a file attnviz wrote"):
        animation_dialog(None, load_bundle(default_model()), SRC, "", panel, "light", None, size=(300, 200))
    assert foreign.read_bytes() == b"GIF89a mine"


def test_train_over_a_small_file_with_an_over_long_line_skips_it_without_tokenising_it(tmp_path, capsys):
    """A file small enough to be read whole (not streamed): a line over the cap is a bad line, by
    its number and the cap, never a sentence handed to the tokenizer."""
    from attnviz.core.data.corpora import LINE_LIMIT

    corpus = tmp_path / "small.tsv"
    corpus.write_bytes(b"\xe4\xbd\xa0" * (LINE_LIMIT // 3 + 1) + b"\tyou\n")
    out = tmp_path / "model"
    assert main(["train", "--data", str(corpus), "--out", str(out), "--quiet"]) == 1
    err = one_line_error(capsys)
    assert f"small.tsv:1: longer than the line limit of {LINE_LIMIT:,} bytes" in err and "no usable pairs" in err
    assert not out.exists()
