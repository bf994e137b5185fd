"""``attnviz trace`` through the real command line entry point: files, JSON, and the documented bad inputs."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from attnviz.cli import main
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.core.model.trace import trace_names

from decoding_fixtures import random_bundle, reverse_bundle


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    b = random_bundle(seed=6, norm="batch", placement="pre")
    return save_bundle(tmp_path_factory.mktemp("models") / "tiny", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)


@pytest.fixture(scope="module")
def reverse_dir(tmp_path_factory):
    b = reverse_bundle()
    return save_bundle(tmp_path_factory.mktemp("models") / "reverse", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)


def trace(*args) -> int:
    return main(["trace", *map(str, args)])


def test_trace_writes_every_documented_name_with_tokens_and_analyses(tiny_dir, tmp_path, capsys):
    out = tmp_path / "t.npz"
    assert trace("--model", tiny_dir, "--src", "我是学生。", "--max-len", 6, "--out", out) == 0
    cfg = load_bundle(tiny_dir).config
    with np.load(out) as z:  # no pickled objects (allow_pickle is off by default)
        names = set(z.files)
        assert set(trace_names(cfg)) <= names
        src = len(z["tokens.src_ids"])
        assert z["tokens.src_pieces"].tolist() == load_bundle(tiny_dir).src_tokenizer.pieces(z["tokens.src_ids"].tolist())
        assert z["decoder.layers.1.cross_attn.weights"].shape == (cfg.n_heads, 6, src)
        w = z["decoder.layers.0.self_attn.weights"]
        assert w.shape == (cfg.n_heads, 6, 6) and (w[:, np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]] == 0).all()
        assert z["encoder.layers.0.self_attn.weights"].shape == (cfg.n_heads, src, src)
        assert z["tokens.input_ids"][0] == 2 and np.array_equal(z["tokens.input_ids"][1:], z["tokens.output_ids"][:-1])
        assert z["steps.topk_probs"].shape == (6, 10) and z["steps.topk_pieces"].shape == (6, 10)
        assert np.array_equal(z["steps.topk_ids"][:, 0], z["generator.probs"].argmax(-1))
        assert z["analysis.cross.entropy"].shape == (cfg.n_decoder_layers, cfg.n_heads)
        assert z["analysis.cross.rollout"].shape == (6, src)
        assert z["analysis.encoder.rollout"].shape == (src, src)
        assert z["analysis.norm.encoder.layers.0.norm1.running_mean"].shape == (cfg.d_model,)  # BatchNorm model
        assert z["analysis.norm.decoder.layers.1.norm2.compare.layer_mean"].shape == (6,)
    assert "wrote" in capsys.readouterr().out
    assert [p.name for p in tmp_path.iterdir()] == ["t.npz"]  # no temporary file left


def test_trace_json_summary(reverse_dir, capsys):
    assert trace("--model", reverse_dir, "--src", "3 1 4", "--json", "--top-k", 3) == 0
    s = json.loads(capsys.readouterr().out)
    b = load_bundle(reverse_dir)
    tok, cfg = b.tgt_tokenizer, b.config
    assert s["mode"] == "decode" and s["translation"] == "4 1 3"
    assert s["src_pieces"] == b.src_tokenizer.encode_pieces("3 1 4")
    assert s["output_pieces"] == tok.encode_pieces("4 1 3") + ["EOS"] and s["input_pieces"][0] == "SOS"
    assert [st["piece"] for st in s["steps"]] == s["output_pieces"]
    assert all(len(st["topk"]) == 3 and st["topk"][0][0] == st["piece"] for st in s["steps"])
    assert np.array(s["heads"]["cross"]["entropy"]).shape == (cfg.n_decoder_layers, cfg.n_heads)
    assert np.array(s["heads"]["encoder"]["max_weight"]).shape == (cfg.n_encoder_layers, cfg.n_heads)
    assert set(s["heads"]) == {"encoder", "decoder", "cross"}


def test_trace_teacher_forced(reverse_dir, tmp_path, capsys):
    out = tmp_path / "tf.npz"
    assert trace("--model", reverse_dir, "--src", "3 1 4", "--tgt", "4 1 3", "--out", out, "--json") == 0
    s = json.loads(capsys.readouterr().out)
    assert s["mode"] == "teacher-forced" and s["accuracy"] == 1.0
    b = load_bundle(reverse_dir)
    assert [st["target"] for st in s["steps"]] == b.tgt_tokenizer.encode_pieces("4 1 3") + ["EOS"]
    with np.load(out) as z:
        assert np.array_equal(z["steps.predicted_ids"], z["generator.logits"].argmax(-1))
        assert z["decoder.layers.0.cross_attn.weights"].shape == (b.config.n_heads, 4, 3)
        assert z["steps.match"].all()


def test_trace_strategies_and_seed_are_reproducible(tiny_dir, tmp_path):
    files = []
    for i, (strategy, seed) in enumerate([("sample:1.5", 4), ("sample:1.5", 4), ("sample:1.5", 5), ("beam:3", 0)]):
        files.append(tmp_path / f"{i}.npz")
        assert trace("--model", tiny_dir, "--src", "我是学生。", "--strategy", strategy, "--seed", seed, "--max-len", 8, "--out", files[-1]) == 0
    z = [np.load(f) for f in files]
    try:
        assert np.array_equal(z[0]["tokens.output_ids"], z[1]["tokens.output_ids"])
        assert not np.array_equal(z[0]["tokens.output_ids"], z[2]["tokens.output_ids"])
        assert z[3]["beams.token_ids"].shape[0] >= 2 and z[3]["beams.scores"][0] == z[3]["beams.scores"].max()
    finally:
        for f in z:
            f.close()


def test_trace_names_prints_the_contract(tiny_dir, capsys):
    assert trace("--model", tiny_dir, "--names") == 0
    out = capsys.readouterr().out
    assert "decoder.layers.1.cross_attn.weights" in out and "[head, query, key]" in out


# -- bad inputs: one line on stderr, exit code, no file ------------------------------------------------------
@pytest.mark.parametrize(
    "args,message,code",
    [
        (["--src", ""], "the source sentence is empty", 1),
        (["--src", "   "], "the source sentence is empty", 1),
        (["--src", "我", "--strategy", "beam:zero"], "bad strategy", 1),
        (["--src", "我", "--strategy", "nucleus"], "unknown strategy", 1),
        (["--src", "我", "--strategy", "sample:0"], "temperature must be a finite number in [0.01, 100]", 1),
        ([], "--src is required", 2),
        (["--src", "我", "--strategy", "sample", "--seed", str(2**70)], "--seed", 2),
        (["--src", "我", "--seed", "-1"], "--seed", 2),
        (["--src", "我", "--max-len", "0"], "--max-len", 2),
        (["--src", "我", "--strategy", "beam:2", "--max-len", "-1"], "--max-len", 2),
        (["--src", "我\udcff"], "not valid Unicode", 1),
        (["--src", "我", "--tgt", "a\udcff"], "not valid Unicode", 1),
    ],
)
def test_bad_inputs_are_one_line_errors_and_write_nothing(tiny_dir, tmp_path, capsys, args, message, code):
    out = tmp_path / "x.npz"
    assert trace("--model", tiny_dir, *args, "--out", out) == code
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnviz: error:") and message in err and "\n" not in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_unwritable_out_is_a_clear_error_without_a_partial_file(tiny_dir, tmp_path, capsys, monkeypatch):
    assert trace("--model", tiny_dir, "--src", "我", "--out", tmp_path / "missing" / "x.npz") == 1
    assert "cannot write" in capsys.readouterr().err
    assert trace("--model", tiny_dir, "--src", "我", "--out", tmp_path) == 1
    assert "is a folder" in capsys.readouterr().err
    # a failure while writing (disk full) leaves neither the file nor a temporary one
    out = tmp_path / "y.npz"
    out.write_bytes(b"previous")

    def broken(fh, **arrays):
        fh.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", broken)
    assert trace("--model", tiny_dir, "--src", "我", "--max-len", 2, "--out", out) == 1
    err = capsys.readouterr().err
    assert "cannot write" in err and "No space left on device" in err
    assert out.read_bytes() == b"previous" and sorted(os.listdir(tmp_path)) == ["y.npz"]


def test_documented_source_behaviours_through_the_cli(tiny_dir, tmp_path, capsys):
    out = tmp_path / "u.npz"
    assert trace("--model", tiny_dir, "--src", "我是☃学生", "--max-len", 3, "--out", out, "--json") == 0
    cap = capsys.readouterr()
    s = json.loads(cap.out)
    assert "UNK" in s["src_pieces"] and "attnviz: note: unknown character(s) U+2603 shown as UNK" in cap.err  # a symbol by its code point
    assert any("U+2603" in n for n in s["notices"])
    long_src = "我是学生。" * 12  # 60 characters: more than the model's 40 positions
    assert trace("--model", tiny_dir, "--src", long_src, "--max-len", 2, "--json") == 0
    cap = capsys.readouterr()
    assert len(json.loads(cap.out)["src_pieces"]) == 40 and "truncated" in cap.err
    assert trace("--model", tmp_path / "nope", "--src", "我", "--json") == 1
    assert "no such model bundle" in capsys.readouterr().err


def test_hsk_alignment_scores_are_printed_and_kept_in_meta(tiny_dir, tmp_path, capsys):
    b = load_bundle(tiny_dir)
    copy = save_bundle(tmp_path / "copy", b.model, b.src_tokenizer, b.tgt_tokenizer, {"note": "kept"})
    assert trace("--model", copy, "--hsk-alignment", "--limit", 6, "--write-meta") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["split"] == "test" and report["records"] == 6
    assert np.array(report["predicting"]["per_head"]).shape == (b.config.n_decoder_layers, b.config.n_heads)
    meta = load_bundle(copy).meta  # still a valid bundle
    assert meta["hsk_alignment"] == report and meta["note"] == "kept"
    assert sorted(p.name for p in copy.iterdir()) == ["config.json", "meta.json", "model.safetensors", "src.model", "tgt.model"]
    assert trace("--model", copy, "--src", "我", "--write-meta", "--json") == 2
    assert "go with --hsk-alignment" in capsys.readouterr().err


def test_json_summary_is_strict_json_and_a_broken_model_writes_nothing(tmp_path, capsys):
    b = random_bundle(seed=6)
    path = save_bundle(tmp_path / "m", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)
    for extra in ([], ["--tgt", "I am"], ["--strategy", "sample"]):
        assert trace("--model", path, "--src", "我是学生。", "--json", *extra) == 0
        json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    with torch.no_grad():  # weights that overflow on tokens the load-time probe does not use
        b.model.encoder.embed.table.weight[12:] = 3e38
    path = save_bundle(tmp_path / "broken", b.model, b.src_tokenizer, b.tgt_tokenizer, b.meta)
    out = tmp_path / "x.npz"
    for extra in ([], ["--tgt", "I am"], ["--tgt", "I am", "--json"], ["--strategy", "sample"], ["--strategy", "beam:2", "--json"]):
        assert trace("--model", path, "--src", "我是学生。", "--out", out, *extra) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "NaN or infinite" in err
        assert not out.exists()
