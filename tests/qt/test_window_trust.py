"""What the window shows is the model it holds, and untrusted text is shown as text:

* a load superseded by a later Open never reaches the views (its result is dropped);
* a load can be cancelled from the busy indicator and changes nothing;
* folder names, config values and token pieces with HTML in them appear literally;
* every hostile bundle gives one line in the window and leaves the previous model working.
"""

from __future__ import annotations

import threading

from PySide6 import QtCore, QtWidgets
from window_helpers import TIMEOUT_MS, broken_config_bundle, copy_bundle, wait_idle

import attnviz.qt.model_loader as loader_module
from attnviz.core.bundle import load_bundle
from attnviz.paths import default_model

PLAIN = QtCore.Qt.TextFormat.PlainText
HTML = "<span style='font-size:40pt;color:red'>Model verified ✔ safe</span><a href='http://x'>link</a>"




def _slow_first_loader(gate: threading.Event, slow_path):
    """``load_bundle`` that, for ``slow_path``, waits for ``gate`` (so it finishes last)."""

    def load(path, *args, **kwargs):
        if str(path) == str(slow_path):
            gate.wait(20)
        return load_bundle(path, *args, **kwargs)

    return load


def test_a_superseded_load_never_reaches_the_window(qtbot, window, tmp_path, monkeypatch):
    a, b = copy_bundle(tmp_path / "model-a"), copy_bundle(tmp_path / "model-b")
    gate = threading.Event()
    monkeypatch.setattr(loader_module, "load_bundle", _slow_first_loader(gate, a))
    window.open_model(a)  # slow: finishes after b
    window.open_model(b)
    qtbot.waitUntil(lambda: window.session.bundle.path == b, timeout=TIMEOUT_MS)
    gate.set()
    qtbot.waitUntil(lambda: not window.session._workers, timeout=TIMEOUT_MS)  # a has finished too
    QtWidgets.QApplication.processEvents()
    wait_idle(qtbot, window)
    assert window.session.bundle.path == b
    assert window.model_path == b and window.windowTitle() == "attnviz — model-b"
    assert window.status.model_label.text().startswith("model-b:")
    assert window.window_settings.recent_models()[0] == str(b)
    assert window.grid.data() is not None and window.session.current.config == window.session.bundle.config


def test_a_load_can_be_cancelled_and_changes_nothing(qtbot, window, tmp_path, monkeypatch):
    before = window.session.bundle
    title = window.windowTitle()
    slow = copy_bundle(tmp_path / "slow")
    gate = threading.Event()
    monkeypatch.setattr(loader_module, "load_bundle", _slow_first_loader(gate, slow))
    window.open_model(slow)
    QtWidgets.QApplication.processEvents()
    assert window.status.busy.isVisibleTo(window) and window.status.cancel_load_button.isVisibleTo(window)
    qtbot.mouseClick(window.status.cancel_load_button, QtCore.Qt.MouseButton.LeftButton)
    assert not window.status.busy.isVisibleTo(window) and not window.status.cancel_load_button.isVisibleTo(window)
    assert "cancelled" in window.message_bar.text()
    gate.set()
    qtbot.waitUntil(lambda: not window.session._workers, timeout=TIMEOUT_MS)
    QtWidgets.QApplication.processEvents()
    assert window.session.bundle is before and window.windowTitle() == title
    assert window.model_path == default_model() or window.model_path.resolve() == default_model().resolve()
    window.session.step()  # still working
    window.session.back()


def test_html_in_a_folder_name_and_a_config_value_is_shown_literally(qtbot, window, tmp_path):
    bad = broken_config_bundle(tmp_path / "<b>bold", norm=HTML)
    with qtbot.waitSignal(window.session.busyChanged, timeout=TIMEOUT_MS, check_params_cb=lambda busy, _w: not busy):
        window.open_model(bad)
    bar = window.message_bar
    assert bar.textFormat() == PLAIN and bar.property("level") == "error"
    assert "<b>bold" in bar.text() and "<span style=" in bar.text() and "\n" not in bar.text()  # data, not UI text
    assert window.session.bundle.path.resolve() == default_model().resolve()
    good = copy_bundle(tmp_path / "<i>model & <img src=x>")
    window.open_model(good)
    qtbot.waitUntil(lambda: window.session.bundle.path == good, timeout=TIMEOUT_MS)
    wait_idle(qtbot, window)
    assert window.windowTitle() == "attnviz — <i>model & <img src=x>"  # data, not UI text
    assert window.status.model_label.textFormat() == PLAIN and window.status.model_label.text().startswith("<i>model & <img src=x>:")  # data, not UI text
    assert "&lt;i&gt;" in window.status.model_label.toolTip()  # a tooltip is rich text: the name is escaped in it
    assert window.menus.recent_menu.actions()[0].text().startswith(str(tmp_path).replace("&", "&&"))
    for label in (window.status.step_label, window.grid.readout, window.topk_panel.caption):
        assert label.textFormat() == PLAIN


def test_token_pieces_with_html_are_plain_in_the_readouts(qtbot, window):
    """A hovered cell's readout names its token pieces: a crafted piece is shown as it is."""
    head = window.head_detail
    head.readout.setText("query “<b>x</b>” (pos 0)")
    assert head.readout.textFormat() == PLAIN
    window.chips.set_tokens(["SOS", "<img src=x>", "<b>y</b>"])
    assert "&lt;img src=x&gt;" in window.chips.text() and "<img" not in window.chips.text()  # data, not UI text


def test_a_multi_line_message_is_one_line(window):
    window.show_message("error", "first\nsecond\r\nthird\x00\u202efourth")
    assert window.message_bar.text() == "first second third fourth"  # data, not UI text
