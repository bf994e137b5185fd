"""The view protocol's one owner of the data: ``FigureViewBase.set_data`` keeps what a view is given
(``given``) and calls the view's ``render``; ``has_data`` says whether that data has something to
draw (the view's ``_drawable``). Every registered view keeps to it, so the next one does too."""

from __future__ import annotations

import pytest

from attnviz.core.analysis.model_info import model_info
from attnviz.core.analysis.residual import ResidualFrame
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.model_info import QtModelInfoView
from attnviz.qt.views.registry import VIEWS
from attnviz.qt.views.residual import QtResidualView

from inside_fixtures import bundle


@pytest.mark.parametrize("spec", VIEWS, ids=lambda spec: spec.name)
def test_every_view_renders_and_leaves_the_data_to_the_base(spec):
    cls = spec.cls
    assert cls.render is not FigureViewBase.render, f"{cls.__name__} draws its data in render(data)"
    assert cls.set_data is FigureViewBase.set_data, f"{cls.__name__} overrides set_data: draw in render instead"
    assert cls.has_data is FigureViewBase.has_data, f"{cls.__name__} overrides has_data: say what empty data is in _drawable"


def test_the_base_keeps_the_data_given_and_says_whether_there_is_any(make_view):
    view = make_view(QtModelInfoView, (800, 600))
    assert view.given is None and not view.has_data()
    info = model_info(bundle())
    view.set_data(info)
    assert view.given is info and view.info() is info and view.has_data()
    assert view.table.rowCount() == len(info.rows) and "parameters" in view.title.plain_text()  # render drew it
    view.set_data(None)
    assert view.given is None and not view.has_data() and view.table.rowCount() == 0


def test_data_with_nothing_to_draw_is_kept_yet_has_no_data(make_view):
    view = make_view(QtResidualView, (800, 600))
    empty = ResidualFrame(())
    view.set_data(empty)
    assert view.given is empty and not view.has_data()
