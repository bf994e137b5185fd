"""Fixtures of the view tests in this folder."""

from __future__ import annotations

import pytest

from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.registry import build_view, feed_now, view_spec

from inside_fixtures import bundle
from story_helpers import APPLES


@pytest.fixture
def loaded(qtbot):
    """``loaded(name, target="")``: the registry's view ``name`` fed from a session on the tiny model."""
    sessions = []

    def make(name: str, target: str = ""):
        session = Session()
        sessions.append(session)
        session.set_bundle(bundle())
        session.set_inputs(APPLES, target)
        if session.decoding is not None:
            session.decoding.run()
        spec = view_spec(name)
        view = build_view(spec)
        qtbot.addWidget(view)
        view.resize(1300, 800)
        ok = feed_now(spec, view, session, ViewChoice())
        view.optionsChanged.connect(lambda: feed_now(spec, view, session, ViewChoice()))  # as the window's ViewSet does
        return spec, view, session, ok

    yield make
    for s in sessions:
        s.deleteLater()
