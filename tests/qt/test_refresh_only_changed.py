"""A view is drawn again only when what its data is of changed: each spec declares what that is
(``depends_on``: the model alone, the source, each step; for a view of one kind or stack at a time,
the source alone on an encoder choice), and a frame that leaves it as it was does not call the
view's ``set_data``; the view still shows the frame's numbers."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

from attnviz.qt.frame_key import FrameKey
from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.registry import ViewSet, view_spec
from attnviz.qt.views.spec import encoder_side

from inside_fixtures import bundle, session

SHOWN = ("grid", "norm", "pe", "model-info")


def _shown(qtbot, names: tuple[str, ...]) -> ViewSet:
    """The views ``names`` of a session two steps into a sentence, each shown in its frame."""
    s = Session()
    s.decode_as_you_type = False  # a new sentence waits for a step, as the test says
    s.bundle = bundle()
    s.decoding = session(steps=2)
    vs = ViewSet(s, only=names)
    for name in names:
        frame = vs.frames[name]
        qtbot.addWidget(frame)
        frame.resize(640, 480)
        frame.show()
        qtbot.waitExposed(frame)
    return vs


@pytest.fixture
def views(qtbot):
    vs = _shown(qtbot, SHOWN)
    vs.selection.update(kind="encoder", layer=0)
    for name in SHOWN:
        vs.refresh(vs[name])
    QtWidgets.QApplication.processEvents()
    vs.drawn = Counter()
    for name, view in vs.views.items():  # count what the registry feeds each view from now on
        view.set_data = _counting(vs.drawn, name, view.set_data)
    yield vs
    for name in SHOWN:
        vs.frames[name].close()


def _counting(counter: Counter, name: str, set_data):
    def counted(data):
        counter[name] += 1
        return set_data(data)

    return counted


def test_a_decoder_step_feeds_only_the_views_whose_data_it_changed(views):
    s = views.session
    encoder = s.decoding.all_attention("encoder").copy()
    s.step()
    s.back()
    s.step()
    assert views.drawn == Counter({"pe": 3})  # the target's positions changed; the encoder's attention and norms, the model did not
    assert views.skips["grid"] == views.skips["norm"] == views.skips["model-info"] == 3
    np.testing.assert_array_equal(views["grid"].data().weights, encoder)  # still the encoder's numbers
    assert views["norm"].group() == ("encoder", 0)
    assert views["pe"].data().embeddings[1].pieces == s.input_pieces()  # the target side of this step


def test_turning_to_the_decoder_after_steps_feeds_the_kept_views_anew(views):
    s = views.session
    s.step()
    s.step()
    assert views.drawn["grid"] == views.drawn["norm"] == 0
    views.selection.update(kind="decoder")
    assert views.drawn["grid"] == views.drawn["norm"] == 1 and views.drawn["model-info"] == 0
    grid = views["grid"]
    assert grid.kind() == "decoder"
    np.testing.assert_array_equal(grid.data().weights, s.decoding.all_attention("decoder"))  # this step's rows, not the kept ones
    assert grid.data().weights.shape[2] == len(s.decoding.steps)
    norm = views["norm"]
    assert norm.group() == ("decoder", 0) and len(norm.group_sites()[0].pieces) == len(s.input_pieces())
    s.step()
    assert views.drawn["grid"] == views.drawn["norm"] == 2  # a decoder choice changes with every step


def test_a_new_source_feeds_the_views_of_the_source_but_not_the_model_info(views):
    s = views.session
    s.set_inputs("我喜欢吃鱼。", "")
    s.step()
    assert views.drawn["grid"] >= 1 and views.drawn["norm"] >= 1 and views.drawn["model-info"] == 0
    np.testing.assert_array_equal(views["grid"].data().weights, s.decoding.all_attention("encoder"))
    assert views["grid"].data().query_labels == s.src_pieces()


def test_another_model_feeds_every_view(views):
    s = views.session
    s.set_bundle(bundle(seed=1), source="我喜欢吃苹果。")
    s.step()
    assert views.drawn["model-info"] == 1 and views.drawn["grid"] >= 1
    np.testing.assert_array_equal(views["grid"].data().weights, s.decoding.all_attention("encoder"))


def test_a_frame_key_compares_objects_by_identity_and_values_by_equality():
    a, b = object(), object()
    assert FrameKey((a,), (1, "x")).same(FrameKey((a,), (1, "x")))
    assert not FrameKey((a,), (1,)).same(FrameKey((b,), (1,)))
    assert not FrameKey((a,), (1,)).same(FrameKey((a,), (2,)))
    assert not FrameKey((a,), ()).same(None)
    assert FrameKey((a,), (ViewChoice("cross"),)).same(FrameKey((a,), (ViewChoice("cross"),)))


def test_the_session_keys_each_part_of_its_frame():
    s = Session()
    s.bundle = bundle()
    s.decoding = session(steps=1)
    model, source, step = s.frames.key(()), s.frames.key(("source",)), s.frames.key(("source", "step"))
    s.decoding.step()
    assert s.frames.key(()).same(model) and s.frames.key(("source",)).same(source)
    assert not s.frames.key(("source", "step")).same(step)
    s.decoding = session(steps=2)  # another decoding of the same sentence: another result
    assert s.frames.key(()).same(model) and not s.frames.key(("source",)).same(source)
    with pytest.raises(ValueError, match="unknown frame parts"):
        s.frames.key(("target",))


def test_views_of_one_kind_at_a_time_keep_an_encoder_choice_over_steps():
    assert encoder_side(ViewChoice("encoder")) == ("source",)
    assert encoder_side(ViewChoice("cross")) == encoder_side(ViewChoice()) == ("source", "step")
    assert view_spec("model-info").parts(ViewChoice()) == ()
    assert view_spec("compare").parts(ViewChoice("encoder")) == ("source",)
    assert view_spec("norm").parts(ViewChoice("decoder")) == ("source", "step")


class _PaintCounter(QtCore.QObject):
    def __init__(self, paints: Counter, name: str, parent: QtCore.QObject):
        super().__init__(parent)
        self.paints, self.name = paints, name

    def eventFilter(self, obj, event):  # noqa: N802 - Qt API
        if event.type() == QtCore.QEvent.Type.Paint:
            self.paints[self.name] += 1
        return False


def test_a_view_fed_on_a_step_is_painted_once(qtbot):
    """The registry settles a view's plots and layouts after feeding it: one paint per frame,
    not one per pass of a layout that the paint itself set off (these views painted two or
    three times a frame)."""
    names = ("scaling", "output", "residual")
    views = _shown(qtbot, names)
    s = views.session
    views.selection.update(kind="decoder", layer=0)
    for name in names:
        views.refresh(views[name])
    for _ in range(5):
        QtWidgets.QApplication.processEvents()
    paints: Counter = Counter()
    for name in names:
        canvas = views[name].canvas
        canvas.viewport().installEventFilter(_PaintCounter(paints, name, canvas))
    for _ in range(3):
        s.step() if len(s.decoding.steps) % 2 else s.back()
        for _ in range(5):
            QtWidgets.QApplication.processEvents()
    assert paints == Counter(dict.fromkeys(names, 3)), paints
