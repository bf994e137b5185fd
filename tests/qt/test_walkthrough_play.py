"""The walkthrough played as stages: Play moves through the frames on a timer, the arrows move a
whole stage, the strip shows the chosen query's row, and the stages export as a GIF with one
frame per stage and sub-step."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.walkthrough import WalkthroughFrame, session_walkthrough
from attnviz.core.analysis.walkthrough_stages import N_STAGES, stage_starts
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.model.sites import KINDS
from attnviz.qt.publish.animation import Panel, stage_animation_frames, write_animation
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.registry import view_spec
from attnviz.qt.views.walkthrough import QtWalkthroughView

import inside_fixtures as F

LAYERS = {kind: 2 for kind in KINDS}
SIZE = (1000, 650)


@pytest.fixture(scope="module")
def decoded():
    return F.bundle(d_model=64, n_heads=4), F.session(steps=4, d_model=64, n_heads=4)


def control(view, cls, name):
    found = view.findChild(cls, name)
    assert found is not None, name
    return found


def test_play_next_and_previous_move_the_stage(make_view, qtbot, decoded):
    bundle, session = decoded
    w = session_walkthrough(bundle.model, session, "decoder", 1, 2, 2)
    view = make_view(QtWalkthroughView, SIZE, WalkthroughFrame(w, LAYERS), shown=True)
    stage = control(view, QtWidgets.QLabel, "walkStage")
    frames = view.stage_frames()
    assert stage.text() == f"1/{N_STAGES}" and view.stage_frame() is frames[0]
    control(view, QtWidgets.QToolButton, "walkStageNext").click()
    assert stage.text() == f"2/{N_STAGES}" and view.stage_frame().stage == 1
    control(view, QtWidgets.QToolButton, "walkStageNext").click()
    assert stage.text() == f"3/{N_STAGES}"
    control(view, QtWidgets.QToolButton, "walkStagePrev").click()
    assert stage.text() == f"2/{N_STAGES}" and view.stage_frame() is frames[stage_starts(frames)[1]]
    # the lit row is the chosen query's, in the strip and in the tables below it
    assert view.stage_frame().query == view.query() == 2 and view.table("weights").highlight_row() == 2
    assert view.strip.tables[0][0].row_labels() == (w.query_labels[2],)
    view.query_combo.setCurrentIndex(3)
    assert all(f.query == 3 for f in view.stage_frames()) and view.strip.tables[0][0].row_labels() == (w.query_labels[3],)
    # Play: the indicator moves on by itself and stops at the last frame
    view.play_timer.setInterval(10)
    control(view, QtWidgets.QToolButton, "walkStagePrev").click()
    assert stage.text() == f"1/{N_STAGES}"
    qtbot.mouseClick(control(view, QtWidgets.QToolButton, "walkPlay"), QtCore.Qt.MouseButton.LeftButton)
    assert view.is_playing()
    qtbot.waitUntil(lambda: int(stage.text().split("/")[0]) >= 2, timeout=5000)
    qtbot.waitUntil(lambda: not view.is_playing(), timeout=5000)
    assert stage.text() == f"{N_STAGES}/{N_STAGES}" and view.stage_frame() is view.stage_frames()[-1]
    np.testing.assert_allclose(view.stage_frame().out.z, w.z[3], atol=1e-5)


def test_stages_export_one_gif_frame_per_stage_and_sub_step(qapp, tmp_path, decoded):
    bundle, _ = decoded
    panel = Panel(view_spec("walkthrough"), ViewChoice(kind="cross", layer=0, head=1, mode="head", query=1))
    frames = stage_animation_frames(bundle, "我喜欢吃苹果。", "", panel, (900, 600))
    path = write_animation(frames, tmp_path / "walk.gif", fps=4)
    im = Image.open(path)
    view = QtWalkthroughView()
    try:
        session = DecodingSession.from_bundle(bundle, "我喜欢吃苹果。")
        session.run()
        view.set_data(WalkthroughFrame(session_walkthrough(bundle.model, session, "cross", 0, 1, 1), LAYERS))
        assert im.n_frames == len(frames) == len(view.stage_frames())
    finally:
        view.close()
        view.deleteLater()
    assert im.size[0] < 900  # the title and the stages, not every table


def test_export_animation_from_the_walkthrough_offers_its_stages(qapp, tmp_path, monkeypatch, decoded):
    from attnviz.qt.publish import animation

    bundle, _ = decoded
    out = tmp_path / "stages.gif"
    monkeypatch.setattr(animation, "ask_walkthrough_frames", lambda parent: True)
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    panel = Panel(view_spec("walkthrough"), ViewChoice(kind="encoder", layer=1, head=0, mode="head"))
    path = animation.animation_dialog(None, bundle, "我喜欢吃苹果。", "", panel, "light", None, size=(800, 500))
    assert path == out and Image.open(out).n_frames == len(stage_animation_frames(bundle, "我喜欢吃苹果。", "", panel, (800, 500)))
    monkeypatch.setattr(animation, "ask_walkthrough_frames", lambda parent: None)  # cancelled: nothing asked, nothing written
    assert animation.animation_dialog(None, bundle, "我喜欢吃苹果。", "", panel, "light", None) is None


@pytest.mark.parametrize("argv,word", [(["--stages", "--view", "grid"], "--view walkthrough"), (["--query", "2"], "--stages"),
                                       (["--stages", "--query", "0"], "1-based"), (["--stages", "--snapshots"], "--snapshots")])
def test_stage_arguments_are_one_line(qapp, tmp_path, capsys, argv, word):
    from attnviz.cli import main

    assert main(["animate", "--src", "猫", *argv, "--out", str(tmp_path / "x.gif")]) == 2
    err = capsys.readouterr().err
    assert word in err and err.count("\n") == 1 and not list(tmp_path.iterdir())


def test_animate_stages_writes_one_frame_per_stage(qapp, tmp_path, capsys):
    from attnviz.cli import main

    gif = tmp_path / "walk.gif"
    assert main(["animate", "--stages", "--src", "猫吃鱼。", "--kind", "decoder", "--layer", "2", "--head", "3", "--query", "2",
                 "--size", "900x600", "--out", str(gif)]) == 0
    n = Image.open(gif).n_frames
    assert f"({n} frames)" in capsys.readouterr().out and n >= N_STAGES + 2
