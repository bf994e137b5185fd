"""Animated exports: ``attnviz animate`` and Export → Animation draw one frame per decoding step
(or per target position) with the window's views, each frame the same picture ``attnviz export``
draws at that step; bad arguments are one line; a cancelled export writes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from PySide6 import QtGui

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.paths import default_model
from attnviz.qt.publish.animation import AnimationError, Panel, animation_frames, write_animation
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.registry import view_spec

SRC, TGT = "猫吃鱼。", "The cat eats fish."


def frames_of(path):
    im = Image.open(path)
    out = []
    for i in range(im.n_frames):
        im.seek(i)
        out.append(np.asarray(im.convert("L"), dtype=float))
    return out


def grey(path):
    return np.asarray(Image.open(path).convert("L"), dtype=float)


def test_one_frame_per_step_each_the_export_of_that_step(qapp, tmp_path, capsys):
    gif = tmp_path / "cat.gif"
    assert main(["animate", "--src", SRC, "--view", "grid,output", "--size", "700x500", "--out", str(gif)]) == 0
    decoded = DecodingSession.from_bundle(load_bundle(default_model()), SRC)
    decoded.run()
    frames = frames_of(gif)
    assert len(frames) == len(decoded.steps) and f"({len(frames)} frames)" in capsys.readouterr().out
    assert all(not np.array_equal(a, b) for a, b in zip(frames, frames[1:]))  # every step changes the picture
    for step in (1, len(decoded.steps)):
        assert main(["export", "--src", SRC, "--view", "output", "--steps", str(step), "--size", "700x500",
                     "--format", "png", "--out", str(tmp_path / f"s{step}")]) == 0
        png = grey(next((tmp_path / f"s{step}").glob("*.png")))
        right = frames[step - 1][: png.shape[0], frames[0].shape[1] - png.shape[1]:]
        assert right.shape == png.shape and np.abs(right - png).mean() < 4.0  # GIF colours are a palette: nearly, not exactly


def test_a_typed_target_gives_one_frame_per_position(qapp, tmp_path):
    b = load_bundle(default_model())
    panel = Panel(view_spec("mask"), ViewChoice(kind="decoder", layer=0, head=0, mode="head"))
    frames = animation_frames(b, SRC, TGT, [panel], (500, 400))
    assert len(frames) == len(teacher_forced_from_bundle(b, SRC, TGT).steps)
    path = write_animation(frames, tmp_path / "mask.gif", fps=4)
    im = Image.open(path)
    assert im.n_frames == len(frames) and im.info["duration"] == 250 and im.info["loop"] == 0


def test_cancelling_draws_no_more_and_writes_nothing(qapp, tmp_path):
    seen = []
    frames = animation_frames(load_bundle(default_model()), SRC, "", [Panel(view_spec("grid"), ViewChoice(kind="cross"))], (400, 300),
                              progress=lambda done, total: seen.append(done) or done < 2)
    assert frames is None and seen == [1, 2] and not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv,word", [(["--out", "x.avi"], ".gif"), (["--out", "x.gif", "--fps", "0"], "--fps"),
                                       (["--out", "x.gif", "--view", "nope"], "nope"), (["--out", "x.gif", "--layer", "0"], "--layer")])
def test_bad_arguments_are_one_line(qapp, tmp_path, capsys, argv, word):
    argv = [a if a != "x.gif" and a != "x.avi" else str(tmp_path / a) for a in argv]
    assert main(["animate", "--src", SRC, *argv]) == 2
    err = capsys.readouterr().err
    assert word in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_mp4_without_its_optional_package_says_how_to_get_it(qapp, tmp_path):
    frame = QtGui.QImage(10, 10, QtGui.QImage.Format.Format_RGB32)
    frame.fill(0)
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        with pytest.raises(AnimationError, match="imageio-ffmpeg"):
            write_animation([frame, frame], tmp_path / "a.mp4")
        assert not list(tmp_path.iterdir())
    else:
        assert write_animation([frame, frame], tmp_path / "a.mp4").stat().st_size > 0
