"""The attention views' "Content" switch and ``attnviz export --content-only``: rows renormalised over the keys that are not sinks."""

from __future__ import annotations

import numpy as np
import pytest
from csv_helpers import read_csv
from PySide6 import QtWidgets

from attnviz.cli import main
from attnviz.core.analysis.content_keys import content_notes
from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import CONTENT_LEGEND, CONTENT_ONLY, EMPTY_ROW_LEGEND, GROUP_WORDS
from attnviz.qt.views.registry import build_view, view_spec
from attnviz.qt.widgets.heatmap import HoverInfo

SOURCE = ("我", "们", "去", "公", "园", "。", "EOS")  # sinks: 。 EOS
TARGET = ("SOS", "▁We", "'", "ll", "▁go", ".")  # sinks: SOS .
SOURCE_CONTENT, TARGET_CONTENT = ("我", "们", "去", "公", "园"), ("▁We", "'", "ll", "▁go")
SOURCE_CONTENT_WORDS = ("我们", "去", "公园")


def frame() -> AttentionFrame:
    rng = np.random.default_rng(0)

    def weights(nq: int, nk: int) -> np.ndarray:
        x = np.exp(rng.normal(size=(2, 2, nq, nk))).astype(np.float32)
        return x / x.sum(axis=-1, keepdims=True)

    decoder = np.tril(weights(len(TARGET), len(TARGET)))
    sets = {
        "cross": AttentionData("cross", weights(len(TARGET), len(SOURCE)), TARGET, SOURCE, highlight=len(TARGET) - 1),
        "decoder": AttentionData("decoder", decoder / decoder.sum(axis=-1, keepdims=True), TARGET, TARGET),
    }
    return AttentionFrame(sets, predicted=TARGET[1:] + ("EOS",))


def shown(view) -> tuple[np.ndarray, tuple[str, ...], tuple[str, ...]]:
    """The [query, key] matrix the view draws (the grid: its selected tile), its query labels and its key labels."""
    if view.objectName() == "headDetailView":
        return view.plot.matrix(), tuple(view.plot.row_axis.labels()), tuple(view.plot.col_axis.labels())
    if view.objectName() == "linesView":
        return view.figure_data().values["weight"][0], tuple(view.lines.query_labels()), tuple(view.lines.key_labels())
    coords = view.figure_data().coords  # the grid
    n_layers, n_heads, nq, nk = view.data().weights.shape
    assert view.tiled_image().shape == (n_layers * (nq + 1) - 1, n_heads * (nk + 1) - 1)
    return view.data().weights[view.selected()], coords["query"], coords["key"]


def legend(view) -> list[str]:
    return [text for _, _, text in view.title.legend()]


def open_view(qtbot, name: str, kind: str = "cross"):
    view = build_view(view_spec(name))
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.set_data(frame())
    view.apply(ViewChoice(kind=kind, layer=1, head=0, mode="head"))
    if name == "lines":
        view.set_heads([0])
    return view


def renormalised_by_hand(w: np.ndarray, keep: list[int]) -> np.ndarray:
    """Keep the columns ``keep``; divide each row by what it keeps (NaN where it keeps nothing)."""
    kept = np.asarray(w, dtype=np.float64)[:, keep]
    with np.errstate(invalid="ignore"):
        return kept / kept.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("name", ["grid", "head", "lines"])
def test_the_content_switch_drops_the_sink_keys_and_renormalises_the_rows(qtbot, name):
    view = open_view(qtbot, name)
    switch = view.findChild(QtWidgets.QCheckBox, CONTENT_ONLY)
    plain, queries, keys = shown(view)
    assert plain.shape == (len(TARGET), len(SOURCE)) and len(keys) == len(SOURCE)
    switch.setChecked(True)
    matrix, content_queries, content_keys = shown(view)
    assert matrix.shape == (len(TARGET), len(SOURCE_CONTENT))  # rows kept, sink columns dropped
    assert len(content_keys) == len(SOURCE_CONTENT) and content_queries == queries
    assert content_keys == tuple(k for k in keys if k not in ("。", "EOS"))
    np.testing.assert_allclose(matrix, renormalised_by_hand(plain, list(range(len(SOURCE_CONTENT)))), rtol=1e-5)
    assert view.options()[CONTENT_ONLY] is True  # saved with the view's controls
    assert translate("base", CONTENT_LEGEND) in legend(view)
    view.set_data(frame())  # the next frame is shown over content keys too
    assert shown(view)[0].shape == (len(TARGET), len(SOURCE_CONTENT))
    view.set_options({CONTENT_ONLY: False})
    assert shown(view)[0].shape == (len(TARGET), len(SOURCE)) and translate("base", CONTENT_LEGEND) not in legend(view)


@pytest.mark.parametrize("name", ["grid", "head", "lines"])
def test_words_then_content_keys(qtbot, name):
    view = open_view(qtbot, name)
    view.set_options({GROUP_WORDS: True, CONTENT_ONLY: True})
    matrix, _, keys = shown(view)
    assert len(keys) == len(SOURCE_CONTENT_WORDS) and matrix.shape[1] == len(SOURCE_CONTENT_WORDS)
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-5)


def test_the_head_readout_says_the_weight_renormalised_and_before(qtbot):
    view = open_view(qtbot, "head")
    before = view.current_matrix().copy()
    view.findChild(QtWidgets.QCheckBox, CONTENT_ONLY).setChecked(True)
    after = view.current_matrix()
    view.zoom.sigHovered.emit(HoverInfo(2, 1, float(after[2, 1]), "'", "们"))
    text = view.readout.text()
    assert f"{after[2, 1]:.4f}" in text and f"{before[2, 1]:.4f}" in text
    assert after[2, 1] > before[2, 1]


def test_the_grid_readout_says_the_weight_renormalised_and_before(qtbot):
    view = open_view(qtbot, "grid")
    before = view.data().weights.copy()
    view.findChild(QtWidgets.QCheckBox, CONTENT_ONLY).setChecked(True)
    after = view.data().weights
    nq, nk = after.shape[2:]
    view.image.sigHovered.emit((1 * (nq + 1) + 3, 0 * (nk + 1) + 4))  # layer 2, head 1, row 3, key 4
    text = view.readout.text()
    assert f"{after[1, 0, 3, 4]:.4f}" in text and f"{before[1, 0, 3, 4]:.4f}" in text


def test_the_lines_readout_says_the_weights_renormalised_and_before(qtbot):
    view = open_view(qtbot, "lines")
    before = view.data().weights[1, 0].copy()
    view.findChild(QtWidgets.QCheckBox, CONTENT_ONLY).setChecked(True)
    after = view.data().weights[1, 0]
    view.set_hover("query", 4)
    text = view.readout.text()
    top = int(np.argmax(after[4]))
    assert f"{after[4, top]:.2f}" in text and f"{before[4, top]:.2f}" in text


def test_a_row_whose_weight_was_all_on_sinks_is_empty_with_a_note(qtbot):
    view = open_view(qtbot, "head", kind="decoder")
    view.findChild(QtWidgets.QCheckBox, CONTENT_ONLY).setChecked(True)
    matrix = view.current_matrix()
    assert matrix.shape == (len(TARGET), len(TARGET_CONTENT))
    assert np.isnan(matrix[0]).all()  # SOS reads SOS alone
    np.testing.assert_allclose(matrix[1:].sum(axis=1), 1.0, atol=1e-5)
    assert translate("base", EMPTY_ROW_LEGEND) in legend(view)
    view.zoom.sigHovered.emit(HoverInfo(0, 0, float("nan"), "SOS", "▁We"))
    assert translate("base", EMPTY_ROW_LEGEND) in view.readout.text()



@pytest.mark.parametrize("kind, sinks", [("cross", {"。"}), ("decoder", {"SOS", "."})])
def test_export_content_only_writes_the_renormalised_matrix(qapp, tmp_path, kind, sinks):
    args = ["export", "--src", "我爱你。", "--tgt", "I love you.", "--view", "head", "--kind", kind,
            "--layer", "2", "--head", "3", "--format", "csv"]
    assert main([*args, "--out", str(tmp_path / "plain")]) == 0
    assert main([*args, "--content-only", "--out", str(tmp_path / "content")]) == 0
    name = f"head_{kind}_layer2_head3.csv"
    _, plain, queries, keys = read_csv(tmp_path / "plain" / name)
    meta, content, content_queries, content_keys = read_csv(tmp_path / "content" / name)
    assert sinks <= set(keys)
    keep = [i for i, k in enumerate(keys) if k not in sinks]
    assert content_keys == [keys[i] for i in keep] and content_queries == queries
    expected = renormalised_by_hand(plain, keep)
    assert content.shape == expected.shape == (len(queries), len(keep))
    np.testing.assert_allclose(content, expected, rtol=1e-5, atol=1e-7, equal_nan=True)
    assert f"content_keys: {content_notes()['content_keys']}" in meta  # the core's note of the rows
    if kind == "decoder":
        assert np.isnan(content[0]).all()  # SOS's row reads SOS alone


def test_export_content_only_is_refused_by_a_view_without_the_switch(qapp, tmp_path, capsys):
    assert main(["export", "--src", "我爱你。", "--view", "pe", "--content-only", "--out", str(tmp_path)]) == 2
    assert "--content-only" in capsys.readouterr().err
