"""The launch timeline of a real process (``python -m attnviz`` with the bundled default model):
process start → a window on screen (the start splash) → the main window → the model loaded → the
first decoded view. Reference, in the same run: a bare PySide6 process that shows one label, the
least any Qt app can do. The app writes its moments through ``ATTNVIZ_TIMELINE`` and quits.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import smoke

from attnviz.qt.app import TIMELINE_ENV

TARGET_WINDOW_S = 1.5  # a window on screen after the process starts (an idle machine)
TARGET_DECODED_S = 4.0  # the first decoded view
BARE_QT = ("import json, sys, time; from PySide6 import QtWidgets; app = QtWidgets.QApplication([]); "
           "w = QtWidgets.QLabel('x'); w.show(); app.processEvents(); "
           "open(sys.argv[1], 'w').write(json.dumps({'splash': time.time()}))")


def _moments(args: list[str], folder: Path) -> dict[str, float]:
    """Seconds after the process started of each moment a process writes to its timeline file."""
    out = folder / "timeline.json"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", TIMELINE_ENV: str(out), "XDG_CONFIG_HOME": str(folder / "config")}
    start = time.time()
    subprocess.run([sys.executable, *args, str(out)] if args[0] == "-c" else [sys.executable, *args], env=env, check=True,
                   capture_output=True, timeout=600)
    return {k: v - start for k, v in json.loads(out.read_text()).items()}


def run(report) -> None:
    rounds = smoke.pick(3, 1)
    app, bare = [], []
    for _ in range(rounds):  # alternating, so a load that comes and goes falls on both
        with tempfile.TemporaryDirectory() as d:
            bare.append(_moments(["-c", BARE_QT], Path(d))["splash"])
        with tempfile.TemporaryDirectory() as d:
            app.append(_moments(["-m", "attnviz"], Path(d)))
    ref = statistics.median(bare)
    med = {k: statistics.median(m[k] for m in app) for k in ("splash", "window", "loaded", "decoded")}
    report(f"Launch timeline ({rounds} process starts, medians; reference: a bare Qt window after {ref:.2f} s)")
    report(f"  a window on screen (start splash): {med['splash']:.2f} s  {med['splash'] / ref:.2f}× the bare Qt window "
           f"(target ≤ {TARGET_WINDOW_S} s on an idle machine)")
    report(f"  main window shown:                 {med['window']:.2f} s")
    report(f"  model loaded:                      {med['loaded']:.2f} s")
    report(f"  first decoded view:                {med['decoded']:.2f} s  (target ≤ {TARGET_DECODED_S} s on an idle machine)")


if __name__ == "__main__":
    run(print)
