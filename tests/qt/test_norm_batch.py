"""The LN-vs-BN view on a real batch: a LayerNorm model beside the BatchNorm bundle on the same
sentence (the BatchNorm side from a training-mode pass, checked against one written here), the
other bundle's folder, ``attnviz export --other-model``, a step that runs only the decoder, and
the accuracy gap of the batch-norm bundle measured against the core's metrics."""

from __future__ import annotations

import copy
import dataclasses
import re

import numpy as np
import pytest
import torch
from norm_passes import norm_input, padded, training_copy
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core import Transformer
from attnviz.core.analysis.norm_batch import batch_rows, norm_batch_for, training_examples
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.core.data import corpora as D
from attnviz.core.model.modules import MaskedBatchNorm
from attnviz.core.training.evaluation import teacher_forced_metrics
from attnviz.paths import models_dir
from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.norm_batch import QtNormBatchView
from attnviz.qt.views.registry import feed_now, view_spec

from inside_fixtures import bundle, session
from story_helpers import APPLES, FISH, SIZE, session_for

SRC = FISH


def decoded_and_shown(make_view, b, source: str, choice: ViewChoice) -> tuple[Session, QtNormBatchView]:
    """A session on bundle ``b`` with ``source`` decoded to the end, and the view shown and fed ``choice`` from it."""
    s = Session()
    s.set_bundle(b)
    s.set_inputs(source, "")
    s.decoding.run()
    view = make_view(QtNormBatchView, SIZE, shown=True)
    assert feed_now(view_spec("norm-batch"), view, s, choice)
    return s, view


# -- LN vs BN side by side ----------------------------------------------------------------------------------
def test_a_layer_norm_model_is_drawn_beside_the_batch_norm_bundle(make_view):
    s = session(steps=3)
    view = make_view(QtNormBatchView, SIZE, shown=True)
    feed_now(view_spec("norm-batch"), view, session_for(bundle(), s), ViewChoice())
    view.select("encoder", 1)
    assert view.site().site == "encoder.layers.1.norm1"
    ln, bn = view.columns  # left the LayerNorm side (the open model), right the BatchNorm bundle
    assert (ln.side.batch.norm, ln.side.opened, bn.side.batch.norm, bn.side.name) == ("layer", True, "batch", "zh-en-small-batchnorm")
    assert view.findChild(QtWidgets.QPushButton, "normBatchMeasureButton").isEnabled()  # the bundle's training data is known
    assert view.findChild(QtWidgets.QWidget, "normBatchOtherProblem").full_text() == ""
    # the LN side: sentence 1's per-token std before LN, read off the trace here
    x = s.accumulated("encoder.layers.1.norm1.input")
    _, std = ln.spread_lines[0].getData()
    np.testing.assert_allclose(std, x.std(-1), atol=1e-5)
    _, normalized = ln.spread_lines[1].getData()
    np.testing.assert_allclose(normalized, 1.0, atol=1e-3)
    # the BN side draws the chosen feature's block of its batch statistics
    view.findChild(QtWidgets.QSpinBox, "normBatchFeatureSpin").setValue(30)
    j, mean = bn.mean_lines[0].getData()
    assert list(j) == list(range(24, 48)) and "PAD" in bn.labels.texts()
    np.testing.assert_allclose(mean, bn.site.x[bn.site.valid][:, 24:48].mean(0), atol=1e-5)
    assert ln.heatmap.isVisible() and bn.heatmap.isVisible()


def test_a_new_step_of_the_same_source_runs_only_the_decoder_on_the_session_sentence(make_view):
    """The batch's other sentences and the source do not change with the step: the loader keeps
    them, and a step costs one decoder pass of batch size 1 (the batch still equals a fresh one)."""
    b, dec = bundle(), session(steps=2)
    s, spec, calls = session_for(b, dec), view_spec("norm-batch"), []
    view = make_view(QtNormBatchView, SIZE)
    hooks = [b.model.encoder.register_forward_hook(lambda m, args, out: calls.append(("encoder", args[0].shape[0]))),
             b.model.decoder.register_forward_hook(lambda m, args, out: calls.append(("decoder", args[0].shape[0])))]
    try:
        assert feed_now(spec, view, s, ViewChoice())
        first, calls[:] = list(calls), []
        dec.step()
        assert feed_now(spec, view, s, ViewChoice())
    finally:
        for h in hooks:
            h.remove()
    assert ("encoder", 4) in first and calls == [("decoder", 1)]
    fresh = norm_batch_for(b, dec.src_ids, dec.input_ids).get("decoder.layers.0.norm1")
    view.set_site(fresh.site)
    np.testing.assert_allclose(view.site().x, fresh.x, atol=1e-6)


def test_norm_batch_view_measures_the_accuracy_gap_of_the_batch_norm_bundle(make_view, qtbot, tmp_path):
    b = load_bundle(models_dir() / "zh-en-small-batchnorm")
    s, view = decoded_and_shown(make_view, b, SRC, ViewChoice())
    view.select("encoder", 0)
    site = view.site()
    assert "PAD" in view.column("batch").labels.texts() and site.running is not None
    # BN statistics with PAD left out, from the trace of the first sentence and the heatmap's numbers
    n_pad = int((~site.valid).sum())
    assert n_pad > 0 and f"+ {n_pad} PAD" in view.title.plain_text()
    with torch.no_grad():
        before = b.model(torch.tensor([s.current.src_ids]), torch.tensor([s.current.input_ids]))
    view.pairs_spin.setValue(12)
    with qtbot.waitSignal(view.measured, timeout=240_000) as sig:
        qtbot.mouseClick(view.measure_button, QtCore.Qt.MouseButton.LeftButton)
        assert not view.measure_button.isEnabled() and view.progress.isVisible()
    gap = sig.args[0]
    examples = training_examples(b, 12)
    assert gap.pairs == len(examples) == 12
    assert gap.running == pytest.approx(teacher_forced_metrics(b.model, examples)["token_accuracy"])
    assert gap.batch == pytest.approx(_train_mode_accuracy(b.model, examples))
    assert gap.single == pytest.approx(_train_mode_accuracy(b.model, examples, alone=True))  # each sentence's own statistics
    assert len({round(gap.single, 3), round(gap.batch, 3), round(gap.running, 3)}) == 3  # three statistics, three accuracies
    percents = [f"{v:.1%}" for v in (gap.batch, gap.running, gap.single)]  # batch statistics, running ones, batch size 1
    assert re.findall(r"\d+\.\d%", view.result_label.full_text()) == percents and str(gap.pairs) in view.result_label.full_text()
    assert re.findall(r"\d+\.\d%", view.gap_text()) == percents and view.gap_text() in view.title.plain_text()
    with torch.no_grad():  # measuring left the session's model alone
        torch.testing.assert_close(b.model(torch.tensor([s.current.src_ids]), torch.tensor([s.current.input_ids])), before)
    qtbot.wait_until(lambda: view.measure_button.isEnabled())
    view.grab().save(str(tmp_path / "story_b_norm_batch.png"))


def _train_mode_accuracy(model, examples, alone: bool = False) -> float:
    """Teacher-forced token accuracy with the BatchNorms in training mode (momentum 0), dropout off;
    ``alone``: each sentence a batch of its own."""
    m = copy.deepcopy(model)
    for mod in m.modules():
        if isinstance(mod, MaskedBatchNorm):
            mod.train()
            mod.momentum = 0.0
    cfg = m.config
    correct = tokens = 0
    with torch.no_grad():
        for idx in ([[i] for i in range(len(examples))] if alone else D.make_batches(examples, 500, shuffle=False)):
            batch = D.collate([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
            mask = batch.labels != cfg.pad_id
            correct += int(((m(batch.src, batch.tgt_in).argmax(-1) == batch.labels) & mask).sum())
            tokens += int(mask.sum())
    return correct / tokens


# -- the BatchNorm side: a training-mode pass ---------------------------------------------------------------
@pytest.mark.slow
def tick_texts(axis) -> list[str]:
    """The values ``axis`` draws now, in order."""
    image = QtGui.QImage(8, 8, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(image)
    try:
        return [str(text) for _rect, _flags, text in axis.generateDrawSpecs(painter)[2]]
    finally:
        painter.end()


def test_the_bundled_models_side_by_side_batch_norm_from_a_training_mode_pass(make_view, tmp_path):
    """zh-en-small open, zh-en-small-batchnorm beside it: the BatchNorm side's statistics at decoder
    layer 2 equal a pass of a training-mode copy written here, and differ from what the
    evaluation pass's inputs give there; the LayerNorm side's equal its own model's pass."""
    ln_bundle = load_bundle(models_dir() / "zh-en-small")
    s, view = decoded_and_shown(make_view, ln_bundle, FISH, ViewChoice(kind="decoder", layer=1))
    site = "decoder.layers.1.norm1"
    assert view.site().site == site
    bn_column, ln_column = view.column("batch"), view.column("layer")
    assert view.columns == [ln_column, bn_column] and bn_column.side.batch.batch_statistics
    bn = load_bundle(models_dir() / "zh-en-small-batchnorm")
    rows = batch_rows(bn, s.current.src_ids, s.current.input_ids)  # both bundles read the sentences with the same ids
    src, tgt = padded([r[0] for r in rows], bn.config.pad_id), padded([r[1] for r in rows], bn.config.pad_id)
    x, valid = norm_input(training_copy(bn.model), site, src, tgt)
    mean, var = x[valid].mean(0), x[valid].var(0)
    shown = bn_column.site.without_pad()
    assert shown.n == int(valid.sum())
    np.testing.assert_allclose(shown.mean, mean, atol=1e-5)
    np.testing.assert_allclose(shown.var, var, atol=1e-5)
    np.testing.assert_allclose(bn_column.mean_lines[0].getData()[1], mean[:24], atol=1e-5)  # the plotted block: features 0-23
    np.testing.assert_allclose(bn_column.spread_lines[0].getData()[1], var[:24], atol=1e-5)
    x_eval, valid_eval = norm_input(bn.model, site, src, tgt)  # evaluation: running statistics upstream
    shift = float(np.abs(x_eval[valid_eval].mean(0) - mean).mean())
    print(f"mean |Δμ| at {site}, training-mode vs evaluation inputs: {shift:.3f}")
    assert shift > 0.1
    x_ln, valid_ln = norm_input(ln_bundle.model, site, src, tgt)
    n = int(valid_ln[0].sum())
    np.testing.assert_allclose(ln_column.spread_lines[0].getData()[1], x_ln[0, :n].std(-1), atol=1e-5)
    QtWidgets.QApplication.processEvents()  # the title wraps at the width it gets
    for plot in (ln_column.mean_plot, ln_column.spread_plot):  # tokens are counted 1..n, never 1.5
        assert tick_texts(plot.getAxis("bottom")) == [str(i) for i in range(1, n + 1)]
    assert "0" in tick_texts(bn_column.mean_plot.getAxis("bottom"))  # the BatchNorm side counts features from 0, on a numeric axis
    view.grab().save(str(tmp_path / "lnbn.png"))


def test_another_folder_is_drawn_beside_the_open_model_or_said_why_not(make_view, qtbot, tmp_path, monkeypatch):
    s = session_for(bundle(), session(steps=3))
    spec = view_spec("norm-batch")
    view = make_view(QtNormBatchView, SIZE, shown=True)
    problem = view.findChild(QtWidgets.QLabel, "normBatchOtherProblem")
    with qtbot.waitSignal(view.optionsChanged):
        view.set_options({"normBatchOtherEdit": str(tmp_path)})  # a folder without a bundle
    assert feed_now(spec, view, s, ViewChoice())
    assert str(tmp_path) in problem.full_text() and view.column("batch") is None
    assert view.columns[0].side.opened and view.columns[1].side is None and not view.columns[1].heatmap.isVisible()
    tiny_bn = bundle("batch")
    folder = save_bundle(tmp_path / "tiny-bn", tiny_bn.model, tiny_bn.src_tokenizer, tiny_bn.tgt_tokenizer, {})
    monkeypatch.setattr(QtWidgets.QFileDialog, "getExistingDirectory", lambda *a, **k: str(folder))
    with qtbot.waitSignal(view.optionsChanged):
        qtbot.mouseClick(view.findChild(QtWidgets.QToolButton, "normBatchBrowseButton"), QtCore.Qt.MouseButton.LeftButton)
    assert view.options()["normBatchOtherEdit"] == str(folder)
    assert feed_now(spec, view, s, ViewChoice())
    assert problem.full_text() == "" and view.column("batch").side.name == "tiny-bn"
    assert not view.findChild(QtWidgets.QPushButton, "normBatchMeasureButton").isEnabled()  # its training data is unknown
    # a bundle with one layer per stack beside the open model's two: its column is empty at layer 2
    one = Transformer(dataclasses.replace(tiny_bn.config, n_encoder_layers=1, n_decoder_layers=1)).eval()
    shallow = save_bundle(tmp_path / "shallow", one, tiny_bn.src_tokenizer, tiny_bn.tgt_tokenizer, {})
    view.set_options({"normBatchOtherEdit": str(shallow)})
    assert feed_now(spec, view, s, ViewChoice(kind="encoder", layer=1))
    column = view.column("batch")
    assert view.site().site == "encoder.layers.1.norm1" and column.site is None and not column.heatmap.isVisible()
    view.select("encoder", 0)
    assert column.site.site == "encoder.layers.0.norm1" and column.heatmap.isVisible()


@pytest.mark.slow  # two export commands, each loading and running two models
def test_export_other_model_draws_both_sides_and_writes_the_other_sides_numbers(qapp, tmp_path, capsys):
    from attnviz.cli import main

    ln, bn = bundle("layer"), bundle("batch")
    ln_dir = save_bundle(tmp_path / "ln", ln.model, ln.src_tokenizer, ln.tgt_tokenizer, {})
    bn_dir = save_bundle(tmp_path / "bn", bn.model, bn.src_tokenizer, bn.tgt_tokenizer, {})
    out = tmp_path / "out"
    args = ["export", "--model", str(ln_dir), "--src", APPLES, "--steps", "3", "--view", "norm-batch", "--kind", "decoder",
            "--layer", "2", "--other-model", str(bn_dir), "--out", str(out)]
    for fmt in ("png", "npz"):
        assert main([*args, "--format", fmt]) == 0
    img = QtGui.QImage(str(out / "norm-batch_decoder_layer2.png"))
    assert not img.isNull() and img.width() > 300
    s = Session()  # the sentence as the command decodes it, and the other bundle's batch in a training-mode pass here
    s.set_bundle(load_bundle(ln_dir))
    s.set_inputs(APPLES, "")
    for _ in range(3):
        s.decoding.step()
    other = load_bundle(bn_dir)
    rows = batch_rows(other, s.current.src_ids, s.current.input_ids)
    src, tgt = padded([r[0] for r in rows], 0), padded([r[1] for r in rows], 0)
    x, valid = norm_input(training_copy(other.model), "decoder.layers.1.norm1", src, tgt)
    with np.load(out / "norm-batch_decoder_layer2.npz") as z:
        np.testing.assert_allclose(z["other_mean_without_pad"], x[valid].mean(0), atol=1e-5)
        np.testing.assert_allclose(z["other_var_without_pad"], x[valid].var(0), atol=1e-5)
        np.testing.assert_allclose(z["other_x"], x, atol=1e-5)
    capsys.readouterr()
    assert main(["export", "--model", str(ln_dir), "--src", APPLES, "--view", "ffn", "--other-model", str(bn_dir),
                 "--out", str(tmp_path / "no")]) == 2
    assert "--other-model" in capsys.readouterr().err and not (tmp_path / "no").exists()
