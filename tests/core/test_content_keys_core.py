"""Content keys only: the sink keys found from their labels, and attention renormalised over the others."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.core.analysis.content_keys import content_data, content_frame, is_sink, renormalise, sink_keys
from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame
from attnviz.core.analysis.word_groups import group_frame

SOURCE = ("▁我", "爱", "你", "。", "EOS")
TARGET = ("SOS", "▁It", "'", "s", "▁a", "▁cat", ".", "EOS")


def softmax_rows(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = np.exp(rng.normal(size=shape)).astype(np.float32)
    return x / x.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("label", ["SOS", "BOS", "EOS", "PAD", "。", "▁.", "?!", "▁,", "…", "«", "▁¿", "（"])
def test_start_end_and_padding_tokens_and_punctuation_alone_are_sinks(label):
    assert is_sink(label)


@pytest.mark.parametrize("label", ["▁cat", "猫", "'s", "UNK", "▁", "$", "▁+", "a.", "3.5", "<unk>"])
def test_words_symbols_and_pieces_with_a_letter_are_content(label):
    assert not is_sink(label)


@pytest.mark.parametrize("label", ["'", "’", "▁'", "-"])
def test_an_apostrophe_or_hyphen_alone_is_part_of_a_word_not_a_sink(label):
    assert not is_sink(label)  # ▁It ' s: the apostrophe joins the word, as the word grouping joins it


def test_sink_keys_flags_each_label():
    assert sink_keys(TARGET).tolist() == [True, False, False, False, False, False, True, True]
    assert sink_keys(()).shape == (0,)


def test_a_small_matrix_renormalised_by_hand():
    w = np.array([[0.50, 0.10, 0.30, 0.10],  # keys: SOS, ▁cat, ▁sat, .
                  [0.20, 0.20, 0.20, 0.40],
                  [0.70, 0.00, 0.00, 0.30]], dtype=np.float32)  # all on SOS and "."
    sinks = sink_keys(("SOS", "▁cat", "▁sat", "."))
    expected = np.array([[0.10 / 0.40, 0.30 / 0.40],
                         [0.20 / 0.40, 0.20 / 0.40],
                         [np.nan, np.nan]])
    out = renormalise(w, sinks)
    assert out.shape == (3, 2) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_rows_sum_to_one_or_are_nan_when_all_their_weight_was_on_sinks():
    rng = np.random.default_rng(0)
    w = softmax_rows(rng, 2, 3, 6, len(TARGET))
    w[1, 2, 4] = 0.0
    w[1, 2, 4, [0, 6, 7]] = [0.5, 0.25, 0.25]  # one row whose whole weight is on SOS, "." and EOS
    with np.errstate(all="raise"):  # never divided by zero
        out = renormalise(w, sink_keys(TARGET))
    assert out.shape == (2, 3, 6, 5)
    empty = np.isnan(out).all(axis=-1)
    assert empty.sum() == 1 and empty[1, 2, 4]
    np.testing.assert_allclose(out[~empty].sum(axis=-1), 1.0, atol=1e-6)
    assert not np.isnan(out[~empty]).any()


def test_renormalise_refuses_sink_flags_of_another_length():
    with pytest.raises(ValueError):
        renormalise(np.ones((2, 3)), np.zeros(4, bool))


def frame() -> AttentionFrame:
    rng = np.random.default_rng(1)
    cross = AttentionData("cross", softmax_rows(rng, 2, 2, len(TARGET), len(SOURCE)), TARGET, SOURCE, highlight=3)
    decoder = np.tril(softmax_rows(rng, 2, 2, len(TARGET), len(TARGET)))
    decoder = AttentionData("decoder", decoder / decoder.sum(axis=-1, keepdims=True), TARGET, TARGET)
    return AttentionFrame({"cross": cross, "decoder": decoder}, predicted=TARGET[1:] + ("EOS",))


def test_a_frame_keeps_its_rows_and_loses_its_sink_columns():
    f = frame()
    c = content_frame(f)
    assert c.source is f and c.predicted == f.predicted
    assert c.sets["cross"].key_labels == ("▁我", "爱", "你") and c.keys["cross"] == (0, 1, 2)
    assert c.sets["decoder"].key_labels == ("▁It", "'", "s", "▁a", "▁cat") and c.keys["decoder"] == (1, 2, 3, 4, 5)
    assert c.sets["cross"].query_labels == TARGET and c.sets["cross"].highlight == 3
    w = f.sets["cross"].weights
    np.testing.assert_allclose(c.sets["cross"].weights, w[..., :3] / w[..., :3].sum(axis=-1, keepdims=True), rtol=1e-6)
    first = c.sets["decoder"].weights[:, :, 0]  # the decoder's first row reads SOS alone: nothing left
    assert np.isnan(first).all()


def test_the_mean_over_heads_is_the_mean_renormalised():
    d = frame().sets["cross"]
    c = content_data(d)
    mean = d.weights.mean(axis=1)[..., :3]
    np.testing.assert_allclose(c.mean(1), mean[1] / mean[1].sum(axis=-1, keepdims=True), rtol=1e-6)


def test_content_keys_compose_with_words_rows_still_sum_to_one():
    words = group_frame(frame())
    c = content_frame(words)
    d = c.sets["cross"]
    assert not any(is_sink(label) for label in d.key_labels) and "。" not in d.key_labels
    assert d.query_labels == ("SOS", "▁It's", "▁a", "▁cat", ".", "EOS")  # words: the apostrophe kept in its word
    np.testing.assert_allclose(d.weights.sum(axis=-1), 1.0, atol=1e-6)
    dec = c.sets["decoder"]
    assert dec.key_labels == ("▁It's", "▁a", "▁cat")
    rows = dec.weights.sum(axis=-1)
    np.testing.assert_allclose(rows[..., 1:], 1.0, atol=1e-6)  # the first row (SOS) reads only SOS: empty
    assert np.isnan(rows[..., 0]).all()
    # grouping first: a word's row is its pieces' mean row, renormalised over the content words
    g = words.sets["cross"].weights
    kept = [i for i, label in enumerate(words.sets["cross"].key_labels) if not is_sink(label)]
    np.testing.assert_allclose(d.weights, g[..., kept] / g[..., kept].sum(axis=-1, keepdims=True), rtol=1e-6)


def test_a_kind_whose_data_is_unchanged_is_taken_from_the_previous_frame():
    f = frame()
    first = content_frame(f)
    rng = np.random.default_rng(2)
    cross = AttentionData("cross", softmax_rows(rng, 2, 2, len(TARGET), len(SOURCE)), TARGET, SOURCE)
    second = content_frame(AttentionFrame({"cross": cross, "decoder": f.sets["decoder"]}), first)
    assert second.sets["decoder"] is first.sets["decoder"] and second.keys["decoder"] == first.keys["decoder"]
    assert second.sets["cross"] is not first.sets["cross"]
    w = cross.weights[..., :3]
    np.testing.assert_allclose(second.sets["cross"].weights, w / w.sum(axis=-1, keepdims=True), rtol=1e-6)
