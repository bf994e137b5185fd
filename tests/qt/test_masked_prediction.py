"""The masked-tokens view: the top-k at each [MASK] of an encoder-only model's pass, in its table,
its bars and its data file; ``attnviz export --view masked`` writes the same numbers."""

from __future__ import annotations

import csv

import pytest

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.masked import masked_prediction_from_bundle
from attnviz.qt.views.masked_prediction import QtMaskedPredictionView

pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import build_bert  # noqa: E402  (needs transformers)

TEXT = "the cat [MASK] on the [MASK] ."


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return build_bert(tmp_path_factory.mktemp("hf") / "tiny-bert")


def test_the_view_lists_the_top_k_of_every_mask(qtbot, bert):
    result = masked_prediction_from_bundle(load_bundle(bert), TEXT, top_k=4)
    view = QtMaskedPredictionView()
    qtbot.addWidget(view)
    view.set_data(result)
    rows = [[view.table.item(r, c).text() for c in range(4)] for r in range(view.table.rowCount())]
    assert len(rows) == 8 and [r[0] for r in rows[::4]] == [str(p.index + 1) for p in result.positions]
    assert [float(r[3]) for r in rows[:4]] == pytest.approx([t[2] for t in result.positions[0].topk], abs=1e-4)
    assert view.position_combo.count() == 2 and view.bars.opts["width"].tolist() == [t[2] for t in result.positions[0].topk]
    data = view.figure_data()
    assert data.values["probability"].shape == (2, 4) and data.coords["position"] == ("4", "7")
    view.set_data(masked_prediction_from_bundle(load_bundle(bert), "the cat sat"))
    assert view.has_data() and view.table.rowCount() == 0 and not view.plot.isVisible()


def test_export_writes_the_masked_predictions(qapp, tmp_path, bert):
    out = tmp_path / "out"
    assert main(["export", "--model", str(bert), "--src", TEXT, "--view", "masked", "--format", "csv", "--out", str(out)]) == 0
    files = list(out.glob("*.csv"))
    assert len(files) == 1
    lines = [line for line in files[0].read_text().splitlines() if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    want = masked_prediction_from_bundle(load_bundle(bert), TEXT)
    got = [float(r["probability"]) for r in rows if r["position"] == "4"]
    assert got == pytest.approx([t[2] for t in want.positions[0].topk], abs=1e-6)
