"""Package discovery: every ``attnviz`` package, plus ``models/`` and ``resources/`` shipped as
``attnviz.models`` and ``attnviz.resources`` (see ``[tool.setuptools.package-dir]`` in pyproject.toml)."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["attnviz", "attnviz.*"]), "attnviz.models", "attnviz.resources"])
