"""Fault injection for the output lock (issue 25, case 4) and the import: two ``attnviz train`` runs
started at once on the same ``--out``, and an ``attnviz import-hf --out DIR --force`` killed with
SIGKILL at some moment onto a DIR holding a previous bundle. Used by ``test_run_faults.py`` (a few
trials) and ``bench/bench_faults.py`` (many)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from train_faults import ROOT, environment, killed_at_the_end, train_command

LOCKED = "in use by another attnviz"  # the lock's refusal (folder_lock._refusal), with or without the owner's pid
TAKEN = "already holds a model bundle"  # the folder check's, when the other run had already saved
CHANGED = "was saved by another run after this one checked it"  # the stamp's, when the other saved in between


@dataclass
class ConcurrentTrial:
    """Two runs on one folder: how each ended, and what the folder holds."""

    codes: tuple[int, int]
    refusal: str  # the refused run's stderr ("" when none was refused)
    epochs: int | None  # epochs of the bundle left in the folder (None: it does not load)
    leftovers: int  # lock files and .NAME.saving-* folders left beside it

    @property
    def held(self) -> bool:
        """Exactly one ran, the other refused in one line, the folder holds one complete run."""
        one_refused = sorted(self.codes) == [0, 1] and self.refusal.count("\n") == 1 and "Traceback" not in self.refusal
        return one_refused and any(m in self.refusal for m in (LOCKED, TAKEN, CHANGED)) and self.epochs == 3 and not self.leftovers

    @property
    def by_lock(self) -> bool:
        return LOCKED in self.refusal


def concurrent_trains(out: Path, rng: random.Random, timeout_s: float = 180.0) -> ConcurrentTrial:
    """Start two 3-epoch runs on ``out`` at once (the second 0-50 ms after the first)."""
    from attnviz.core.bundle import load_bundle

    env = environment()
    procs = []
    for i in range(2):
        procs.append(subprocess.Popen(train_command(out, 3), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        if i == 0:
            time.sleep(rng.uniform(0.0, 0.05))
    errs = [p.communicate(timeout=timeout_s)[1] for p in procs]
    codes = tuple(p.returncode for p in procs)
    refusal = next((e for p, e in zip(procs, errs) if p.returncode != 0), "")
    try:
        epochs = load_bundle(out).meta.get("epoch")
    except Exception:  # noqa: BLE001 - a folder that does not load is what this counts
        epochs = None
    return ConcurrentTrial(codes, refusal, epochs, len(_beside(out)))


def _beside(out: Path) -> list[Path]:
    """What a run leaves beside its folder: its lock and its unfinished saves."""
    return [p for p in out.parent.iterdir() if p.name == f".{out.name}.lock" or p.name.startswith(f".{out.name}.saving-")]


# -- import-hf killed -------------------------------------------------------------------------
MOMENTS = ("starting", "reading", "saving", "swapping")


@dataclass
class ImportKill:
    """One kill of ``import-hf --force``: when, and what opened afterwards."""

    moment: str  # when it was killed: one of MOMENTS, or "finished" when the import was done first
    opened: str  # "previous" (byte for byte the bundle that was there), "new" (the import's), or the error
    stale_lock: bool  # whether a lock file of the killed import was left
    next_import: str  # "" when a following import-hf --force onto DIR worked, else its error

    @property
    def held(self) -> bool:
        return self.opened in ("previous", "new") and not self.next_import


def kill_during_import(src: Path, out: Path, moment: str, rng: random.Random, timeout_s: float = 120.0) -> ImportKill:
    """``import-hf src --out out --force`` (``out`` a bundle) killed at ``moment``; then ``out`` is opened
    and imported into again."""
    from attnviz.cli import main

    before = _files(out)
    cmd = [sys.executable, "-m", "attnviz", "import-hf", str(src), "--out", str(out), "--force"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with killed_at_the_end(proc):
        seen = _wait_for(proc, out, moment, rng, timeout_s)
    opened = _what_opens(out, before, src)
    stale = (out.parent / f".{out.name}.lock").exists()
    with open(os.devnull, "w") as quiet:
        old, sys.stdout = sys.stdout, quiet
        try:
            code = main(["import-hf", str(src), "--out", str(out), "--force"])
        finally:
            sys.stdout = old
    return ImportKill(seen, opened, stale, "" if code == 0 and _what_opens(out, {}, src) == "new" else f"exit {code}")


def _wait_for(proc: subprocess.Popen, out: Path, moment: str, rng: random.Random, timeout_s: float) -> str:
    """Sleep until ``moment`` of the import (and a little into it); the moment reached, or "finished"."""
    lock, prev = out.parent / f".{out.name}.lock", out.parent / f".{out.name}.previous"
    marks = {"starting": lambda: True, "reading": lock.exists,
             "saving": lambda: any(p.name.startswith(f".{out.name}.saving-") for p in out.parent.iterdir()),
             "swapping": lambda: prev.exists()}
    t_end = time.monotonic() + timeout_s
    while not marks[moment]():
        if proc.poll() is not None:
            return "finished"
        if time.monotonic() > t_end:
            raise RuntimeError(f"import-hf never reached {moment}")
        time.sleep(0.0002)
    time.sleep({"starting": rng.uniform(0.0, 3.0), "reading": rng.uniform(0.0, 0.3)}.get(moment, rng.uniform(0.0, 0.003)))
    return moment if proc.poll() is None else "finished"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


def _what_opens(out: Path, before: dict[str, bytes], src: Path) -> str:
    """"previous" when ``out`` opens as byte for byte ``before``, "new" when it opens as ``src``'s import."""
    from attnviz.core.bundle import load_bundle, previous_path

    try:
        bundle = load_bundle(out)
    except Exception as exc:  # noqa: BLE001 - a folder that does not open is what this counts
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    shown = out if out.exists() else previous_path(out)
    if before and _files(shown) == before:
        return "previous"
    if bundle.meta.get("imported_from") == str(src):
        return "new"
    return "a third bundle: " + str(sorted(bundle.meta))[:200]
