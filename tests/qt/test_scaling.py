"""The scaling view (why ÷√d_k): its softmax rows recomputed here from the recorded q and k, and its
random experiment written out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnviz.core.model.sites import AttentionSite
from attnviz.qt.selection import ViewChoice


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# -- scaling -------------------------------------------------------------------------------------
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
    mask = np.triu(np.full(scores.shape, -np.inf), 1) if kind == "decoder" else 0.0
    scaled, unscaled = _softmax(scores / math.sqrt(q.shape[1]) + mask), _softmax(scores + mask)
    np.testing.assert_allclose(view.heat_scaled.raw_matrix(), scaled, atol=1e-5)
    np.testing.assert_allclose(view.heat_unscaled.raw_matrix(), unscaled, atol=1e-5)
    np.testing.assert_allclose(view.row_max.series("without")[1], unscaled.max(1), atol=1e-5)
    np.testing.assert_allclose(view.row_max.series("÷√d_k")[1], scaled.max(1), atol=1e-5)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.nansum(unscaled * np.log(unscaled), 1)
    np.testing.assert_allclose(view.row_entropy.series("without")[1], ent, atol=1e-5)
    assert "largest weight" in view.title.plain_text() and "nats" in view.title.plain_text()


def test_scaling_view_experiment_panel(loaded):
    _, view, _, _ = loaded("scaling")
    data = view.figure_data()
    dims = data.extras["random_d_k"]
    rng = np.random.default_rng(123)  # the experiment written out, with other random numbers
    for d, var, top in zip(dims, data.extras["random_var_unscaled"], data.extras["random_max_unscaled"]):
        scores = np.einsum("qd,qkd->qk", rng.standard_normal((400, d)), rng.standard_normal((400, 10, d)))
        assert abs(var / scores.var() - 1) < 0.2
        assert abs(top - _softmax(scores).max(1).mean()) < 0.05
    x, top = view.exp_max.series("without")
    np.testing.assert_allclose(top, data.extras["random_max_unscaled"])
    assert top[-1] > 0.9 and top[0] < 0.6
    assert set(data.values) == {"max_weight_scaled", "max_weight_unscaled", "entropy_scaled", "entropy_unscaled"}
    np.testing.assert_array_equal(data.extras["random_d_k"], [4, 8, 16, 32, 64, 128, 256, 512])
