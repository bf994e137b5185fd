"""One run owns an output folder, also when two start at once (issue 25, case 4), and an
``import-hf --force`` killed at any moment leaves a bundle that opens (the previous one or the
new one) and a stale lock the next import takes over. A few trials of ``run_faults``; the
``faults`` benchmark runs many."""

from __future__ import annotations

import random
import shutil

import pytest
from hostile_bundles import valid_bundle
from run_faults import MOMENTS, concurrent_trains, kill_during_import
from train_faults import TINY

from attnviz.cli import main
from attnviz.commands import train as train_command
from attnviz.core.bundle import load_bundle
from attnviz.core.training.trainer import Trainer

BASE = ["train", "--data", "copy", "--n-examples", "120", "--quiet", "--epochs", "1", *TINY]


def test_a_run_does_not_overwrite_a_run_that_saved_after_it_checked_the_folder(tmp_path, monkeypatch, capsys):
    """B finds the folder free, A trains and saves there, then B takes the (now free) lock: B refuses."""
    out = tmp_path / "m"
    real_check, ran = train_command._check_flags, []

    def a_runs_in_between(args):
        if not ran:
            ran.append(True)
            assert main([*BASE, "--out", str(out), "--seed", "7"]) == 0  # A, while B is between its check and its lock
        return real_check(args)

    monkeypatch.setattr(train_command, "_check_flags", a_runs_in_between)
    code = main([*BASE, "--out", str(out)])  # B
    err = capsys.readouterr().err
    assert ran and code == 1 and "was saved by another run after this one checked it" in err, err
    assert err.splitlines()[-1].startswith("attnviz: error: ") and "Traceback" not in err
    assert "--seed 7" in load_bundle(out).meta["command"]  # A's run, not overwritten


def test_a_resumed_run_does_not_overwrite_a_save_made_after_it_read_the_checkpoint(tmp_path, monkeypatch, capsys):
    out = tmp_path / "m"
    assert main([*BASE, "--out", str(out)]) == 0
    real_read, ran = Trainer.from_checkpoint, []

    def another_resume_in_between(*args, **kw):
        if not ran:
            ran.append(True)
            assert main(["train", "--out", str(out), "--resume", "--epochs", "2", "--quiet"]) == 0
        return real_read(*args, **kw)

    monkeypatch.setattr(Trainer, "from_checkpoint", another_resume_in_between)
    capsys.readouterr()
    assert main(["train", "--out", str(out), "--resume", "--epochs", "3", "--quiet"]) == 1
    assert "was saved by another run" in capsys.readouterr().err
    assert load_bundle(out).meta["epoch"] == 2  # the other resume's work, not overwritten


@pytest.mark.slow  # two training subprocesses
def test_two_trains_started_at_once_one_runs_the_other_refuses(tmp_path):
    trial = concurrent_trains(tmp_path / "m", random.Random(0))
    assert trial.held, trial


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    from tiny_marian import build_marian

    folder = tmp_path_factory.mktemp("import-kill")
    return build_marian(folder / "hf"), valid_bundle(folder, "previous")


@pytest.mark.slow  # import-hf subprocesses killed
@pytest.mark.parametrize("moment", MOMENTS)
def test_import_hf_killed_leaves_a_bundle_that_opens(sources, tmp_path, moment):
    src, previous = sources
    out = tmp_path / "out"
    shutil.copytree(previous, out)
    trial = kill_during_import(src, out, moment, random.Random(MOMENTS.index(moment)))
    assert trial.held, trial  # the previous bundle or the new one opens, and the next import works
    if trial.moment == "saving":
        assert trial.stale_lock  # left by the kill, and taken over by the next import
    assert not {p.name for p in tmp_path.iterdir()} & {".out.lock", ".out.previous"}
