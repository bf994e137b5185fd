"""What a view declares about itself, :class:`ViewSpec`: its ``--view`` name, class, dock, the
selectors it takes (kind, layer, head, query) and the kinds it shows, how it gets its data from
the session and how a choice reaches it, and what the tour may read of it (its ``measures``) and
outline in it (its ``regions``, asked with a :class:`TourAsk`). Each view module declares its own
``SPEC``; the registry (:mod:`attnviz.qt.views.registry`) keeps the table. The data functions
shared by several views (the attention of every kind, the masks) are here too."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attnviz.core.analysis.figure_data import AttentionFrame, MaskFrame
from attnviz.core.model.sites import KINDS, n_layers
from attnviz.qt.frame_key import FRAME_PARTS
from attnviz.qt.selection import Selection, ViewChoice, query_axis
from attnviz.qt.views.base import FigureViewBase
from attnviz.qt.views.naming import dock_object_name, module_stem
from attnviz.qt.widgets.regions import Region

if TYPE_CHECKING:
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.tour_data import StopState
    from attnviz.qt.session import Session

SELECTORS: tuple[str, ...] = ("kind", "layer", "head", "query")
NEEDS: tuple[str, ...] = ("encoder", "decoder", "cross", "masked")  # what a view may need of the model: layers of an attention kind, or a masked-token head
HEAD_MODES: tuple[str, ...] = ("mean", "rollout", "all")  # what --head takes besides a number


DataFn = Callable[..., object]  # (session, choice[, options]) -> the view's data, an Analysis to run for it, or None
Depends = tuple[str, ...] | Callable[[ViewChoice], tuple[str, ...]]  # of FRAME_PARTS, or the parts a choice's data changes with


@dataclass(frozen=True)
class TourAsk:
    """What a tour stop tells a view when it reads the view's measures or outlines one of its
    regions: the state the stop set (its query row, its focus words…) and the window's session."""

    state: StopState
    session: Session


MeasureFn = Callable[[Any, TourAsk], dict[str, Any]]  # (view, ask) -> the view's tour measures now, name → value
RegionFn = Callable[[Any, TourAsk], Region | None]  # (view, ask) -> where a region of the view is now (None: nothing to outline yet)


def encoder_side(choice: ViewChoice) -> tuple[str, ...]:
    """What a view that shows one kind or stack at a time changes with: an encoder choice shows
    what the source alone decides (the encoder runs once per sentence), any other each step's."""
    return ("source",) if choice.kind == "encoder" else FRAME_PARTS


@dataclass(frozen=True)
class ViewSpec:
    """One view: what it is called, where it sits, what it takes, and how it is fed.

    The view protocol (:class:`~attnviz.qt.views.base.FigureViewBase`): ``data(session, choice)``
    is the view's data for the session's current frame (``None``: there is none yet), or an
    :class:`~attnviz.qt.analyses.Analysis` whose result is, when it needs the model; the view
    draws it in ``view.set_data(data)``, takes the choice's selectors in ``view.apply(choice)`` and
    emits ``view.chose(changes)`` when the user picks a selector in it. A view whose data is
    computed from the choice (``from_choice``) gets new data instead of ``apply``. ``opening``
    is applied once, when an unlinked view first gets data in the window.

    ``depends_on`` says what the data changes with (:meth:`parts`): a view whose parts of the
    frame stay as they were (a decoder step, for a view of the source alone) keeps the data it
    has and is not drawn again; the key of a view's data is the session's
    :meth:`~attnviz.qt.session.Session.frame_key` of those parts, ``data`` itself, its choice
    (``from_choice``) and its options (``reads_options``).

    The tour reads a view only through its spec: ``measures(view, ask)`` gives the numbers a
    stop's text quotes (names of ``measure_names``; one it cannot read yet is left out) and
    ``regions[name](view, ask)`` where a region is (:mod:`attnviz.qt.widgets.regions`); both are
    asked only while the view ``has_data()``. The tour checks when it is loaded that every
    measure and region of :mod:`attnviz.core.tour_data` is declared by its view's spec.
    """

    name: str  # the --view name of ``attnviz export``
    cls: type[FigureViewBase]
    title: str  # the dock's title ("" for the central view)
    area: str  # "central", "right" or "bottom"
    selectors: tuple[str, ...]  # of SELECTORS
    data: DataFn
    from_choice: bool = False  # its data is computed from the choice: a new choice computes it again
    reads_options: bool = False  # data(session, choice, view.options()): computed again on the view's optionsChanged
    kinds: tuple[str, ...] = ()  # the attention kinds it shows, when it takes "kind"
    head_modes: tuple[str, ...] = ()  # of HEAD_MODES, when it takes "head"
    opening: ViewChoice | None = None
    empty: str = "nothing to draw yet"  # why there is nothing to export
    stack_view: bool = False  # shows a stack (encoder/decoder): a cross selection shows the decoder's
    query_rows: str | None = None  # the rows its query takes ("target"), when not every kind's
    depends_on: Depends = FRAME_PARTS  # what its data changes with: on a frame where none changed, the view is not fed again
    needs: tuple[str, ...] = ()  # of NEEDS: what the model must have for the view to apply ("decoder": it decodes)
    measures: MeasureFn | None = None  # the numbers a tour stop at the view may quote (those of measure_names)
    measure_names: tuple[str, ...] = ()  # of attnviz.core.tour_data.MEASURES: every name ``measures`` may give
    regions: Mapping[str, RegionFn] = field(default_factory=dict, hash=False)  # of tour_data.REGIONS: what a stop may outline

    @property
    def stem(self) -> str:
        """The view's module name (``head_detail``): every other name of the view comes from it
        (:mod:`attnviz.qt.views.naming`)."""
        return module_stem(self.cls)

    @property
    def dock_name(self) -> str:
        """The dock's objectName (``headDetailDock``; ``""`` for the central view, which has none)."""
        return "" if self.area == "central" else dock_object_name(self.stem)

    def parts(self, choice: ViewChoice) -> tuple[str, ...]:
        """The frame parts (of :data:`~attnviz.qt.frame_key.FRAME_PARTS`) its data for ``choice`` changes with."""
        return self.depends_on(choice) if callable(self.depends_on) else self.depends_on

    def applies(self, config: TransformerConfig) -> bool:
        """The view has something to show for a model of ``config``: the model has everything the
        view ``needs`` and, for a view of attention kinds, layers of at least one of its kinds (a
        view that does not apply is hidden in the window)."""
        has = {need: (config.kind == "encoder-only" if need == "masked" else n_layers(config, need) > 0) for need in NEEDS}
        return all(has[need] for need in self.needs) and (not self.kinds or any(has[kind] for kind in self.kinds))

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


def attention_frame(session: Session, choice: ViewChoice) -> AttentionFrame | None:
    """Every kind's attention of the current frame and the predicted pieces: the attention
    views' data (``None``: the model has no attention to show yet)."""
    sets = {k: d for k in KINDS if (d := session.frames.attention_data(k)) is not None}
    return AttentionFrame(sets, session.output_pieces(), session.ablation.heads, session.ablation.kind) if sets else None


def mask_frame(session: Session, choice: ViewChoice) -> MaskFrame | None:
    """The decoder self-attention's masks and scores of the current frame and the predicted
    pieces: the mask view's data (``None``: no decoder step yet)."""
    md = session.frames.mask_data()
    return MaskFrame(md, session.output_pieces()) if md is not None else None
