"""Fault injection for ``attnviz train``: a training subprocess killed with SIGKILL while it saves a
checkpoint, then the bundle loaded and the run resumed. Used by ``test_train_faults.py`` (a few
trials) and ``bench/bench_faults.py`` (many)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--d-model", "32", "--heads", "2", "--layers", "1", "--d-ff", "64", "--dropout", "0", "--warmup", "10", "--lr", "3e-3", "--batch-tokens", "200"]


@contextlib.contextmanager
def killed_at_the_end(proc: subprocess.Popen) -> Iterator[None]:
    """SIGKILL ``proc`` once the block has waited for its moment, and reap it (killed for good if
    the block fails or the process outlives the wait)."""
    try:
        yield
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def train_command(out: Path, epochs: int, *extra: str) -> list[str]:
    """A tiny synthetic run (one checkpoint per epoch, a fraction of a second each) as a subprocess command."""
    return [sys.executable, "-m", "attnviz", "train", "--data", "copy", "--n-examples", "120", "--out", str(out),
            "--epochs", str(epochs), "--quiet", *TINY, *extra]


def environment() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


@dataclass
class KillTrial:
    """What one trial saw: where the save was when it was killed, and what came after."""

    moment: str  # "writing" (the new checkpoint half written), "between renames" (only .NAME.previous), "swapped"
    epoch_before: int  # epochs the surviving checkpoint holds
    resumed_epochs: int  # epochs the bundle holds after --resume
    leftovers: int  # .NAME.saving-* folders the kill left


def _saving(out: Path) -> list[Path]:
    return list(out.parent.glob(f".{out.name}.saving-*"))


def _wait_for_save(proc: subprocess.Popen, out: Path, saves: int, timeout_s: float) -> None:
    """Return as soon as the ``saves``-th checkpoint save of ``proc`` has begun writing."""
    seen, writing, t_end = 0, False, time.monotonic() + timeout_s
    while time.monotonic() < t_end and proc.poll() is None:
        now_writing = bool(_saving(out))
        if now_writing and not writing:
            seen += 1
            if seen >= saves:
                return
        writing = now_writing
        time.sleep(0.0005)
    raise RuntimeError(f"no checkpoint save #{saves} seen (exit status {proc.poll()})")


def _moment(out: Path) -> str:
    prev = out.parent / f".{out.name}.previous"
    if not out.exists() and prev.exists():
        return "between renames"
    return "writing" if _saving(out) else "swapped"


def kill_during_save(out: Path, rng: random.Random, timeout_s: float = 180.0) -> KillTrial:
    """Train into ``out`` in a subprocess, SIGKILL it 0-20 ms into its 2nd-4th checkpoint save,
    check that the bundle loads, then ``--resume`` it for one more epoch."""
    from attnviz.core.bundle import load_bundle

    env = environment()
    proc = subprocess.Popen(train_command(out, 500), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with killed_at_the_end(proc):
        _wait_for_save(proc, out, rng.randint(2, 4), timeout_s)  # the first save has no checkpoint before it
        time.sleep(rng.choice((0.0, rng.uniform(0.0, 0.002), rng.uniform(0.0, 0.02))))
    moment, leftovers = _moment(out), len(_saving(out))
    epoch = load_bundle(out).meta["epoch"]  # raises if the kill left nothing loadable
    r = subprocess.run(train_command(out, epoch + 1, "--resume"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise RuntimeError(f"--resume after a kill ({moment}) failed: {r.stderr.strip()[-300:]}")
    return KillTrial(moment, epoch, load_bundle(out).meta["epoch"], leftovers)


# -- a run of several processes (train --nproc 2) killed --------------------------------------
def descendants(pid: int) -> set[int]:
    """The live (not zombie) descendants of ``pid``, from /proc."""
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            kids.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for kid in kids.get(todo.pop(), []):
            found.add(kid)
            todo.append(kid)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@dataclass
class DistributedKill:
    """One kill of a ``train --nproc 2`` run: whom, and what came after."""

    victim: str  # "launcher" or "rank"
    epoch_before: int  # epochs the bundle held after the kill
    resumed_epochs: int  # after --resume --nproc 2
    lingering: int  # processes of the run still alive 60 s after the kill
    lock_left: bool  # a lock file beside the folder once the resumed run ended


def kill_distributed_run(out: Path, rng: random.Random, victim: str, timeout_s: float = 240.0) -> DistributedKill:
    """``train --nproc 2`` into ``out``, SIGKILL ``victim`` (the attnviz launcher, or one training
    process) 0-20 ms into its 2nd-3rd checkpoint save; wait for every process of the run to end,
    load the bundle, ``--resume`` it one epoch further on two processes again."""
    from attnviz.core.bundle import load_bundle

    env = environment()
    launcher = subprocess.Popen(train_command(out, 500, "--nproc", "2"), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_save(launcher, out, rng.randint(2, 3), timeout_s)
        time.sleep(rng.uniform(0.0, 0.02))
        run = descendants(launcher.pid)
        ranks = sorted(p for p in run if descendants(p) == set() and p != launcher.pid)  # the training processes: leaves of the tree
        os.kill(launcher.pid if victim == "launcher" or not ranks else rng.choice(ranks), signal.SIGKILL)
        t_end = time.monotonic() + 60
        while any(alive(p) for p in run | {launcher.pid}) and time.monotonic() < t_end:
            time.sleep(0.1)
        lingering = sum(alive(p) for p in run)
    finally:
        for p in descendants(launcher.pid) | {launcher.pid}:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        launcher.wait()
    epoch = load_bundle(out).meta["epoch"]  # raises if the kill left nothing loadable
    r = subprocess.run(train_command(out, epoch + 1, "--resume", "--nproc", "2"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise RuntimeError(f"--resume --nproc 2 after killing the {victim} failed: {r.stderr.strip()[-300:]}")
    lock = out.parent / f".{out.name}.lock"
    return DistributedKill(victim, epoch, load_bundle(out).meta["epoch"], lingering, lock.exists())
