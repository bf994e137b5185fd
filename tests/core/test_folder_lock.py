"""One run owns an output folder (``attnviz.core.folder_lock``): a second owner is refused in one
line naming the first's pid, the lock goes with its owner (a clean exit removes the file; a
crash or ``kill -9`` leaves a stale file the next run takes over), and ``attnviz train`` /
``attnviz import-hf`` on a folder another run owns refuse without touching it (issue 25, case 4)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from train_faults import ROOT, TINY, environment

from attnviz.cli import main
from attnviz.core import folder_lock
from attnviz.core.folder_lock import FolderLockedError, lock_path, output_lock, owner

HOLD = "import sys, time; from attnviz.core.folder_lock import output_lock\n" \
       "with output_lock(sys.argv[1], 'train'):\n    print('held', flush=True); time.sleep(60)\n"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def held_elsewhere(tmp_path):
    """A second process that holds the lock of ``tmp_path / 'm'`` until killed."""
    out = tmp_path / "m"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], cwd=ROOT, env=environment(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield out, proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("flock", [True, False], ids=["flock", "pid-file"])
def test_a_second_owner_in_the_same_process_is_refused_with_the_first_pid(tmp_path, monkeypatch, flock):
    """With flock, and where fcntl is missing (the pid file is the lock)."""
    if not flock:
        monkeypatch.setattr(folder_lock, "fcntl", None)
    out = tmp_path / "m"
    with output_lock(out, "train"):
        assert owner(out)["pid"] == os.getpid()
        with pytest.raises(FolderLockedError, match=rf"in use by another attnviz train \(pid {os.getpid()}, since"):
            with output_lock(out):
                pass
    assert not lock_path(out).exists()  # a clean exit removes the lock
    with output_lock(out):  # and the folder can be owned again
        pass


def test_the_lock_is_beside_the_folder_never_in_it(tmp_path):
    out = tmp_path / "models" / "m"
    with output_lock(out) as path:
        assert path == tmp_path / "models" / ".m.lock" and not out.exists()


def test_a_lock_held_by_another_process_is_refused_and_released_when_it_is_killed(held_elsewhere):
    out, proc = held_elsewhere
    with pytest.raises(FolderLockedError, match=f"pid {proc.pid}"):
        with output_lock(out):
            pass
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert owner(out)["pid"] == proc.pid  # the crash left its file: stale, since no process holds it
    with output_lock(out):
        assert owner(out)["pid"] == os.getpid()


@pytest.mark.parametrize("locking", ["flock", "no-fcntl"])
def test_a_lock_file_of_a_dead_pid_is_stale(tmp_path, monkeypatch, locking):
    """With ``flock`` or without it (no ``fcntl`` module: test_folder_lock_without_flock.py), a dead pid's file is taken over."""
    if locking == "no-fcntl":
        monkeypatch.setattr(folder_lock, "fcntl", None)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "m"
    lock_path(out).write_text(json.dumps({"pid": dead.pid, "since": "2020-01-01T00:00:00"}))
    with output_lock(out):
        assert owner(out)["pid"] == os.getpid()


def test_train_on_a_folder_another_run_owns_refuses_in_one_line(held_elsewhere, tmp_path, capsys):
    out, proc = held_elsewhere
    out.mkdir()  # empty: train's own folder check lets it through, the lock does not
    before = snapshot(out)
    tsv = tmp_path / "one.tsv"
    tsv.write_text("a b\tb a\n")
    t0 = time.monotonic()
    code = main(["train", "--data", str(tsv), "--out", str(out), "--epochs", "1", "--quiet", "--src-vocab", "8", "--tgt-vocab", "8",
                 "--tokenizer", "char", *TINY])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and f"in use by another attnviz train (pid {proc.pid}" in err, err
    assert snapshot(out) == before and time.monotonic() - t0 < 30
