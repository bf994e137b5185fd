"""The head-importance view: its heatmap and list against the core's ablations, a click selects a
head, the ablation is an option computed again, and the registry feeds it from the session."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6 import QtCore

from attnviz.core.analysis.head_importance import head_importance_for
from attnviz.core.model.sites import KINDS
from attnviz.qt.views.head_importance import QtHeadImportanceView

from inside_fixtures import bundle, session
from story_helpers import click, shown, shown_view_set


@pytest.fixture(scope="module")
def report():
    b = bundle()
    return head_importance_for(session(steps=4), b.model, b.src_tokenizer, b.tgt_tokenizer)


def log_p_with_head_zeroed(kind, layer, head):
    """log P of the 4 decoded tokens with ``head``'s W^O columns zeroed, written out here."""
    b, s = bundle(), session(steps=4)
    site = {"encoder": b.model.encoder.layers[layer].self_attn, "decoder": b.model.decoder.layers[layer].self_attn,
            "cross": b.model.decoder.layers[layer].cross_attn}[kind]
    dk = b.config.d_k
    w = site.w_o.weight.detach().clone()
    w[:, head * dk:(head + 1) * dk] = 0
    with torch.inference_mode():
        kept = site.w_o.weight.data
        site.w_o.weight.data = w
        try:
            logits = b.model(torch.tensor([s.src_ids]), torch.tensor([[b.config.bos_id, *s.output_ids[:-1]]]))[0].double()
        finally:
            site.w_o.weight.data = kept
    return float(torch.log_softmax(logits, -1)[torch.arange(len(s.output_ids)), torch.tensor(s.output_ids)].sum())


def test_the_heatmap_shows_each_head_s_change_and_a_click_selects_it(make_view, qtbot, report):
    view = shown(make_view, QtHeadImportanceView, report)
    assert view.objectName() == "headImportanceView"
    n = bundle().config.n_heads
    matrix = view.heatmap.matrix()
    assert matrix.shape == (sum(report.delta[k].shape[0] for k in KINDS), n)
    row = list(report.delta).index("cross") * report.delta["encoder"].shape[0] + 1  # cross layer 2
    assert matrix[row, 2] == pytest.approx(log_p_with_head_zeroed("cross", 1, 2) - report.log_prob, abs=2e-4)
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heatmap.cell_center_in_scene(row, 2))
    assert sig.args == [{"kind": "cross", "layer": 1, "head": 2, "mode": "head"}]


def test_the_list_sorts_by_the_change_and_a_row_selects_its_head(make_view, qtbot, report):
    view = shown(make_view, QtHeadImportanceView, report)
    table = view.table
    assert table.objectName() == "headImportanceTable" and table.rowCount() == sum(d.size for d in report.delta.values())
    table.sortItems(3, QtCore.Qt.SortOrder.AscendingOrder)
    values = [table.item(r, 3).data(QtCore.Qt.ItemDataRole.UserRole) for r in range(table.rowCount())]
    assert values == sorted(values) and values[0] == pytest.approx(min(d.min() for d in report.delta.values()))
    kind, layer, head = (table.item(0, c).data(QtCore.Qt.ItemDataRole.UserRole) for c in range(3))
    assert report.delta[kind][layer - 1, head - 1] == pytest.approx(values[0])
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        table.cellClicked.emit(0, 1)
    assert sig.args == [{"kind": kind, "layer": layer - 1, "head": head - 1, "mode": "head"}]


def test_the_ablation_is_an_option_and_the_view_set_computes_it_again(qtbot):
    s, views = shown_view_set(qtbot, ("importance",))
    view = views["importance"]
    zero = view.report()
    assert zero is not None and zero.kind == "zero"
    b = bundle()
    expected = head_importance_for(s.frames.frozen(), b.model, b.src_tokenizer, b.tgt_tokenizer, "uniform")
    view.set_options({"ablationKind": 2})
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.report() is not None and view.report().kind == "uniform", timeout=10000)
    for k in KINDS:
        np.testing.assert_allclose(view.report().delta[k], expected.delta[k], atol=1e-6)
    data = view.figure_data()
    assert data.dims == ("kind", "layer", "head") and data.coords["kind"] == KINDS
    assert view.options() == {"ablationKind": 2}
    view.chose.emit({"kind": "cross", "layer": 1, "head": 2, "mode": "head"})
    sel = views.selection.value()
    assert (sel.kind, sel.layer, sel.head, sel.mode) == ("cross", 1, 2, "head")  # every linked view follows the head picked here
