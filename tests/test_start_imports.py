"""What starting imports: the command line's parser leaves torch out, and opening the window
leaves scipy out (a second of the start on this machine) until an analysis that needs it runs; the
rank correlation it gave is computed in numpy and equals it."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import spearmanr

from attnviz.core.analysis.attention_vs_attribution import average_ranks, spearman


def test_importing_the_main_window_leaves_scipy_out():
    code = "import sys, attnviz.qt.main_window; print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


def test_the_command_line_s_parser_leaves_torch_out():
    """The app's start builds the whole parser before its splash is shown: no command's options may
    load torch (0.8 s here) to read a default."""
    code = "import sys, attnviz.cli; attnviz.cli.build_parser(); print('torch' in sys.modules, 'PySide6' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split()[0] == "False", out.stdout


@pytest.mark.parametrize("seed", range(5))
def test_spearman_equals_scipys_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=30)
    b = a + rng.normal(size=30)
    ties_a, ties_b = np.round(a), np.round(b * 2) / 2  # many ties
    for x, y in ((a, b), (ties_a, ties_b), (ties_a, b)):
        assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    np.testing.assert_array_equal(average_ranks(np.array([3.0, 1.0, 3.0, 2.0])), [3.5, 1.0, 3.5, 2.0])
