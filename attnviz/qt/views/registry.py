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


class ViewSet(QtCore.QObject):
    """The window's views, built from :data:`VIEWS`, each in a :class:`ViewFrame`; keeps each view in step with the session and with one :class:`LinkedSelection`.

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
        self.specs = {spec.name: spec for spec in VIEWS if only is None or spec.name in only}
        self.views: dict[str, FigureViewBase] = {name: build_view(spec) for name, spec in self.specs.items()}
        self.frames: dict[str, ViewFrame] = {name: ViewFrame(view) for name, view in self.views.items()}
        self.stale: set[str] = set()  # views whose data is older than the session's
        self.refreshes: dict[str, int] = dict.fromkeys(self.views, 0)  # how often each view was drawn anew
        self.refresh_failures: list[str] = []  # the views that could not draw, in turn (each said so: failed)
        self.skips: dict[str, int] = dict.fromkeys(self.views, 0)  # refreshes that found its data's key unchanged
        self._keys: dict[str, FrameKey] = {}  # what the data each view holds (or computes) is of
        self._parts: dict[str, FrameKey] = {}  # the same, of the session's frame parts alone
        self._drawn: dict[str, object] = {}  # the data object each view drew last
        self.selection = LinkedSelection()
        self._own: dict[str, Selection] = {}  # an unlinked view's own selection
        self._applied: dict[str, ViewChoice] = {}  # the choice each view shows now
        self._hover_source: str | None = None
        self._turns = Turns(self, self._refresh_on_screen)  # the stale views on screen not drawn yet
        for spec in self.specs.values():
            self._connect(spec)
        for name, view in self.views.items():
            view.installEventFilter(self)
            view.provenance = partial(self.provenance, name)
        self.selection.changed.connect(self._on_selection_changed)
        self.selection.queryHovered.connect(self._on_query_hover_changed)
        if "output" in self.views:
            self.views["output"].positionClicked.connect(self._on_position_clicked)
        session.decodingChanged.connect(self._on_decoding_changed)
        session.modelChanged.connect(self._on_model_changed)
        session.analyses.failed.connect(self._on_analysis_failed)

    def _connect(self, spec: ViewSpec) -> None:
        """What view ``spec`` picks moves the selection; its options compute its data again; a view
        that takes selectors is linked (its toggle, its caption, the hovered query row)."""
        view = self.views[spec.name]
        view.chose.connect(lambda changes, name=spec.name: self.request(name, **changes))
        if spec.reads_options:
            view.optionsChanged.connect(partial(self._on_options_changed, spec.name))
        if spec.selectors:
            view.linkToggled.connect(partial(self.set_linked, spec.name))
            view.queryHovered.connect(partial(self._on_query_hovered, spec.name))
            self._update_caption(spec.name)

    def __getitem__(self, name: str) -> FigureViewBase:
        return self.views[name]

    def all(self) -> list[FigureViewBase]:
        return list(self.views.values())

    def name_of(self, widget: QtWidgets.QWidget) -> str | None:
        """The name of the view ``widget`` is, or whose frame it is (``None``: neither)."""
        return next((n for n, v in self.views.items() if widget is v or widget is self.frames[n]), None)

    def docks(self, area: str) -> list[tuple[str, QtWidgets.QWidget, str]]:
        """(title, widget, objectName) of each dock in ``area`` ("right" or "bottom"), in order:
        a view's widget is its frame; the title in the interface's language (each view marks its
        spec's title in the context "views")."""
        return [(translate("views", s.title), self.frames[s.name], s.dock_name) for s in self.specs.values() if s.area == area]

    # -- drawing what is on screen --------------------------------------------------------------
    def _on_decoding_changed(self) -> None:
        empty = empty_state(self.session)
        for frame in self.frames.values():
            frame.set_empty(empty)
        self.stale = set(self.views)
        self._refresh_on_screen()

    def _refresh_on_screen(self) -> None:
        """Refresh the stale views on screen, in the docks' order: the first ``DRAWN_AT_ONCE`` now,
        more while this turn of the event loop is within its budget (:class:`~attnviz.qt.turns.Turns`),
        the others on the next turn, after these were painted and the keyboard was read. A step
        taken meanwhile makes them stale again: they draw the newer frame, and the one in between is never drawn."""
        self._turns.begin()
        waiting = [name for name, view in self.views.items() if name in self.stale and on_screen(view)]
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
            if name in self.stale:
                QtCore.QTimer.singleShot(0, self, lambda n=name: self.catch_up(n))
        return False

    def bring_up_to_date(self, widget: QtWidgets.QWidget) -> None:
        """Refresh the view ``widget`` is (or frames) now if it is stale, on screen or not: before
        it is exported, or when its dock is shown or its tab raised."""
        name = self.name_of(widget)
        if name in self.stale:
            self._guarded_refresh(name)

    def catch_up(self, name: str) -> None:
        """Refresh view ``name`` if it is stale and on screen."""
        if name in self.stale and on_screen(self.views[name]):
            self._guarded_refresh(name)

    def _guarded_refresh(self, name: str) -> None:
        try:
            self.refresh(self.views[name])
        except Exception as exc:  # noqa: BLE001 - a view that cannot draw says so; the app goes on
            self.stale.discard(name)
            self.refresh_failures.append(name)
            self.failed.emit(translate("registry", "Could not update {view}: {error}").format(
                view=self.views[name].objectName() or name, error=f"{type(exc).__name__}: {exc}"))
            import traceback

            traceback.print_exc()

    def refresh(self, view: QtWidgets.QWidget) -> None:
        """Give ``view`` the session's current data (nothing before a sentence is decoded) and
        the selection it follows."""
        name = self.name_of(view)
        if name is None:
            return
        self.stale.discard(name)
        if self.session.current is None:
            return
        choice = self.followed(name)
        if self.data_key(name, choice).same(self._keys.get(name)):  # what it holds is this frame's already
            self.skips[name] += 1
            if self.is_linked(name):
                self._apply(name)  # the selection may have moved while it was off screen
            return
        self.refreshes[name] += 1
        self._feed(name, choice)

    def data_key(self, name: str, choice: ViewChoice) -> FrameKey:
        """What view ``name``'s data for ``choice`` is of now: the session's frame parts its spec
        depends on, the function that computes it, the choice when its data is computed from it
        and its options when it reads them."""
        spec = self.specs[name]
        key = self.session.frames.key(spec.parts(choice))
        values = ((choice,) if spec.from_choice else ()) + ((self.views[name].options(),) if spec.reads_options else ())
        return FrameKey(key.objects + (spec.data,), key.values + values)

    def _outdated(self, name: str) -> bool:
        """View ``name`` holds data of other parts of the frame than its choice now needs (a view
        of the encoder's side, kept over decoder steps, turned to the decoder)."""
        held = self._parts.get(name)
        parts = self.specs[name].parts(self.followed(name))
        return held is not None and self.session.current is not None and not self.session.frames.key(parts).same(held)

    def _on_model_changed(self, _bundle: object) -> None:
        """Another model: no view's data is of it (and none keeps the old model alive); a selected
        kind the model has not (cross-attention in GPT-2) becomes one it has."""
        self._keys.clear()
        self._parts.clear()
        self._drawn.clear()
        if _bundle is not None and self.session.n_layers(self.selection.value().kind) == 0:
            kind = next((k for k in ("cross", "decoder", "encoder") if self.session.n_layers(k)), None)
            if kind is not None:
                self.selection.update(kind=kind)

    def _feed(self, name: str, choice: ViewChoice) -> None:
        """Give view ``name`` its data for ``choice``: at once, or when its analysis returns."""
        spec, view = self.specs[name], self.views[name]
        self._keys[name] = self.data_key(name, choice)
        self._parts[name] = self.session.frames.key(spec.parts(choice))
        if spec.from_choice:  # what it will show: a later choice equal to this one needs no new feed, another does
            self._applied[name] = choice
        data = view_data(spec, view, self.session, choice)
        if isinstance(data, Analysis):
            self.frames[name].set_computing(True)
            self.session.analyses.submit(name, data, lambda result: self._deliver(name, choice, result))
        elif data is not None:
            self._deliver(name, choice, data)

    def _deliver(self, name: str, choice: ViewChoice, data: object) -> None:
        """View ``name`` draws its new data of ``choice`` and takes the choice it follows now
        (``None``: the analysis found nothing to draw, a model without layers of a kind)."""
        self.frames[name].set_computing(False)
        if data is None:
            return
        spec, view = self.specs[name], self.views[name]
        if data is not self._drawn.get(name):  # an analysis's kept result, given again, is drawn already
            view.set_data(data)
            self._drawn[name] = data
        if spec.from_choice:
            self._applied[name] = choice
        elif self.is_linked(name):
            self._apply(name)
        elif name not in self._applied and spec.opening is not None:
            view.apply(spec.opening)
            self._applied[name] = spec.opening
        view.settle()
        self._update_caption(name)

    def _on_analysis_failed(self, name: str, message: str) -> None:
        """A view's analysis raised: the view keeps what it showed, and one line says why."""
        if name in self.frames:
            self._keys.pop(name, None)  # the next refresh tries again
            self.frames[name].set_computing(False)
            self.failed.emit(translate("registry", "Could not compute the {view} view: {error}").format(view=self.specs[name].name, error=message))

    def _on_options_changed(self, name: str) -> None:
        """View ``name``'s own options changed what its data is: computed again (now, or when it is shown)."""
        self._keys.pop(name, None)  # asked for: computed again even where the options read the same
        self.stale.add(name)
        self.catch_up(name)

    # -- linking -----------------------------------------------------------------------------
    def is_linked(self, name: str) -> bool:
        return name not in self._own

    def followed(self, name: str) -> ViewChoice:
        """The choice view ``name`` shows: the linked selection's, or its own when unlinked."""
        return self._choice(self.specs[name], self._own.get(name, self.selection.value()))

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
        if linked == self.is_linked(name):
            return
        if linked:
            del self._own[name]
            if on_screen(self.views[name]):
                self._apply(name)
        else:
            self._own[name] = self.selection.value()
            self._applied.pop(name, None)  # what it shows is its own from now on
        self._update_caption(name)

    def provenance(self, name: str) -> dict[str, object]:
        """What view ``name``'s data file is of: the model, the sentences, the step and the choice it shows."""
        return choice_metadata(self.session, self.followed(name)) if self.session.bundle is not None else {}

    def own_selections(self) -> dict[str, Selection]:
        """The unlinked views' own selections, by view name."""
        return dict(self._own)

    def set_own_selection(self, name: str, sel: Selection) -> None:
        """Unlink view ``name`` and give it ``sel`` as its own choice (drawn at once when on screen)."""
        self.set_linked(name, False)
        self._own[name] = sel
        self._applied.pop(name, None)
        self._keys.pop(name, None)
        self.stale.add(name)
        self.catch_up(name)
        self._update_caption(name)

    def request(self, name: str, **changes) -> None:
        """View ``name`` chose ``changes`` (fields of :class:`Selection`): the linked selection
        moves, or, for an unlinked view, its own choice."""
        spec = self.specs[name]
        if self.is_linked(name):
            if not spec.from_choice:  # the view shows it already; one drawn from the choice is drawn again
                target = replace(self.selection.value(), **{k: v for k, v in changes.items() if v is not None})
                self._applied[name] = self._choice(spec, target)
            self.selection.update(**changes)
        else:
            self._own[name] = replace(self._own[name], **{k: v for k, v in changes.items() if v is not None})
            if spec.from_choice:  # the view is drawn from the choice: draw it again
                self.refresh(self.views[name])
        if not spec.from_choice and self._outdated(name):  # its data of the old choice does not hold the new one's
            self.stale.add(name)
            self.catch_up(name)
        self._update_caption(name)

    def _apply(self, name: str) -> None:
        """Bring view ``name`` to the choice it follows (nothing when it shows it already)."""
        spec, view = self.specs[name], self.views[name]
        choice = self.followed(name)
        if self._applied.get(name) == choice:
            return
        if not spec.from_choice and self._outdated(name):  # its data is of the old choice's parts: fed anew (on screen), then applied
            self.stale.add(name)
            self.catch_up(name)
            return
        if not spec.from_choice and view.has_data():
            view.apply(choice)
            view.settle()
        elif spec.from_choice and self.session.current is not None:
            self._feed(name, choice)
        else:
            return
        self._applied[name] = choice
        self._update_caption(name)

    def _on_selection_changed(self, _sel: Selection) -> None:
        for name, view in self.views.items():
            if not self.specs[name].selectors:
                continue
            if self.is_linked(name) and on_screen(view):
                self._apply(name)
            else:
                self._update_caption(name)
                if self.is_linked(name) and self._applied.get(name) != self.followed(name):
                    self.stale.add(name)

    def _update_caption(self, name: str) -> None:
        view = self.views[name]
        choice = self.followed(name).describe() or translate("registry", "the current step")  # no row chosen: the view shows the step's
        if self.is_linked(name):
            view.set_link_state(True, translate("registry", "follows: {choice}").format(choice=choice))
        else:
            view.set_link_state(False, translate("registry", "own choice: {choice}").format(choice=choice))
        view.link_caption.setProperty("key", "follows" if self.is_linked(name) else "own-choice")  # what the caption says, in any language

    def _on_query_hovered(self, name: str, kind: str, row: int) -> None:
        self._hover_source = name
        self.selection.hover(query_axis(kind) if row >= 0 else "", row)

    def _on_query_hover_changed(self, axis: str, row: int) -> None:
        for name, view in self.views.items():
            if name != self._hover_source and on_screen(view):
                view.show_linked_query(axis, row)

    def _on_position_clicked(self, position: int) -> None:
        s = self.session
        if s.forced is not None and 0 <= position < len(s.forced.steps):
            s.set_cursor(position)
