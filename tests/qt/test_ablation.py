"""Ablating heads in the window: Ablate in the grid and a click takes a head out (a cross marks
it), decoding runs again, the status bar says what is ablated and one click clears it; the
ablation view shows the translation before and after, the next-token distribution before and
after and where the attention moved, each against a computation written here; the ablation is
part of the session file and of ``attnviz export``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from window_helpers import close_shared_window, open_shared_window, wait_until

from attnviz.cli import main
from attnviz.core.analysis.ablation import HeadSet, ablate
from attnviz.core.analysis.ablation_effect import ablation_effect
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.model.interventions import parse_heads
from attnviz.qt.session_file import capture
from attnviz.qt.state import AppState
from attnviz.qt.views.ablation import QtAblationView

from inside_fixtures import bundle
from story_helpers import click

SRC = "猫吃鱼。"


@pytest.fixture(scope="module")
def window(tmp_path_factory):
    w = open_shared_window(tmp_path_factory.mktemp("ablation"))
    w.input_bar.set_texts(SRC, "")
    w.session.set_inputs(SRC, "")
    wait_until(lambda: w.session.decoding is not None and w.session.decoding.finished)
    yield w
    close_shared_window(w)


def settle(w) -> None:
    wait_until(lambda: not w.session.running and w.session.decoding is not None and w.session.decoding.finished)
    w.views.refresh(w.views["grid"])
    assert w.session.analyses.wait(60)


def probs_with_w_o_zeroed(b, src_ids, input_ids, row, heads):
    """P(next token) at ``row`` of a teacher-forced pass with each head's W^O columns zeroed by hand."""
    dk, kept = b.config.d_k, []
    blocks = {"encoder": lambda i: b.model.encoder.layers[i].self_attn, "decoder": lambda i: b.model.decoder.layers[i].self_attn,
              "cross": lambda i: b.model.decoder.layers[i].cross_attn}
    try:
        for kind, layer, head in heads:
            w_o = blocks[kind](layer).w_o
            kept.append((w_o, w_o.weight.data))
            w = w_o.weight.detach().clone()
            w[:, head * dk:(head + 1) * dk] = 0
            w_o.weight.data = w
        with torch.inference_mode():
            logits = b.model(torch.tensor([list(src_ids)]), torch.tensor([list(input_ids)]))[0, row].double()
    finally:
        for w_o, data in reversed(kept):
            w_o.weight.data = data
    return torch.softmax(logits, -1).numpy()


def test_a_click_in_ablate_mode_takes_the_head_out_and_clear_gives_it_back(window, qtbot):
    w, s, grid = window, window.session, window.grid
    clean = s.decoding.translation()
    grid.set_kind("cross")
    grid.ablate_button.setChecked(True)
    assert grid.ablate_button.objectName() == "gridAblateButton"
    with qtbot.waitSignal(grid.headToggled, timeout=5000) as sig:
        click(qtbot, grid, grid.tile_center_in_scene(2, 1))
    assert sig.args == ["cross", 2, 1]
    settle(w)
    assert s.ablation == HeadSet(frozenset({("cross", 2, 1)}))
    report = ablate(w.session.bundle, SRC, parse_heads("cross:3:2"))
    assert s.decoding.translation() == report.after and clean == report.before
    assert ("cross", 2, 1) in grid.ablated() and not grid.ablated_marks.path().isEmpty()
    assert w.status.ablation_label.isVisible() and "cross:3:2" in w.status.ablation_label.text()
    w.status.clear_ablation_button.click()
    settle(w)
    assert not s.ablation and s.decoding.translation() == clean
    assert not w.status.ablation_label.isVisible() and grid.ablated_marks.path().isEmpty()
    grid.ablate_button.setChecked(False)


def test_the_ablation_view_shows_before_and_after(window, qtbot):
    w, s = window, window.session
    heads = HeadSet.parse("cross:3:2,encoder:1:1")
    s.set_ablation(heads)
    settle(w)
    frame = w.views.frames["ablation"]
    w.findChild(type(w.docks["headDetailDock"]), "ablationDock").show()
    w.findChild(type(w.docks["headDetailDock"]), "ablationDock").raise_()
    wait_until(lambda: frame.isVisible())
    w.views.refresh(w.views["ablation"])
    assert s.analyses.wait(60)
    view: QtAblationView = w.views["ablation"]
    qtbot.waitUntil(lambda: view.effect() is not None, timeout=20000)
    e = view.effect()
    report = ablate(s.bundle, SRC, heads.by_site())
    assert view.before_label.text().endswith(report.before) and view.after_label.text().endswith(report.after)
    cur = s.current
    after = probs_with_w_o_zeroed(s.bundle, cur.src_ids, cur.input_ids, e.row, heads.heads)
    before = probs_with_w_o_zeroed(s.bundle, cur.src_ids, cur.input_ids, e.row, ())
    top = np.argsort(-np.maximum(before, after), kind="stable")[: len(e.pieces)]
    assert tuple(s.bundle.tgt_tokenizer.pieces(top)) == e.pieces
    np.testing.assert_allclose(e.p_after, after[top], atol=1e-5)
    np.testing.assert_allclose(e.p_before, before[top], atol=1e-5)
    w.views.selection.update(kind="cross", layer=1, head=0, mode="head")
    wait_until(lambda: view.shown_head() == ("cross", 1, 0))
    np.testing.assert_allclose(view.delta_map.matrix(), e.delta["cross"][1, 0], atol=1e-6)
    w.views.selection.update(kind="cross", layer=2, head=1, mode="head")  # an ablated head: its own A did not change
    free = [(k, la, h, e.moved[k][la, h]) for k in e.moved for la in range(e.moved[k].shape[0])
            for h in range(e.moved[k].shape[1]) if (k, la, h) not in heads.heads]
    kind, layer, head, _ = max(free, key=lambda t: t[3])  # the head not ablated that moved most, found here
    wait_until(lambda: view.shown_head() == (kind, layer, head))
    np.testing.assert_allclose(view.delta_map.matrix(), e.delta[kind][layer, head], atol=1e-6)
    s.set_ablation(HeadSet())
    settle(w)


def test_the_effect_s_attention_change_is_the_difference_of_two_passes():
    """ΔA = attention with the heads zeroed minus without, and ½Σ|ΔA| at the row, written here."""
    b = bundle()
    heads = HeadSet.parse("encoder:1:2")
    d = DecodingSession.from_bundle(b, "我喜欢吃苹果。", interventions=heads.plan(b.model, (), ()))
    d.run()
    row = len(d.steps) - 1
    e = ablation_effect(d.frozen(), row, b.model, b.src_tokenizer, b.tgt_tokenizer, heads)
    clean = DecodingSession.from_bundle(b, "我喜欢吃苹果。")
    for t in d.output_ids:
        clean.force(t)
    for kind in ("decoder", "cross"):
        for layer in range(d.n_layers(kind)):
            delta = d.attention(kind, layer) - clean.attention(kind, layer)
            np.testing.assert_allclose(e.delta[kind][layer], delta, atol=1e-5)
            np.testing.assert_allclose(e.moved[kind][layer], 0.5 * np.abs(delta[:, row]).sum(-1), atol=1e-5)
    assert np.abs(e.delta["encoder"][0]).max() < 1e-6  # a zeroed head still attends: its weights are before W^O
    assert np.abs(e.delta["encoder"][1:]).max() > 1e-4  # the layers above read its missing output
    assert ablation_effect(d.frozen(), row, b.model, b.src_tokenizer, b.tgt_tokenizer, HeadSet()) is None


def test_the_ablation_is_part_of_the_session_file(window):
    s = window.session
    s.set_ablation(HeadSet.parse("decoder:2:1", "uniform"))
    settle(window)
    state = capture(window)
    assert state.ablation == {"heads": "decoder:2:1", "kind": "uniform"}
    back = AppState.from_json(state.to_json())
    assert back.ablation == state.ablation
    s.set_ablation(HeadSet())
    settle(window)
    assert window.session_files.restore(back)
    settle(window)
    assert s.ablation == HeadSet.parse("decoder:2:1", "uniform")
    s.set_ablation(HeadSet())
    settle(window)


def test_a_session_file_with_a_bad_ablation_is_refused_in_one_line(window, tmp_path):
    state = capture(window)
    state.ablation = {"heads": "cross:0:1", "kind": "zero"}
    path = tmp_path / "bad.attnviz"
    path.write_text(state.to_json(), encoding="utf-8")
    assert not window.session_files.open(path)
    text = window.message_bar.text()
    assert "cross:0:1" in text and "\n" not in text  # the message names the bad head (a token, not English)


def test_a_head_the_model_has_not_is_refused_and_nothing_changes(window):
    s = window.session
    before = s.decoding
    s.set_ablation(HeadSet.parse("cross:9:1"))
    assert not s.ablation and s.decoding is before
    assert "9" in window.message_bar.text()


@pytest.mark.slow
def test_export_draws_the_ablation_view_and_refuses_bad_heads(qapp, tmp_path, capsys):
    assert main(["export", "--src", SRC, "--view", "ablation", "--ablate", "cross:3:2", "--format", "npz", "--out", str(tmp_path)]) == 0
    files = list(tmp_path.iterdir())
    assert len(files) == 1
    with np.load(files[0]) as z:
        report = ablate(bundle_default(), SRC, parse_heads("cross:3:2"))
        assert str(z["after"]) == report.after and str(z["before"]) == report.before
    assert main(["export", "--src", SRC, "--view", "ablation", "--ablate", "cross:9:2", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--ablate" in err and err.count("\n") == 1


def bundle_default():
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model

    return load_bundle(default_model())


def _decoded_with(b, heads: HeadSet, source: str) -> tuple[int, ...]:
    from attnviz.core.analysis.ablation import ablation_plan

    d = DecodingSession.from_bundle(b, source, interventions=ablation_plan(b, heads, source), capture=False)
    d.run()
    return tuple(d.output_ids)


def test_a_mean_ablation_s_clean_decode_runs_in_a_worker_and_then_the_sentence(qtbot):
    """The mean over the clean model's own decode is made off the UI thread: right after the
    ablation is set nothing has run (the views say what is being prepared); then the sentence
    runs with it, as a run with the same plan made here."""
    from attnviz.qt.session import Session
    from attnviz.qt.view_frame import empty_state

    b = bundle()
    s = Session()
    s.set_bundle(b, SRC, "")
    heads = HeadSet(frozenset({("cross", 0, 1), ("decoder", 1, 0)}), "mean")
    s.set_ablation(heads)
    assert s.preparing and s.decoding is None and empty_state(s)
    qtbot.waitUntil(lambda: not s.preparing and s.decoding is not None and s.decoding.finished, timeout=20000)
    assert tuple(s.decoding.output_ids) == _decoded_with(b, heads, SRC)
    s.set_inputs("他去学校了。", "")  # a new sentence: its own plan
    assert s.preparing
    s.go_to(2)  # asked while the plan is made: done when it comes
    qtbot.waitUntil(lambda: not s.preparing and s.decoding is not None, timeout=20000)
    assert len(s.decoding.steps) == 2
    assert tuple(s.decoding.output_ids) == _decoded_with(b, heads, "他去学校了。")[:2]
    s.wait_for_workers()


def test_export_with_a_mean_ablation_waits_for_its_plan(qapp, tmp_path):
    from attnviz.core.analysis.ablation import ablation_plan

    assert main(["export", "--src", SRC, "--view", "output", "--ablate", "cross:3:2", "--ablation", "mean", "--format", "npz",
                 "--out", str(tmp_path)]) == 0
    files = list(tmp_path.iterdir())
    assert len(files) == 1
    b = bundle_default()
    heads = HeadSet.parse("cross:3:2", "mean")
    d = DecodingSession.from_bundle(b, SRC, interventions=ablation_plan(b, heads, SRC), capture=False)
    d.run()
    with np.load(files[0]) as z:
        assert f"target: {d.translation()} (decoded with greedy)" in [str(m) for m in z["metadata"]]  # data, not UI text
