"""``attnviz animate --snapshots``: one frame per training snapshot in a bundle's meta.json, each
the probe sentence's cross-attention then, drawn by the Train panel's probe cell; a bundle
without snapshots, a probe that is not there and decoding options are refused in one line."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image, ImageSequence
from PySide6 import QtCore

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.training.evaluation import stored_probe_snapshots
from attnviz.paths import default_model
from attnviz.qt.train.snapshot_figure import SnapshotFigure
from attnviz.qt.widgets.figures import ensure_laid_out, figure_source

SIZE = (700, 500)


@pytest.fixture(scope="module")
def meta():
    return json.loads((default_model() / "meta.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def gif(qapp, tmp_path_factory):
    path = tmp_path_factory.mktemp("snapshots") / "probe.gif"
    assert main(["animate", "--snapshots", "--probe", "1", "--size", "{}x{}".format(*SIZE), "--out", str(path)]) == 0
    return [np.asarray(f.convert("RGB"), dtype=float) for f in ImageSequence.Iterator(Image.open(path))]


def cell_centres(figure: SnapshotFigure, row: int, cols: int) -> list[tuple[int, int]]:
    """Pixel (x, y) in the rendered figure of the centre of each cell of ``row``."""
    ensure_laid_out(figure)
    origin = figure_source(figure).topLeft()
    image = figure.cell.heatmap.image
    points = [image.mapToScene(QtCore.QPointF(c + 0.5, row + 0.5)) - origin for c in range(cols)]
    return [(round(p.x()), round(p.y())) for p in points]


def test_one_frame_per_snapshot_coloured_by_the_stored_weights(qapp, qtbot, gif, meta):
    assert len(gif) == len(meta["snapshots"])
    assert all(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(gif, gif[1:]))  # every snapshot changes the picture
    stored = np.asarray(meta["snapshots"][-1]["probes"][0]["cross_attention"][-1])  # last layer, mean over heads: [out, src]
    epoch, step, last = stored_probe_snapshots(load_bundle(default_model()).meta, 0)[-1]
    figure = SnapshotFigure(theme="light")
    qtbot.addWidget(figure)
    figure.resize(*SIZE)
    figure.show_snapshot(epoch, step, last)
    lut = np.asarray(figure.cell.heatmap.lut()[:, :3], dtype=float)
    frame = gif[-1]
    colours = [frame[y, x] for x, y in cell_centres(figure, 0, stored.shape[1])]
    read = [np.argmin(((lut - c) ** 2).sum(1)) / (len(lut) - 1) for c in colours]  # the weight each cell's colour stands for
    assert int(np.argmax(read)) == int(np.argmax(stored[0]))
    np.testing.assert_allclose(read, stored[0], atol=0.02)  # a GIF's palette is close, not exact


def test_decoding_options_are_refused_with_snapshots(capsys):
    for extra in (["--src", "猫吃鱼。"], ["--view", "grid"], ["--tgt", "x"]):
        assert main(["animate", "--snapshots", *extra, "--out", "x.gif"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--snapshots" in err and extra[0] in err


def test_a_probe_out_of_range_is_refused(qapp, capsys, meta):
    count = len(meta["probes"])
    for probe in (0, count + 1):
        assert main(["animate", "--snapshots", "--probe", str(probe), "--out", "x.gif"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and f"1 to {count}" in err


def test_a_bundle_without_snapshots_is_refused(qapp, capsys, tmp_path, meta):
    bundle = tmp_path / "plain"
    shutil.copytree(default_model(), bundle)
    (bundle / "meta.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "snapshots"}), encoding="utf-8")
    assert main(["animate", "--model", str(bundle), "--snapshots", "--out", str(tmp_path / "x.gif")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no training snapshots" in err
    assert not (tmp_path / "x.gif").exists()
