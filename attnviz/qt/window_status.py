"""The main window's status bar: the open model and its norm, the ablated heads, the decoding step,
and a busy indicator with Cancel while a model loads: :class:`WindowStatus`, owned by the main
window, and the texts it shows (:func:`config_text`, :func:`norm_formula`, :func:`step_text`)."""

from __future__ import annotations

from PySide6 import QtWidgets
from PySide6.QtCore import QT_TRANSLATE_NOOP

from attnviz.core.analysis.ablation import HeadSet
from attnviz.core.analysis.norms import placement_formula
from attnviz.core.bundle import Bundle
from attnviz.core.decoding.strategies import BeamSearch
from attnviz.core.model.config import KIND_NOTES, NORM_NAMES, TransformerConfig
from attnviz.errors import one_line
from attnviz.qt.core_text import ablation_name, heads_text, strategy_text
from attnviz.qt.i18n import translate
from attnviz.qt.session import Session
from attnviz.qt.widgets.plain_text import ElidedLabel, plain_label


def placement_text(placement: str) -> str:
    """``pre``/``post`` as the window names it: pre-norm or post-norm."""
    return translate("main_window", "pre-norm") if placement == "pre" else translate("main_window", "post-norm")


def norm_formula(config: TransformerConfig) -> str:
    """Where the model normalizes, as a formula: pre-norm x + Sublayer(LN(x)) or post-norm
    LN(x + Sublayer(x)); BN for BatchNorm, RMS for RMSNorm."""
    name = NORM_NAMES[config.norm]
    return translate("main_window", "{norm}, {placement}: {formula}").format(
        norm=name, placement=placement_text(config.norm_placement), formula=placement_formula(config.norm, config.norm_placement))


def config_text(c: TransformerConfig) -> str:
    """The model's sizes and norm in one line, for the status bar."""
    return translate("main_window", "d_model {d_model}, {heads} heads, {encoder}+{decoder} layers, d_ff {d_ff}, {norm} ({placement}), "
                                    "vocab {source}/{target}").format(
        d_model=c.d_model, heads=c.n_heads, encoder=c.n_encoder_layers, decoder=c.n_decoder_layers, d_ff=c.d_ff,
        norm=NORM_NAMES[c.norm], placement=placement_text(c.norm_placement),
        source=c.src_vocab_size, target=c.tgt_vocab_size)


KIND_NOTE_TEXTS = (  # the core's KIND_NOTES, marked for the translators
    QT_TRANSLATE_NOOP("main_window", "; decoder-only: no encoder, no cross-attention (continues a prompt)"),
    QT_TRANSLATE_NOOP("main_window", "; encoder-only: no decoder, no decoding (predicts masked tokens)"),
)


def kind_note(kind: str) -> str:
    """What the status bar adds for a model of one stack (``config.kind``): what it has not."""
    return translate("main_window", KIND_NOTES[kind]) if KIND_NOTES[kind] else ""


def step_text(s: Session) -> str:
    """The status bar's step: where decoding is, with which strategy, and whether it is done."""
    if s.forced is not None:
        return translate("main_window", "teacher-forced · position {position}/{n} · mean loss {loss:.3f} · accuracy {accuracy:.0%}").format(
            position=s.forced_cursor + 1, n=len(s.forced.steps), loss=s.forced.loss, accuracy=s.forced.accuracy)
    d = s.decoding
    if d is None:
        return ""
    state = (translate("main_window", "finished") if d.finished else translate("main_window", "running") if s.running
             else translate("main_window", "ready"))
    strategy = strategy_text(d.strategy)
    if d.steps and d.steps[-1].forced and len(d.beams()) <= 1 and isinstance(d.strategy, BeamSearch):
        strategy += translate("main_window", " · forced: one path until the next step")
    return translate("main_window", "step {step}/{max} · {strategy} · {state}").format(
        step=len(d.steps), max=d.max_len, strategy=strategy, state=state)


class WindowStatus:
    """The widgets of ``window``'s status bar (``model_label``, ``norm_label``, ``step_label``,
    ``ablation_label`` with ``clear_ablation_button``, ``busy`` with ``cancel_load_button``) and
    what puts the session's state in them."""

    def __init__(self, window: QtWidgets.QMainWindow, session: Session):
        self.window, self.session = window, session
        self._create_labels()
        self._create_busy()
        self._create_ablation()
        sb = window.statusBar()
        sb.addWidget(self.model_label, 1)
        sb.addPermanentWidget(self.ablation_label)
        sb.addPermanentWidget(self.clear_ablation_button)
        sb.addPermanentWidget(self.norm_label)
        sb.addPermanentWidget(self.step_label)
        sb.addPermanentWidget(self.busy)
        sb.addPermanentWidget(self.cancel_load_button)

    def _create_labels(self) -> None:
        self.model_label = ElidedLabel("", "modelLabel")  # the folder's name: plain text, cut to the room
        self.norm_label = plain_label("", "normLabel")
        self.norm_label.setToolTip(translate("main_window", "Where the open model normalizes: LN = LayerNorm, BN = BatchNorm"))
        self.step_label = plain_label("", "stepLabel")
        self.step_label.setToolTip(translate("main_window", "Steps and positions are counted from 1, as in every view"))

    def _create_busy(self) -> None:
        self.busy = QtWidgets.QProgressBar(objectName="busyIndicator")
        self.busy.setRange(0, 0)
        self.busy.setMaximumWidth(120)
        self.busy.hide()
        self.cancel_load_button = QtWidgets.QToolButton(objectName="cancelLoadButton")
        self.cancel_load_button.setText(translate("main_window", "Cancel"))
        self.cancel_load_button.setToolTip(translate("main_window", "Stop opening the model; the open model stays"))
        self.cancel_load_button.clicked.connect(lambda: self.session.cancel_load())
        self.cancel_load_button.hide()

    def _create_ablation(self) -> None:
        s = self.session
        self.ablation_label = plain_label("", "ablationLabel")
        self.ablation_label.setToolTip(translate("main_window", "Heads taken out of the model in every run shown (Ablate in the grid)"))
        self.clear_ablation_button = QtWidgets.QToolButton(objectName="clearAblationButton", text=translate("main_window", "Clear"))
        self.clear_ablation_button.setToolTip(translate("main_window", "Give every ablated head back: the model as trained"))
        self.clear_ablation_button.clicked.connect(lambda: s.set_ablation(HeadSet(frozenset(), s.ablation.kind)))
        s.ablationChanged.connect(self.show_ablation)
        self.show_ablation()

    def show_ablation(self) -> None:
        a = self.session.ablation
        self.ablation_label.setText(translate("main_window", "ablated ({kind}): {heads}").format(kind=ablation_name(a.kind), heads=heads_text(a)) if a else "")
        self.ablation_label.setVisible(bool(a))
        self.clear_ablation_button.setVisible(bool(a))

    def show_busy(self, busy: bool, what: str) -> None:
        """The busy indicator (and Cancel while a model loads) with what is going on, or neither."""
        self.busy.setVisible(busy)
        self.cancel_load_button.setVisible(busy and self.session.loading)
        if busy:
            self.window.statusBar().showMessage(one_line(what))
        else:
            self.window.statusBar().clearMessage()

    def show_step(self) -> None:
        self.step_label.setText(step_text(self.session))

    def show_model(self, bundle: Bundle | None) -> None:
        """The open model's name, sizes and norm ("No model" without one)."""
        if bundle is None:
            self.model_label.set_full_text(translate("main_window", "No model"))
            self.norm_label.setText("")
            return
        c = bundle.config
        self.model_label.set_full_text(one_line(f"{bundle.name}: {config_text(c)}{kind_note(c.kind)}"), tip=str(bundle.path or ""))
        self.norm_label.setText(norm_formula(c))
