"""The one naming scheme of the views, derived from a view's module name (its stem, e.g.
``head_detail``): class ``QtHeadDetailView``, the view's objectName ``headDetailView``, its dock's
``headDetailDock``, its scroll area's ``headDetailScroll``. Nothing else spells these names; the
``--view`` names of ``attnviz export`` (:attr:`ViewSpec.name`) are the user's and stay short."""

from __future__ import annotations


def module_stem(cls: type) -> str:
    """``head_detail`` for a class defined in ``attnviz.qt.views.head_detail``."""
    return cls.__module__.rsplit(".", 1)[-1]


def camel(stem: str) -> str:
    """``headDetail`` for ``head_detail``."""
    first, *rest = stem.split("_")
    return first + "".join(part.capitalize() for part in rest)


def class_name(stem: str) -> str:
    """``QtHeadDetailView``."""
    return "Qt" + "".join(part.capitalize() for part in stem.split("_")) + "View"


def view_object_name(stem: str) -> str:
    """``headDetailView``."""
    return camel(stem) + "View"


def dock_object_name(stem: str) -> str:
    """``headDetailDock``."""
    return camel(stem) + "Dock"


def scroll_object_name(stem: str) -> str:
    """``headDetailScroll``."""
    return camel(stem) + "Scroll"
