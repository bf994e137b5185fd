"""The interpreter's settings beside Qt: short GIL turns, garbage collected in the GUI thread, survivors frozen."""

from __future__ import annotations

import gc
import sys

from attnviz.qt.app import make_app
from attnviz.qt.interpreter import SWITCH_INTERVAL_S, freeze_survivors


def test_the_app_takes_short_gil_turns_and_collects_on_its_timer(qapp):
    app = make_app()
    assert app is qapp
    assert sys.getswitchinterval() == SWITCH_INTERVAL_S
    assert app._attnviz_gc.timer.isActive()


def test_what_survives_a_model_opening_is_left_out_of_later_collections():
    kept = [[i] for i in range(1000)]  # containers: objects the collector tracks
    garbage = []
    garbage.append(garbage)  # a cycle only the collector finds
    before = gc.get_freeze_count()
    del garbage
    freeze_survivors()
    assert gc.get_freeze_count() >= before + len(kept)
    assert gc.collect() == 0  # the cycle was collected first, not frozen
