"""Every bundle of the hostile corpus, and every hostile folder of each model family
(``tests/hostile_folders.py``), opened in the window with File -> Open: one line in the message
bar, and the window keeps working with the model it had. One window for the whole module."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hostile_bundles import hostile_bundles
from hostile_folders import FAMILIES, deny_unreadable, hostile_folders, snapshot, valid_folder
from PySide6 import QtGui, QtWidgets
from pytestqt.qtbot import QtBot
from window_helpers import TIMEOUT_MS, close_window, open_window, wait_idle

pytestmark = pytest.mark.slow  # the whole main window


@pytest.fixture(scope="module")
def window(qapp, request, tmp_path_factory):
    """One main window for every test of this module (a window takes seconds to build)."""
    w = open_window(QtBot(request), tmp_path_factory.mktemp("window"))
    yield w
    close_window(w)
    w.close()
    w.deleteLater()


def file_open(qtbot, window, monkeypatch, path: Path) -> None:
    """File -> Open (the action found by its objectName) answered with ``path``, until the load is over."""
    monkeypatch.setattr(QtWidgets.QFileDialog, "getExistingDirectory", lambda *args, **kw: str(path))
    action = window.findChild(QtGui.QAction, "openAction")
    with qtbot.waitSignal(window.session.busyChanged, timeout=TIMEOUT_MS, check_params_cb=lambda busy, _w: not busy):
        action.trigger()
    wait_idle(qtbot, window)


def message(window) -> tuple[str, object]:
    bar = window.findChild(QtWidgets.QLabel, "messageBar")
    return bar.text(), bar.property("level")


def refuses_and_keeps(qtbot, window, monkeypatch, name: str, path: Path, expect: str = "") -> list[str]:
    """Open ``path``; what went wrong (nothing: one error line matching ``expect``, the model it had still decodes)."""
    before, title = window.session.bundle, window.windowTitle()
    window.clear_message()
    file_open(qtbot, window, monkeypatch, path)
    text, level = message(window)
    wrong = []
    if level != "error" or not text or "\n" in text or "Traceback" in text:
        wrong.append(f"{name}: message {text!r} ({level})")
    elif not re.search(expect, text):
        wrong.append(f"{name}: {text!r} does not match {expect!r}")
    if window.session.bundle is not before or window.windowTitle() != title or window.model_path.resolve() != before.path.resolve():
        wrong.append(f"{name}: the open model changed")
    window.session.reset()
    if window.session.step() is None:
        wrong.append(f"{name}: the open model no longer decodes")
    return wrong


def test_every_hostile_bundle_gives_one_line_and_keeps_the_model(qtbot, window, monkeypatch, tmp_path):
    corpus = hostile_bundles(tmp_path / "corpus")
    assert corpus
    wrong = [w for name, path in corpus for w in refuses_and_keeps(qtbot, window, monkeypatch, name, path)]
    assert not wrong


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_hostile_folder_of_a_family_gives_one_line_and_keeps_its_model(qtbot, window, monkeypatch, tmp_path, family):
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    deny_unreadable(monkeypatch)  # chmod 000 is unreadable for root too
    valid = valid_folder(family, tmp_path)
    file_open(qtbot, window, monkeypatch, valid)  # the model open before: a valid folder of the family
    assert window.session.bundle.path == valid and message(window)[1] != "error"
    cases = hostile_folders(family, tmp_path / "cases")
    wrong = []
    for case in cases:
        before = snapshot(case.path)
        wrong += refuses_and_keeps(qtbot, window, monkeypatch, case.name, case.path, case.expect)
        if snapshot(case.path) != before:
            wrong.append(f"{case.name}: a file changed")
    assert not wrong
    assert window.session.bundle.path == valid
