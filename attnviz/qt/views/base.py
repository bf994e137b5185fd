"""What every view shares: a controls row, a pyqtgraph canvas, a readout line, theme/colour-map
settings and the "Export figure…" / "Export data…" context menu (:class:`FigureViewBase`); and
what the views of :class:`AttentionData` by kind share (grid, head detail, lines):

- :class:`AttentionSetsMixin`: the shown data, over ``_datasets`` (kind → data) and ``_kind``, the
  "Words" switch (``groupWords``) that shows it between words instead of pieces, and the "Content"
  switch (``contentOnly``) that drops the sink keys and renormalises each row over the others;
- :class:`ExportAllHeadsMixin`: the "Export all heads…" context-menu entry.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.content_keys import ContentFrame, content_frame, content_notes
from attnviz.core.analysis.figure_data import AttentionData, AttentionFrame, FigureData
from attnviz.core.analysis.word_groups import WordFrame, group_frame, grouping_notes, word_of_piece
from attnviz.core.data.pieces import display_piece, starts_word
from attnviz.qt.core_text import word_start_legend as word_start_legend_text
from attnviz.qt.export.files import HeadFigure, HeadFigureFactory
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice, query_axis
from attnviz.qt.views.naming import module_stem, scroll_object_name, view_object_name
from attnviz.qt.widgets.colormaps import Theme, get_theme, ui_font
from attnviz.qt.widgets.plain_text import ElidedLabel, plain_label
from attnviz.qt.widgets.scroll_canvas import scroll_vertically, set_scroll_background
from attnviz.qt.widgets.title_item import TitleItem

MAX_OPTION_TEXT = 1000  # characters of a line edit's text restored from a session file
SETTLE_PASSES = 3  # plots' ranges, then the layouts they change, then what those change: settled before a paint


def control_value(w: QtWidgets.QWidget) -> object | None:
    """The choice a control holds (a combo's index, a spin box's or slider's value, a checkable
    button's state, an editable line's text), or ``None`` for a widget that holds none."""
    if isinstance(w, QtWidgets.QLineEdit) and not w.isReadOnly():
        return w.text()
    if isinstance(w, QtWidgets.QComboBox):
        return w.currentIndex()
    if isinstance(w, (QtWidgets.QSpinBox, QtWidgets.QDoubleSpinBox, QtWidgets.QAbstractSlider)):
        return w.value()
    if isinstance(w, QtWidgets.QAbstractButton) and w.isCheckable():
        return w.isChecked()
    return None


def set_control_value(w: QtWidgets.QWidget, value: object) -> None:
    if isinstance(w, QtWidgets.QLineEdit) and isinstance(value, str):
        w.setText(value[:MAX_OPTION_TEXT])
        w.editingFinished.emit()  # what typing and Enter would have done
    elif isinstance(w, QtWidgets.QComboBox) and type(value) is int and 0 <= value < w.count():
        w.setCurrentIndex(value)
    elif isinstance(w, QtWidgets.QDoubleSpinBox) and isinstance(value, (int, float)) and not isinstance(value, bool):
        w.setValue(float(value))
    elif isinstance(w, (QtWidgets.QSpinBox, QtWidgets.QAbstractSlider)) and type(value) is int:
        w.setValue(value)
    elif isinstance(w, QtWidgets.QAbstractButton) and w.isCheckable() and isinstance(value, bool):
        w.setChecked(value)


class FigureViewBase(QtWidgets.QWidget):
    """Base of the views: ``controls`` (a row of selectors) above ``canvas`` (the figure, its
    ``title`` in the first row; in a scroll area, ``scroll``, where the view asks for one with
    :meth:`_scroll_canvas`), ``readout`` (value under the mouse) below. The base keeps these in
    the theme.

    Its objectName comes from its module (``headDetailView``, :mod:`attnviz.qt.views.naming`).
    Subclasses fill the canvas once in ``__init__`` and implement :meth:`render`, ``figure_title``
    and ``figure_data``; ``transient_items`` lists items hidden while exporting.

    The view protocol: :meth:`set_data` keeps the one data object it is given in ``given`` and draws
    it with the view's :meth:`render` (the view owns no model and computes nothing that needs one;
    it overrides ``render``, never ``set_data``), :meth:`has_data` says whether that data has
    something to draw (:meth:`_drawable`), :meth:`apply` takes a choice's selectors, ``chose(changes)``
    says what the user picked in it, :meth:`options`/:meth:`set_options` save and restore its
    own controls. Its spec (:class:`~attnviz.qt.views.spec.ViewSpec`) says where the data comes from.

    Linking (see :mod:`attnviz.qt.selection`): whoever links the view calls
    :meth:`set_link_state`, which shows the "Linked" toggle and a caption of the selection it
    follows at the right of the controls; ``linkToggled(bool)`` when the user flips it. A view
    emits ``queryHovered(kind, row)`` (−1: none) while the mouse is over a query row and draws a
    row hovered elsewhere in :meth:`show_linked_query`.
    """

    linkToggled = QtCore.Signal(bool)
    queryHovered = QtCore.Signal(str, int)
    chose = QtCore.Signal(dict)  # the user picked selectors in the view: fields of Selection (kind, layer, head, mode, query)
    optionsChanged = QtCore.Signal()  # an option its data is computed from changed (a spec that reads_options)

    def __init__(self, parent: QtWidgets.QWidget | None = None, *, theme: Theme | str | None = None, title_span: int = 1):
        """``title_span``: the columns the figure's title spans in the canvas's first row (0: the
        title is not placed, for a figure whose panels carry their own)."""
        super().__init__(parent)
        self.setObjectName(view_object_name(module_stem(type(self))))
        self.theme = get_theme(theme)
        self._colormap: str | None = None  # None: the theme's default
        self.provenance: Callable[[], dict[str, object]] | None = None  # what its data files say they are of
        self.given: object = None  # the data set_data was given last (None: none yet)
        self.controls = QtWidgets.QHBoxLayout()
        self.controls.setContentsMargins(6, 4, 6, 0)
        self.controls.setSpacing(6)
        self.canvas = pg.GraphicsLayoutWidget()
        self.canvas.setObjectName("figureCanvas")
        self.canvas.ci.layout.setContentsMargins(6, 6, 6, 6)
        self.canvas.setMinimumSize(160, 120)
        self.canvas.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.title = TitleItem(self.theme)  # the figure's title: the view sets its text
        if title_span:
            self.canvas.addItem(self.title, row=0, col=0, colspan=title_span)
        self.scroll: QtWidgets.QScrollArea | None = None  # the canvas's scroll area, where the view has one (_scroll_canvas)
        self.readout = plain_label(" ", "readout")  # shows token pieces
        self.readout.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readout.setFont(ui_font(9))
        self.readout.setContentsMargins(8, 2, 8, 4)
        self.readout.setMinimumWidth(10)
        self.readout.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self.link_caption = ElidedLabel("", "linkCaption")  # shortened with "…" where the row is narrow
        self.link_caption.setFont(ui_font(8.5))
        self.link_caption.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        self.link_button = QtWidgets.QToolButton(objectName="linkButton", text=translate("base", "Linked"), checkable=True)
        self.link_button.setToolTip(translate("base", "Linked: this view follows the selection shared by every linked view; "
                                              "unlink it to keep its own choice (e.g. to compare two heads)"))
        self.link_button.toggled.connect(self._on_link_button)
        self.computing_badge = plain_label(translate("base", "computing…"), "computingBadge")  # while the view's analysis runs
        self.computing_badge.setStyleSheet("QLabel#computingBadge { color: palette(placeholder-text); }")
        for w in (self.link_caption, self.link_button, self.computing_badge):
            w.hide()
        top = QtWidgets.QHBoxLayout()
        top.setContentsMargins(0, 0, 6, 0)
        top.setSpacing(4)
        top.addLayout(self.controls, 3)
        top.addWidget(self.computing_badge)
        top.addWidget(self.link_caption, 2)
        top.addWidget(self.link_button)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.canvas, 1)
        layout.addWidget(self.readout)
        self.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.DefaultContextMenu)
        self._apply_canvas_theme()

    # helpers for subclasses ----------------------------------------------------
    def _add_control(self, label: str, widget: QtWidgets.QWidget) -> QtWidgets.QWidget:
        if label:
            lab = QtWidgets.QLabel(label)
            lab.setBuddy(widget)
            self.controls.addWidget(lab)
        self.controls.addWidget(widget)
        return widget

    def _scroll_canvas(self, *, fit: bool = True) -> None:
        """Put the canvas in a scroll area, ``self.scroll`` (:func:`scroll_vertically`; ``fit``: the
        canvas fills it, grown to what its figure needs): the controls stay in view and a dock
        smaller than the figure scrolls it. Called once, after the canvas's least size is set."""
        name = scroll_object_name(module_stem(type(self)))
        self.scroll = scroll_vertically(self.canvas, name, self.theme.background, fit=fit)

    def _apply_canvas_theme(self) -> None:
        self.canvas.setBackground(self.theme.background)
        self.readout.setStyleSheet(f"color: {self.theme.muted};")
        if self.scroll is not None:
            set_scroll_background(self.scroll, self.theme.background)

    # options: the values of the view's own named controls ------------------------------------
    def _option_controls(self) -> dict[str, QtWidgets.QWidget]:
        """The view's controls that hold a choice, by objectName (a name used twice is left out, and
        Qt's own parts of a control, such as a spin box's line edit, ``qt_…``)."""
        seen: dict[str, list[QtWidgets.QWidget]] = {}
        for w in self.findChildren(QtWidgets.QWidget):
            if w.objectName() and not w.objectName().startswith("qt_") and w is not self.link_button and control_value(w) is not None:
                seen.setdefault(w.objectName(), []).append(w)
        return {name: ws[0] for name, ws in seen.items() if len(ws) == 1}

    def options(self) -> dict[str, object]:
        """What the user set in this view's own controls: objectName → value (JSON types)."""
        return {name: control_value(w) for name, w in self._option_controls().items()}

    def set_options(self, options: dict[str, object]) -> None:
        """Set the controls named in ``options`` (unknown names and wrong types are ignored); the
        view reacts as to the user's choice."""
        controls = self._option_controls()
        for name, value in options.items():
            if name in controls:
                set_control_value(controls[name], value)

    # linking -------------------------------------------------------------------
    def set_link_state(self, linked: bool, caption: str) -> None:
        """Show the link toggle (no signal) and ``caption``: what the view follows."""
        blocked = self.link_button.blockSignals(True)
        self.link_button.setChecked(linked)
        self.link_button.blockSignals(blocked)
        self.link_button.setText(translate("base", "Linked") if linked else translate("base", "Unlinked"))
        self.link_caption.set_full_text(caption)
        self.link_caption.show()
        self.link_button.show()

    def is_linked(self) -> bool:
        return self.link_button.isChecked()

    def link_text(self) -> str:
        """The caption in full: the selection the view follows, or its own choice."""
        return self.link_caption.full_text()

    def _on_link_button(self, linked: bool) -> None:
        self.link_button.setText(translate("base", "Linked") if linked else translate("base", "Unlinked"))
        self.linkToggled.emit(linked)

    def show_linked_query(self, axis: str, row: int) -> None:
        """Mark query ``row`` of ``axis`` pieces (``"source"``/``"target"``, see
        :func:`attnviz.qt.selection.query_axis`), hovered in another view; −1: none. Default: nothing."""

    # settings ------------------------------------------------------------------
    def set_theme(self, theme: Theme | str) -> None:
        """Switch light/dark (``"light"``, ``"dark"`` or a ``Theme``)."""
        self.theme = get_theme(theme)
        self._apply_canvas_theme()
        self.title.apply_theme(self.theme)
        self._on_theme_changed()

    def _on_theme_changed(self) -> None:
        """Subclasses re-style their own items (the base has re-styled the canvas, the title and
        the scroll area)."""

    def colormap(self) -> str:
        return self._colormap or self.theme.colormap

    def set_colormap(self, name: str) -> None:
        """The sequential colour map for weights (see ``colormaps.SEQUENTIAL_COLORMAPS``)."""
        self._colormap = name
        self._on_colormap_changed()

    def _on_colormap_changed(self) -> None:
        """Subclasses apply ``self.colormap()``."""

    # figure protocol ------------------------------------------------------------
    def figure_canvas(self) -> QtWidgets.QGraphicsView:
        return self.canvas

    def figure_title(self) -> str:
        raise NotImplementedError

    def figure_data(self) -> FigureData:
        raise NotImplementedError

    def transient_items(self) -> list[QtWidgets.QGraphicsItem]:
        return []

    def figure_rect(self) -> QtCore.QRectF | None:
        """The scene rectangle that holds the drawing, for files (``None``: the whole canvas)."""
        return None

    @contextlib.contextmanager
    def export_mode(self) -> Iterator[None]:
        items = [i for i in self.transient_items() if i is not None]
        states = [(i, i.isVisible()) for i in items]
        for i in items:
            i.setVisible(False)
        try:
            yield
        finally:
            for i, visible in states:
                i.setVisible(visible)

    def set_data(self, data: object) -> None:
        """Keep ``data`` (``given``), what the view's spec computes for a frame (one object;
        ``show`` is QWidget's, hence the name), and draw it (:meth:`render`). Views override
        ``render``, not this."""
        self.given = data
        self.render(data)

    def render(self, data: object) -> None:
        """Draw ``data``, the view's own part of :meth:`set_data` (``given`` holds it already):
        each view implements it."""
        raise NotImplementedError(f"{type(self).__name__} does not draw data yet")

    def settle(self) -> None:
        """Lay the figure out now: its plots' ranges (pyqtgraph leaves them to the paint) and the
        layouts those change, so that new data or a new choice is painted once, not once per
        pass of a layout that a paint set off."""
        scene = self.canvas.scene()
        for _ in range(SETTLE_PASSES):
            scene.prepareForPaint()
            QtWidgets.QApplication.sendPostedEvents(None, QtCore.QEvent.Type.LayoutRequest)

    def apply(self, choice: ViewChoice) -> None:
        """Take the selectors of ``choice`` that the view has (``None`` fields: keep what it shows)."""

    def has_data(self) -> bool:
        """Whether the view was given data with something to draw (:meth:`_drawable`)."""
        return self.given is not None and self._drawable(self.given)

    def _drawable(self, data: object) -> bool:
        """Whether ``data`` (given, not ``None``) has something to draw; views whose data can be
        there yet empty (no layers, no result) say so here. Default: any data."""
        return True

    def why_empty(self) -> str | None:
        """Why the view has nothing to draw for the data it was given, in one line (``None``: the
        spec's ``empty`` says it)."""
        return None

    # context menu -----------------------------------------------------------------
    def build_context_menu(self) -> QtWidgets.QMenu:
        """The view's context menu ("Export figure…", "Export data…", and any extras)."""
        menu = QtWidgets.QMenu(self)
        fig = menu.addAction(translate("base", "Export figure…"))
        fig.setObjectName("exportFigureAction")
        fig.setStatusTip(translate("base", "Save this view as PNG, SVG or PDF"))
        fig.triggered.connect(self.export_figure_dialog)
        data = menu.addAction(translate("base", "Export data…"))
        data.setObjectName("exportDataAction")
        data.setStatusTip(translate("base", "Save the numbers behind this view as CSV or NPZ"))
        data.triggered.connect(self.export_data_dialog)
        enabled = self.has_data()
        fig.setEnabled(enabled)
        data.setEnabled(enabled)
        self._extend_context_menu(menu)
        return menu

    def _extend_context_menu(self, menu: QtWidgets.QMenu) -> None:
        """Subclasses add entries."""

    def contextMenuEvent(self, event: QtGui.QContextMenuEvent) -> None:
        menu = self.build_context_menu()
        menu.setObjectName("figureContextMenu")
        menu.aboutToHide.connect(menu.deleteLater)
        menu.popup(event.globalPos())
        event.accept()

    def export_figure_dialog(self) -> None:
        from attnviz.qt.export.dialogs import export_figure_dialog

        export_figure_dialog(self, self)

    def export_data_dialog(self) -> None:
        from attnviz.qt.export.dialogs import export_data_dialog

        metadata = {**(self.provenance() if self.provenance is not None else {}), **self.data_notes()}
        export_data_dialog(self, self, metadata=metadata or None)

    def data_notes(self) -> dict[str, object]:
        """What the view's data files say besides what they are of (its provenance): nothing, unless a view says more."""
        return {}


def make_combo(object_name: str, tooltip: str) -> QtWidgets.QComboBox:
    combo = QtWidgets.QComboBox()
    combo.setObjectName(object_name)
    combo.setToolTip(tooltip)
    combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
    return combo


def set_combo_items(combo: QtWidgets.QComboBox, items: list[tuple[str, object]], current_data: object) -> None:
    """Replace a combo's items only when they differ; keep ``current_data`` selected. No signals."""
    existing = [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())]
    blocked = combo.blockSignals(True)
    try:
        if existing != items:
            combo.clear()
            for text, data in items:
                combo.addItem(text, data)
        idx = combo.findData(current_data)
        combo.setCurrentIndex(idx if idx >= 0 else 0)
    finally:
        combo.blockSignals(blocked)


#: Axis titles (rows = queries, columns = keys): a decoder row is the token fed in, which
#: predicts the next one (row y_t predicts y_t+1). Shown as ``translate("base", title)``.
AXIS_TITLES: dict[str, tuple[str, str]] = {
    "encoder": (QT_TRANSLATE_NOOP("base", "queries · source (rows)"), QT_TRANSLATE_NOOP("base", "keys · source (columns)")),
    "decoder": (QT_TRANSLATE_NOOP("base", "fed token (predicts next) · rows"), QT_TRANSLATE_NOOP("base", "keys · target (columns)")),
    "cross": (QT_TRANSLATE_NOOP("base", "fed token (predicts next) · rows"), QT_TRANSLATE_NOOP("base", "keys · source (columns)")),
}
#: The legend of the current step's row outline (shown as ``translate("base", CURRENT_ROW_LEGEND)``).
CURRENT_ROW_LEGEND = QT_TRANSLATE_NOOP("base", "current step")
#: The objectName of the attention views' "Words" switch (an option saved with the view's controls).
GROUP_WORDS = "groupWords"
#: What a matrix between words is (shown as ``translate("base", WORDS_LEGEND)``; in files, :func:`~attnviz.core.analysis.word_groups.grouping_notes`).
WORDS_LEGEND = QT_TRANSLATE_NOOP("base", "words: keys summed, queries averaged over a word's pieces")
#: The objectName of the attention views' "Content" switch (an option saved with the view's controls).
CONTENT_ONLY = "contentOnly"
#: What a matrix of content keys is (shown as ``translate("base", CONTENT_LEGEND)``; in files, :func:`~attnviz.core.analysis.content_keys.content_notes`).
CONTENT_LEGEND = QT_TRANSLATE_NOOP("base", "content keys only: each row renormalised over the keys that are not SOS, EOS or punctuation")
#: What an empty row of content keys is (shown as ``translate("base", EMPTY_ROW_LEGEND)``).
EMPTY_ROW_LEGEND = QT_TRANSLATE_NOOP("base", "empty row: all its weight was on SOS, EOS or punctuation")


def piece_text(labels: tuple[str, ...], index: int) -> str:
    """``“piece” (pos 3)``: a token piece as shown, and its 1-based position."""
    return translate("base", "“{piece}” (pos {pos})").format(piece=display_piece(labels[index]), pos=index + 1)


def query_text(kind: str, labels: tuple[str, ...], index: int, predicted: tuple[str, ...] = ()) -> str:
    """A query row in a read-out: ``query “我” (pos 1)`` for source rows; for target rows
    ``fed “I” (pos 2) → predicted “love”``: row y_t is fed in and predicts y_t+1, which is
    ``predicted[index]`` when given, else the next row's piece (nothing after the last row)."""
    if query_axis(kind) == "source":
        return translate("base", "query {piece}").format(piece=piece_text(labels, index))
    return fed_text(labels, index, predicted, translate("base", " (pos {pos})").format(pos=index + 1))


def fed_text(labels: tuple[str, ...], index: int, predicted: tuple[str, ...] = (), where: str = "") -> str:
    """``fed “I” → predicted “love”``: target row ``index`` (``where`` follows the fed piece)."""
    nxt = predicted[index] if index < len(predicted) else (labels[index + 1] if index + 1 < len(labels) else None)
    after = translate("base", " → predicted “{piece}”").format(piece=display_piece(nxt)) if nxt is not None else ""
    return translate("base", "fed “{piece}”{where}{after}").format(piece=display_piece(labels[index]), where=where, after=after)


def word_start_legend(*label_sets: tuple[str, ...]) -> tuple[tuple[str, str, str], ...]:
    """The word-start legend entry when some shown piece starts a word, else none."""
    if any(starts_word(p) for labels in label_sets for p in labels):
        return (("", "", word_start_legend_text()),)
    return ()


class PredictedRowsMixin:
    """What each target row predicted, for the read-outs of views with target rows (the
    attention views and the masks): ``_predicted``, set by :meth:`set_predictions`."""

    _predicted: tuple[str, ...] = ()

    def set_predictions(self, pieces: tuple[str, ...]) -> None:
        """What each target row produced (row y_t predicts ``pieces[t]``), for the read-outs;
        without it a row's prediction is read off the next row."""
        self._predicted = tuple(pieces)


class AttentionSetsMixin(PredictedRowsMixin):
    """``data`` and ``kind`` of a view of attention by kind. The state is the mixin's own:
    ``_datasets`` (kind → data, in ``KINDS`` order) and ``_kind`` (the one shown), which its hosts
    set in ``__init__`` and ``render``.

    The "Words" switch (a check box named :data:`GROUP_WORDS`, placed by the host from
    :meth:`_group_words_box`): on, the view shows its frame between words, as the core groups it
    (:func:`~attnviz.core.analysis.word_groups.group_frame`: keys summed, queries averaged over a
    word's pieces), and ``_datasets`` holds that. The host's ``render`` hands its frame to
    :meth:`_take_frame`; flipping the switch calls ``render`` again with the same frame. Query
    rows hovered in or shown from other views are pieces' rows (:meth:`_piece_row`, :meth:`_word_row`).

    The "Content" switch (a check box named :data:`CONTENT_ONLY`, from :meth:`_content_only_box`):
    on, the shown frame (of pieces or, grouped first, of words) loses its sink keys, SOS, EOS and
    punctuation, and each row is renormalised over the keys left
    (:func:`~attnviz.core.analysis.content_keys.content_frame`); query rows are kept, so the row
    mapping is the same. :meth:`_original` gives a hovered cell's weight before renormalising.
    """

    _datasets: dict[str, AttentionData]
    _kind: str | None
    _frame: AttentionFrame | None = None  # the frame given, between pieces
    _words: WordFrame | None = None  # that frame between words, grouped when first shown
    _content: ContentFrame | None = None  # the frame shown (pieces or words) over content keys, made when first shown
    group_words: QtWidgets.QCheckBox | None = None
    content_box: QtWidgets.QCheckBox | None = None

    def _query_text(self, index: int) -> str:
        d = self.data()
        return query_text(d.kind, d.query_labels, index, self._predicted) if d is not None else ""

    def data(self) -> AttentionData | None:
        return self._datasets.get(self._kind) if self._kind else None

    def kind(self) -> str | None:
        return self._kind

    def given_kind(self, choice: ViewChoice) -> str | None:
        """The choice's kind when this view was given it (a selection may name a kind the open
        model has not, e.g. encoder attention of a decoder-only model: the view keeps its own)."""
        return choice.kind if choice.kind in self._datasets else None

    def _require_kind(self, kind: str) -> None:
        """Raise ``ValueError`` unless ``kind`` was given to this view."""
        if kind not in self._datasets:
            raise ValueError(f"no {kind!r} attention was given to this view")

    def _switch_box(self, text: str, object_name: str, tooltip: str) -> QtWidgets.QCheckBox:
        """A check box that switches how the frame is shown (``_on_switch``)."""
        box = QtWidgets.QCheckBox(text, objectName=object_name)
        box.setToolTip(tooltip)
        box.toggled.connect(self._on_switch)
        return box

    def _group_words_box(self) -> QtWidgets.QCheckBox:
        """The "Words" switch, made once; its host places it among its controls."""
        self.group_words = self._switch_box(translate("base", "Words"), GROUP_WORDS, translate(
            "base", "Group the pieces into words (Chinese by a dictionary, the other side by its word marks): "
                    "a key word's weight is the sum over its pieces, a query word's row the mean of its pieces' rows"))
        return self.group_words

    def _content_only_box(self) -> QtWidgets.QCheckBox:
        """The "Content" switch, made once; its host places it beside "Words"."""
        self.content_box = self._switch_box(translate("base", "Content"), CONTENT_ONLY, translate(
            "base", "Content keys only: leave out the keys SOS, EOS and punctuation, where many heads park "
                    "their attention, and renormalise each row over the keys left"))
        return self.content_box

    def _take_frame(self, frame: AttentionFrame) -> None:
        """Keep ``frame`` and show it, between words where the switch is on: ``_datasets`` and the predictions."""
        if frame is not self._frame:
            self._frame, self._words = frame, None  # _content stays: its encoder's data may be the new frame's
        shown = self._shown_frame()
        self._datasets = dict(shown.sets)
        self.set_predictions(shown.predicted)

    def _shown_frame(self) -> AttentionFrame:
        """The frame between pieces or words, then over its content keys where that switch is on."""
        if not self.by_word():
            frame = self._frame
        else:
            if self._words is None:
                self._words = group_frame(self._frame)
            frame = self._words
        if not self.content_only():
            return frame
        if self._content is None or self._content.source is not frame:
            self._content = content_frame(frame, self._content)
        return self._content

    def by_word(self) -> bool:
        """The switch is on: the view shows words (when it has a frame)."""
        return self.group_words is not None and self.group_words.isChecked()

    def set_by_word(self, on: bool) -> None:
        if self.group_words is not None:
            self.group_words.setChecked(bool(on))

    def content_only(self) -> bool:
        """The "Content" switch is on: the view shows content keys only."""
        return self.content_box is not None and self.content_box.isChecked()

    def set_content_only(self, on: bool) -> None:
        if self.content_box is not None:
            self.content_box.setChecked(bool(on))

    def _on_switch(self, _on: bool) -> None:
        if self._frame is not None:
            self.render(self._frame)

    def _switch_legend(self, shown: np.ndarray | None = None) -> tuple[tuple[str, str, str], ...]:
        """The legend lines of the switches that are on; with content keys only, a line for the
        empty rows when ``shown`` (``[..., query, key]``, what the view draws) has one."""
        words = (("", "", translate("base", WORDS_LEGEND)),) if self._shown_spans() is not None else ()
        if not self.content_only():
            return words
        empty = shown is not None and shown.size > 0 and bool(np.isnan(shown).all(axis=-1).any())
        return (*words, ("", "", translate("base", CONTENT_LEGEND)), *((("", "", translate("base", EMPTY_ROW_LEGEND)),) if empty else ()))

    def _original(self, matrix_of: Callable[[AttentionData], np.ndarray]) -> np.ndarray | None:
        """With content keys only: the ``[query, key]`` matrix ``matrix_of`` picks from the shown
        kind's data before renormalising, its columns the shown keys'; else ``None``."""
        c = self._content if self.content_only() else None
        if c is None or c.source is None or self._kind not in c.keys:
            return None
        return np.asarray(matrix_of(c.source.sets[self._kind]))[:, list(c.keys[self._kind])]

    def _before_text(self, value: float, original: float) -> str:
        """For a read-out: a content key's weight before renormalising, over all keys (an empty row says why it is empty)."""
        if math.isnan(value):
            return "  ·  " + translate("base", EMPTY_ROW_LEGEND)
        return translate("base", "  ·  {value:.4f} over all keys").format(value=original)

    def data_notes(self) -> dict[str, object]:
        """A data file of words, or of content keys only, says so (nothing for pieces)."""
        notes = grouping_notes() if self._shown_spans() is not None else {}
        return {**notes, **content_notes()} if self.content_only() else notes

    def _shown_spans(self) -> tuple | None:
        """The shown kind's (query spans, key spans), when it shows words."""
        frame = self._words if self.by_word() else None
        return frame.spans.get(self._kind) if frame is not None else None

    def _piece_row(self, row: int) -> int:
        """The piece row a shown query row stands for (a word's first piece); −1 stays −1."""
        spans = self._shown_spans()
        return spans[0][row][0] if spans is not None and 0 <= row < len(spans[0]) else row

    def _word_row(self, row: int) -> int:
        """The shown query row of piece row ``row`` (the word that holds it); −1 stays −1."""
        spans = self._shown_spans()
        return word_of_piece(spans[0], row) if spans is not None and row >= 0 else row


class ExportAllHeadsMixin:
    """Adds "Export all heads…" (one figure per layer and head of :meth:`data`) to the context menu.

    Each head is drawn by a view ``head_figure`` builds (the registry gives the head-detail view's
    class); a view that draws one head itself draws them with its own class when none is given.
    """

    head_figure: HeadFigureFactory | None = None

    def all_heads_figure(self) -> HeadFigureFactory | None:
        """What draws each head of "Export all heads…"; ``None``: nothing can."""
        if self.head_figure is not None:
            return self.head_figure
        return type(self) if isinstance(self, HeadFigure) else None

    def _extend_context_menu(self, menu: QtWidgets.QMenu) -> None:
        act = menu.addAction(translate("base", "Export all heads…"))
        act.setObjectName("exportAllHeadsAction")
        act.setStatusTip(translate("base", "Write one figure per layer and head"))
        act.setEnabled(self.has_data() and self.all_heads_figure() is not None)
        act.triggered.connect(self.export_all_heads_dialog)

    def export_all_heads_dialog(self) -> None:
        from attnviz.qt.export.dialogs import export_all_heads_dialog

        d, make_view = self.data(), self.all_heads_figure()
        if d is not None and make_view is not None:
            export_all_heads_dialog(self, make_view, d, theme=self.theme, colormap=self.colormap())


class LayerHeadChoice:
    """The layer and head a view shows (0-based), offered in its two combo boxes and kept within
    the counts of the view's data; the view reacts to the combos' ``currentIndexChanged``."""

    def __init__(self, layer_combo: QtWidgets.QComboBox, head_combo: QtWidgets.QComboBox):
        self.layer_combo, self.head_combo = layer_combo, head_combo
        self.layer = 0
        self.head = 0

    @property
    def index(self) -> tuple[int, int]:
        """``(layer, head)``, to index a ``[layer, head, ...]`` array."""
        return self.layer, self.head

    def set(self, layer: int | None = None, head: int | None = None) -> None:
        if layer is not None:
            self.layer = int(layer)
        if head is not None:
            self.head = int(head)

    def fit(self, n_layers: int, n_heads: int) -> None:
        """Keep the choice within ``n_layers`` × ``n_heads`` (unchanged when there are none) and
        offer those in the combos (1-based labels; no signals)."""
        if n_layers and n_heads:
            self.layer = min(max(self.layer, 0), n_layers - 1)
            self.head = min(max(self.head, 0), n_heads - 1)
        set_combo_items(self.layer_combo, [(str(i + 1), i) for i in range(n_layers)], self.layer)
        set_combo_items(self.head_combo, [(str(i + 1), i) for i in range(n_heads)], self.head)

    def read(self) -> None:
        """Take the combos' choice (what the user picked)."""
        self.layer = int(self.layer_combo.currentData() or 0)
        self.head = int(self.head_combo.currentData() or 0)


class LayerHeadViewMixin:
    """``select``/``apply``/``layer``/``head`` of a view that shows one layer and head of one kind
    (compare, teacher vs free, masks): the view holds ``layer_head`` (:class:`LayerHeadChoice`),
    fits it to its data in ``_fit_choice`` and redraws the chosen head in ``_show_choice``."""

    layer_head: LayerHeadChoice

    def select(self, layer: int | None = None, head: int | None = None) -> None:
        self.layer_head.set(layer, head)
        self._fit_choice()
        self._show_choice()

    def apply(self, choice) -> None:
        """The selected layer and head (of the one kind the view shows)."""
        self.select(layer=choice.layer, head=choice.head)

    def layer(self) -> int:
        return self.layer_head.layer

    def head(self) -> int:
        return self.layer_head.head
