"""The nearest-training-sentences view: its table holds the core's neighbours as plain text (a
sentence that looks like markup stays text), in a ViewSet it is computed in a worker for the
current step and again for another step, its index kept in the user's cache folder; a model it
does not apply to says why."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6 import QtWidgets

from attnviz.core import Transformer
from attnviz.core.analysis.neighbours import build_index, fed_rows, neighbours_of
from attnviz.core.bundle import Bundle
from attnviz.core.data.corpora import Pair, load_tsv
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.neighbours import REASONS, NotApplicable, QtNeighboursView, neighbours_data

from inside_fixtures import bundle, session
from story_helpers import shown
from tiny_models import EN, ZH

MARKUP = "<b>粗体</b><img src=x>"
PAIRS = [Pair(z, e, f"p{i}") for i, (z, e) in enumerate(zip(ZH, EN))] + [Pair(MARKUP, "<i>bold</i> & co", "markup")]


@pytest.fixture(scope="module")
def found():
    b = bundle()
    index = build_index(b.model, b.src_tokenizer, b.tgt_tokenizer, PAIRS, "ab" * 32)
    fed = fed_rows(b.config, b.src_tokenizer, b.tgt_tokenizer, MARKUP, "<i>bold</i> & co")
    return neighbours_of(index, b.model, b.src_tokenizer, b.tgt_tokenizer, fed.src, fed.fed, fed.next, 2, k=5, notice="index built")


def test_the_table_holds_the_neighbours_as_plain_text(make_view, found, tmp_path):
    view = shown(make_view, QtNeighboursView, found)
    table = view.findChild(QtWidgets.QTableWidget, "neighboursTable")
    assert view.objectName() == "neighboursView" and table.rowCount() == 5
    first = found.neighbours[0]
    assert first.pair_id == "markup" and first.position == 2  # a training step finds itself
    assert [table.item(0, c).text() for c in range(4)] == [MARKUP, first.marked(), first.next_piece.replace("\u2581", "\u2423"),
                                                           f"{first.similarity:.3f}"]
    assert "\u27e6" in table.item(0, 1).text()  # the position's token between ⟦ ⟧, as plain text
    sims = [float(table.item(r, 3).text()) for r in range(5)]
    assert sims == sorted(sims, reverse=True)
    assert found.marked() in view.title.plain_text()  # the title quotes the step as text
    data = view.figure_data()
    np.testing.assert_allclose(data.values["similarity"], [n.similarity for n in found.neighbours])
    view.resize(900, 600)
    QtWidgets.QApplication.processEvents()
    view.grab().save(str(tmp_path / "neighbours_tiny.png"))


def test_an_encoder_only_model_and_a_model_without_data_say_why(make_view):
    b = bundle()
    s = Session()
    s.bundle = b
    s.decoding = session(steps=2)
    assert neighbours_data(s, ViewChoice()) == NotApplicable("no-data")  # the tiny model names no training data
    encoder_only = Transformer(dataclasses.replace(b.config, kind="encoder-only", n_decoder_layers=0)).eval()
    s2 = Session()
    s2.bundle = Bundle(encoder_only, b.src_tokenizer, b.tgt_tokenizer, {"name": "bert-like", "data": {"spec": {"kind": "copy"}}})
    s2.decoding = session(steps=2)  # what the view is given needs only the model to say why
    data = neighbours_data(s2, ViewChoice())
    assert data == NotApplicable("no-decoder")
    view = shown(make_view, QtNeighboursView, data)
    assert view.has_data() and view.reason() == "no-decoder" and translate("neighbours", REASONS["no-decoder"]) in view.title.plain_text()
    assert view.table.rowCount() == 0 and view.result() is None


def test_the_view_set_computes_each_step_in_a_worker_and_keeps_the_index(qtbot, tmp_path, monkeypatch):
    from attnviz.qt.views.registry import ViewSet

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("".join(f"{p.src}\t{p.tgt}\n" for p in PAIRS[:-1]), encoding="utf-8")
    b = bundle()
    meta = {"name": "tiny", "data": {"spec": {"kind": "tsv", "path": str(tsv)}}}
    s = Session()
    s.bundle = Bundle(b.model, b.src_tokenizer, b.tgt_tokenizer, meta)
    s.decoding = session(steps=3)
    views = ViewSet(s, only=("neighbours",))
    frame, view = views.frames["neighbours"], views["neighbours"]
    qtbot.addWidget(frame)
    frame.resize(900, 600)
    frame.show()
    qtbot.waitExposed(frame)
    views.refresh(view)
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.result() is not None, timeout=10000)
    got = view.result()
    frozen = s.frames.frozen()
    index = build_index(b.model, b.src_tokenizer, b.tgt_tokenizer, load_tsv(tsv).train)
    want = neighbours_of(index, b.model, b.src_tokenizer, b.tgt_tokenizer, frozen.src_ids, frozen.input_ids, frozen.output_ids, 2)
    assert got.position == 2 and [(n.pair_id, n.position) for n in got.neighbours] == [(n.pair_id, n.position) for n in want.neighbours]
    assert "not kept" in got.notice  # an in-memory bundle has no files to name its index by (the core's notice); data, not UI text
    views.request("neighbours", query=0)  # another target row: computed again
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.result().position == 0, timeout=10000)
