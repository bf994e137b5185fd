"""The attention-vs-attribution view: its columns are the core's measures (each divided by its
largest magnitude), the correlation matrix is the core's, the chosen query row picks the output
token (computed again in a worker), and the data export carries every measure."""

from __future__ import annotations

import numpy as np

from attnviz.core.analysis.attention_vs_attribution import importance_for
from attnviz.qt.views.attention_vs_attribution import normalized

from inside_fixtures import bundle
from story_helpers import shown_view_set


def test_the_columns_are_the_measures_and_the_query_row_picks_the_token(qtbot):
    s, views = shown_view_set(qtbot, ("attribution",))
    view = views["attribution"]
    assert view.objectName() == "attentionVsAttributionView"
    r = view.result()
    assert r is not None
    b = bundle()
    expected = importance_for(s.frames.frozen(), None, b.model, b.tgt_tokenizer)
    assert r.question.position == expected.question.position
    matrix = view.measures.matrix()  # a row per source piece, a column per measure
    assert view.measures.row_labels() == tuple(r.source_pieces)
    for i, name in enumerate(expected.names):
        np.testing.assert_allclose(matrix[:, i], normalized(expected.measures[name]), atol=1e-5)
    np.testing.assert_allclose(view.rho.matrix(), expected.rho, atol=1e-5)
    views.selection.update(query=1, kind="cross")
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.result() is not None and view.result().question.position == 1, timeout=20000)
    at_one = importance_for(s.frames.frozen(), 1, b.model, b.tgt_tokenizer)
    np.testing.assert_allclose(view.result().measures["ig"], at_one.measures["ig"], atol=1e-9)
    data = view.figure_data()
    assert data.dims == ("source",) and set(data.values) >= {"cross_attention", "flow", "ig", "occlusion"}
    assert data.extras["spearman_rho"].shape == (7, 7) and int(data.extras["position"]) == 2


def test_normalized_keeps_signs_and_zero():
    np.testing.assert_allclose(normalized(np.array([2.0, -4.0, 1.0])), [0.5, -1.0, 0.25])
    assert (normalized(np.zeros(3)) == 0).all()


def test_every_piece_of_a_long_sentence_keeps_its_label(loaded, qtbot):
    """32+ source pieces: every row labelled, none over another (the tutorial's sentence had
    every other piece left out when the pieces were columns)."""
    long = "我今天很高兴，因为我的朋友来看我了，我们一起吃饭，一起看电影，一起聊天，一起喝茶，非常开心。"
    _, view, _, ok = loaded("attribution", source=long)
    assert ok and view.result() is not None
    pieces = view.result().source_pieces
    assert len(pieces) >= 32
    view.show()
    qtbot.wait(50)
    boxes = [box for _, box in view.measures.row_axis.label_boxes()]
    assert len(boxes) == len(pieces)  # none thinned out
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.intersected(b).height() > 1 and a.intersected(b).width() > 1]
