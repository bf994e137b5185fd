"""Guided alignment: the loss term, its effect on the guided head, the CLI flags and resuming."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.cli import main
from attnviz.core.analysis.alignment import alignment_accuracy, reference_pairs
from attnviz.core.bundle import load_bundle
from attnviz.core.data import corpora as D
from attnviz.core.model.sites import AttentionSite
from attnviz.core.training import trainer as T
from attnviz.core.training.guided import LOG_EPS
from attnviz.core.training.trainer import TrainingError, TrainOptions

# A made-up source language, one word per English word; a target sentence is the source's words
# translated in reverse order, so the alignment is neither diagonal nor guessable from position.
LEXICON = {"ba": "apple", "ko": "river", "mi": "stone", "ru": "cloud", "te": "horse", "lo": "bread", "ni": "tiger", "su": "lamp"}
TINY = dict(d_model=32, n_heads=2, n_encoder_layers=1, n_decoder_layers=2, d_ff=64, dropout=0.0, norm_placement="pre", max_len=16)
CROSS_2 = AttentionSite("cross", 1)  # layer 2 on screen


def glossed_pair(rng: random.Random, i: int, glossed: bool = True) -> D.Pair:
    words = rng.sample(sorted(LEXICON), rng.randint(3, 5))
    tokens = [{"word": w, "gloss_en": LEXICON[w]} for w in words]
    return D.Pair(" ".join(words), " ".join(LEXICON[w] for w in reversed(words)), f"toy-{i}", {"tokens": tokens} if glossed else {})


def glossed_data(n_train: int = 160, glossed: bool = True) -> D.Dataset:
    rng = random.Random(7)
    pairs = [glossed_pair(rng, i, glossed) for i in range(n_train + 40)]
    return D.Dataset("toy", pairs[:n_train], pairs[n_train:], [], D.DataReport("toy"), spec={"kind": "toy"})


def options(**kw) -> TrainOptions:
    base = dict(epochs=1, lr=3e-3, warmup=5, batch_tokens=120, seed=0, log_every=1, n_probes=1, eval_bleu=False, final_eval=False, device="cpu")
    return TrainOptions(**{**base, **kw})


def make_trainer(ds: D.Dataset, out=None, **kw) -> T.Trainer:
    return T.Trainer.create(ds, dict(TINY), options(**kw), out, src_vocab=16, tgt_vocab=16, src_tokenizer_type="word", tgt_tokenizer_type="word")


def first_batch(trainer: T.Trainer) -> D.Batch:
    o, cfg = trainer.options, trainer.model.config
    indices = D.make_batches(trainer.train_examples, o.batch_tokens, o.seed, 0)[0]
    return D.collate([trainer.train_examples[i] for i in indices], cfg.pad_id, cfg.bos_id, cfg.eos_id)


def first_step_loss(trainer: T.Trainer) -> float:
    steps = []
    trainer.add_callback("step", steps.append)
    assert trainer.fit().ok
    return steps[0].loss


def record(pair: D.Pair) -> dict:
    return {"chinese": pair.src, "translation": {"en": pair.tgt}, "tokens": pair.extra["tokens"]}


def hand_alignment_term(trainer: T.Trainer, batch: D.Batch, layer: int, head: int) -> float:
    """A, written out: per aligned label position p, -mean over its allowed sources of log(a_pj + eps),
    averaged over all aligned rows of the batch."""
    names = [AttentionSite("cross", layer).name("weights")]
    with torch.no_grad():
        weights = trainer.model.run_with_trace(batch.src, batch.tgt_in, names, batch_index=None)[1][names[0]]  # [B, h, Lt, Ls]
    terms = []
    for b, index in enumerate(batch.indices):
        allowed: dict[int, set[int]] = {}
        for p, sources, _ in reference_pairs(record(trainer.dataset.train[index]), trainer.src_tok, trainer.tgt_tok).pairs:
            allowed.setdefault(p, set()).update(sources)
        for p, sources in allowed.items():
            terms.append(-sum(math.log(float(weights[b, head, p, j]) + LOG_EPS) for j in sources) / len(sources))
    return sum(terms) / len(terms)


def head_accuracy(trainer: T.Trainer, pairs: list[D.Pair], layer: int, head: int) -> float:
    """alignment_accuracy of one cross-attention head's predicting rows over ``pairs``."""
    model, src_tok, tgt_tok = trainer.model, trainer.src_tok, trainer.tgt_tok
    cfg, name = model.config, AttentionSite("cross", layer).name("weights")
    model.eval()
    hits = n = 0
    for pair in pairs:
        ref = reference_pairs(record(pair), src_tok, tgt_tok)
        src = torch.tensor([src_tok.encode(pair.src)])
        tgt = torch.tensor([[cfg.bos_id, *tgt_tok.encode(pair.tgt)]])
        with torch.no_grad():
            w = model.run_with_trace(src, tgt, [name])[1][name][head]  # [tgt, src]
        hits += float(alignment_accuracy(w, ref.pairs)) * len(ref.pairs)
        n += len(ref.pairs)
    return hits / n


def test_unguided_loss_is_plain_cross_entropy():
    trainer = make_trainer(glossed_data())
    batch = first_batch(trainer)
    with torch.no_grad():
        logits = trainer.model(batch.src, batch.tgt_in)
        ce = F.cross_entropy(logits.transpose(1, 2), batch.labels, ignore_index=trainer.model.config.pad_id, label_smoothing=0.1)
    assert trainer.guided is None
    assert first_step_loss(trainer) == float(ce)  # bit for bit
    assert "align_loss" not in trainer.records.history[0]


def test_guided_loss_adds_the_weighted_alignment_term():
    trainer = make_trainer(glossed_data(), guided_alignment="2.1", guided_weight=0.5)
    batch = first_batch(trainer)
    with torch.no_grad():
        logits = trainer.model(batch.src, batch.tgt_in)
        ce = float(F.cross_entropy(logits.transpose(1, 2), batch.labels, ignore_index=trainer.model.config.pad_id, label_smoothing=0.1))
    hand = hand_alignment_term(trainer, batch, layer=1, head=0)
    with torch.no_grad():
        got_logits, term = trainer.guided.forward(trainer.model, batch)
    assert torch.equal(got_logits, logits)  # the capture changes nothing in the forward pass
    assert float(term) == pytest.approx(hand, rel=1e-5) and hand > 0.1
    assert first_step_loss(trainer) == pytest.approx(ce + 0.5 * hand, rel=1e-5)
    assert trainer.records.history[0]["align_loss"] > 0


def test_a_batch_without_glossed_pairs_adds_nothing():
    data = glossed_data()
    data.train.extend(glossed_pair(random.Random(3), 1000 + i, glossed=False) for i in range(40))
    trainer = make_trainer(data, guided_alignment="1.2")
    unglossed = [e for e in trainer.train_examples if e.index >= 160][:4]
    batch = D.collate(unglossed, trainer.model.config.pad_id, trainer.model.config.bos_id, trainer.model.config.eos_id)
    assert trainer.guided.forward(trainer.model, batch)[1] is None
    assert len(trainer.guided.rows) == 160  # the glossed pairs only


def test_guidance_makes_the_head_align():
    data = glossed_data()
    plain = make_trainer(data, epochs=15)
    guided = make_trainer(data, epochs=15, guided_alignment="2.1", guided_weight=1.0)
    assert plain.fit().ok and guided.fit().ok
    acc_plain = head_accuracy(plain, data.valid, layer=1, head=0)
    acc_guided = head_accuracy(guided, data.valid, layer=1, head=0)
    assert acc_guided > 0.8 and acc_guided > acc_plain + 0.3, (acc_plain, acc_guided)  # 0.88 and 0.38 here


def test_options_are_checked():
    for bad in ("2", "0.1", "a.b", "1.1.1", 21):
        with pytest.raises(TrainingError, match="LAYER.HEAD"):
            TrainOptions(guided_alignment=bad)
    with pytest.raises(TrainingError, match="guided-weight"):
        TrainOptions(guided_alignment="1.1", guided_weight=0.0)
    assert TrainOptions.from_dict({"epochs": 3}).guided_alignment is None  # an older run's options
    with pytest.raises(TrainingError, match="head 3.1 does not exist"):
        make_trainer(glossed_data(), guided_alignment="3.1")
    with pytest.raises(TrainingError, match="head 1.3 does not exist"):
        make_trainer(glossed_data(), guided_alignment="1.3")
    with pytest.raises(TrainingError, match="needs training pairs with word glosses"):
        make_trainer(glossed_data(glossed=False), guided_alignment="1.1")


def test_resume_keeps_guided_alignment(tmp_path):
    data = glossed_data()
    out = tmp_path / "run"
    first = make_trainer(data, out, epochs=1, guided_alignment="2.2", guided_weight=0.2)
    assert first.fit().ok
    resumed = T.Trainer.from_checkpoint(out, data, epochs=2)
    assert resumed.options.guided_alignment == "2.2" and resumed.options.guided_weight == 0.2
    assert resumed.guided is not None and resumed.guided.head.label() == "2.2"
    assert resumed.fit().ok
    meta = load_bundle(out).meta
    assert meta["options"]["guided_alignment"] == "2.2" and [h["epoch"] for h in meta["history"]] == [1, 2]
    assert all(h["align_loss"] > 0 for h in meta["history"])
    state = json.loads((out / "training_state.json").read_text())
    assert state["options"]["guided_alignment"] == "2.2"


CLI_TINY = ["--d-model", "32", "--heads", "2", "--layers", "1", "--d-ff", "64", "--dropout", "0", "--warmup", "10", "--batch-tokens", "200"]


@pytest.mark.parametrize(("flags", "message"), [
    (["--data", "reverse", "--guided-alignment", "2.1"], "guided alignment head 2.1 does not exist: the model has 1 cross-attention layer(s) of 2 head(s)"),
    (["--data", "reverse", "--guided-alignment", "1.3"], "guided alignment head 1.3 does not exist"),
    (["--data", "reverse", "--guided-alignment", "first"], "guided alignment head must be LAYER.HEAD, 1-based (e.g. 2.1)"),
    (["--data", "reverse", "--guided-alignment", "1.1", "--guided-weight", "-1"], "guided-weight must be a number above 0"),
    (["--data", "reverse", "--guided-weight", "0.1"], "--guided-weight needs --guided-alignment LAYER.HEAD"),
    (["--data", "reverse", "--guided-alignment", "1.1"], "--guided-alignment needs training pairs with word glosses"),
])
def test_cli_refuses_a_bad_guided_alignment(tmp_path, capsys, flags, message):
    assert main(["train", *flags, "--n-examples", "100", "--out", str(tmp_path / "run"), "--epochs", "1", "--quiet", *CLI_TINY]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "run" / "model.safetensors").exists()


@pytest.mark.slow
def test_cli_trains_with_guided_alignment_and_records_it(tmp_path, capsys):
    out = tmp_path / "guided"
    flags = ["--src-vocab", "1900", "--tgt-vocab", "400", "--max-len", "24", "--quiet", *CLI_TINY]
    assert main(["train", "--data", "hsk-zh-en", "--guided-alignment", "1.2", "--guided-weight", "0.1", "--out", str(out), "--epochs", "1", *flags]) == 0
    meta = load_bundle(out).meta
    assert meta["options"]["guided_alignment"] == "1.2" and meta["options"]["guided_weight"] == 0.1
    assert "--guided-alignment 1.2" in meta["command"]
    assert np.isfinite(meta["history"][0]["align_loss"]) and meta["history"][0]["align_loss"] > 0
