"""The Train panel's controls: the run form (data, model, normalization, schedule, output folder,
start / pause / stop / open, the log) and the status and snapshot rows above and below the figure.

``TrainControlsMixin`` builds them and reads / fills the form (``request``, ``set_request``);
``TrainPanel`` (``qt_train_panel``) provides the slots they connect to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtWidgets

from attnviz.qt.train.run import DATA_CHOICES, MODEL_SIZES, TrainRequest
from attnviz.qt.widgets.colormaps import ui_font


def default_runs_dir() -> Path:
    base = QtCore.QStandardPaths.writableLocation(QtCore.QStandardPaths.StandardLocation.AppLocalDataLocation)
    return Path(base or Path.home() / ".attnviz") / "runs"


def _browse_row(edit: QtWidgets.QLineEdit, button_name: str, slot: Any) -> tuple[QtWidgets.QToolButton, QtWidgets.QHBoxLayout]:
    """``edit`` followed by a "…" button that calls ``slot``: one form row (the button, the row)."""
    button = QtWidgets.QToolButton(text="…", objectName=button_name)
    button.clicked.connect(slot)
    row = QtWidgets.QHBoxLayout()
    row.addWidget(edit, 1)
    row.addWidget(button)
    return button, row


class TrainControlsMixin:
    """The form and the status / snapshot rows of ``TrainPanel`` (mixed into the panel)."""

    def _build_form(self) -> None:
        box = QtWidgets.QGroupBox("Training run  训练")
        box.setObjectName("trainForm")
        box.setMinimumWidth(300)
        box.setMaximumWidth(380)
        form = QtWidgets.QFormLayout(box)
        form.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)

        self.data_combo = QtWidgets.QComboBox(objectName="trainDataCombo")
        for key, text in DATA_CHOICES.items():
            self.data_combo.addItem(text, key)
        self.data_combo.setCurrentIndex(self.data_combo.findData("hsk-zh-en"))
        self.data_combo.setToolTip("What to learn: HSK Chinese→English sentences, a synthetic task whose right attention is known, or your own pairs")
        form.addRow("Data", self.data_combo)
        self.tsv_edit = QtWidgets.QLineEdit(objectName="trainTsvEdit")
        self.tsv_edit.setPlaceholderText("source<TAB>target file")
        tsv_btn, tsv_row = _browse_row(self.tsv_edit, "trainTsvBrowse", self._browse_tsv)
        self.tsv_label = QtWidgets.QLabel("TSV file")
        form.addRow(self.tsv_label, tsv_row)
        self._tsv_widgets = (self.tsv_label, self.tsv_edit, tsv_btn)
        self.examples_spin = QtWidgets.QSpinBox(objectName="trainExamplesSpin", minimum=20, maximum=200000, singleStep=500, value=2000)
        self.examples_spin.setToolTip("How many random strings the synthetic task has (90% train, 5% valid, 5% test)")
        self.examples_label = QtWidgets.QLabel("Pairs")
        form.addRow(self.examples_label, self.examples_spin)

        self.size_combo = QtWidgets.QComboBox(objectName="trainSizeCombo")
        for key, (text, _) in MODEL_SIZES.items():
            self.size_combo.addItem(text, key)
        self.size_combo.setCurrentIndex(self.size_combo.findData("base"))
        form.addRow("Model", self.size_combo)
        self.norm_combo = QtWidgets.QComboBox(objectName="trainNormCombo")
        self.norm_combo.addItem("LayerNorm (per token)", "layer")
        self.norm_combo.addItem("BatchNorm (per feature)", "batch")
        self.norm_combo.setToolTip("LayerNorm normalizes the features of each token; BatchNorm each feature over the batch's tokens")
        form.addRow("Norm", self.norm_combo)
        self.placement_combo = QtWidgets.QComboBox(objectName="trainPlacementCombo")
        self.placement_combo.addItem("Pre-norm: x + Sublayer(Norm(x))", "pre")
        self.placement_combo.addItem("Post-norm: Norm(x + Sublayer(x))", "post")
        self.placement_combo.setToolTip("Post-norm is the paper's; pre-norm trains more easily on small data")
        form.addRow("Placement", self.placement_combo)
        self.epochs_spin = QtWidgets.QSpinBox(objectName="trainEpochsSpin", minimum=1, maximum=1000, value=30)
        form.addRow("Epochs", self.epochs_spin)
        self.lr_spin = QtWidgets.QDoubleSpinBox(objectName="trainLrSpin", decimals=5, minimum=1e-5, maximum=1.0, singleStep=1e-4, value=1e-3)
        self.lr_spin.setToolTip("Peak learning rate, reached at the end of the warm-up")
        form.addRow("Learning rate", self.lr_spin)
        self.warmup_spin = QtWidgets.QSpinBox(objectName="trainWarmupSpin", minimum=0, maximum=100000, singleStep=50, value=400)
        form.addRow("Warm-up steps", self.warmup_spin)
        self.batch_spin = QtWidgets.QSpinBox(objectName="trainBatchSpin", minimum=50, maximum=100000, singleStep=100, value=500)
        self.batch_spin.setToolTip("Padded tokens per batch")
        form.addRow("Batch tokens", self.batch_spin)
        self.threads_spin = QtWidgets.QSpinBox(objectName="trainThreadsSpin", minimum=1, maximum=max(1, QtCore.QThread.idealThreadCount()), value=1)
        self.threads_spin.setToolTip("CPU threads for training; 1 keeps the app responsive")
        form.addRow("Threads", self.threads_spin)

        self.out_edit = QtWidgets.QLineEdit(objectName="trainOutEdit")
        self.out_edit.setToolTip("The model bundle folder the run writes (a checkpoint after every epoch)")
        _out_btn, out_row = _browse_row(self.out_edit, "trainOutBrowse", self._browse_out)
        form.addRow("Output folder", out_row)

        buttons = QtWidgets.QGridLayout()
        self.start_button = QtWidgets.QPushButton("Start  开始", objectName="trainStartButton")
        self.pause_button = QtWidgets.QPushButton("Pause  暂停", objectName="trainPauseButton")
        self.stop_button = QtWidgets.QPushButton("Stop  停止", objectName="trainStopButton")
        self.open_button = QtWidgets.QPushButton("Open in attnviz  打开模型", objectName="trainOpenButton")
        self.start_button.setDefault(True)
        self.stop_button.setToolTip("Stop after the current step and save a checkpoint")
        self.open_button.setToolTip("Open the trained model bundle in the main window")
        buttons.addWidget(self.start_button, 0, 0)
        buttons.addWidget(self.pause_button, 0, 1)
        buttons.addWidget(self.stop_button, 1, 0)
        buttons.addWidget(self.open_button, 1, 1)
        form.addRow(buttons)
        self.start_button.clicked.connect(lambda: self.start(confirm=True))
        self.pause_button.clicked.connect(self._toggle_pause)
        self.stop_button.clicked.connect(self.stop)
        self.open_button.clicked.connect(self._open)

        self.log = QtWidgets.QPlainTextEdit(objectName="trainLog")
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(500)
        self.log.setFont(ui_font(8.5))
        self.log.setPlaceholderText("Messages of the run")
        form.addRow(self.log)

        self.data_combo.currentIndexChanged.connect(self._update_form)
        for w in (self.data_combo, self.size_combo, self.norm_combo, self.placement_combo):
            w.currentIndexChanged.connect(self._suggest_out_dir)
        self._out_auto = True
        self.out_edit.textEdited.connect(lambda _t: setattr(self, "_out_auto", False))
        self.form_box = box
        self._suggest_out_dir()

    def _build_status(self) -> None:
        self.status_row = QtWidgets.QHBoxLayout()
        self.state_label = QtWidgets.QLabel(objectName="trainStateLabel")
        self.state_label.setMinimumWidth(120)
        f = ui_font(9.5, bold=True)
        self.state_label.setFont(f)
        self.progress = QtWidgets.QProgressBar(objectName="trainProgress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%p%")
        self.eta_label = QtWidgets.QLabel("", objectName="trainEtaLabel")
        self.rate_label = QtWidgets.QLabel("", objectName="trainRateLabel")
        self.lr_label = QtWidgets.QLabel("", objectName="trainLrLabel")
        self.status_row.addWidget(self.state_label)
        self.status_row.addWidget(self.progress, 1)
        for w in (self.eta_label, self.rate_label, self.lr_label):
            w.setFont(ui_font(9))
            self.status_row.addWidget(w)
        self.error_banner = QtWidgets.QLabel(objectName="trainErrorBanner")
        self.error_banner.setWordWrap(True)
        self.error_banner.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_banner.setStyleSheet("QLabel { background: #fff0e6; color: #a61e00; border: 1px solid #ffc9a8; border-radius: 3px; padding: 5px; }")
        self.error_banner.setVisible(False)

        self.scrub_row = QtWidgets.QHBoxLayout()
        self.scrub_label = QtWidgets.QLabel("Snapshot", objectName="trainScrubLabel")
        self.scrub = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal, objectName="trainScrubSlider")
        self.scrub.setToolTip("Scrub through the probe sentence's cross-attention, epoch by epoch")
        self.scrub.setRange(0, 0)
        self.scrub.setEnabled(False)
        self.scrub.valueChanged.connect(self._on_scrub)
        self.probe_layer = QtWidgets.QComboBox(objectName="trainProbeLayerCombo")
        self.probe_layer.setToolTip("Which decoder layer's cross-attention (mean over heads)")
        self.probe_layer.currentIndexChanged.connect(lambda _i: self._show_snapshot(self.scrub.value()))
        self.norm_site = QtWidgets.QComboBox(objectName="trainNormSiteCombo")
        self.norm_site.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.norm_site.setToolTip("Which normalization's statistics are plotted over training")
        self.norm_site.currentIndexChanged.connect(lambda _i: self._update_norm_curves())
        self.scrub_row.addWidget(self.scrub_label)
        self.scrub_row.addWidget(self.scrub, 1)
        self.scrub_row.addWidget(QtWidgets.QLabel("Layer"))
        self.scrub_row.addWidget(self.probe_layer)
        self.scrub_row.addSpacing(12)
        self.scrub_row.addWidget(QtWidgets.QLabel("Norm"))
        self.scrub_row.addWidget(self.norm_site)

    # -- form -------------------------------------------------------------------------------
    def _update_form(self) -> None:
        data = self.data_combo.currentData()
        synthetic = data in ("copy", "reverse", "sort")
        for w in self._tsv_widgets:
            w.setVisible(data == "tsv")
        self.examples_label.setVisible(synthetic)
        self.examples_spin.setVisible(synthetic)

    def _suggest_out_dir(self) -> None:
        if not self._out_auto:
            return
        name = f"{self.data_combo.currentData()}-{self.size_combo.currentData()}-{self.norm_combo.currentData()}norm"
        self.out_edit.setText(str(default_runs_dir() / name))

    def _browse_tsv(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Parallel corpus (source<TAB>target)", "", "TSV files (*.tsv *.txt);;All files (*)")
        if path:
            self.tsv_edit.setText(path)

    def _browse_out(self) -> None:
        path = QtWidgets.QFileDialog.getExistingDirectory(self, "Output folder for the model bundle", self.out_edit.text())
        if path:
            self.out_edit.setText(path)
            self._out_auto = False

    def request(self) -> TrainRequest:
        """The run the form describes."""
        return TrainRequest(
            data=self.data_combo.currentData(), tsv_path=self.tsv_edit.text().strip(), n_examples=self.examples_spin.value(),
            size=self.size_combo.currentData(), norm=self.norm_combo.currentData(), placement=self.placement_combo.currentData(),
            epochs=self.epochs_spin.value(), lr=self.lr_spin.value(), warmup=self.warmup_spin.value(), batch_tokens=self.batch_spin.value(),
            threads=self.threads_spin.value(), out_dir=self.out_edit.text().strip(),
        )

    def set_request(self, req: TrainRequest) -> None:
        """Fill the form from ``req``."""
        self.data_combo.setCurrentIndex(self.data_combo.findData(req.data))
        self.tsv_edit.setText(req.tsv_path)
        self.examples_spin.setValue(req.n_examples)
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
