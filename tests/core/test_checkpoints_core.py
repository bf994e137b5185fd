"""Compare checkpoints (core/analysis/checkpoints.py): ΔA against two teacher-forced passes
subtracted here, a bundle against itself, and the folders it refuses in one line; a training
run's checkpoints compare as bundles; models of other vocabularies or architectures are each
forced on their own translation, with ΔA only where their token grids agree."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from attnviz.core.analysis.checkpoints import (
    NO_DELTA,
    ComparisonError,
    ForcedAttention,
    compare_checkpoints,
    compare_with_folder,
    figure_data,
    grid_difference,
)
from attnviz.core.bundle import BundleError, load_bundle, save_bundle
from attnviz.core.data import corpora as D
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced, teacher_forced_from_bundle
from attnviz.core.model.sites import KINDS
from attnviz.core.training import trainer as T
from attnviz.core.training.checkpoint import STATE_JSON
from attnviz.errors import AttnvizError
from attnviz.paths import default_model, models_dir

from tiny_models import random_model, tokenizers

SOURCE = "我明天去北京。"


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
    assert a.output_ids == b.output_ids == result.attention_a.output_ids == result.attention_b.output_ids  # both read A's greedy output
    assert result.on_a_tokens and result.difference == "" and result.delta_available and result.why_no_delta == ""
    for kind in KINDS:
        delta = b.all_attention(kind).astype(np.float64) - a.all_attention(kind)
        np.testing.assert_allclose(result.delta[kind], delta, atol=1e-6)
        np.testing.assert_allclose(result.moved[kind], 0.5 * np.abs(delta).sum(-1).mean(-1), atol=1e-6)
    greedy = DecodingSession.from_bundle(other, SOURCE)
    greedy.run()
    assert result.translation_b == greedy.translation()
    for forced, side in ((a, result.attention_a), (b, result.attention_b)):  # log P of A's output under each model
        assert side.log_prob == pytest.approx(-sum(p.loss for p in forced.steps), abs=1e-4)


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
    assert same.attention_a.log_prob == same.attention_b.log_prob


def test_the_figure_data_holds_every_head(result, bundle):
    data = figure_data(result)
    cfg = bundle.config
    assert data.dims == ("layer", "head") and data.shape == (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers, cfg.n_heads)
    assert data.coords["layer"][0] == "encoder 1" and data.coords["layer"][-1] == f"cross {cfg.n_decoder_layers}"
    np.testing.assert_array_equal(data.values["total_variation"], np.concatenate([result.moved[k] for k in KINDS]))
    assert str(data.extras["translation_b"]) == result.translation_b


HSK_SOURCE = "我爱你。"


@pytest.fixture(scope="module")
def hsk_only():
    return load_bundle(models_dir() / "hsk-only-zh-en")  # the default's sizes but 1800/2000 pieces, tokenizers trained on other data


@pytest.fixture(scope="module")
def across(bundle, hsk_only):
    return compare_checkpoints(bundle, hsk_only, HSK_SOURCE)


def own_run(bundle, source):
    run = DecodingSession.from_bundle(bundle, source)
    run.run()
    return run


def test_models_of_other_vocabularies_each_translate_and_attend_on_their_own_tokens(bundle, hsk_only, across):
    assert "src_vocab_size 5000 vs 1800" in across.difference and not across.on_a_tokens
    for model, side, translation in ((bundle, across.attention_a, across.translation_a), (hsk_only, across.attention_b, across.translation_b)):
        run = own_run(model, HSK_SOURCE)
        assert translation == run.translation() and side.output_ids == run.output_ids
        assert side.source_pieces == run.source.pieces and side.input_pieces == run.input_pieces
        forced = teacher_forced_from_bundle(model, HSK_SOURCE, run.translation())
        assert forced.output_ids == side.output_ids  # its own greedy output, read back by its own tokenizer
        for kind in KINDS:
            rows, cols = side.labels(kind)
            assert side.weights[kind].shape[2:] == (len(rows), len(cols))
            np.testing.assert_allclose(side.weights[kind].sum(-1), 1.0, atol=1e-5)
            np.testing.assert_allclose(side.weights[kind], forced.all_attention(kind), atol=1e-6)
        assert side.log_prob == pytest.approx(-sum(p.loss for p in forced.steps), abs=1e-4)
    assert across.attention_a.source_pieces != across.attention_b.source_pieces  # 我爱 is one piece in A, two in B


def test_models_on_other_token_grids_have_no_delta_and_say_so_in_one_line(across):
    assert not across.delta_available and across.why_no_delta == "tokens"
    assert across.delta == {} and across.moved == {} and across.rows() == []
    with pytest.raises(ValueError):
        across.summary()
    assert NO_DELTA["tokens"] in across.notices and all("\n" not in n for n in across.notices)
    assert across.kinds == KINDS


def test_the_figure_data_without_delta_holds_both_sides(across):
    data = figure_data(across)
    assert data.dims == ("model",) and data.coords["model"] == ("A zh-en", "B hsk-only-zh-en")
    np.testing.assert_array_equal(data.values["log_prob"], [across.attention_a.log_prob, across.attention_b.log_prob])
    np.testing.assert_array_equal(data.values["source_tokens"], [len(across.attention_a.source_pieces), len(across.attention_b.source_pieces)])
    assert not any(k.startswith("delta_") for k in data.extras)
    for tag, side in (("a", across.attention_a), ("b", across.attention_b)):
        for kind in KINDS:
            np.testing.assert_array_equal(data.extras[f"attention_{tag}_{kind}"], side.weights[kind])
        assert tuple(data.extras[f"source_pieces_{tag}"]) == side.source_pieces
    assert str(data.extras["translation_b"]) == across.translation_b


def test_other_models_that_split_the_sentence_alike_get_delta_on_their_own_tokens(bundle, tmp_path):
    path = save_bundle(tmp_path / "eps", bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, bundle.meta)
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    config["norm_eps"] = 1e-3  # another architecture by its config, nearly the same model
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    r = compare_with_folder(bundle, path, SOURCE)
    assert r.difference.startswith("another architecture (norm_eps") and not r.on_a_tokens
    assert r.delta_available and r.attention_a.input_pieces == r.attention_b.input_pieces
    for kind in KINDS:
        np.testing.assert_allclose(r.delta[kind], r.attention_b.weights[kind] - r.attention_a.weights[kind])
        assert 0 < np.abs(r.delta[kind]).max() < 0.1
    assert figure_data(r).dims == ("layer", "head")


def side(sources=("我", "爱"), fed=("SOS", "▁I"), heads=(3, 4)):
    return ForcedAttention(sources, (5, 3), ("▁I", "EOS"), fed, -1.0, {"cross": np.full((*heads, len(fed), len(sources)), 0.5)})


@pytest.mark.parametrize("b,why", [(side(), ""), (side(sources=("我爱",)), "tokens"), (side(fed=("SOS", "▁We")), "tokens"),
                                   (side(heads=(2, 4)), "heads"), (side(heads=(3, 8)), "heads")],
                         ids=["same", "source", "fed", "layers", "heads"])
def test_delta_needs_the_same_source_and_fed_pieces_and_heads(b, why):
    assert grid_difference(side(), b) == why


def test_another_architecture_is_compared_on_each_model_s_own_tokens(bundle, tmp_path):
    src, tgt = tokenizers()
    path = save_bundle(tmp_path / "tiny", random_model(), src, tgt)
    r = compare_with_folder(bundle, path, SOURCE)
    assert "another architecture" in r.difference and "n_encoder_layers 3 vs 2" in r.difference and "\n" not in r.difference
    assert r.why_no_delta in NO_DELTA and not r.delta
    assert r.attention_b.weights["cross"].shape[:2] == (2, 4) and r.attention_a.weights["cross"].shape[:2] == (3, 4)


def test_a_model_that_does_not_translate_is_refused_in_one_line(bundle, tmp_path):
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    from tiny_families import build_bert

    folder = build_bert(tmp_path / "tiny-bert")
    with pytest.raises(ComparisonError, match="encoder-only") as err:
        compare_with_folder(bundle, folder, SOURCE)
    assert "\n" not in str(err.value) and str(folder) in str(err.value)


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
