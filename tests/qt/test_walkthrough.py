"""The one-head walkthrough view shows the walkthrough's numbers, window by window."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from attnviz.core.analysis.walkthrough import WalkthroughFrame, session_walkthrough
from attnviz.core.model.sites import KINDS
from attnviz.qt.export.files import render_view_to_file
from attnviz.qt.i18n import translate
from attnviz.qt.views.walkthrough import QtWalkthroughView
from attnviz.qt.views.walkthrough_tables import plain
from attnviz.qt.views.walkthrough_text import ROW_SUM_NOTE
from attnviz.qt.views.walkthrough_windows import WINDOW

import inside_fixtures as F

LAYERS = {kind: 2 for kind in KINDS}


@pytest.fixture(scope="module")
def decoded():
    bundle = F.bundle(d_model=64, n_heads=4)  # d_model 64 > window 8, d_k 16 > window 8: both elided
    return bundle, F.session(steps=4, d_model=64, n_heads=4)


SIZE = (1200, 800)


def test_tables_hold_the_walkthrough_numbers(make_view, decoded):
    bundle, session = decoded
    w = session_walkthrough(bundle.model, session, "cross", 1, 2)
    view = make_view(QtWalkthroughView, SIZE, WalkthroughFrame(w, LAYERS))
    assert view.objectName() == "walkthroughView"
    lo = 2 * w.d_k  # the d_model window starts at head i's columns
    assert view.table("concat").window[1] == slice(lo, lo + WINDOW["model"])
    np.testing.assert_array_equal(view.shown("x"), w.x[:, lo:lo + 8])
    np.testing.assert_array_equal(view.shown("w_q"), w.w_q[lo:lo + 8, :8])
    np.testing.assert_array_equal(view.shown("q"), w.q[:, :8])
    np.testing.assert_array_equal(view.shown("k"), w.k[:, :8])
    np.testing.assert_array_equal(view.shown("scores"), w.scores)
    np.testing.assert_array_equal(view.shown("scaled_scores"), w.scaled_scores)
    np.testing.assert_array_equal(view.shown("weights"), w.weights)
    np.testing.assert_array_equal(view.shown("z"), w.z[:, :8])
    np.testing.assert_array_equal(view.shown("concat"), w.concat[:, lo:lo + 8])
    np.testing.assert_array_equal(view.shown("output"), w.output[:, lo:lo + 8])
    np.testing.assert_array_equal(view.shown("x_kv"), w.x_kv[:, lo:lo + 8])  # C_encoder rows for cross-attention
    # the chosen query's row is outlined; rows are labelled with the pieces
    assert view.table("weights").highlight_row() == w.query == len(session.input_pieces) - 1
    assert view.table("q").row_labels() == session.input_pieces
    assert view.table("k").row_labels() == session.src_pieces
    assert view.table("weights").col_labels() == session.src_pieces
    assert view.table("w_q").col_labels() == tuple(str(i) for i in range(8))
    assert "C" in plain(view.table("x_kv").titleLabel.text) and "encoder" in view.table("x_kv").titleLabel.text
    assert "head 3 of 4" in view.figure_title() and "“" + w.query_labels[w.query] + "”" in view.figure_title()
    # head i's columns of the concat are marked
    assert view.head_marks[0].isVisible() and view.head_marks[0].rect().width() == 8


def test_decoder_mask_and_scrolling(make_view, decoded):
    bundle, session = decoded
    w = session_walkthrough(bundle.model, session, "decoder", 0, 1)
    view = make_view(QtWalkthroughView, SIZE, WalkthroughFrame(w, LAYERS))
    m = view.shown("mask")
    n = len(session.input_pieces)
    assert np.all(np.isneginf(m[np.triu_indices(n, 1)])) and np.all(m[np.tril_indices(n)] == 0)
    assert np.all(view.shown("weights")[np.triu_indices(n, 1)] == 0)
    # scrolling the d_k window with its scroll bar
    bar = view.scrollbars["k"]
    assert bar.isVisibleTo(view) and bar.maximum() == w.d_k - WINDOW["k"]
    bar.setValue(8)
    np.testing.assert_array_equal(view.shown("q"), w.q[:, 8:16])
    np.testing.assert_array_equal(view.shown("w_v"), w.w_v[view.table("w_v").window[0], 8:16])
    assert view.table("q").getAxis("top").labels()[0] == "8"
    view.scroll_to("model", 40)
    np.testing.assert_array_equal(view.shown("x"), w.x[:, 40:48])
    assert view.table("x").elided() and not view.table("weights").elided()
    assert not view.scrollbars["pos"].isVisibleTo(view)  # 4 positions fit


def test_query_head_and_kind_changes(make_view, qtbot, decoded):
    bundle, session = decoded
    w = session_walkthrough(bundle.model, session, "encoder", 0, 0)
    view = make_view(QtWalkthroughView, SIZE, WalkthroughFrame(w, LAYERS))
    # a new query: only the highlight moves (no recompute)
    with qtbot.waitSignal(view.queryChanged) as got:
        view.query_combo.setCurrentIndex(1)
    assert got.args == [1] and view.query() == 1 and view.table("q").highlight_row() == 1
    np.testing.assert_array_equal(view.shown("weights"), w.weights)

    def recompute(c):
        view.set_data(WalkthroughFrame(session_walkthrough(bundle.model, session, c["kind"], c["layer"], c["head"], c["query"]), LAYERS))

    view.chose.connect(recompute)
    with qtbot.waitSignal(view.chose) as req:
        view.head_combo.setCurrentIndex(3)
    assert req.args == [{"kind": "encoder", "layer": 0, "head": 3, "mode": "head", "query": 1}]
    w3 = view.data()
    assert w3.head == 3 and w3.query == 1
    assert view.table("concat").window[1].start == min(3 * w3.d_k, w3.d_model - WINDOW["model"])
    np.testing.assert_array_equal(view.shown("q"), w3.q[:, :8])
    with qtbot.waitSignal(view.chose) as req:
        view.kind_combo.setCurrentIndex(view.kind_combo.findData("cross"))
    assert req.args == [{"kind": "cross", "layer": 0, "head": 3, "mode": "head", "query": 0}]  # a source row means nothing on the target side: back to the first query
    assert view.data().kind == "cross" and view.table("k").row_labels() == session.src_pieces


def test_hover_readout_and_exports(make_view, decoded, tmp_path):
    bundle, session = decoded
    w = session_walkthrough(bundle.model, session, "cross", 0, 0)
    view = make_view(QtWalkthroughView, SIZE, WalkthroughFrame(w, LAYERS))
    info = view.table("weights").hover_cell(1, 2)
    assert info.value == pytest.approx(float(w.weights[1, 2]))
    assert "A_i" in view.readout.text() and view.readout.text().endswith(f"= {info.value:.5f}{translate('walkthrough', ROW_SUM_NOTE)}")
    for fmt in ("png", "svg", "pdf"):
        path = render_view_to_file(view, tmp_path / f"walk.{fmt}")
        data = path.read_bytes()
        assert len(data) > 2000
        assert data.startswith({"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[fmt])
    svg = (tmp_path / "walk.svg").read_text(encoding="utf-8")
    assert "<text" in svg and session.src_pieces[1] in svg  # labels stay text, Chinese included
    data = view.figure_data()
    np.testing.assert_array_equal(data.values["weights"], w.weights)
    np.testing.assert_array_equal(data.extras["concat"], w.concat)


def test_views_never_import_torch():
    code = (
        "import sys\n"
        "import attnviz.qt.views.walkthrough, attnviz.qt.views.output, attnviz.qt.views.positional\n"
        "import attnviz.qt.views.norm_stats, attnviz.qt.train.panel\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"QT_QPA_PLATFORM": "offscreen", "PATH": ""})
    assert out.stdout.strip() == "False"


def test_every_table_hovers_and_scrolls_for_every_choice(make_view, decoded):
    """Switching kind, layer, head and query, then scrolling every window and hovering a cell of
    every table (the one-row bias tables included) never fails and says where the mouse is."""
    bundle, session = decoded
    view = make_view(QtWalkthroughView, SIZE, WalkthroughFrame(session_walkthrough(bundle.model, session, "encoder", 0, 0), LAYERS))
    for kind in KINDS:
        for layer, head in ((0, 0), (1, 3)):
            view.set_data(WalkthroughFrame(session_walkthrough(bundle.model, session, kind, layer, head), LAYERS))  # the last query row
            view.set_query(0)
            for bar in view.scrollbars.values():
                bar.setValue(bar.maximum())
            for name, table in view.tables.items():
                if getattr(view.data(), table.spec.name) is None:  # B: this model adds no position bias
                    continue
                shape = table.raw_matrix().shape
                table.hover_cell(shape[0] - 1, shape[1] - 1)
                text = view.readout.text()
                assert text.strip(), name
                if table.spec.rows == "bias":
                    assert "[b, dim" in text
