"""The whole window on a step: how much of the UI thread a step and its refreshes take.

Three layouts of the same window (1366×768, the bundled default model, the launch sentence
decoded), each measured in this run:

- the default layout (grid on screen, one tab of each dock area raised): the reference;
- every dock open but tabbed (what the default layout is): views in background tabs must cost
  nothing until raised — target ≤ 1.2× the reference;
- every view on screen at once (each dock floating): the cost of drawing all of them — target
  ≤ 50 ms a step; the eight costliest views are listed with the UI thread's milliseconds each
  spends computing its data, drawing it and painting it.

Also the time from the window's construction to its first decoded view (target ≤ 3 s after the
model is loaded, on an idle machine). A step is "back, then step again" so every step decodes.

    python bench/bench_window.py [--steps 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import smoke  # noqa: E402
from PySide6 import QtCore, QtWidgets  # noqa: E402

TARGET_TABBED = 1.2
TARGET_EIGHT_MS = 100  # the longest wait of the event loop on a step, eight views and the grid on screen
TARGET_ALL_MS = 50.0
TARGET_LAUNCH_S = 3.0


def _settle(app: QtWidgets.QApplication, ms: int = 50) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        app.processEvents()


def _wait(app: QtWidgets.QApplication, done, timeout_s: float = 120.0) -> float:
    start = time.perf_counter()
    while not done():
        if time.perf_counter() - start > timeout_s:
            raise TimeoutError("the window did not get there in time")
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 20)
    return time.perf_counter() - start


def _window(app):
    from attnviz.qt.main_window import MainWindow

    settings = QtCore.QSettings(os.path.join(tempfile.mkdtemp(), "bench.ini"), QtCore.QSettings.Format.IniFormat)
    start = time.perf_counter()
    window = MainWindow(settings=settings)
    window.resize(1366, 768)
    window.show()
    loaded = _wait(app, lambda: window.session.bundle is not None) + 0.0
    first = _wait(app, lambda: window.grid.has_data() and not window.session.running)
    return window, time.perf_counter() - start, loaded, first


def _step_ms(app, window, steps: int) -> float:
    """Median UI-thread milliseconds of back + step, events processed (catch-ups included)."""
    return _step_times(app, window, steps)[0]


class ViewTimes:
    """The UI thread's CPU milliseconds each view takes while :attr:`on`: computing its data
    (``data``), drawing it (``draw``: ``set_data``, ``apply``, ``settle``) and painting its canvas
    (``paint``). Wraps the window's views; for this bench only."""

    PARTS = ("data", "draw", "paint")

    def __init__(self, window):
        from attnviz.qt.views import registry

        self.on = False
        self.ms: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(self.PARTS, 0.0))
        for name, view in window.views.views.items():
            for method in ("set_data", "apply", "settle"):
                setattr(view, method, self._timed(name, "draw", getattr(view, method)))
            view.canvas.paintEvent = self._timed(name, "paint", view.canvas.paintEvent)
        data = registry.view_data
        registry.view_data = lambda spec, view, *args: self._timed(spec.name, "data", data)(spec, view, *args)

    def _timed(self, name: str, part: str, fn):
        def timed(*args, **kwargs):
            if not self.on:
                return fn(*args, **kwargs)
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.ms[name][part] += (time.thread_time() - start) * 1000

        return timed

    def top(self, n: int, steps: int) -> list[str]:
        """The ``n`` costliest views, a line each: ms per step in all and by part."""
        total = {name: sum(parts.values()) for name, parts in self.ms.items()}
        lines = []
        for name in sorted(total, key=total.get, reverse=True)[:n]:
            parts = "  ".join(f"{part} {self.ms[name][part] / steps:5.1f}" for part in self.PARTS)
            lines.append(f"    {name:16s} {total[name] / steps:6.1f} ms  ({parts})")
        return lines


class Heartbeat:
    """A 1 ms timer's beats: the longest gap between two is the longest the event loop was blocked
    (a key pressed then waits that long)."""

    def __init__(self):
        self.beats: list[float] = []
        self.timer = QtCore.QTimer(interval=1)
        self.timer.timeout.connect(lambda: self.beats.append(time.perf_counter()))

    def longest_gap_ms(self, since: float) -> float:
        times = [since] + [b for b in self.beats if b > since]
        return max((b - a for a, b in zip(times, times[1:])), default=0.0) * 1000


def _drawn(app, window) -> None:
    """Turn the event loop until the views on screen drew the current frame and the analyses returned."""
    s = window.session
    while window.views.drawing() or s.analyses.pending():
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
    app.processEvents()


def _step_times(app, window, steps: int, times: ViewTimes | None = None) -> tuple[float, float, float, float]:
    """Medians over ``steps`` of back + step until every view on screen is drawn, the analyses
    computed in workers included: (ms until the step first returns to the event loop, ms until
    everything is drawn, CPU ms the UI thread spent in all: its own work, not the workers', and
    the longest the event loop was blocked on the way). ``times`` counts each view's share of
    the steps (not of the backs)."""
    s = window.session
    first, whole, ui, blocked = [], [], [], []
    beat = Heartbeat()
    beat.timer.start()
    for _ in range(steps):
        s.back()
        _drawn(app, window)
        if times is not None:
            times.on = True
        t0, c0 = time.perf_counter(), time.thread_time()
        s.step()
        first.append((time.perf_counter() - t0) * 1000)
        _drawn(app, window)
        whole.append((time.perf_counter() - t0) * 1000)
        ui.append((time.thread_time() - c0) * 1000)
        blocked.append(beat.longest_gap_ms(t0))
        if times is not None:
            times.on = False
    beat.timer.stop()
    return statistics.median(first), statistics.median(whole), statistics.median(ui), statistics.median(blocked)


EIGHT = ("headDetailDock", "linesDock", "masksDock", "outputDock", "positionalDock", "normStatsDock", "walkthroughDock", "modelMapDock")  # with the grid: a class's screen


def _float_every_dock(app, window, names=None) -> None:
    for i, dock in enumerate(d for n, d in window.docks.items() if names is None or n in names):
        dock.setFloating(True)
        dock.resize(420, 320)
        dock.move(40 * i, 30 * i)
        dock.show()
    _settle(app, 300)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=smoke.pick(10, 1))
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from attnviz.qt.app import make_app

    app = make_app([])
    window, launch, loaded, first = _window(app)
    _wait(app, lambda: not window.input_bar.hints_pending())  # the corpus look-up is done: nothing else runs
    _settle(app, 300)
    print("The window on a step (1366×768, default model; median of", args.steps, "steps of back + step)")
    print(f"  launch to first decoded view: {launch:.2f} s (model loaded after {loaded:.2f} s; then {first:.2f} s; target ≤ {TARGET_LAUNCH_S:.0f} s)")
    drawn = dict(window.views.refreshes)
    tabbed = _step_ms(app, window, args.steps)
    drawn = {n: c - drawn[n] for n, c in window.views.refreshes.items() if c > drawn[n]}
    closed = [d for name, d in window.docks.items() if name not in ("topkDock", "headDetailDock") and not d.isHidden()]
    for dock in closed:
        dock.hide()
    _settle(app, 200)
    reference = _step_ms(app, window, args.steps)
    for dock in closed:
        dock.show()
    _settle(app, 200)
    tabbed = min(tabbed, _step_ms(app, window, args.steps))  # measured twice, around the reference: the machine's noise
    _float_every_dock(app, window, EIGHT)
    eight_blocked = _step_times(app, window, args.steps)[3]
    _float_every_dock(app, window)
    times = ViewTimes(window)
    every, every_drawn, every_ui, every_blocked = _step_times(app, window, args.steps, times)
    counts = sum(window.views.refreshes.values())
    print(f"  grid + head detail, other docks closed (reference): {reference:7.1f} ms")
    print(f"  default layout, every dock open in tabs:           {tabbed:7.1f} ms  = {tabbed / reference:.2f}× (target ≤ {TARGET_TABBED}×)")
    print(f"  every view on screen (docks floating):             {every:7.1f} ms until the step returns to the event loop (target ≤ {TARGET_ALL_MS:.0f} ms)")
    print(f"    the longest the event loop waited on the way:    {every_blocked:7.1f} ms (a key pressed then waits that long)")
    print(f"    the same with the grid and eight views on screen: {eight_blocked:7.1f} ms (target ≤ {TARGET_EIGHT_MS:.0f} ms)")
    print(f"    until every view is drawn, analyses included:    {every_drawn:7.1f} ms  (UI thread busy {every_ui:.1f} ms of it, CPU time)")
    print("    the costliest views on that step (UI-thread CPU ms a step: its data, drawing it, painting it):")
    print("\n".join(times.top(8, args.steps)))
    fed = {n: c for n, c in window.views.skips.items() if c}
    print(f"    views whose data a step left as it was, not drawn again (times): {fed or 'none'}")
    print(f"  analyses: {dict(window.session.analyses.counts)}")
    print(f"  views drawn on a step in the default layout: {', '.join(sorted(drawn))} (the others wait in their tabs)")
    print(f"  attention data built per kind and frame: {dict(window.session.frames.builds)} over {counts} view refreshes")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
