"""The norm statistics view shows ``analysis.norm_statistics`` / ``compare_norms`` for LayerNorm and BatchNorm models."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.core.analysis import stats as A
from attnviz.core.analysis.norms import NormSites, histogram, norm_site_data_for
from attnviz.core.model.config import NORM_NAMES
from attnviz.core.model.trace import trace_schema
from attnviz.qt.export.files import render_view_to_file
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.norm_stats import QtNormStatsView, group_title

import inside_fixtures as F


def site_data(session):
    """The trace arrays (read here, independently) and the view's data (built by ``norm_site_data_for``)."""
    names = [n for n, _, _ in trace_schema(session.config) if ".norm" in n or "final_norm" in n]
    arrays = {n: session.accumulated(n) for n in names}
    sites = norm_site_data_for(session, session.config)
    assert [s.site for s in sites] == A.norm_sites(arrays)
    for s in sites:
        np.testing.assert_array_equal(s.x_in, arrays[s.site + ".input"])
        assert s.pieces == (session.src_pieces if s.site.startswith("encoder") else session.input_pieces)
    return arrays, sites


SIZE = (1100, 900)


@pytest.mark.parametrize("norm,placement", [("layer", "post"), ("batch", "post"), ("layer", "pre")])
def test_statistics_of_the_chosen_layer(make_view, norm, placement):
    session = F.session(norm=norm, placement=placement, steps=4)
    arrays, sites = site_data(session)
    view = make_view(QtNormStatsView, SIZE, NormSites(sites, norm, placement))
    assert view.objectName() == "normStatsView"
    n_final = 2 if placement == "pre" else 0
    assert len(view.groups()) == 4 + n_final  # 2 encoder + 2 decoder layers (+ final norms)
    view.select("decoder", 1)
    group = view.group_sites()
    assert [s.site for s in group] == [f"decoder.layers.1.norm{j}" for j in (1, 2, 3)]
    for site, col in zip(group, view.columns):
        st = A.norm_statistics(arrays, site.site)
        assert st.kind == norm
        if norm == "layer":  # per token, before and after
            np.testing.assert_allclose(col.mean_a.getData()[1], st.input_mean)
            np.testing.assert_allclose(col.mean_b.getData()[1], st.output_mean)
            np.testing.assert_allclose(col.std_a.getData()[1], st.input_std)
            np.testing.assert_allclose(col.std_b.getData()[1], st.output_std)
            assert col.mean_axis.labels() == session.input_pieces
        else:  # per feature: this batch's statistics and the running ones
            np.testing.assert_allclose(col.mean_a.getData()[1], st.batch_mean)
            np.testing.assert_allclose(col.mean_b.getData()[1], st.running_mean)
            np.testing.assert_allclose(col.std_a.getData()[1], st.batch_var)
            np.testing.assert_allclose(col.std_b.getData()[1], st.running_var)
            np.testing.assert_allclose(st.running_mean, arrays[site.site + ".running_mean"])
            assert len(col.mean_a.getData()[1]) == session.config.d_model
        edges, before, after = histogram(arrays[site.site + ".input"], arrays[site.site + ".output"])
        x, y = col.hist_before.getData()
        np.testing.assert_allclose(x, edges)
        np.testing.assert_array_equal(y, np.histogram(arrays[site.site + ".input"], edges)[0])
        np.testing.assert_array_equal(col.hist_after.getData()[1], after)
        assert before.sum() == arrays[site.site + ".input"].size
    where = "after" if placement == "post" else "before"
    assert f"norm2 · {where} cross-attention" in view.columns[1].title.plain_text()
    assert view.group_combo.currentData() == "decoder:1" and view.group_combo.currentText() == group_title(("decoder", 1))
    assert view.group_combo.currentText().endswith("2")  # layers count from 1


def test_ln_vs_bn_on_the_same_matrix(make_view):
    session = F.session(norm="layer", steps=4)
    arrays, sites = site_data(session)
    view = make_view(QtNormStatsView, SIZE, NormSites(sites, "layer", "post"))
    assert view.groups()[0] == ("encoder", 0)
    view.compare_combo.setCurrentIndex(1)  # norm2 of encoder layer 1
    site = view.compared_site()
    assert site.site == "encoder.layers.0.norm2"
    x = arrays["encoder.layers.0.norm2.input"]
    c = A.compare_norms(x)
    np.testing.assert_array_equal(view.cmp_plots["x"].matrix(), x)
    np.testing.assert_allclose(view.cmp_plots["layer"].matrix(), c.layer_output, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(view.cmp_plots["batch"].matrix(), c.batch_output, rtol=1e-5, atol=1e-6)
    # LN: every row mean 0 / std 1; BN: every column
    ln, bn = view.cmp_plots["layer"].matrix().astype(np.float64), view.cmp_plots["batch"].matrix().astype(np.float64)
    np.testing.assert_allclose(ln.mean(1), 0, atol=1e-5)
    np.testing.assert_allclose(ln.std(1), 1, atol=1e-3)
    np.testing.assert_allclose(bn.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(bn.std(0), 1, atol=1e-3)
    assert not np.allclose(ln.mean(0), 0, atol=1e-3)  # they really differ
    # the axes drawn on the matrices: a row for LN, a column for BN; clicking a cell moves both
    n, d = x.shape
    assert view.marked() == (n - 1, d // 3)
    view.cmp_plots["batch"].sigCellClicked.emit(1, 5)
    assert view.marked() == (1, 5)
    row_band = view.axis_items["layer"][0]
    col_band = view.axis_items["batch"][0]
    assert row_band.rect().getRect() == (-0.5, 0.5, d, 1.0)
    assert col_band.rect().getRect() == (4.5, -0.5, 1.0, n)
    assert {i.data(0) for i in view.axis_items["x"]} == {"row", "col"}
    assert view.cmp_title.plain_text().split(" — ")[0].endswith(NORM_NAMES["layer"])  # the norm this model uses
    view.cmp_plots["x"].hover_cell(1, 5)
    assert f"LN: (x − {c.layer_mean[1]:.3f})" in view.readout.text()


def test_teacher_forced_pass_and_no_decoder_rows_yet(make_view):
    forced = F.forced(norm="batch")
    sites = norm_site_data_for(forced, F.bundle("batch").config)
    assert {s.group for s in sites} == {("encoder", 0), ("encoder", 1), ("decoder", 0), ("decoder", 1)}
    dec = next(s for s in sites if s.site == "decoder.layers.0.norm3")
    assert dec.pieces == forced.input_pieces and dec.kind == "batch"
    np.testing.assert_allclose(dec.stats.running_var, forced.trace["decoder.layers.0.norm3.running_var"])
    fresh = F.session(steps=0)  # nothing decoded yet: the encoder's norms only
    only_enc = norm_site_data_for(fresh, fresh.config)
    assert only_enc and all(s.site.startswith("encoder") for s in only_enc)
    view = make_view(QtNormStatsView, SIZE, NormSites(only_enc, "layer", "post"))
    assert view.groups() == [("encoder", 0), ("encoder", 1)]


def test_apply_shows_the_chosen_layer_of_its_stack(make_view):
    session = F.session(steps=3)
    view = make_view(QtNormStatsView, SIZE, NormSites(norm_site_data_for(session, session.config), "layer", "post"))
    view.apply(ViewChoice(kind="cross", layer=1))  # cross-attention sits in the decoder's layers
    assert view.group() == ("decoder", 1)
    view.apply(ViewChoice(kind="encoder", layer=0))
    assert view.group() == ("encoder", 0)
    view.apply(ViewChoice(kind="encoder", layer=7))  # no such layer: it stays
    view.apply(ViewChoice(layer=1))  # no kind: no stack to pick the layer in
    assert view.group() == ("encoder", 0)


def test_updates_in_place_and_exports(make_view, tmp_path):
    session = F.session(norm="batch", steps=3)
    _, sites = site_data(session)
    view = make_view(QtNormStatsView, SIZE, NormSites(sites, "batch", "post"))
    curve = view.columns[0].mean_a
    session.step()
    _, sites2 = site_data(session)
    view.set_data(NormSites(sites2, "batch", "post"))
    assert view.columns[0].mean_a is curve
    assert view.cmp_plots["x"].matrix().shape[0] == len(session.src_pieces)  # encoder layer 1 is still shown
    session.back()
    for fmt in ("png", "svg", "pdf"):
        data = render_view_to_file(view, tmp_path / f"norm.{fmt}").read_bytes()
        assert len(data) > 2000 and data.startswith({"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[fmt])
    fd = view.figure_data()
    assert set(fd.values) == {"x", "layer_norm", "batch_norm", "model_output"}
    assert "encoder.layers.0.norm1.running_var" in fd.extras


@pytest.mark.parametrize("name,norm", [("zh-en", "layer"), ("zh-en-small-batchnorm", "batch")])
def test_both_bundled_models(make_view, name, norm):
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
    from attnviz.paths import models_dir

    bundle = load_bundle(models_dir() / name)
    assert bundle.config.norm == norm
    forced = teacher_forced_from_bundle(bundle, "我喜欢吃鱼。", "I like eating fish.")
    sites = norm_site_data_for(forced, bundle.config)
    view = make_view(QtNormStatsView, SIZE, NormSites(sites, bundle.config.norm, bundle.config.norm_placement))
    view.select("decoder", 2)
    site = view.group_sites()[1]  # before (pre-norm) cross-attention
    st = A.norm_statistics(forced.trace, site.site)
    col = view.columns[1]
    if norm == "layer":
        np.testing.assert_allclose(col.std_a.getData()[1], st.input_std)
        np.testing.assert_allclose(col.std_b.getData()[1], st.output_std)
    else:
        np.testing.assert_allclose(col.std_b.getData()[1], forced.trace[site.site + ".running_var"])
        assert not np.allclose(st.batch_var, st.running_var)  # this sentence's statistics are not the running ones
    assert view.cmp_title.plain_text().split(" — ")[0].endswith(NORM_NAMES[norm])  # the norm this model uses
