"""The one selection every linked view follows: which attention (kind), layer, head (or the mean
over heads, or the rollout) and query row; and the query row under the mouse in any view.

:class:`Selection` is the value (0-based inside; :meth:`Selection.describe` writes it 1-based, as
on screen); :class:`LinkedSelection` holds it and says when it changes. The window's
:class:`attnviz.qt.views.registry.ViewSet` owns one and keeps every linked view in step with it.

What one view is asked to show is a :class:`ViewChoice` (the part of the selection it takes); a
choice made in a view goes back to the selection as a :data:`Request`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from PySide6 import QtCore

from attnviz.core.model.sites import KINDS
from attnviz.qt.core_text import kind_name
from attnviz.qt.i18n import translate

SELECTION_MODES: tuple[str, ...] = ("head", "mean", "rollout")


def query_axis(kind: str | None) -> str:
    """What a kind's rows are: ``"source"`` pieces (encoder self-attention) or ``"target"`` pieces
    fed to the decoder (decoder self- and cross-attention); rows of the same axis can be linked."""
    return "source" if kind == "encoder" else "target"


@dataclass(frozen=True)
class Selection:
    """What the linked views show. ``query``: a row of ``kind``'s queries, ``None``: the current step's."""

    kind: str = "cross"
    layer: int = 0
    head: int = 0
    mode: str = "head"  # of SELECTION_MODES
    query: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        if self.mode not in SELECTION_MODES:
            raise ValueError(f"mode must be one of {SELECTION_MODES}, not {self.mode!r}")
        if self.layer < 0 or self.head < 0 or (self.query is not None and self.query < 0):
            raise ValueError("layer, head and query are 0-based and never negative")

    def describe(self) -> str:
        """``cross · layer 2 · head 3`` (1-based, as on screen)."""
        return describe(self.kind, self.layer, self.head, self.mode, self.query)


def describe(kind: str | None, layer: int | None, head: int | None, mode: str | None, query: int | None) -> str:
    """The parts of a selection that are given, 1-based: ``cross · layer 2 · head 3 · query 4``."""
    parts = [kind_name(kind)] if kind else []
    if mode == "rollout":
        parts.append(translate("selection", "rollout"))
    else:
        if layer is not None:
            parts.append(translate("selection", "layer {n}").format(n=layer + 1))
        if mode == "mean":
            parts.append(translate("selection", "mean of heads"))
        elif head is not None:
            parts.append(translate("selection", "head {n}").format(n=head + 1))
    if query is not None:
        parts.append(translate("selection", "query {n}").format(n=query + 1))
    return " · ".join(parts)


@dataclass(frozen=True)
class ViewChoice:
    """What a view is asked to show; ``None``: the view keeps its own choice. 0-based."""

    kind: str | None = None
    layer: int | None = None
    head: int | None = None
    mode: str | None = None  # "head" (one head), "mean" (over heads) or "rollout"
    query: int | None = None

    def describe(self) -> str:
        """``cross · layer 2 · head 3`` (1-based): what is chosen."""
        return describe(self.kind, self.layer, self.head, self.mode, self.query)

    def head_from(self, current: tuple[str, int, int]) -> tuple[str, int, int]:
        """The ``(kind, layer, head)`` this choice names, each part it leaves open (or a kind
        that is none of the attention kinds) kept from ``current``."""
        kind, layer, head = current
        return (self.kind if self.kind in KINDS else kind, layer if self.layer is None else self.layer,
                head if self.head is None else self.head)


def fit_head(head: tuple[str, int, int], per_kind) -> tuple[str, int, int]:
    """``head`` within the heads ``per_kind`` has (kind -> an array ``[layer, head, ...]``): a kind it
    has not becomes cross-attention (or its first kind), a layer or head past the last the last."""
    kind, layer, h = head
    if not per_kind:
        return head
    if kind not in per_kind:
        kind = "cross" if "cross" in per_kind else next(iter(per_kind))
    n_layers, n_heads = per_kind[kind].shape[:2]
    return kind, min(layer, n_layers - 1), min(h, n_heads - 1)


Request = Callable[..., None]  # request(kind=, layer=, head=, mode=, query=): the user chose that in a view


class LinkedSelection(QtCore.QObject):
    """Holds the :class:`Selection`; ``changed(Selection)`` after every change, and
    ``queryHovered(axis, row)`` when the mouse is over a query row of ``"source"`` or ``"target"``
    pieces in some view (``row`` −1: over none)."""

    changed = QtCore.Signal(object)
    queryHovered = QtCore.Signal(str, int)

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self._value = Selection()
        self._hover: tuple[str, int] = ("", -1)

    def value(self) -> Selection:
        return self._value

    def update(self, **changes) -> bool:
        """Change some fields (``None`` values are ignored, except ``query``); True if it changed."""
        query_given = "query" in changes
        fields = {k: v for k, v in changes.items() if v is not None}
        new = replace(self._value, **fields)
        if query_given and changes["query"] is None:
            new = replace(new, query=None)
        if new == self._value:
            return False
        self._value = new
        self.changed.emit(new)
        return True

    def hover(self, axis: str, row: int) -> None:
        """The mouse is over query ``row`` of ``axis`` pieces in some view (−1: over none)."""
        if (axis, row) != self._hover:
            self._hover = (axis, row)
            self.queryHovered.emit(axis, row)

    def hovered(self) -> tuple[str, int]:
        return self._hover
