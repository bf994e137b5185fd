"""The teacher-vs-free view against one full teacher-forced pass and the greedy decoding, and through
the session's workers."""

from __future__ import annotations

import numpy as np
import torch

from attnviz.core.data.pieces import display_piece
from attnviz.core.model.sites import AttentionSite
from attnviz.qt.selection import ViewChoice

from inside_fixtures import bundle
from story_helpers import APPLES, TGT

SRC = APPLES


# -- teacher vs free -------------------------------------------------------------------------------
def test_teacher_vs_free_view_against_a_full_pass(loaded):
    spec, view, session, ok = loaded("teacher-vs-free", TGT)
    assert ok and view.has_data()
    model, tgt = bundle().model, bundle().tgt_tokenizer
    y = tgt.encode(TGT)
    with torch.inference_mode():
        logits = model(torch.tensor([bundle().src_tokenizer.encode(SRC)]), torch.tensor([[model.config.bos_id, *y]]))[0]
    rows = view.table.cells()
    assert list(rows[1]) == [display_piece(p) for p in tgt.pieces([model.config.bos_id, *y])]
    assert list(rows[2]) == [display_piece(p) for p in tgt.pieces([int(i) for i in logits.argmax(-1)])]
    from attnviz.core.decoding.session import DecodingSession

    greedy = DecodingSession.from_bundle(bundle(), SRC)
    greedy.run()
    assert list(rows[3]) == [display_piece(p) for p in greedy.input_pieces]
    assert list(rows[4]) == [display_piece(p) for p in greedy.output_pieces]
    view.apply(ViewChoice(kind="cross", layer=1, head=2, mode="head"))
    _, trace = model.run_with_trace(torch.tensor([bundle().src_tokenizer.encode(SRC)]), torch.tensor([[model.config.bos_id, *y]]),
                                    names=["*cross_attn.weights"])
    recorded = trace[AttentionSite("cross", 1).name("weights")][2]
    np.testing.assert_allclose(view.heat_teacher.raw_matrix(), recorded, atol=1e-5)
    rows, d = view.attention_rows(), view.result().departure
    assert d is not None  # an untrained model departs
    assert rows["teacher, departure"][0] == rows["free, departure"][0] == d
    np.testing.assert_allclose(rows["teacher, departure"][1], recorded[d], atol=1e-5)
    np.testing.assert_allclose(rows["free, departure"][1], recorded[d], atol=1e-5)  # the same prefix: the same row
    np.testing.assert_allclose(view.rows_plot.series("free, departure")[1], recorded[d], atol=1e-5)
    # through the session's workers, as in the window: a step moves the current position and
    # the pass is not decoded again
    session.analyses.submit("teacher-vs-free", spec.data(session, ViewChoice()), view.set_data)
    assert session.analyses.wait()
    result = view.result()
    session.forced_cursor = 1
    assert session.analyses.submit("teacher-vs-free", spec.data(session, ViewChoice()), view.set_data) is None  # answered at once
    assert view.result() is result and view.heat_teacher.highlight_row() == 1
    assert session.analyses.counts["reused"] == 1


def test_teacher_vs_free_view_without_a_target_says_so(loaded):
    _, view, _, ok = loaded("teacher-vs-free")
    assert not ok and not view.has_data()
    assert "needs a target" in view.title.plain_text()
    assert not view.table.isVisible()
