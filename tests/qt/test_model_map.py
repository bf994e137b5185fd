"""The model map: drawn from the open model's config, each block opens the view that shows it
(with its kind and layer selected), the current step's path is lit, an ablated head's layer is
marked; in the window a click raises the block's dock."""

from __future__ import annotations

import pytest
from PySide6 import QtCore

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.bundle import load_bundle
from attnviz.paths import default_model
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.model_map import block_target
from attnviz.qt.views.registry import VIEW_NAMES, feed_now, on_screen, view_spec


@pytest.fixture(scope="module")
def default():
    return load_bundle(default_model())


def map_of(loaded, model, source: str):
    """``loaded("model-map", ...)``, an encoder-only model's masked-token prediction awaited: (spec, view, session, drawn)."""
    spec, view, session, ok = loaded("model-map", model=model, source=source)
    if session.current is None:
        session.finish_runs()
        ok = feed_now(spec, view, session, ViewChoice())
    return spec, view, session, ok


def emitted(view, click) -> list:
    """What ``click()`` makes the view emit, in order: its ``chose`` changes and its ``viewRequested`` names."""
    out: list = []
    view.chose.connect(out.append)
    view.viewRequested.connect(out.append)
    try:
        click()
    finally:
        view.chose.disconnect(out.append)
        view.viewRequested.disconnect(out.append)
    return out


def click_point(view, key: str) -> QtCore.QPoint:
    """Where block ``key`` is on the canvas's viewport."""
    item = view.block_items()[key]
    return view.canvas.mapFromScene(item.mapToScene(item.rect().center()))


def test_clicking_an_attention_block_selects_it_in_the_grid(qtbot, loaded, default):
    _, view, _, ok = loaded("model-map", model=default, source="我喜欢吃鱼。")
    assert ok
    assert emitted(view, lambda: view.click_block("decoder.layers.0.cross_attn")) == [{"kind": "cross", "layer": 0}, "grid"]
    assert emitted(view, lambda: view.click_block("encoder.layers.2.ffn")) == [{"kind": "encoder", "layer": 2}, "ffn"]  # a compact row's chip
    assert emitted(view, lambda: view.click_block("decoder.embed.positional")) == ["pe"]  # no selection: the view shows every position
    assert emitted(view, lambda: view.click_block("decoder.final_norm")) == [{"kind": "decoder", "layer": 2}, "norm"]
    assert emitted(view, lambda: view.click_block("generator.softmax")) == ["output"]


def test_a_mouse_click_on_a_block_does_what_click_block_does(qtbot, loaded, default):
    _, view, _, _ = loaded("model-map", model=default, source="我喜欢吃鱼。")
    view.show()
    qtbot.waitExposed(view)
    view.settle()
    point = click_point(view, "decoder.layers.0.self_attn.mask")
    click = emitted(view, lambda: qtbot.mouseClick(view.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=point))
    assert click == [{"kind": "decoder", "layer": 0}, "mask"]


@pytest.mark.parametrize("family", [None, "gpt2", "bert", "t5"])
def test_every_block_opens_a_registered_view_that_applies_to_the_model(loaded, default, tiny_family, family):
    model = default if family is None else tiny_family(family)
    _, view, _, ok = map_of(loaded, model, "我喜欢吃鱼。" if family is None else "the [MASK] runs")
    assert ok and view.has_data()
    config = model.config
    for block in view.diagram.blocks():
        name, changes = block_target(view.diagram, block)
        assert name in VIEW_NAMES and view_spec(name).applies(config), (block.key, name)
        if "kind" in changes:
            assert changes["kind"] in view_spec(name).kinds or view_spec(name).stack_view
            assert 0 <= changes["layer"] < model.config.n_encoder_layers + model.config.n_decoder_layers


def test_the_current_step_lights_the_decoder_and_the_encoder_ran_once(loaded, default):
    _, view, session, _ = loaded("model-map", model=default, source="我喜欢吃鱼。")
    decoder = [b.key for r in view.diagram.column("decoder").rows for b in r.blocks]
    encoder = [b.key for r in view.diagram.column("encoder").rows for b in r.blocks]
    assert view.lit_keys() == tuple(decoder)
    items = view.block_items()
    assert {items[k].state for k in encoder} == {"once"} and view.given.position == session.current_row()
    assert view.column_state("decoder") == "active" and view.map.arrows[True].path().length() > 0


def test_an_ablated_head_marks_its_layer(loaded, default):
    spec, view, session, _ = loaded("model-map", model=default, source="我喜欢吃鱼。")
    session.set_ablation(HeadSet(frozenset({("cross", 1, 2)})))
    session.decoding.run()
    assert feed_now(spec, view, session, ViewChoice())
    assert [k for k, item in view.block_items().items() if item.ablated] == ["decoder.layers.1.cross_attn"]


def test_an_encoder_only_model_runs_its_encoder_over_the_sentence(loaded, tiny_family):
    _, view, _, ok = map_of(loaded, tiny_family("bert"), "the [MASK] runs")
    assert ok and [c.stack for c in view.diagram.columns] == ["encoder"]
    assert view.lit_keys() == tuple(b.key for b in view.diagram.blocks())
    with pytest.raises(StopIteration):
        view.diagram.block("decoder.embed.tokens")
    view.set_data(None)  # no model: nothing drawn
    assert not view.has_data() and view.block_items() == {} and view.lit_keys() == ()


def test_the_tooltip_names_the_block_and_its_shape(loaded, default):
    _, view, session, _ = loaded("model-map", model=default, source="我喜欢吃鱼。")
    tip = view.block_items()["decoder.layers.0.cross_attn"].toolTip()
    n_src, n_tgt, heads = len(session.src_pieces()), len(session.input_pieces()), default.config.n_heads
    assert f"[{heads} × {n_tgt} × {n_src}]" in tip and f"d_k = {default.config.d_k}" in tip


@pytest.mark.slow
def test_in_the_window_a_click_raises_the_blocks_dock(qtbot, window):
    views = window.views
    assert not on_screen(views["ffn"])  # a tab behind another
    views.bring_up_to_date(views["model-map"])
    views["model-map"].click_block("decoder.layers.1.ffn")
    assert (views.selection.value().kind, views.selection.value().layer) == ("decoder", 1)
    qtbot.waitUntil(lambda: on_screen(views["ffn"]))
