"""``make bench``: every benchmark prints figures as ratios to a reference measured in the same run.

Usage: python bench/run.py [core|decoding|interventions|training|views|long_inputs|window|launch|ui|faults|hf|random_gui ...] [--threads N] [--smoke]

``--smoke`` (``make bench-smoke``): every suite at its smallest size, to check that each still runs
(:mod:`smoke`); the exit status is non-zero when a suite fails.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import smoke  # noqa: E402

SUITES = ["core", "decoding", "interventions", "training", "views", "long_inputs", "window", "launch", "ui", "faults", "hf", "random_gui"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("suites", nargs="*", default=SUITES)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--in-process", action="store_true", help="run the suites in this process (default: one process each)")
    p.add_argument("--smoke", action="store_true", help="every suite at its smallest size: does each still run? (its figures mean nothing)")
    args = p.parse_args()
    if args.smoke:
        os.environ[smoke.ENV] = "1"  # seen by the suites, in this process and in theirs
        print("bench smoke: every suite at its smallest size (its figures are no measurements)\n", flush=True)
    if not args.in_process and len(args.suites) > 1:
        return _in_processes(args.suites, args.threads)
    rc = 0
    for suite in args.suites:
        rc |= _run_suite(suite, args.threads)
        print()
    return rc


def _in_processes(suites: list[str], threads: int) -> int:
    """One process per suite: each measures on a fresh interpreter, and the Qt suites' widgets
    and threads cannot disturb the next one. Names the suites that failed (smoke mode: and the
    seconds each took)."""
    failed, seconds = [], {}
    for suite in suites:
        t0 = time.perf_counter()
        if subprocess.call([sys.executable, os.path.abspath(__file__), suite, "--threads", str(threads)]):
            failed.append(suite)
        seconds[suite] = time.perf_counter() - t0
    if smoke.on():
        print(f"bench smoke: {sum(seconds.values()):.0f} s (" + ", ".join(f"{s} {t:.0f} s" for s, t in seconds.items()) + ")")
    if failed:
        print(f"bench: failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _run_suite(suite: str, threads: int) -> int:
    """Run one suite here: its exit status (a suite's ``run`` or ``main`` that returns an int gives it)."""
    try:
        mod = importlib.import_module(f"bench_{suite}")
    except ModuleNotFoundError as exc:
        if exc.name != f"bench_{suite}":
            raise
        print(f"(no benchmark '{suite}' yet)")
        return 1 if smoke.on() else 0
    if hasattr(mod, "run"):
        out = mod.run(print, threads=threads) if "threads" in mod.run.__code__.co_varnames else mod.run(print)
    else:
        sys.argv = [f"bench_{suite}"]  # its own options at their defaults (not this command's)
        out = mod.main()
    return out if isinstance(out, int) else 0


if __name__ == "__main__":
    sys.exit(main())
