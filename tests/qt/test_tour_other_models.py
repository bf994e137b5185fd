"""The window's tour on a model a stop does not fit (GPT-2: no encoder, no cross-attention; T5:
relative position biases, no sin/cos PE): the stop says so at once, in one line, instead of
waiting two minutes for a view that cannot show it and filling its text with placeholders."""

from __future__ import annotations

import time

import pytest
from window_helpers import close_shared_window, open_shared_window, wait_until

from attnviz.core.tour_data import load_tour, stop_mismatch
from attnviz.qt.tour import start_tour

pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import build_gpt2, build_t5  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # the whole main window

BUILDERS = {"gpt2": build_gpt2, "t5": lambda folder: build_t5(folder, v1_1=True, seed=1)}


@pytest.mark.parametrize("family", sorted(BUILDERS))
def test_a_stop_that_does_not_fit_the_model_says_so_at_once(family, tmp_path, qapp):
    folder = BUILDERS[family](tmp_path / f"tiny-{family}")
    window = open_shared_window(tmp_path, model=folder, src="cat sat on the mat")
    try:
        wait_until(lambda: window.session.bundle is not None and window.session.bundle.path == folder)
        config = window.session.bundle.config
        stops = load_tour("en").stops
        misfit = [i for i, stop in enumerate(stops) if stop_mismatch(stop, config)]
        assert misfit, family  # each of these models misses a stop
        panel = start_tour(window, "en")
        for index in misfit[:3]:
            started = time.monotonic()
            panel.go(index)
            wait_until(lambda: panel.ready, 10_000)
            assert time.monotonic() - started < 10  # not the 120 s wait for a view
            assert stops[index].id in panel.text() and "—" not in panel.text()
        panel.leave()
    finally:
        close_shared_window(window)


def test_why_a_stop_does_not_fit_is_said_in_the_interface_s_language(qapp):
    """The command line's reason is English; the window's, built from the same reason, is in the
    interface's language (no English words of the positional schemes left in 简体中文)."""
    from attnviz.qt.i18n import current_language, install
    from attnviz.qt.tour import misfit_text

    before = current_language()
    try:
        install("zh_CN")
        text = misfit_text("positional-encoding", "positional", ("learned", "sinusoidal"))
        assert "positional-encoding" in text and "位置" in text
        assert not {"sinusoidal", "learned", "embeddings", "explains"} & set(text.replace(";", " ").split())
        assert "层" in misfit_text("cross-attention", "kind", ("cross",))
    finally:
        install(before)
