"""Help → Tour: the tutorial's ideas in its order, one stop at a time, on the live window.

A stop (:class:`attnviz.core.tour_data.Stop`, read from ``resources/tour/<language>.json``) sets
the window's state (the sentences, the tokens decoded, the linked selection), raises its view,
outlines the part of it that matters (:class:`TourHighlight`) and explains it in two or three
sentences whose numbers are read from the window as it is then. The tour reads a view only
through its spec (:class:`~attnviz.qt.views.spec.ViewSpec`): its ``measures`` give the numbers
and its ``regions`` the outlines; :func:`check_specs` makes sure, when the tour is loaded, that
every measure and region of :mod:`attnviz.core.tour_data` is declared by its view's spec.
:class:`TourPanel` is a dock with Back, Next and Leave: the window stays
usable at every stop, a change the user makes there is explained anew with the new numbers, and
:meth:`TourPanel.resume` goes back to the stop that was left.

The main window offers it as Help → Tour through :func:`start_tour`, in the interface's language
(:func:`tour_for`), and the tour in the other language beside it (:func:`other_tour`). The panel's
own words (title, counter, buttons) come with the tour, so it speaks the tour's language.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.decoding.strategies import Greedy
from attnviz.core.tour_data import LANGUAGES, MEASURES, REGIONS, Stop, Tour, TourError, fill, load_tour, stop_misfit
from attnviz.qt.core_text import kind_name
from attnviz.qt.exercises import ExerciseHost
from attnviz.qt.i18n import translate
from attnviz.qt.views.registry import VIEWS
from attnviz.qt.views.spec import TourAsk, ViewSpec
from attnviz.qt.widgets.plain_text import plain_label
from attnviz.qt.widgets.regions import Region, widget_region

POLL_MS = 40  # how often a stop looks whether its view has drawn its data
READY_TIMEOUT_S = 120.0  # a view that has not drawn by then is explained with what it shows
SETTLE_S = 0.6  # s after a stop is explained during which its region is kept scrolled into view
PANEL_WIDTH = 280  # px of the left dock column when the tour opens (the grid in the centre keeps its room)
PANEL_SHARE = 0.62  # of the left column's height the tour takes when it opens
OUTLINE = QtGui.QColor(255, 120, 0, 230)  # the highlight: a semi-transparent orange outline
FILL = QtGui.QColor(255, 120, 0, 38)


class TourSpecError(LookupError):
    """A view's spec does not declare a measure or region the tour's data puts in that view: a bug
    of the app, found when the tour is loaded (not a stop that shows "—")."""


@dataclass(frozen=True)
class Context:
    """A stop in the window (a ``qt.main_window.MainWindow``): its view, that view's spec, and what
    the stop tells the view (:class:`~attnviz.qt.views.spec.TourAsk`)."""

    window: QtWidgets.QMainWindow
    stop: Stop

    @property
    def session(self):
        return self.window.session

    @property
    def views(self):
        return self.window.views

    @property
    def view(self):
        return self.window.views.views[self.stop.view]

    @property
    def spec(self) -> ViewSpec:
        return self.window.views.specs[self.stop.view]

    @property
    def ask(self) -> TourAsk:
        return TourAsk(self.stop.state, self.session)


def spec_gaps(specs: Iterable[ViewSpec]) -> list[str]:
    """What the tour's data names that the views' specs do not declare (or declare wrongly): a
    measure (:data:`~attnviz.core.tour_data.MEASURES`) or region (``REGIONS``) of a view missing
    from its spec, and a declared measure name that is not one of that view's."""
    by_name = {spec.name: spec for spec in specs}
    gaps = []
    for name, measure in MEASURES.items():
        spec = by_name.get(measure.view)
        if measure.view is not None and (spec is None or spec.measures is None or name not in spec.measure_names):
            gaps.append(f"the {measure.view} view's spec does not declare the measure {name!r}")
    for name, view in REGIONS.items():
        spec = by_name.get(view)
        if view is not None and (spec is None or name not in spec.regions):
            gaps.append(f"the {view} view's spec does not declare the region {name!r}")
    for spec in by_name.values():
        gaps += [f"the {spec.name} view's spec declares {name!r}, which is not one of its measures in tour_data.MEASURES"
                 for name in spec.measure_names if name not in MEASURES or MEASURES[name].view != spec.name]
    return gaps


def check_specs(specs: Iterable[ViewSpec]) -> None:
    """Raise :class:`TourSpecError` naming every gap of :func:`spec_gaps`."""
    gaps = spec_gaps(specs)
    if gaps:
        raise TourSpecError("the tour cannot read every view it names: " + "; ".join(gaps))


check_specs(VIEWS)  # when the tour is loaded: a view that lost a measure or region the tour reads fails here


# -- measures: the numbers a stop's text quotes, read from the window -----------------------------
def model_measures(ctx: Context) -> dict[str, Any]:
    """The open model's measures (``None`` views of :data:`~attnviz.core.tour_data.MEASURES`)."""
    cfg = ctx.session.bundle.config
    return {"d_model": cfg.d_model, "d_k": cfg.d_model // cfg.n_heads, "n_heads": cfg.n_heads, "d_ff": cfg.d_ff,
            "encoder_layers": cfg.n_encoder_layers, "decoder_layers": cfg.n_decoder_layers, "target_vocab": cfg.tgt_vocab_size}


def measure_values(ctx: Context) -> dict[str, Any]:
    """The measures of the model and of the stop's view (its spec's ``measures``); a view with
    nothing to show gives none, and the text shows "—" for them."""
    if ctx.session.bundle is None:
        return {}
    values = model_measures(ctx)
    view, read = ctx.view, ctx.spec.measures
    if read is None or not view.has_data():
        return values
    try:
        values.update(read(view, ctx.ask))
    except (IndexError, KeyError, ValueError):  # the view's data has no such row (or step) yet: shown as "—"
        pass
    return values


# -- regions: what a stop outlines ------------------------------------------------------------
def region_of(ctx: Context) -> Region | None:
    """The stop's region now (``None``: its view has nothing to outline yet): the whole view
    (``view``), or one its spec declares."""
    name = ctx.stop.highlight
    if name == "view":
        return widget_region(ctx.views.frames[ctx.stop.view])
    view, find = ctx.view, ctx.spec.regions[name]
    if not view.has_data():
        return None
    try:
        return find(view, ctx.ask)
    except (IndexError, KeyError, ValueError):  # the view's data has no such row (or panel) yet
        return None


def visible_rect(widget: QtWidgets.QWidget, top: QtWidgets.QWidget) -> QtCore.QRect:
    """The part of ``widget`` its ancestors up to ``top`` leave on screen, in ``top``'s coordinates."""
    rect = QtCore.QRect(widget.mapTo(top, QtCore.QPoint(0, 0)), widget.size())
    w = widget.parentWidget()
    while w is not None and w is not top:
        rect &= QtCore.QRect(w.mapTo(top, QtCore.QPoint(0, 0)), w.size())
        w = w.parentWidget()
    return rect & top.rect()


def scroll_into_view(region: Region) -> None:
    """Scroll every scroll area around the region's widget so that the region is in view."""
    widget, polygon = region
    box = polygon.boundingRect()
    w = widget.parentWidget()
    while w is not None:
        inner = w.widget() if isinstance(w, QtWidgets.QScrollArea) else None
        if inner is not None and inner.isAncestorOf(widget):
            centre = widget.mapTo(inner, box.center().toPoint())
            w.ensureVisible(centre.x(), centre.y(), int(min(box.width() / 2 + 8, 400)), int(min(box.height() / 2 + 8, 300)))
        w = w.parentWidget()


POSITIONAL_TEXT = {  # shown as translate("tour", text)
    "sinusoidal": QT_TRANSLATE_NOOP("tour", "sinusoidal positional encoding added to its embeddings"),
    "learned": QT_TRANSLATE_NOOP("tour", "learned positions (a table of position vectors added to its embeddings)"),
    "relative": QT_TRANSLATE_NOOP("tour", "relative position biases on its attention scores (nothing added to its embeddings)"),
}


def misfit_text(stop: str, what: str, words: tuple[str, ...]) -> str:
    """:func:`~attnviz.core.tour_data.stop_misfit`'s reason for stop ``stop`` in the interface's language."""
    if what == "kind":
        return translate("tour", "the stop “{stop}” shows {kind}, and this model has no layers of it").format(stop=stop, kind=kind_name(words[0]))
    described = translate("tour", " or ").join(translate("tour", POSITIONAL_TEXT[p]) for p in words[1:])
    return translate("tour", "the stop “{stop}” explains {described}; this model has {has}").format(
        stop=stop, described=described, has=translate("tour", POSITIONAL_TEXT[words[0]]))


class TourHighlight(QtWidgets.QWidget):
    """A semi-transparent outline over a region of the window, placed again whenever the widget
    it lies in (or one of its ancestors) moves, is resized, shown or hidden; hidden while the
    region is off screen. It lets every mouse event through to the window."""

    MARGIN = 4  # px around the outline (its pen is drawn inside the widget)

    def __init__(self, parent: QtWidgets.QWidget):
        super().__init__(parent)
        self.setObjectName("tourHighlight")
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self._find: Callable[[], Region | None] | None = None
        self._watched: list[QtWidgets.QWidget] = []
        self._polygon = QtGui.QPolygonF()
        self._scheduled = False
        self._scroll_until = 0.0
        self._scene: QtWidgets.QGraphicsScene | None = None  # the scene of the region, followed too
        self.target: QtWidgets.QWidget | None = None  # the widget the region lies in
        self.hide()

    def follow(self, find: Callable[[], Region | None]) -> None:
        """Outline what ``find()`` returns, now and whenever the layout changes; while the
        view settles (:data:`SETTLE_S`) the region is also scrolled into view."""
        self._find = find
        self._scroll_until = time.monotonic() + SETTLE_S
        self.place()

    def clear(self) -> None:
        self._find = None
        self._watch(None)
        self.hide()

    def polygon_in_window(self) -> QtGui.QPolygonF:
        """The outline in the coordinates of the window it is drawn in (empty when hidden)."""
        return self._polygon.translated(QtCore.QPointF(self.pos())) if self.isVisible() else QtGui.QPolygonF()

    def place(self) -> None:
        self._scheduled = False
        region = self._find() if self._find is not None else None
        if region is None:
            self._watch(None)
            self.hide()
            return
        widget, polygon = region
        if time.monotonic() < self._scroll_until:
            scroll_into_view(region)
        top = widget.window()
        if self.parentWidget() is not top:
            self.setParent(top)
        self._watch(widget)
        shown = polygon.translated(QtCore.QPointF(widget.mapTo(top, QtCore.QPoint(0, 0))))
        shown = shown.intersected(QtGui.QPolygonF(QtCore.QRectF(visible_rect(widget, top))))
        if shown.isEmpty() or shown.boundingRect().isEmpty() or not widget.isVisible():
            self.hide()
            return
        box = shown.boundingRect().toAlignedRect().adjusted(-self.MARGIN, -self.MARGIN, self.MARGIN, self.MARGIN)
        self.setGeometry(box)
        self._polygon = shown.translated(-QtCore.QPointF(box.topLeft()))
        self.show()
        self.raise_()
        self.update()

    def _watch(self, widget: QtWidgets.QWidget | None) -> None:
        """Follow ``widget`` and its ancestors (none: stop following)."""
        chain = []
        while widget is not None:
            chain.append(widget)
            widget = widget.parentWidget()
        if chain == self._watched:
            return
        for w in self._watched:
            w.removeEventFilter(self)
        for w in chain:
            w.installEventFilter(self)
        self._watched = chain
        self.target = chain[0] if chain else None
        self._follow_scene(chain[1] if len(chain) > 1 and isinstance(chain[1], QtWidgets.QGraphicsView) else None)

    def _follow_scene(self, canvas: QtWidgets.QGraphicsView | None) -> None:
        """A region in a canvas moves with its scene's layout, which no widget event reports."""
        scene = canvas.scene() if canvas is not None else None
        if scene is self._scene:
            return
        if self._scene is not None:
            self._scene.changed.disconnect(self._schedule)
        if scene is not None:
            scene.changed.connect(self._schedule)
        self._scene = scene

    def _schedule(self, *_) -> None:
        if not self._scheduled:
            self._scheduled = True
            QtCore.QTimer.singleShot(0, self, self.place)

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:  # noqa: N802 - Qt API
        moved = (QtCore.QEvent.Type.Resize, QtCore.QEvent.Type.Move, QtCore.QEvent.Type.Show, QtCore.QEvent.Type.Hide)
        if event.type() in moved:
            self._schedule()
        return False

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:  # noqa: N802 - Qt API
        painter = QtGui.QPainter(self)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        pen = QtGui.QPen(OUTLINE, 3)
        pen.setJoinStyle(QtCore.Qt.PenJoinStyle.RoundJoin)
        painter.setPen(pen)
        painter.setBrush(FILL)
        painter.drawPolygon(self._polygon)
        painter.end()


# -- a stop's state -----------------------------------------------------------------------------
def apply_stop(window: QtWidgets.QMainWindow, stop: Stop) -> None:
    """Raise the stop's view (linked again if the user unlinked it) and give the window the
    stop's selection, sentences and tokens. The view is raised first, so that the one it covers
    does not compute what nobody sees; the selection is set before the sentences, so that a view
    computed from its choice (the walkthrough, the attribution) computes the new sentence for the
    stop's choice at once (set after, the ViewSet takes the choice for the one it already shows
    while the feed of the previous choice is still running, and shows that one)."""
    st, views = stop.state, window.views
    raise_view(window, stop.view)
    views.set_linked(stop.view, True)
    views.selection.update(kind=st.kind, layer=st.layer, head=st.head, mode="head", query=st.query)
    set_inputs(window, st.source, st.target)
    window.session.go_to(st.steps)
    views.bring_up_to_date(views.frames[stop.view])


def set_inputs(window: QtWidgets.QMainWindow, source: str, target: str) -> None:
    """The sentences (and greedy decoding): re-encoded only when they change; the stop says how far
    to decode."""
    s = window.session
    greedy = type(s.strategy) is Greedy
    if (s.source, s.target) == (source, target) and s.current is not None and greedy:
        return
    window.input_bar.set_texts(source, target)
    if not greedy:
        window.step_bar.show_strategy(Greedy())
    s.set_inputs(source, target, strategy=None if greedy else Greedy(), to_end=False)


def raise_view(window: QtWidgets.QMainWindow, name: str) -> None:
    """Show view ``name``'s dock in front (the central grid has none)."""
    dock = window.docks.get(window.views.specs[name].dock_name)
    if dock is not None:
        dock.show()
        dock.raise_()


def stop_ready(window: QtWidgets.QMainWindow, stop: Stop) -> bool:
    """The stop's view shows the window's current data: nothing decoding, loading or computing."""
    s, views, name = window.session, window.views, stop.view
    if s.bundle is None or s.loading or s.running or s.pending or s.analyses.pending() or name in views.stale:
        return False
    return not views.frames[name].is_empty() and views.views[name].has_data()


# -- the panel -------------------------------------------------------------------------------------
class TourPanel(QtWidgets.QDockWidget):
    """The tour's dock (objectName ``tourPanel``): the stop's title, its counter, its text (plain
    text) and Back / Next / Leave (``tourBack``, ``tourNext``, ``tourLeave``).

    ``go(i)`` sets stop ``i``'s state and, once its view has drawn, shows its text and outline
    (``stopShown(i)``; ``ready`` is then True and ``values`` holds the measures quoted). While a
    stop is shown, a change in the window (another step, another head) explains it again.
    ``visited_stops()`` gives each stop explained since the panel opened, as last explained
    (File → Export Web Page puts them on the page). ``leave()`` hides the panel and the outline and leaves the window as it is; ``resume()`` goes
    back to the stop that was left.
    """

    stopShown = QtCore.Signal(int)
    left = QtCore.Signal()

    def __init__(self, window: QtWidgets.QMainWindow, tour: Tour):
        super().__init__(tour.labels.title, window)
        self.setObjectName("tourPanel")
        self.main = window
        self.tour = tour
        self.index = 0
        self.values: dict[str, Any] = {}
        self._visited: dict[int, tuple[dict[str, Any], str]] = {}  # stop index → its measures and the source they were read on
        self.active = False
        self.ready = False
        self._needs_apply = False
        self._applying = False
        self._started = 0.0
        self._settled = 0  # ticks the stop's view has been ready for
        self.highlight = TourHighlight(window)
        self._poll = QtCore.QTimer(self, interval=POLL_MS)
        self._poll.timeout.connect(self._tick)
        self._build()
        window.session.decodingChanged.connect(self._on_window_changed)
        window.views.selection.changed.connect(self._on_window_changed)
        self._dock_in(window)

    def _build(self) -> None:
        box = QtWidgets.QWidget(objectName="tourBox")
        layout = QtWidgets.QVBoxLayout(box)
        self.title_label = plain_label("", "tourTitle")
        font = self.title_label.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title_label.setFont(font)
        self.counter = plain_label("", "tourCounter")
        self.text_label = plain_label("", "tourText")  # quotes token pieces: never read as rich text
        self.text_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        for label in (self.title_label, self.text_label):
            label.setWordWrap(True)
        buttons = QtWidgets.QHBoxLayout()
        self.back_button = QtWidgets.QPushButton(objectName="tourBack")
        self.next_button = QtWidgets.QPushButton(objectName="tourNext")
        self.leave_button = QtWidgets.QPushButton(objectName="tourLeave")
        self.back_button.clicked.connect(self.back)
        self.next_button.clicked.connect(self.next)
        self.leave_button.clicked.connect(self.leave)
        for b in (self.back_button, self.next_button, self.leave_button):
            buttons.addWidget(b)
        scroll = QtWidgets.QScrollArea(objectName="tourTextScroll")  # a long text in a short dock scrolls
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(self.text_label)
        self.text_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        for w in (self.title_label, self.counter):
            layout.addWidget(w)
        layout.addWidget(scroll, 1)
        self.exercises = ExerciseHost(self, scroll)  # a stop's exercise, asked before its text and view show
        layout.addWidget(self.exercises.panel, 1)
        layout.addLayout(buttons)
        self.setWidget(box)
        self.setMinimumWidth(240)
        self._set_words()

    def _dock_in(self, window: QtWidgets.QMainWindow) -> None:
        """Below the top-k list; once laid out, the left column :data:`PANEL_WIDTH` wide and the
        tour :data:`PANEL_SHARE` of its height."""
        area, vertical = QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, QtCore.Qt.Orientation.Vertical
        self._layout_before = window.saveState()  # leaving the tour gives the window this layout back
        window.addDockWidget(area, self)
        topk = window.docks.get("topkDock")
        beside = topk is not None and not topk.isFloating() and window.dockWidgetArea(topk) == area
        if beside:
            window.splitDockWidget(topk, self, vertical)
        QtCore.QTimer.singleShot(0, self, lambda: self._size_in(window, topk if beside else None))

    def _size_in(self, window: QtWidgets.QMainWindow, topk: QtWidgets.QDockWidget | None) -> None:
        window.resizeDocks([self], [PANEL_WIDTH], QtCore.Qt.Orientation.Horizontal)
        if topk is not None:
            column = topk.height() + self.height()
            share = int(column * PANEL_SHARE)
            window.resizeDocks([topk, self], [column - share, share], QtCore.Qt.Orientation.Vertical)

    # -- moving through the stops ---------------------------------------------------------
    def stop(self) -> Stop:
        return self.tour.stops[self.index]

    def go(self, index: int) -> None:
        """Stop ``index``: its state set (once a model is open), then its text and outline."""
        self.index = max(0, min(int(index), len(self.tour.stops) - 1))
        self.active = True
        self.show()
        self.raise_()
        self.highlight.clear()
        self.exercises.clear()
        self._needs_apply = True
        self._wait()

    def next(self) -> None:
        if self.index + 1 < len(self.tour.stops):
            self.go(self.index + 1)

    def back(self) -> None:
        if self.index > 0:
            self.go(self.index - 1)

    def leave(self) -> None:
        """Hide the panel and the outline; the docks are laid out again as they were before the
        tour opened (the views and sentences stay as the tour left them)."""
        self._deactivate()
        self.hide()
        self.main.restoreState(self._layout_before)

    def resume(self) -> None:
        """Back to the stop that was left (its state set again)."""
        self.go(self.index)

    def set_tour(self, tour: Tour) -> None:
        """Another language's tour (the same stops): the stop shown is explained in it."""
        self.tour = tour
        self.index = min(self.index, len(tour.stops) - 1)
        self.setWindowTitle(tour.labels.title)
        self._set_words()

    def play(self, tour: Tour) -> None:
        """Another tour (a tour file opened) from its first stop; what the last one explained is forgotten."""
        self._visited.clear()
        self.exercises.forget()
        self.index = 0
        self.set_tour(tour)
        self.go(0)

    def text(self) -> str:
        return self.text_label.text()

    def visited_stops(self) -> list[tuple[Stop, str, str]]:
        """Each stop explained since the panel opened, in the tour's order: the stop (in the
        tour's language now), its text as the panel showed it when last explained (the same
        measures filled in), and the source sentence those measures were read on."""
        return [(self.tour.stops[i], fill(self.tour.stops[i].text, values), source)
                for i, (values, source) in sorted(self._visited.items())]

    # -- waiting for the view, then explaining ----------------------------------------------
    def _wait(self) -> None:
        self.ready = False
        self._settled = 0
        self._started = time.monotonic()
        self._set_words()
        self._tick()
        if not self.ready:
            self._poll.start()

    def _tick(self) -> None:
        late = time.monotonic() - self._started > READY_TIMEOUT_S
        if self._explain_mismatch():
            return
        if self._needs_apply and not self._apply():
            if late:  # no model opened in all that time: the panel waits for the next Back, Next or resume
                self._poll.stop()
            return
        self._settled = self._settled + 1 if late or stop_ready(self.main, self.stop()) else 0
        if self._settled < 2:  # ready for one more turn of the event loop: the view's layout has settled
            return
        self._poll.stop()
        self._explain()

    def _explain_mismatch(self) -> bool:
        """Say at once, in one line, that the stop does not apply to the open model (its kind of
        attention or its positional scheme is not the model's): no waiting for a view that cannot
        show it. True when it did."""
        s = self.main.session
        misfit = None if s.bundle is None or s.loading else stop_misfit(self.stop(), s.bundle.config)
        if misfit is None:
            return False
        self._poll.stop()
        self._needs_apply = False
        self.text_label.setText(translate("tour", "This stop does not apply to the open model: {why}").format(why=misfit_text(self.stop().id, *misfit)))
        self.ready = True
        return True

    def _apply(self) -> bool:
        """Set the stop's state once a model is open (False: none is yet)."""
        s = self.main.session
        if s.bundle is None or s.loading:
            return False
        self._needs_apply, self._applying = False, True
        try:
            apply_stop(self.main, self.stop())
        finally:
            self._applying = False
        return True

    def _explain(self) -> None:
        ctx = Context(self.main, self.stop())
        self.values = measure_values(ctx)
        self._visited[self.index] = (self.values, self.main.session.source)
        self.text_label.setText(fill(self.stop().text, self.values))
        self.highlight.follow(partial(region_of, ctx))  # scrolled into view while the view settles
        self.ready = True
        self.exercises.ask(self.main, self.tour, self.index)
        self.stopShown.emit(self.index)

    def _on_window_changed(self, *_) -> None:
        """The user changed the window at a stop: explain what it shows now."""
        if self.active and not self._applying and not self._needs_apply:
            self._wait()

    def _set_words(self) -> None:
        labels, stop = self.tour.labels, self.stop()
        self.title_label.setText(stop.title)
        self.title_label.setVisible(bool(stop.title))  # a teacher's stop may have none
        self.counter.setText(labels.counter.format(n=self.index + 1, total=len(self.tour.stops)))
        if self._needs_apply:  # a stop being set up (a change at a stop keeps its text until the new one)
            self.text_label.setText(labels.waiting)
        self.back_button.setText(labels.back)
        self.next_button.setText(labels.next)
        self.leave_button.setText(labels.leave)
        self.back_button.setEnabled(self.index > 0)
        self.next_button.setEnabled(self.index + 1 < len(self.tour.stops))

    def _deactivate(self) -> None:
        self.active = False
        self._needs_apply = False
        self._poll.stop()
        self.highlight.clear()
        self.exercises.clear()
        self.left.emit()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 - Qt API
        """The dock's own close button leaves the tour."""
        if self.active:
            self._deactivate()
        super().closeEvent(event)


def tour_for(language: str) -> str:
    """The tour that goes with the interface's ``language`` (English when there is none in it)."""
    return language if language in LANGUAGES else "en"


def other_tour(language: str) -> str:
    """The tour in the other language than the one that goes with the interface's ``language``."""
    return next(code for code in LANGUAGES if code != tour_for(language))


def other_tour_words(tour: str) -> tuple[str, str]:
    """The Help menu's text and tip for the tour in ``tour`` when the interface is in another
    language: the Chinese tour is named in Chinese (its readers find it in any interface), the
    English one in the interface's language."""
    if tour == "zh_CN":
        return "导览（简体中文）", "按教程的顺序，在当前模型上逐站讲解"
    return translate("tour", "Tour in English"), translate("tour", "The same tour, with its texts in English")


def start_tour(window: QtWidgets.QMainWindow, language: str = "en") -> TourPanel | None:
    """Help → Tour: open the tour in ``language`` (``en`` or ``zh_CN``) at its first stop, or
    resume the one left (in ``language`` now); ``None`` when the tour file cannot be read (the
    message bar says why)."""
    try:
        tour = load_tour(language)
    except TourError as exc:
        window.show_message("error", str(exc))
        return None
    panel = window.findChild(TourPanel, "tourPanel")
    if panel is None or panel.tour.ids() != tour.ids():  # none yet, or one playing a tour file
        return play_tour(window, tour)
    panel.set_tour(tour)
    panel.resume()
    return panel


def play_tour(window: QtWidgets.QMainWindow, tour: Tour) -> TourPanel:
    """Play ``tour`` from its first stop in the tour's panel (made when there is none): the bundled
    tour (:func:`start_tour`) and a tour file opened (Tour → Open) alike."""
    panel = window.findChild(TourPanel, "tourPanel")
    if panel is None:
        panel = TourPanel(window, tour)
        panel.go(0)
        return panel
    panel.play(tour)
    return panel
