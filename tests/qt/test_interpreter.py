"""The interpreter beside Qt: garbage collected in the GUI thread on a timer, survivors frozen."""

from __future__ import annotations

import gc

from attnviz.qt.app import make_app
from attnviz.qt.interpreter import freeze_survivors


def test_the_app_collects_garbage_on_its_timer_in_the_gui_thread(qapp):
    app = make_app()
    assert app is qapp and app._attnviz_gc.timer.isActive()
    assert app._attnviz_gc.timer.thread() is qapp.thread()


def test_what_survives_a_model_opening_is_left_out_of_later_collections():
    kept = [[i] for i in range(1000)]  # containers: objects the collector tracks
    garbage = []
    garbage.append(garbage)  # a cycle only the collector finds
    before = gc.get_freeze_count()
    del garbage
    freeze_survivors()
    assert gc.get_freeze_count() >= before + len(kept)
    assert gc.collect() == 0  # the cycle was collected first, not frozen
