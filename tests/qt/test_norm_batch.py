"""The LN-vs-BN view on a real batch: what a layer-norm model says, a step that runs only the
decoder, and the accuracy gap of the batch-norm bundle measured against the core's metrics."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from PySide6 import QtCore

from attnviz.core.analysis.norm_batch import norm_batch_for, training_examples
from attnviz.core.bundle import load_bundle
from attnviz.core.data import corpora as D
from attnviz.core.model.modules import MaskedBatchNorm
from attnviz.core.training.evaluation import teacher_forced_metrics
from attnviz.paths import models_dir
from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.norm_batch import QtNormBatchView
from attnviz.qt.views.registry import feed_now, view_spec

from inside_fixtures import bundle, session
from story_helpers import FISH, SIZE, session_for

SRC = FISH


# -- LN vs BN on a batch ------------------------------------------------------------------------------------
def test_norm_batch_view_on_a_layer_norm_model_says_batch_norm_needs_the_bundle(make_view):
    s = session(steps=3)
    view = make_view(QtNormBatchView, SIZE, shown=True)
    feed_now(view_spec("norm-batch"), view, session_for(bundle(), s), ViewChoice())
    view.select("encoder", 1)
    assert view.site().site == "encoder.layers.1.norm1"
    assert "BatchNorm needs the BatchNorm bundle" in view.title.plain_text()
    assert not view.measure_button.isEnabled()
    # the LN side: sentence 1's per-token std before LN, read off the trace here
    x = s.accumulated("encoder.layers.1.norm1.input")
    _, std = view.spread_lines[0].getData()
    np.testing.assert_allclose(std, x.std(-1), atol=1e-5)
    _, normalized = view.spread_lines[1].getData()
    np.testing.assert_allclose(normalized, 1.0, atol=1e-3)


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


def test_norm_batch_view_measures_the_accuracy_gap_of_the_batch_norm_bundle(make_view, qtbot):
    b = load_bundle(models_dir() / "hsk-zh-en-batchnorm")
    s = Session()
    s.set_bundle(b)
    s.set_inputs(SRC, "")
    s.decoding.run()
    view = make_view(QtNormBatchView, SIZE, shown=True)
    assert feed_now(view_spec("norm-batch"), view, s, ViewChoice())
    view.select("encoder", 0)
    site = view.site()
    assert "PAD" in view.labels.texts() and site.running is not None
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
    assert gap.single < min(gap.batch, gap.running)  # one sentence's own statistics: the worst
    assert f"batch statistics {gap.batch:.1%} · running {gap.running:.1%}" in view.result_label.full_text()
    assert f"{gap.running:.1%} with running ones" in view.title.plain_text()
    with torch.no_grad():  # measuring left the session's model alone
        torch.testing.assert_close(b.model(torch.tensor([s.current.src_ids]), torch.tensor([s.current.input_ids])), before)
    qtbot.wait_until(lambda: view.measure_button.isEnabled())
    view.grab().save("/tmp/story_b_norm_batch.png")


def _train_mode_accuracy(model, examples) -> float:
    """Teacher-forced token accuracy with the BatchNorms in training mode (momentum 0), dropout off."""
    m = copy.deepcopy(model)
    for mod in m.modules():
        if isinstance(mod, MaskedBatchNorm):
            mod.train()
            mod.momentum = 0.0
    cfg = m.config
    correct = tokens = 0
    with torch.no_grad():
        for idx in D.make_batches(examples, 500, shuffle=False):
            batch = D.collate([examples[i] for i in idx], cfg.pad_id, cfg.bos_id, cfg.eos_id)
            mask = batch.labels != cfg.pad_id
            correct += int(((m(batch.src, batch.tgt_in).argmax(-1) == batch.labels) & mask).sum())
            tokens += int(mask.sum())
    return correct / tokens
