"""Atomic writes never replace what is not a regular file: a symbolic link is written through,
a device, pipe, socket or folder is refused, and a replaced file keeps its permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from attnviz.cli import main
from attnviz.core.atomic import atomic_write_bytes
from attnviz.core.bundle import save_bundle

from decoding_fixtures import random_bundle


def test_a_regular_file_is_replaced_and_keeps_its_permissions(tmp_path):
    target = tmp_path / "out.txt"
    target.write_bytes(b"old")
    target.chmod(0o640)
    assert atomic_write_bytes(target, b"new") == target
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_symbolic_link_is_written_through(tmp_path):
    real = tmp_path / "real.txt"
    real.write_bytes(b"old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    assert atomic_write_bytes(link, b"new") == real
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == b"new"


def test_a_dangling_link_creates_its_target(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "made.txt")
    atomic_write_bytes(link, b"data")
    assert link.is_symlink() and (tmp_path / "made.txt").read_bytes() == b"data"


def test_a_pipe_and_a_folder_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        atomic_write_bytes(fifo, b"x")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    with pytest.raises(IsADirectoryError):
        atomic_write_bytes(tmp_path, b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_a_device_is_refused():
    before = os.stat("/dev/null")
    with pytest.raises(OSError, match="not a regular file"):
        atomic_write_bytes("/dev/null", b"x")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_trace_onto_a_device_is_one_line_and_leaves_it_alone(tmp_path, capsys):
    b = random_bundle(seed=2)
    model_dir = save_bundle(tmp_path / "tiny", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    assert main(["trace", "--model", str(model_dir), "--src", "我", "--max-len", "2", "--out", str(fifo)]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("attnviz: error: cannot write") and "not a regular file" in last
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def _another_program_writes(monkeypatch, path: Path, data: bytes) -> None:
    """While attnviz writes its temporary file, another program creates ``path``."""
    import tempfile

    real = tempfile.mkstemp

    def mkstemp(*args, **kw):
        made = real(*args, **kw)
        path.write_bytes(data)
        return made

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


def test_a_file_that_appears_while_a_new_one_is_written_is_left_alone(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    _another_program_writes(monkeypatch, target, b"theirs")
    with pytest.raises(FileExistsError):
        atomic_write_bytes(target, b"ours")
    assert target.read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temporary file left


def test_trace_onto_a_name_taken_meanwhile_is_one_line_and_keeps_the_other_file(tmp_path, monkeypatch, capsys):
    b = random_bundle(seed=2)
    model_dir = save_bundle(tmp_path / "tiny", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)
    out = tmp_path / "trace.npz"
    _another_program_writes(monkeypatch, out, b"theirs")
    assert main(["trace", "--model", str(model_dir), "--src", "我", "--max-len", "2", "--out", str(out)]) == 1
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.startswith("attnviz: error")]
    assert len(err) == 1 and err[0].startswith("attnviz: error: cannot write") and "appeared" in err[0], err
    assert out.read_bytes() == b"theirs"
