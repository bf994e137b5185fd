"""BART and T5 v1.1 folders open in the window: every dock raised in turn draws without a failure
and either has data or says why it does not apply; T5's relative position bias B, its RMSNorm and
its unscaled scores appear in the views in their own notation, equal to ``transformers``' numbers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from PySide6 import QtWidgets
from window_helpers import close_shared_window, open_shared_window, wait_until

from attnviz.core.analysis.model_info import SCORE_TEMPLATES
from attnviz.qt.i18n import translate
from attnviz.qt.views.model_info import row_texts
from attnviz.qt.views.registry import VIEWS
from attnviz.qt.views.scaling import NOTES, SCALED, UNSCALED

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import build_bart, build_t5  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # the whole main window, twice

SOURCE = "cat sat on the mat"  # its first and last words swapped keep its token count: the patching view has a pair
BUILDERS = {"bart": lambda folder: build_bart(folder), "t5": lambda folder: build_t5(folder, v1_1=True, seed=1)}
CLASSES = {"bart": "BartForConditionalGeneration", "t5": "T5ForConditionalGeneration"}
NEEDS_A_CHOICE = {"teacher-vs-free", "ablation", "checkpoints"}  # views that wait for the user (a target, heads, another bundle)
SAYS_WHY = {"compare": "cannot compare",  # a view that cannot apply to a model says so in its title (T5: no PE to take away)
            "circuit": "post-norm"}  # BART and Marian normalize after each sublayer: no sum of node outputs to attribute


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def opened(request, tmp_path_factory, qapp):
    """(family, window, transformers' model, failures) with the family's folder open and decoded."""
    root = tmp_path_factory.mktemp(request.param)
    folder = BUILDERS[request.param](root / f"tiny-{request.param}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(transformers, CLASSES[request.param]).from_pretrained(folder, attn_implementation="eager").eval()
    window = open_shared_window(root, model=folder, src=SOURCE)
    failures: list[str] = []
    window.views.failed.connect(failures.append)
    wait_until(lambda: window.session.bundle.path == folder)
    yield request.param, window, theirs, failures
    close_shared_window(window)


def raise_dock(window, name: str) -> None:
    spec = next(s for s in VIEWS if s.name == name)
    if spec.area != "central":
        dock = window.findChild(QtWidgets.QDockWidget, spec.dock_name)
        dock.show()
        dock.raise_()
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    assert window.session.analyses.wait(60)
    QtWidgets.QApplication.processEvents()


def test_every_view_draws_or_says_why(opened):
    _family, window, _theirs, failures = opened
    silent = []
    for spec in VIEWS:
        if not spec.applies(window.session.bundle.config):
            continue
        raise_dock(window, spec.name)
        assert not failures, failures
        assert window.message_bar.property("level") != "error", window.message_bar.text()
        frame, view = window.frames[spec.name], window.views[spec.name]
        says_why = spec.name in SAYS_WHY and SAYS_WHY[spec.name] in view.title.plain_text()
        if not (view.has_data() or frame.empty_text() or spec.name in NEEDS_A_CHOICE or says_why):
            silent.append(spec.name)
    assert not silent, f"views with no data and no word why: {silent}"


def walkthrough_of(window, kind: str, layer: int, head: int):
    raise_dock(window, "walkthrough")
    view = window.views["walkthrough"]
    view.chose.emit({"kind": kind, "layer": layer, "head": head, "mode": "head"})
    assert window.session.analyses.wait(60)
    QtWidgets.QApplication.processEvents()
    walk = view.data()
    assert (walk.kind, walk.layer, walk.head) == (kind, layer, head)
    return view, walk


def test_the_walkthrough_shows_b_and_no_scaling_for_t5(opened):
    family, window, theirs, _ = opened
    view, walk = walkthrough_of(window, "encoder", 0, 1)
    walk.verify()  # every recomputed step equals the model's, B and the missing ÷√d_k included
    if family == "bart":
        assert walk.position_bias is None and walk.scaled and not view.tables["position_bias"].isVisible()
        assert "softmax(Q_2K_2ᵀ / √d_k + M)" in view.title.plain_text()
        return
    n = walk.x.shape[0]
    with torch.no_grad():
        bias = theirs.encoder.block[0].layer[0].SelfAttention.compute_bias(n, n)[0, 1].numpy()  # [query, key]
    np.testing.assert_allclose(walk.position_bias, bias, atol=1e-6)
    np.testing.assert_allclose(walk.masked_scores, walk.scores + bias + walk.mask, atol=1e-5)  # no ÷√d_k
    np.testing.assert_allclose(view.shown("position_bias"), bias[view.tables["position_bias"].window], atol=1e-6)
    assert not walk.scaled and "softmax(Q_2K_2ᵀ + B + M)" in view.title.plain_text()
    assert walk.notation("masked_scores") == "Q_iK_iᵀ + B + M"


def test_the_mask_view_adds_b_to_the_scores(opened):
    family, window, theirs, _ = opened
    raise_dock(window, "mask")
    view = window.views["mask"]
    view.select(layer=1, head=2)
    m = view.matrices()
    titles = view.full_titles()
    if family == "bart":
        assert "position_bias" not in m and titles["weights"] == "④ softmax(QKᵀ/√d_k + M)"
        return
    n = m["scaled_scores"].shape[0]
    with torch.no_grad():
        bias = theirs.decoder.block[0].layer[0].SelfAttention.compute_bias(n, n)[0, 2].numpy()  # the stack's one table, every layer's B
    np.testing.assert_allclose(m["position_bias"], bias, atol=1e-6)
    allowed = np.isfinite(m["masked_scores"])
    assert np.array_equal(allowed, np.tril(np.ones((n, n), bool)))
    np.testing.assert_allclose(m["masked_scores"][allowed], (m["scaled_scores"] + m["position_bias"])[allowed], atol=1e-5)
    assert view.panels["position_bias"].isVisible() and list(view.panels) == ["scaled_scores", "position_bias", "mask", "masked_scores", "weights"]
    assert titles["weights"] == "⑤ softmax(QKᵀ + B + M)"


def test_the_scaling_view_says_whether_the_model_scales(opened):
    family, window, _theirs, _ = opened
    raise_dock(window, "scaling")
    view = window.views["scaling"]
    view.select(kind="encoder", layer=0, head=0)
    if family == "bart":
        assert view.scaling_note() == "" and view.note(SCALED) == translate("scaling", NOTES[SCALED])  # the model's
        return
    assert view.formula(UNSCALED) in view.scaling_note() and view.note(UNSCALED) == translate("scaling", NOTES[SCALED])  # ÷1 is the model's
    assert view.formula("÷1") == "softmax(QKᵀ + B + M)"
    c = view.comparison()  # the ÷1 panel holds the model's own weights
    np.testing.assert_allclose(c.unscaled, window.session.current.all_attention("encoder")[0], atol=1e-5)


def test_positions_norms_and_model_info_name_the_family(opened):
    family, window, theirs, _ = opened
    raise_dock(window, "pe")
    pe = window.views["pe"].data()
    raise_dock(window, "norm")
    norm = window.views["norm"]
    raise_dock(window, "model-info")
    table = window.findChild(QtWidgets.QTableWidget, "modelInfoTable")
    rows = {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}
    info = {row.key: row for row in window.views["model-info"].info().rows}  # the core's rows the table shows
    for key in ("positions", "scores"):
        assert rows[key] == row_texts(info[key])[1], key
    if family == "bart":
        table_rows = theirs.model.encoder.embed_positions.weight.detach().numpy()[2:2 + pe.n_positions]  # BART's offset of 2
        assert pe.kind == "learned"
        np.testing.assert_allclose(pe.pe, table_rows, atol=1e-6)
        assert info["positions"].values == {"n": window.session.bundle.config.max_len} and "LayerNorm" in window.status.norm_label.text()  # a learned table
        return
    assert pe.kind == "relative" and "softmax(QKᵀ + B + M)" in window.views["pe"].title.plain_text()  # no PE: the bias B instead
    site = norm.group_sites()[0]
    assert site.kind == "rms"
    np.testing.assert_allclose(site.stats.rms, np.sqrt(np.mean(site.x_in.astype(np.float64) ** 2, -1)), rtol=1e-4)
    assert "RMSNorm" in window.status.norm_label.text() and "RMSNorm" in rows["normalization"]
    assert info["scores"].template == SCORE_TEMPLATES[False, True] and rows["scores"].startswith("softmax(QKᵀ + B + M)")  # no ÷√d_k; B in the self-attentions
    assert rows["positions"].startswith("relative")
