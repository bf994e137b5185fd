"""Every view of the app in one table, :data:`VIEWS`: each view module declares its own entry
(``SPEC``, a :class:`~attnviz.qt.views.spec.ViewSpec`: its ``--view`` name, class, dock, selectors,
kinds and how it gets its data); here they are collected in the docks' order, named when
exported, and kept in step with the session by the :class:`ViewSet`.

The main window builds its views and docks from :data:`VIEWS` (through :class:`ViewSet`);
``attnviz export`` draws one of them headless through the same entry, so a view is fed and
selected the same way on screen and in a file.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from PySide6 import QtCore, QtWidgets

from attnviz.errors import CommandError
from attnviz.qt.analyses import Analysis
from attnviz.qt.export.files import session_metadata
from attnviz.qt.frame_key import FrameKey
from attnviz.qt.i18n import translate
from attnviz.qt.selection import LinkedSelection, Selection, ViewChoice, query_axis
from attnviz.qt.session import Session
from attnviz.qt.turns import Turns
from attnviz.qt.view_frame import ViewFrame, empty_state
from attnviz.qt.views import (
    ablation,
    attention_grid,
    attention_vs_attribution,
    beam_tree,
    checkpoints,
    circuit,
    compare,
    contributions,
    ffn,
    head_detail,
    head_importance,
    head_roles,
    lines,
    logit_attribution,
    logit_lens,
    masked_prediction,
    masks,
    model_info,
    model_map,
    neighbours,
    norm_batch,
    norm_stats,
    output,
    patching_map,
    positional,
    qk_space,
    residual,
    scaling,
    teacher_vs_free,
    walkthrough,
)
from attnviz.qt.views.base import ExportAllHeadsMixin, FigureViewBase
from attnviz.qt.views.head_detail import QtHeadDetailView
from attnviz.qt.views.slot import ViewSlot
from attnviz.qt.views.spec import ViewSpec

VIEWS: tuple[ViewSpec, ...] = tuple(m.SPEC for m in (
    attention_grid, head_detail, masked_prediction, lines, masks, model_map, output, positional, norm_stats, walkthrough, compare, scaling, teacher_vs_free, norm_batch, ffn, residual, logit_lens, logit_attribution, head_importance, head_roles, qk_space, ablation, attention_vs_attribution, contributions, patching_map, circuit,
    neighbours, checkpoints, beam_tree, model_info,
))  # the docks' order
VIEW_NAMES: tuple[str, ...] = tuple(spec.name for spec in VIEWS)


def view_spec(name: str) -> ViewSpec:
    for spec in VIEWS:
        if spec.name == name:
            return spec
    raise CommandError(f"unknown view {name!r} (one of {', '.join(VIEW_NAMES)})", 2)


def head_figure() -> type[QtHeadDetailView]:
    """The view that draws one head: what "Export all heads" draws each figure with."""
    return QtHeadDetailView


def build_view(spec: ViewSpec, *, theme: str | None = None) -> FigureViewBase:
    """A new view of ``spec``; views that export all heads draw them with :func:`head_figure`."""
    view = spec.cls(theme=theme)
    if isinstance(view, ExportAllHeadsMixin):
        view.head_figure = head_figure()
    return view


def show_in_view(spec: ViewSpec, view: FigureViewBase, session: Session, choice: ViewChoice) -> None:
    """Give ``view`` the session's data and apply ``choice``: what ``attnviz export`` draws.
    Raises :class:`CommandError` when the session has nothing for this view yet."""
    if not feed_now(spec, view, session, choice):
        raise CommandError(view.why_empty() or spec.empty)


def feed_now(spec: ViewSpec, view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    """Give ``view`` the session's data for ``choice`` and apply it, its analysis run here and
    now (no event loop to wait in: a command, a test); False when there is nothing to draw."""
    if session.current is None:
        return False
    data = view_data(spec, view, session, choice)
    data = data.run() if isinstance(data, Analysis) else data
    if data is None:
        return False
    view.set_data(data)
    if not spec.from_choice:
        view.apply(choice)
    return view.has_data()


def view_data(spec: ViewSpec, view: FigureViewBase, session: Session, choice: ViewChoice) -> object:
    """``spec``'s data for the session's frame and ``choice`` (and ``view``'s options, for a spec that reads them)."""
    return spec.data(session, choice, view.options()) if spec.reads_options else spec.data(session, choice)


def file_stem(spec: ViewSpec, choice: ViewChoice) -> str:
    """``head_cross_layer2_head3``, ``mask_layer1_head2``, ``norm_decoder_layer1``, ``pe``, ``grid_cross``:
    the view's name and the selectors it takes (1-based, as on screen); a kind only where it has
    several; no layer or head for a view that draws every layer and head (the grid)."""
    parts = [spec.name]
    if spec.takes("kind") and len(spec.kinds) > 1:
        parts.append(str(choice.kind))
    if spec.head_modes == ("all",):  # the figure holds every layer and head: its name says no one of them
        return "_".join(parts)
    if spec.takes("layer"):
        parts.append(f"layer{(choice.layer or 0) + 1}")
    if spec.takes("head"):
        parts.append(choice.mode if choice.mode in ("mean", "rollout") else f"head{(choice.head or 0) + 1}")
    if spec.takes("query") and choice.query is not None:
        parts.append(f"query{choice.query + 1}")
    return "_".join(parts)


def choice_metadata(session: Session, choice: ViewChoice) -> dict[str, object]:
    """What a data file of a view showing ``choice`` is of (:func:`session_metadata`): the window's
    and ``attnviz export``'s files say the same."""
    head = choice.head if choice.mode == "head" else choice.mode
    return session_metadata(session, choice.kind, None if choice.mode == "all" else choice.layer, head)


DRAWN_AT_ONCE = 4  # views on screen a step always redraws before the event loop runs again (the default layout shows 2-3)


def on_screen(widget: QtWidgets.QWidget) -> bool:
    """``widget`` shows some pixels now: shown, and not a background tab or a collapsed dock
    (a tabbed dock's view stays ``isVisible()`` while its visible region is empty)."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


def _new_slot(spec: ViewSpec) -> ViewSlot:
    """A new view of ``spec`` in its frame, nothing drawn yet."""
    view = build_view(spec)
    return ViewSlot(spec, view, ViewFrame(view))


class ViewSet(QtCore.QObject):
    """The window's views, built from :data:`VIEWS`, each in a :class:`ViewFrame`; keeps each view in step with the session and with one :class:`LinkedSelection`.

    What it knows of each view is in that view's :class:`~attnviz.qt.views.slot.ViewSlot`
    (``slots``, by view name); ``views``, ``frames``, ``specs``, ``refreshes``, ``skips`` and
    ``stale`` are read-only snapshots of them.

    Only what is on screen is drawn: on every change of the session's decoding (it subscribes to
    the session itself) the frames show their empty state or their view, and each view on screen
    is refreshed; a view that is not (a hidden dock, a background tab) is marked stale and catches
    up, once, when it is next painted.

    A view's data that needs the model comes as an :class:`~attnviz.qt.analyses.Analysis`: it
    runs in the session's workers (``session.analyses``), a newer one for the same view
    supersedes it, and the view draws the result when it arrives; the UI thread only draws.

    Linking: every view whose spec takes a selector follows ``selection`` unless the user
    unlinks it (its "Linked" toggle). A choice made in a linked view (its ``chose`` signal)
    moves the selection; every other linked view on screen then gets it through its ``apply``
    (or new data, when its data is drawn from the choice); one off screen gets it when it is
    shown. A query row hovered in one view is outlined in the others.
    """

    failed = QtCore.Signal(str)  # a view could not draw: a one-line message

    def __init__(self, session: Session, only: tuple[str, ...] | None = None):
        """``only``: the names of the views to build (default: every view of :data:`VIEWS`)."""
        super().__init__(session)
        self.session = session
        self.slots: dict[str, ViewSlot] = {spec.name: _new_slot(spec) for spec in VIEWS if only is None or spec.name in only}
        self.refresh_failures: list[str] = []  # the views that could not draw, in turn (each said so: failed)
        self.selection = LinkedSelection()
        self._hover_source: str | None = None
        self._turns = Turns(self, self._refresh_on_screen)  # the stale views on screen not drawn yet
        for slot in self.slots.values():
            self._connect(slot.spec)
        for name, slot in self.slots.items():
            slot.view.installEventFilter(self)
            slot.view.provenance = partial(self.provenance, name)
        self.selection.changed.connect(self._on_selection_changed)
        self.selection.queryHovered.connect(self._on_query_hover_changed)
        if "output" in self.slots:
            self.slots["output"].view.positionClicked.connect(self._on_position_clicked)
        session.decodingChanged.connect(self._on_decoding_changed)
        session.modelChanged.connect(self._on_model_changed)
        session.analyses.failed.connect(self._on_analysis_failed)

    def _connect(self, spec: ViewSpec) -> None:
        """What view ``spec`` picks moves the selection; its options compute its data again; a view
        that takes selectors is linked (its toggle, its caption, the hovered query row)."""
        view = self.slots[spec.name].view
        view.chose.connect(lambda changes, name=spec.name: self.request(name, **changes))
        if spec.reads_options:
            view.optionsChanged.connect(partial(self._on_options_changed, spec.name))
        if spec.selectors:
            view.linkToggled.connect(partial(self.set_linked, spec.name))
            view.queryHovered.connect(partial(self._on_query_hovered, spec.name))
            self._update_caption(spec.name)

    # -- the slots' read-only faces ----------------------------------------------------------
    @property
    def views(self) -> dict[str, FigureViewBase]:
        """Each view, by name (a snapshot of the slots)."""
        return {name: slot.view for name, slot in self.slots.items()}

    @property
    def frames(self) -> dict[str, ViewFrame]:
        """Each view's frame, by view name (a snapshot of the slots)."""
        return {name: slot.frame for name, slot in self.slots.items()}

    @property
    def specs(self) -> dict[str, ViewSpec]:
        """Each view's spec, by view name (a snapshot of the slots)."""
        return {name: slot.spec for name, slot in self.slots.items()}

    @property
    def refreshes(self) -> dict[str, int]:
        """How often each view was drawn anew, by view name (a snapshot: two can be subtracted)."""
        return {name: slot.refreshes for name, slot in self.slots.items()}

    @property
    def skips(self) -> dict[str, int]:
        """How many refreshes of each view found its data's key unchanged, by view name (a snapshot)."""
        return {name: slot.skips for name, slot in self.slots.items()}

    @property
    def stale(self) -> set[str]:
        """The views whose data is older than the session's (a snapshot)."""
        return {name for name, slot in self.slots.items() if slot.stale}

    def __getitem__(self, name: str) -> FigureViewBase:
        return self.slots[name].view

    def all(self) -> list[FigureViewBase]:
        return [slot.view for slot in self.slots.values()]

    def name_of(self, widget: QtWidgets.QWidget) -> str | None:
        """The name of the view ``widget`` is, or whose frame it is (``None``: neither)."""
        return next((n for n, s in self.slots.items() if widget is s.view or widget is s.frame), None)

    def docks(self, area: str) -> list[tuple[str, QtWidgets.QWidget, str]]:
        """(title, widget, objectName) of each dock in ``area`` ("right" or "bottom"), in order:
        a view's widget is its frame; the title in the interface's language (each view marks its
        spec's title in the context "views")."""
        return [(translate("views", s.spec.title), s.frame, s.spec.dock_name) for s in self.slots.values() if s.spec.area == area]

    # -- drawing what is on screen --------------------------------------------------------------
    def _on_decoding_changed(self) -> None:
        empty = empty_state(self.session)
        for slot in self.slots.values():
            slot.frame.set_empty(empty)
            slot.stale = True
        self._refresh_on_screen()

    def _refresh_on_screen(self) -> None:
        """Refresh the stale views on screen, in the docks' order: the first ``DRAWN_AT_ONCE`` now,
        more while this turn of the event loop is within its budget (:class:`~attnviz.qt.turns.Turns`),
        the others on the next turn, after these were painted and the keyboard was read. A step
        taken meanwhile makes them stale again: they draw the newer frame, and the one in between is never drawn."""
        self._turns.begin()
        waiting = [name for name, slot in self.slots.items() if slot.stale and on_screen(slot.view)]
        for i, name in enumerate(waiting):
            if i >= DRAWN_AT_ONCE and self._turns.spent():
                self._turns.later()
                return
            self._guarded_refresh(name)

    def drawing(self) -> bool:
        """Whether views on screen wait for a next turn of the event loop to draw the current frame."""
        return self._turns.pending()

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 - Qt API
        """A stale view about to be painted (its tab raised, its dock shown) catches up first."""
        if event.type() in (QtCore.QEvent.Type.Paint, QtCore.QEvent.Type.Show):
            name = self.name_of(obj)
            if name is not None and self.slots[name].stale:
                QtCore.QTimer.singleShot(0, self, lambda n=name: self.catch_up(n))
        return False

    def bring_up_to_date(self, widget: QtWidgets.QWidget) -> None:
        """Refresh the view ``widget`` is (or frames) now if it is stale, on screen or not: before
        it is exported, or when its dock is shown or its tab raised."""
        name = self.name_of(widget)
        if name is not None and self.slots[name].stale:
            self._guarded_refresh(name)

    def catch_up(self, name: str) -> None:
        """Refresh view ``name`` if it is stale and on screen."""
        slot = self.slots[name]
        if slot.stale and on_screen(slot.view):
            self._guarded_refresh(name)

    def _guarded_refresh(self, name: str) -> None:
        slot = self.slots[name]
        try:
            self.refresh(slot.view)
        except Exception as exc:  # noqa: BLE001 - a view that cannot draw says so; the app goes on
            slot.stale = False
            self.refresh_failures.append(name)
            self.failed.emit(translate("registry", "Could not update {view}: {error}").format(
                view=slot.view.objectName() or name, error=f"{type(exc).__name__}: {exc}"))
            import traceback

            traceback.print_exc()

    def refresh(self, view: QtWidgets.QWidget) -> None:
        """Give ``view`` the session's current data (nothing before a sentence is decoded) and
        the selection it follows."""
        name = self.name_of(view)
        if name is None:
            return
        slot = self.slots[name]
        slot.stale = False
        if self.session.current is None:
            return
        choice = self.followed(name)
        if self.data_key(name, choice).same(slot.key):  # what it holds is this frame's already
            slot.skips += 1
            if slot.linked:
                self._apply(name)  # the selection may have moved while it was off screen
            return
        slot.refreshes += 1
        self._feed(name, choice)

    def data_key(self, name: str, choice: ViewChoice) -> FrameKey:
        """What view ``name``'s data for ``choice`` is of now: the session's frame parts its spec
        depends on, the function that computes it, the choice when its data is computed from it
        and its options when it reads them."""
        slot = self.slots[name]
        spec = slot.spec
        key = self.session.frames.key(spec.parts(choice))
        values = ((choice,) if spec.from_choice else ()) + ((slot.view.options(),) if spec.reads_options else ())
        return FrameKey(key.objects + (spec.data,), key.values + values)

    def _outdated(self, name: str) -> bool:
        """View ``name`` holds data of other parts of the frame than its choice now needs (a view
        of the encoder's side, kept over decoder steps, turned to the decoder)."""
        slot = self.slots[name]
        parts = slot.spec.parts(self.followed(name))
        return slot.parts is not None and self.session.current is not None and not self.session.frames.key(parts).same(slot.parts)

    def _on_model_changed(self, _bundle: object) -> None:
        """Another model: no view's data is of it (and none keeps the old model alive); a selected
        kind the model has not (cross-attention in GPT-2) becomes one it has."""
        for slot in self.slots.values():
            slot.forget_data()
        if _bundle is not None and self.session.n_layers(self.selection.value().kind) == 0:
            kind = next((k for k in ("cross", "decoder", "encoder") if self.session.n_layers(k)), None)
            if kind is not None:
                self.selection.update(kind=kind)

    def _feed(self, name: str, choice: ViewChoice) -> None:
        """Give view ``name`` its data for ``choice``: at once, or when its analysis returns."""
        slot = self.slots[name]
        slot.key = self.data_key(name, choice)
        slot.parts = self.session.frames.key(slot.spec.parts(choice))
        if slot.spec.from_choice:  # what it will show: a later choice equal to this one needs no new feed, another does
            slot.applied = choice
        data = view_data(slot.spec, slot.view, self.session, choice)
        if isinstance(data, Analysis):
            slot.frame.set_computing(True)
            self.session.analyses.submit(name, data, lambda result: self._deliver(name, choice, result))
        elif data is not None:
            self._deliver(name, choice, data)

    def _deliver(self, name: str, choice: ViewChoice, data: object) -> None:
        """View ``name`` draws its new data of ``choice`` and takes the choice it follows now
        (``None``: the analysis found nothing to draw, a model without layers of a kind)."""
        slot = self.slots[name]
        slot.frame.set_computing(False)
        if data is None:
            return
        spec, view = slot.spec, slot.view
        if data is not slot.drawn:  # an analysis's kept result, given again, is drawn already
            view.set_data(data)
            slot.drawn = data
        if spec.from_choice:
            slot.applied = choice
        elif slot.linked:
            self._apply(name)
        elif slot.applied is None and spec.opening is not None:
            view.apply(spec.opening)
            slot.applied = spec.opening
        view.settle()
        self._update_caption(name)

    def _on_analysis_failed(self, name: str, message: str) -> None:
        """A view's analysis raised: the view keeps what it showed, and one line says why."""
        if name in self.slots:
            slot = self.slots[name]
            slot.key = None  # the next refresh tries again
            slot.frame.set_computing(False)
            self.failed.emit(translate("registry", "Could not compute the {view} view: {error}").format(view=slot.spec.name, error=message))

    def _on_options_changed(self, name: str) -> None:
        """View ``name``'s own options changed what its data is: computed again (now, or when it is shown)."""
        slot = self.slots[name]
        slot.key = None  # asked for: computed again even where the options read the same
        slot.stale = True
        self.catch_up(name)

    # -- linking -----------------------------------------------------------------------------
    def is_linked(self, name: str) -> bool:
        return self.slots[name].linked

    def followed(self, name: str) -> ViewChoice:
        """The choice view ``name`` shows: the linked selection's, or its own when unlinked."""
        slot = self.slots[name]
        return self._choice(slot.spec, self.selection.value() if slot.own is None else slot.own)

    def _choice(self, spec: ViewSpec, sel: Selection) -> ViewChoice:
        """The part of ``sel`` that ``spec``'s view takes and the session's model has: a kind
        the model has no layers of is left out (the view keeps the kind it shows; it has no data
        of that one), and a layer past the kind's last is its last."""
        choice = spec.choice(sel)
        if choice.kind is None:
            return choice
        n = self.session.n_layers(choice.kind)
        if n == 0:
            return replace(choice, kind=None)
        if choice.layer is not None and choice.layer >= n:
            return replace(choice, layer=n - 1)
        return choice

    def set_linked(self, name: str, linked: bool) -> None:
        """Link view ``name`` to the selection (it takes the selection at once) or unlink it (it
        keeps what it shows)."""
        slot = self.slots[name]
        if linked == slot.linked:
            return
        if linked:
            slot.own = None
            if on_screen(slot.view):
                self._apply(name)
        else:
            slot.own = self.selection.value()
            slot.applied = None  # what it shows is its own from now on
        self._update_caption(name)

    def provenance(self, name: str) -> dict[str, object]:
        """What view ``name``'s data file is of: the model, the sentences, the step and the choice it shows."""
        return choice_metadata(self.session, self.followed(name)) if self.session.bundle is not None else {}

    def own_selections(self) -> dict[str, Selection]:
        """The unlinked views' own selections, by view name."""
        return {name: slot.own for name, slot in self.slots.items() if slot.own is not None}

    def set_own_selection(self, name: str, sel: Selection) -> None:
        """Unlink view ``name`` and give it ``sel`` as its own choice (drawn at once when on screen)."""
        self.set_linked(name, False)
        slot = self.slots[name]
        slot.own = sel
        slot.applied = None
        slot.key = None
        slot.stale = True
        self.catch_up(name)
        self._update_caption(name)

    def request(self, name: str, **changes) -> None:
        """View ``name`` chose ``changes`` (fields of :class:`Selection`): the linked selection
        moves, or, for an unlinked view, its own choice."""
        slot = self.slots[name]
        spec, given = slot.spec, {k: v for k, v in changes.items() if v is not None}
        if slot.linked:
            if not spec.from_choice:  # the view shows it already; one drawn from the choice is drawn again
                slot.applied = self._choice(spec, replace(self.selection.value(), **given))
            self.selection.update(**changes)
        else:
            slot.own = replace(slot.own, **given)
            if spec.from_choice:  # the view is drawn from the choice: draw it again
                self.refresh(slot.view)
        if not spec.from_choice and self._outdated(name):  # its data of the old choice does not hold the new one's
            slot.stale = True
            self.catch_up(name)
        self._update_caption(name)

    def _apply(self, name: str) -> None:
        """Bring view ``name`` to the choice it follows (nothing when it shows it already)."""
        slot = self.slots[name]
        spec, view = slot.spec, slot.view
        choice = self.followed(name)
        if slot.applied == choice:
            return
        if not spec.from_choice and self._outdated(name):  # its data is of the old choice's parts: fed anew (on screen), then applied
            slot.stale = True
            self.catch_up(name)
            return
        if not spec.from_choice and view.has_data():
            view.apply(choice)
            view.settle()
        elif spec.from_choice and self.session.current is not None:
            self._feed(name, choice)
        else:
            return
        slot.applied = choice
        self._update_caption(name)

    def _on_selection_changed(self, _sel: Selection) -> None:
        for name, slot in self.slots.items():
            if not slot.spec.selectors:
                continue
            if slot.linked and on_screen(slot.view):
                self._apply(name)
            else:
                self._update_caption(name)
                if slot.linked and slot.applied != self.followed(name):
                    slot.stale = True

    def _update_caption(self, name: str) -> None:
        view, linked = self.slots[name].view, self.slots[name].linked
        choice = self.followed(name).describe() or translate("registry", "the current step")  # no row chosen: the view shows the step's
        if linked:
            view.set_link_state(True, translate("registry", "follows: {choice}").format(choice=choice))
        else:
            view.set_link_state(False, translate("registry", "own choice: {choice}").format(choice=choice))
        view.link_caption.setProperty("key", "follows" if linked else "own-choice")  # what the caption says, in any language

    def _on_query_hovered(self, name: str, kind: str, row: int) -> None:
        self._hover_source = name
        self.selection.hover(query_axis(kind) if row >= 0 else "", row)

    def _on_query_hover_changed(self, axis: str, row: int) -> None:
        for name, slot in self.slots.items():
            if name != self._hover_source and on_screen(slot.view):
                slot.view.show_linked_query(axis, row)

    def _on_position_clicked(self, position: int) -> None:
        s = self.session
        if s.forced is not None and 0 <= position < len(s.forced.steps):
            s.set_cursor(position)
