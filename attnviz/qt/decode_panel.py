"""The inputs and the stepping controls: source/target lines, examples, strategy, step buttons,
generated-token chips, the next-token top-k list (click or Enter forces a token) and the beams."""

from __future__ import annotations

import html

from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.decoding.strategies import BeamSearch, Greedy, Sampling
from attnviz.qt.session import Session
from attnviz.qt.widgets.colormaps import ui_font
from attnviz.qt.widgets.plain_text import plain_label, tooltip_text

STRATEGIES = (("greedy", "Greedy"), ("beam", "Beam search"), ("sample", "Sampling"))


class QtInputBar(QtWidgets.QWidget):
    """Source (and optional target) sentence, with a list of example sentences."""

    def __init__(self, session: Session, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.source_edit = QtWidgets.QLineEdit(objectName="sourceEdit")
        self.source_edit.setPlaceholderText("Source sentence (中文), e.g. 我喜欢吃鱼。")
        self.source_edit.setToolTip("The sentence the encoder reads. Editing it re-encodes and restarts decoding.")
        self.source_edit.setMaxLength(2000)
        self.target_edit = QtWidgets.QLineEdit(objectName="targetEdit")
        self.target_edit.setPlaceholderText("Optional target (English): teacher-forced mode, SOS + y in, y + EOS out")
        self.target_edit.setToolTip("Type a translation to see, for every position, what the model predicts with the right prefix (teacher forcing).")
        self.target_edit.setClearButtonEnabled(True)
        self.target_edit.setMaxLength(2000)
        self.example_combo = QtWidgets.QComboBox(objectName="exampleCombo")
        self.example_combo.setToolTip("Example sentences: some were seen in training, some are held out")
        self.example_combo.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.example_combo.setMinimumContentsLength(18)
        form = QtWidgets.QGridLayout(self)
        form.setContentsMargins(6, 6, 6, 2)
        form.addWidget(QtWidgets.QLabel("Source"), 0, 0)
        form.addWidget(self.source_edit, 0, 1)
        form.addWidget(QtWidgets.QLabel("Examples"), 0, 2)
        form.addWidget(self.example_combo, 0, 3)
        form.addWidget(QtWidgets.QLabel("Target"), 1, 0)
        form.addWidget(self.target_edit, 1, 1, 1, 3)
        form.setColumnStretch(1, 1)
        self._debounce = QtCore.QTimer(self, singleShot=True, interval=450)
        self._debounce.timeout.connect(self._apply)
        self.source_edit.textEdited.connect(lambda _t: self._debounce.start())
        self.target_edit.textEdited.connect(lambda _t: self._debounce.start())
        self.source_edit.returnPressed.connect(self._apply)
        self.target_edit.returnPressed.connect(self._apply)
        self.target_edit.textChanged.connect(self._on_target_cleared)
        self.example_combo.activated.connect(self._on_example)
        self._examples: list = []

    def set_examples(self, examples: list) -> None:
        self._examples = list(examples)
        self.example_combo.clear()
        self.example_combo.addItem("Choose an example…", None)
        for e in self._examples:
            self.example_combo.addItem(e.label, e)
            if e.reference:
                self.example_combo.setItemData(self.example_combo.count() - 1, tooltip_text(f"Reference: {e.reference}"),
                                               QtCore.Qt.ItemDataRole.ToolTipRole)

    def set_texts(self, source: str, target: str) -> None:
        with QtCore.QSignalBlocker(self.source_edit), QtCore.QSignalBlocker(self.target_edit):
            self.source_edit.setText(source)
            self.target_edit.setText(target)

    def _on_example(self, index: int) -> None:
        e = self.example_combo.itemData(index)
        if e is None:
            return
        self.set_texts(e.source, "")
        self._apply()

    def _on_target_cleared(self, text: str) -> None:
        if not text and self.session.target:
            self._debounce.start()

    def _apply(self) -> None:
        self._debounce.stop()
        src, tgt = self.source_edit.text(), self.target_edit.text()
        if src != self.session.source or tgt != self.session.target:
            self.session.set_inputs(src, tgt)


class QtStepBar(QtWidgets.QWidget):
    """Strategy selector and the step / back / run / reset buttons."""

    def __init__(self, session: Session, actions: dict[str, QtGui.QAction], parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.session = session
        row = QtWidgets.QHBoxLayout(self)
        row.setContentsMargins(6, 0, 6, 2)
        self.strategy_combo = QtWidgets.QComboBox(objectName="strategyCombo")
        for key, text in STRATEGIES:
            self.strategy_combo.addItem(text, key)
        self.strategy_combo.setToolTip("How the next token is chosen")
        self.beam_spin = self._spin(QtWidgets.QSpinBox(objectName="beamWidthSpin"), 1, 16, 4, "Beam width k")
        self.temperature_spin = self._dspin("temperatureSpin", 0.05, 5.0, 1.0, 0.1, "Temperature T: softmax(logits / T)")
        self.topk_spin = self._spin(QtWidgets.QSpinBox(objectName="topKSpin"), 0, 1000, 0, "Top-k (0: off)")
        self.topp_spin = self._dspin("topPSpin", 0.05, 1.0, 1.0, 0.05, "Top-p / nucleus (1: off)")
        self.seed_spin = self._spin(QtWidgets.QSpinBox(objectName="seedSpin"), 0, 2**31 - 1, 0, "Random seed (sampling is reproducible)")
        row.addWidget(QtWidgets.QLabel("Strategy"))
        row.addWidget(self.strategy_combo)
        self._params = []
        for label, w in (("k", self.beam_spin), ("T", self.temperature_spin), ("top-k", self.topk_spin), ("top-p", self.topp_spin), ("seed", self.seed_spin)):
            lab = QtWidgets.QLabel(label)
            lab.setBuddy(w)
            row.addWidget(lab)
            row.addWidget(w)
            self._params.append((lab, w))
        row.addStretch(1)
        for key, name in (("reset", "resetButton"), ("back", "backButton"), ("step", "stepButton"), ("run", "runButton")):
            b = QtWidgets.QToolButton(objectName=name)
            b.setDefaultAction(actions[key])
            b.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            row.addWidget(b)
            setattr(self, f"{key}_button", b)
        self.strategy_combo.currentIndexChanged.connect(self._on_changed)
        for _, w in self._params:
            w.valueChanged.connect(self._on_changed)
        self._update_visibility()

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

    def _update_visibility(self) -> None:
        key = self.strategy_combo.currentData()
        for lab, w in self._params:
            show = (w is self.beam_spin and key == "beam") or (w is not self.beam_spin and key == "sample")
            lab.setVisible(show)
            w.setVisible(show)

    def _on_changed(self, *_):
        self._update_visibility()
        self.session.set_strategy(self.strategy())


class QtTokenChips(QtWidgets.QLabel):
    """The decoder's tokens so far as chips: SOS, then each generated one (forced ones marked,
    EOS in red, the current step outlined)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("tokenChips")
        self.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setFont(ui_font(11))
        self.setContentsMargins(8, 2, 8, 4)
        self.setMinimumHeight(30)
        self.pieces: tuple[str, ...] = ()

    def set_tokens(self, pieces, forced=(), current: int | None = None, note: str = "") -> None:
        self.pieces = tuple(pieces)
        forced = set(forced)
        chips = []
        for i, p in enumerate(self.pieces):
            bg, fg = "#e8eef7", "#1d2733"
            if p in ("SOS", "EOS"):
                bg, fg = ("#fbe3e1", "#b3261e") if p == "EOS" else ("#e6e6e6", "#444444")
            border = "2px solid #2f6fde" if i == current else "1px solid #b9c3d0"
            mark = "<sup>✎</sup>" if i in forced else ""
            text = html.escape(p.replace("▁", "␣") if p.strip("▁") == "" else p.lstrip("▁") if p.startswith("▁") else p)
            chips.append(f'<span style="background:{bg};color:{fg};border:{border};">&nbsp;{text}{mark}&nbsp;</span>')
        body = "&nbsp; ".join(chips) if chips else '<span style="color:#888">no tokens yet: press Step (→)</span>'
        if note:
            body += f'&nbsp;&nbsp;<span style="color:#666">{html.escape(note)}</span>'
        self.setText(body)

    def show_session(self, session: Session) -> None:
        """The decoder's tokens of the session's current mode (teacher-forced: SOS + y, then EOS)."""
        if session.forced is not None:
            f = session.forced
            note = f"→ predicted: {' '.join(p.predicted_piece for p in f.steps)}"
            self.set_tokens(f.input_pieces + ("EOS",), current=session.forced_cursor, note=note)
        elif session.decoding is not None:
            d = session.decoding
            forced = [i + 1 for i, st in enumerate(d.steps) if st.forced]
            note = f"“{d.translation()}”" if d.steps else ""
            self.set_tokens(d.tgt_pieces, forced=forced, current=len(d.tgt_pieces) - 1, note=note)
        else:
            self.set_tokens(())


class QtTopKPanel(QtWidgets.QWidget):
    """Next-token top-k with probabilities; a click or Enter on an entry forces that token.
    In beam search, the live beams with their scores."""

    forceRequested = QtCore.Signal(int)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.caption = plain_label("Next token: P(y_t | y_<t, x)", "topkCaption")  # shows token pieces
        self.caption.setWordWrap(True)
        self.topk_list = QtWidgets.QListWidget(objectName="topkList")
        self.topk_list.setToolTip("Click (or press Enter on) a token to force it as the next token")
        self.topk_list.setFont(ui_font(10))
        self.topk_list.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.topk_list.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.beam_caption = QtWidgets.QLabel("Beams (score = log P / length penalty)")
        self.beam_list = QtWidgets.QListWidget(objectName="beamList")
        self.beam_list.setFont(ui_font(10))
        layout.addWidget(self.caption)
        layout.addWidget(self.topk_list, 2)
        layout.addWidget(self.beam_caption)
        layout.addWidget(self.beam_list, 1)
        self.topk_list.itemClicked.connect(self._on_item)
        self.topk_list.itemActivated.connect(self._on_item)
        self.set_beams(())

    def set_topk(self, topk, chosen: int | None = None, forcing_allowed: bool = True, caption: str = "") -> None:
        self.topk_list.clear()
        for piece, token_id, prob in topk:
            bar = "█" * max(1, int(round(prob * 20))) if prob > 0.005 else "▏"
            label = f"{piece:<12}  {prob * 100:6.2f}%  {bar}"
            item = QtWidgets.QListWidgetItem(label)
            item.setData(QtCore.Qt.ItemDataRole.UserRole, int(token_id))
            if piece == "EOS":
                item.setForeground(QtGui.QColor("#b3261e"))
            if chosen is not None and int(token_id) == chosen:
                f = item.font()
                f.setBold(True)
                item.setFont(f)
            if not forcing_allowed:
                item.setFlags(item.flags() & ~QtCore.Qt.ItemFlag.ItemIsEnabled)
            self.topk_list.addItem(item)
        if caption:
            self.caption.setText(caption)

    def set_beams(self, beams) -> None:
        self.beam_list.clear()
        for b in beams:
            words = " ".join(p for p in b.pieces)
            self.beam_list.addItem(f"{b.score:8.3f}  {'✓' if b.finished else '…'}  {words}")
        visible = len(beams) > 1
        self.beam_list.setVisible(visible)
        self.beam_caption.setVisible(visible)

    def show_session(self, session: Session) -> None:
        """The next-token distribution the user can force from, or (finished, teacher-forced) the
        distribution at the current position, read-only."""
        topk = session.next_topk()
        if session.forced is not None:
            pos = session.forced.steps[session.forced_cursor]
            cap = (f"Position {pos.index + 1}: input {pos.input_piece} → target {pos.piece}; "
                   f"P(target) = {pos.prob:.3f}, loss {pos.loss:.3f}")
            self.set_topk(topk, chosen=pos.predicted_id, forcing_allowed=False, caption=cap)
            self.set_beams(())
            return
        d = session.decoding
        if d is None:
            self.set_topk(())
            self.set_beams(())
            return
        if d.can_step:
            self.set_topk(topk, caption=f"Next token y_{len(d.steps) + 1}: click or press Enter to force it")
        else:
            last = session.current_step()
            cap = "Finished (EOS or maximum length): the last step's distribution. Back (←) to change it."
            self.set_topk(topk, chosen=last.token_id if last else None, forcing_allowed=False, caption=cap)
        beams = d.beams()
        self.set_beams(beams if len(beams) > 1 else ())

    def _on_item(self, item: QtWidgets.QListWidgetItem) -> None:
        if item.flags() & QtCore.Qt.ItemFlag.ItemIsEnabled:
            self.forceRequested.emit(int(item.data(QtCore.Qt.ItemDataRole.UserRole)))
