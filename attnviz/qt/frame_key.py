"""What a view's data is of: the parts of the session's frame it can change with
(:data:`FRAME_PARTS`) and the key of one view's data (:class:`FrameKey`), which the
:class:`~attnviz.qt.views.registry.ViewSet` compares to feed a view only when its data changed.
Imports neither torch nor Qt: every view's spec names its parts."""

from __future__ import annotations

import operator
from dataclasses import dataclass

FRAME_PARTS: tuple[str, ...] = ("source", "step")  # what a view's data can change with besides the model and its ablation


@dataclass(frozen=True, eq=False)
class FrameKey:
    """What a view's data was computed from (:meth:`~attnviz.qt.session.Session.frame_key`):
    ``objects`` (the bundle, the decoding result, its last step) compared by identity, ``values``
    (the ablation, counts, a choice, options) by equality. Two keys that are :meth:`same` give
    the same data."""

    objects: tuple = ()
    values: tuple = ()

    def same(self, other: FrameKey | None) -> bool:
        return (other is not None and len(self.objects) == len(other.objects)
                and all(map(operator.is_, self.objects, other.objects)) and self.values == other.values)
