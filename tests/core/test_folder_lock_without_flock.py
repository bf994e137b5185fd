"""The output lock where ``flock`` is unavailable (no ``fcntl`` module, or a file system that
refuses it): the pid in the lock file still refuses a second owner, a dead owner's file is stale
and taken over, racing runs leave exactly one owner, and any other locking failure is one line."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from train_faults import ROOT, environment

from attnviz.core import folder_lock
from attnviz.core.folder_lock import FolderLockedError, lock_path, output_lock, owner

NO_FCNTL = "from attnviz.core import folder_lock\nfolder_lock.fcntl = None\n"
HOLD = NO_FCNTL + "import sys, time\nwith folder_lock.output_lock(sys.argv[1], 'train'):\n    print('held', flush=True); time.sleep(60)\n"
RACE = NO_FCNTL + """import os, sys, time
go = sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.0005)
try:
    with folder_lock.output_lock(sys.argv[1], 'train'):
        print('won', flush=True); time.sleep(1.5)
except folder_lock.FolderLockedError as exc:
    print('refused' if '\\n' not in str(exc) else 'bad message', flush=True)
"""


@pytest.fixture
def no_fcntl(monkeypatch):
    monkeypatch.setattr(folder_lock, "fcntl", None)


def test_without_fcntl_a_lock_of_another_process_is_refused_and_stale_once_it_is_killed(tmp_path, no_fcntl):
    out = tmp_path / "m"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], cwd=ROOT, env=environment(), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(FolderLockedError, match=f"pid {proc.pid}"):
            with output_lock(out):
                pass
    finally:
        proc.kill()
        proc.wait()
    assert owner(out)["pid"] == proc.pid  # the kill left its file: stale, since that pid no longer runs
    with output_lock(out):
        assert owner(out)["pid"] == os.getpid()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing left: no lock, no file moved aside


def test_without_fcntl_a_pidless_lock_file_is_an_owner_writing_it_until_it_is_old(tmp_path, no_fcntl):
    out = tmp_path / "m"
    lock_path(out).write_text("")
    with pytest.raises(FolderLockedError, match="pid unknown"):
        with output_lock(out):
            pass
    old = time.time() - 2 * folder_lock.FRESH_S
    os.utime(lock_path(out), (old, old))
    with output_lock(out):
        assert owner(out)["pid"] == os.getpid()


# a dead pid's file is stale without fcntl too: test_folder_lock.py's test_a_lock_file_of_a_dead_pid_is_stale[no-fcntl]


def _flock_fails(code: int):
    def flock(fd, op):
        raise OSError(code, os.strerror(code))

    return flock


def test_a_file_system_without_flock_falls_back_to_the_pid_file(tmp_path, monkeypatch):
    monkeypatch.setattr(folder_lock.fcntl, "flock", _flock_fails(errno.ENOLCK))
    out = tmp_path / "m"
    with output_lock(out, "import-hf"):
        with pytest.raises(FolderLockedError, match=rf"attnviz import-hf \(pid {os.getpid()}"):
            with output_lock(out):
                pass
    assert not lock_path(out).exists()


def test_another_locking_failure_says_it_cannot_lock_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(folder_lock.fcntl, "flock", _flock_fails(errno.EIO))
    with pytest.raises(FolderLockedError, match="cannot lock") as err:
        with output_lock(tmp_path / "m"):
            pass
    assert "\n" not in str(err.value)


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("stale", [False, True])
def test_without_fcntl_racing_runs_leave_exactly_one_owner(tmp_path, stale):
    out, go = tmp_path / "m", tmp_path / "go"
    if stale:  # every racer finds a dead owner's file and takes it over at once
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        lock_path(out).write_text(json.dumps({"pid": dead.pid}))
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(out), str(go)], cwd=ROOT, env=environment(), stdout=subprocess.PIPE,
                              text=True) for _ in range(8)]
    time.sleep(1.0)  # every racer has started and waits for the signal
    Path(go).touch()
    answers = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert answers == ["refused"] * 7 + ["won"], answers
    assert not lock_path(out).exists() and [p.name for p in tmp_path.iterdir() if ".stale-" in p.name] == []
