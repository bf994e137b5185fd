"""``attnviz train`` against hostile input and a crashing machine: folders that are not ours, a kill
between a checkpoint's renames or anywhere in a save, the original command resumed, bad numbers,
a FIFO as data, tampered training state and metadata."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file
from train_faults import ROOT, TINY, environment, kill_during_save

from attnviz.cli import main
from attnviz.core import bundle as B
from attnviz.core.bundle import load_bundle, previous_path
from attnviz.core.training.checkpoint import STATE_JSON, STATE_TENSORS

pytestmark = pytest.mark.slow  # subprocesses killed mid-write

BASE = ["train", "--data", "copy", "--n-examples", "120", "--quiet", *TINY]


def train(out: Path, epochs: int = 1, *extra: str) -> int:
    return main([*BASE, "--out", str(out), "--epochs", str(epochs), *extra])


def resume(out: Path, epochs: int = 2, *extra: str) -> int:
    """``--resume`` without ``--data``: the run reads the data set its meta.json names."""
    return main(["train", "--out", str(out), "--resume", "--epochs", str(epochs), "--quiet", *extra])


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnviz: error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A finished one-epoch run (its folder is copied, never changed)."""
    out = tmp_path_factory.mktemp("faults") / "run"
    assert train(out) == 0
    return out


def copy_of(checkpoint: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(checkpoint, out)
    return out


# -- 1. --force never deletes what is not ours ------------------------------------------------
def foreign_folder(path: Path) -> Path:
    (path / "photos").mkdir(parents=True)
    (path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    (path / "thesis.tex").write_text("x")
    return path


def test_force_never_replaces_a_folder_that_is_not_a_bundle(tmp_path, capsys):
    user = foreign_folder(tmp_path / "u")
    for extra in ((), ("--force",)):
        assert train(user, 1, *extra) == 1
        line = one_line_error(capsys)
        assert "not an attnviz model bundle" in line and "--force" not in line
    assert (user / "thesis.tex").read_text() == "x" and (user / "photos" / "cat.jpg").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["u"]  # nothing renamed aside


def test_force_refuses_a_bundle_holding_a_file_of_the_user(checkpoint, tmp_path, capsys):
    out = copy_of(checkpoint, tmp_path)
    (out / "notes.txt").write_text("mine")
    assert train(out, 1, "--force") == 1
    assert "not an attnviz model bundle" in one_line_error(capsys)
    assert (out / "notes.txt").read_text() == "mine"


def test_force_replaces_a_bundle_and_an_empty_folder_is_used(checkpoint, tmp_path, capsys):
    out = copy_of(checkpoint, tmp_path)
    assert train(out, 1) == 1
    assert "--force to replace it" in one_line_error(capsys)
    before = load_bundle(out).meta["saved_at"]
    time.sleep(1.1)
    assert train(out, 1, "--force") == 0
    assert load_bundle(out).meta["saved_at"] != before
    empty = tmp_path / "empty"
    empty.mkdir()
    assert train(empty, 1) == 0 and load_bundle(empty).meta["status"] == "finished"


def test_out_that_is_a_file_is_refused_before_any_work(tmp_path, capsys):
    f = tmp_path / "model"
    f.write_text("x")
    assert train(f, 1, "--force") == 1
    assert "is a file" in one_line_error(capsys) and f.read_text() == "x"


# -- 3. checkpoints: a kill between the renames, anywhere in a save, and the leftovers -------
class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs, no handler cleans up."""


def test_a_kill_between_the_renames_loses_nothing(checkpoint, tmp_path, capsys, monkeypatch):
    out = copy_of(checkpoint, tmp_path)
    real_replace = os.replace

    def replace(src, dst):
        if Path(src).name.startswith(f".{out.name}.saving-"):  # the second rename: the new checkpoint into place
            raise Killed
        real_replace(src, dst)

    monkeypatch.setattr(B.os, "replace", replace)
    with pytest.raises(Killed):
        train(out, 2, "--resume")
    monkeypatch.setattr(B.os, "replace", real_replace)
    capsys.readouterr()
    assert not out.exists() and previous_path(out).is_dir()
    assert load_bundle(out).meta["epoch"] == 1  # loading falls back to .run.previous
    assert train(out, 1) == 1  # a fresh run in the same place does not delete it
    assert "already holds a model bundle" in one_line_error(capsys) and previous_path(out).is_dir()
    assert train(out, 2, "--resume") == 0  # --resume finds the state where the load does
    assert load_bundle(out).meta["epoch"] == 2 and not previous_path(out).exists()


def test_leftovers_of_killed_saves_are_removed_when_old(checkpoint, tmp_path, capsys):
    out = copy_of(checkpoint, tmp_path)
    old = tmp_path / ".run.saving-abc123"
    young = tmp_path / ".run.saving-def456"
    for d in (old, young):
        d.mkdir()
        (d / "model.safetensors").write_bytes(b"half")
    part = out / ".model.safetensors.abcd_123.part"
    part.write_bytes(b"half")
    theirs = [tmp_path / ".other.saving-abc", out.parent / "run.saving-x", tmp_path / "keep.part"]
    for p in theirs:
        p.mkdir() if "saving" in p.name else p.write_text("x")
    hour_ago = time.time() - 3600
    for p in (old, old / "model.safetensors", part, *theirs):
        os.utime(p, (hour_ago, hour_ago))
    assert train(out, 2, "--resume") == 0
    assert not old.exists() and not part.exists()
    assert young.exists() and all(p.exists() for p in theirs)


@pytest.mark.parametrize("seed", [0, 1])
def test_kill_9_during_checkpoint_saves_then_resume(tmp_path, seed):
    trial = kill_during_save(tmp_path / "m", random.Random(seed))
    assert trial.resumed_epochs == trial.epoch_before + 1


# -- 4. the original command with --resume -------------------------------------------------
def test_resume_of_the_exact_original_command(tmp_path, capsys):
    out = tmp_path / "m"
    cmd = [*BASE, "--n-examples", "90", "--out", str(out), "--epochs", "1"]
    assert main(cmd) == 0
    assert main([*cmd, "--resume"]) == 0, capsys.readouterr().err
    assert main([*cmd[:-1], "2", "--resume"]) == 0
    assert load_bundle(out).meta["epoch"] == 2


# -- 5. every number checked before any work ------------------------------------------------
BAD_FLAGS = [
    (["--lr", "nan"], "lr"), (["--lr", "inf"], "lr"), (["--lr", "-1"], "lr"), (["--lr", "0"], "lr"),
    (["--clip", "nan"], "clip"), (["--clip", "-1"], "clip"), (["--label-smoothing", "1"], "label-smoothing"),
    (["--label-smoothing", "nan"], "label-smoothing"), (["--dropout", "nan"], "dropout"), (["--dropout", "1"], "dropout"),
    (["--device", "foo"], "device"), (["--device", "meta"], "device"), (["--layers", "0"], "layers"),
    (["--enc-layers", "0"], "enc-layers"), (["--d-model", "1000000000"], "d-model"), (["--d-ff", "-5"], "d-ff"),
    (["--batch-tokens", "1000000000"], "batch-tokens"), (["--epochs", "0"], "epochs"), (["--epochs", "-5"], "epochs"),
    (["--warmup", "-1"], "warmup"), (["--threads", "0"], "threads"), (["--seed", str(2**70)], "seed"), (["--seed", "-1"], "seed"),
    (["--n-examples", "0"], "n-examples"), (["--n-examples", "1000000000000"], "n-examples"), (["--max-len", "1"], "max-len"),
    (["--src-vocab", "2"], "src-vocab"),
]


@pytest.mark.parametrize("flags,name", BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_bad_numbers_are_refused_before_any_work(tmp_path, capsys, monkeypatch, flags, name):
    from attnviz.core.data import sources

    def no_data(*a, **k):
        raise AssertionError("data loaded before the options were checked")

    monkeypatch.setattr(sources, "load_data", no_data)
    out = tmp_path / "m"
    assert main([*BASE, "--out", str(out), *flags]) == 1
    assert name in one_line_error(capsys)
    assert not out.exists()


def test_bad_numbers_are_refused_on_resume_too(checkpoint, tmp_path, capsys):
    out = copy_of(checkpoint, tmp_path)
    assert resume(out, 2, "--device", "meta") == 1
    assert "device" in one_line_error(capsys)


# -- 12 and the traceback list: data and what a resume reads --------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_as_data_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pairs.tsv"
    os.mkfifo(fifo)
    cmd = [sys.executable, "-m", "attnviz", "train", "--data", str(fifo), "--out", str(tmp_path / "m")]
    r = subprocess.run(cmd, cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "not a regular file" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_one_row_tsv_trains_and_summarises(tmp_path, capsys):
    tsv = tmp_path / "one.tsv"
    tsv.write_text("a b\tb a\n")
    out = tmp_path / "m"
    assert main(["train", "--data", str(tsv), "--out", str(out), "--epochs", "1", "--quiet", "--src-vocab", "8", "--tgt-vocab", "8",
                 "--tokenizer", "char", *TINY]) == 0
    err = capsys.readouterr().err
    assert "valid loss n/a" in err and "Traceback" not in err and load_bundle(out).meta["status"] == "finished"


def test_resume_never_reads_a_file_named_in_meta_json(checkpoint, tmp_path, capsys):
    out = copy_of(checkpoint, tmp_path)
    secret = tmp_path / "secret.tsv"
    secret.write_text("a\tb\n" * 50)
    meta = json.loads((out / "meta.json").read_text())
    meta["data"]["spec"] = {"kind": "tsv", "path": str(secret)}
    (out / "meta.json").write_text(json.dumps(meta))
    assert resume(out) == 1
    assert "--data" in one_line_error(capsys)


def _state(out: Path) -> dict:
    return json.loads((out / STATE_JSON).read_text())


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def tampered_cases():
    """(name, function that damages a copied checkpoint folder): every way a field of
    training_state.json or meta.json can be wrong, plus damaged tensors."""
    cases = []
    for key in ("step", "epoch", "batch_in_epoch", "elapsed_s", "epoch_loss_sum", "epoch_loss_n", "options", "optimizer"):
        for label, value in (("missing", None), ("string", "x"), ("negative", -1), ("list", [1]), ("nan", "NaN")):
            cases.append((f"state.{key}={label}", lambda out, k=key, v=value, lab=label: _set_state(out, k, v, lab == "missing")))
    for key, value in (("param_groups", "x"), ("param_groups", [1]), ("param_names", [1, 2]), ("param_names", ["a"]),
                       ("scalars", {"999": {"step": 1}}), ("scalars", {"0": {"step": "x"}}), ("scalars", "x")):
        cases.append((f"state.optimizer.{key}={json.dumps(value)}", lambda out, k=key, v=value: _set_optimizer(out, k, v)))
    for key, value in (("lr", "x"), ("lr", -1), ("batch_tokens", 0), ("schedule", 1), ("device", "meta"), ("betas", [2, 3]), ("seed", 2**70), ("clip", None)):
        cases.append((f"state.options.{key}={value}", lambda out, k=key, v=value: _set_option(out, k, v)))
    for key, value in (("history", "x"), ("history", [1]), ("history", [{"epoch": "x"}]), ("snapshots", "x"), ("data", "x"),
                       ("data", {"spec": "x"}), ("data", {"spec": {"kind": "copy", "n": "x"}}), ("data", {"spec": {"kind": "copy", "n": 10**12}}),
                       ("resumed_with", "x"), ("data", {"spec": {"kind": "parallel", "src_path": "/etc/passwd", "tgt_path": "/etc/passwd"}})):
        cases.append((f"meta.{key}={json.dumps(value)[:30]}", lambda out, k=key, v=value: _set_meta(out, k, v)))
    cases += [
        ("state.json=[]", lambda out: (out / STATE_JSON).write_text("[]")),
        ("state.json=nested", lambda out: (out / STATE_JSON).write_text(_nested(100_000))),
        ("state.json=huge", lambda out: (out / STATE_JSON).write_bytes(b" " * (17 * 2**20) + b"{}")),
        ("state.json=not utf-8", lambda out: (out / STATE_JSON).write_bytes(b"\xff\xfe{}")),
        ("meta.json=nested", lambda out: (out / "meta.json").write_text(_nested(100_000))),
        ("meta.json=huge", lambda out: (out / "meta.json").write_bytes(b" " * (65 * 2**20) + (out / "meta.json").read_bytes())),
        ("state.json=missing", lambda out: (out / STATE_JSON).unlink()),
        ("tensors: no rng", lambda out: _edit_tensors(out, lambda t: t.pop("rng.cpu"))),
        ("tensors: bad moment", lambda out: _edit_tensors(out, _shrink_a_moment)),
    ]
    return cases


def _set_state(out, key, value, delete):
    info = _state(out)
    if delete:
        del info[key]
    else:
        info[key] = float("nan") if value == "NaN" else value
    (out / STATE_JSON).write_text(json.dumps(info))


def _set_optimizer(out, key, value):
    info = _state(out)
    info["optimizer"][key] = value
    (out / STATE_JSON).write_text(json.dumps(info))


def _set_option(out, key, value):
    info = _state(out)
    info["options"][key] = value
    (out / STATE_JSON).write_text(json.dumps(info))


def _set_meta(out, key, value):
    meta = json.loads((out / "meta.json").read_text())
    meta[key] = value
    (out / "meta.json").write_text(json.dumps(meta))


def _edit_tensors(out, fn):
    tensors = load_file(out / STATE_TENSORS)
    fn(tensors)
    save_file(tensors, out / STATE_TENSORS)


def _shrink_a_moment(tensors):
    name = next(k for k in tensors if k.endswith(".exp_avg"))
    tensors[name] = tensors[name].flatten()[:1].clone()


CASES = tampered_cases()


@pytest.mark.parametrize("damage", [fn for _, fn in CASES], ids=[name for name, _ in CASES])
def test_tampered_checkpoint_gives_one_line_on_resume(checkpoint, tmp_path, capsys, damage):
    out = copy_of(checkpoint, tmp_path)
    damage(out)
    assert resume(out) == 1
    one_line_error(capsys)
