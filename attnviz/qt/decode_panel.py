"""The inputs and the stepping controls: source/target lines, examples, strategy, step buttons,
generated-token chips, the next-token top-k list (click or Enter forces a token) and the beams."""

from __future__ import annotations

import html

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.data.examples import ExampleSentence, InputHints, hints_for
from attnviz.core.data.pieces import display_piece
from attnviz.core.data.source_map import map_source
from attnviz.core.decoding.strategies import BEAM_WIDTH, SEED, TEMPERATURE, TOP_K, TOP_P, BeamSearch, Greedy, Sampling
from attnviz.qt.core_text import empty_source_text, word_start_legend
from attnviz.qt.i18n import translate
from attnviz.qt.session import Session
from attnviz.qt.source_info import READ_CORPUS_AFTER_MS, QtSourceInfo
from attnviz.qt.state import QT_INT_MAX
from attnviz.qt.widgets.colormaps import ui_font
from attnviz.qt.widgets.plain_text import plain_label, tooltip_text
from attnviz.qt.workers import FunctionWorker, while_alive

STRATEGIES = ("greedy", "beam", "sample")  # the strategy combo's keys (its itemData), in its order
MAX_INPUT_CHARS = 20_000  # a typed or pasted sentence at most: the model's position table decides how many tokens are kept


def strategy_name(key: str) -> str:
    """The strategy combo's text for ``key`` (one of :data:`STRATEGIES`)."""
    return {"greedy": translate("decode_panel", "Greedy"), "beam": translate("decode_panel", "Beam search"),
            "sample": translate("decode_panel", "Sampling")}[key]


def topk_title() -> str:
    return translate("decode_panel", "Top-k at step t: P(y_t | y_<t, x)")


def examples_placeholder() -> str:
    """The examples combo's first item: short enough to show in full at any width."""
    return translate("decode_panel", "Examples…")


def example_label(example: ExampleSentence) -> str:
    """An example as the combo lists it: the sentence and where the model's corpus has it."""
    where = {"train": translate("decode_panel", "seen in training"), "valid": translate("decode_panel", "held out (valid)"),
             "test": translate("decode_panel", "held out (test)"), "": translate("decode_panel", "everyday sentence")}
    return translate("decode_panel", "{sentence}  —  {where}").format(
        sentence=example.source, where=where.get(example.split, translate("decode_panel", "new sentence")))


def placeholder_text(hints: InputHints) -> str:
    """The source line's placeholder for the open model: what it reads, with its first example
    (a bundle's own placeholder is shown as its examples file writes it)."""
    kind, detail = hints.subject
    if kind == "own":
        return hints.placeholder
    if kind == "symbols":
        what = (translate("decode_panel", "Symbols ({alphabet}) separated by spaces").format(alphabet=detail) if detail
                else translate("decode_panel", "Symbols separated by spaces"))
    else:
        what = (translate("decode_panel", "Source sentence ({language})").format(language=detail) if detail
                else translate("decode_panel", "Source sentence"))
    if not hints.examples:
        return what
    return translate("decode_panel", "{what}, e.g. {example}").format(what=what, example=hints.examples[0].source)


class QtInputBar(QtWidgets.QWidget):
    """Source (and optional target) sentence, with the open model's example sentences and
    placeholder (``examples.hints_for``); hovering the source shows how each character maps to the
    model's pieces; ``source_info`` (below) warns about UNK and shows the confidence cue."""

    @staticmethod
    def source_tip() -> str:
        return translate("decode_panel", "The sentence the encoder reads. Editing it re-encodes and restarts decoding.")

    def __init__(self, session: Session, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.source_edit = QtWidgets.QLineEdit(objectName="sourceEdit")
        self.source_edit.setPlaceholderText(translate("decode_panel", "Source sentence (中文), e.g. 我喜欢吃鱼。"))
        self.source_edit.setToolTip(self.source_tip())
        self.source_edit.setMaxLength(MAX_INPUT_CHARS)
        self.target_edit = QtWidgets.QLineEdit(objectName="targetEdit")
        self.target_edit.setPlaceholderText(translate("decode_panel", "Optional target (a translation): teacher-forced mode, SOS + y in, y + EOS out"))
        self.target_edit.setToolTip(translate("decode_panel", "Type a translation to see, for every position, what the model predicts "
                                                              "with the right prefix (teacher forcing)."))
        self.target_edit.setClearButtonEnabled(True)
        self.target_edit.setMaxLength(MAX_INPUT_CHARS)
        self.example_combo = QtWidgets.QComboBox(objectName="exampleCombo")
        self.example_combo.setToolTip(translate("decode_panel", "Example sentences: some were seen in training, some are held out"))
        self.example_combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.example_combo.setMinimumContentsLength(len(examples_placeholder()) + 1)  # the placeholder is never elided
        self.source_edit.setMinimumWidth(140)
        form = QtWidgets.QGridLayout(self)
        form.setContentsMargins(6, 6, 6, 2)
        self.source_label = QtWidgets.QLabel(translate("decode_panel", "Source"), objectName="sourceLabel")
        form.addWidget(self.source_label, 0, 0)
        form.addWidget(self.source_edit, 0, 1)
        form.addWidget(self.example_combo, 0, 2, 1, 2)
        self.reference_button = QtWidgets.QToolButton(objectName="useReferenceButton", text=translate("decode_panel", "Use the reference"))
        self.reference_button.setToolTip(translate("decode_panel", "The open example has a reference translation: feed it to the decoder (teacher forcing)"))
        self.reference_button.clicked.connect(self.use_reference)
        self.target_label = QtWidgets.QLabel(translate("decode_panel", "Target"), objectName="targetLabel")
        form.addWidget(self.target_label, 1, 0)
        form.addWidget(self.target_edit, 1, 1, 1, 2)
        form.addWidget(self.reference_button, 1, 3)
        self.source_info = QtSourceInfo(session)
        form.addWidget(self.source_info, 2, 0, 1, 4)
        form.setColumnStretch(1, 3)
        form.setColumnStretch(2, 1)
        self._debounce = QtCore.QTimer(self, singleShot=True, interval=450)
        self._debounce.timeout.connect(self._apply)
        self.source_edit.textEdited.connect(lambda _t: self._debounce.start())
        self.target_edit.textEdited.connect(lambda _t: self._debounce.start())
        self.source_edit.returnPressed.connect(self._on_return)
        self.target_edit.returnPressed.connect(self._on_return)
        self.target_edit.textChanged.connect(self._on_target_cleared)
        self.example_combo.activated.connect(self._on_example)
        self._examples: list = []
        self._hints_worker: FunctionWorker | None = None
        self._hints_due = None  # the model whose examples are read once its first sentence is decoded
        self.source_edit.textChanged.connect(self._update_source_tooltip)
        self.source_edit.textChanged.connect(self._update_reference_button)
        self.target_edit.textChanged.connect(self._update_reference_button)
        session.modelChanged.connect(self._on_model_changed)
        self._update_reference_button()

    def set_examples(self, examples: list) -> None:
        self._examples = list(examples)
        self.example_combo.clear()
        self.example_combo.addItem(examples_placeholder(), None)
        for e in self._examples:
            self.example_combo.addItem(example_label(e), e)
            if e.reference:
                self.example_combo.setItemData(self.example_combo.count() - 1,
                                               tooltip_text(translate("decode_panel", "Reference: {reference}").format(reference=e.reference)),
                                               QtCore.Qt.ItemDataRole.ToolTipRole)

    def set_texts(self, source: str, target: str) -> None:
        with QtCore.QSignalBlocker(self.source_edit), QtCore.QSignalBlocker(self.target_edit):
            self.source_edit.setText(source)
            self.target_edit.setText(target)
        self._update_reference_button()

    def reference(self) -> str:
        """The reference translation of the example whose source is typed ("" when there is none)."""
        src = self.source_edit.text().strip()
        return next((e.reference for e in self._examples if e.reference and e.source.strip() == src), "")

    def _update_reference_button(self, *_) -> None:
        ref = self.reference()
        self.reference_button.setEnabled(bool(ref) and self.target_edit.text() != ref)
        self.reference_button.setToolTip(
            tooltip_text(translate("decode_panel", "Teacher-force the reference: {reference}").format(reference=ref)) if ref else
            translate("decode_panel", "Choose an example with a reference translation to teacher-force it"))

    def use_reference(self) -> None:
        """One click: the open example's reference becomes the target (teacher-forced mode)."""
        ref = self.reference()
        if ref:
            self.target_edit.setText(ref)
            self._apply()

    def _on_example(self, index: int) -> None:
        e = self.example_combo.itemData(index)
        if e is None:
            return
        self.set_texts(e.source, "")
        self._apply()
        self._update_reference_button()

    def _on_target_cleared(self, text: str) -> None:
        if not text and self.session.target:
            self._debounce.start()

    # -- the open model's examples, placeholder and pieces -----------------------------------------
    def _on_model_changed(self, bundle) -> None:
        """Ask for the new model's examples and placeholder (a worker: they may read its corpus)."""
        self._update_source_tooltip(self.source_edit.text())
        if bundle is None:
            return
        self._fit_kind(bundle.config.kind)
        self._hints_due = bundle
        QtCore.QTimer.singleShot(READ_CORPUS_AFTER_MS, self, lambda b=bundle: self._read_hints(b))

    def _read_hints(self, bundle) -> None:
        """Read ``bundle``'s examples in a worker, if it is still the model asked for."""
        if bundle is not self._hints_due:
            return
        self._hints_due = None
        worker = FunctionWorker(hints_for, dict(bundle.meta), bundle.path, inference=False)
        worker.returned.connect(while_alive(self, lambda hints, b=bundle: self._apply_hints(b, hints)))
        self._hints_worker = worker
        worker.start()

    def _fit_kind(self, kind: str) -> None:
        """The fields of a model of ``kind``: a decoder-only model continues a prompt; an
        encoder-only one reads a sentence with [MASK] and has no target (it does not decode)."""
        names = {"decoder-only": translate("decode_panel", "Prompt"), "encoder-only": translate("decode_panel", "Sentence")}
        self.source_label.setText(names.get(kind, translate("decode_panel", "Source")))
        for w in (self.target_label, self.target_edit, self.reference_button):
            w.setVisible(kind != "encoder-only")
        if kind == "encoder-only":
            self.source_edit.setPlaceholderText(translate("decode_panel", "A sentence with [MASK] where a token is hidden, e.g. the cat [MASK] on the mat."))

    def _apply_hints(self, bundle, hints: InputHints) -> None:
        """Show ``hints`` if ``bundle`` is still the open model. A source that was an example of the
        previous model and is mostly UNK to this one is replaced by this model's first example."""
        if bundle is not self.session.bundle:
            return
        previous = {e.source for e in self._examples}
        self.set_examples(list(hints.examples))
        placeholder = placeholder_text(hints) if bundle.config.kind != "encoder-only" else self.source_edit.placeholderText()
        self.source_edit.setPlaceholderText(placeholder)
        self.source_info.set_placeholder(placeholder)
        src = self.source_edit.text().strip()
        if hints.examples and (not src or (src in previous and map_source(bundle.src_tokenizer, src).mostly_unknown)):
            self.set_texts(hints.examples[0].source, "")
            self._apply()

    def hints_pending(self) -> bool:
        """The open model's examples are still being read (tests wait for them)."""
        return self._hints_due is not None or (self._hints_worker is not None and not self._hints_worker.is_done)

    def _update_source_tooltip(self, text: str) -> None:
        """The source's tooltip: how each character maps to the open model's pieces ("猫 → 猫")."""
        bundle = self.session.bundle
        lines = [self.source_tip()]
        if bundle is not None and text.strip():
            try:
                mapped = map_source(bundle.src_tokenizer, text)
            except Exception:  # noqa: BLE001 - text the tokenizer cannot read: the session says why
                mapped = None
            if mapped is not None and mapped.pieces:
                shown = mapped.describe().splitlines()
                more = [translate("decode_panel", "… and {n} more").format(n=len(shown) - 40)] if len(shown) > 40 else []
                how = translate("decode_panel", "How the model's tokenizer reads it ({legend}; UNK = unknown to the model):")
                lines += ["", how.format(legend=word_start_legend()), *shown[:40], *more]
        self.source_edit.setToolTip(tooltip_text("\n".join(lines)))

    def _apply(self) -> None:
        self._debounce.stop()
        src, tgt = self.source_edit.text(), self.target_edit.text()
        if src != self.session.source or tgt != self.session.target:
            self.session.set_inputs(src, tgt)

    def _on_return(self) -> None:
        """Enter: a changed sentence is taken (and decoded); the kept one is decoded to the end."""
        changed = (self.source_edit.text(), self.target_edit.text()) != (self.session.source, self.session.target)
        self._apply()
        if not changed and self.session.can_step() and not self.session.running:
            self.session.run_to_end()


class QtStepBar(QtWidgets.QWidget):
    """Strategy selector and the step / back / run / reset buttons. The sampling parameters get a
    second row of their own, and the buttons drop their text when the bar is narrow, so the bar
    fits a small window with every strategy."""

    def __init__(self, session: Session, actions: dict[str, QtGui.QAction], parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.strategy_combo = QtWidgets.QComboBox(objectName="strategyCombo")
        for key in STRATEGIES:
            self.strategy_combo.addItem(strategy_name(key), key)
        self.strategy_combo.setToolTip(translate("decode_panel", "Strategy: how the next token is chosen"))
        self.beam_spin = self._spin(QtWidgets.QSpinBox(objectName="beamWidthSpin"), BEAM_WIDTH.low, BEAM_WIDTH.high, 4, translate("decode_panel", "Beam width k"))
        self.temperature_spin = self._dspin("temperatureSpin", TEMPERATURE.low, TEMPERATURE.high, 1.0, 0.1, translate("decode_panel", "Temperature T: softmax(logits / T)"))
        self.topk_spin = self._spin(QtWidgets.QSpinBox(objectName="topKSpin"), TOP_K.low, TOP_K.high, 0, translate("decode_panel", "Top-k (0: off)"))
        self.topp_spin = self._dspin("topPSpin", 0.05, TOP_P.high, 1.0, 0.05, translate("decode_panel", "Top-p / nucleus (1: off)"))  # its step: TOP_P excludes 0
        self.seed_spin = self._spin(QtWidgets.QSpinBox(objectName="seedSpin"), SEED.low, min(SEED.high, QT_INT_MAX), 0,
                                    translate("decode_panel", "Random seed (sampling is reproducible)"))
        self.seed_spin.setMaximumWidth(110)
        self.beam_row = self._param_row("beamRow", ((translate("decode_panel", "width k"), self.beam_spin),))
        self.sampling_row = self._param_row("samplingRow", (("T", self.temperature_spin), ("top-k", self.topk_spin),
                                                            ("top-p", self.topp_spin), (translate("decode_panel", "seed"), self.seed_spin)))
        self.buttons: list[QtWidgets.QToolButton] = []
        self.strategy_combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.strategy_combo.setMinimumWidth(self.strategy_combo.sizeHint().width())  # "Beam search" is never cut
        row = QtWidgets.QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.strategy_combo)
        row.addStretch(1)
        for key, name in (("reset", "resetButton"), ("back", "backButton"), ("step", "stepButton"), ("run", "runButton")):
            b = QtWidgets.QToolButton(objectName=name)
            b.setDefaultAction(actions[key])
            row.addWidget(b)
            setattr(self, f"{key}_button", b)
            self.buttons.append(b)
        rows = QtWidgets.QVBoxLayout(self)
        rows.setContentsMargins(6, 0, 6, 2)
        rows.setSpacing(2)
        rows.addLayout(row)
        rows.addWidget(self._params_area())
        self._set_compact(False)
        self.strategy_combo.currentIndexChanged.connect(self._on_changed)
        for w in (self.beam_spin, self.temperature_spin, self.topk_spin, self.topp_spin, self.seed_spin):
            w.valueChanged.connect(self._on_changed)
        session.modelChanged.connect(lambda bundle: bundle is not None and self.setEnabled(bundle.config.kind != "encoder-only"))  # no decoding
        self._update_visibility()

    def _params_area(self) -> QtWidgets.QScrollArea:
        """The strategy's parameters on a row of their own that scrolls sideways when the window
        is narrow: it never widens the bar, so choosing a strategy never squeezes a dock."""
        content = QtWidgets.QWidget(objectName="strategyParamsContent")
        box = QtWidgets.QHBoxLayout(content)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.beam_row)
        box.addWidget(self.sampling_row)
        box.addStretch(1)
        self.params_area = QtWidgets.QScrollArea(objectName="strategyParams")
        self.params_area.setWidget(content)
        self.params_area.setWidgetResizable(True)
        self.params_area.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.params_area.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.params_area.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        return self.params_area

    def _fit_params_area(self) -> None:
        """As tall as the parameters (and the sideways scroll bar when they do not fit); hidden
        for greedy decoding, which has none."""
        content = self.params_area.widget()
        shown = not (self.beam_row.isHidden() and self.sampling_row.isHidden())
        self.params_area.setVisible(shown)
        if shown:
            bar = self.params_area.horizontalScrollBar().sizeHint().height()
            needs_bar = content.minimumSizeHint().width() > self.params_area.viewport().width()
            self.params_area.setFixedHeight(content.minimumSizeHint().height() + (bar if needs_bar else 0))

    def _param_row(self, name: str, params) -> QtWidgets.QWidget:
        box = QtWidgets.QWidget(objectName=name)
        row = QtWidgets.QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        for label, w in params:
            lab = QtWidgets.QLabel(label)
            lab.setBuddy(w)
            row.addWidget(lab)
            row.addWidget(w)
        row.addStretch(1)
        return box

    def _spin(self, w, lo, hi, value, tip):
        w.setRange(lo, hi)
        w.setValue(value)
        w.setToolTip(tip)
        w.setKeyboardTracking(False)
        return w

    def _dspin(self, name, lo, hi, value, step, tip):
        w = QtWidgets.QDoubleSpinBox(objectName=name)
        w.setDecimals(2)
        w.setSingleStep(step)
        return self._spin(w, lo, hi, value, tip)

    def strategy(self) -> Greedy | Sampling | BeamSearch:
        key = self.strategy_combo.currentData()
        if key == "beam":
            return BeamSearch(width=self.beam_spin.value())
        if key == "sample":
            return Sampling(temperature=self.temperature_spin.value(), top_k=self.topk_spin.value(),
                            top_p=self.topp_spin.value(), seed=self.seed_spin.value())
        return Greedy()

    def show_strategy(self, strategy: Greedy | Sampling | BeamSearch) -> None:
        """Set the controls to ``strategy`` without asking the session for it (it has it)."""
        key = "beam" if isinstance(strategy, BeamSearch) else "sample" if isinstance(strategy, Sampling) else "greedy"
        widgets = (self.strategy_combo, self.beam_spin, self.temperature_spin, self.topk_spin, self.topp_spin, self.seed_spin)
        blockers = [QtCore.QSignalBlocker(w) for w in widgets]
        self.strategy_combo.setCurrentIndex(self.strategy_combo.findData(key))
        if isinstance(strategy, BeamSearch):
            self.beam_spin.setValue(strategy.width)
        elif isinstance(strategy, Sampling):
            self.temperature_spin.setValue(strategy.temperature)
            self.topk_spin.setValue(strategy.top_k)
            self.topp_spin.setValue(strategy.top_p)
            self.seed_spin.setValue(min(strategy.seed, QT_INT_MAX))  # a larger one (only a session file holds one) shows as the limit
        del blockers
        self._update_visibility()

    def _update_visibility(self) -> None:
        key = self.strategy_combo.currentData()
        self.beam_row.setVisible(key == "beam")
        self.sampling_row.setVisible(key == "sample")
        self._fit_params_area()

    def _on_changed(self, *_):
        self._update_visibility()
        self.session.set_strategy(self.strategy())

    # -- width: text beside the icons when there is room, icons alone when not ---------------------
    def is_compact(self) -> bool:
        """The buttons show their icons alone (the bar is narrow); their text is in the tooltip."""
        return self.buttons[0].toolButtonStyle() == QtCore.Qt.ToolButtonStyle.ToolButtonIconOnly

    def _set_compact(self, compact: bool) -> None:
        style = QtCore.Qt.ToolButtonStyle
        for b in self.buttons:
            b.setToolButtonStyle(style.ToolButtonIconOnly if compact else style.ToolButtonTextBesideIcon)

    def _row_width(self, compact: bool) -> int:
        """The width the first row needs with the buttons' text (``compact`` False) or without."""
        m = self.layout().contentsMargins()
        row = self.layout().itemAt(0).layout().minimumSize().width() + m.left() + m.right()
        fm = self.fontMetrics()
        texts = sum(fm.horizontalAdvance(b.defaultAction().text()) + 8 for b in self.buttons)
        if self.is_compact() == compact:
            return row
        return row - texts if compact else row + texts

    def minimumSizeHint(self) -> QtCore.QSize:  # noqa: N802 - Qt API
        """As narrow as the icons-only row: the text goes when the room does, and the parameters
        row scrolls."""
        return QtCore.QSize(self._row_width(compact=True), super().minimumSizeHint().height())

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        compact = self.width() < self._row_width(compact=False)
        if compact != self.is_compact():
            self._set_compact(compact)
            self.updateGeometry()
        self._fit_params_area()


class QtTokenChips(QtWidgets.QLabel):
    """The decoder's tokens so far as chips: SOS, then each generated one (forced ones marked,
    EOS in red, the current step outlined). Pieces keep their word-start mark (see
    :func:`display_piece`); the tooltip explains it."""

    @staticmethod
    def empty_text() -> str:
        """What the chips say before the first step."""
        return translate("decode_panel", "no tokens yet: press Step (→) or Run to End (End)")

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("tokenChips")
        self.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setFont(ui_font(11))
        self.setContentsMargins(8, 2, 8, 4)
        self.setMinimumHeight(30)
        self.setToolTip(translate("decode_panel", "The decoder's tokens; {legend}; ✎ = forced by you").format(legend=word_start_legend()))
        self.pieces: tuple[str, ...] = ()

    def set_tokens(self, pieces, forced=(), current: int | None = None, note: str = "", empty: str | None = None) -> None:
        empty = self.empty_text() if empty is None else empty
        self.pieces = tuple(pieces)
        forced = set(forced)
        chips = []
        for i, p in enumerate(self.pieces):
            bg, fg = "#e8eef7", "#1d2733"
            if p in ("SOS", "EOS"):
                bg, fg = ("#fbe3e1", "#b3261e") if p == "EOS" else ("#e6e6e6", "#444444")
            border = "2px solid #2f6fde" if i == current else "1px solid #b9c3d0"
            mark = "<sup>✎</sup>" if i in forced else ""
            chips.append(f'<span style="background:{bg};color:{fg};border:{border};">&nbsp;{html.escape(display_piece(p))}{mark}&nbsp;</span>')
        body = "&nbsp; ".join(chips) if chips else f'<span style="color:#888">{html.escape(empty)}</span>'
        if note:
            body += f'&nbsp;&nbsp;<span style="color:#888">{html.escape(note)}</span>'
        self.setText(body)

    def show_session(self, session: Session) -> None:
        """The decoder's tokens of the session's current mode (teacher-forced: SOS + y, then EOS)."""
        if session.forced is not None:
            f = session.forced
            note = translate("decode_panel", "→ predicted: {pieces}").format(pieces=" ".join(display_piece(p.predicted_piece) for p in f.steps))
            self.set_tokens(f.input_pieces + ("EOS",), current=session.forced_cursor, note=note)
            self.setProperty("key", "teacher-forced")  # what the chips say, in any language
        elif session.decoding is not None:
            d = session.decoding
            forced = [i + 1 for i, st in enumerate(d.steps) if st.forced]
            note = f"“{d.translation()}”" if d.steps else translate("decode_panel", "press Step (→) or Run to End (End) to decode")
            self.set_tokens(d.tgt_pieces, forced=forced, current=len(d.tgt_pieces) - 1, note=note)
            self.setProperty("key", "translation" if d.steps else "press-step")
        else:
            self.set_tokens((), empty=empty_source_text() if not session.source.strip() else self.empty_text())
            self.setProperty("key", "no-source" if not session.source.strip() else "no-tokens")


class QtTopKPanel(QtWidgets.QWidget):
    """The top-k list of one step: P(y_t | y_<t, x) with probabilities; a click or Enter on an
    entry forces that token. In beam search, the live beams with their scores.

    The list is never narrower than a probability and a short piece, so shrinking the window
    and enlarging it again leaves it readable."""

    forceRequested = QtCore.Signal(int)
    BAR_CHARS = 10  # the widest probability bar, in block characters

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.caption = plain_label(topk_title(), "topkCaption")  # shows token pieces
        self.caption.setWordWrap(True)
        self.caption.setToolTip(translate("decode_panel", "P(y_t | y_<t, x): the model's most likely next tokens; {legend}")
                                .format(legend=word_start_legend()))
        self.topk_list = QtWidgets.QListWidget(objectName="topkList")
        self.topk_list.setToolTip(translate("decode_panel", "Click (or press Enter on) a token to force it as the next token"))
        self.topk_list.setFont(ui_font(10))
        self.topk_list.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.topk_list.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.topk_list.setMinimumWidth(self.readable_width())
        self.beam_caption = plain_label(self.beams_title(), "beamCaption")
        self.beam_caption.setWordWrap(True)
        self.beam_list = QtWidgets.QListWidget(objectName="beamList")
        self.beam_list.setFont(ui_font(10))
        layout.addWidget(self.caption)
        layout.addWidget(self.topk_list, 2)
        layout.addWidget(self.beam_caption)
        layout.addWidget(self.beam_list, 1)
        self.topk_list.itemClicked.connect(self._on_item)
        self.topk_list.itemActivated.connect(self._on_item)
        self.set_beams(())

    def readable_width(self) -> int:
        """The list's least width: a probability and a piece of eight characters, with the frame
        and a vertical scroll bar."""
        fm = QtGui.QFontMetrics(self.topk_list.font())
        scroll = self.style().pixelMetric(QtWidgets.QStyle.PixelMetric.PM_ScrollBarExtent)
        return fm.horizontalAdvance(self.entry_text("␣abcdefg", 1.0)[:17]) + scroll + 16

    @classmethod
    def entry_text(cls, piece: str, prob: float) -> str:
        """One entry: the probability first (never cut off), the piece, then a bar."""
        bar = "█" * max(1, int(round(prob * cls.BAR_CHARS))) if prob > 0.005 else "▏"
        return f"{prob * 100:6.2f}%  {display_piece(piece):<9} {bar}"

    def set_topk(self, topk, chosen: int | None = None, forcing_allowed: bool = True, caption: str = "") -> None:
        self.topk_list.clear()
        for piece, token_id, prob in topk:
            item = QtWidgets.QListWidgetItem(self.entry_text(piece, prob))
            item.setData(QtCore.Qt.ItemDataRole.UserRole, int(token_id))
            item.setToolTip(tooltip_text(f"{display_piece(piece)}: P = {prob:.4f}"))
            if piece == "EOS":
                item.setForeground(QtGui.QColor("#b3261e"))
            if chosen is not None and int(token_id) == chosen:
                f = item.font()
                f.setBold(True)
                item.setFont(f)
            if not forcing_allowed:
                item.setFlags(item.flags() & ~QtCore.Qt.ItemFlag.ItemIsEnabled)
            self.topk_list.addItem(item)
        self.caption.setText(caption or topk_title())
        self.caption.setProperty("key", "")  # a caller that says more names it

    @staticmethod
    def beams_title() -> str:
        return translate("decode_panel", "Beams (score = log P / length penalty)")

    def set_beams(self, beams, caption: str = "") -> None:
        self.beam_list.clear()
        for b in beams:
            words = " ".join(display_piece(p) for p in b.pieces)
            self.beam_list.addItem(f"{b.score:8.3f}  {'✓' if b.finished else '…'}  {words}")
        self.beam_caption.setText(caption or self.beams_title())
        self.beam_caption.setProperty("key", "")  # a caller that says more names it
        visible = bool(beams)
        self.beam_list.setVisible(visible)
        self.beam_caption.setVisible(visible)

    def show_session(self, session: Session) -> None:
        """The next-token distribution the user can force from, or (finished, teacher-forced) the
        distribution at the current position, read-only; nothing (and why) without a decoding."""
        topk = session.frames.next_topk()
        if session.forced is not None:
            pos = session.forced.steps[session.forced_cursor]
            cap = translate("decode_panel", "Top-k at position {position}: input {input} → target {target}; "
                                            "P(target) = {prob:.3f}, loss here {loss:.3f}").format(
                position=pos.index + 1, input=display_piece(pos.input_piece), target=display_piece(pos.piece), prob=pos.prob, loss=pos.loss)
            self.set_topk(topk, chosen=pos.predicted_id, forcing_allowed=False, caption=cap)
            self.caption.setProperty("key", "position")  # what the caption says, in any language
            self.set_beams(())
            return
        d = session.decoding
        if d is None:
            self.set_topk((), caption=empty_source_text() if not session.source.strip() else
                          translate("decode_panel", "Nothing decoded: see the message above"))
            self.caption.setProperty("key", "no-source" if not session.source.strip() else "nothing-decoded")
            self.set_beams(())
            return
        if d.can_step:
            self.set_topk(topk, caption=translate("decode_panel", "Top-k at step {step} (y_{step}): click or press Enter to force a token")
                          .format(step=len(d.steps) + 1))
            self.caption.setProperty("key", "step")
        else:
            last = session.current_step()
            cap = translate("decode_panel", "Top-k at step {step}, the last (EOS or maximum length). Back (←) to change it.").format(step=len(d.steps))
            self.set_topk(topk, chosen=last.token_id if last else None, forcing_allowed=False, caption=cap)
            self.caption.setProperty("key", "last-step")
        self._show_beams(d)

    def _show_beams(self, d) -> None:
        """The live beams of a beam search; after a forced token, the one forced path, said so."""
        if not isinstance(d.strategy, BeamSearch):
            self.set_beams(())
            return
        beams = d.beams()
        if d.steps and d.steps[-1].forced and len(beams) <= 1:
            self.set_beams(beams, caption=translate("decode_panel", "Beams: forcing a token left beam search for the forced path; "
                                                                    "the next step searches {width} beams again").format(width=d.strategy.width))
            self.beam_caption.setProperty("key", "forced-path")  # what the caption says, in any language
        else:
            self.set_beams(beams if len(beams) > 1 else ())

    def _on_item(self, item: QtWidgets.QListWidgetItem) -> None:
        if item.flags() & QtCore.Qt.ItemFlag.ItemIsEnabled:
            self.forceRequested.emit(int(item.data(QtCore.Qt.ItemDataRole.UserRole)))
