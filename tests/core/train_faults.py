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
