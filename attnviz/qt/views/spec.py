"""What a view declares about itself, :class:`ViewSpec`: its ``--view`` name, class, dock, the
selectors it takes (kind, layer, head, query) and the kinds it shows, how it gets its data from
the session and how a choice reaches it. Each view module declares its own ``SPEC``; the registry
(:mod:`attnviz.qt.views.registry`) keeps the table. The loaders shared by several views (the
attention of every kind, the masks) are here too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnviz.core.model.sites import KINDS
from attnviz.qt.selection import Request, Selection, ViewChoice, query_axis
from attnviz.qt.views.base import FigureViewBase, PredictedRowsMixin

if TYPE_CHECKING:
    from attnviz.qt.session import Session

SELECTORS: tuple[str, ...] = ("kind", "layer", "head", "query")
HEAD_MODES: tuple[str, ...] = ("mean", "rollout", "all")  # what --head takes besides a number


Loader = Callable[[FigureViewBase, "Session", ViewChoice], bool]
Selector = Callable[[FigureViewBase, ViewChoice], None]
Watcher = Callable[[FigureViewBase, Request], None]


@dataclass(frozen=True)
class ViewSpec:
    """One view: what it is called, where it sits, what it takes, and how it is fed.

    ``load(view, session, choice)`` gives the view the session's data (``False``: there is none
    yet); ``select(view, choice)`` applies the choice's selectors; ``watch(view, request)``
    connects the view's own selectors to ``request`` (so a choice made in the view moves the
    linked selection, see :class:`ViewSet`); ``opening`` is applied once, when an unlinked view
    first gets data in the window.
    """

    name: str  # the --view name of ``attnviz export``
    cls: type[FigureViewBase]
    title: str  # the dock's title ("" for the central view)
    dock_name: str  # the dock's objectName ("" for the central view)
    area: str  # "central", "right" or "bottom"
    selectors: tuple[str, ...]  # of SELECTORS
    load: Loader
    select: Selector | None = None
    kinds: tuple[str, ...] = ()  # the attention kinds it shows, when it takes "kind"
    head_modes: tuple[str, ...] = ()  # of HEAD_MODES, when it takes "head"
    opening: ViewChoice | None = None
    empty: str = "nothing to draw yet"  # why there is nothing to export
    watch: Watcher | None = None
    stack_view: bool = False  # shows a stack (encoder/decoder): a cross selection shows the decoder's
    query_rows: str | None = None  # the rows its query takes ("target"), when not every kind's


    def takes(self, selector: str) -> bool:
        return selector in self.selectors

    def choice(self, sel: Selection) -> ViewChoice:
        """The part of ``sel`` this view takes: its selectors, a kind it shows, a head mode it has."""
        shown = sel.kind in self.kinds or (self.stack_view and sel.kind == "cross")
        kind = sel.kind if self.takes("kind") and shown else None
        layer = sel.layer if self.takes("layer") and sel.mode != "rollout" else None
        one_head = self.takes("head") and sel.mode == "head"
        mode = sel.mode if one_head or (self.takes("head") and sel.mode in self.head_modes) else None
        rows_match = self.query_rows is None or query_axis(sel.kind) == self.query_rows
        query = sel.query if self.takes("query") and rows_match else None
        return ViewChoice(kind, layer, sel.head if one_head else None, mode, query)

    @property
    def default_kind(self) -> str | None:
        """The kind it shows unless told: cross-attention where it can, else its first kind."""
        if not self.kinds:
            return None
        return "cross" if "cross" in self.kinds else self.kinds[-1]


ATTENTION_SELECTORS = ("kind", "layer", "head")
CROSS_FIRST = ViewChoice(kind="cross")  # the attention views open on cross-attention


def load_attention(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    """Every kind's attention of the current frame (and the predicted pieces, for views that label rows with them)."""
    data = {k: d for k in KINDS if (d := session.attention_data(k)) is not None}
    if data:
        if isinstance(view, PredictedRowsMixin):
            view.set_predictions(session.output_pieces())
        view.set_data(data)
    return bool(data)


def load_mask(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    """The decoder self-attention's masks and scores of the current frame."""
    md = session.mask_data()
    if md is not None:
        view.set_predictions(session.output_pieces())
        view.set_data(md)
    return md is not None
