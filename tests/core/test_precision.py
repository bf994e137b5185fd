"""``TrainOptions.precision`` / ``attnviz train --precision``: bfloat16 autocast in the training
step, float32 left exactly as it was, the choice recorded and kept by a resumed run."""

from __future__ import annotations

import copy
import json
import math
import random

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from attnviz.cli import main
from attnviz.core.data import corpora as D
from attnviz.core.training import trainer as T
from attnviz.core.training.checkpoint import STATE_JSON
from attnviz.core.training.distributed import Ranks
from attnviz.core.training.guided import alignment_term
from attnviz.core.training.trainer import TrainingError, TrainOptions, learning_rate

TINY = dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=2, d_ff=64, dropout=0.1, norm_placement="pre", max_len=32)
CLI_TINY = ["--d-model", "32", "--heads", "2", "--layers", "1", "--d-ff", "64", "--warmup", "10", "--lr", "3e-3", "--batch-tokens", "200"]
WORDS = {"ba": "apple", "ko": "river", "mi": "stone", "ru": "cloud", "te": "horse", "lo": "bread"}


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def reverse_data():
    return D.synthetic("reverse", n=240, min_len=3, max_len=6, seed=1)


def glossed_data() -> D.Dataset:
    """Word-for-word pairs (target in reverse order) with the glosses guided alignment needs."""
    rng = random.Random(3)
    pairs = []
    for i in range(120):
        words = rng.sample(sorted(WORDS), rng.randint(3, 5))
        tokens = [{"word": w, "gloss_en": WORDS[w]} for w in words]
        pairs.append(D.Pair(" ".join(words), " ".join(WORDS[w] for w in reversed(words)), f"toy-{i}", {"tokens": tokens}))
    return D.Dataset("toy", pairs[:100], pairs[100:], [], D.DataReport("toy"), spec={"kind": "toy"})


def make_trainer(ds, out=None, **kw) -> T.Trainer:
    base = dict(epochs=2, lr=3e-3, warmup=5, batch_tokens=120, seed=0, log_every=1, n_probes=1, eval_bleu=False, final_eval=False, device="cpu")
    options = TrainOptions(**{**base, **kw})
    return T.Trainer.create(ds, dict(TINY), options, out, src_vocab=32, tgt_vocab=32, src_tokenizer_type="word", tgt_tokenizer_type="word")


def step_losses(trainer: T.Trainer) -> list[float]:
    """Every step's loss (``log_every`` 1: a step event per step) of ``trainer.fit()``."""
    steps = []
    trainer.add_callback("step", steps.append)
    assert trainer.fit().ok
    return [e.loss for e in steps]


def test_bf16_run_trains_records_bf16_and_keeps_float32_weights(tmp_path, reverse_data):
    out = tmp_path / "bf16"
    bf16 = step_losses(make_trainer(reverse_data, out, precision="bf16", epochs=3))
    plain = step_losses(make_trainer(reverse_data, epochs=1))
    assert len(bf16) > 20 and all(math.isfinite(v) for v in bf16)
    assert sum(bf16[-5:]) / 5 < 0.8 * sum(bf16[:5]) / 5  # it learns
    assert bf16[:5] != plain[:5]  # autocast changed the numbers: it was applied
    meta = json.loads((out / "meta.json").read_text())
    state = json.loads((out / STATE_JSON).read_text())
    assert meta["options"]["precision"] == "bf16" and state["options"]["precision"] == "bf16"
    assert all(math.isfinite(h["valid_loss"]) for h in meta["history"])


def test_bf16_leaves_weights_and_optimizer_in_float32(reverse_data):
    trainer = make_trainer(reverse_data, precision="bf16", epochs=1)
    step_losses(trainer)
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}
    moments = [t for s in trainer.optimizer.state.values() for k, t in s.items() if k != "step"]
    assert moments and {t.dtype for t in moments} == {torch.float32}


def test_float32_steps_are_the_plain_training_steps_bit_for_bit(reverse_data):
    """The default (the option left out) and "float32" take exactly the steps of the loop as it
    was before the option: forward, cross-entropy, backward, clip, Adam; no autocast anywhere."""
    assert TrainOptions().precision == "float32" and TrainOptions.from_dict({"epochs": 2}).precision == "float32"
    left_out = make_trainer(reverse_data, epochs=1)
    model = copy.deepcopy(left_out.model)
    rng = torch.get_rng_state()
    got = step_losses(left_out)
    torch.set_rng_state(rng)
    assert got == plain_loop(left_out, model)
    assert step_losses(make_trainer(reverse_data, epochs=1, precision="float32")) == got


def plain_loop(trainer: T.Trainer, model: torch.nn.Module) -> list[float]:
    """The first epoch's losses of a hand-written float32 loop with ``trainer``'s options and batches."""
    o, cfg = trainer.options, model.config
    opt = torch.optim.Adam(model.parameters(), lr=o.lr, betas=o.betas, eps=o.adam_eps, weight_decay=o.weight_decay)
    model.train()
    losses = []
    for step, rows in enumerate(trainer.batches.epoch(0), start=1):
        batch = D.collate(rows, cfg.pad_id, cfg.bos_id, cfg.eos_id)
        for g in opt.param_groups:
            g["lr"] = learning_rate(step, o, trainer.total_steps)
        logits = model(batch.src, batch.tgt_in)  # [B, Lt, V]
        loss = F.cross_entropy(logits.transpose(1, 2), batch.labels, ignore_index=cfg.pad_id, label_smoothing=o.label_smoothing)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), o.clip)
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def test_a_resumed_bf16_run_keeps_bf16_and_repeats_the_losses(tmp_path, reverse_data):
    full = step_losses(make_trainer(reverse_data, tmp_path / "full", precision="bf16"))
    part = make_trainer(reverse_data, tmp_path / "part", precision="bf16")
    stop_at = len(full) // 2 + 1
    part.add_callback("step", lambda e: part.stop() if e.step == stop_at else None)
    first = []
    part.add_callback("step", first.append)
    assert part.fit().status == "stopped"
    again = T.Trainer.from_checkpoint(tmp_path / "part", reverse_data)
    assert again.options.precision == "bf16"
    assert [e.loss for e in first] + step_losses(again) == full  # bit for bit: the rest ran under bf16 too


def test_guided_alignment_under_bf16_takes_a_float32_term():
    trainer = make_trainer(glossed_data(), precision="bf16", guided_alignment="2.1", epochs=2)
    losses = step_losses(trainer)
    assert all(math.isfinite(v) for v in losses)
    assert all(math.isfinite(h["align_loss"]) for h in trainer.records.history)


def test_alignment_term_of_bf16_weights_is_float32():
    weights = torch.softmax(torch.randn(2, 4, 5), dim=-1)  # [B, Lt, Ls]
    rows = [((1, 2, 2), (0, 1, 3), (1.0, 0.5, 0.5)), None]
    low = alignment_term(weights.bfloat16(), rows)
    assert low is not None and low.dtype == torch.float32
    assert float(low) == pytest.approx(float(alignment_term(weights, rows)), rel=1e-2)


def test_ddp_trains_under_bf16_with_guided_alignment(monkeypatch):
    """The DDP wrapper (a one-process gloo group) around a bf16 step with guided alignment."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        wrapped = []
        monkeypatch.setattr(Ranks, "wrap", lambda self, model: wrapped.append(DistributedDataParallel(model)) or wrapped[-1])
        trainer = make_trainer(glossed_data(), precision="bf16", guided_alignment="2.1", epochs=1)
        with trainer.distribute(Ranks()):
            losses = step_losses(trainer)
    finally:
        dist.destroy_process_group()
    assert len(wrapped) == 1 and losses and all(math.isfinite(v) for v in losses)


def test_precision_is_checked():
    for bad in ("fp16", "bfloat16", "", None, 16):
        with pytest.raises(TrainingError, match="precision must be float32 or bf16"):
            TrainOptions(precision=bad)


def test_cli_rejects_an_unknown_precision_in_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", "--data", "reverse", "--n-examples", "200", "--out", str(out), "--epochs", "1", "--quiet", "--precision", "fp8", *CLI_TINY])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and err == "attnviz: error: precision must be float32 or bf16, not 'fp8'"
    assert not out.exists()


def test_cli_bf16_run_records_its_precision(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", "--data", "reverse", "--n-examples", "200", "--out", str(out), "--epochs", "1", "--quiet", "--precision", "bf16", *CLI_TINY])
    assert rc == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["options"]["precision"] == "bf16" and "--precision bf16" in meta["command"]
