"""Compare checkpoints (core/analysis/checkpoints.py): ΔA against two teacher-forced passes
subtracted here, a bundle against itself, and the folders it refuses in one line; a training
run's checkpoints compare as bundles."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from attnviz.core.analysis.checkpoints import ComparisonError, compare_checkpoints, compare_with_folder, figure_data
from attnviz.core.bundle import BundleError, load_bundle, save_bundle
from attnviz.core.data import corpora as D
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced
from attnviz.core.model.sites import KINDS
from attnviz.core.training import trainer as T
from attnviz.core.training.checkpoint import STATE_JSON
from attnviz.errors import AttnvizError
from attnviz.paths import default_model, models_dir

from tiny_models import random_model, tokenizers

SOURCE = "我明天去北京。"


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(default_model())


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """The default bundle saved again (weights stored as float16, as every save does) and that copy
    with the queries of its second cross-attention layer shaken: the folders of A and B."""
    b, folder = load_bundle(default_model()), tmp_path_factory.mktemp("checkpoints")
    a_path = save_bundle(folder / "copy", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)
    w = b.model.decoder.layers[1].cross_attn.w_q.weight
    with torch.no_grad():
        w.add_(0.5 * torch.randn(w.shape, generator=torch.Generator().manual_seed(0)))
    return a_path, save_bundle(folder / "perturbed", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)


@pytest.fixture(scope="module")
def copy(copies):
    return load_bundle(copies[0])


@pytest.fixture(scope="module")
def result(copy, copies):
    return compare_with_folder(copy, copies[1], SOURCE)


def test_the_difference_is_b_s_teacher_forced_attention_minus_a_s(copy, copies, result):
    other = load_bundle(copies[1])
    a = teacher_forced(copy.model, copy.src_tokenizer, copy.tgt_tokenizer, SOURCE, result.translation_a)
    b = teacher_forced(other.model, other.src_tokenizer, other.tgt_tokenizer, SOURCE, result.translation_a)
    assert a.output_ids == b.output_ids == result.output_ids  # both read A's greedy output
    for kind in KINDS:
        delta = b.all_attention(kind).astype(np.float64) - a.all_attention(kind)
        np.testing.assert_allclose(result.delta[kind], delta, atol=1e-6)
        np.testing.assert_allclose(result.moved[kind], 0.5 * np.abs(delta).sum(-1).mean(-1), atol=1e-6)
    greedy = DecodingSession.from_bundle(other, SOURCE)
    greedy.run()
    assert result.translation_b == greedy.translation()
    assert result.log_prob_b < result.log_prob_a  # A's own greedy output is likelier under A


def test_only_the_shaken_layer_and_what_reads_it_move(result):
    assert not result.delta["encoder"].any()
    assert not result.delta["decoder"][:2].any() and not result.delta["cross"][0].any()  # below the change
    assert result.moved["cross"][1].min() > 0.01 and result.moved["decoder"][2].max() > 0  # the change and above
    kind, layer, head, tv = result.moved_most()
    assert (kind, layer) == ("cross", 1) and tv == pytest.approx(result.moved["cross"].max())


def test_a_bundle_against_itself_differs_nowhere(bundle):
    same = compare_with_folder(bundle, default_model(), SOURCE)
    assert same.translation_a == same.translation_b and same.same_translation
    assert all(not d.any() for d in same.delta.values())
    assert same.log_prob_a == same.log_prob_b


def test_the_figure_data_holds_every_head(result, bundle):
    data = figure_data(result)
    cfg = bundle.config
    assert data.dims == ("layer", "head") and data.shape == (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers, cfg.n_heads)
    assert data.coords["layer"][0] == "encoder 1" and data.coords["layer"][-1] == f"cross {cfg.n_decoder_layers}"
    np.testing.assert_array_equal(data.values["total_variation"], np.concatenate([result.moved[k] for k in KINDS]))
    assert str(data.extras["translation_b"]) == result.translation_b


def test_another_architecture_is_refused_in_one_line(bundle, tmp_path):
    src, tgt = tokenizers()
    path = save_bundle(tmp_path / "tiny", random_model(), src, tgt)
    with pytest.raises(ComparisonError) as err:
        compare_with_folder(bundle, path, SOURCE)
    text = str(err.value)
    assert "\n" not in text and str(path) in text and "another architecture" in text
    assert "n_encoder_layers 3 vs 2" in text and "n_decoder_layers 3 vs 2" in text


def test_another_vocabulary_of_the_same_sizes_is_refused_in_one_line(bundle):
    other = models_dir() / "hsk-zh-en-hsk-only"  # the same sizes, tokenizers trained on other data
    with pytest.raises(ComparisonError, match=r"another source vocabulary \(id \d+ is .* vs .*\)$") as err:
        compare_with_folder(bundle, other, SOURCE)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("make", [lambda p: p.mkdir(), lambda p: (p.mkdir(), (p / "notes.txt").write_text("hi")), lambda p: None],
                         ids=["empty", "other files", "missing"])
def test_a_folder_that_is_no_bundle_is_refused_in_one_line(bundle, tmp_path, make):
    path = tmp_path / "not-a-bundle"
    make(path)
    with pytest.raises(BundleError) as err:
        compare_with_folder(bundle, path, SOURCE)
    assert isinstance(err.value, AttnvizError) and "\n" not in str(err.value) and str(path) in str(err.value)


def test_two_checkpoints_of_a_training_run_compare_as_bundles(tmp_path):
    """The output folder is rewritten as a bundle every epoch: a copy of the first epoch's against the last."""
    data = D.synthetic("reverse", n=120, min_len=3, max_len=6, seed=1)
    config = dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, dropout=0.1, norm_placement="pre", max_len=32)
    options = T.TrainOptions(epochs=2, lr=3e-3, warmup=5, batch_tokens=120, seed=0, n_probes=1, eval_bleu=False, final_eval=False, device="cpu")
    trainer = T.Trainer.create(data, config, options, tmp_path / "run", src_vocab=32, tgt_vocab=32,
                               src_tokenizer_type="word", tgt_tokenizer_type="word")
    trainer.add_callback("checkpoint", lambda e: e.epoch == 1 and shutil.copytree(e.path, tmp_path / "epoch1"))
    assert trainer.fit().ok
    assert (tmp_path / "epoch1" / STATE_JSON).is_file()  # a checkpoint, with its training state
    first = load_bundle(tmp_path / "epoch1")
    result = compare_with_folder(first, tmp_path / "run", data.train[0].src)
    assert set(result.delta) == set(KINDS) and result.summary().shape == (3, 2)
    assert result.summary().max() > 0
    assert compare_checkpoints(first, first, data.train[0].src).summary().max() == 0
