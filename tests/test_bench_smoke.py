"""``make bench-smoke`` (``bench/run.py --smoke``): every benchmark suite runs at its smallest size,
and a suite that fails fails the command."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "bench" / "run.py"


def _bench(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, str(RUN), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_every_suite_has_its_benchmark():
    tree = ast.parse(RUN.read_text(encoding="utf-8"))
    suites = next(ast.literal_eval(node.value) for node in tree.body
                  if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SUITES")
    assert suites and all((ROOT / "bench" / f"bench_{name}.py").is_file() for name in suites), suites


def test_a_suite_that_fails_fails_the_smoke_run():
    r = _bench("no_such_suite", "nor_this_one", "--smoke")
    assert r.returncode != 0
    assert "failed: no_such_suite, nor_this_one" in r.stderr


@pytest.mark.slow  # a subprocess that draws the views (~10 s)
def test_the_views_benchmark_runs_on_the_apps_session():
    r = _bench("views", "--smoke")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "linked update, all four attention views shown" in r.stdout
