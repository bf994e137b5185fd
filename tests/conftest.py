import gc
import os

# Must be set before any QApplication exists (pytest-qt creates one lazily).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# What the app keeps in the user's cache folder (the neighbours' indexes) goes to a folder of this
# run, never to the home folder of whoever runs the tests.
os.environ["XDG_CACHE_HOME"] = __import__("tempfile").mkdtemp(prefix="attnviz-test-cache-")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

# Python's cyclic garbage collector runs in whichever thread happens to allocate. If it frees a
# Qt object there (a view left over from an earlier test, say) while a worker thread is running,
# Qt crashes. As in the app (attnviz.qt.app.make_app), collect only in the main thread: here,
# after every test.
gc.disable()


WINDOW_FIXTURES = {"window"}  # fixtures that open the whole main window (~10 s each): slow


def pytest_collection_modifyitems(config, items):
    """A test that opens the main window through a ``window`` fixture is ``slow`` like the ones
    marked by hand (trainings, subprocesses, every size of the window)."""
    for item in items:
        if WINDOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session):
    """Once the tests are collected (torch, Qt, pyqtgraph and attnviz imported), move every object
    alive into the collector's permanent generation: the collection after each test then looks at
    what the tests made, not the ~200 000 objects of the imported modules (a full look took
    0.2-0.5 s, after every one of ~900 tests)."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="module")
def _freeze_what_outlives_a_module():
    """After a module (its module fixtures torn down, their garbage collected), what is still alive
    lives for the session (caches, session fixtures): freeze it too, so that no later collection
    looks at it again."""
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _collect_garbage_in_the_main_thread():
    """What the test made and dropped (its windows and views too, so none outlives it) is
    collected here, in the main thread."""
    yield
    gc.collect()


@pytest.fixture
def make_view(qtbot):
    """Build views for a test: ``make_view(cls, (width, height), *data, shown=False, **kw)``.

    The view is registered with ``qtbot`` (closed after the test) and resized; given ``data``
    or keywords it is handed ``set_data(*data, **kw)``; ``shown`` shows it and waits until
    it is on screen.
    """

    def make(cls, size, *data, shown=False, **kw):
        view = cls()
        qtbot.addWidget(view)
        view.resize(*size)
        if data or kw:
            view.set_data(*data, **kw)
        if shown:
            view.show()
            qtbot.waitExposed(view)
        return view

    return make


@pytest.fixture(scope="session")
def augmented():
    """``augmented(spec)``: a bundle's training data, its corpora loaded and augmented as its
    meta.json ``spec`` says, built once per spec for the whole test session (a build takes seconds;
    several modules need it)."""
    import json

    from attnviz.core.data.augment import augment_as
    from attnviz.core.data.sources import load_data

    cache: dict[str, object] = {}

    def build(spec: dict):
        key = json.dumps(spec, sort_keys=True)
        if key not in cache:
            cache[key] = augment_as(load_data(spec), spec)
        return cache[key]

    return build



@pytest.fixture
def chinese(qapp):
    """The interface in 简体中文 for the test, English again after."""
    from attnviz.qt.i18n import install

    assert install("zh_CN") == "zh_CN"
    try:
        yield
    finally:
        install("en")
