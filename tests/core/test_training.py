"""The trainer: overfitting, exact resume, NaN handling, control from another thread, events, greedy decoding."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
import torch

from attnviz.core.bundle import load_bundle
from attnviz.core.data import corpora as D
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.core.training import trainer as T
from attnviz.core.training.checkpoint import STATE_JSON, STATE_TENSORS, optimizer_state_from_files, optimizer_state_to_files
from attnviz.core.training.evaluation import (
    EvaluationStopped,
    eval_mode,
    final_evaluation,
    greedy_decode,
    greedy_translate,
    sacrebleu_scores,
    teacher_forced_metrics,
)
from attnviz.core.training.events import EVENTS
from attnviz.core.training.trainer import TrainingError, TrainOptions, learning_rate

TINY = dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, dropout=0.1, norm_placement="pre", max_len=32)


def tiny_options(**kw) -> TrainOptions:
    base = dict(epochs=2, lr=3e-3, warmup=5, batch_tokens=120, seed=0, log_every=1, n_probes=2, eval_bleu=False, final_eval=False, device="cpu")
    base.update(kw)
    return TrainOptions(**base)


@pytest.fixture
def reverse_data():  # per test: a Trainer adds notes to its dataset's report
    return D.synthetic("reverse", n=240, min_len=3, max_len=6, seed=1)


def make_trainer(ds, out=None, config=None, **opts) -> T.Trainer:
    return T.Trainer.create(
        ds, dict(config or TINY), tiny_options(**opts), out, src_vocab=32, tgt_vocab=32, src_tokenizer_type="word", tgt_tokenizer_type="word"
    )


def collect(trainer, event="step"):
    got = []
    trainer.add_callback(event, got.append)
    return got


def test_learning_rate_schedule():
    o = TrainOptions(lr=1e-3, warmup=100)
    assert learning_rate(1, o, 1000) == pytest.approx(1e-5)
    assert learning_rate(50, o, 1000) == pytest.approx(5e-4)
    assert learning_rate(100, o, 1000) == pytest.approx(1e-3)
    assert learning_rate(400, o, 1000) == pytest.approx(5e-4)  # sqrt(100/400)
    lin = TrainOptions(lr=1e-3, warmup=100, schedule="linear")
    assert learning_rate(550, lin, 1000) == pytest.approx(5e-4) and learning_rate(1000, lin, 1000) == 0.0
    assert learning_rate(900, TrainOptions(lr=2e-3, warmup=10, schedule="constant"), 1000) == 2e-3
    with pytest.raises(TrainingError):
        TrainOptions(schedule="cosine")


@pytest.mark.slow
def test_overfits_32_pairs_to_near_zero_loss():
    hsk = D.load_hsk()
    pairs = hsk.train[:32]
    ds = D.Dataset("hsk32", pairs, [], [], D.DataReport("hsk32"), src_spaces=False)
    cfg = dict(d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=128, dropout=0.0, norm_placement="pre", max_len=64)
    trainer = T.Trainer.create(ds, cfg, tiny_options(epochs=60, lr=3e-3, warmup=20, schedule="constant", label_smoothing=0.0, batch_tokens=200, log_every=5), None, src_vocab=300, tgt_vocab=300)
    steps = collect(trainer)
    result = trainer.fit()
    assert result.ok
    assert steps[0].loss > 4.0
    m = teacher_forced_metrics(trainer.model, trainer.train_examples)
    assert m["loss"] < 0.05 and m["token_accuracy"] == 1.0
    out = greedy_translate(trainer.model, trainer.src_tok, trainer.tgt_tok, [p.src for p in pairs[:8]])
    assert out == [p.tgt for p in pairs[:8]]


@pytest.mark.parametrize("where", ["mid-epoch", "epoch-end", "tied-mid-epoch"])
def test_resume_repeats_the_uninterrupted_losses(tmp_path, reverse_data, where):
    """``tied``: the output layer shares the target embedding (one tensor under two names, which a
    checkpoint must still save)."""
    config = {**TINY, "tie_embeddings": where.startswith("tied")}
    full = make_trainer(reverse_data, tmp_path / "full", config, epochs=3, batch_tokens=200)
    ref = collect(full)
    assert full.fit().ok
    ref_losses = [e.loss for e in ref]
    assert len(ref_losses) == full.step > 10
    second = [e for e in ref if e.epoch == 1]
    stop_at = second[2].step if where.endswith("mid-epoch") else second[-1].step  # inside epoch 2, or its last step

    part = make_trainer(reverse_data, tmp_path / "part", config, epochs=3, batch_tokens=200)
    first = collect(part)
    part.add_callback("step", lambda e: part.stop() if e.step == stop_at else None)
    r = part.fit()
    assert r.status == "stopped" and "--resume" in r.message
    assert [e.loss for e in first] == ref_losses[:stop_at]

    again = T.Trainer.from_checkpoint(tmp_path / "part", reverse_data)
    assert again.step == stop_at
    rest = collect(again)
    assert again.fit().ok
    assert [e.loss for e in first + rest] == ref_losses  # bit for bit
    a, b = full.model.state_dict(), again.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [h["valid_loss"] for h in again.records.history] == [h["valid_loss"] for h in full.records.history]


def test_resume_checks_the_data_and_the_state(tmp_path, reverse_data):
    t = make_trainer(reverse_data, tmp_path / "run", epochs=1)
    assert t.fit().ok
    with pytest.raises(TrainingError, match="split hash"):
        T.Trainer.from_checkpoint(tmp_path / "run", D.synthetic("reverse", n=240, min_len=3, max_len=6, seed=2))
    extended = T.Trainer.from_checkpoint(tmp_path / "run", epochs=2)  # the data named in meta.json
    assert extended.epoch == 1 and extended.options.epochs == 2
    (tmp_path / "run" / STATE_TENSORS).write_bytes(b"\x00garbage")
    with pytest.raises(TrainingError, match="damaged training state|not a valid safetensors file"):
        T.Trainer.from_checkpoint(tmp_path / "run")
    with pytest.raises(TrainingError, match="cannot resume"):
        T.Trainer.from_checkpoint(tmp_path / "nothing-here")


@pytest.mark.parametrize("where", ["mid-epoch", "epoch-end"])
def test_nan_stops_and_keeps_the_last_good_checkpoint(tmp_path, reverse_data, where):
    out = tmp_path / "nan"
    t = make_trainer(reverse_data, out, epochs=4, batch_tokens=200)
    spe = t.steps_per_epoch
    saved = collect(t, "checkpoint")
    bad_step = spe + 2 if where == "mid-epoch" else None

    def poison(ev):
        if ev.step == bad_step or (bad_step is None and ev.epoch == 1 and ev.epoch_fraction == 1.0):
            with torch.no_grad():
                t.model.generator.weight.fill_(float("nan"))

    t.add_callback("step", poison)
    messages = collect(t, "message")
    r = t.fit()
    assert r.status == "failed" and not r.ok
    assert "NaN" in r.message and "last good checkpoint" in r.message and "epoch 1" in r.message
    if where == "mid-epoch":
        assert f"step {spe + 3}" in r.message  # the first step that saw the NaN weights
    assert any(m.level == "error" and "NaN" in m.text for m in messages)
    assert [c.epoch for c in saved] == [1]
    b = load_bundle(out)  # loads (load_bundle refuses non-finite tensors)
    assert b.meta["epoch"] == 1 and b.meta["step"] == saved[0].step and b.meta["status"] == "running"
    assert torch.isfinite(b.model.generator.weight).all()


def test_pause_resume_and_stop_from_another_thread(tmp_path, reverse_data):
    t = make_trainer(reverse_data, tmp_path / "ctl", epochs=50)
    states = collect(t, "state")
    at_pause = threading.Event()
    t.add_callback("step", lambda e: (t.pause(), at_pause.set()) if e.step == 3 else None)
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("r", t.fit()))
    worker.start()
    assert at_pause.wait(60)
    worker.join(0.3)
    assert worker.is_alive() and t.paused and t.step == 3  # held between steps
    t.resume()
    t.stop()
    worker.join(60)
    assert not worker.is_alive()
    r = result["r"]
    assert r.status == "stopped" and 3 <= r.step < t.total_steps
    assert [s.state for s in states][:3] == ["running", "paused", "running"] or [s.state for s in states][:2] == ["running", "paused"]
    assert states[-1].state == "stopping"
    b = load_bundle(tmp_path / "ctl")
    assert b.meta["status"] == "stopped" and b.meta["step"] == r.step


def test_events_and_meta(tmp_path, reverse_data):
    t = make_trainer(reverse_data, tmp_path / "ev", epochs=2, eval_bleu=True, final_eval=True, log_every=2)
    got = {e: collect(t, e) for e in EVENTS}
    r = t.fit()
    assert r.ok
    (start,) = got["start"]
    assert start.total_steps == t.total_steps and start.n_parameters == t.model.n_parameters() and start.data["name"] == "reverse"
    steps = got["step"]
    assert all(s.step % 2 == 0 or s.epoch_fraction == 1.0 for s in steps)
    s = steps[-1]
    assert s.lr > 0 and s.tokens_per_s > 0 and s.eta_s == 0.0 and np.isfinite(s.loss)
    assert len(got["eval"]) == 2
    ev = got["eval"][-1]
    for key in ("train_loss", "valid_loss", "valid_token_accuracy", "valid_bleu", "valid_chrf", "lr"):
        assert key in ev.metrics
    assert len(ev.probes) == 2
    p = ev.probes[0]
    assert p.source == reverse_data.valid[0].src and p.reference == reverse_data.valid[0].tgt
    a = p.cross_attention[0]  # [head, out, src]
    assert a.shape == (2, len(p.out_pieces), len(p.src_pieces))
    np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)
    assert set(ev.norm_stats["encoder.layers.0.norm1"]) == {"mean", "var"}
    assert ev.norm_stats["encoder.final_norm"]["var"].ndim == 1
    assert [c.reason for c in got["checkpoint"]] == ["epoch", "final"]
    assert got["end"][0].status == "finished" and set(got["end"][0].final) == {"train", "valid", "test"}
    meta = json.loads((tmp_path / "ev" / "meta.json").read_text(encoding="utf-8"))
    assert [h["epoch"] for h in meta["history"]] == [1, 2]
    snap = meta["snapshots"][-1]["probes"][0]
    assert len(snap["cross_attention"]) == 1 and len(snap["cross_attention"][0]) == len(snap["out_pieces"])
    assert meta["data"]["split_hash"] == reverse_data.split_hash and meta["status"] == "finished"
    assert {"bleu", "chrf", "token_accuracy"} <= set(meta["final"]["test"])
    state = json.loads((tmp_path / "ev" / STATE_JSON).read_text())
    assert state["step"] == t.total_steps and state["epoch"] == 2
    assert not list((tmp_path / "ev").glob("*.pt")) and not list((tmp_path / "ev").glob("*.pkl"))


def test_batchnorm_model_reports_batch_statistics(reverse_data):
    t = make_trainer(reverse_data, None, config=dict(TINY, norm="batch"), epochs=1)
    evals = collect(t, "eval")
    assert t.fit().ok
    stats = evals[0].norm_stats["decoder.layers.0.norm2"]
    assert set(stats) == {"batch_mean", "batch_var", "running_mean", "running_var"}
    assert stats["running_var"].shape == (32,)


def naive_greedy(model, src, n):
    """Greedy decoding by recomputing the whole prefix at every step (the reference)."""
    tgt = torch.tensor([[model.config.bos_id]])
    out = []
    for _ in range(n):
        nxt = int(model(src, tgt)[0, -1].argmax())
        out.append(nxt)
        if nxt == model.config.eos_id:
            break
        tgt = torch.cat([tgt, torch.tensor([[nxt]])], 1)
    return out


def test_greedy_decode_matches_full_recompute_and_reports_topk():
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=2, d_ff=64, max_len=16)
    model = Transformer(cfg).eval()
    sources = [[5, 6, 7], [8, 9, 10, 11, 12, 4], [13]]
    res = greedy_decode(model, sources, max_new=8, top_k=3, batch_size=2)
    for s, r in zip(sources, res):
        ref = naive_greedy(model, torch.tensor([s]), 8)
        assert list(r.ids) + ([cfg.eos_id] if r.finished else []) == ref
        assert len(r.topk) == len(ref)
        for step, tok in zip(r.topk, ref):
            assert step[0][0] == tok and len(step) == 3
            ps = [p for _, p in step]
            assert ps == sorted(ps, reverse=True) and sum(ps) <= 1.0 + 1e-6
    with pytest.raises(ValueError, match="empty"):
        greedy_decode(model, [[]])


def test_greedy_translate_reads_unknown_characters_as_unk(reverse_data):
    tok = Tokenizer.train([p.src for p in reverse_data.train], 32, "word")
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=32))
    assert tok.encode("x 1") and 1 in tok.encode("x 1")
    out = greedy_translate(model, tok, tok, ["x 1", "1 2 3"], max_len=5)
    assert len(out) == 2 and all(isinstance(o, str) for o in out)


def test_sacrebleu_scores():
    s = sacrebleu_scores(["the cat sat on the mat"], ["the cat sat on the mat"])
    assert s["bleu"] == pytest.approx(100.0) and s["chrf"] == pytest.approx(100.0)
    assert sacrebleu_scores(["a b c d"], ["w x y z"])["bleu"] < 1.0


def test_fit_trains_even_when_the_caller_turned_grad_off(reverse_data):
    t = make_trainer(reverse_data, None, epochs=1)
    before = t.model.generator.weight.detach().clone()
    with torch.no_grad():
        assert t.fit().ok
    assert not torch.equal(before, t.model.generator.weight)


def test_eval_mode_restores_the_previous_mode_even_on_error():
    model = torch.nn.Sequential(torch.nn.Dropout(0.5))
    with eval_mode(model):
        assert not model.training
    assert model.training
    model.eval()
    with eval_mode(model):
        pass
    assert not model.training
    model.train()
    with pytest.raises(RuntimeError), eval_mode(model):
        raise RuntimeError("boom")
    assert model.training


def test_optimizer_state_is_matched_to_parameters_by_name():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    names = [n for n, _ in model.named_parameters()]
    params = dict(model.named_parameters())
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    tensors, info = optimizer_state_to_files(opt, names)
    reordered = list(reversed(names))  # the same parameters, registered in another order
    again = torch.optim.Adam([params[n] for n in reordered], lr=0.1)
    again.load_state_dict(optimizer_state_from_files(tensors, info, reordered))
    for n in names:
        assert torch.equal(again.state[params[n]]["exp_avg"], opt.state[params[n]]["exp_avg"])
        assert torch.equal(again.state[params[n]]["exp_avg_sq"], opt.state[params[n]]["exp_avg_sq"])
    with pytest.raises(ValueError, match="other parameters"):
        optimizer_state_from_files(tensors, info, [*names[:-1], "other.weight"])
    del info["param_names"]
    with pytest.raises(ValueError, match="older attnviz"):
        optimizer_state_from_files(tensors, info, names)


def test_a_stop_during_the_final_evaluation_ends_it_at_once(tmp_path, reverse_data):
    t = make_trainer(reverse_data, tmp_path / "fin", epochs=1, final_eval=True)
    t.add_callback("eval", lambda ev: t.stop())  # the last epoch's evaluation: the final one comes next
    r = t.fit()
    assert r.status == "stopped" and "final evaluation was stopped" in r.message and not r.final
    b = load_bundle(tmp_path / "fin")
    assert "final" not in b.meta and b.meta["step"] == r.step


def test_should_stop_is_asked_between_evaluation_steps(reverse_data):
    t = make_trainer(reverse_data, epochs=1)
    asked = []

    def stop_on_third() -> bool:
        asked.append(1)
        return len(asked) >= 3

    with pytest.raises(EvaluationStopped):
        final_evaluation(t.model, t.src_tok, t.tgt_tok, reverse_data, should_stop=stop_on_third)
    assert len(asked) == 3


def test_a_finished_averaged_run_resumed_to_more_epochs_is_the_longer_run(tmp_path, reverse_data):
    """Resuming goes on from the weights as trained (not from the shipped mean) and averages only
    the new last epochs: the same losses and the same shipped weights as one run of 4 epochs."""
    full = make_trainer(reverse_data, tmp_path / "full", epochs=4, average_last=2, batch_tokens=200)
    ref = collect(full)
    assert full.fit().ok and full.meta["averaged_epochs"] == 2
    short = make_trainer(reverse_data, tmp_path / "short", epochs=2, average_last=2, batch_tokens=200)
    first = collect(short)
    assert short.fit().ok and short.meta["averaged_epochs"] == 2
    longer = T.Trainer.from_checkpoint(tmp_path / "short", reverse_data, epochs=4)
    rest = collect(longer)
    assert longer.fit().ok and longer.meta["averaged_epochs"] == 2
    assert [e.loss for e in first + rest] == pytest.approx([e.loss for e in ref], rel=1e-6)
    a, b = load_bundle(tmp_path / "full").model.state_dict(), load_bundle(tmp_path / "short").model.state_dict()
    assert all(torch.allclose(a[k].double(), b[k].double(), atol=1e-6) for k in a)


def test_average_last_ships_the_mean_of_the_last_epochs_weights(tmp_path, reverse_data):
    plain = make_trainer(reverse_data, tmp_path / "plain", epochs=3)
    per_epoch = []
    plain.add_callback("eval", lambda e: per_epoch.append({k: v.clone() for k, v in plain.model.state_dict().items()}))
    assert plain.fit().ok and len(per_epoch) == 3

    part = make_trainer(reverse_data, tmp_path / "avg", epochs=3, average_last=2)
    part.add_callback("eval", lambda e: part.stop() if e.epoch == 1 else None)  # stops early in epoch 3: resumed below
    assert part.fit().status == "stopped"
    again = T.Trainer.from_checkpoint(tmp_path / "avg", reverse_data)
    assert again.average.n == 1  # epoch 2's weights came back with the training state
    messages = collect(again, "message")
    assert again.fit().ok and again.meta["averaged_epochs"] == 2
    assert any("mean of the last 2 epochs" in m.text for m in messages)
    shipped = load_bundle(tmp_path / "avg").model.state_dict()
    for name, value in shipped.items():
        want = (per_epoch[1][name].double() + per_epoch[2][name].double()) / 2
        want = want.float().half() if value.is_floating_point() else want  # the bundle stores float16
        assert torch.allclose(value.double(), want.double(), atol=1e-6), name


@pytest.mark.parametrize("field", ["step", "epoch", "epoch_loss_sum"])
def test_a_state_counter_of_hundreds_of_digits_is_refused_in_one_line(tmp_path, reverse_data, field):
    """A damaged training_state.json whose counter no float can hold: a one-line refusal, no OverflowError."""
    t = make_trainer(reverse_data, tmp_path / "run", epochs=1)
    assert t.fit().ok
    state = tmp_path / "run" / STATE_JSON
    text = state.read_text()
    info = json.loads(text)
    info[field] = 10**308 * 10  # 309 digits
    state.write_text(json.dumps(info))
    with pytest.raises(TrainingError, match=f"'{field}' must be a non-negative"):
        T.Trainer.from_checkpoint(tmp_path / "run")
