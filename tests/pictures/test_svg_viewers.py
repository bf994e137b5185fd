"""Every view's SVG looks the same in other viewers as in Qt: rasterised with librsvg
(``rsvg-convert``, GNOME's viewers and most browsers' engines alike in what they ignore) it
matches the view's PNG export. Cosmetic outlines once came out as wide filled bands there."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from PySide6 import QtGui

from attnviz.cli import main as cli_main
from attnviz.core.bundle import load_bundle
from attnviz.paths import default_model
from attnviz.qt.views.registry import VIEWS

SIZE = "900x640"
MEAN_DIFF = 12.0  # grey levels (of 255), averaged over the figure: text and resampling differ by ~3-8; the bands gave ~27
STRONG = 0.09  # the share of pixels that differ by more than 60 grey levels (dense heatmaps resample: up to ~0.06); the bands gave ~0.23


def _grey(path, size=None) -> np.ndarray:
    img = QtGui.QImage(str(path))
    assert not img.isNull(), path
    if size is not None and (img.width(), img.height()) != size:
        img = img.scaled(*size)
    white = QtGui.QImage(img.size(), QtGui.QImage.Format.Format_RGB32)
    white.fill(QtGui.QColor("white"))
    p = QtGui.QPainter(white)
    p.drawImage(0, 0, img)
    p.end()
    grey = white.convertToFormat(QtGui.QImage.Format.Format_Grayscale8)
    return np.frombuffer(grey.constBits(), np.uint8, grey.sizeInBytes()).reshape(grey.height(), grey.bytesPerLine())[:, : grey.width()].astype(float)


# every view that applies to the bundled model (the masked-token view needs an encoder-only model)
DRAWN = [spec.name for spec in VIEWS if spec.applies(load_bundle(default_model()).config)]


@pytest.mark.slow
@pytest.mark.parametrize("view", DRAWN)
def test_an_svg_renders_in_librsvg_as_in_qt(tmp_path, view):
    rsvg = shutil.which("rsvg-convert")
    assert rsvg, "rsvg-convert is missing: install librsvg2-bin (.ci/run does)"
    for fmt in ("png", "svg"):
        ablate = {"ablation": ["--ablate", "cross:3:2"],  # the ablation view compares with the model as trained
                  "checkpoints": ["--other-model", str(default_model())]}.get(view, [])  # two models
        target = [] if view == "beam-tree" else ["--tgt", "The cat eats fish."]  # the beam tree is of a decoding
        rc = cli_main(["export", "--view", view, "--src", "猫吃鱼。", *target, "--size", SIZE, *ablate,
                       "--format", fmt, "--out", str(tmp_path / fmt)])
        assert rc == 0
    png = next((tmp_path / "png").glob("*.png"))
    svg = next((tmp_path / "svg").glob("*.svg"))
    assert b"non-scaling-stroke" not in svg.read_bytes()
    out = tmp_path / "rsvg.png"
    subprocess.run([rsvg, str(svg), "-o", str(out)], check=True, timeout=60)
    ref = _grey(png)
    got = _grey(out, size=(ref.shape[1], ref.shape[0]))
    diff = np.abs(ref - got)
    assert diff.mean() < MEAN_DIFF and (diff > 60).mean() < STRONG, f"{view}: mean {diff.mean():.1f}, strong {(diff > 60).mean():.3f}"


def test_outlines_with_numbers_in_exponent_form_keep_their_size():
    """Qt writes 1.28e+06 for a bar a million wide (the default model's parts, in parameters): the
    outline moved to device coordinates keeps that width (a pattern that read only e-06 drew the
    model-info bars zero wide in librsvg)."""
    from attnviz.qt.widgets.figures import scale_free_strokes

    svg = ('<g transform="matrix(0.001,0,0,1,10,0)">'
           '<rect x="0" y="5" width="1.28e+06" height="2" vector-effect="non-scaling-stroke"/>'
           '<path d="M0,0 L1e+06,3E-1 " vector-effect="non-scaling-stroke"/></g>')
    out = scale_free_strokes(svg)
    assert 'd="M10,5 L1290,5 L1290,7 L10,7 Z"' in out and "width=" not in out
    assert 'd="M10,0 L1010,0.3 "' in out and "non-scaling-stroke" not in out
