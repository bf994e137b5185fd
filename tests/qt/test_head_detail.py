"""QtHeadDetailView: one head's matrix, token labels on its axes, modes, hover readout."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame
from attnviz.core.data.pieces import WORD_START_LEGEND, display_piece, display_pieces
from attnviz.qt.i18n import translate
from attnviz.qt.sample_data import SOURCE, TARGET, sample_attention, sample_attention_sets
from attnviz.qt.selection import ViewChoice
from attnviz.qt.views.base import AXIS_TITLES, CURRENT_ROW_LEGEND
from attnviz.qt.views.head_detail import QtHeadDetailView


@pytest.fixture
def view(make_view):
    return make_view(QtHeadDetailView, (640, 520), sample_attention_sets(), shown=True)


def test_object_name_and_one_head(view):
    assert view.objectName() == "headDetailView"
    view.select(kind="cross", layer=1, head=2)
    d = view.data()
    # rows are queries (target pieces), columns are keys (source pieces)
    np.testing.assert_array_equal(view.plot.matrix(), d.weights[1, 2])
    assert view.plot.matrix().shape == (len(TARGET), len(SOURCE))
    assert view.plot.row_axis.labels() == display_pieces(TARGET)
    assert view.plot.col_axis.labels() == display_pieces(SOURCE)
    assert "我" in view.plot.col_axis.labels()
    assert view.plot.highlight_row() == len(TARGET) - 1
    assert view.figure_title() == "Cross-attention · layer 2 · head 3"


def test_mean_and_rollout_modes(view):
    view.select(kind="encoder", layer=2, mode="mean")
    d = view.data()
    np.testing.assert_allclose(view.plot.matrix(), d.weights[2].mean(axis=0), rtol=1e-6)
    view.select(mode="rollout")
    np.testing.assert_array_equal(view.plot.matrix(), d.rollout)
    assert not view.layer_combo.isEnabled()
    # cross-attention has no rollout here: the mode falls back to one head and is disabled
    view.select(kind="cross")
    assert view.mode() == "head"
    item = view.mode_combo.model().item(view.mode_combo.findData("rollout"))
    assert not item.isEnabled()


def test_updates_in_place(view):
    image, bar = view.plot.image, view.plot.colorbar
    n_items = len(view.canvas.scene().items())
    view.select(kind="decoder")
    for step in range(2, 6):
        view.set_data(sample_attention("decoder", target=TARGET[: step + 1], seed=step))
    assert view.plot.image is image and view.plot.colorbar is bar
    assert len(view.canvas.scene().items()) == n_items
    assert view.plot.matrix().shape == (6, 6)
    # decoder self-attention: exact zeros above the diagonal survive the round trip
    assert np.all(np.triu(view.plot.matrix(), 1) == 0.0)


def test_selection_from_controls_emits(view, qtbot):
    with qtbot.waitSignal(view.chose, timeout=1000) as blocker:
        view.head_combo.setCurrentIndex(3)
    changes = blocker.args[0]
    assert changes == {"kind": view.kind(), "mode": "head", "layer": view.layer(), "head": 3}
    np.testing.assert_array_equal(view.plot.matrix(), view.data().weights[changes["layer"], 3])


def test_apply_takes_a_choice(view):
    view.apply(ViewChoice(kind="encoder", layer=2, mode="mean"))
    assert (view.kind(), view.mode(), view.layer()) == ("encoder", "mean", 2)
    view.apply(ViewChoice(head=1, mode="head"))  # the kind and layer stay
    assert (view.kind(), view.mode(), view.layer(), view.head()) == ("encoder", "head", 2, 1)


def test_hover_readout_from_the_mouse(view, qtbot):
    view.select(kind="cross", layer=0, head=0)
    qtbot.wait_until(lambda: view.plot.getViewBox().width() > 0)
    scene_pt = view.plot.cell_center_in_scene(2, 3)
    pos = view.canvas.mapFromScene(scene_pt)
    with qtbot.waitSignal(view.hovered, timeout=2000, check_params_cb=lambda info: info is not None) as blocker:
        qtbot.mouseMove(view.canvas.viewport(), QtCore.QPoint(pos.x() - 2, pos.y()))
        qtbot.mouseMove(view.canvas.viewport(), pos)
    info = blocker.args[0]
    assert (info.row, info.col) == (2, 3)
    assert info.row_label == display_piece(TARGET[2]) and info.col_label == display_piece(SOURCE[3])
    assert info.value == pytest.approx(float(view.data().weights[0, 0, 2, 3]))
    assert "鱼" in view.readout.text() and f"{info.value:.4f}" in view.readout.text()


def test_bad_input_is_refused(view):
    with pytest.raises(ValueError):
        view.select(mode="diagonal")
    with pytest.raises(ValueError):
        AttentionData("cross", np.zeros((1, 1, 2, 3)), ("a", "b"), ("x", "y"))  # 2 key labels for 3 keys


def test_context_menu_offers_exports(view):
    menu = view.build_context_menu()
    names = {a.objectName() for a in menu.actions()}
    assert {"exportFigureAction", "exportDataAction", "exportAllHeadsAction"} <= names
    assert all(a.isEnabled() for a in menu.actions() if a.objectName())


def test_right_click_on_the_figure_opens_the_export_menu(view, qtbot):
    viewport, pos = view.canvas.viewport(), QtCore.QPoint(300, 250)
    event = QtGui.QContextMenuEvent(QtGui.QContextMenuEvent.Reason.Mouse, pos, viewport.mapToGlobal(pos))
    QtWidgets.QApplication.sendEvent(viewport, event)  # what a right click on the figure sends

    def open_menus():
        return [m for m in view.findChildren(QtWidgets.QMenu, "figureContextMenu") if m.isVisible()]

    qtbot.wait_until(lambda: len(open_menus()) == 1)
    menu = open_menus()[0]
    assert [a.objectName() for a in menu.actions()][:2] == ["exportFigureAction", "exportDataAction"]
    menu.close()


def test_single_image_item(view):
    images = [i for i in view.canvas.scene().items() if isinstance(i, pg.ImageItem)]
    assert images == [view.plot.image]


def test_rows_read_fed_token_then_predicted_token(view):
    view.select(kind="cross", layer=0, head=0, mode="head")
    assert translate("base", AXIS_TITLES["cross"][0]) in view.plot.row_axis.label.toPlainText()  # the fed token, which predicts the next
    info = view.plot.hover_cell(2, 1)
    fed, nxt = display_piece(TARGET[2]), display_piece(TARGET[3])
    assert info.row == 2
    assert f"fed “{fed}” (pos 3) → predicted “{nxt}”" in view.readout.text()  # 1-based, row y_t predicts y_t+1
    assert f"key “{display_piece(SOURCE[1])}” (pos 2)" in view.readout.text()
    # what the last row predicted comes with the frame when given
    view.set_data(AttentionFrame(sample_attention_sets(), TARGET[1:] + ("EOS",)))
    view.plot.hover_cell(len(TARGET) - 1, 0)
    assert "→ predicted “EOS”" in view.readout.text()
    # the encoder's rows are source tokens: no prediction
    view.select(kind="encoder")
    view.plot.hover_cell(1, 1)
    assert view.readout.text().startswith(f"query “{display_piece(SOURCE[1])}” (pos 2)")
    assert translate("base", AXIS_TITLES["encoder"][0]) in view.plot.row_axis.label.toPlainText()
    assert AXIS_TITLES["encoder"][0] != AXIS_TITLES["cross"][0]


def test_every_highlight_has_a_legend(view):
    view.select(kind="cross")
    legend = view.title.legend()
    current = translate("base", CURRENT_ROW_LEGEND)
    assert any(colour == view.theme.highlight and text == current for _, colour, text in legend)
    assert any(text == WORD_START_LEGEND for _, _, text in legend)  # the pieces carry the word-start mark
    assert current in view.title.plain_text()
    view.select(kind="encoder")  # no current row in the encoder
    assert not any(text == current or colour == view.theme.highlight for _, colour, text in view.title.legend())


def test_the_controls_fit_a_narrow_dock(view, qtbot):
    """The selectors wrap into two rows: with the link toggle and its caption they fit 500 px."""
    view.set_link_state(True, "follows: cross · layer 2 · head 3")
    view.resize(500, 420)
    qtbot.wait(10)
    assert view.minimumSizeHint().width() <= 500
    for combo in (view.kind_combo, view.mode_combo, view.layer_combo, view.head_combo):
        assert combo.isVisible() and view.rect().contains(combo.geometry().translated(combo.parentWidget().mapTo(view, QtCore.QPoint())))
    assert view.layer_combo.geometry().top() > view.kind_combo.geometry().top()  # a second row
