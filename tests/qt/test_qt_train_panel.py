"""The Train panel trains a tiny synthetic task in a worker: curves, pause/resume/stop, errors, the bundle."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import torch
from PySide6 import QtCore

from attnviz.core.bundle import BundleError, load_bundle
from attnviz.core.training import trainer as T
from attnviz.qt.export.files import render_view_to_file
from attnviz.qt.train.controls import TrainControls
from attnviz.qt.train.history import TrainHistory, site_label
from attnviz.qt.train.panel import TrainPanel
from attnviz.qt.train.run import SYNTHETIC_CHOICES, TrainRequest, summarize_norm_stats
from attnviz.qt.workers import active_workers

LEFT = QtCore.Qt.MouseButton.LeftButton
TIMEOUT = 180_000  # ms; a tiny run takes seconds, but the machine is shared


def tiny(out, epochs: int = 2, **kw) -> TrainRequest:
    return TrainRequest(data="reverse", n_examples=160, size="tiny", norm=kw.pop("norm", "layer"), epochs=epochs, lr=3e-3, warmup=10,
                        batch_tokens=120, out_dir=str(out), **kw)


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
    assert panel.status.state_label.text() == "Paused" and panel.is_running()
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
    assert "NaN" in text and "last good checkpoint" in text
    b = load_bundle(out)  # refuses NaN weights: what is there is the epoch-1 checkpoint
    assert b.meta["epoch"] == 1 and torch.isfinite(b.model.generator.weight).all()
    assert not panel.controls.open_button.isEnabled()


def test_a_full_disk_is_shown(qtbot, tmp_path, monkeypatch):
    def full(path, *a, **kw):
        raise BundleError(path, "cannot save (No space left on device)")

    monkeypatch.setattr(T, "save_bundle", full)
    panel = make_panel(qtbot, tiny(tmp_path / "full", epochs=2))
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        panel.start()
    assert done.args[0] == "failed"
    assert "No space left on device" in panel.error_text() and panel.status.error_banner.isVisibleTo(panel)
    assert panel.status.state_label.text() == "Failed"


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
    assert "output folder" in panel.error_text()
    f = tmp_path / "file"
    f.write_text("x")
    assert not panel.start(tiny(f))
    form = panel.controls
    form.data_combo.setCurrentIndex(form.data_combo.findData("tsv"))
    assert form.tsv_edit.isVisibleTo(panel) and not form.examples_spin.isVisibleTo(panel)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        assert panel.start(TrainRequest(data="tsv", tsv_path=str(tmp_path / "missing.tsv"), out_dir=str(tmp_path / "y")))
    assert done.args[0] == "failed" and "missing.tsv" in panel.error_text()
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
    assert site_label("encoder.layers.0.norm1") == "encoder layer 1 · norm1"
    history.clear()
    assert not history.steps and history.probe_matrix(0) is None and history.norm_sites() == []


def _record_questions(monkeypatch, answer):
    """Patch the question box: record each question's text and answer ``answer``."""
    from PySide6 import QtWidgets

    asked = []

    def exec_(box):
        asked.append((box.text(), box.textFormat()))
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
    assert "not an attnviz model bundle" in panel.error_text() and "<b>u</b>" in panel.error_text()
    assert panel.status.error_banner.textFormat() == QtCore.Qt.TextFormat.PlainText
    assert (user / "thesis.tex").read_text() == "x" and (user / "photos").is_dir()
    panel.grab().save(str(tmp_path / "refused.png"))


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
    assert len(asked) == 1 and "already holds a model bundle" in asked[0][0] and asked[0][1] == QtCore.Qt.TextFormat.PlainText
    assert not panel.is_running() and load_bundle(out).meta["saved_at"] == saved_at
    asked = _record_questions(monkeypatch, buttons.Yes)
    with qtbot.waitSignal(panel.trainingFinished, timeout=TIMEOUT) as done:
        qtbot.mouseClick(panel.controls.start_button, LEFT)
    assert len(asked) == 1 and done.args[0] == "finished"
