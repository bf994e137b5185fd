"""Head roles over a corpus: every measure equals the same measure written out here from each
pair's own attention (one pair per pass: no padding at all), while the analysis runs the pairs
padded in batches; a uniform row's entropy is log n; the command writes [layer][head] per kind and
measure and refuses a kind the model has not in one line."""

from __future__ import annotations

import json
import math
import unicodedata

import numpy as np
import pytest
import torch

from attnviz.cli import main
from attnviz.core.analysis.alignment import reference_pairs
from attnviz.core.analysis.head_roles import MEASURES, CorpusRequest, advance, head_roles, site_sums
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.core.data.corpora import Pair
from attnviz.core.model.sites import attention_sites

from tiny_models import random_model, tokenizers

GLOSSED = [{"word": "我", "gloss_en": "I; me"}, {"word": "喜欢", "gloss_en": "to like"}, {"word": "吃", "gloss_en": "to eat"},
           {"word": "苹果", "gloss_en": "apple"}]
PAIRS = [  # three lengths, so the batched pass pads both sides; the first has HSK-style glosses
    Pair("我喜欢吃苹果。", "I like eating apples.", "a", {"tokens": GLOSSED}),
    Pair("你好！", "Hello!", "b"),
    Pair("这本书很有意思。", "This book is very interesting.", "c"),
]


@pytest.fixture(scope="module")
def model():
    return random_model()


def punctuation(piece: str) -> bool:
    core = piece.replace("\u2581", "")
    return bool(core) and all(unicodedata.category(ch)[0] == "P" for ch in core)


def expected(model, pairs):
    """Each measure's mean over every query row of every pair, from one unpadded pass per pair."""
    src_tok, tgt_tok = tokenizers()
    cfg = model.config
    rows = {(s.kind, s.layer, m): [] for s in attention_sites(cfg) for m in MEASURES}
    for pair in pairs:
        src, fed = src_tok.encode(pair.src), [cfg.bos_id, *tgt_tok.encode(pair.tgt)]
        with torch.inference_mode():
            _, trace = model.run_with_trace(torch.tensor([src]), torch.tensor([fed]), names=["*.weights"])
        for site in attention_sites(cfg):
            a = trace[site.name("weights")].astype(np.float64)  # [H, Q, K]
            keys = fed if site.kind == "decoder" else src
            tok = tgt_tok if site.kind == "decoder" else src_tok
            add = rows_of(a, keys, tok, cfg, site.kind)
            for m, values in add.items():
                rows[(site.kind, site.layer, m)] += values
            if site.kind == "cross" and pair.extra.get("tokens"):
                rows[(site.kind, site.layer, "alignment")] += alignment_hits(a, pair, src_tok, tgt_tok, cfg.max_len)
            rows[(site.kind, site.layer, "importance")].append(importance(model, src, fed[1:] + [cfg.eos_id], site))
    return {key: np.mean(v, axis=0) if v else None for key, v in rows.items()}


def importance(model, src, target, site):
    """Δ log P(target) per token with each head of ``site`` zeroed alone, one pass per head."""
    from attnviz.core.decoding.teacher_forcing import log_prob_of
    from attnviz.core.model.interventions import ZeroHeads

    clean = log_prob_of(model, src, target)[0]
    return np.array([(log_prob_of(model, src, target, [ZeroHeads(site, (h,))])[0] - clean) / len(target)
                     for h in range(model.config.n_heads)])


def rows_of(a, keys, tok, cfg, kind):
    """Per query row, each measure's [head] values (the previous-token score from the second row on)."""
    t, s = a.shape[1], a.shape[2]
    out = {m: [] for m in ("entropy", "eos", "start", "punctuation", "diagonal", "previous")}
    for q in range(t):
        row = a[:, q, :]
        out["entropy"].append(np.array([-sum(p * math.log(p) for p in r if p > 0) for r in row]))
        out["eos"].append(row[:, [k for k, i in enumerate(keys) if i == cfg.eos_id]].sum(-1))
        out["start"].append(row[:, [k for k, i in enumerate(keys) if i == cfg.bos_id]].sum(-1))
        out["punctuation"].append(row[:, [k for k, i in enumerate(keys) if punctuation(tok.piece(i))]].sum(-1))
        out["diagonal"].append(row[:, min(s - 1, math.floor(q * s / t + 0.5))] if kind == "cross" else row[:, q])
        if kind != "cross" and q >= 1:
            out["previous"].append(row[:, q - 1])
    return out


def alignment_hits(a, pair, src_tok, tgt_tok, max_len):
    record = {"chinese": pair.src, "translation": {"en": pair.tgt}, "tokens": pair.extra["tokens"]}
    out = []
    for p, allowed, _ in reference_pairs(record, src_tok, tgt_tok, max_len).pairs:
        out.append(np.array([float(int(np.argmax(a[h, p])) in allowed) for h in range(a.shape[0])]))
    return out


def test_every_measure_equals_the_one_written_out_here(model):
    src_tok, tgt_tok = tokenizers()
    roles = head_roles(model, src_tok, tgt_tok, PAIRS, batch_rows=2)  # two passes, the first padded
    want = expected(model, PAIRS)
    assert roles.sentences == 3 and roles.skipped == 0
    for (kind, layer, m), value in want.items():
        got = roles.measure(kind, m)[layer]
        if value is None:  # the measure does not apply to the kind
            assert np.isnan(got).all(), (kind, m)
        else:
            np.testing.assert_allclose(got, value, atol=1e-5, err_msg=f"{kind} {layer} {m}")
    assert not np.isnan(roles.measure("cross", "alignment")).any()  # the glossed pair gave reference pairs
    assert roles.measure("decoder", "start")[0].min() > 0  # every decoder row can see SOS


def test_a_uniform_row_has_entropy_log_n_and_padding_counts_nowhere():
    n, pad = 5, 3
    w = np.zeros((1, 2, n + pad, n + pad))  # one sentence of n tokens padded by 3, two heads
    w[:, :, :n, :n] = 1.0 / n  # every real row uniform over the real keys
    w[:, :, n:, :] = 0.9 / (n + pad)  # padding rows, whatever they hold, are left out
    valid = np.array([[True] * n + [False] * pad])
    flags = {"eos": np.zeros((1, n + pad), bool), "start": np.zeros((1, n + pad), bool), "punctuation": np.zeros((1, n + pad), bool)}
    flags["eos"][0, n - 1] = True
    out = site_sums(w, valid, valid, flags, "encoder")
    total, rows = out["entropy"]
    assert rows == n
    np.testing.assert_allclose(total / rows, [math.log(n)] * 2, rtol=1e-12)
    np.testing.assert_allclose(out["eos"][0] / rows, [1.0 / n] * 2)
    np.testing.assert_allclose(out["diagonal"][0] / rows, [1.0 / n] * 2)
    assert out["previous"][1] == n - 1  # rows 1 .. n - 1 have a previous key


def test_a_run_a_chunk_at_a_time_equals_one_run(model):
    src_tok, tgt_tok = tokenizers()
    whole = head_roles(model, src_tok, tgt_tok, PAIRS)
    run = advance(CorpusRequest(None, 3, tuple(PAIRS)), model, src_tok, tgt_tok, chunk=2)
    assert (run.done, run.total, run.complete) == (2, 3, False)
    after = advance(run, model, src_tok, tgt_tok, chunk=2)
    assert after.complete and run.done == 2  # the earlier run stays as it was
    for kind in whole.kinds:
        for m in MEASURES:
            np.testing.assert_allclose(after.roles.measure(kind, m), whole.measure(kind, m), atol=1e-6, equal_nan=True)  # other paddings: float32 rounding


def test_the_command_writes_layer_by_head_per_kind_and_measure(tmp_path, capsys, model):
    src_tok, tgt_tok = tokenizers()
    folder = save_bundle(tmp_path / "tiny", model, src_tok, tgt_tok, {"name": "tiny"})
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{p.src}\t{p.tgt}\n" for p in PAIRS), encoding="utf-8")
    assert main(["heads", "--model", str(folder), "--pairs", str(tsv), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    saved = load_bundle(folder)  # as stored (its weights may be rounded)
    want = head_roles(saved.model, saved.src_tokenizer, saved.tgt_tokenizer, [Pair(p.src, p.tgt) for p in PAIRS])
    assert out["sentences"] == 3 and set(out["kinds"]) == {"encoder", "decoder", "cross"}
    for kind, measures in out["kinds"].items():
        assert list(measures) == list(MEASURES)
        for m, table in measures.items():
            assert np.shape(table) == (2, model.config.n_heads)
            np.testing.assert_allclose(np.array(table, dtype=float), want.measure(kind, m), atol=1e-5, equal_nan=True)
    assert main(["heads", "--model", str(folder)]) == 2  # the model names no held-out data
    err = capsys.readouterr().err
    assert err.startswith("attnviz: error: ") and err.count("\n") == 1 and "--pairs" not in err and "no training data" in err


@pytest.mark.slow
def test_a_kind_the_model_has_not_is_refused_in_one_line(tmp_path, capsys):
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    from tiny_families import build_gpt2

    folder = build_gpt2(tmp_path / "gpt2")
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("the cat runs\tthe dog sat\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["heads", "--model", str(folder), "--pairs", str(tsv), "--kind", "cross"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnviz: error: ") and err.count("\n") == 1 and "decoder-only" in err and "cross" in err
    assert main(["heads", "--model", str(folder), "--pairs", str(tsv), "--json"]) == 0  # its own kind is measured
    out = json.loads(capsys.readouterr().out)
    assert list(out["kinds"]) == ["decoder"] and out["sentences"] == 1
