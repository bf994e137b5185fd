"""The logit-lens view: each cell labelled with its top piece."""

from __future__ import annotations

import numpy as np
import torch

from attnviz.core.analysis.logit_lens import logit_lens_for
from attnviz.core.data.pieces import display_piece
from attnviz.qt.views.logit_lens import QtLogitLensView

from inside_fixtures import bundle, session
from story_helpers import click, shown


# -- logit lens -------------------------------------------------------------------------------------------
def test_logit_lens_view_labels_each_cell_with_its_top_piece(make_view, qtbot):
    s = session(steps=5)
    b = bundle()
    lens = logit_lens_for(s, b.model, b.tgt_tokenizer)
    view = shown(make_view, QtLogitLensView, lens)
    assert view.objectName() == "logitLensView"
    with torch.no_grad():
        probs = torch.softmax(b.model(torch.tensor([s.src_ids]), torch.tensor([s.input_ids]))[0].double(), -1).numpy()
    np.testing.assert_allclose(view.heatmap.matrix()[-1], probs.max(-1), atol=1e-5)  # the last layer is the model
    top = [display_piece(b.tgt_tokenizer.piece(int(i))) for i in probs.argmax(-1)]
    assert view.labels.texts()[-len(top):] == top
    with qtbot.waitSignal(view.chose, timeout=3000) as sig:
        click(qtbot, view, view.heatmap.cell_center_in_scene(0, 1))
    assert sig.args == [{"query": 1}] and f"position 2 (“{display_piece(s.input_pieces[1])}”)" in view.title.plain_text()
    qtbot.mouseMove(view.canvas.viewport(), view.canvas.mapFromScene(view.heatmap.cell_center_in_scene(1, 2)))
    qtbot.wait_until(lambda: "layer 2" in view.readout.text())
