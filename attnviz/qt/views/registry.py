"""Every view of the app in one table: its ``--view`` name, its class, its dock, the selectors it
takes (kind, layer, head, query) and the kinds it shows, how it gets its data from the session,
and how it is named when exported.

The main window builds its views and docks from :data:`VIEWS` (through :class:`ViewSet`);
``attnviz export`` draws one of them headless through the same entry, so a view is fed and
selected the same way on screen and in a file.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from PySide6 import QtCore, QtWidgets

from attnviz.core.analysis.norms import norm_site_data_for
from attnviz.core.analysis.positional import positional_data_for
from attnviz.core.analysis.walkthrough import HeadWalkthrough, session_walkthrough
from attnviz.core.model.sites import KINDS
from attnviz.errors import CommandError
from attnviz.qt.export.files import session_metadata
from attnviz.qt.selection import LinkedSelection, Request, Selection, ViewChoice, query_axis
from attnviz.qt.session import Session
from attnviz.qt.view_frame import ViewFrame, empty_state
from attnviz.qt.views.attention_grid import QtAttentionGrid
from attnviz.qt.views.base import ExportAllHeadsMixin, FigureViewBase, PredictedRowsMixin
from attnviz.qt.views.compare import QtCompareView, load_compare, select_compare, watch_compare
from attnviz.qt.views.ffn import QtFfnView, load_ffn, select_ffn, watch_ffn
from attnviz.qt.views.head_detail import QtHeadDetailView
from attnviz.qt.views.lines import QtLineView
from attnviz.qt.views.logit_lens import QtLogitLensView, load_logit_lens, select_logit_lens, watch_logit_lens
from attnviz.qt.views.masks import QtMaskView
from attnviz.qt.views.norm_batch import QtNormBatchView, load_norm_batch, select_norm_batch, watch_norm_batch
from attnviz.qt.views.norm_stats import QtNormStatsView
from attnviz.qt.views.output import QtOutputView
from attnviz.qt.views.positional import QtPositionalView
from attnviz.qt.views.residual import QtResidualView, load_residual, select_residual, watch_residual
from attnviz.qt.views.scaling import QtScalingView, load_scaling, select_scaling, watch_scaling
from attnviz.qt.views.teacher_vs_free import QtTeacherVsFreeView, load_teacher_vs_free, select_teacher_vs_free, watch_teacher_vs_free
from attnviz.qt.views.walkthrough import QtWalkthroughView

SELECTORS: tuple[str, ...] = ("kind", "layer", "head", "query")
HEAD_MODES: tuple[str, ...] = ("mean", "rollout", "all")  # what --head takes besides a number


Loader = Callable[[FigureViewBase, Session, ViewChoice], bool]
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


# -- loading: the session's data into a view --------------------------------------------------
def _load_attention(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    data = {k: d for k in KINDS if (d := session.attention_data(k)) is not None}
    if data:
        if isinstance(view, PredictedRowsMixin):
            view.set_predictions(session.output_pieces())
        view.set_data(data)
    return bool(data)


def _load_mask(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    md = session.mask_data()
    if md is not None:
        view.set_predictions(session.output_pieces())
        view.set_data(md)
    return md is not None


def _load_positional(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    view.set_data(positional_data_for(session.current))
    return True


def _load_norm(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    cfg = session.bundle.config
    view.set_data(norm_site_data_for(session.current, cfg), cfg.norm, cfg.norm_placement)
    return True


def _load_output(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    forced = session.forced
    view.set_data(step=session.current_step(), forced=forced, position=session.forced_cursor if forced else None)
    return True


def walkthrough_for(session: Session, kind: str, layer: int, head: int, query: int | None) -> HeadWalkthrough | None:
    """The one-head walkthrough of the session's current decoding (falls back to the encoder
    before the first decoder step)."""
    cur = session.current
    if cur is None:
        return None
    if kind != "encoder" and session.n_rows() == 0:
        kind = "encoder"
    if session.n_layers(kind) == 0:  # a model without layers of this kind: nothing to walk through
        return None
    layer = max(0, min(layer, session.n_layers(kind) - 1))
    head = max(0, min(head, session.bundle.config.n_heads - 1))
    rows = len(cur.src_pieces) if kind == "encoder" else session.n_rows()
    if query is None or not 0 <= query < rows:
        query = rows - 1 if kind == "encoder" else (session.current_row() or 0)
    return session_walkthrough(session.bundle.model, cur, kind, layer, head, query)


def _load_walkthrough(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    walk = walkthrough_for(session, choice.kind or "cross", choice.layer or 0, choice.head or 0, choice.query)
    if walk is not None:
        view.set_data(walk, {k: session.n_layers(k) for k in KINDS})
    return walk is not None


# -- selecting: a choice's selectors on a view ---------------------------------------------------
def _select_grid(view: QtAttentionGrid, c: ViewChoice) -> None:
    if c.kind is not None:
        view.set_kind(c.kind)
    if c.layer is not None or c.head is not None:
        layer, head = view.selected()
        view.set_selected(layer if c.layer is None else c.layer, head if c.head is None else c.head)


def _select_head(view: QtHeadDetailView, c: ViewChoice) -> None:
    view.select(layer=c.layer, head=c.head, mode=c.mode, kind=c.kind)


def _select_lines(view: QtLineView, c: ViewChoice) -> None:
    heads = None if c.mode == "mean" else ([c.head] if c.head is not None else "keep")
    view.select(kind=c.kind, layer=c.layer, heads=heads)


def _select_mask(view: QtMaskView, c: ViewChoice) -> None:
    view.select(layer=c.layer, head=c.head)


# -- watching: a choice made in a view, as a request to the linked selection --------------------
def _watch_grid(view: QtAttentionGrid, request: Request) -> None:
    view.tileClicked.connect(lambda layer, head: request(layer=layer, head=head, mode="head"))
    view.kindChanged.connect(lambda kind: request(kind=kind))


def _watch_head(view: QtHeadDetailView, request: Request) -> None:
    view.selectionChanged.connect(lambda kind, mode, layer, head: request(kind=kind, mode=mode, layer=layer, head=head))


def _lines_request(request: Request, kind: str, layer: int, heads: tuple[int, ...], n_heads: int) -> None:
    """One head shown: that head; every head: their mean; some: the kind and layer only."""
    if len(heads) == 1:
        request(kind=kind, layer=layer, head=heads[0], mode="head")
    elif len(heads) == n_heads:
        request(kind=kind, layer=layer, mode="mean")
    else:
        request(kind=kind, layer=layer)


def _watch_lines(view: QtLineView, request: Request) -> None:
    ref = weakref.ref(view)  # the connection must not keep the view alive

    def n_heads() -> int:
        d = ref().data() if ref() is not None else None
        return d.n_heads if d is not None else 0

    view.selectionChanged.connect(lambda kind, layer, heads: _lines_request(request, kind, layer, tuple(heads), n_heads()))
    view.queryPinned.connect(lambda row: request(query=row))


def _watch_mask(view: QtMaskView, request: Request) -> None:
    view.selectionChanged.connect(lambda layer, head: request(layer=layer, head=head, mode="head"))
    view.rowClicked.connect(lambda row: request(query=row))


def _watch_walkthrough(view: QtWalkthroughView, request: Request) -> None:
    view.selectionRequested.connect(lambda kind, layer, head, query: request(kind=kind, layer=layer, head=head, mode="head", query=query))


def _select_norm(view: QtNormStatsView, c: ViewChoice) -> None:
    """The chosen layer's norms; cross-attention sits in the decoder's layers."""
    if c.kind is not None and c.layer is not None:
        stack = "decoder" if c.kind == "cross" else c.kind
        if (stack, c.layer) in view.groups():
            view.select(stack, c.layer)


_ATTENTION = ("kind", "layer", "head")
_CROSS_FIRST = ViewChoice(kind="cross")  # the attention views open on cross-attention

VIEWS: tuple[ViewSpec, ...] = (
    ViewSpec("grid", QtAttentionGrid, "", "", "central", _ATTENTION, _load_attention, _select_grid,
             kinds=KINDS, head_modes=("all",), opening=_CROSS_FIRST, watch=_watch_grid),
    ViewSpec("head", QtHeadDetailView, "Head detail", "headDetailDock", "right", _ATTENTION, _load_attention, _select_head,
             kinds=KINDS, head_modes=HEAD_MODES, opening=_CROSS_FIRST, watch=_watch_head),
    ViewSpec("lines", QtLineView, "Lines", "lineViewDock", "right", _ATTENTION, _load_attention, _select_lines,
             kinds=KINDS, head_modes=("mean", "all"), opening=_CROSS_FIRST, watch=_watch_lines),
    ViewSpec("mask", QtMaskView, "Masks", "maskViewDock", "right", _ATTENTION, _load_mask, _select_mask,
             kinds=("decoder",), empty="the mask view needs at least one decoded step", watch=_watch_mask),
    ViewSpec("output", QtOutputView, "Output distribution", "outputDock", "bottom", (), _load_output),
    ViewSpec("pe", QtPositionalView, "Positional encoding", "positionalDock", "bottom", (), _load_positional),
    ViewSpec("norm", QtNormStatsView, "LayerNorm / BatchNorm", "normStatsDock", "bottom", ("kind", "layer"), _load_norm,
             _select_norm, kinds=("encoder", "decoder"), stack_view=True),
    ViewSpec("walkthrough", QtWalkthroughView, "One-head walkthrough", "walkthroughDock", "bottom", SELECTORS,
             _load_walkthrough, kinds=KINDS, empty="nothing to walk through", watch=_watch_walkthrough),
    ViewSpec("compare", QtCompareView, "Word order (compare)", "compareView", "bottom", _ATTENTION, load_compare,
             select_compare, kinds=("encoder",),
             empty="nothing to compare: type a source sentence", watch=watch_compare),
    ViewSpec("scaling", QtScalingView, "Why ÷√d_k", "scalingView", "bottom", _ATTENTION, load_scaling,
             select_scaling, kinds=KINDS, watch=watch_scaling),
    ViewSpec("teacher-vs-free", QtTeacherVsFreeView, "Teacher forcing vs free running", "teacherVsFreeView", "bottom",
             _ATTENTION, load_teacher_vs_free, select_teacher_vs_free, kinds=("cross",),
             empty="the teacher-vs-free view needs a target: pass --tgt TEXT (teacher-forced mode)", watch=watch_teacher_vs_free),
    ViewSpec("norm-batch", QtNormBatchView, "LN vs BN on a batch", "normBatchView", "bottom", ("kind", "layer"), load_norm_batch,
             select_norm_batch, kinds=("encoder", "decoder"), watch=watch_norm_batch, stack_view=True,
             empty="no normalization to show: the model has no encoder layers, no decoder layers and no final norm"),
    ViewSpec("ffn", QtFfnView, "FFN", "ffnView", "bottom", ("kind", "layer", "query"), load_ffn, select_ffn,
             kinds=("encoder", "decoder"), watch=watch_ffn, stack_view=True),
    ViewSpec("residual", QtResidualView, "Residual stream", "residualView", "bottom", ("kind", "layer", "query"), load_residual,
             select_residual, kinds=KINDS, watch=watch_residual),
    ViewSpec("logit-lens", QtLogitLensView, "Logit lens", "logitLensView", "bottom", ("query",), load_logit_lens,
             select_logit_lens, empty="nothing for the logit lens: the model has no decoder layers, or no step is decoded yet",
             watch=watch_logit_lens, query_rows="target"),
)
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
    if session.current is None or not spec.load(view, session, choice):
        raise CommandError(spec.empty)
    if spec.select is not None:
        spec.select(view, choice)


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

    Linking: every view whose spec takes a selector follows ``selection`` unless the user
    unlinks it (its "Linked" toggle). A choice made in a linked view (its spec's ``watch``)
    moves the selection; every other linked view on screen then gets it through its spec's
    ``select`` (or is loaded again with it, when its spec has no ``select``); one off screen gets
    it when it is shown. A query row hovered in one view is outlined in the others.
    """

    failed = QtCore.Signal(str)  # a view could not draw: a one-line message

    def __init__(self, session: Session):
        super().__init__(session)
        self.session = session
        self.specs = {spec.name: spec for spec in VIEWS}
        self.views: dict[str, FigureViewBase] = {spec.name: build_view(spec) for spec in VIEWS}
        self.frames: dict[str, ViewFrame] = {name: ViewFrame(view) for name, view in self.views.items()}
        self.stale: set[str] = set()  # views whose data is older than the session's
        self.refreshes: dict[str, int] = dict.fromkeys(self.views, 0)  # how often each view was drawn anew
        self.selection = LinkedSelection()
        self._own: dict[str, Selection] = {}  # an unlinked view's own selection
        self._applied: dict[str, ViewChoice] = {}  # the choice each view shows now
        self._hover_source: str | None = None
        for spec in VIEWS:
            if spec.selectors:
                self._link(spec)
        for name, view in self.views.items():
            view.installEventFilter(self)
            view.provenance = partial(self.provenance, name)
        self.selection.changed.connect(self._on_selection_changed)
        self.selection.queryHovered.connect(self._on_query_hover_changed)
        self.views["output"].positionClicked.connect(self._on_position_clicked)
        session.decodingChanged.connect(self._on_decoding_changed)

    def _link(self, spec: ViewSpec) -> None:
        view = self.views[spec.name]
        view.linkToggled.connect(partial(self.set_linked, spec.name))
        view.queryHovered.connect(partial(self._on_query_hovered, spec.name))
        if spec.watch is not None:
            spec.watch(view, partial(self.request, spec.name))
        self._update_caption(spec.name)

    def __getitem__(self, name: str) -> FigureViewBase:
        return self.views[name]

    def all(self) -> list[FigureViewBase]:
        return list(self.views.values())

    def name_of(self, view: QtWidgets.QWidget) -> str | None:
        return next((n for n, v in self.views.items() if v is view), None)

    def docks(self, area: str) -> list[tuple[str, QtWidgets.QWidget, str]]:
        """(title, widget, objectName) of each dock in ``area`` ("right" or "bottom"), in order:
        a view's widget is its frame."""
        return [(s.title, self.frames[s.name], s.dock_name) for s in VIEWS if s.area == area]

    # -- drawing what is on screen --------------------------------------------------------------
    def _on_decoding_changed(self) -> None:
        empty = empty_state(self.session)
        for frame in self.frames.values():
            frame.set_empty(empty)
        self.stale = set(self.views)
        for name, view in self.views.items():
            if on_screen(view):
                self._guarded_refresh(name)

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 - Qt API
        """A stale view about to be painted (its tab raised, its dock shown) catches up first."""
        if event.type() in (QtCore.QEvent.Type.Paint, QtCore.QEvent.Type.Show):
            name = self.name_of(obj)
            if name in self.stale:
                QtCore.QTimer.singleShot(0, self, lambda n=name: self.catch_up(n))
        return False

    def bring_up_to_date(self, view: QtWidgets.QWidget) -> None:
        """Refresh ``view`` now if it is stale, on screen or not (before it is exported)."""
        name = self.name_of(view)
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
            self.failed.emit(f"Could not update {self.views[name].objectName() or name}: {type(exc).__name__}: {exc}")
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
        self.refreshes[name] += 1
        spec = self.specs[name]
        choice = self.followed(name)
        if not spec.load(view, self.session, choice):
            return
        if spec.select is None:
            self._applied[name] = choice
        elif self.is_linked(name):
            self._apply(name)
        elif name not in self._applied and spec.opening is not None:
            spec.select(view, spec.opening)
            self._applied[name] = spec.opening
        self._update_caption(name)

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
        if self.session.bundle is None:
            return {}
        choice = self.followed(name)
        head = choice.head if choice.mode == "head" else choice.mode
        return session_metadata(self.session, choice.kind, None if choice.mode == "all" else choice.layer, head)

    def own_selections(self) -> dict[str, Selection]:
        """The unlinked views' own selections, by view name."""
        return dict(self._own)

    def set_own_selection(self, name: str, sel: Selection) -> None:
        """Unlink view ``name`` and give it ``sel`` as its own choice (drawn at once when on screen)."""
        self.set_linked(name, False)
        self._own[name] = sel
        self._applied.pop(name, None)
        self.stale.add(name)
        self.catch_up(name)
        self._update_caption(name)

    def request(self, name: str, **changes) -> None:
        """View ``name`` chose ``changes`` (fields of :class:`Selection`): the linked selection
        moves, or, for an unlinked view, its own choice."""
        spec = self.specs[name]
        if self.is_linked(name):
            if spec.select is not None:  # the view shows it already; one drawn from the choice is drawn again
                target = replace(self.selection.value(), **{k: v for k, v in changes.items() if v is not None})
                self._applied[name] = self._choice(spec, target)
            self.selection.update(**changes)
        else:
            self._own[name] = replace(self._own[name], **{k: v for k, v in changes.items() if v is not None})
            if spec.select is None:  # the view is drawn from the choice: draw it again
                self.refresh(self.views[name])
        self._update_caption(name)

    def _apply(self, name: str) -> None:
        """Bring view ``name`` to the choice it follows (nothing when it shows it already)."""
        spec, view = self.specs[name], self.views[name]
        choice = self.followed(name)
        if self._applied.get(name) == choice:
            return
        if spec.select is not None and view.has_data():
            spec.select(view, choice)
        elif spec.select is None and self.session.current is not None:
            spec.load(view, self.session, choice)
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
        if self.is_linked(name):
            view.set_link_state(True, "follows: " + self.followed(name).describe())
        else:
            view.set_link_state(False, "own choice: " + self.followed(name).describe())

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
            s.forced_cursor = position
            s.decodingChanged.emit()
