"""``attnviz export``: the headless export draws with the app's own views."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from attnviz.cli import main
from attnviz.commands import export as export_command
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.sites import KINDS
from attnviz.paths import default_model
from attnviz.qt.views.registry import VIEW_NAMES, VIEWS

from tiny_models import random_model, tokenizers

pytestmark = pytest.mark.slow  # each export loads and runs the model in a fresh command

SRC = "我喜欢吃鱼。"


def svg_texts(path):
    root = ET.parse(path).getroot()
    return " ".join((t.text or "") for t in root.iter() if t.tag.endswith(("text", "tspan")))


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_export_head_figure(qapp, tmp_path, capsys, fmt):
    rc = main(["export", "--src", SRC, "--view", "head", "--kind", "cross", "--layer", "2", "--head", "3",
               "--format", fmt, "--out", str(tmp_path)])
    assert rc == 0
    path = tmp_path / f"head_cross_layer2_head3.{fmt}"
    data = path.read_bytes()
    if fmt == "png":
        from PySide6 import QtGui

        img = QtGui.QImage.fromData(data)
        assert not img.isNull() and img.width() > 300
        colors = {img.pixel(x, y) for x in range(0, img.width(), 17) for y in range(0, img.height(), 17)}
        assert len(colors) > 10  # not blank
    elif fmt == "svg":
        text = svg_texts(path)
        bundle = load_bundle(default_model())
        for piece in bundle.src_tokenizer.pieces(bundle.src_tokenizer.encode(SRC)):
            assert piece in text, piece
        assert "SOS" in text
    else:
        assert data.startswith(b"%PDF-") and b"/Page" in data


def test_export_data_matches_the_session(qapp, tmp_path):
    assert main(["export", "--src", SRC, "--view", "head", "--kind", "decoder", "--layer", "1", "--head", "2",
                 "--format", "npz", "--out", str(tmp_path)]) == 0
    bundle = load_bundle(default_model())
    s = DecodingSession.from_bundle(bundle, SRC)
    s.run()
    with np.load(tmp_path / "head_decoder_layer1_head2.npz") as z:
        assert any(np.allclose(z[k], s.attention("decoder", 0)[1]) for k in z.files if z[k].dtype.kind == "f")


def test_export_all_heads_and_mask(qapp, tmp_path):
    assert main(["export", "--src", SRC, "--view", "head", "--head", "all", "--kind", "encoder", "--format", "png",
                 "--out", str(tmp_path / "all")]) == 0
    cfg = load_bundle(default_model()).config
    assert len(list((tmp_path / "all").glob("encoder_layer*_head*.png"))) == cfg.n_encoder_layers * cfg.n_heads
    assert main(["export", "--src", SRC, "--view", "mask", "--format", "svg", "--out", str(tmp_path)]) == 0
    assert "∞" in svg_texts(tmp_path / "mask_layer1_head1.svg")


def test_bad_destination_and_arguments(qapp, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["export", "--src", SRC, "--out", str(blocker / "sub")]) != 0
    assert "error" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [blocker]
    assert main(["export", "--src", SRC, "--layer", "9", "--out", str(tmp_path)]) == 2
    assert main(["export", "--src", "", "--out", str(tmp_path)]) == 1
    assert "empty" in capsys.readouterr().err


def test_export_runs_headless_in_a_subprocess(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    r = subprocess.run([sys.executable, "-m", "attnviz", "export", "--src", SRC, "--view", "lines", "--format", "png",
                        "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "lines_cross_layer1_head1.png").stat().st_size > 1000
    assert r.stderr == "", r.stderr  # Qt's "This plugin does not support propagateSizeHints()" is not shown


@pytest.mark.parametrize("view,layer,stem", [("pe", [], "pe"), ("norm", ["--layer", "2"], "norm_decoder_layer2"), ("output", [], "output"),
                                             ("walkthrough", ["--layer", "2"], "walkthrough_cross_layer2_head1")])
def test_export_inside_views(qapp, tmp_path, view, layer, stem):
    for fmt in ("png", "svg", "pdf", "npz"):
        assert main(["export", "--src", SRC, "--view", view, *layer, "--format", fmt, "--out", str(tmp_path)]) == 0
        data = (tmp_path / f"{stem}.{fmt}").read_bytes()
        assert len(data) > 300
        if fmt == "svg":
            assert "<text" in data.decode("utf-8", "replace")
        if fmt == "npz":
            with np.load(tmp_path / f"{stem}.npz") as z:
                assert z.files and all(z[k].size for k in z.files)


def test_export_teacher_forced_output(qapp, tmp_path):
    assert main(["export", "--src", "老师，您好！", "--tgt", "Hello, teacher!", "--view", "output", "--format", "svg",
                 "--out", str(tmp_path)]) == 0
    text = svg_texts(tmp_path / "output.svg")
    assert "EOS" in text and "teacher" in text


# -- every view through the registry, on a tiny model ---------------------------------------------
@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    src, tgt = tokenizers()
    return save_bundle(tmp_path_factory.mktemp("model") / "tiny", random_model(), src, tgt, {"name": "tiny"})


@pytest.fixture(scope="module")
def tiny_prenorm_dir(tmp_path_factory):
    """The tiny model with its norms before each sublayer: what edge attribution (the circuit) needs."""
    src, tgt = tokenizers()
    return save_bundle(tmp_path_factory.mktemp("prenorm") / "tiny", random_model(placement="pre"), src, tgt, {"name": "tiny-pre"})


def svg_title(path):
    return "".join(ET.parse(path).getroot().find("{http://www.w3.org/2000/svg}title").itertext())


def test_the_command_offers_the_registry_views(qapp, tmp_path, capsys):
    """--view takes every name of the registry (views added there need no change here); an
    unknown one is refused in one line that lists them."""
    assert main(["export", "--src", SRC, "--view", "nope", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(name in err for name in VIEW_NAMES), err
    assert not hasattr(export_command, "VIEWS")


def test_file_names_say_what_the_file_holds(qapp, tmp_path):
    """The grid holds every layer and head: its file is named by the kind alone."""
    assert main(["export", "--src", SRC, "--view", "grid", "--layer", "2", "--head", "3", "--format", "pdf", "--out", str(tmp_path)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["grid_cross.pdf"]


def _csv_comments(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    comments = [line[2:] for line in lines if line.startswith("# ")]
    return dict(c.split(": ", 1) for c in comments), lines[len(comments)]


def test_csv_files_start_with_what_they_are_of(qapp, tmp_path):
    assert main(["export", "--src", SRC, "--view", "head", "--kind", "decoder", "--layer", "2", "--head", "3", "--steps", "4",
                 "--format", "csv", "--out", str(tmp_path)]) == 0
    meta, header = _csv_comments(tmp_path / "head_decoder_layer2_head3.csv")
    bundle = load_bundle(default_model())
    assert meta["model"] == bundle.name and meta["source"] == SRC and meta["step"] == "4"
    assert (meta["kind"], meta["layer"], meta["head"]) == ("decoder", "2", "3")
    s = DecodingSession.from_bundle(bundle, SRC)
    for _ in range(4):
        s.step()
    words = "".join(p for p in s.output_pieces if p not in ("SOS", "EOS")).replace("\u2581", " ").strip()
    assert meta["target"].startswith(words)
    assert header.startswith("query_index,")
    assert len(_csv_rows(tmp_path / "head_decoder_layer2_head3.csv")) == s.attention("decoder", 1)[2].size


def _csv_rows(path):
    """The table under the comment lines, as dicts."""
    import csv

    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("# ")]
    return list(csv.DictReader(lines))


@pytest.mark.parametrize("fmt", ["csv", "npz"])
def test_head_all_writes_every_head_as_data(qapp, tmp_path, fmt):
    assert main(["export", "--src", SRC, "--view", "head", "--kind", "cross", "--head", "all", "--format", fmt, "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.iterdir()
    assert path.name == f"head_cross_all_heads.{fmt}"
    bundle = load_bundle(default_model())
    s = DecodingSession.from_bundle(bundle, SRC)
    s.run()
    expected = np.stack([s.attention("cross", layer) for layer in range(bundle.config.n_decoder_layers)])  # [layer, head, q, k]
    if fmt == "npz":
        with np.load(path) as z:
            np.testing.assert_allclose(z["weight"], expected, atol=1e-6)
            assert "model: " + bundle.name in list(z["metadata"])
    else:
        meta, _ = _csv_comments(path)
        assert meta["head"] == "all" and "layer" not in meta
        got = np.asarray([float(r["weight"]) for r in _csv_rows(path)]).reshape(expected.shape)
        np.testing.assert_allclose(got, expected, atol=1e-6)


@pytest.mark.parametrize("spec,kind", [(s, k) for s in VIEWS for k in (s.kinds or (None,))], ids=lambda v: getattr(v, "name", v))
def test_every_view_exports_every_kind_it_shows(qapp, tmp_path, capsys, tiny_model_dir, tiny_prenorm_dir, spec, kind):
    kind_args = ["--kind", kind] if kind else []
    if spec.name == "circuit":  # a post-norm model is refused in one line, with the reason (below)
        assert main(["export", "--model", str(tiny_model_dir), "--src", "我喜欢吃苹果。", "--view", "circuit", "--out", str(tmp_path / "o")]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "post-norm" in err
        tiny_model_dir = tiny_prenorm_dir
    config = TransformerConfig.from_dict(json.loads((tiny_model_dir / "config.json").read_text(encoding="utf-8")))
    if not spec.applies(config):  # e.g. the masked-token view on an encoder-decoder model: refused in one line
        assert main(["export", "--model", str(tiny_model_dir), "--src", "我喜欢吃苹果。", "--view", spec.name, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("attnviz: error: ") and err.count("\n") == 1 and "does not apply" in err  # the CLI's stderr: data, not UI text
        assert not (tmp_path / "o").exists()
        return
    target = {"teacher-vs-free": ["--tgt", "I like eating apples."],  # it compares with a reference
              "ablation": ["--ablate", "decoder:1:2"],  # it compares with the model as trained
              "checkpoints": ["--other-model", str(tiny_model_dir)]}.get(spec.name, [])  # it compares two models
    for fmt in ("png", "svg"):
        assert main(["export", "--model", str(tiny_model_dir), "--src", "我喜欢吃苹果。", "--steps", "3", "--view", spec.name,
                     *kind_args, *target, "--format", fmt, "--out", str(tmp_path)]) == 0
    (png,) = tmp_path.glob("*.png")
    assert png.stat().st_size > 1000
    if kind:  # the title names the kind drawn, and no other
        title = svg_title(next(tmp_path.glob("*.svg"))).lower()
        assert {k for k in KINDS if k in title} == {kind}, title


@pytest.mark.parametrize("args", [["--view", "mask", "--kind", "cross"], ["--view", "norm", "--kind", "cross"],
                                  ["--view", "pe", "--kind", "encoder"], ["--view", "output", "--layer", "2"],
                                  ["--view", "norm", "--head", "2"], ["--view", "grid", "--head", "rollout"],
                                  ["--view", "head", "--query", "1"]])
def test_a_selector_the_view_does_not_take_is_refused(qapp, tmp_path, capsys, tiny_model_dir, args):
    rc = main(["export", "--model", str(tiny_model_dir), "--src", "我喜欢吃苹果。", *args, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc != 0 and err.startswith("attnviz: error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_walkthrough_query(qapp, tmp_path, tiny_model_dir):
    args = ["export", "--model", str(tiny_model_dir), "--src", "我喜欢吃苹果。", "--steps", "3", "--view", "walkthrough",
            "--kind", "encoder", "--head", "2", "--format", "svg", "--out", str(tmp_path)]
    assert main([*args, "--query", "2"]) == 0
    assert "(row 2)" in svg_title(tmp_path / "walkthrough_encoder_layer1_head2_query2.svg")
    assert main([*args, "--query", "99"]) == 2


@pytest.mark.parametrize("args,word", [(["--width", "100000"], "--width"), (["--width", "0"], "--width"),
                                       (["--dpi", "1e6"], "--dpi"), (["--dpi", "nan"], "--dpi"),
                                       (["--colormap", "nope"], "--colormap"), (["--steps", "-5"], "--steps")])
def test_figure_options_are_checked_before_any_work(qapp, tmp_path, capsys, monkeypatch, args, word):
    import attnviz.core.bundle as bundle_module

    monkeypatch.setattr(bundle_module, "load_bundle", lambda *a, **k: pytest.fail("loaded a model before checking"))
    rc = main(["export", "--src", SRC, *args, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("attnviz: error: ") and err.count("\n") == 1 and word in err, err
    assert not (tmp_path / "out").exists()


def test_mask_head_all_is_refused_in_one_line(qapp, tmp_path, capsys, tiny_model_dir):
    rc = main(["export", "--model", str(tiny_model_dir), "--src", "我喜欢吃苹果。", "--view", "mask", "--head", "all",
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--head all does not apply to the mask view" in err, err  # the CLI's stderr: data, not UI text
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def layerless_dirs(tmp_path_factory):
    """Bundles without encoder layers, without decoder layers, and without either."""
    import dataclasses

    from attnviz.core import Transformer

    src, tgt = tokenizers()
    cfg = random_model().config
    out = {}
    for enc, dec in ((0, 2), (2, 0), (0, 0)):
        model = Transformer(dataclasses.replace(cfg, n_encoder_layers=enc, n_decoder_layers=dec)).eval()
        out[(enc, dec)] = save_bundle(tmp_path_factory.mktemp("layerless") / f"e{enc}d{dec}", model, src, tgt, {"name": "layerless"})
    return out


@pytest.mark.parametrize("layers", [(0, 2), (2, 0), (0, 0)], ids=lambda v: f"enc{v[0]}-dec{v[1]}")
def test_a_model_without_layers_exports_or_says_why_in_one_line(qapp, tmp_path, capsys, layerless_dirs, layers):
    """A bundle trained with --layers 0 (or from elsewhere): each view is drawn, or refused in one line."""
    for view in VIEW_NAMES:
        rc = main(["export", "--model", str(layerless_dirs[layers]), "--src", "我喜欢吃苹果。", "--steps", "2", "--view", view,
                   "--out", str(tmp_path / view)])
        err = capsys.readouterr().err
        if rc == 0:
            assert list((tmp_path / view).iterdir()), view
        else:
            assert err.startswith("attnviz: error: ") and err.count("\n") == 1, (view, err)
            kinds = [k for k, n in zip(("encoder", "decoder"), layers) if n == 0] + ["cross"]
            assert any(f"no {k} layers" in err or f"no {k} or" in err for k in kinds) or any(  # the CLI's stderr: data, not UI text
                why in err for why in ("--tgt", "--ablate", "--other-model", "no heads", "masked-token head", "post-norm")), (view, err)  # or: it needs a target, heads to ablate, a pre-norm model
