"""Every bundle of the hostile corpus, opened in the window: one line in the message bar, and
the window keeps working with the model it had."""

from __future__ import annotations

import pytest
from hostile_bundles import hostile_bundles
from window_helpers import TIMEOUT_MS, close_window, open_window, wait_idle

pytestmark = pytest.mark.slow  # the whole main window


@pytest.fixture
def window(qtbot, tmp_path):
    w = open_window(qtbot, tmp_path)
    yield w
    close_window(w)


def test_every_hostile_bundle_gives_one_line_and_keeps_the_model(qtbot, window, tmp_path):
    corpus = hostile_bundles(tmp_path / "corpus")
    assert corpus
    before = window.session.bundle
    for name, path in corpus:
        window.show_message("info", "")
        window.message_bar.setProperty("level", None)
        with qtbot.waitSignal(window.session.busyChanged, timeout=TIMEOUT_MS, check_params_cb=lambda busy, _w: not busy):
            window.open_model(path)
        wait_idle(qtbot, window)
        text = window.message_bar.text()
        assert window.message_bar.property("level") == "error", (name, text)
        assert text and "\n" not in text and "Traceback" not in text, (name, text)
        assert window.session.bundle is before, name
        assert window.model_path.resolve() == before.path.resolve(), name
        window.session.reset()
        assert window.session.step() is not None, name  # the previous model still decodes
