"""What the tests of the story views share: the sentences they decode, the size they draw at,
a click on a view's canvas, a view shown, the encoder's output and a session of a decoding."""

from __future__ import annotations

import torch
from PySide6 import QtCore, QtWidgets

from attnviz.qt.session import Session

from inside_fixtures import bundle

APPLES = "我喜欢吃苹果。"
OTHER = "果喜欢吃苹我。"  # APPLES with its first and last character swapped
TGT = "I like eating apples."
FISH = "我喜欢吃鱼。"
SIZE = (1100, 760)


def click(qtbot, view, scene_point: QtCore.QPointF) -> None:
    qtbot.mouseClick(view.canvas.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=view.canvas.mapFromScene(scene_point))


def shown(make_view, cls, *data):
    view = make_view(cls, SIZE, *data, shown=True)
    QtWidgets.QApplication.processEvents()
    return view


def encode(ids, positional, model=None):
    model = model if model is not None else bundle().model
    with torch.inference_mode():
        return model.encode(torch.tensor([ids]), positional=positional).memory[0].numpy()


def session_for(b, decoding) -> Session:
    s = Session()
    s.bundle = b
    s.decoding = decoding
    return s
