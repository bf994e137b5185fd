"""Fault benchmark: training subprocesses killed with SIGKILL during checkpoint saves (20 trials by
default, ``ATTNVIZ_KILL_TRIALS`` to change), each followed by loading the bundle and ``--resume``.

Prints how many trials held (the bundle loaded and the resumed run finished one more epoch),
where the saves were when they died, and the seconds per trial.
"""

from __future__ import annotations

import collections
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))

from train_faults import kill_during_save  # noqa: E402


def run(out=print) -> None:
    trials = int(os.environ.get("ATTNVIZ_KILL_TRIALS", "20"))
    rng = random.Random(2024)
    moments: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    leftovers = 0
    t0 = time.perf_counter()
    for i in range(trials):
        with tempfile.TemporaryDirectory(prefix="attnviz-kill-") as tmp:
            try:
                trial = kill_during_save(Path(tmp) / "m", rng)
            except Exception as exc:  # noqa: BLE001 - a failed trial is the figure this reports
                failures.append(f"trial {i + 1}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            moments[trial.moment] += 1
            leftovers += trial.leftovers
            if trial.resumed_epochs != trial.epoch_before + 1:
                failures.append(f"trial {i + 1}: resumed to epoch {trial.resumed_epochs}, expected {trial.epoch_before + 1}")
    seconds = (time.perf_counter() - t0) / max(1, trials)
    out(f"kill -9 during checkpoint saves: {trials - len(failures)}/{trials} held (bundle loads, --resume finishes the next epoch)")
    out("  killed while: " + ", ".join(f"{k} {v}" for k, v in sorted(moments.items())) + f"; {leftovers} .NAME.saving-* folder(s) left behind")
    out(f"  {seconds:.1f} s per trial (train, kill, load, resume)")
    for line in failures:
        out("  FAILED " + line)
