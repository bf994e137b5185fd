"""LayerNorm and BatchNorm side by side (attnviz.core.analysis.norm_pair): the other bundle on the
same sentence, its BatchNorm batch from a training-mode pass, the ids it reads, and a folder that
holds no bundle."""

from __future__ import annotations

import numpy as np
from norm_passes import norm_input, padded, training_copy

from attnviz.core.analysis.norm_batch import batch_rows, norm_batch_builder
from attnviz.core.analysis.norm_pair import (
    OTHER_BUNDLES,
    OtherBundle,
    default_other,
    default_other_name,
    folder_key,
    ids_for,
    norm_pair_frame,
    shares_tokenizers,
)
from attnviz.core.bundle import Bundle, load_bundle, save_bundle
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.decoding.session import DecodingSession

from tiny_models import EN, ZH, random_model, tokenizers

SRC = "我喜欢吃苹果。"


def tiny(norm: str, seed: int = 0) -> Bundle:
    src, tgt = tokenizers()
    return Bundle(random_model(norm, "pre", seed=seed), src, tgt, {})


def saved(tmp_path, norm: str, meta: dict | None = None) -> str:
    b = tiny(norm, seed=1)
    return str(save_bundle(tmp_path / f"tiny-{norm}", b.model, b.src_tokenizer, b.tgt_tokenizer, meta))


def decoded(b: Bundle, steps: int = 3) -> DecodingSession:
    s = DecodingSession.from_bundle(b, SRC, max_len=12)
    for _ in range(steps):
        s.step()
    return s


def test_the_other_bundle_runs_beside_the_open_one_in_a_training_mode_pass(tmp_path):
    a = tiny("layer")
    path = saved(tmp_path, "batch", {"data": {"spec": "somewhere"}})
    s = decoded(a)
    other = OtherBundle(a)
    frame = norm_pair_frame(norm_batch_builder(a), other, SRC, s.src_ids, s.input_ids, path, folder_key(path))
    assert frame.problem == "" and [(x.batch.norm, x.opened) for x in frame.sides] == [("layer", True), ("batch", False)]
    assert frame.sides[1].name == "tiny-batch" and frame.sides[1].batch.batch_statistics
    b = other.builder(path, folder_key(path))[0].bundle
    assert frame.measure is not None and frame.measure.args == (b,) and frame.model is b.model  # the BatchNorm model's gap
    # the same sentences through a copy of b in training mode, dropout off
    trained = training_copy(load_bundle(path).model)
    rows = batch_rows(b, s.src_ids, s.input_ids)  # the same tokenizers: the same ids
    src, tgt = padded([list(r[0]) for r in rows], 0), padded([list(r[1]) for r in rows], 0)
    for site in ("encoder.layers.1.norm2", "decoder.layers.1.norm1", "decoder.final_norm"):
        x, valid = norm_input(trained, site, src, tgt)
        got = frame.sides[1].batch.get(site)
        np.testing.assert_allclose(got.without_pad().mean, x[valid].mean(0), atol=1e-5)
        np.testing.assert_allclose(got.without_pad().var, x[valid].var(0), atol=1e-5)
    # a later step keeps the loaded bundle and its builder
    assert other.builder(path, folder_key(path))[0] is other.builder(path, folder_key(path))[0]


def test_a_folder_without_a_bundle_leaves_the_open_side_alone_and_says_why(tmp_path):
    a = tiny("layer")
    s = decoded(a)
    builder, other = norm_batch_builder(a), OtherBundle(a)
    frame = norm_pair_frame(builder, other, SRC, s.src_ids, s.input_ids, str(tmp_path), folder_key(str(tmp_path)))
    assert [x.opened for x in frame.sides] == [True] and frame.measure is None and frame.model is a.model
    assert str(tmp_path) in frame.problem and "\n" not in frame.problem
    nul = norm_pair_frame(builder, other, SRC, s.src_ids, s.input_ids, "a\x00b", folder_key("a\x00b"))
    assert "NUL" in nul.problem and len(nul.sides) == 1


def test_another_tokenizer_reads_the_sentence_as_text():
    a = tiny("layer")
    src2 = Tokenizer.train(ZH * 3, vocab_size=50, add_dummy_prefix=False)
    tgt2 = Tokenizer.train(EN * 3, vocab_size=70, model_type="bpe")
    b = Bundle(a.model, src2, tgt2, {})
    assert shares_tokenizers(a, tiny("batch")) and not shares_tokenizers(a, b)
    cfg = a.config
    tgt_ids = (cfg.bos_id, *a.tgt_tokenizer.encode("I like eating apples."))
    assert ids_for(a, tiny("batch"), SRC, (5, 6), tgt_ids, True) == ((5, 6), tgt_ids)
    src, tgt = ids_for(a, b, SRC, (5, 6), tgt_ids, False)
    assert src == tuple(src2.encode(SRC)) and tgt == (cfg.bos_id, *tgt2.encode("I like eating apples."))


def test_the_default_other_is_the_other_bundled_model():
    assert default_other(tiny("layer").config).name == OTHER_BUNDLES["layer"] == "zh-en-small-batchnorm"
    assert default_other(tiny("batch").config).name == OTHER_BUNDLES["batch"] == "zh-en-small"
    assert all(default_other(tiny(n).config).is_dir() for n in ("layer", "batch"))
    assert default_other_name("rms") == "zh-en-small-batchnorm"  # any norm but BatchNorm gets the BatchNorm bundle beside it
