"""Fixtures the core tests share."""

from __future__ import annotations

import pytest

from attnviz.core.bundle import load_bundle
from attnviz.paths import default_model


@pytest.fixture(scope="module")
def bundle():
    """The default model's bundle, loaded once for each test module that asks for it (a module may define its own)."""
    return load_bundle(default_model())
