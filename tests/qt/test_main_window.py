"""The real main window on the bundled default model, driven through its controls."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.paths import default_model
from attnviz.qt.main_window import MainWindow

TIMEOUT = 30000


def wait_idle(qtbot, window):
    if window.session.running:
        with qtbot.waitSignal(window.session.runFinished, timeout=TIMEOUT):
            pass
    QtWidgets.QApplication.processEvents()




def find(w, cls, name):
    obj = w.findChild(cls, name)
    assert obj is not None, name
    return obj


def test_opens_bundled_model_with_an_example_already_decoded(window):
    s = window.session
    assert s.bundle.path.resolve() == default_model().resolve()
    assert len(s.decoding.steps) >= 2 and s.decoding.finished
    assert "d_model" in window.status.model_label.full_text() and "LayerNorm" in window.status.model_label.full_text()
    grid = find(window, QtWidgets.QWidget, "attentionGridView")
    assert grid.kind() == "cross"
    np.testing.assert_array_equal(grid.data().weights, s.decoding.all_attention("cross"))
    for name in ("sourceEdit", "targetEdit", "stepButton", "backButton", "runButton", "resetButton", "strategyCombo",
                 "topkList", "attentionGridView", "headDetailView", "linesView", "masksView"):
        assert window.findChild(QtCore.QObject, name) is not None, name


def type_source(qtbot, window, text):
    edit = find(window, QtWidgets.QLineEdit, "sourceEdit")
    edit.clear()
    edit.setFocus()
    edit.insert(text)  # QTest cannot synthesize key events for Chinese characters
    qtbot.keyClick(edit, QtCore.Qt.Key.Key_Return)
    assert window.session.source == text


def test_type_step_back_force_run(qtbot, window):
    s = window.session
    window.findChild(QtGui.QAction, "decodeAsYouTypeAction").trigger()  # off: a new sentence waits at SOS
    assert not s.decode_as_you_type
    type_source(qtbot, window, "我喜欢吃鱼。")
    assert len(s.decoding.steps) == 0
    assert s.decoding.src_pieces == tuple(s.bundle.src_tokenizer.pieces(s.bundle.src_tokenizer.encode("我喜欢吃鱼。")))
    qtbot.mouseClick(find(window, QtWidgets.QToolButton, "stepButton"), QtCore.Qt.MouseButton.LeftButton)
    assert len(s.decoding.steps) == 1
    window.grid.setFocus()
    qtbot.keyClick(window.grid, QtCore.Qt.Key.Key_Right)
    qtbot.keyClick(window.grid, QtCore.Qt.Key.Key_Right)
    assert len(s.decoding.steps) == 3
    ids_after_3 = s.decoding.tgt_ids
    qtbot.keyClick(window.grid, QtCore.Qt.Key.Key_Left)
    assert len(s.decoding.steps) == 2 and s.decoding.tgt_ids == ids_after_3[:3]
    # every view holds the session's matrices for the current step
    cross = s.decoding.all_attention("cross")
    assert cross.shape[2] == 2
    np.testing.assert_array_equal(window.grid.data().weights, cross)
    window.head_detail.select(kind="decoder", layer=1, head=2, mode="head")
    np.testing.assert_array_equal(window.head_detail.current_matrix(), s.decoding.attention("decoder", 1)[2])
    mask_view = window.views["mask"]
    assert "mask" in window.views.stale  # a background tab is not drawn on a step
    window.docks["masksDock"].raise_()  # its tab raised, it catches up once
    qtbot.waitUntil(lambda: "mask" not in window.views.stale, timeout=5000)
    mats = mask_view.matrices()
    assert any(np.array_equal(m, s.decoding.attention("decoder", mask_view.layer())[mask_view.head()]) for m in mats.values())
    # force the third entry of the next-token list
    topk = find(window, QtWidgets.QListWidget, "topkList")
    assert topk.count() >= 3
    item = topk.item(2)
    forced_id = item.data(QtCore.Qt.ItemDataRole.UserRole)
    rect = topk.visualItemRect(item)
    qtbot.mouseClick(topk.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    assert s.decoding.tgt_ids[-1] == forced_id and s.decoding.steps[-1].forced
    assert s.bundle.tgt_tokenizer.piece(forced_id) in window.chips.pieces
    assert window.grid.data().weights.shape[2] == 3  # the forced token's row is in the matrices
    qtbot.mouseClick(find(window, QtWidgets.QToolButton, "runButton"), QtCore.Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window)
    assert s.decoding.finished
    assert "finished" in window.status.step_label.text()
    qtbot.mouseClick(find(window, QtWidgets.QToolButton, "resetButton"), QtCore.Qt.MouseButton.LeftButton)
    assert len(s.decoding.steps) == 0


def test_switch_strategies(qtbot, window):
    s = window.session
    combo = find(window, QtWidgets.QComboBox, "strategyCombo")
    combo.setCurrentIndex(combo.findData("beam"))
    assert type(s.decoding.strategy).__name__ == "BeamSearch"
    window.session.reset()
    window.session.run_to_end()
    wait_idle(qtbot, window)
    assert s.decoding.finished
    beams = find(window, QtWidgets.QListWidget, "beamList")
    assert beams.count() == len(s.decoding.beams()) and beams.count() > 1
    combo.setCurrentIndex(combo.findData("sample"))
    find(window, QtWidgets.QSpinBox, "seedSpin").setValue(7)
    window.session.reset()
    window.session.run_to_end()
    wait_idle(qtbot, window)
    first = s.decoding.tgt_ids
    window.session.reset()
    window.session.run_to_end()
    wait_idle(qtbot, window)
    assert s.decoding.tgt_ids == first  # reproducible by seed


def test_teacher_forced_mode(qtbot, window):
    s = window.session
    target = find(window, QtWidgets.QLineEdit, "targetEdit")
    type_source(qtbot, window, "老师，您好！")
    qtbot.keyClicks(target, "Hello, teacher!")
    qtbot.keyClick(target, QtCore.Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: s.forced is not None, timeout=TIMEOUT)  # the pass runs in a worker
    assert s.decoding is None and not s.pending
    assert s.forced.input_pieces[0] == "SOS" and s.forced.output_pieces[-1] == "EOS"
    assert "teacher-forced" in window.status.step_label.text()
    np.testing.assert_array_equal(window.grid.data().weights, s.forced.all_attention("cross"))
    window.session.back()
    assert s.forced_cursor == len(s.forced.steps) - 2
    target.clear()
    qtbot.keyClick(target, QtCore.Qt.Key.Key_Return)
    assert s.forced is None and s.decoding is not None


def test_errors_are_messages_not_tracebacks(qtbot, window, tmp_path):
    type_source(qtbot, window, "   ")
    assert window.message_bar.isVisible() and "empty" in window.message_bar.text()
    bad = tmp_path / "bad"
    shutil.copytree(default_model(), bad)
    (bad / "config.json").write_text("{")
    with qtbot.waitSignal(window.session.busyChanged, timeout=TIMEOUT, check_params_cb=lambda busy, _w: not busy):
        window.open_model(bad)
    assert window.message_bar.property("level") == "error"
    assert "config.json" in window.message_bar.text()
    assert window.session.bundle.path.resolve() == default_model().resolve()  # the open model is kept
    type_source(qtbot, window, "犇犇")
    assert "UNK" in window.message_bar.text()


def test_export_from_views(qtbot, window, tmp_path):
    from attnviz.qt.export.files import export_view_data, render_view_to_file

    for view in (window.grid, window.head_detail, window.views["lines"], window.views["mask"]):
        window.views.bring_up_to_date(view)  # a background tab is drawn when it is exported
        for fmt in ("png", "svg", "pdf"):
            out = render_view_to_file(view, tmp_path / f"{view.objectName()}.{fmt}")
            data = out.read_bytes()
            assert len(data) > 500, out
            if fmt == "png":
                assert data[:8] == b"\x89PNG\r\n\x1a\n"
            elif fmt == "pdf":
                assert data[:5] == b"%PDF-" and b"/Page" in data
            else:
                root = ET.fromstring(data)
                texts = "".join(t.text or "" for t in root.iter() if t.tag.endswith("text") or t.tag.endswith("tspan"))
                assert "SOS" in texts or "老师" in texts or view is window.grid
        export_view_data(view, tmp_path / f"{view.objectName()}.csv")
        export_view_data(view, tmp_path / f"{view.objectName()}.npz")
    with np.load(tmp_path / "headDetailView.npz") as z:
        assert any(np.array_equal(z[k], window.head_detail.current_matrix()) for k in z.files)


@pytest.mark.slow  # opens the whole main window twice
def test_settings_persist(qtbot, tmp_path):
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.session.bundle is not None, timeout=TIMEOUT)
    wait_idle(qtbot, w)
    w.set_colormap("magma")
    w.docks["masksDock"].hide()
    w.close()
    assert str(default_model()) in w.window_settings.recent_models()[0] or w.window_settings.recent_models()[0].endswith(default_model().name)
    w2 = MainWindow(settings=QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w2)
    w2.show()
    qtbot.waitUntil(lambda: w2.session.bundle is not None, timeout=TIMEOUT)
    wait_idle(qtbot, w2)
    assert w2.colormap_name == "magma"
    assert not w2.docks["masksDock"].isVisible()
    assert w2.menus.recent_menu.actions()[0].text().endswith(default_model().name)
    w2.close()
