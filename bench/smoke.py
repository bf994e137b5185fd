"""Smoke mode (``bench/run.py --smoke``, ``make bench-smoke``): every suite at its smallest size.

Each suite runs its whole code path once, with the fewest rounds and the smallest inputs, so that
a change the benchmarks no longer fit fails at once (an exception: a non-zero exit status); its
figures are not measurements. The mode is an environment variable, so that the suites' own
processes (``run.py`` starts one per suite) and a suite run on its own see it too::

    ATTNVIZ_BENCH_SMOKE=1 python bench/bench_views.py
"""

from __future__ import annotations

import os

ENV = "ATTNVIZ_BENCH_SMOKE"


def on() -> bool:
    """Whether the benchmarks run in smoke mode."""
    return os.environ.get(ENV, "") not in ("", "0")


def pick(normal, smallest):
    """``smallest`` in smoke mode, else ``normal``."""
    return smallest if on() else normal


def first(table: dict) -> dict:
    """``table`` (sizes, by name), or in smoke mode its first entry alone: the smallest size."""
    return dict(list(table.items())[:1]) if on() else table
