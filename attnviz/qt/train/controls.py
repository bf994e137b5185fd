"""The Train panel's controls: the run form and the status row above the figure.

``TrainControls`` is the form (data, model, normalization, schedule, output folder, the run's
buttons and its log): it builds a ``TrainRequest`` (``request()``), can be filled from one
(``set_request``) and asks for a run through its signals; the panel tells it how the run stands
(``set_state``). ``TrainStatus`` shows the run's state, its progress and its errors.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtWidgets

from attnviz.qt.i18n import translate
from attnviz.qt.train.run import (
    ACTIVE_STATES,
    AUGMENT_LABEL,
    AUTO_WARMUP,
    GLOSSED_CHOICES,
    MODEL_SIZES,
    SYNTHETIC_CHOICES,
    WARMUP_CAP,
    WARMUP_SHARE,
    TrainRequest,
    data_choices,
    size_label,
)
from attnviz.qt.widgets.colormaps import ui_font
from attnviz.qt.widgets.elided_combo import ElidedCombo


def default_runs_dir() -> Path:
    """Where runs go by default: ``<user data folder>/attnviz/runs`` (the app's own data location
    would name the app twice, ``…/attnviz/attnviz/runs``, as it adds the organisation's name)."""
    base = QtCore.QStandardPaths.writableLocation(QtCore.QStandardPaths.StandardLocation.GenericDataLocation)
    return (Path(base) / "attnviz" if base else Path.home() / ".attnviz") / "runs"


def _browse_row(edit: QtWidgets.QLineEdit, button_name: str, slot: Any) -> tuple[QtWidgets.QToolButton, QtWidgets.QHBoxLayout]:
    """``edit`` followed by a "…" button that calls ``slot``: one form row (the button, the row)."""
    button = QtWidgets.QToolButton(text="…", objectName=button_name)
    button.clicked.connect(slot)
    row = QtWidgets.QHBoxLayout()
    row.addWidget(edit, 1)
    row.addWidget(button)
    return button, row


def _combo(name: str, items: list[tuple[str, Any]], current: Any = None, tip: str = "") -> QtWidgets.QComboBox:
    combo = ElidedCombo(objectName=name, tip=tip)  # shortened with "…" in a narrow dock, whole in its tooltip
    for text, key in items:
        combo.addItem(text, key)
    if current is not None:
        combo.setCurrentIndex(combo.findData(current))
    return combo


class TrainControls(QtWidgets.QGroupBox):
    """The run form. Signals: ``startRequested(TrainRequest)`` (the Start button, with the form's
    request), ``resumeRequested(TrainRequest)`` (Resume from…: the form's request with the chosen
    checkpoint bundle as ``resume_from``), ``pauseResumeRequested()``, ``stopRequested()``, ``openRequested()``."""

    startRequested = QtCore.Signal(object)
    resumeRequested = QtCore.Signal(object)
    pauseResumeRequested = QtCore.Signal()
    stopRequested = QtCore.Signal()
    openRequested = QtCore.Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(translate("controls", "Training run"), parent)
        self.setObjectName("trainForm")
        self.setMinimumWidth(270)
        self.setMaximumWidth(360)
        form = QtWidgets.QFormLayout(self)
        form.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._build_data_rows(form)
        self._build_model_rows(form)
        self._build_schedule_rows(form)
        self._build_output_row(form)
        self._build_buttons(form)
        self._build_log(form)
        self.data_combo.currentIndexChanged.connect(self._update_data_rows)
        for w in (self.data_combo, self.size_combo, self.norm_combo, self.placement_combo):
            w.currentIndexChanged.connect(self._suggest_out_dir)
        self._out_auto = True  # the output folder follows the choices until the user picks one
        self.out_edit.textEdited.connect(self._on_out_edited)
        self._suggest_out_dir()
        self._update_data_rows()

    # -- building ---------------------------------------------------------------------------
    def _build_data_rows(self, form: QtWidgets.QFormLayout) -> None:
        self.data_combo = _combo("trainDataCombo", [(text, key) for key, text in data_choices().items()], "hsk-zh-en",
                                 translate("controls", "What to learn: HSK or Tatoeba Chinese→English sentences (or both), a synthetic task "
                                           "whose right attention is known, or your own pairs"))
        form.addRow(translate("controls", "Data"), self.data_combo)
        self.tsv_edit = QtWidgets.QLineEdit(objectName="trainTsvEdit")
        self.tsv_edit.setPlaceholderText(translate("controls", "source<TAB>target file"))
        tsv_btn, tsv_row = _browse_row(self.tsv_edit, "trainTsvBrowse", self._browse_tsv)
        tsv_label = QtWidgets.QLabel(translate("controls", "TSV file"))
        form.addRow(tsv_label, tsv_row)
        self._tsv_widgets = (tsv_label, self.tsv_edit, tsv_btn)
        self.examples_spin = QtWidgets.QSpinBox(objectName="trainExamplesSpin", minimum=20, maximum=200000, singleStep=500, value=2000)
        self.examples_spin.setToolTip(translate("controls", "How many random strings the synthetic task has (90% train, 5% valid, 5% test)"))
        self._examples_label = QtWidgets.QLabel(translate("controls", "Pairs"))
        form.addRow(self._examples_label, self.examples_spin)
        self.augment_check = QtWidgets.QCheckBox(translate("run", AUGMENT_LABEL), objectName="trainAugmentCheck", checked=True)
        self.augment_check.setToolTip(translate("controls", "Widen the HSK training split as the default model's was: CC-CEDICT word pairs and new "
                                                "sentences made by swapping a word along the glosses (held-out sentences are never touched)"))
        self._augment_label = QtWidgets.QLabel(translate("controls", "More data"))
        form.addRow(self._augment_label, self.augment_check)

    def _build_model_rows(self, form: QtWidgets.QFormLayout) -> None:
        self.size_combo = _combo("trainSizeCombo", [(size_label(key), key) for key in MODEL_SIZES], "base")
        form.addRow(translate("controls", "Model"), self.size_combo)
        self.norm_combo = _combo("trainNormCombo", [(translate("controls", "LayerNorm (per token)"), "layer"),
                                                    (translate("controls", "BatchNorm (per feature)"), "batch")],
                                 tip=translate("controls", "LayerNorm normalizes the features of each token; BatchNorm each feature over the batch's tokens"))
        form.addRow(translate("controls", "Norm"), self.norm_combo)
        self.placement_combo = _combo("trainPlacementCombo",
                                      [(translate("controls", "Pre-norm: x + Sublayer(Norm(x))"), "pre"),
                                       (translate("controls", "Post-norm: Norm(x + Sublayer(x))"), "post")],
                                      tip=translate("controls", "Post-norm is the paper's; pre-norm trains more easily on small data"))
        form.addRow(translate("controls", "Placement"), self.placement_combo)

    def _build_schedule_rows(self, form: QtWidgets.QFormLayout) -> None:
        self.epochs_spin = QtWidgets.QSpinBox(objectName="trainEpochsSpin", minimum=1, maximum=1000, value=30)
        form.addRow(translate("controls", "Epochs"), self.epochs_spin)
        self.lr_spin = QtWidgets.QDoubleSpinBox(objectName="trainLrSpin", decimals=5, minimum=1e-5, maximum=1.0, singleStep=1e-4, value=1e-3)
        self.lr_spin.setToolTip(translate("controls", "Peak learning rate, reached at the end of the warm-up"))
        form.addRow(translate("controls", "Learning rate"), self.lr_spin)
        self.warmup_spin = QtWidgets.QSpinBox(objectName="trainWarmupSpin", minimum=AUTO_WARMUP, maximum=100000, singleStep=50, value=AUTO_WARMUP)
        self.warmup_spin.setSpecialValueText(translate("controls", "auto"))
        self.warmup_spin.setToolTip(translate("controls", "Steps of the linear rise to the peak learning rate; auto: min({cap}, "
                                              "{share:.0%} of the run's steps), so a short run is not all warm-up").format(cap=WARMUP_CAP, share=WARMUP_SHARE))
        self.warmup_note = QtWidgets.QLabel(objectName="trainWarmupNote")  # on its own line under the spin box: it never squeezes the form
        self.warmup_note.setFont(ui_font(8.5))
        self.warmup_note.setWordWrap(True)
        column = QtWidgets.QVBoxLayout()
        column.setSpacing(1)
        column.addWidget(self.warmup_spin)
        column.addWidget(self.warmup_note)
        form.addRow(translate("controls", "Warm-up"), column)
        self.warmup_spin.valueChanged.connect(lambda _v: self.show_warmup())
        self.show_warmup()
        self.batch_spin = QtWidgets.QSpinBox(objectName="trainBatchSpin", minimum=50, maximum=100000, singleStep=100, value=500)
        self.batch_spin.setToolTip(translate("controls", "Padded tokens per batch"))
        form.addRow(translate("controls", "Batch tokens"), self.batch_spin)
        self.threads_spin = QtWidgets.QSpinBox(objectName="trainThreadsSpin", minimum=1, maximum=max(1, QtCore.QThread.idealThreadCount()), value=1)
        self.threads_spin.setToolTip(translate("controls", "CPU threads for training; 1 keeps the app responsive"))
        form.addRow(translate("controls", "Threads"), self.threads_spin)

    def _build_output_row(self, form: QtWidgets.QFormLayout) -> None:
        self.out_edit = QtWidgets.QLineEdit(objectName="trainOutEdit")
        self.out_edit.setToolTip(translate("controls", "The model bundle folder the run writes (a checkpoint after every epoch)"))
        _out_btn, out_row = _browse_row(self.out_edit, "trainOutBrowse", self._browse_out)
        form.addRow(translate("controls", "Output folder"), out_row)

    def _build_buttons(self, form: QtWidgets.QFormLayout) -> None:
        self.start_button = QtWidgets.QPushButton(translate("controls", "Start"), objectName="trainStartButton")
        self.pause_button = QtWidgets.QPushButton(translate("controls", "Pause"), objectName="trainPauseButton")
        self.stop_button = QtWidgets.QPushButton(translate("controls", "Stop"), objectName="trainStopButton")
        self.open_button = QtWidgets.QPushButton(translate("controls", "Open in attnviz"), objectName="trainOpenButton")
        self.resume_button = QtWidgets.QPushButton(translate("controls", "Resume from…"), objectName="trainResumeButton")
        self.resume_button.setToolTip(translate("controls", "Continue a stopped run from its checkpoint bundle (as attnviz train --resume); "
                                                "a finished run goes on to the Epochs set here"))
        self.start_button.setDefault(True)
        self.stop_button.setToolTip(translate("controls", "Stop after the current step and save a checkpoint"))
        self.open_button.setToolTip(translate("controls", "Open the trained model bundle in the main window"))
        buttons = QtWidgets.QGridLayout()
        buttons.addWidget(self.start_button, 0, 0)
        buttons.addWidget(self.pause_button, 0, 1)
        buttons.addWidget(self.stop_button, 1, 0)
        buttons.addWidget(self.open_button, 1, 1)
        buttons.addWidget(self.resume_button, 2, 0, 1, 2)
        form.addRow(buttons)
        self.start_button.clicked.connect(lambda: self.startRequested.emit(self.request()))
        self.pause_button.clicked.connect(lambda: self.pauseResumeRequested.emit())
        self.stop_button.clicked.connect(lambda: self.stopRequested.emit())
        self.open_button.clicked.connect(lambda: self.openRequested.emit())
        self.resume_button.clicked.connect(self._browse_resume)

    def _build_log(self, form: QtWidgets.QFormLayout) -> None:
        self.log = QtWidgets.QPlainTextEdit(objectName="trainLog")
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(500)
        self.log.setFont(ui_font(8.5))
        self.log.setPlaceholderText(translate("controls", "Messages of the run"))
        form.addRow(self.log)

    # -- the form ---------------------------------------------------------------------------
    def _fields(self) -> tuple[QtWidgets.QWidget, ...]:
        return (self.data_combo, self.tsv_edit, self.examples_spin, self.augment_check, self.size_combo, self.norm_combo, self.placement_combo,
                self.epochs_spin, self.lr_spin, self.warmup_spin, self.batch_spin, self.threads_spin, self.out_edit)

    def _update_data_rows(self) -> None:
        data = self.data_combo.currentData()
        for w in self._tsv_widgets:
            w.setVisible(data == "tsv")
        self._examples_label.setVisible(data in SYNTHETIC_CHOICES)
        self.examples_spin.setVisible(data in SYNTHETIC_CHOICES)
        self._augment_label.setVisible(data in GLOSSED_CHOICES)
        self.augment_check.setVisible(data in GLOSSED_CHOICES)

    def _suggest_out_dir(self) -> None:
        if not self._out_auto:
            return
        name = f"{self.data_combo.currentData().replace(',', '+')}-{self.size_combo.currentData()}-{self.norm_combo.currentData()}norm"
        self.out_edit.setText(str(default_runs_dir() / name))

    def _on_out_edited(self, _text: str) -> None:
        self._out_auto = False

    def _browse_tsv(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, translate("controls", "Parallel corpus (source<TAB>target)"), "",
                                                         translate("controls", "TSV files (*.tsv *.txt);;All files (*)"))
        if path:
            self.tsv_edit.setText(path)

    def _browse_out(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, translate("controls", "Output folder for the model bundle"), self.out_edit.text())
        if path:
            self.out_edit.setText(path)
            self._out_auto = False

    def _browse_resume(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, translate("controls", "Checkpoint bundle to continue"), self.out_edit.text())
        if path:
            req = self.request()
            req.resume_from, req.out_dir = path, path
            self.resumeRequested.emit(req)

    def show_warmup(self, steps: int | None = None, total: int | None = None) -> None:
        """Beside the warm-up: the rule (auto, before a run) or the steps the run uses (``steps`` of ``total``)."""
        if steps is not None and total:
            self.warmup_note.setText(translate("controls", "→ {steps} of {total} steps").format(steps=steps, total=total))
            self.warmup_note.setProperty("key", "run-steps")  # what the note says, in any language
        elif self.warmup_spin.value() == AUTO_WARMUP:
            self.warmup_note.setText(translate("controls", "auto: min({cap}, {share:.0%} of steps)").format(cap=WARMUP_CAP, share=WARMUP_SHARE))
            self.warmup_note.setProperty("key", "auto-rule")
        else:
            self.warmup_note.setText("")
            self.warmup_note.setProperty("key", "")

    def request(self) -> TrainRequest:
        """The run the form describes."""
        return TrainRequest(
            data=self.data_combo.currentData(), tsv_path=self.tsv_edit.text().strip(), n_examples=self.examples_spin.value(),
            augment=self.data_combo.currentData() in GLOSSED_CHOICES and self.augment_check.isChecked(),
            size=self.size_combo.currentData(), norm=self.norm_combo.currentData(), placement=self.placement_combo.currentData(),
            epochs=self.epochs_spin.value(), lr=self.lr_spin.value(), warmup=self.warmup_spin.value(), batch_tokens=self.batch_spin.value(),
            threads=self.threads_spin.value(), out_dir=self.out_edit.text().strip(),
        )

    def set_request(self, req: TrainRequest) -> None:
        """Fill the form from ``req``."""
        self.data_combo.setCurrentIndex(self.data_combo.findData(req.data))
        self.tsv_edit.setText(req.tsv_path)
        self.examples_spin.setValue(req.n_examples)
        self.augment_check.setChecked(req.augment)
        self.size_combo.setCurrentIndex(self.size_combo.findData(req.size))
        self.norm_combo.setCurrentIndex(self.norm_combo.findData(req.norm))
        self.placement_combo.setCurrentIndex(self.placement_combo.findData(req.placement))
        self.epochs_spin.setValue(req.epochs)
        self.lr_spin.setValue(req.lr)
        self.warmup_spin.setValue(req.warmup)
        self.batch_spin.setValue(req.batch_tokens)
        self.threads_spin.setValue(req.threads)
        if req.out_dir:
            self.out_edit.setText(req.out_dir)
            self._out_auto = False

    # -- the run, as the panel reports it --------------------------------------------------------
    def set_state(self, state: str, *, paused: bool = False, can_open: bool = False) -> None:
        """Enable what the run's ``state`` allows: the form and Start only between runs, Pause / Resume
        (``paused``) while it trains, Stop until it stops, Open when a bundle was written (``can_open``)."""
        active = state in ACTIVE_STATES
        for w in self._fields():
            w.setEnabled(not active)
        self.start_button.setEnabled(not active)
        self.pause_button.setEnabled(state in ("running", "paused"))
        self.pause_button.setText(translate("controls", "Resume") if paused else translate("controls", "Pause"))
        self.stop_button.setEnabled(active and state != "stopping")
        self.open_button.setEnabled(not active and can_open)
        self.resume_button.setEnabled(not active)

    def append_log(self, level: str, text: str) -> None:
        """Add a line to the run's log (``level``: info, warning or error)."""
        prefix = {"warning": translate("controls", "warning: "), "error": translate("controls", "error: ")}.get(level, "")
        self.log.appendPlainText(f"{time.strftime('%H:%M:%S')}  {prefix}{text}")


def _fmt_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "–"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class TrainStatus(QtWidgets.QWidget):
    """The row above the figure: the run's state, a progress bar with ETA, speed and learning rate,
    and a banner for errors."""

    STATE_COLORS = {"failed": "#c92a2a", "finished": "#2f9e44", "paused": "#e8590c"}

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.state_label = QtWidgets.QLabel(objectName="trainStateLabel")
        self.state_label.setFont(ui_font(9.5, bold=True))
        self.progress = QtWidgets.QProgressBar(objectName="trainProgress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%p%")
        self.eta_label = QtWidgets.QLabel("", objectName="trainEtaLabel")
        self.rate_label = QtWidgets.QLabel("", objectName="trainRateLabel")
        self.lr_label = QtWidgets.QLabel("", objectName="trainLrLabel")
        self.error_banner = QtWidgets.QLabel(objectName="trainErrorBanner")
        for label in (self.state_label, self.error_banner):  # they show folder names and messages: never rich text
            label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.error_banner.setWordWrap(True)
        self.error_banner.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_banner.setStyleSheet("QLabel { background: #fff0e6; color: #a61e00; border: 1px solid #ffc9a8; border-radius: 3px; padding: 5px; }")
        self.error_banner.setVisible(False)
        row = QtWidgets.QHBoxLayout()  # the state and the bar; the figures on a row of their own (a narrow column holds them)
        row.addWidget(self.state_label)
        row.addWidget(self.progress, 1)
        figures = QtWidgets.QHBoxLayout()
        for w in (self.eta_label, self.rate_label, self.lr_label):
            w.setFont(ui_font(9))
            figures.addWidget(w)
        figures.addStretch(1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(row)
        layout.addLayout(figures)
        layout.addWidget(self.error_banner)

    def show_state(self, state: str, text: str) -> None:
        self.state_label.setText(text)
        self.state_label.setStyleSheet(f"color: {self.STATE_COLORS[state]};" if state in self.STATE_COLORS else "")

    def set_total_steps(self, total: int) -> None:
        self.progress.setRange(0, max(1, total))

    def show_step(self, event: Any) -> None:
        """The latest ``StepEvent``: progress, ETA, tokens per second, learning rate."""
        self.progress.setValue(min(self.progress.maximum(), event.step))
        self.eta_label.setText(translate("controls", "ETA {time}").format(time=_fmt_duration(event.eta_s)))
        self.rate_label.setText(translate("controls", "{rate:,.0f} tok/s").format(rate=event.tokens_per_s))
        self.lr_label.setText(translate("controls", "lr {lr:.2e}").format(lr=event.lr))

    def clear_eta(self) -> None:
        """No ETA once the run is not training (paused, stopping, ended)."""
        self.eta_label.setText("")

    def show_error(self, text: str, key: str = "") -> None:
        """Show ``text``; ``key`` names the error in any language (``error_key``)."""
        self.error_banner.setText(text)
        self.error_banner.setProperty("key", key)
        self.error_banner.setVisible(True)

    def clear_error(self) -> None:
        self.error_banner.setVisible(False)

    def error_text(self) -> str:
        """The error shown ("" when none)."""
        return "" if self.error_banner.isHidden() else self.error_banner.text()

    def error_key(self) -> str:
        """Which error is shown, in any language (``output-not-a-bundle``, ``run-failed``, …; "" when none)."""
        return "" if self.error_banner.isHidden() else str(self.error_banner.property("key") or "")
