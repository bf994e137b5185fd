"""What the tests of the story views share: the sentences they decode, the size they draw at,
a click on a view's canvas, a view shown, views shown in their frames, the encoder's output and a
session of a decoding."""

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


def shown_views(qtbot, s: Session, names: tuple[str, ...], size: tuple[int, int] = SIZE):
    """A ViewSet on ``s`` with the views ``names`` shown in their frames at ``size``, as in the
    window, and drawn (their analyses may still run)."""
    from attnviz.qt.views.registry import ViewSet

    views = ViewSet(s, only=names)
    for name in names:
        frame = views.frames[name]
        qtbot.addWidget(frame)
        frame.resize(*size)
        frame.show()
        qtbot.waitExposed(frame)
        views.refresh(views[name])
    return views


def shown_view_set(qtbot, names: tuple[str, ...]):
    """A ViewSet on the tiny model's session (4 steps) with the views ``names`` shown in their
    frames, as in the window, drawn and their analyses done: (session, views)."""
    from inside_fixtures import session

    s = session_for(bundle(), session(steps=4))
    views = shown_views(qtbot, s, names)
    assert s.analyses.wait()
    return s, views
