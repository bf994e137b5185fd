"""One set of conventions in the output, positional, norm and walkthrough views: the word-start
mark, readable panels in a short dock, 1-based positions, the tutorial's labels."""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

from attnviz.core.analysis.figure_data import OutputFrame
from attnviz.core.analysis.norms import NormSites, norm_site_data_for
from attnviz.core.analysis.positional import positional_data_for
from attnviz.core.analysis.walkthrough import WalkthroughFrame, session_walkthrough
from attnviz.core.data.pieces import SP_WORD_START, WORD_START, WORD_START_LEGEND, display_piece, word_spans
from attnviz.qt.i18n import translate
from attnviz.qt.views.norm_stats import QtNormStatsView
from attnviz.qt.views.output import ROW_PX, QtOutputView
from attnviz.qt.views.positional import QtPositionalView
from attnviz.qt.views.registry import view_spec
from attnviz.qt.views.walkthrough import QtWalkthroughView
from attnviz.qt.widgets.colormaps import ui_font
from attnviz.qt.widgets.heatmap import HoverInfo

import inside_fixtures as F

DOCK = [(1366, 224), (1024, 224)]  # the bottom dock's share of a 768 px high window


# -- the word-start mark ------------------------------------------------------------------------
def test_the_word_start_mark_is_visible_and_not_an_underscore(qapp):
    assert display_piece(SP_WORD_START + "like") == WORD_START + "like" and WORD_START not in ("_", SP_WORD_START)
    assert display_piece(SP_WORD_START) == WORD_START and display_piece("ing") == "ing"
    assert WORD_START in WORD_START_LEGEND
    fm = QtGui.QFontMetricsF(ui_font(9))
    assert fm.inFontUcs4(ord(WORD_START))  # drawn by the app's font, not a box
    pieces = ["SOS", "▁I", "▁eat", "ing", "▁app", "les", ".", "EOS"]
    assert word_spans(pieces) == [(2, 4), (4, 7)]
    assert word_spans(["我", "喜", "欢"]) == []


def test_token_axes_show_the_mark_and_group_the_pieces_of_a_word(make_view):
    forced = F.forced()
    view = make_view(QtOutputView, (1366, 700), OutputFrame(forced=forced), shown=True)
    pieces = tuple(p.piece for p in forced.steps)
    axis = view.target_axis
    assert axis.labels() == pieces and axis.shown_labels() == tuple(display_piece(p) for p in pieces)
    assert not any(SP_WORD_START in s for s in axis.shown_labels())
    expected = []  # words of several pieces, found here by hand
    start = None
    for i, p in enumerate([*pieces, SP_WORD_START]):
        if p.startswith(SP_WORD_START) or p in ("SOS", "EOS") or i == len(pieces):
            if start is not None and i - start > 1:
                expected.append((start, i))
            start = i if p.startswith(SP_WORD_START) else None
    assert axis.word_groups() == expected
    assert WORD_START_LEGEND in view.forced_title.plain_text() and WORD_START_LEGEND in view.title.plain_text()
    assert all(SP_WORD_START not in t for t in view.predicted_labels())


# -- the output view: named for what it shows, readable in a short dock ---------------------------
def _text_rects(items):
    return [i.sceneBoundingRect() for i in items if i.isVisible() and i.toPlainText().strip()]


def _overlap(rects):
    return [(a, b) for n, a in enumerate(rects) for b in rects[n + 1:] if a.intersected(b).width() > 0.5 and a.intersected(b).height() > 0.5]


@pytest.mark.parametrize("size", [*DOCK, (900, 224)])
def test_output_view_is_readable_in_a_short_dock(make_view, qtbot, size):
    session, forced = F.session(steps=3), F.forced()
    view = make_view(QtOutputView, size, OutputFrame(step=session.steps[-1]), shown=True)
    qtbot.wait(10)
    title = view.title.plain_text()
    assert title.startswith(translate("views", view_spec("output").title))  # the view's title is its dock's name (not the top-k list's)
    vb = view.topk_plot.getViewBox()
    n = len(view.topk())
    assert n == len(session.steps[-1].topk) and vb.height() / n >= ROW_PX - 2  # every row a line of text tall
    assert view.topk_axis.label_step() == 1  # no piece dropped
    assert not _overlap(_text_rects(view.topk_text.items))
    assert view.canvas.height() > view.scroll.viewport().height()  # the rest scrolls

    view.set_data(OutputFrame(forced=forced))
    view.resize(*size)
    qtbot.wait(10)
    for plot in (view.prob_plot, view.loss_plot):
        assert plot.getViewBox().height() >= 60  # never collapses
    assert view.topk_plot.getViewBox().height() / len(view.topk()) >= ROW_PX - 2
    assert not _overlap(_text_rects(view.topk_text.items))
    topk_box = view.topk_plot.sceneBoundingRect()
    for plot in (view.prob_plot, view.loss_plot):  # beside the top-k (wide) or below it, never on it
        assert topk_box.intersected(plot.sceneBoundingRect()).isEmpty()
    pred = view.pred_text.items
    box = view.prob_plot.getViewBox().sceneBoundingRect()
    for item in pred:
        if item.isVisible():
            r = item.sceneBoundingRect()
            assert box.top() - 1 <= r.top() and r.bottom() <= box.bottom() + 1, (r, box)  # above its bar, inside the plot
    assert not _overlap(_text_rects(pred)) and not _overlap(_text_rects(view.loss_text.items))
    full = [display_piece(p.predicted_piece) for p in forced.steps]
    for shown, whole in zip(view.predicted_labels(), full):
        assert shown == whole or (shown.endswith("…") and whole.startswith(shown[:-1]))


def test_output_hover_is_one_based(make_view, qtbot):
    forced = F.forced()
    view = make_view(QtOutputView, (1366, 700), OutputFrame(forced=forced), shown=True)
    qtbot.wait(10)
    vb = view.prob_plot.getViewBox()
    view._on_mouse_moved(vb.mapViewToScene(vb.mapToView(vb.rect().center())))  # the scene signal's handler
    x = int(round(vb.mapSceneToView(vb.mapViewToScene(vb.mapToView(vb.rect().center()))).x()))
    p = forced.steps[x]
    assert view.readout.text().startswith(f"position {x + 1}: fed “{display_piece(p.input_piece)}”")


# -- positional encoding: the tutorial's i is the pair index ------------------------------------------
def test_pe_columns_are_labelled_2i_and_2i_plus_1(make_view, qtbot):
    s = F.session(steps=4)
    data = positional_data_for(s)
    d = data.d_model
    view = make_view(QtPositionalView, (1366, 224), data, shown=True)
    view.set_dimensions([0, 1, 4, 5])
    legend = [label.text for _, label in view.curve_legend.items]
    assert any("column 5 = 2i+1 with i = 2" in t and f"cos(pos/10000^(4/{d}))" in t for t in legend), legend
    assert any("column 4 = 2i with i = 2" in t and f"sin(pos/10000^(4/{d}))" in t for t in legend), legend
    view.pe_plot.sigHovered.emit(HoverInfo(3, 5, float(data.pe[3, 5]), "4", "5"))
    text = view.readout.text()
    assert text.startswith("position 4, column 5 = 2i+1 with i = 2") and "PE(pos 3, 5)" in text
    assert f"{math.cos(3 / 10000 ** (4 / d)):.4f}" in text  # the value, computed here
    assert view.pe_plot.getAxis("left").labels()[0] == "1"  # positions 1-based
    assert view.canvas.height() > view.scroll.viewport().height()  # a short dock scrolls


def test_pe_subtitle_is_not_clipped(make_view, qtbot):
    view = make_view(QtPositionalView, (1000, 760), positional_data_for(F.session(steps=2)), shown=True)
    qtbot.wait(10)
    t = view.title
    assert t.item.boundingRect().width() <= t.boundingRect().width() + 1


# -- LayerNorm: the model's formula, and the output before and after γ, β --------------------------------
@pytest.mark.parametrize("placement,formula", [("pre", "x + Sublayer(LN(x))"), ("post", "LN(x + Sublayer(x))")])
def test_norm_view_says_the_formula_and_shows_ln_before_gamma_beta(make_view, placement, formula):
    s = F.session(placement=placement, steps=3)
    sites = norm_site_data_for(s, s.config)
    view = make_view(QtNormStatsView, (1366, 224), NormSites(sites, "layer", placement), shown=True)
    assert formula in view.title.plain_text()
    col = view.columns[0]
    site = view.group_sites()[0]
    x = site.x_in.astype(np.float64)
    normalized = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)  # LN before γ, β, by hand
    np.testing.assert_allclose(col.std_n.getData()[1], normalized.std(-1), atol=1e-4)
    np.testing.assert_allclose(col.std_n.getData()[1], 1.0, atol=1e-3)
    np.testing.assert_allclose(col.std_b.getData()[1], site.x_out.std(-1), atol=1e-4)  # after γ, β: the model's output
    legend = view.title.plain_text()  # the series are named once, in the view's legend line
    assert "LN(x) before γ, β" in legend and "after γ, β" in legend and "γ" not in col.std_plot.titleLabel.text
    assert view.canvas.height() > view.scroll.viewport().height()


# -- the walkthrough -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cross_walk():
    bundle = F.bundle()
    s = F.session(steps=4)
    return session_walkthrough(bundle.model, s, "cross", 0, 1, 2)


def test_z_hover_writes_out_the_weighted_sum(make_view, cross_walk):
    w = cross_walk
    view = make_view(QtWalkthroughView, (1366, 700), WalkthroughFrame(w, {"encoder": 2, "decoder": 2, "cross": 2}), shown=True)
    z = view.table("z")
    z.sigHovered.emit(HoverInfo(2, 3, float(w.z[2, 3]), w.query_labels[2], "3"))
    text = view.readout.text()
    a = w.weights.astype(np.float64)
    v = w.v.astype(np.float64)
    expected = float(a[2] @ v[:, 3])  # Σⱼ a_ij v_j, here
    assert text.startswith(f"Z_2[query 3 “{display_piece(w.query_labels[2])}”, dim 3] = Σⱼ a_ij v_j = ")
    assert text.endswith(f" = {expected:.5f}")
    j = int(np.argmax(a[2]))
    assert f"{a[2, j]:.3f}·" in text and f"(key {j + 1})" in text


def test_biases_are_tables_and_cross_attention_says_c_encoder(make_view, cross_walk):
    w = cross_walk
    view = make_view(QtWalkthroughView, (1366, 700), WalkthroughFrame(w, {"encoder": 2, "decoder": 2, "cross": 2}), shown=True)
    for p in ("q", "k", "v"):
        b = view.shown(f"b_{p}")
        assert b.shape[0] == 1
        np.testing.assert_allclose(b[0], getattr(w, f"b_{p}")[: b.shape[1]])
    x = w.x.astype(np.float64)
    np.testing.assert_allclose(x @ w.w_q + w.b_q, w.q, atol=1e-4)  # X·W_i^Q + b = Q_i, checked here
    title = lambda key: view.table(key).titleLabel.text  # noqa: E731
    assert "C<sub>encoder</sub>W<sub>i</sub><sup>K</sup>" in title("k") and "C<sub>encoder</sub>W<sub>i</sub><sup>V</sup>" in title("v")
    assert "X·C<sub>encoder</sub><sup>T</sup>" in title("xx_t")
    assert "+ b<sub>i</sub><sup>Q</sup>" in title("q")


def test_norm_hover_is_one_based_with_the_mark(make_view):
    s = F.session(steps=3)
    view = make_view(QtNormStatsView, (1366, 700), NormSites(norm_site_data_for(s, s.config), "layer", "post"), shown=True)
    site = view.compared_site()
    view.cmp_plots["x"].sigHovered.emit(HoverInfo(1, 4, float(site.x_in[1, 4]), site.pieces[1], "4"))
    assert view.readout.text().startswith(f"token 2 “{display_piece(site.pieces[1])}”, feature 4:  x = {site.x_in[1, 4]:.4f}")


def test_the_export_dialog_writes_the_metadata_it_is_given(make_view, tmp_path, monkeypatch):
    from PySide6 import QtWidgets

    from attnviz.qt.export.dialogs import export_data_dialog

    session = F.session(steps=3)
    view = make_view(QtOutputView, (900, 600), OutputFrame(step=session.steps[-1]))
    target = tmp_path / "out.csv"
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), "CSV table (*.csv)"))
    meta = {"model": "tiny-layer", "source": "我喜欢吃苹果。", "target": "x\ny", "step": 3, "kind": None}
    assert export_data_dialog(view, None, metadata=meta) == target
    mark, *lines = target.read_text(encoding="utf-8").splitlines()
    assert mark.startswith("# attnviz-output: sha256=")  # attnviz's mark comes first (core/outputs.py)
    assert lines[:4] == ["# model: tiny-layer", "# source: 我喜欢吃苹果。", "# target: x y", "# step: 3"]
    assert lines[4] == f"# view: {view.figure_title()}" and view.figure_title().startswith(translate("views", view_spec("output").title))
    assert lines[5].startswith("# indices: rank_index count from 0")  # the core's note of the file; data, not UI text
    assert lines[6].startswith("rank_index,")


def test_walkthrough_row_is_the_status_bar_step(make_view):
    """The status bar says "step N" after N steps; the walkthrough follows row N of the decoder (1-based)."""
    bundle, s = F.bundle(), F.session(steps=4)
    w = session_walkthrough(bundle.model, s, "decoder", 0, 0)
    view = make_view(QtWalkthroughView, (1366, 700), WalkthroughFrame(w, {"encoder": 2, "decoder": 2, "cross": 2}))
    assert view.title.plain_text().split(" — ")[0].endswith(f"(row {len(s.steps)})")
    assert view.query_combo.currentText().startswith(f"{len(s.steps)} · ")


# -- a narrow, short dock (the right dock of a 1024×700 window): every text readable ----------------------
NARROW = (500, 560)


def _problems(view, qtbot) -> list[str]:
    """What the three-size test would report for ``view`` shown on its own, once its canvas has
    settled: texts that overlap or are cut off by the canvas (the scroll area scrolls the rest)."""
    from window_helpers import check_texts, scene_texts, visible_rect

    for _ in range(4):
        qtbot.wait(20)
    room = visible_rect(view.canvas.viewport(), view)
    return check_texts(scene_texts(view.canvas, view), room)


def test_norm_view_reads_in_a_narrow_dock(make_view, qtbot):
    s = F.session(placement="pre", steps=3)
    view = make_view(QtNormStatsView, NARROW, NormSites(norm_site_data_for(s, s.config), "layer", "pre"), shown=True)
    assert _problems(view, qtbot) == []
    assert view.canvas.width() <= view.scroll.viewport().width()  # no sideways scrolling: the columns fit
    assert view.canvas.height() > view.scroll.viewport().height()  # the figure keeps its height and scrolls


def test_positional_view_reads_in_a_narrow_dock(make_view, qtbot):
    view = make_view(QtPositionalView, NARROW, positional_data_for(F.session(steps=3)), shown=True)
    assert _problems(view, qtbot) == []


def test_output_view_reads_after_a_resize_in_teacher_forcing(make_view, qtbot):
    """The canvas grows with the teacher-forcing plots while it is being resized: its viewport
    follows (a nested resize used to leave the lower plot cut off)."""
    session = F.session(steps=3)
    view = make_view(QtOutputView, (900, 700), OutputFrame(step=session.steps[-1]), shown=True)
    view.set_data(OutputFrame(forced=F.forced()))
    for size in (NARROW, (520, 540), NARROW):
        view.resize(*size)
        assert _problems(view, qtbot) == []
        assert view.canvas.viewport().height() == view.canvas.height() - 2 * view.canvas.frameWidth()


def test_norm_view_selectors_show_whole_names(make_view, qtbot):
    """The layer and site selectors keep their names whole in a narrow dock (no "Encoder la…")."""
    s = F.session(placement="pre", steps=3)
    view = make_view(QtNormStatsView, NARROW, NormSites(norm_site_data_for(s, s.config), "layer", "pre"), shown=True)
    view.set_link_state(True, "follows: decoder · layer 2 · head 3")
    qtbot.wait(10)
    for combo in (view.group_combo, view.compare_combo):
        assert combo.width() >= combo.sizeHint().width()
    assert [view.compare_combo.itemText(i) for i in range(view.compare_combo.count())] == ["norm1", "norm2"]
    assert view.minimumSizeHint().width() <= NARROW[0]


def test_a_short_colour_bar_keeps_its_tick_labels_apart(qtbot):
    """In a narrow dock a colour bar may be 50 px tall: its labels (pyqtgraph always labels its top
    tick level) stay 1.5 text heights apart instead of overlapping."""
    import pyqtgraph as pg

    from attnviz.qt.widgets.colormaps import LIGHT
    from attnviz.qt.widgets.heatmap import HeatmapPlot, readable_spacing

    assert readable_spacing(10.0, 50.0, 12.0) == 5.0 and readable_spacing(1.0, 300.0, 12.0) == 0.1
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    plot = HeatmapPlot(LIGHT, levels=(-4.6, 4.6))
    widget.addItem(plot)
    text_px = QtGui.QFontMetricsF(plot.colorbar.axis.style.get("tickFont") or plot.colorbar.axis.font()).height()
    for height in (50.0, 120.0, 400.0):
        (major, _offset), *_ = plot.colorbar.axis.tickSpacing(-4.6, 4.6, height)
        assert major * height / 9.2 >= 1.5 * text_px * (1 - 1e-9), (height, major)
    assert plot.colorbar.axis.tickSpacing(-4.6, 4.6, 400.0)[0][0] < 5.0  # a tall bar keeps finer ticks


# -- captions follow the open model; exported figures are whole ----------------------------------
def _svg_text(tmp_path, view: str, model: str, *extra: str) -> str:
    import xml.etree.ElementTree as ET

    from attnviz.cli import main as cli_main
    from attnviz.paths import models_dir

    out = tmp_path / view
    assert cli_main(["export", "--view", view, "--model", str(models_dir() / model), "--src", "猫吃鱼。", *extra,
                     "--format", "svg", "--out", str(out)]) == 0
    root = ET.fromstring(next(out.glob("*.svg")).read_bytes())
    return " ".join(t.text or "" for t in root.iter() if t.tag.endswith(("text", "tspan")))


def test_the_residual_and_logit_lens_captions_follow_the_norm_placement(qapp, tmp_path):
    post = _svg_text(tmp_path / "post", "residual", "zh-en-small-postnorm")
    pre = _svg_text(tmp_path / "pre", "residual", "zh-en-small")
    assert "x ← LN(x + Sublayer(x))" in post and "x ← x + Sublayer(LN(x))" in pre
    lens_post = _svg_text(tmp_path / "lpost", "logit-lens", "zh-en-small-postnorm")
    lens_pre = _svg_text(tmp_path / "lpre", "logit-lens", "zh-en-small")
    assert "softmax(Linear(h_l))" in lens_post and "Norm(h_l)" not in lens_post  # the post-norm bundle has no final norm
    assert "softmax(Linear(Norm(h_l)))" in lens_pre
    norm = _svg_text(tmp_path / "norm", "norm", "zh-en-small-postnorm")
    assert "Sublayer(x) = LayerNorm(x + SublayerModule(x))" in norm  # the tutorial's notation


def test_an_exported_norm_figure_is_never_cut(qapp, tmp_path):
    from attnviz.cli import main as cli_main

    assert cli_main(["export", "--view", "norm", "--src", "猫吃鱼。", "--size", "1000x700", "--out", str(tmp_path)]) == 0
    image = QtGui.QImage(str(next(tmp_path.glob("*.png"))))
    view = QtNormStatsView()
    view.set_data(NormSites(norm_site_data_for(F.session(steps=3), F.bundle().config), "layer", "pre"))
    view.resize(1000, 700)
    need = view.canvas.ci.effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize)
    assert image.height() > 700 and image.height() >= need.height() - 1  # it grew to its plots
    view.close()


def test_teacher_vs_free_writes_its_departure_one_based_in_its_own_colour(qapp, tmp_path):
    from attnviz.cli import main as cli_main
    from attnviz.qt.widgets.colormaps import get_theme

    assert cli_main(["export", "--view", "teacher-vs-free", "--src", "猫吃鱼。", "--tgt", "The fish eats the cat.",  # data, not UI text
                     "--format", "npz", "--out", str(tmp_path)]) == 0
    with np.load(next(tmp_path.glob("*.npz"))) as z:
        assert "departure" not in z.files and int(z["departure_position"]) >= 1
        assert any("count from 1" in str(line) for line in z["metadata"])  # data, not UI text
    for name in ("light", "dark"):
        t = get_theme(name)
        assert t.departure != t.highlight  # the current step's colour means the current step only


def test_the_scaling_hover_and_the_norm_batch_features_follow_the_conventions(make_view):
    from attnviz.core.analysis.scaling import ScalingFrame, result_scaling
    from attnviz.qt.views.norm_batch import QtNormBatchView
    from attnviz.qt.views.scaling import QtScalingView

    view = make_view(QtNormBatchView, (900, 600))
    assert view.feature_spin.minimum() == 0  # d_model columns count from 0 in every view
    cur = F.session(steps=3)
    src, tgt = cur.src_pieces, cur.input_pieces
    scaling = make_view(QtScalingView, (900, 600))
    scaling.set_data(ScalingFrame(result_scaling(cur), {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}, 2))
    scaling.heat_scaled.sigHovered.emit(HoverInfo(0, 1, 0.5, "SOS", "猫"))
    assert "(position 1)" in scaling.readout.text() and "(position 2)" in scaling.readout.text()


def test_the_pe_axes_say_how_position_and_the_formulas_pos_relate(make_view):
    view = make_view(QtPositionalView, (900, 640), positional_data_for(F.session(steps=3)))
    assert "pos + 1" in view.curve_plot.getAxis("bottom").labelText  # positions 1…n on screen, pos from 0 in PE(pos, 2i)


# -- GUI tests assert on keys, objectNames and numbers, not on English sentences ----------------------------
DATA_MARK = "data, not UI text"  # a trailing comment on an assertion about model output, files or the CLI (English only)
ENGLISH_PHRASE = re.compile(r"[A-Za-z]{2,} [A-Za-z]{2,}")  # two words: a phrase, not a key, a name or a formula
MOST_ENGLISH_ASSERTIONS = 10  # where a test's point is that the English reads so
#: Files other sessions kept while this rule came in, with the English assertions they had then: their
#: number may only go down (the train panel's messages carry keys to assert on; see the report's list).
ELSEWHERE: dict[str, int] = {}


def english_phrase_assertions(folder: Path) -> dict[str, list[str]]:
    """file name -> ``line: phrase`` of each assertion in ``folder``'s tests that compares against an
    English phrase, leaving out those whose lines carry the ``# data, not UI text`` comment."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        marked = {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                  if tok.type == tokenize.COMMENT and DATA_MARK in tok.string}
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Assert):
                continue
            phrases = [c.value for c in ast.walk(node.test) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                       and ENGLISH_PHRASE.search(c.value)]
            if phrases and not marked.intersection(range(node.lineno, (node.end_lineno or node.lineno) + 1)):
                found.setdefault(path.name, []).append(f"{path.name}:{node.lineno}: {phrases[0][:60]!r}")
    return found


def test_gui_tests_assert_on_keys_not_english_sentences():
    """The interface is bilingual: a GUI test asserts on a message's key, an objectName, a widget's
    state or a number, so that it holds in either language; at most a few assert on English text."""
    found = english_phrase_assertions(Path(__file__).parent)
    ours = [line for name, lines in found.items() if name not in ELSEWHERE for line in lines]
    assert len(ours) <= MOST_ENGLISH_ASSERTIONS, "\n".join(ours)
    grown = {name: found.get(name, []) for name, most in ELSEWHERE.items() if len(found.get(name, [])) > most}
    assert not grown, "\n".join(line for lines in grown.values() for line in lines)
