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


DEFAULT_MODEL = "zh-en"  # the bundle the app and every command open when none is named
# Bundled folders that were renamed or retired, and the bundled folder that took each one's place.
RENAMED_BUNDLES = {
    "hsk-zh-en": DEFAULT_MODEL,  # the HSK-only default before the Tatoeba-trained one
    "hsk-tatoeba-zh-en": DEFAULT_MODEL,
    "hsk-zh-en-hsk-only": "hsk-only-zh-en",
    "hsk-augmented-zh-en": DEFAULT_MODEL,  # the HSK-augmented default, retired with its variants
    "hsk-zh-en-guided": "zh-en-small-guided",  # the variants, trained again on the small model's data
    "hsk-zh-en-postnorm": "zh-en-small-postnorm",
    "hsk-zh-en-batchnorm": "zh-en-small-batchnorm",
    "zh-en-large": DEFAULT_MODEL,  # the d_model 256 model, the default since it met the default's targets
    "zh-en-guided": "zh-en-small-guided",  # the d_model 128 default's variants, named after it
    "zh-en-postnorm": "zh-en-small-postnorm",
    "zh-en-batchnorm": "zh-en-small-batchnorm",
}


def default_model() -> Path:
    return models_dir() / DEFAULT_MODEL


def bundled_replacement(path: str | Path) -> Path | None:
    """The bundled folder that replaced ``path`` when ``path`` is a bundled folder's old name that
    no longer exists (a stored setting or session file written before a rename), else ``None``."""
    path = Path(path)
    new = RENAMED_BUNDLES.get(path.name)
    if new is None or path.exists() or path.parent.name != "models":
        return None
    replacement = models_dir() / new
    return replacement if replacement.is_dir() else None


def resource(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
