"""A seeded random walk of 300 user actions through the main window raises nothing."""

from __future__ import annotations

import dataclasses

import pytest
from random_gui import RandomUser, recording_excepthook
from window_helpers import TIMEOUT_MS, broken_config_bundle, wait_idle

from attnviz.core import Transformer
from attnviz.core.bundle import save_bundle
from attnviz.core.model.sites import KINDS

from tiny_models import random_model, tokenizers

pytestmark = pytest.mark.slow  # the whole main window




@pytest.mark.parametrize("seed", [1, 2])
def test_random_actions_raise_nothing(qtbot, window, tmp_path, seed):
    bad = [broken_config_bundle(tmp_path / "<b>bad", norm="<h1>x</h1>"), tmp_path / "missing"]
    out = tmp_path / "exports"
    out.mkdir()
    user = RandomUser(window, seed, out, bad, lambda: wait_idle(qtbot, window))
    with recording_excepthook() as errors:
        user.run(150)
        wait_idle(qtbot, window)
    assert not errors, errors[0]
    assert sum(user.counts.values()) == 150 and len(user.counts) >= 10, user.counts
    assert window.session.bundle is not None and window.message_bar.text().count("\n") == 0


def test_models_without_layers_show_nothing_and_raise_nothing(qtbot, window, tmp_path):
    """A bundle with 0 encoder and/or decoder layers (``train --layers 0``, or from elsewhere):
    every view shows what there is, and random actions raise nothing."""
    src, tgt = tokenizers()
    cfg = random_model().config
    for enc, dec in ((0, 2), (2, 0), (0, 0)):
        model = Transformer(dataclasses.replace(cfg, n_encoder_layers=enc, n_decoder_layers=dec)).eval()
        path = save_bundle(tmp_path / f"e{enc}d{dec}", model, src, tgt, {"name": "layerless"})
        with recording_excepthook() as errors:
            window.open_model(path)
            qtbot.waitUntil(lambda p=path: window.session.bundle.path == p, timeout=TIMEOUT_MS)
            wait_idle(qtbot, window)
            for dock in window.docks.values():
                dock.show()
                dock.raise_()
                wait_idle(qtbot, window)
            for kind in KINDS:
                window.views["walkthrough"].chose.emit({"kind": kind, "layer": 0, "head": 0, "mode": "head", "query": 0})
                window.views.selection.update(kind=kind, layer=0, head=0, mode="head")  # every linked view follows
            RandomUser(window, enc * 10 + dec, tmp_path, [], lambda: wait_idle(qtbot, window)).run(40)
            wait_idle(qtbot, window)
        assert not errors, errors[0]
        assert window.session.bundle.path == path
        assert not window.views.refresh_failures  # no view said it could not update
