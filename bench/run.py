"""``make bench``: every benchmark prints figures as ratios to a reference measured in the same run.

Usage: python bench/run.py [core|decoding|interventions|training|views|long_inputs|window|ui|faults|hf|random_gui ...] [--threads N]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SUITES = ["core", "decoding", "interventions", "training", "views", "long_inputs", "window", "ui", "faults", "hf", "random_gui"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("suites", nargs="*", default=SUITES)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--in-process", action="store_true", help="run the suites in this process (default: one process each)")
    args = p.parse_args()
    if not args.in_process and len(args.suites) > 1:
        # One process per suite: each measures on a fresh interpreter, and the Qt suites'
        # widgets and threads cannot disturb the next one.
        import subprocess

        rc = 0
        for suite in args.suites:
            rc |= subprocess.call([sys.executable, os.path.abspath(__file__), suite, "--threads", str(args.threads)])
        return rc
    for suite in args.suites:
        try:
            mod = importlib.import_module(f"bench_{suite}")
        except ModuleNotFoundError as exc:
            if exc.name != f"bench_{suite}":
                raise
            print(f"(no benchmark '{suite}' yet)")
            continue
        if hasattr(mod, "run"):
            mod.run(print, threads=args.threads) if "threads" in mod.run.__code__.co_varnames else mod.run(print)
        else:
            sys.argv = [f"bench_{suite}"]  # its own options at their defaults (not this command's)
            mod.main()
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
