"""Fixtures of the view tests in this folder."""

from __future__ import annotations

import pytest
from window_helpers import close_window, open_window

from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.registry import build_view, feed_now, view_spec

from inside_fixtures import bundle
from story_helpers import APPLES


@pytest.fixture(scope="session")
def tiny_family(tmp_path_factory):
    """``tiny_family(name)``: the bundle of a tiny random Hugging Face model, ``bart``, ``t5`` (v1.0),
    ``t5-v1.1``, ``mbart``, ``gpt2`` or ``bert`` (``tests/tiny_families.py``), built once per
    session; the test is skipped without transformers."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    from tiny_families import build_bart, build_bert, build_gpt2, build_t5

    from attnviz.core.bundle import load_bundle

    builders = {"bart": build_bart, "t5": build_t5, "t5-v1.1": lambda folder: build_t5(folder, v1_1=True, seed=1), "gpt2": build_gpt2,
                "mbart": lambda folder: build_bart(folder, mbart=True), "bert": build_bert}
    built = {}

    def get(name: str):
        if name not in built:
            built[name] = load_bundle(builders[name](tmp_path_factory.mktemp(name) / f"tiny-{name}"))
        return built[name]

    return get


@pytest.fixture
def window(request, qtbot, tmp_path):
    """A shown main window on the bundled model, its first sentence decoded (``open_window``),
    closed after the test; ``@pytest.mark.window_size(w, h)`` gives its size (default 1400×900)."""
    mark = request.node.get_closest_marker("window_size")
    w = open_window(qtbot, tmp_path, *([tuple(mark.args)] if mark else []))
    yield w
    close_window(w)


@pytest.fixture
def loaded(qtbot):
    """``loaded(name, target="", model=None, source=APPLES)``: the registry's view ``name`` fed from
    a session on ``model`` (a bundle; None: the tiny model) with ``source`` decoded."""
    sessions = []

    def make(name: str, target: str = "", model=None, source: str = APPLES):
        session = Session()
        sessions.append(session)
        session.set_bundle(bundle() if model is None else model)
        session.set_inputs(source, target)
        session.finish_runs()  # a target's teacher-forced pass runs in a worker
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
