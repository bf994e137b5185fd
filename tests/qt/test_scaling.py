"""The scaling view (why ÷√d_k): its softmax rows recomputed here from the recorded q and k and
scores under ÷1, ÷√d_k and ÷d_k, softmax's Jacobian taken with autograd, and its random
experiment written out."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnviz.core.model.sites import AttentionSite
from attnviz.qt.selection import ViewChoice

from story_helpers import click


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _entropy(w):
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.nansum(w * np.log(w), -1)


def _jacobian(z: np.ndarray) -> np.ndarray:
    """∂softmax(z)/∂z by autograd: [key, key]."""
    return torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), torch.tensor(z, dtype=torch.float64)).numpy()


def _look_ahead(n):
    return np.triu(np.full((n, n), -np.inf), 1)


# -- the model's attention ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_scaling_view_recomputed_from_q_and_k(loaded, kind):
    spec, view, session, ok = loaded("scaling")
    assert ok
    view.apply(ViewChoice(kind=kind, layer=1, head=3, mode="head"))
    assert (view.kind(), view.layer(), view.head()) == (kind, 1, 3)
    site = AttentionSite(kind, 1)
    q = session.current.accumulated(site.name("q"))[3].astype(np.float64)
    k = session.current.accumulated(site.name("k"))[3].astype(np.float64)
    scores = q @ k.T
    mask = _look_ahead(len(scores)) if kind == "decoder" else 0.0
    d_k = q.shape[1]
    unscaled, scaled, over_dk = (_softmax(scores / c + mask) for c in (1.0, math.sqrt(d_k), d_k))
    for plot, expected in ((view.heat_unscaled, unscaled), (view.heat_scaled, scaled), (view.heat_over_dk, over_dk)):
        np.testing.assert_allclose(plot.raw_matrix(), expected, atol=1e-5)
    np.testing.assert_allclose(view.row_max.series("÷1")[1], unscaled.max(1), atol=1e-5)
    np.testing.assert_allclose(view.row_max.series("÷√d_k")[1], scaled.max(1), atol=1e-5)
    np.testing.assert_allclose(view.row_max.series("÷d_k")[1], over_dk.max(1), atol=1e-5)
    np.testing.assert_allclose(view.row_entropy.series("÷1")[1], _entropy(unscaled), atol=1e-5)
    np.testing.assert_allclose(view.row_entropy.series("÷d_k")[1], _entropy(over_dk), atol=1e-5)
    row = view.row_scaling().row  # its largest weight and entropy (nats) under ÷1 / ÷√d_k / ÷d_k, in the title
    maxima = " / ".join(f"{m[row].max():.2f}" for m in (unscaled, scaled, over_dk))
    entropies = " / ".join(f"{_entropy(m)[row]:.2f}" for m in (unscaled, scaled, over_dk))
    assert maxima in view.summary() and entropies in view.summary() and view.summary() in view.title.plain_text()


@pytest.mark.parametrize("kind", ["decoder", "cross", "encoder"])
def test_the_row_under_three_scalings_and_its_jacobian(loaded, kind):
    """The shown row: ÷d_k weights = softmax(QKᵀ/d_k + M) of the recorded scores; ‖∂a/∂s‖_F of
    each scaling = the norm of softmax's Jacobian taken by autograd (= diag(a) − aaᵀ)."""
    _, view, session, _ = loaded("scaling")
    view.apply(ViewChoice(kind=kind, layer=0, head=2, mode="head"))
    cur = session.current
    site = AttentionSite(kind, 0)
    scores = cur.accumulated(site.name("scores"))[2].astype(np.float64)  # QKᵀ as the model recorded it
    mask = cur.accumulated(site.name("mask")).astype(np.float64)
    d_k = cur.config.d_model // cur.config.n_heads
    row = view.query()
    assert row == (len(scores) - 1 if kind == "encoder" else session.current_row())  # the current step's row
    np.testing.assert_allclose(view.heat_over_dk.raw_matrix(), _softmax(scores / d_k + mask), atol=1e-6)
    data = view.figure_data()
    for i, c in enumerate((1.0, math.sqrt(d_k), float(d_k))):
        z = scores[row] / c + mask[row]
        a = _softmax(z)
        jac = _jacobian(z)
        np.testing.assert_allclose(jac, np.diag(a) - np.outer(a, a), atol=1e-12)  # the formula the view states
        np.testing.assert_allclose(data.extras["row_jacobian"][i], jac, atol=1e-6)
        np.testing.assert_allclose(data.extras["row_weights"][i], a, atol=1e-6)
        np.testing.assert_allclose(data.extras["row_jacobian_norm"][i], np.linalg.norm(jac), atol=1e-6)
        name = ("÷1", "÷√d_k", "÷d_k")[i]
        bars = view.row_bars.values()[name]  # largest weight, entropy, ‖∂a/∂s‖_F as drawn
        np.testing.assert_allclose(bars, [a.max(), _entropy(a), np.linalg.norm(jac)], atol=1e-6)
        np.testing.assert_allclose(view.row_weights.series(name)[1], a, atol=1e-6)
        every_row = [np.linalg.norm(_jacobian(scores[r] / c + mask[r])) for r in range(len(scores))]
        np.testing.assert_allclose(view.row_jacobian.series(name)[1], every_row, atol=1e-6)
    ent = data.extras["row_entropy"]
    assert ent[0] < ent[1] < ent[2] <= math.log(np.count_nonzero(np.isfinite(mask[row]))) + 1e-9  # ÷d_k flattens toward uniform


def test_a_click_picks_the_row_and_the_export_takes_query(loaded, qtbot, tmp_path):
    _, view, session, _ = loaded("scaling")
    view.apply(ViewChoice(kind="cross", layer=0, head=0, mode="head"))
    view.show()
    qtbot.waitExposed(view)
    qtbot.wait_until(lambda: view.heat_scaled.getViewBox().height() > 0)
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heat_scaled.cell_center_in_scene(1, 0))
    assert sig.args == [{"kind": "cross", "query": 1}] and view.query() == 1
    assert view.row_scaling().row == 1 and view.heat_scaled.linked_row() == 1
    assert "row 2" in view.title.plain_text()  # 1-based on screen

    from attnviz.cli import main as cli_main

    assert cli_main(["export", "--view", "scaling", "--src", "猫吃鱼。", "--kind", "decoder", "--query", "2",
                     "--format", "npz", "--out", str(tmp_path)]) == 0
    with np.load(tmp_path / "scaling_decoder_layer1_head1_query2.npz") as z:
        assert int(z["row"]) == 1 and z["row_weights"].shape == (3, z["keys"].shape[0])
        assert z["row_weights"][:, 2:].max() == 0.0  # row 2 of the masked self-attention sees keys 1 and 2 only
        assert np.all(z["row_weights"][:, :2] > 0)


# -- the random experiment ------------------------------------------------------------------------
def test_scaling_view_experiment_panel(loaded):
    _, view, _, _ = loaded("scaling")
    data = view.figure_data()
    dims = data.extras["random_d_k"]
    rng = np.random.default_rng(123)  # the experiment written out, with other random numbers
    for i, d in enumerate(dims):
        scores = np.einsum("qd,qkd->qk", rng.standard_normal((400, d)), rng.standard_normal((400, 10, d)))
        for j, c in enumerate((1.0, math.sqrt(d), float(d))):
            a = _softmax(scores / c)
            assert abs(data.extras["random_var"][j, i] / (scores / c).var() - 1) < 0.2
            assert abs(data.extras["random_max_weight"][j, i] - a.max(1).mean()) < 0.05
            jac = np.linalg.norm(a[:, :, None] * np.eye(10) - a[:, :, None] * a[:, None, :], axis=(1, 2))  # diag(a) − aaᵀ
            assert abs(data.extras["random_jacobian"][j, i] - jac.mean()) < 0.03
    x, top = view.exp_max.series("÷1")
    np.testing.assert_allclose(top, data.extras["random_max_weight"][0])
    assert top[-1] > 0.9 and top[0] < 0.6
    jac = data.extras["random_jacobian"]
    assert jac[0, -1] < 0.1 < 0.3 < jac[1, -1]  # saturated without the scaling: the gradient vanishes
    np.testing.assert_allclose(jac[2, -1], math.sqrt(9) / 10, atol=0.01)  # ÷d_k: nearly uniform over 10 keys
    assert {"max_weight_over_dk", "entropy_over_dk", "jacobian_scaled", "jacobian_unscaled"} <= set(data.values)
    np.testing.assert_array_equal(data.extras["random_d_k"], [4, 8, 16, 32, 64, 128, 256, 512])
