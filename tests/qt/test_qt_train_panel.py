"""The Train panel trains a tiny synthetic task in a worker: curves, pause/resume/stop, errors, the bundle."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.core.bundle import BundleError, load_bundle
from attnviz.core.training import trainer as T
from attnviz.qt.core_text import kind_name
from attnviz.qt.export.files import render_view_to_file
from attnviz.qt.i18n import translate
from attnviz.qt.train.controls import TrainControls, default_runs_dir
from attnviz.qt.train.history import LAYER_SITE, TrainHistory, site_label
from attnviz.qt.train.panel import RESUME_HINT, TrainPanel
from attnviz.qt.train.run import AUTO_WARMUP, SYNTHETIC_CHOICES, WARMUP_CAP, WARMUP_SHARE, TrainRequest, auto_warmup, state_text, summarize_norm_stats
from attnviz.qt.widgets.colormaps import ui_font
from attnviz.qt.workers import active_workers

LEFT = QtCore.Qt.MouseButton.LeftButton
TIMEOUT = 180_000  # ms; a tiny run takes seconds, but the machine is shared


def tiny(out, epochs: int = 2, **kw) -> TrainRequest:
    return TrainRequest(data="reverse", n_examples=160, size="tiny", norm=kw.pop("norm", "layer"), epochs=epochs, lr=3e-3, warmup=10,
                        batch_tokens=120, out_dir=str(out), **kw)


def is_auto_rule(note: QtWidgets.QLabel) -> bool:
    """The warm-up note states the automatic rule, min(400, 10% of the steps), in either language."""
    text = note.text()
    return note.property("key") == "auto-rule" and str(WARMUP_CAP) in text and f"{WARMUP_SHARE:.0%}" in text


def make_panel(qtbot, req: TrainRequest) -> TrainPanel:
    panel = TrainPanel()
    qtbot.addWidget(panel)
    panel.resize(1300, 800)
    panel.controls.set_request(req)
    return panel


def test_trains_to_completion_and_the_bundle_opens(qtbot, tmp_path):
    out = tmp_path / "reverse-tiny"
    panel = make_panel(qtbot, tiny(out, norm="batch"))
    assert panel.objectName() == "trainPanel" and panel.state() == "idle"
    form = panel.controls
    assert form.request().size == "tiny" and form.request().norm == "batch" and form.examples_spin.isVisibleTo(panel)
    evals = []
    panel.add_trainer_callback("eval", evals.append)
    states = []
    panel.stateChanged.connect(states.append)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(form.start_button, LEFT)
        assert panel.is_running() and not form.start_button.isEnabled() and not form.epochs_spin.isEnabled()
    assert done.args == ["finished", str(out)]
    assert states[0] == "preparing" and "running" in states and states[-1] == "finished"
    # the curves received every logged point
    history = panel.history
    steps = np.asarray(history.steps)
    assert len(steps) >= 2 and steps[-1, 0] == history.total_steps
    x, loss = panel.figure.train_curve.getData()
    np.testing.assert_array_equal(x, steps[:, 0])
    np.testing.assert_allclose(loss, steps[:, 1])
    np.testing.assert_allclose(panel.figure.lr_curve.getData()[1], steps[:, 2])
    assert [e["epoch"] for e in history.evals] == [1, 2] and len(evals) == 2
    vx, vl = panel.figure.valid_curve.getData()
    np.testing.assert_allclose(vl, [e.metrics["valid_loss"] for e in evals])
    np.testing.assert_allclose(panel.figure.acc_curve.getData()[1], [100 * e.metrics["valid_token_accuracy"] for e in evals])
    np.testing.assert_allclose(panel.figure.bleu_curve.getData()[1], [e.metrics["valid_bleu"] for e in evals])
    np.testing.assert_allclose(panel.figure.chrf_curve.getData()[1], [e.metrics["valid_chrf"] for e in evals])
    progress = panel.status.progress
    assert progress.value() == progress.maximum() == history.total_steps
    # the probe's cross-attention, and the slider that scrubs through the snapshots
    bar = panel.snapshot_bar
    assert len(history.snapshots) == 2 and bar.scrub.isEnabled() and bar.scrub.maximum() == 1 and bar.scrub.value() == 1
    last = evals[-1].probes[0].cross_attention
    np.testing.assert_allclose(panel.figure.probe.matrix(), last[max(last)].mean(0), rtol=1e-6)
    bar.scrub.setValue(0)
    first = evals[0].probes[0].cross_attention
    np.testing.assert_allclose(panel.figure.probe.matrix(), first[max(first)].mean(0), rtol=1e-6)
    assert "epoch 1 of 2" in bar.scrub_label.text()
    # norm statistics over training (BatchNorm: running vs batch std)
    site = bar.norm_site.currentData()
    want = [summarize_norm_stats(e.norm_stats)[site] for e in evals]
    np.testing.assert_allclose(panel.figure.norm_a.getData()[1], [w["running_std"] for w in want])
    np.testing.assert_allclose(panel.figure.norm_b.getData()[1], [w["batch_std"] for w in want])
    # the bundle is written and loads; one click hands it to the main window
    b = load_bundle(out)
    assert b.config.norm == "batch" and b.config.d_model == 32 and b.meta["status"] == "finished" and b.meta["epochs"] == 2
    assert form.open_button.isEnabled()
    with qtbot.waitSignal(panel.bundleReady) as ready:
        qtbot.mouseClick(form.open_button, LEFT)
    assert ready.args == [str(out)]
    for fmt in ("png", "svg", "pdf"):  # the panel exports its figure like any view
        data = render_view_to_file(panel, tmp_path / f"train.{fmt}").read_bytes()
        assert len(data) > 2000 and data.startswith({"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}[fmt])
    np.testing.assert_array_equal(panel.figure_data().values["train_loss"], steps[:, 1])
    panel.set_theme("dark")
    assert panel.figure.theme.name == "dark" and panel.theme.name == "dark"


def test_pause_resume_and_stop(qtbot, tmp_path):
    out = tmp_path / "ctl"
    panel = make_panel(qtbot, tiny(out, epochs=60))
    form = panel.controls
    with qtbot.waitSignal(panel.progressed, timeout=TIMEOUT):
        qtbot.mouseClick(form.start_button, LEFT)
    with qtbot.waitSignal(panel.stateChanged, timeout=TIMEOUT, check_params_cb=lambda s: s == "paused"):
        qtbot.mouseClick(form.pause_button, LEFT)
    trainer = panel.trainer
    held = trainer.step
    assert trainer.paused and any(w.is_running for w in active_workers()) and form.pause_button.text().startswith("Resume")
    assert panel.status.state_label.text() == state_text("paused") and panel.is_running()
    QtCore.QCoreApplication.processEvents()
    assert trainer.step == held  # held between steps
    with qtbot.waitSignal(panel.stateChanged, timeout=TIMEOUT, check_params_cb=lambda s: s == "running"):
        qtbot.mouseClick(form.pause_button, LEFT)
    assert not trainer.paused and form.pause_button.text().startswith("Pause")
    with qtbot.waitSignal(panel.progressed, timeout=TIMEOUT, check_params_cb=lambda step, total: step > held):
        pass
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(form.stop_button, LEFT)
    assert done.args == ["stopped", str(out)]
    assert held < trainer.step < trainer.total_steps
    b = load_bundle(out)
    assert b.meta["status"] == "stopped" and b.meta["step"] == trainer.step
    assert form.open_button.isEnabled() and form.start_button.isEnabled() and not panel.error_text()


def test_nan_loss_is_shown_and_the_last_good_checkpoint_kept(qtbot, tmp_path):
    out = tmp_path / "nan"
    req = tiny(out, epochs=4, extra_options={"log_every": 1})  # a step event per step
    panel = make_panel(qtbot, req)

    def poison(ev):  # two steps into epoch 2, after the first checkpoint
        t = panel.trainer
        if ev.step == t.steps_per_epoch + 2:
            with torch.no_grad():
                t.model.generator.weight.fill_(float("nan"))

    panel.add_trainer_callback("step", poison)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        panel.start(req)
    assert done.args[0] == "failed" and panel.state() == "failed"
    text = panel.error_text()
    assert panel.error_key() == "run-failed" and str(out) in text  # the trainer's message names the folder that keeps the checkpoint
    assert "NaN" in text and "last good checkpoint" in text  # the core's message (English by design); data, not UI text
    b = load_bundle(out)  # refuses NaN weights: what is there is the epoch-1 checkpoint
    assert b.meta["epoch"] == 1 and torch.isfinite(b.model.generator.weight).all()
    assert not panel.controls.open_button.isEnabled()


@pytest.mark.slow
def test_a_full_disk_is_shown(qtbot, tmp_path, monkeypatch):
    def full(path, *a, **kw):
        raise BundleError(path, "cannot save (No space left on device)")

    monkeypatch.setattr(T, "save_bundle", full)
    panel = make_panel(qtbot, tiny(tmp_path / "full", epochs=2))
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        panel.start()
    assert done.args[0] == "failed"
    assert "No space left on device" in panel.error_text() and panel.status.error_banner.isVisibleTo(panel)  # the OS's error; data, not UI text
    assert panel.error_key() == "run-error" and panel.status.state_label.text() == state_text("failed")


def test_shutdown_stops_and_joins_the_worker(qtbot, tmp_path):
    out = tmp_path / "closing"
    panel = make_panel(qtbot, tiny(out, epochs=60))
    finished = []
    panel.trainingFinished.connect(lambda s, p: finished.append(s))
    with qtbot.waitSignal(panel.progressed, timeout=TIMEOUT):
        panel.start()
    workers = active_workers()
    assert workers and panel.shutdown(timeout_s=120)
    assert all(w.is_done for w in workers) and not panel.is_running() and finished == ["stopped"]
    assert load_bundle(out).meta["status"] == "stopped"


def test_bad_requests(qtbot, tmp_path):
    panel = make_panel(qtbot, tiny(tmp_path / "x"))
    assert not panel.start(TrainRequest(out_dir=""))
    assert panel.error_key() == "no-output-folder" and panel.error_text()
    f = tmp_path / "file"
    f.write_text("x")
    assert not panel.start(tiny(f))
    assert panel.error_key() == "output-is-a-file" and str(f) in panel.error_text()
    form = panel.controls
    form.data_combo.setCurrentIndex(form.data_combo.findData("tsv"))
    assert form.tsv_edit.isVisibleTo(panel) and not form.examples_spin.isVisibleTo(panel)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        assert panel.start(TrainRequest(data="tsv", tsv_path=str(tmp_path / "missing.tsv"), out_dir=str(tmp_path / "y")))
    assert done.args[0] == "failed" and panel.error_key() == "run-error" and "missing.tsv" in panel.error_text()
    assert math.isfinite(panel.status.progress.value())


def test_the_form_builds_the_request_and_asks_for_the_run(qtbot, tmp_path):
    form = TrainControls()
    qtbot.addWidget(form)
    form.set_request(tiny(tmp_path / "form"))
    req = form.request()
    assert (req.data, req.n_examples, req.size, req.epochs, req.out_dir) == ("reverse", 160, "tiny", 2, str(tmp_path / "form"))
    asked = []
    form.startRequested.connect(asked.append)
    form.stopRequested.connect(lambda: asked.append("stop"))
    form.set_state("idle")
    qtbot.mouseClick(form.start_button, LEFT)
    assert asked == [req]
    form.set_state("running")
    assert not form.start_button.isEnabled() and not form.out_edit.isEnabled() and form.pause_button.isEnabled()
    qtbot.mouseClick(form.stop_button, LEFT)
    assert asked[-1] == "stop"
    form.set_state("paused", paused=True)
    assert form.pause_button.text().startswith("Resume")
    form.set_state("finished", can_open=True)
    assert form.open_button.isEnabled() and form.start_button.isEnabled()


def test_synthetic_choices_are_the_corpora_tasks():
    from attnviz.core.data.corpora import SYNTHETIC_TASKS

    assert SYNTHETIC_CHOICES == SYNTHETIC_TASKS


def test_history_records_steps_evaluations_and_snapshots():
    history = TrainHistory()
    history.add_step(SimpleNamespace(step=5, loss=2.5, lr=1e-3))
    att = {0: np.full((2, 3, 4), 0.25), 1: np.eye(3, 4)[None].repeat(2, 0)}
    probe = SimpleNamespace(cross_attention=att)
    history.add_eval(SimpleNamespace(step=5, epoch=0, metrics={"valid_loss": 2.0}, probes=[probe]),
                     {"encoder.layers.0.norm1": {"token_std": 1.5, "token_abs_mean": 0.1}})
    np.testing.assert_array_equal(history.steps_array(), [[5, 2.5, 1e-3]])
    assert history.evals == [{"step": 5, "epoch": 1, "valid_loss": 2.0}] and history.probe_layers() == [0, 1]
    np.testing.assert_array_equal(history.probe_matrix(0), np.eye(3, 4))  # the last layer unless asked
    np.testing.assert_array_equal(history.probe_matrix(0, 0), np.full((3, 4), 0.25))
    steps, a, b, names = history.norm_curves("encoder.layers.0.norm1")
    assert list(steps) == [5] and list(a) == [1.5] and list(b) == [0.1] and names[0].startswith("std")
    assert site_label("encoder.layers.0.norm1") == translate("history", LAYER_SITE).format(stack=kind_name("encoder"), layer=1, norm="norm1")
    history.clear()
    assert not history.steps and history.probe_matrix(0) is None and history.norm_sites() == []


def _record_questions(monkeypatch, answer):
    """Patch the question box: record each question's text, text format and key, and answer ``answer``."""
    from PySide6 import QtWidgets

    asked = []

    def exec_(box):
        asked.append((box.text(), box.textFormat(), box.property("key")))
        return answer

    monkeypatch.setattr(QtWidgets.QMessageBox, "exec", exec_)
    return asked


def test_a_folder_that_is_not_a_bundle_is_refused_without_a_question(qtbot, tmp_path, monkeypatch):
    from PySide6 import QtWidgets

    user = tmp_path / "<b>u</b>"
    (user / "photos").mkdir(parents=True)
    (user / "thesis.tex").write_text("x")
    asked = _record_questions(monkeypatch, QtWidgets.QMessageBox.StandardButton.Yes)
    panel = make_panel(qtbot, tiny(user))
    qtbot.mouseClick(panel.controls.start_button, LEFT)
    assert not panel.is_running() and asked == []
    assert panel.error_key() == "output-not-a-bundle" and str(user) in panel.error_text()  # the folder's name, "<b>u</b>" as typed
    assert panel.status.error_banner.textFormat() == QtCore.Qt.TextFormat.PlainText
    assert (user / "thesis.tex").read_text() == "x" and (user / "photos").is_dir()
    panel.grab().save(str(tmp_path / "refused.png"))


@pytest.mark.slow
def test_replacing_a_bundle_asks_first(qtbot, tmp_path, monkeypatch):
    from PySide6 import QtWidgets

    out = tmp_path / "bundle"
    panel = make_panel(qtbot, tiny(out, epochs=1))
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT):
        assert panel.start()
    saved_at = load_bundle(out).meta["saved_at"]
    buttons = QtWidgets.QMessageBox.StandardButton
    asked = _record_questions(monkeypatch, buttons.No)
    qtbot.mouseClick(panel.controls.start_button, LEFT)
    text, text_format, key = asked[0]
    assert len(asked) == 1 and key == "replace-bundle" and str(out) in text and text_format == QtCore.Qt.TextFormat.PlainText
    assert not panel.is_running() and load_bundle(out).meta["saved_at"] == saved_at
    asked = _record_questions(monkeypatch, buttons.Yes)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(panel.controls.start_button, LEFT)
    assert len(asked) == 1 and done.args[0] == "finished"


# -- the ETA, Resume from…, the automatic warm-up, the default folder, the probe title --------------
def _choose_folder(monkeypatch, path) -> None:
    monkeypatch.setattr(QtWidgets.QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(path)))


@pytest.mark.slow  # two trainings
def test_stop_clears_the_eta_and_resume_from_continues_the_run(qtbot, tmp_path, monkeypatch):
    out = tmp_path / "resumable"
    panel = make_panel(qtbot, tiny(out, epochs=60))
    form = panel.controls
    with qtbot.waitSignal(panel.progressed, timeout=TIMEOUT):
        qtbot.mouseClick(form.start_button, LEFT)
    qtbot.waitUntil(lambda: panel.status.eta_label.text().startswith("ETA"), timeout=TIMEOUT)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(form.stop_button, LEFT)
    assert done.args == ["stopped", str(out)]
    assert panel.status.eta_label.text() == ""  # no ETA for a run that is not training
    log = form.log.toPlainText()
    assert translate("panel", RESUME_HINT) in log and "--resume" not in log  # the panel's button, not the command line's option
    stopped_at = load_bundle(out).meta["step"]
    assert form.resume_button.isEnabled()
    _choose_folder(monkeypatch, out)
    with qtbot.waitSignal(panel.progressed, timeout=TIMEOUT, check_params_cb=lambda step, total: step > stopped_at):
        qtbot.mouseClick(form.resume_button, LEFT)
    assert not form.resume_button.isEnabled() and panel.trainer.options.epochs == 60
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(form.stop_button, LEFT)
    meta = load_bundle(out).meta
    assert done.args[0] == "stopped" and meta["step"] > stopped_at
    assert "Train panel" in meta["resumed_with"][-1]  # meta.json's record of the command (English); data, not UI text


def test_resume_from_refuses_a_folder_that_is_not_a_bundle(qtbot, tmp_path, monkeypatch):
    panel = make_panel(qtbot, tiny(tmp_path / "x"))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine", encoding="utf-8")
    _choose_folder(monkeypatch, tmp_path / "other")
    qtbot.mouseClick(panel.controls.resume_button, LEFT)
    assert panel.state() == "idle" and panel.error_key() == "resume-not-a-bundle" and str(tmp_path / "other") in panel.error_text()


@pytest.mark.slow  # two trainings
def test_the_warm_up_scales_to_the_run_and_a_finished_run_resumes_to_more_epochs(qtbot, tmp_path, monkeypatch):
    out = tmp_path / "auto"
    form = TrainControls()
    qtbot.addWidget(form)
    assert form.request().warmup == AUTO_WARMUP and form.warmup_spin.text() == "auto"
    assert is_auto_rule(form.warmup_note)
    req = TrainRequest(data="reverse", n_examples=160, size="tiny", epochs=2, lr=3e-3, batch_tokens=120, out_dir=str(out))
    panel = make_panel(qtbot, req)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(panel.controls.start_button, LEFT)
    assert done.args[0] == "finished"
    total = panel.history.total_steps
    want = auto_warmup(total)
    assert want == max(1, min(400, round(0.1 * total))) < 400
    assert load_bundle(out).meta["options"]["warmup"] == want
    assert panel.controls.warmup_note.text() == f"→ {want} of {total} steps"
    assert f"warm-up: {want} of {total} steps" in panel.controls.log.toPlainText()
    # a finished run goes on only to more epochs than it has
    _choose_folder(monkeypatch, out)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(panel.controls.resume_button, LEFT)
    assert done.args[0] == "failed" and panel.error_key() == "already-finished" and str(out) in panel.error_text()
    panel.controls.epochs_spin.setValue(3)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(panel.controls.resume_button, LEFT)
    meta = load_bundle(out).meta
    assert done.args[0] == "finished" and meta["epoch"] == 3 and meta["options"]["epochs"] == 3


def test_the_default_output_folder_names_the_app_once(qtbot):
    app = QtCore.QCoreApplication.instance()
    names = app.organizationName(), app.applicationName()
    app.setOrganizationName("attnviz")
    app.setApplicationName("attnviz")
    try:
        path = default_runs_dir()
        form = TrainControls()
        qtbot.addWidget(form)
        shown = Path(form.out_edit.text())
    finally:
        app.setOrganizationName(names[0])
        app.setApplicationName(names[1])
    assert path.parts[-2:] == ("attnviz", "runs")
    assert all(a != b for a, b in zip(shown.parts, shown.parts[1:]))
    assert shown.parent == path


@pytest.mark.slow
def test_the_probe_title_fits_at_1024_px(qtbot, tmp_path):
    panel = make_panel(qtbot, tiny(tmp_path / "probe"))
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT):
        qtbot.mouseClick(panel.controls.start_button, LEFT)
    panel.resize(1024, 560)
    panel.show()
    qtbot.waitExposed(panel)
    QtWidgets.QApplication.processEvents()
    fig = panel.figure
    title = fig.probe_title
    text = title.plain_text().split(" — ")[0]
    assert text.startswith("Probe · epoch 2")
    width = QtGui.QFontMetricsF(ui_font(11, bold=True)).horizontalAdvance(text)
    rect = title.sceneBoundingRect()
    assert width <= rect.width()  # the title line is drawn whole
    assert rect.left() >= fig.norm_plot.sceneBoundingRect().right() - 1  # and beside, not over, its neighbour
    view = fig.figure_canvas()
    assert view.mapFromScene(rect.topRight()).x() <= view.viewport().width()


def _dock(qtbot, width: int, height: int) -> tuple[QtWidgets.QScrollArea, TrainPanel]:
    """The panel as the window's Train dock holds it: in a scroll area of ``width``×``height``, in the
    middle of a run (state, progress, ETA) with 30 epochs' curves, norm statistics and probes shown."""
    panel = TrainPanel()
    scroll = QtWidgets.QScrollArea(objectName="trainScroll")
    scroll.setWidget(panel)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    qtbot.addWidget(scroll)
    history, total = panel.history, 1200
    for step in range(1, total + 1):
        history.add_step(SimpleNamespace(step=step, loss=6.0 - step / 250, lr=1e-3 * min(1.0, step / 120) * (1 - step / 1500)))
    probe = SimpleNamespace(cross_attention={layer: np.full((4, 5, 6), 1 / 6) for layer in range(3)}, out_pieces=["▁I", "▁like", "▁tea", ".", "</s>"],
                            src_pieces=["我", "喜欢", "喝", "茶", "。", "</s>"], source="我喜欢喝茶。", hypothesis="I like tea.")
    for epoch in range(30):
        step = (epoch + 1) * 40
        metrics = {"valid_loss": 5.0 - step / 400, "valid_token_accuracy": step / 1500, "valid_bleu": step / 50, "valid_chrf": step / 25}
        norms = {f"decoder.layers.{i}.norm3": {"token_std": 1.0 - step / 3000, "token_abs_mean": 0.2 - step / 9000} for i in range(3)}
        history.add_eval(SimpleNamespace(step=step, epoch=epoch, metrics=metrics, probes=[probe]), norms)
    panel.figure.set_step_range(total)
    panel.figure.show_history(history.steps_array(), history.evals)
    panel.snapshot_bar.refresh()
    panel.status.set_total_steps(total)
    panel.status.show_state("running", "Training · epoch 30/30")
    panel.status.show_step(SimpleNamespace(step=1190, eta_s=3725.0, tokens_per_s=12345.0, lr=2.1e-4))
    scroll.resize(width, height)
    scroll.show()
    qtbot.waitExposed(scroll)
    for _ in range(3):
        QtWidgets.QApplication.processEvents()
    return scroll, panel


def test_the_panel_reads_at_the_dock_sizes_of_small_screens(qtbot):
    """At the Train dock's sizes in 1024×700 and 1366×768 windows (and a wide bottom dock), no text of
    the figure is cut off or drawn over another and every label fits: the form goes beside a figure
    of one column where both fit (the live plots start beside the form), above it where they do
    not, the figure takes as many columns as fit, and the panel scrolls vertically, never sideways."""
    from window_helpers import layout_problems, shown

    for (width, height), side_by_side, columns in (((508, 589), False, 2), ((683, 657), True, 1), ((1214, 406), True, 3)):
        scroll, panel = _dock(qtbot, width, height)
        assert layout_problems(scroll) == {}, (width, height)
        scroll.ensureWidgetVisible(panel.figure.canvas)  # the figure scrolled into view is checked too
        QtWidgets.QApplication.processEvents()
        assert shown(panel.figure.canvas, scroll)
        assert layout_problems(scroll) == {}, (width, height)
        assert panel.side_by_side() is side_by_side and panel.figure.columns() == columns, (width, height)
        assert panel.width() == scroll.viewport().width()  # no sideways scrolling
        canvas = panel.figure.canvas
        assert canvas.height() >= panel.figure.canvas_min_size(columns).height()  # the figure keeps a readable height
        for plot in (panel.figure.loss_plot, panel.figure.probe):
            assert plot.sceneBoundingRect().height() >= 150
        note = panel.controls.warmup_note
        assert is_auto_rule(note) and note.height() >= note.heightForWidth(note.width())  # wrapped, never cut
        scroll.close()


def test_the_figure_moves_its_cells_to_the_columns_that_fit(qtbot):
    panel = TrainPanel()
    qtbot.addWidget(panel)
    fig = panel.figure
    narrow, wide = fig.canvas_min_size(2).width(), fig.canvas_min_size(3).width()
    assert fig.columns_for(narrow) == 2 and fig.columns_for(wide - 1) == 2 and fig.columns_for(wide) == 3 and fig.columns_for(100) == 1
    fig.arrange(2)
    cells = [fig.loss_plot, fig.acc_plot, fig.bleu_plot, fig.lr_plot, fig.norm_plot, fig.probe_box]
    assert [fig.canvas.ci.items[c] for c in cells] == [[(0, 0)], [(0, 1)], [(1, 0)], [(1, 1)], [(2, 0)], [(2, 1)]]
    assert fig.canvas.minimumHeight() == fig.canvas_min_size(2).height() > fig.canvas_min_size(3).height()
    fig.arrange(3)
    assert [fig.canvas.ci.items[c] for c in cells] == [[(0, 0)], [(0, 1)], [(0, 2)], [(1, 0)], [(1, 1)], [(1, 2)]]


@pytest.mark.slow  # builds the augmented HSK data (~5 s)
def test_hsk_runs_widen_their_data_as_the_default_model_did_unless_asked_not_to(qtbot):
    from attnviz.qt.train.run import _load_dataset

    form = TrainControls()
    qtbot.addWidget(form)
    form.data_combo.setCurrentIndex(form.data_combo.findData("hsk-zh-en"))
    assert form.augment_check.isVisibleTo(form) and form.augment_check.isChecked()
    req = form.request()
    assert req.augment and "CC-CEDICT + word and role swaps" in req.describe()  # meta.json's record of the run (English); data, not UI text
    data = _load_dataset(req)
    assert data.spec["augment"]["kinds"] == ["cedict", "substitution", "roles-wide"] and data.spec["augment"]["per_pair"] == 4
    form.augment_check.setChecked(False)
    assert "augment" not in _load_dataset(form.request()).spec
    form.augment_check.setChecked(True)
    form.data_combo.setCurrentIndex(form.data_combo.findData("reverse"))
    assert not form.augment_check.isVisibleTo(form) and not form.request().augment  # only HSK has glosses to swap


def test_the_form_offers_the_tatoeba_pairs_alone_and_mixed_with_hsk(qtbot):
    from attnviz.core.data.corpora import MIX_NAME, TATOEBA_NAME
    from attnviz.qt.train.run import TATOEBA_CHOICES, _load_dataset

    assert TATOEBA_CHOICES == (TATOEBA_NAME, MIX_NAME)
    form = TrainControls()
    qtbot.addWidget(form)
    form.data_combo.setCurrentIndex(form.data_combo.findData(MIX_NAME))
    assert form.augment_check.isVisibleTo(form) and form.request().augment  # the HSK part has glosses to swap
    assert "+" in form.out_edit.text() and "," not in Path(form.out_edit.text()).name
    form.data_combo.setCurrentIndex(form.data_combo.findData(TATOEBA_NAME))
    assert not form.augment_check.isVisibleTo(form) and not form.request().augment
    data = _load_dataset(form.request())
    assert data.name == TATOEBA_NAME and data.sizes["train"] > 45_000 and "Tatoeba" in data.attribution


def test_a_folder_another_run_owns_is_refused_in_one_line(qtbot, tmp_path):
    """One run owns an output folder: the panel's run on a folder in use fails with one line, and
    the other run's lock stays its own."""
    from attnviz.core.folder_lock import lock_path, output_lock

    out = tmp_path / "owned"
    panel = make_panel(qtbot, tiny(out, epochs=2))
    with output_lock(out, "train"):
        lock = lock_path(out).read_bytes()
        with qtbot.waitSignal(panel.trainingFinished, timeout=30000) as done:
            assert panel.start() is not False
        assert lock_path(out).read_bytes() == lock
    assert done.args[0] == "failed"
    assert panel.error_key() == "run-error" and "\n" not in panel.error_text().strip()
    assert "in use by another" in panel.error_text()  # the core's folder lock message (English by design); data, not UI text


def test_a_choice_wider_than_its_box_reads_shortened_with_its_whole_text_in_the_tooltip(qtbot):
    """A 1366×768 window's Train dock is about 683 px wide: the form's choices that do not fit read
    “…” (not cut under the arrow), and the tooltip holds the whole text."""
    panel = TrainPanel()
    qtbot.addWidget(panel)
    panel.resize(683, 670)
    panel.show()
    qtbot.waitExposed(panel)
    combos = [c for c in panel.controls.findChildren(QtWidgets.QComboBox) if c.isVisible()]
    narrow = [c for c in combos if c.fontMetrics().horizontalAdvance(c.currentText()) > c.width() - 30]
    assert narrow, [(c.objectName(), c.width()) for c in combos]  # the case this is about
    for c in combos:
        shown = c.shown_text()
        assert shown == c.currentText() or (shown.endswith("…") and c.currentText().startswith(shown[:-1])), (c.objectName(), shown)
        assert c.currentText() in c.toolTip()
