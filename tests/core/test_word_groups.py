"""Words, not only pieces: the grouping of pieces into words and of attention between them."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame
from attnviz.core.analysis.word_groups import (
    group_attention,
    group_data,
    group_frame,
    language_of,
    word_spans,
)
from attnviz.core.data.cedict_words import segment_chinese

TARGET = ("SOS", "▁I", "▁lo", "ve", "▁you", "▁It", "'", "s", ".", "EOS")
TARGET_WORDS = [(0, 1), (1, 2), (2, 4), (4, 5), (5, 8), (8, 9), (9, 10)]


def softmax_rows(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = np.exp(rng.normal(size=shape)).astype(np.float32)
    return x / x.sum(axis=-1, keepdims=True)


def by_hand(w: np.ndarray, qs, ks) -> np.ndarray:
    """Keys summed over a word's pieces, then query rows averaged over a word's pieces, cell by cell."""
    out = np.zeros((len(qs), len(ks)))
    for i, (qa, qb) in enumerate(qs):
        for j, (ka, kb) in enumerate(ks):
            out[i, j] = sum(sum(float(w[q, k]) for k in range(ka, kb)) for q in range(qa, qb)) / (qb - qa)
    return out


def test_the_segmenter_splits_a_sentence_into_its_words():
    assert segment_chinese("我们去公园") == ["我们", "去", "公园"]
    assert word_spans(["我", "们", "去", "公", "园"], "zh") == [(0, 2), (2, 3), (3, 5)]
    assert segment_chinese("今天天气很好，我们去公园吧。") == ["今天", "天气", "很", "好", "，", "我们", "去", "公园", "吧", "。"]
    assert segment_chinese("2024年Hello") == ["2024", "年", "Hello"]  # a run of digits or letters is one word


def test_a_piece_that_straddles_a_boundary_belongs_to_the_word_where_it_starts():
    # 我|爱|你: "我爱" starts in 我 and takes 爱 with it; 你 and 。 are words of their own
    assert word_spans(["我爱", "你", "。"], "zh") == [(0, 1), (1, 2), (2, 3)]
    # 我们|去|公园: "们去" starts in 我们, so 我 and 们去 are one word; "公" and "园" are 公园
    assert word_spans(["我", "们去", "公", "园", "EOS"], "zh") == [(0, 2), (2, 4), (4, 5)]
    assert word_spans(["▁我们", "去", "公园"], "zh") == [(0, 1), (1, 2), (2, 3)]  # a word mark reads as a space


def test_word_marks_group_the_other_side_and_special_tokens_and_punctuation_stay_alone():
    assert word_spans(TARGET, "en") == TARGET_WORDS
    assert word_spans(["▁park", ",", "▁a", "b", "<unk>", "c"], "en") == [(0, 1), (1, 2), (2, 4), (4, 5), (5, 6)]
    assert language_of(TARGET) == "en" and language_of(("SOS", "我们", "EOS")) == "zh"


def test_rows_still_sum_to_one():
    rng = np.random.default_rng(0)
    w = softmax_rows(rng, 2, 3, len(TARGET), len(TARGET))
    g = group_attention(w, TARGET_WORDS, TARGET_WORDS)
    assert g.shape == (2, 3, len(TARGET_WORDS), len(TARGET_WORDS))
    np.testing.assert_allclose(g.sum(axis=-1), 1.0, atol=1e-6)


def test_a_word_of_one_piece_keeps_its_row_and_its_column():
    rng = np.random.default_rng(1)
    w = softmax_rows(rng, len(TARGET), len(TARGET))
    pieces = [(i, i + 1) for i in range(len(TARGET))]
    by_key_word = group_attention(w, pieces, TARGET_WORDS)  # queries as they were
    by_query_word = group_attention(w, TARGET_WORDS, pieces)  # keys as they were
    for word, (a, b) in enumerate(TARGET_WORDS):
        if b - a == 1:
            np.testing.assert_array_equal(by_key_word[:, word], w[:, a])  # its column
            np.testing.assert_array_equal(by_query_word[word], w[a])  # its row
    np.testing.assert_array_equal(group_attention(w, pieces, pieces), w)


def test_a_hand_made_example_sums_keys_and_averages_queries():
    w = np.array([[0.1, 0.2, 0.3, 0.4],
                  [0.4, 0.4, 0.1, 0.1],
                  [0.0, 0.5, 0.5, 0.0],
                  [0.25, 0.25, 0.25, 0.25]], dtype=np.float32)
    qs, ks = [(0, 1), (1, 4)], [(0, 2), (2, 3), (3, 4)]
    g = group_attention(w, qs, ks)
    np.testing.assert_allclose(g, by_hand(w, qs, ks), atol=1e-7)
    np.testing.assert_allclose(g, [[0.3, 0.3, 0.4], [(0.8 + 0.5 + 0.5) / 3, (0.1 + 0.5 + 0.25) / 3, (0.1 + 0.0 + 0.25) / 3]], atol=1e-7)
    rng = np.random.default_rng(2)
    w = softmax_rows(rng, len(TARGET), 5)
    keys = [(0, 2), (2, 3), (3, 5)]
    np.testing.assert_allclose(group_attention(w, TARGET_WORDS, keys), by_hand(w, TARGET_WORDS, keys), atol=1e-6)


def test_spans_that_do_not_cover_the_pieces_are_refused():
    w = np.full((3, 3), 1 / 3, dtype=np.float32)
    for spans in ([(0, 1), (2, 3)], [(0, 2)], [(0, 1), (1, 1), (1, 3)]):
        with pytest.raises(ValueError):
            group_attention(w, spans, [(0, 3)])


def test_a_frame_between_words_keeps_the_current_row_the_predictions_and_the_rollout():
    rng = np.random.default_rng(3)
    source = ("我", "们", "去", "公", "园", "。")
    src_words = [(0, 2), (2, 3), (3, 5), (5, 6)]
    cross = AttentionData("cross", softmax_rows(rng, 2, 2, len(TARGET), len(source)), TARGET, source, highlight=3,
                          rollout=lambda: softmax_rows(np.random.default_rng(4), len(TARGET), len(source)))
    frame = group_frame(AttentionFrame({"cross": cross}, predicted=TARGET[1:] + ("EOS",)))
    d = frame.sets["cross"]
    assert d.query_labels == ("SOS", "▁I", "▁love", "▁you", "▁It's", ".", "EOS")
    assert d.key_labels == ("我们", "去", "公园", "。")
    assert d.highlight == 2  # piece row 3 ("ve") is in the word ▁love
    assert frame.predicted == ("▁I", "▁lo", "▁you", "▁It", ".", "EOS", "EOS")  # each word's last piece's prediction
    assert frame.spans["cross"] == (tuple(TARGET_WORDS), tuple(src_words))
    np.testing.assert_allclose(d.weights[1, 0], by_hand(cross.weights[1, 0], TARGET_WORDS, src_words), atol=1e-6)
    np.testing.assert_allclose(d.mean(0), by_hand(cross.mean(0), TARGET_WORDS, src_words), atol=1e-6)
    np.testing.assert_allclose(d.rollout_matrix(), by_hand(cross.rollout_matrix(), TARGET_WORDS, src_words), atol=1e-6)


def test_grouping_by_pieces_changes_nothing():
    rng = np.random.default_rng(5)
    d = AttentionData("encoder", softmax_rows(rng, 1, 2, 3, 3), ("a", "b", "c"), ("a", "b", "c"))
    same = group_data(d, [(0, 1), (1, 2), (2, 3)], [(0, 1), (1, 2), (2, 3)])
    np.testing.assert_array_equal(same.weights, d.weights)
    assert same.query_labels == d.query_labels and not same.has_rollout
