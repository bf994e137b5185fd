"""Every view of the app in one table: its ``--view`` name, its class, its dock, the selectors it
takes (kind, layer, head, query) and the kinds it shows, how it gets its data from the session,
and how it is named when exported.

The main window builds its views and docks from :data:`VIEWS` (through :class:`ViewSet`);
``attnviz export`` draws one of them headless through the same entry, so a view is fed and
selected the same way on screen and in a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from PySide6 import QtWidgets

from attnviz.core.analysis.norms import norm_site_data_for
from attnviz.core.analysis.positional import positional_data_for
from attnviz.core.analysis.walkthrough import HeadWalkthrough, session_walkthrough
from attnviz.core.model.sites import KINDS
from attnviz.errors import CommandError
from attnviz.qt.session import Session
from attnviz.qt.train.panel import TrainPanel
from attnviz.qt.views.attention_grid import QtAttentionGrid
from attnviz.qt.views.base import ExportAllHeadsMixin, FigureViewBase
from attnviz.qt.views.head_detail import QtHeadDetailView
from attnviz.qt.views.lines import QtLineView
from attnviz.qt.views.masks import QtMaskView
from attnviz.qt.views.norm_stats import QtNormStatsView
from attnviz.qt.views.output import QtOutputView
from attnviz.qt.views.positional import QtPositionalView
from attnviz.qt.views.walkthrough import QtWalkthroughView

SELECTORS: tuple[str, ...] = ("kind", "layer", "head", "query")
HEAD_MODES: tuple[str, ...] = ("mean", "rollout", "all")  # what --head takes besides a number


@dataclass(frozen=True)
class ViewChoice:
    """What a view is asked to show; ``None``: the view keeps its own choice. 0-based."""

    kind: str | None = None
    layer: int | None = None
    head: int | None = None
    mode: str | None = None  # "head" (one head), "mean" (over heads) or "rollout"
    query: int | None = None


Loader = Callable[[FigureViewBase, Session, ViewChoice], bool]
Selector = Callable[[FigureViewBase, ViewChoice], None]


@dataclass(frozen=True)
class ViewSpec:
    """One view: what it is called, where it sits, what it takes, and how it is fed.

    ``load(view, session, choice)`` gives the view the session's data (``False``: there is none
    yet); ``select(view, choice)`` applies the choice's selectors; ``opening`` is applied once,
    when the view first gets data in the window.
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

    def takes(self, selector: str) -> bool:
        return selector in self.selectors

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
        view.set_data(data)
    return bool(data)


def _load_mask(view: FigureViewBase, session: Session, choice: ViewChoice) -> bool:
    md = session.mask_data()
    if md is not None:
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
    if c.layer is not None and c.head is not None:
        view.set_selected(c.layer, c.head)


def _select_head(view: QtHeadDetailView, c: ViewChoice) -> None:
    view.select(layer=c.layer, head=c.head, mode=c.mode, kind=c.kind)


def _select_lines(view: QtLineView, c: ViewChoice) -> None:
    if c.kind is not None:
        view.set_kind(c.kind)
    if c.layer is not None:
        view.set_layer(c.layer)
    if c.mode == "mean":
        view.set_heads(None)
    elif c.head is not None:
        view.set_heads([c.head])


def _select_mask(view: QtMaskView, c: ViewChoice) -> None:
    view.select(layer=c.layer, head=c.head)


def _select_norm(view: QtNormStatsView, c: ViewChoice) -> None:
    if c.kind is not None and c.layer is not None:
        view.select(c.kind, c.layer)


_ATTENTION = ("kind", "layer", "head")
_CROSS_FIRST = ViewChoice(kind="cross")  # the attention views open on cross-attention

VIEWS: tuple[ViewSpec, ...] = (
    ViewSpec("grid", QtAttentionGrid, "", "", "central", _ATTENTION, _load_attention, _select_grid,
             kinds=KINDS, head_modes=("all",), opening=_CROSS_FIRST),
    ViewSpec("head", QtHeadDetailView, "Head detail", "headDetailDock", "right", _ATTENTION, _load_attention, _select_head,
             kinds=KINDS, head_modes=HEAD_MODES, opening=_CROSS_FIRST),
    ViewSpec("lines", QtLineView, "Lines", "lineViewDock", "right", _ATTENTION, _load_attention, _select_lines,
             kinds=KINDS, head_modes=("mean", "all"), opening=_CROSS_FIRST),
    ViewSpec("mask", QtMaskView, "Masks", "maskViewDock", "right", _ATTENTION, _load_mask, _select_mask,
             kinds=("decoder",), empty="the mask view needs at least one decoded step"),
    ViewSpec("output", QtOutputView, "Output distribution", "outputDock", "bottom", (), _load_output),
    ViewSpec("pe", QtPositionalView, "Positional encoding", "positionalDock", "bottom", (), _load_positional),
    ViewSpec("norm", QtNormStatsView, "LayerNorm / BatchNorm", "normStatsDock", "bottom", ("kind", "layer"), _load_norm,
             _select_norm, kinds=("encoder", "decoder")),
    ViewSpec("walkthrough", QtWalkthroughView, "One-head walkthrough", "walkthroughDock", "bottom", SELECTORS,
             _load_walkthrough, kinds=KINDS, empty="nothing to walk through"),
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
    """``head_cross_layer2_head3``, ``mask_layer1_head2``, ``norm_decoder_layer1``, ``pe``: the view's
    name and the selectors it takes (1-based, as on screen); a kind only where it has several."""
    parts = [spec.name]
    if spec.takes("kind") and len(spec.kinds) > 1:
        parts.append(str(choice.kind))
    if spec.takes("layer"):
        parts.append(f"layer{(choice.layer or 0) + 1}")
    if spec.takes("head"):
        parts.append(choice.mode if choice.mode in ("mean", "rollout") else f"head{(choice.head or 0) + 1}")
    if spec.takes("query") and choice.query is not None:
        parts.append(f"query{choice.query + 1}")
    return "_".join(parts)


class ViewSet:
    """The window's views, built from :data:`VIEWS`, plus the training panel; keeps each view
    in step with the session when asked to refresh it."""

    def __init__(self, session: Session, open_model: Callable[[Path], None]):
        self.session = session
        self.specs = {spec.name: spec for spec in VIEWS}
        self.views: dict[str, FigureViewBase] = {spec.name: build_view(spec) for spec in VIEWS}
        self.train = TrainPanel()
        self.train.bundleReady.connect(lambda path: open_model(Path(path)))
        self._train_scroll = QtWidgets.QScrollArea(objectName="trainScroll")  # the panel is tall; the dock need not be
        self._train_scroll.setWidget(self.train)
        self._train_scroll.setWidgetResizable(True)
        self._train_scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self._opened: set[str] = set()
        self._walk_choice = ViewChoice("cross", 0, 0)
        self.views["walkthrough"].selectionRequested.connect(self._on_walkthrough_selection)
        self.views["output"].positionClicked.connect(self._on_position_clicked)

    def __getitem__(self, name: str) -> FigureViewBase:
        return self.views[name]

    def all(self) -> list[FigureViewBase]:
        return list(self.views.values())

    def docks(self, area: str) -> list[tuple[str, QtWidgets.QWidget, str]]:
        """(title, widget, objectName) of each dock in ``area`` ("right" or "bottom"), in order."""
        out = [(s.title, self.views[s.name], s.dock_name) for s in VIEWS if s.area == area]
        if area == "bottom":
            out.append(("Train", self._train_scroll, "trainDock"))
        return out

    def refresh(self, view: QtWidgets.QWidget) -> None:
        """Give ``view`` the session's current data (nothing before a sentence is decoded)."""
        name = next((n for n, v in self.views.items() if v is view), None)
        if name is None or self.session.current is None:
            return
        spec = self.specs[name]
        choice = self._walk_choice if name == "walkthrough" else ViewChoice()
        if spec.load(view, self.session, choice) and spec.opening is not None and name not in self._opened:
            self._opened.add(name)
            spec.select(view, spec.opening)

    def _on_walkthrough_selection(self, kind: str, layer: int, head: int, query: int) -> None:
        self._walk_choice = replace(self._walk_choice, kind=kind, layer=layer, head=head, query=query)
        self.refresh(self.views["walkthrough"])

    def _on_position_clicked(self, position: int) -> None:
        s = self.session
        if s.forced is not None and 0 <= position < len(s.forced.steps):
            s.forced_cursor = position
            s.decodingChanged.emit()

    def confirm_close(self, parent: QtWidgets.QWidget) -> bool:
        if not self.train.is_running():
            return True
        answer = QtWidgets.QMessageBox.question(
            parent, "Training in progress",
            "A training run is in progress. Stop it and quit? The last finished epoch's checkpoint is kept.",
            QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.No,
            QtWidgets.QMessageBox.StandardButton.No,
        )
        return answer == QtWidgets.QMessageBox.StandardButton.Yes

    def shutdown(self, timeout_s: float) -> bool:
        """Stop a training run and wait at most ``timeout_s`` for it; True when it has ended."""
        return self.train.shutdown(timeout_s)
