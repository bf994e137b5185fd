"""The one place that knows where ``models/`` and ``resources/`` live.

In a source checkout (and an editable install) they are the top-level folders next to
``attnviz/``; in an installed wheel they are shipped as ``attnviz/models`` and
``attnviz/resources`` (see ``pyproject.toml``).
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PKG / name, _PKG.parent / name):  # installed wheel first, then a checkout
        if candidate.is_dir():
            return candidate
    return _PKG.parent / name


def models_dir() -> Path:
    return _find("models")


def resources_dir() -> Path:
    return _find("resources")


def default_model() -> Path:
    return models_dir() / "hsk-zh-en"


def resource(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
