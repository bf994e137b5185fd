"""Fault benchmark, three kinds of trials (counts by environment variable; one of each in smoke mode):

* training subprocesses killed with SIGKILL during checkpoint saves (``ATTNVIZ_KILL_TRIALS``, 20),
  each followed by loading the bundle and ``--resume``;
* two ``attnviz train`` runs started at once on the same ``--out`` (``ATTNVIZ_CONCURRENT_TRIALS``, 6):
  exactly one runs, the other refuses in one line, the folder holds one complete run;
* ``attnviz import-hf --out DIR --force`` killed with SIGKILL while starting, reading, saving or
  swapping its bundle in, DIR holding a previous bundle (``ATTNVIZ_IMPORT_KILL_TRIALS``, 12):
  afterwards the previous bundle or the new one opens, and the stale lock is taken over by the
  next import;
* ``attnviz train --nproc 2`` with its launcher or one of its training processes killed with
  SIGKILL during a checkpoint save (``ATTNVIZ_DDP_KILL_TRIALS``, 20, the two in turn): within a
  minute no process of the run is left, the bundle loads, ``--resume --nproc 2`` finishes the next
  epoch and leaves no lock behind.

Prints how many trials held, where they were when they died, and the seconds per trial; the exit
status is 1 when a trial did not hold.
"""

from __future__ import annotations

import collections
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS / "core"), str(TESTS)]

import smoke  # noqa: E402
from run_faults import MOMENTS, concurrent_trains, kill_during_import  # noqa: E402
from train_faults import kill_distributed_run, kill_during_save  # noqa: E402

VICTIMS = ("rank", "launcher")  # what a distributed trial kills, in turn


def run(out=print) -> int:
    """Every kind of trial; the exit status is 1 when a trial did not hold."""
    failed = kill_trials(out, _trials("ATTNVIZ_KILL_TRIALS", 20))
    failed += concurrent_trials(out, _trials("ATTNVIZ_CONCURRENT_TRIALS", 6))
    failed += import_kill_trials(out, _trials("ATTNVIZ_IMPORT_KILL_TRIALS", 12))
    failed += distributed_kill_trials(out, _trials("ATTNVIZ_DDP_KILL_TRIALS", 20))
    return 1 if failed else 0


def _trials(variable: str, default: int) -> int:
    """The number of trials ``variable`` asks for: ``default``, one in smoke mode."""
    return int(os.environ.get(variable, smoke.pick(default, 1)))


def kill_trials(out, trials: int) -> int:
    rng = random.Random(2024)
    moments: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    leftovers = 0
    t0 = time.perf_counter()
    for i, trial in _ran(trials, "attnviz-kill-", failures, lambda i, folder: kill_during_save(folder, rng)):
        moments[trial.moment] += 1
        leftovers += trial.leftovers
        if trial.resumed_epochs != trial.epoch_before + 1:
            failures.append(f"trial {i + 1}: resumed to epoch {trial.resumed_epochs}, expected {trial.epoch_before + 1}")
    seconds = (time.perf_counter() - t0) / max(1, trials)
    out(f"kill -9 during checkpoint saves: {trials - len(failures)}/{trials} held (bundle loads, --resume finishes the next epoch)")
    out("  killed while: " + ", ".join(f"{k} {v}" for k, v in sorted(moments.items())) + f"; {leftovers} .NAME.saving-* folder(s) left behind")
    out(f"  {seconds:.1f} s per trial (train, kill, load, resume)")
    return _failed(out, failures)


def concurrent_trials(out, trials: int) -> int:
    rng = random.Random(25)
    held = by_lock = 0
    failures: list[str] = []
    t0 = time.perf_counter()
    for i, trial in _ran(trials, "attnviz-twice-", failures, lambda i, folder: concurrent_trains(folder, rng)):
        held += trial.held
        by_lock += trial.by_lock
        if not trial.held:
            failures.append(f"trial {i + 1}: exit {trial.codes}, epochs {trial.epochs}, {trial.leftovers} left beside, {trial.refusal[-200:]!r}")
    seconds = (time.perf_counter() - t0) / max(1, trials)
    out(f"two trains at once on one --out: {held}/{trials} held (one ran, the other refused in one line, one complete run left)")
    out(f"  refused by the lock {by_lock}, by the folder check {held - by_lock}; {seconds:.1f} s per trial")
    return _failed(out, failures)


def import_kill_trials(out, trials: int) -> int:
    try:
        from tiny_marian import build_marian  # needs transformers (the hf extra)
    except ImportError as exc:
        out(f"kill -9 during import-hf: not run ({exc.name} is not installed: pip install 'attnviz[hf]')")
        return 0
    from hostile_bundles import valid_bundle

    rng = random.Random(26)
    opened: collections.Counter[str] = collections.Counter()
    moments: collections.Counter[str] = collections.Counter()
    stale, failures = 0, []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="attnviz-import-kill-") as tmp:
        src, previous = build_marian(Path(tmp) / "hf"), valid_bundle(Path(tmp), "previous")
        for i, trial in _ran(trials, "attnviz-import-kill-", failures,
                             lambda i, folder: _import_kill(folder, src, previous, MOMENTS[i % len(MOMENTS)], rng)):
            moments[trial.moment] += 1
            opened[trial.opened if trial.opened in ("previous", "new") else "broken"] += 1
            stale += trial.stale_lock
            if not trial.held:
                failures.append(f"trial {i + 1} ({trial.moment}): opened {trial.opened!r}, next import {trial.next_import!r}")
    seconds = (time.perf_counter() - t0) / max(1, trials)
    out(f"kill -9 during import-hf --force onto a bundle: {trials - len(failures)}/{trials} held (a bundle opens, the next import works)")
    out("  killed while: " + ", ".join(f"{k} {v}" for k, v in sorted(moments.items())) + "; opened: "
        + ", ".join(f"{k} {v}" for k, v in sorted(opened.items())) + f"; {stale} stale lock(s) taken over")
    out(f"  {seconds:.1f} s per trial (import, kill, open, import again)")
    return _failed(out, failures)


def distributed_kill_trials(out, trials: int) -> int:
    rng = random.Random(7)
    failures: list[str] = []
    victims: collections.Counter[str] = collections.Counter()
    t0 = time.perf_counter()
    for i, trial in _ran(trials, "attnviz-ddp-kill-", failures, lambda i, folder: kill_distributed_run(folder, rng, VICTIMS[i % 2]),
                         name=lambda i: f"trial {i + 1} ({VICTIMS[i % 2]})"):
        victims[trial.victim] += 1
        if trial.lingering or trial.lock_left or trial.resumed_epochs != trial.epoch_before + 1:
            failures.append(f"trial {i + 1} ({trial.victim}): {trial}")
    seconds = (time.perf_counter() - t0) / max(1, trials)
    out(f"kill -9 of a train --nproc 2 run during a save: {trials - len(failures)}/{trials} held "
        f"(no process left, the bundle loads, --resume --nproc 2 finishes, no lock left)")
    out("  killed: " + ", ".join(f"{k} {v}" for k, v in sorted(victims.items())) + f"; {seconds:.1f} s per trial")
    return _failed(out, failures)


def _failed(out, failures: list[str]) -> int:
    """Print each failed trial; how many there were."""
    for line in failures:
        out("  FAILED " + line)
    return len(failures)


def _ran(trials: int, prefix: str, failures: list[str], run_trial, name=lambda i: f"trial {i + 1}"):
    """Trial ``i`` is ``run_trial(i, folder)``, ``folder`` to be made in a temporary directory
    (removed after), for each of ``trials``: (i, trial) of each that ran; each that raised adds
    "``name(i)``: what went wrong" to ``failures``."""
    for i in range(trials):
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            try:
                trial = run_trial(i, Path(tmp) / "m")
            except Exception as exc:  # noqa: BLE001 - a failed trial is the figure this reports
                failures.append(f"{name(i)}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
        yield i, trial


def _import_kill(out: Path, src: Path, previous: Path, moment: str, rng: random.Random):
    """``kill_during_import`` of ``src`` onto ``out``, a copy of the bundle ``previous``."""
    shutil.copytree(previous, out)
    return kill_during_import(src, out, moment, rng)
