"""The positional view shows the analysis functions' PE, curves, similarity and norms."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnviz.core.analysis import stats as A
from attnviz.core.analysis.positional import PositionalData, TokenEmbeddingData, positional_data_for
from attnviz.qt.export.files import render_view_to_file
from attnviz.qt.i18n import translate
from attnviz.qt.views.positional import LEARNED_FORMULA, MAX_DIMENSIONS, QtPositionalView, default_dimensions, read_dimensions

import inside_fixtures as F


def side(session, name: str, stack: str, pieces) -> TokenEmbeddingData:
    t = session.accumulated(f"{stack}.embed.tokens")
    p = session.accumulated(f"{stack}.embed.positional")
    r = A.embedding_positional_ratio(t, p)
    return TokenEmbeddingData(name, pieces, t, p, session.accumulated(f"{stack}.embed.sum"), r["token_norm"], r["positional_norm"])


@pytest.fixture(scope="module")
def data():
    s = F.session(steps=4)
    d = positional_data_for(s)
    n = max(len(s.src_pieces), len(s.input_pieces))
    pe = A.positional_encoding(n, s.config.d_model)
    by_hand = PositionalData(pe, A.positional_similarity(pe), (side(s, "source", "encoder", s.src_pieces), side(s, "target", "decoder", s.input_pieces)))
    np.testing.assert_array_equal(d.pe, by_hand.pe)
    for a, b in zip(d.embeddings, by_hand.embeddings):
        assert a.side == b.side and a.pieces == b.pieces
        np.testing.assert_array_equal(a.summed, b.summed)
        np.testing.assert_array_equal(a.token_norm, b.token_norm)
    return s, d


def test_before_the_first_step_and_teacher_forcing():
    fresh = F.session(steps=0)
    d = positional_data_for(fresh)
    assert [e.side for e in d.embeddings] == ["source"] and d.n_positions == len(fresh.src_pieces)
    forced = F.forced()
    d = positional_data_for(forced)
    assert d.side("target").pieces == forced.input_pieces
    assert d.n_positions == max(len(forced.src_pieces), len(forced.input_pieces))
    np.testing.assert_array_equal(d.side("target").positional, forced.trace["decoder.embed.positional"])


SIZE = (1100, 900)


def test_pe_similarity_and_curves(make_view, data):
    s, d = data
    view = make_view(QtPositionalView, SIZE, d)
    assert view.objectName() == "positionalView"
    n, dm = d.pe.shape
    np.testing.assert_allclose(view.pe_plot.matrix(), A.positional_encoding(n, dm), atol=1e-6)
    np.testing.assert_allclose(view.sim_plot.matrix(), A.positional_similarity(d.pe), rtol=1e-6)
    # the model's own PE rows are the same function
    np.testing.assert_allclose(s.accumulated("encoder.embed.positional"), d.pe[: len(s.src_pieces)], atol=1e-6)
    dims = default_dimensions(dm)
    assert view.dimensions() == dims == [0, 1, 2, 3, dm // 2, dm // 2 + 1]
    np.testing.assert_allclose(view.curve_data(), A.positional_curves(d.pe, dims), atol=1e-6)
    # the user types other dimensions
    view.dims_edit.setText("4-6, 30, 999, x")
    view.dims_edit.editingFinished.emit()
    assert view.dimensions() == [4, 5, 6, 30]
    np.testing.assert_allclose(view.curve_data(), A.positional_curves(d.pe, [4, 5, 6, 30]), atol=1e-6)
    assert [c.isVisible() for c in view.curves] == [True] * 4 + [False] * (len(view.curves) - 4)
    note = read_dimensions("4-6, 30, 999, x", dm)[1]  # 999 and x left out, numbers from 0 to dm - 1
    assert view.readout.text() == note and re.findall(r"\d+", note)[:3] == ["2", "0", str(dm - 1)]
    assert read_dimensions("1;3-2", 8) == ([1], "") and read_dimensions("7, 0", 8) == ([7, 0], "")


def test_a_huge_typed_range_is_bounded_and_said(make_view, data):
    """Typing 0-999999999 used to walk the whole range (15 s per entry): now it is clipped."""
    import time

    s, d = data
    view = make_view(QtPositionalView, SIZE, d)
    t0 = time.perf_counter()
    for text in ("0-999999999", "0-999999999, 5-999999999, 3", "9" * 5000, "0-" + "9" * 40):
        view.dims_edit.setText(text)
        view.dims_edit.editingFinished.emit()
    assert time.perf_counter() - t0 < 2.0
    dims, note = read_dimensions("0-999999999", d.d_model)
    assert dims == list(range(12)) and re.findall(r"\d+", note) == [str(MAX_DIMENSIONS)] == ["12"]  # at most 12 are drawn
    view.dims_edit.setText("2-999999999")
    view.dims_edit.editingFinished.emit()
    assert view.dimensions() == list(range(2, 14)) and view.readout.text() == note  # the same note
    assert read_dimensions("0-11", 64) == (list(range(12)), "")


def test_embeddings_pe_and_sum_side_by_side(make_view, data):
    s, d = data
    view = make_view(QtPositionalView, SIZE, d)
    assert view.side() == "source"
    np.testing.assert_array_equal(view.emb_plots["tokens"].matrix(), s.accumulated("encoder.embed.tokens"))
    np.testing.assert_array_equal(view.emb_plots["positional"].matrix(), s.accumulated("encoder.embed.positional"))
    np.testing.assert_array_equal(view.emb_plots["summed"].matrix(), s.accumulated("encoder.embed.sum"))
    assert view.emb_plots["tokens"].row_labels() == s.src_pieces
    ratio = A.embedding_positional_ratio(s.accumulated("encoder.embed.tokens"), s.accumulated("encoder.embed.positional"))
    norms = view.norm_values()
    np.testing.assert_allclose(norms["token_norm"], ratio["token_norm"])
    np.testing.assert_allclose(norms["positional_norm"], ratio["positional_norm"])
    np.testing.assert_allclose(norms["positional_norm"], np.sqrt(s.config.d_model / 2), rtol=1e-5)  # every PE row: √(d/2)
    np.testing.assert_allclose(norms["sum_norm"], np.linalg.norm(s.accumulated("encoder.embed.sum").astype(np.float64), axis=-1), rtol=1e-6)
    # the target side (SOS, y1, ...) through the combo
    source_title = view.emb_title.plain_text().split(" — ")[0]
    view.side_combo.setCurrentIndex(view.side_combo.findData("target"))
    assert view.side() == "target"
    np.testing.assert_array_equal(view.emb_plots["summed"].matrix(), s.accumulated("decoder.embed.sum"))
    assert view.emb_plots["summed"].row_labels() == s.input_pieces
    assert view.emb_title.plain_text().split(" — ")[0] not in ("", source_title)  # the title names the target's tokens


def test_updates_in_place_and_exports(make_view, data, tmp_path):
    s, d = data
    view = make_view(QtPositionalView, SIZE, d)
    plot = view.pe_plot
    longer = A.positional_encoding(12, d.d_model)
    view.set_data(PositionalData(longer, A.positional_similarity(longer), d.embeddings))
    assert view.pe_plot is plot and view.pe_plot.matrix().shape == (12, d.d_model)
    assert view.curve_data().shape == (6, 12)
    for fmt in ("png", "svg", "pdf"):
        data_ = render_view_to_file(view, tmp_path / f"pe.{fmt}").read_bytes()
        assert len(data_) > 2000 and data_.startswith({"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[fmt])
    assert s.src_pieces[0] in (tmp_path / "pe.svg").read_text(encoding="utf-8")
    fd = view.figure_data()
    np.testing.assert_array_equal(fd.values["pe"], longer.astype(np.float32))
    with pytest.raises(ValueError, match="pieces"):
        TokenEmbeddingData("source", ("a",), np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4)))


@pytest.mark.slow  # a tiny transformers model built
def test_gpt2s_learned_table_is_shown_as_its_own_rows(loaded, tiny_family):
    """GPT-2 (decoder-only, learned positions): the PE drawn, its curves and the data handed on are
    the rows of the checkpoint's own table ``wpe``, named by column, never sin/cos."""
    from safetensors.numpy import load_file

    bundle = tiny_family("gpt2")
    spec, view, session, ok = loaded("pe", model=bundle, source="the cat sat")
    assert ok and session.current.config.kind == "decoder-only"
    weights = load_file(bundle.path / "model.safetensors")
    wpe = next(w for name, w in weights.items() if name.endswith("wpe.weight")).astype(np.float64)  # [n_positions, d_model]
    n = len(session.current.input_pieces)  # the prompt after <|endoftext|>, then what was decoded
    d = view.data()
    assert d.kind == "learned" and d.n_positions == n
    np.testing.assert_allclose(view.pe_plot.matrix(), wpe[:n], atol=1e-6)
    np.testing.assert_allclose(d.side("target").positional, wpe[:n], atol=1e-6)
    dims = view.dimensions()
    np.testing.assert_allclose(view.curve_data(), wpe[:n, dims].T, atol=1e-6)
    low, high = view.curve_plot.getViewBox().viewRange()[1]
    assert low <= wpe[:n].min() and high >= wpe[:n].max()  # no curve cut at ±1
    assert view.pe_plot.levels() == pytest.approx((-np.abs(wpe[:n]).max(), np.abs(wpe[:n]).max()), rel=1e-5)
    legend = [label.text for _, label in view.curve_legend.items]
    assert legend == [f"column {c}" for c in dims]
    texts = " ".join([view.title.plain_text(), view.emb_title.plain_text(), *legend])
    assert translate("positional", LEARNED_FORMULA) in texts and "sin(" not in texts and "cos(" not in texts and "√(d_model/2)" not in texts
    data = view.figure_data()
    np.testing.assert_allclose(data.values["pe"], wpe[:n], atol=1e-6)
    assert data.coords["column"] == tuple(str(c) for c in range(wpe.shape[1]))
