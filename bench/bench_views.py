"""How long the views take to show a new decoding step or a new selection (update + paint).

Sizes: the default model (3 layers × 4 heads, 12 tokens) and a BASE config (6 layers ×
8 heads, 20 tokens). Each figure is the median over repeated updates, in milliseconds of wall
time (and of this process's CPU time, which other load on the machine does not inflate), and
its ratio to a reference measured in the same run: one plain 20×20 ``ImageItem`` updated
and repainted.

"linked update": the window's :class:`ViewSet` with its one linked selection; a new selection
(layer, head) or a new step reaches every *visible* linked view (hidden ones follow when shown),
timed until the event loop has painted them. Two layouts: the window's default (the grid and
the head detail shown; lines and masks are tabs behind the head detail) and all four attention
views shown at once. Target: ≤ 16 ms (holding → stays fluid).

    python bench/bench_views.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

if "QT_QPA_PLATFORM" not in os.environ and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyqtgraph as pg  # noqa: E402
import smoke  # noqa: E402
from PySide6 import QtWidgets  # noqa: E402

from attnviz.core.model.sites import KINDS  # noqa: E402
from attnviz.qt.app import make_app  # noqa: E402
from attnviz.qt.frame_cache import FrameCache  # noqa: E402
from attnviz.qt.sample_data import pieces, sample_attention, sample_masks  # noqa: E402
from attnviz.qt.session import Session  # noqa: E402
from attnviz.qt.views.attention_grid import QtAttentionGridView  # noqa: E402
from attnviz.qt.views.head_detail import QtHeadDetailView  # noqa: E402
from attnviz.qt.views.lines import QtLinesView  # noqa: E402
from attnviz.qt.views.masks import QtMasksView  # noqa: E402
from attnviz.qt.views.registry import ViewSet  # noqa: E402

SIZES = {
    "default (3 layers × 4 heads, 12 tokens)": (3, 4, 12),
    "BASE (6 layers × 8 heads, 20 tokens)": (6, 8, 20),
}
TARGET_MS = 16.0


def _steps(n_layers: int, n_heads: int, n_tokens: int, count: int = 6):
    """Per step: the data a step hands to each view (the target grows by one token)."""
    source = pieces(n_tokens, prefix="源")
    target = pieces(n_tokens, first="SOS")
    steps = []
    for i in range(count):
        t = target[: n_tokens - count + 1 + i]
        kw = dict(n_layers=n_layers, n_heads=n_heads, source=source, target=t, seed=i)
        cross = sample_attention("cross", **kw)
        steps.append({
            "grid": cross,
            "head": {k: sample_attention(k, **kw) for k in KINDS},
            "lines": cross,
            "mask": sample_masks(n_layers=n_layers, n_heads=n_heads, target=t, source=source, seed=i),
        })
    return steps


def _time(update, repeats: int) -> float:
    return _time_both(update, repeats)[0]


def _time_both(update, repeats: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``update(i)`` plus the paint it causes."""
    app = QtWidgets.QApplication.instance()
    wall, cpu = [], []
    for i in range(repeats + 3):
        t0, c0 = time.perf_counter(), time.process_time()
        update(i)
        app.processEvents()
        t1, c1 = time.perf_counter(), time.process_time()
        if i >= 3:  # warm-up
            wall.append((t1 - t0) * 1000)
            cpu.append((c1 - c0) * 1000)
    return statistics.median(wall), statistics.median(cpu)


@dataclass(frozen=True, eq=False)
class _SampleResult:
    """One step of the sample data as the session's current result: what the session reads of a
    :class:`~attnviz.core.decoding.result.DecodingResult` besides its attention (one record per row)."""

    steps: tuple[int, ...]
    src_pieces: tuple[str, ...]
    input_pieces: tuple[str, ...]
    output_pieces: tuple[str, ...] = ()  # no predictions: the views draw the attention alone


class _SampleSession(Session):
    """The app's :class:`Session` (its signals, analyses, frame keys and per-frame cache, as the
    :class:`ViewSet` uses them) with the sample data of one step, ``steps[index]``, as its current
    frame in place of a model's decoding."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps
        self.index = 0
        self._results = [_sample_result(step) for step in steps]
        self.frames = _SampleFrames(self)

    @property
    def current(self) -> _SampleResult:
        return self._results[self.index]

    def n_layers(self, kind):
        data = self.steps[self.index]["head"][kind]
        return 0 if data is None else data.n_layers


class _SampleFrames(FrameCache):
    """The session's frame cache, its attention and masks the sample step's."""

    def attention_data(self, kind):
        session = self._session
        return self.derive(("attention", kind), lambda: session.steps[session.index]["head"][kind])

    def mask_data(self):
        session = self._session
        return self.derive("mask", lambda: session.steps[session.index]["mask"])


def _sample_result(step) -> _SampleResult:
    cross = step["head"]["cross"]
    return _SampleResult(tuple(range(len(cross.query_labels))), cross.key_labels, cross.query_labels)


LINKED = ("grid", "head", "lines", "mask")
LAYOUTS = {
    "window's default layout (grid + head detail shown)": ("grid", "head"),
    "all four attention views shown": LINKED,
}
_SIZES = {"grid": (760, 560), "head": (640, 560), "lines": (640, 560), "mask": (900, 760)}


def _linked_update(steps, shown: tuple[str, ...], repeats: int) -> dict[str, tuple[float, float]]:
    """(wall, CPU) ms of a selection change and of a step reaching the ``shown`` linked views."""
    session = _SampleSession(steps)
    views = ViewSet(session)
    for name in LINKED:
        views.frames[name].resize(*_SIZES[name])
        if name in shown:
            views.frames[name].show()
    for name in shown:
        views.refresh(views[name])
    QtWidgets.QApplication.processEvents()
    n_layers, n_heads = steps[0]["head"]["cross"].weights.shape[:2]

    def select(i):
        views.selection.update(layer=(i * 5) % n_layers, head=(i * 3) % n_heads, mode="head")

    def step(i):
        session.index = (i + 1) % len(steps)
        for name in shown:
            views.refresh(views[name])

    out = {"selection": _time_both(select, repeats), "step": _time_both(step, repeats)}
    for frame in views.frames.values():
        frame.close()
    return out


def _line_layer_latency(view: QtLinesView, steps, repeats: int) -> float:
    """Time from a new step to its line layer (drawn in a worker thread) being on screen."""
    app = QtWidgets.QApplication.instance()
    samples = []
    for i in range(repeats):
        t0 = time.perf_counter()
        view.set_data(steps[(i + 1) % len(steps)]["lines"])
        view.repaint()
        while True:
            app.processEvents()
            if not view.lines.pending():
                break
            time.sleep(0.0005)
        view.repaint()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def _reference(repeats: int) -> float:
    win = pg.GraphicsLayoutWidget()
    win.resize(640, 480)
    plot = win.addPlot()
    img = pg.ImageItem(axisOrder="row-major")
    plot.addItem(img)
    frames = [np.random.default_rng(i).random((20, 20)).astype(np.float32) for i in range(4)]
    win.show()

    def update(i):
        img.setImage(frames[i % 4], autoLevels=False, levels=(0, 1))
        win.repaint()

    ms = _time(update, repeats)
    win.close()
    return ms


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; ``argv`` as on the command line (``None``: the defaults, as ``make bench`` calls it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=smoke.pick(40, 1))
    args = parser.parse_args([] if argv is None else argv)
    make_app()
    ref = _reference(args.repeats)
    print(f"reference: one 20×20 ImageItem update + repaint = {ref:.2f} ms")
    for title, (n_layers, n_heads, n_tokens) in smoke.first(SIZES).items():
        steps = _steps(n_layers, n_heads, n_tokens)
        views = {"grid": QtAttentionGridView(), "head": QtHeadDetailView(), "lines": QtLinesView(), "mask": QtMasksView()}
        sizes = {"grid": (760, 560), "head": (640, 560), "lines": (640, 560), "mask": (900, 760)}
        for name, view in views.items():
            view.resize(*sizes[name])
            view.set_data(steps[0][name])
            view.show()
        if "head" in views:
            views["head"].select(kind="cross")
        QtWidgets.QApplication.processEvents()
        print(f"\n{title}")
        total = 0.0
        per_view: dict[str, float] = {}
        for name, view in views.items():
            def update(i, view=view, name=name):
                view.set_data(steps[i % len(steps)][name])
                view.repaint()

            ms = _time(update, args.repeats)
            total += ms
            per_view[name] = ms
            print(f"  {name:<6} {ms:7.2f} ms   ×{ms / ref:5.1f} reference")
            if name == "lines":
                lag = _line_layer_latency(view, steps, max(smoke.pick(5, 1), args.repeats // 4))
                print(f"         {lag:7.2f} ms   until all lines are drawn off the GUI thread (not in the total)")
        verdict = "ok" if total <= TARGET_MS else "over target"
        print(f"  {'all':<6} {total:7.2f} ms   ×{total / ref:5.1f} reference   (target ≤ {TARGET_MS:.0f} ms: {verdict})")
        shown = per_view["grid"] + per_view["head"]
        verdict = "ok" if shown <= TARGET_MS else "over target"
        print(f"  grid + head detail (the docks shown side by side by default): {shown:.2f} ms   ({verdict})")
        for view in views.values():
            view.close()
        _print_linked(steps, args.repeats, ref)
    return 0


NOTE_ALL_FOUR = (
    "    note: with all four shown the masks view is most of the time (six heatmaps and three colour\n"
    "    bars, redrawn by the CPU); in the window it is a tab behind the head detail and, hidden, costs\n"
    "    nothing until it is shown."
)


def _print_linked(steps, repeats: int, ref: float) -> None:
    for layout, shown in LAYOUTS.items():
        print(f"  linked update, {layout}:")
        over = False
        for what, (wall, cpu) in _linked_update(steps, shown, repeats).items():
            verdict = "ok" if wall <= TARGET_MS else ("ok in CPU time" if cpu <= TARGET_MS else "over target")
            over |= cpu > TARGET_MS
            print(f"    {what:<9} {wall:7.2f} ms (CPU {cpu:6.2f} ms)   ×{wall / ref:5.1f} reference   (target ≤ {TARGET_MS:.0f} ms: {verdict})")
        if over and "mask" in shown:
            print(NOTE_ALL_FOUR)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
