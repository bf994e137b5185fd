"""Training on several processes (``attnviz.core.training.distributed``; ``attnviz train --nproc N``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from train_faults import alive, descendants

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.data import corpora as D
from attnviz.core.training import distributed
from attnviz.core.training.distributed import Ranks, weights_digest

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--d-model", "32", "--heads", "2", "--layers", "1", "--d-ff", "64", "--dropout", "0", "--warmup", "10", "--lr", "3e-3", "--batch-tokens", "200"]
LOSS_TOLERANCE = 1e-4  # per-epoch train and valid loss, two processes against one (meta.json rounds them to 1e-5)
WEIGHT_TOLERANCE = 1e-5  # largest difference of a parameter, two processes against one (measured: below 1e-6)


@pytest.mark.parametrize("world", [2, 3])
def test_each_process_takes_its_rows_of_every_global_batch(world):
    """The processes' rows of each batch are the batch, each row once; every epoch has its own
    order, the same in every process (what ``DistributedSampler.set_epoch`` gives a DataLoader)."""
    examples = D.synthetic("reverse", n=200, seed=1).train
    ex = D.fitting_examples((tuple(map(ord, p.src)), tuple(map(ord, p.tgt))) for p in examples)
    batches = D.ExampleBatches(ex, batch_tokens=150, seed=0)
    epochs = []
    for epoch in (0, 1):
        global_batches = list(batches.epoch(epoch))
        for rows in global_batches:
            shards = [Ranks(rank, world, "gloo").shard(rows) for rank in range(world)]
            real = [mine for mine, ok in shards if ok]
            assert sorted(e.index for mine in real for e in mine) == sorted(e.index for e in rows)
            assert all(not ok and mine == rows[:1] for mine, ok in shards[len(real):])  # a stand-in row, weight 0
        epochs.append([e.index for rows in global_batches for e in rows])
    assert sorted(epochs[0]) == sorted(epochs[1]) and epochs[0] != epochs[1]
    assert Ranks().shard([1, 2, 3]) == ([1, 2, 3], True)


def test_weights_digest_is_sha256_of_names_and_float32_values():
    weights = {"b": torch.arange(3, dtype=torch.float16), "a": torch.ones(2, 2)}
    h = hashlib.sha256()
    for name in ("a", "b"):
        h.update(name.encode() + weights[name].float().numpy().tobytes())
    assert weights_digest(weights) == h.digest()


def test_environment_from_torchrun(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert distributed.environment() is None
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert distributed.environment() == distributed.Environment(3, 4, 1, 2)
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(distributed.DistributedError, match="does not add up"):
        distributed.environment()
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(distributed.DistributedError, match="not numbers"):
        distributed.environment()


def test_nproc_is_checked_before_anything_starts(tmp_path, monkeypatch, capsys):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert main(["train", "--data", "copy", "--out", str(tmp_path / "m"), "--nproc", "0"]) == 1
    assert "--nproc must be an integer from 1 to 1024, not 0" in capsys.readouterr().err
    assert main(["train", "--data", "copy", "--out", str(tmp_path / "m"), "--nproc", "2", "--d-model", "30", "--heads", "4"]) == 1
    assert "divisible" in capsys.readouterr().err  # checked once, before torchrun starts
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert main(["train", "--data", "copy", "--out", str(tmp_path / "m"), "--nproc", "3"]) == 1
    assert "torchrun started 2 process(es)" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
def test_two_processes_train_as_one_with_the_same_global_batch(tmp_path, monkeypatch):
    """Two gloo processes (``--nproc 2``: torchrun --standalone), one epoch and then ``--resume`` to
    a second, against one process for two epochs, with the same ``--batch-tokens`` (the global
    batch; each process takes about half of every batch's rows), seed, dropout 0 and LayerNorm.
    The two processes' parameters are identical (their digests, which rank 0 records, equal the
    digest of the weights it saved), and the per-epoch losses agree with the one-process run
    within ``LOSS_TOLERANCE`` (measured: equal to the 5 digits meta.json keeps), the final weights
    within ``WEIGHT_TOLERANCE`` — all but the attention key biases, whose gradient is zero in exact
    arithmetic (the softmax ignores a shift shared by every key), so that Adam turns the rounding
    noise of either run into steps of up to the learning rate (measured: 0.007 apart). Rank 1
    wrote nothing in the output folder.
    """
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    one, two = tmp_path / "one", tmp_path / "two"
    data = ["--data", "reverse", "--n-examples", "300", "--quiet"]
    assert main(["train", *data, *TINY, "--out", str(one), "--epochs", "2"]) == 0
    assert main(["train", *data, *TINY, "--out", str(two), "--epochs", "1", "--nproc", "2"]) == 0
    assert main(["train", "--out", str(two), "--resume", "--epochs", "2", "--nproc", "2", "--quiet"]) == 0
    m1, m2 = load_bundle(one).meta, load_bundle(two).meta
    assert [h["epoch"] for h in m2["history"]] == [1, 2] and m2["status"] == "finished"
    for h1, h2 in zip(m1["history"], m2["history"], strict=True):
        for key in ("train_loss", "valid_loss"):
            assert abs(h1[key] - h2[key]) <= LOSS_TOLERANCE, (key, h1, h2)
    run = m2["distributed"]
    assert run["processes"] == 2 and run["backend"] == "gloo"
    names = [name for name, _ in load_bundle(two).model.named_parameters()]
    saved = {n: load_file(two / "training_state.safetensors")[f"raw.{n}"] for n in names}
    assert run["weights_sha256"] == [_digest(saved)] * 2
    alone = load_file(one / "training_state.safetensors")
    learnt = [n for n in names if not n.endswith("w_k.bias")]
    assert max(float((saved[n] - alone[f"raw.{n}"]).abs().max()) for n in learnt) <= WEIGHT_TOLERANCE
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "two"]  # no lock or stray file left beside them
    assert "--resume" in m2["resumed_with"][0]
    assert "--nproc 2" in m2["command"] and "--nproc 2" in m2["resumed_with"][0]  # the launcher's command, as typed


def _digest(weights: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name in sorted(weights):
        h.update(name.encode() + weights[name].float().numpy().tobytes())
    return h.hexdigest()


@pytest.mark.slow  # torchrun and two training processes
def test_killing_the_launcher_stops_torchrun_and_its_processes(tmp_path):
    """``train --nproc 2`` killed with SIGKILL: torchrun gets SIGTERM from Linux (the parent-death
    signal the launcher asks for), passes it on, and no process of the run trains on."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "attnviz", "train", "--data", "reverse", "--n-examples", "3000", "--quiet", *TINY,
           "--out", str(tmp_path / "m"), "--epochs", "50", "--nproc", "2"]
    launcher = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(run := descendants(launcher.pid)) < 3 and time.monotonic() < deadline:  # torchrun and its two processes
        time.sleep(0.2)
    assert len(run) >= 3, run
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + 60
    while (left := {p for p in run if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"still running after the launcher was killed: {left}"



@pytest.mark.slow  # torchrun and two training processes, twice
def test_a_training_process_killed_during_a_save_leaves_a_bundle_that_resumes(tmp_path):
    """One of the two processes killed with SIGKILL while a checkpoint is being saved: torchrun
    stops the other, the bundle loads, --resume on two processes finishes the next epoch and no
    lock is left (``make bench faults`` runs 20 such trials, launcher and rank in turn)."""
    import random

    from train_faults import kill_distributed_run

    trial = kill_distributed_run(tmp_path / "m", random.Random(3), "rank")
    assert trial.lingering == 0 and not trial.lock_left
    assert trial.resumed_epochs == trial.epoch_before + 1
