"""A Hugging Face Marian folder opens in the window like a bundle, decodes with every view, and
exports from the command line."""

from __future__ import annotations

import pytest
from PySide6 import QtGui
from window_helpers import TIMEOUT_MS, close_window, open_window, wait_idle

from attnviz.cli import main

pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_marian import SOURCES, build_marian  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # the whole main window


@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory):
    return build_marian(tmp_path_factory.mktemp("hf") / "tiny-marian")


def test_the_window_opens_a_marian_folder_and_decodes(qtbot, tmp_path, marian_dir):
    window = open_window(qtbot, tmp_path)
    try:
        with qtbot.waitSignal(window.session.busyChanged, timeout=TIMEOUT_MS, check_params_cb=lambda busy, _w: not busy):
            window.open_model(marian_dir)
        wait_idle(qtbot, window)
        assert window.session.bundle.path == marian_dir and window.model_path == marian_dir
        window.session.set_inputs(SOURCES[0], "")
        window.session.run_to_end()
        wait_idle(qtbot, window)
        decoding = window.session.decoding
        assert decoding is not None and len(decoding.steps) > 0
        assert decoding.all_attention("cross").shape[:2] == (2, 4)  # 2 decoder layers, 4 heads
        assert marian_dir.name in window.windowTitle()
        shot = window.grab()
        assert not shot.isNull()
        shot.save(str(tmp_path / "marian-window.png"))
        assert QtGui.QImage(str(tmp_path / "marian-window.png")).width() > 0
    finally:
        close_window(window)


@pytest.mark.parametrize("view", ["grid", "head", "walkthrough", "pe"])
def test_export_draws_a_marian_folder(qapp, tmp_path, marian_dir, view):
    out = tmp_path / "out"
    assert main(["export", "--model", str(marian_dir), "--src", SOURCES[1], "--view", view, "--out", str(out)]) == 0
    files = list(out.iterdir())
    assert files and all(f.stat().st_size > 0 for f in files)
