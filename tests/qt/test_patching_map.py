"""The activation-patching view: its maps are the core's recovery of the other sentence's values
patched into the one on screen, the other sentence is an option computed again, and a clicked
cell decodes with that one value patched in (against ``patch_run``)."""

from __future__ import annotations

import numpy as np

from attnviz.core.analysis.compare import swap_ends
from attnviz.core.analysis.patching import patch_run, patching_map

from inside_fixtures import bundle
from story_helpers import OTHER, shown_view_set


def test_the_maps_are_the_core_s_and_a_cell_decodes_with_its_patch(qtbot):
    s, views = shown_view_set(qtbot, ("patching",))
    view = views["patching"]
    assert view.objectName() == "patchingMapView"
    this = s.current.source.text
    b = bundle()
    expected = patching_map(b, swap_ends(this), this)
    pair = view.pair()
    assert pair is not None and pair.patch is None
    np.testing.assert_allclose(view.maps["encoder"].matrix(), expected.recovery(expected.encoder), atol=1e-5)
    np.testing.assert_allclose(view.maps["decoder"].matrix(), expected.recovery(expected.decoder), atol=1e-5)
    view.maps["encoder"].sigCellClicked.emit(2, 1)
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.pair() is not None and view.pair().patch is not None, timeout=20000)
    assert view.options()["patchCell"] == "encoder:2:1"
    report = patch_run(b, this, swap_ends(this), "encoder:2", positions=[1])
    assert view.pair().patch.patched == report.patched and report.patched in view.result_label.text()


def test_the_other_sentence_is_an_option(qtbot):
    s, views = shown_view_set(qtbot, ("patching",))
    view = views["patching"]
    view.set_options({"patchOtherEdit": OTHER, "patchTokenSpin": 2})
    assert s.analyses.wait()
    qtbot.waitUntil(lambda: view.pair() is not None and view.pair().map.clean_pieces[0] == OTHER[0], timeout=20000)
    m = view.pair().map
    expected = patching_map(bundle(), OTHER, s.current.source.text, 1)
    assert m.target_position == 1 and "qt_spinbox_lineedit" not in view.options()
    np.testing.assert_allclose(m.encoder, expected.encoder, atol=1e-6)
    data = view.figure_data()
    assert data.dims == ("layer", "position") and "recovery" in data.values


def test_a_decoder_only_model_s_columns_are_sos_its_prompt_and_the_target(qtbot, loaded, tiny_family):
    """GPT-2's decoder reads SOS, the prompt and the target: one column label per position it feeds."""
    from attnviz.core.data.pieces import display_piece

    _spec, view, _session, _ok = loaded("patching", model=tiny_family("gpt2"), source="abc def")
    view.set_options({"patchOtherEdit": "abd def", "patchTokenSpin": 1})
    qtbot.waitUntil(lambda: view.pair() is not None, timeout=20000)
    m = view.pair().map
    cols = view.maps["decoder"].col_labels()
    assert m.decoder_only and len(cols) == m.decoder.shape[1]
    assert cols == tuple(display_piece(p) for p in ("SOS", *m.clean_pieces, *m.target_pieces[:-1]))
