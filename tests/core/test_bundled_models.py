"""The bundled models under models/: what they are, how they were made, and that they work."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from attnviz.core.bundle import BUNDLE_FILES, load_bundle
from attnviz.core.data import corpora as D
from attnviz.core.training.evaluation import greedy_translate, teacher_forced_metrics
from attnviz.paths import default_model, models_dir

BUNDLED = ("hsk-zh-en", "hsk-zh-en-batchnorm", "reverse")
# Training sentences of the default model (HSK ids) that it must translate exactly.
DEFAULT_KNOWN = ("hsk1-0001", "hsk1-0002", "hsk1-0005", "hsk1-0006", "hsk1-0008", "hsk1-0009", "hsk1-0012", "hsk1-0013")


@pytest.fixture(scope="module")
def hsk():
    return D.load_hsk()


@pytest.fixture(scope="module")
def default():
    return load_bundle(default_model())


@pytest.mark.parametrize("name", BUNDLED)
def test_bundle_is_small_complete_and_records_its_command(name):
    path = models_dir() / name
    files = sorted(p.name for p in path.iterdir())
    assert files == sorted(BUNDLE_FILES)  # no training state or anything else shipped
    assert sum(p.stat().st_size for p in path.iterdir()) <= 16 * 1024 * 1024
    b = load_bundle(path)
    assert b.meta["command"].startswith("attnviz train --data ")
    assert b.meta["status"] == "finished" and b.meta["history"] and b.meta["snapshots"]
    assert {"train", "valid", "test"} <= set(b.meta["final"])


def test_default_is_layernorm_and_batchnorm_variant_matches_it(default):
    bn = load_bundle(models_dir() / "hsk-zh-en-batchnorm")
    assert default.config.norm == "layer" and bn.config.norm == "batch"
    same = {k: v for k, v in default.config.to_dict().items() if k != "norm"}
    assert same == {k: v for k, v in bn.config.to_dict().items() if k != "norm"}


def test_hsk_models_were_trained_on_todays_split(default, hsk):
    for b in (default, load_bundle(models_dir() / "hsk-zh-en-batchnorm")):
        assert b.meta["data"]["split_hash"] == hsk.split_hash
        assert b.meta["data"]["licence"] == "CC-BY-SA-4.0"


def test_default_translates_training_sentences(default, hsk):
    by_id = {p.id: p for p in hsk.train}
    pairs = [by_id[i] for i in DEFAULT_KNOWN]  # all in the training split
    out = greedy_translate(default.model, default.src_tokenizer, default.tgt_tokenizer, [p.src for p in pairs])
    assert out == [p.tgt for p in pairs]


def test_default_teacher_forced_accuracy_on_training_sample(default, hsk):
    sample = random.Random(0).sample(hsk.train, 400)
    ex = D.encode_pairs(sample, default.src_tokenizer, default.tgt_tokenizer, default.config.max_len)
    m = teacher_forced_metrics(default.model, ex)
    assert m["token_accuracy"] >= 0.95
    assert default.meta["final"]["train"]["token_accuracy"] >= 0.95


def test_default_handles_unknown_characters(default):
    (out,) = greedy_translate(default.model, default.src_tokenizer, default.tgt_tokenizer, ["🙂老师，您好！"])
    assert isinstance(out, str) and out


def test_batchnorm_model_learned_its_training_data(hsk):
    bn = load_bundle(models_dir() / "hsk-zh-en-batchnorm")
    sample = random.Random(0).sample(hsk.train, 400)
    ex = D.encode_pairs(sample, bn.src_tokenizer, bn.tgt_tokenizer, bn.config.max_len)
    assert teacher_forced_metrics(bn.model, ex)["token_accuracy"] >= 0.85  # eval mode: running statistics
    by_id = {p.id: p for p in hsk.train}
    pairs = [by_id[i] for i in DEFAULT_KNOWN]
    out = greedy_translate(bn.model, bn.src_tokenizer, bn.tgt_tokenizer, [p.src for p in pairs])
    assert sum(o == p.tgt for o, p in zip(out, pairs)) >= 3


def test_reverse_cross_attention_is_an_anti_diagonal():
    b = load_bundle(models_dir() / "reverse")
    last = b.config.n_decoder_layers - 1
    rng = random.Random(1)
    for _ in range(40):
        n = rng.randint(3, 10)
        seq = rng.sample("0123456789", n)  # distinct symbols: the aligned position is unique
        src = torch.tensor([b.src_tokenizer.encode(" ".join(seq))])
        tgt = torch.tensor([[b.config.bos_id, *b.tgt_tokenizer.encode(" ".join(seq[::-1]))]])
        assert src.shape[1] == n and tgt.shape[1] == n + 1
        logits, trace = b.model.run_with_trace(src, tgt, names=[f"decoder.layers.{last}.cross_attn.weights"])
        assert logits[0, :n].argmax(-1).tolist() == tgt[0, 1:].tolist() and int(logits[0, n].argmax()) == b.config.eos_id
        w = trace[f"decoder.layers.{last}.cross_attn.weights"].mean(0)[:n]  # [out, src], averaged over heads
        assert w.argmax(-1).tolist() == list(range(n - 1, -1, -1)), np.round(w, 2)
