"""What the :class:`~attnviz.qt.views.registry.ViewSet` knows of one view, in one place: a :class:`ViewSlot`."""

from __future__ import annotations

from dataclasses import dataclass

from attnviz.qt.frame_key import FrameKey
from attnviz.qt.selection import Selection, ViewChoice
from attnviz.qt.view_frame import ViewFrame
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.spec import ViewSpec


@dataclass(eq=False)
class ViewSlot:
    """One view of the window: its spec, the view and its frame, how often it was drawn, what
    the data it holds is of, and the choice it follows and shows."""

    spec: ViewSpec
    view: FigureViewBase
    frame: ViewFrame
    stale: bool = False  # its data is older than the session's
    refreshes: int = 0  # how often it was drawn anew
    skips: int = 0  # refreshes that found its data's key unchanged
    key: FrameKey | None = None  # what the data it holds (or computes) is of
    parts: FrameKey | None = None  # the same, of the session's frame parts alone
    drawn: object = None  # the data object it drew last
    own: Selection | None = None  # its own selection when unlinked (None: it follows the linked one)
    applied: ViewChoice | None = None  # the choice it shows now

    @property
    def linked(self) -> bool:
        """Whether it follows the linked selection."""
        return self.own is None

    def forget_data(self) -> None:
        """Nothing it holds counts any more (another model): its next refresh feeds it anew."""
        self.key = self.parts = None
        self.drawn = None
