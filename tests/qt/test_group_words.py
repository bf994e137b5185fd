"""The attention views' "Words" switch and ``attnviz export --group-words``: matrices between words."""

from __future__ import annotations

import numpy as np
import pytest
from csv_helpers import read_csv
from PySide6 import QtWidgets

from attnviz.cli import main
from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame
from attnviz.core.analysis.word_groups import grouping_notes, language_of, word_spans
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import GROUP_WORDS, WORDS_LEGEND
from attnviz.qt.views.registry import build_view, view_spec
from attnviz.qt.widgets.heatmap import HoverInfo

SOURCE = ("我", "们", "去", "公", "园", "。")  # words: 我们 去 公园 。
TARGET = ("SOS", "▁I", "▁lo", "ve", "▁you", ".")  # words: SOS ▁I ▁love ▁you .
N_SOURCE_WORDS, N_TARGET_WORDS = 4, 5


def frame() -> AttentionFrame:
    rng = np.random.default_rng(0)

    def weights(nq: int, nk: int) -> np.ndarray:
        x = np.exp(rng.normal(size=(2, 2, nq, nk))).astype(np.float32)
        return x / x.sum(axis=-1, keepdims=True)

    sets = {
        "encoder": AttentionData("encoder", weights(len(SOURCE), len(SOURCE)), SOURCE, SOURCE),
        "cross": AttentionData("cross", weights(len(TARGET), len(SOURCE)), TARGET, SOURCE, highlight=len(TARGET) - 1),
    }
    return AttentionFrame(sets, predicted=TARGET[1:] + ("EOS",))


def shown(view) -> tuple[tuple[int, int], int, int]:
    """The [query, key] matrix the view draws, and how many query and key labels it shows."""
    if view.objectName() == "headDetailView":
        return view.plot.matrix().shape, len(view.plot.row_axis.labels()), len(view.plot.col_axis.labels())
    if view.objectName() == "linesView":
        w = view.figure_data().values["weight"]
        return w.shape[1:], len(view.lines.query_labels()), len(view.lines.key_labels())
    n_layers, n_heads, nq, nk = view.data().weights.shape  # the grid: every tile is one [query, key] matrix
    assert view.tiled_image().shape == (n_layers * (nq + 1) - 1, n_heads * (nk + 1) - 1)
    coords = view.figure_data().coords
    return (nq, nk), len(coords["query"]), len(coords["key"])


@pytest.mark.parametrize("name", ["grid", "head", "lines"])
def test_the_words_switch_shows_a_matrix_between_words(qtbot, name):
    view = build_view(view_spec(name))
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.set_data(frame())
    view.apply(ViewChoice(kind="cross", layer=1, head=0, mode="head"))
    switch = view.findChild(QtWidgets.QCheckBox, GROUP_WORDS)
    assert shown(view) == ((len(TARGET), len(SOURCE)), len(TARGET), len(SOURCE))
    switch.setChecked(True)
    assert shown(view) == ((N_TARGET_WORDS, N_SOURCE_WORDS), N_TARGET_WORDS, N_SOURCE_WORDS)
    assert view.options()[GROUP_WORDS] is True  # saved with the view's controls
    assert translate("base", WORDS_LEGEND) in [text for _, _, text in view.title.legend()]
    assert view.data().highlight == N_TARGET_WORDS - 1
    view.set_data(frame())  # the next frame is drawn between words too
    assert shown(view)[0] == (N_TARGET_WORDS, N_SOURCE_WORDS)
    view.set_options({GROUP_WORDS: False})
    assert shown(view) == ((len(TARGET), len(SOURCE)), len(TARGET), len(SOURCE))
    assert translate("base", WORDS_LEGEND) not in [text for _, _, text in view.title.legend()]


def test_a_word_row_links_to_its_pieces(qtbot):
    view = build_view(view_spec("head"))
    qtbot.addWidget(view)
    view.set_data(frame())
    view.apply(ViewChoice(kind="cross", layer=0, head=0, mode="head"))
    view.findChild(QtWidgets.QCheckBox, GROUP_WORDS).setChecked(True)
    view.show_linked_query("target", 3)  # the piece "ve", in the word "▁love"
    assert view.plot.linked_row() == 2
    with qtbot.waitSignal(view.queryHovered) as hovered:
        view.zoom.sigHovered.emit(HoverInfo(3, 1, 0.5, "▁you", "去"))  # the mouse over the word ▁you
    assert hovered.args == ["cross", 4]  # its piece's row, as the views of pieces count rows
    np.testing.assert_allclose(view.current_matrix().sum(axis=1), 1.0, atol=1e-6)



def test_export_group_words_writes_a_words_by_words_csv(qapp, tmp_path):
    args = ["export", "--src", "我们去公园。", "--tgt", "We'll go to the park.", "--view", "head", "--kind", "decoder",
            "--layer", "1", "--head", "2", "--format", "csv"]
    assert main([*args, "--out", str(tmp_path / "pieces")]) == 0
    assert main([*args, "--group-words", "--out", str(tmp_path / "words")]) == 0
    _, pieces, labels, _ = read_csv(tmp_path / "pieces" / "head_decoder_layer1_head2.csv")
    meta, words, queries, keys = read_csv(tmp_path / "words" / "head_decoder_layer1_head2.csv")
    spans = word_spans(labels, language_of(labels))
    assert len(spans) < len(labels)  # "▁We" "'" "ll" is one word
    assert words.shape == (len(spans), len(spans))
    expected = np.array([[pieces[qa:qb, ka:kb].sum(axis=1).mean() for ka, kb in spans] for qa, qb in spans])
    np.testing.assert_allclose(words, expected, atol=1e-6)
    assert queries == keys == ["".join(labels[a:b]) for a, b in spans]
    assert f"grouping: {grouping_notes()['grouping']}" in meta  # the core's note of the rows


def test_export_group_words_is_refused_by_a_view_without_words(qapp, tmp_path, capsys):
    assert main(["export", "--src", "我们去公园。", "--view", "pe", "--group-words", "--out", str(tmp_path)]) == 2
    assert "--group-words" in capsys.readouterr().err
