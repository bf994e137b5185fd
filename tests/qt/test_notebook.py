"""The notebook face: ``show(...)`` gives an object Jupyter draws inline (``_repr_png_``) whose
pixels are those of the PNG ``attnviz export`` writes for the same arguments."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.errors import AttnvizError
from attnviz.notebook import SIZE, show
from attnviz.paths import default_model


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_show_draws_what_export_writes(qapp, tmp_path):
    figure = show(default_model(), "我爱你。", view="grid")
    image = Image.open(io.BytesIO(figure._repr_png_()))
    assert main(["export", "--view", "grid", "--src", "我爱你。", "--out", str(tmp_path)]) == 0
    exported = next(tmp_path.glob("*.png")).read_bytes()
    assert image.size == figure.size == Image.open(io.BytesIO(exported)).size  # the figure: the view less its controls row
    assert image.width == SIZE[0] and 0.8 * SIZE[1] < image.height <= SIZE[1]
    np.testing.assert_array_equal(pixels(figure.png), pixels(exported))
    assert len(np.unique(pixels(figure.png).reshape(-1, 4), axis=0)) > 20  # a drawing, not a blank page


def test_a_loaded_bundle_and_a_choice_match_the_commands_too(qapp, tmp_path):
    bundle = load_bundle(default_model())
    figure = show(bundle, "猫吃鱼。", "The cat eats fish.", view="head", kind="cross", layer=2, head=3, size=(520, 420))
    assert main(["export", "--view", "head", "--src", "猫吃鱼。", "--tgt", "The cat eats fish.", "--kind", "cross", "--layer", "2",  # data, not UI text
                 "--head", "3", "--size", "520x420", "--out", str(tmp_path)]) == 0
    np.testing.assert_array_equal(pixels(figure.png), pixels(next(tmp_path.glob("*.png")).read_bytes()))
    with pytest.raises(AttnvizError, match="unknown view"):
        show(bundle, "猫吃鱼。", view="no-such-view")
    with pytest.raises(AttnvizError, match="takes kind, layer"):
        show(bundle, "猫吃鱼。", view="head", colour="red")
