"""``attnviz train`` and ``attnviz translate`` end to end on a tiny configuration."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.cli import main
from attnviz.core.bundle import load_bundle

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--d-model", "32", "--heads", "2", "--layers", "1", "--d-ff", "64", "--dropout", "0", "--warmup", "10", "--lr", "3e-3", "--batch-tokens", "200"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "rev"
    rc = main(["train", "--data", "reverse", "--n-examples", "300", "--out", str(out), "--epochs", "3", "--quiet", *TINY])
    assert rc == 0
    return out


def test_train_writes_a_bundle_with_its_command(trained, capsys):
    b = load_bundle(trained)
    assert b.config.d_model == 32 and b.config.n_encoder_layers == 1
    assert b.meta["command"].startswith("attnviz train") and "--data reverse" in b.meta["command"] and "--epochs 3" in b.meta["command"]
    assert b.meta["status"] == "finished" and len(b.meta["history"]) == 3
    assert b.meta["data"]["name"] == "reverse" and b.meta["data"]["sizes"]["train"] > 200
    assert {"train", "valid", "test"} == set(b.meta["final"])


def test_train_progress_and_summary_on_stderr(tmp_path, capsys):
    out = tmp_path / "copy"
    assert main(["train", "--data", "copy", "--n-examples", "120", "--out", str(out), "--epochs", "1", *TINY]) == 0
    err = capsys.readouterr().err
    assert "training" in err and "[" in err and "step" in err and "ETA" in err
    assert "finished" in err and "test :" in err and "model bundle:" in err
    assert main(["train", "--data", "copy", "--n-examples", "120", "--out", str(out), "--epochs", "1", *TINY]) == 1
    assert "--resume" in capsys.readouterr().err  # refuses to overwrite without --force


def test_train_resume_extends_a_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--data", "sort", "--n-examples", "150", "--out", str(out), "--epochs", "1", "--quiet", *TINY]) == 0
    assert main(["train", "--out", str(out), "--resume", "--epochs", "2", "--quiet"]) == 0
    b = load_bundle(out)
    assert b.meta["epoch"] == 2 and [h["epoch"] for h in b.meta["history"]] == [1, 2]
    assert b.meta["resumed_with"][0].startswith("attnviz train") and "--resume" in b.meta["resumed_with"][0]
    assert main(["train", "--out", str(tmp_path / "none"), "--resume"]) == 1
    assert "cannot resume" in capsys.readouterr().err


def test_train_reports_bad_tsv_lines_and_fails_cleanly(tmp_path, capsys):
    tsv = tmp_path / "c.tsv"
    good = "".join(f"{a} {b}\t{b} {a}\n" for a in "abcdefgh" for b in "abcdefgh")
    tsv.write_text("no tab\n" + good + "x\t\n", encoding="utf-8")
    assert main(["train", "--data", str(tsv), "--out", str(tmp_path / "m"), "--epochs", "1", "--quiet", "--src-vocab", "40", "--tgt-vocab", "40", *TINY]) == 0
    err = capsys.readouterr().err
    assert "c.tsv:1: no tab" in err and "c.tsv:66: empty target" in err and "2 bad line(s)" in err
    assert main(["train", "--data", str(tmp_path / "missing.tsv"), "--out", str(tmp_path / "m2")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["train", "--data", "copy", "--out", str(tmp_path / "m3"), "--d-model", "30", "--heads", "4"]) == 1
    assert "divisible" in capsys.readouterr().err


def test_translate_lines_in_order(trained, capsys):
    assert main(["translate", "--model", str(trained), "1 2 3", "4 5 6 7", "9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(set(ln) <= set("0123456789 ") for ln in lines)
    single = []
    for text in ("1 2 3", "4 5 6 7", "9"):
        main(["translate", "--model", str(trained), text])
        single.append(capsys.readouterr().out.strip())
    assert single == lines  # batching does not change a translation


def test_translate_json(trained, capsys):
    assert main(["translate", "--model", str(trained), "--json", "--candidates", "3", "3 1 2"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["source"] == "3 1 2" and obj["source_tokens"] == ["▁3", "▁1", "▁2"] and len(obj["source_ids"]) == 3
    assert len(obj["ids"]) == len(obj["tokens"]) == len(obj["steps"])
    for step, tid in zip(obj["steps"], obj["ids"]):
        assert step["id"] == tid and step["top_k"][0]["id"] == tid and len(step["top_k"]) == 3
        assert 0 < step["top_k"][0]["p"] <= 1
    if obj["finished"]:
        assert obj["tokens"][-1] == "EOS"


def test_translate_stdin_unknown_and_empty(trained, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("1 2\n3 4 5\n"))
    assert main(["translate", "--model", str(trained)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert main(["translate", "--model", str(trained), "x 1 y"]) == 0  # unknown characters -> UNK, translated anyway
    res = capsys.readouterr()
    assert len(res.out.splitlines()) == 1 and "unknown character(s) x y" in res.err
    assert main(["translate", "--model", str(trained), "1 2", "  "]) == 1
    assert "input 2 is empty" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["translate", "--model", str(trained)]) == 1
    assert "nothing to translate" in capsys.readouterr().err
    assert main(["translate", "--model", str(trained / "nope"), "1"]) == 1
    assert "no such model bundle" in capsys.readouterr().err


@pytest.mark.slow
def test_subprocess_ctrl_c_saves_then_translate_reads_stdin(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "long"
    cmd = [sys.executable, "-m", "attnviz", "train", "--data", "copy", "--n-examples", "300", "--out", str(out), "--epochs", "500", *TINY]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stderr:  # wait until a step has run
            seen.append(line)
            if line.startswith("epoch"):
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)[1], None
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, "".join(seen) + (rest or "")
    assert "stopped" in rest and "--resume" in rest
    b = load_bundle(out)
    assert b.meta["status"] == "stopped" and b.meta["command"].startswith("attnviz train --data copy")
    r = subprocess.run(
        [sys.executable, "-m", "attnviz", "translate", "--model", str(out)], input="1 2 3\n4 5\n", cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2


def test_train_explains_a_vocabulary_smaller_than_the_alphabet(tmp_path, capsys):
    tsv = tmp_path / "zh.tsv"
    chars = [chr(0x4E00 + i) for i in range(80)]
    tsv.write_text("".join(f"{a}{b}\t{i}\n" for i, (a, b) in enumerate(zip(chars, chars[1:]))), encoding="utf-8")
    assert main(["train", "--data", str(tsv), "--out", str(tmp_path / "m"), "--src-vocab", "20", *TINY]) == 1
    err = capsys.readouterr().err
    m = re.match(r"attnviz: error: the source vocabulary \(20\) is smaller than the (\d+) distinct characters", err)
    assert m and 60 < int(m.group(1)) <= 80  # the characters of the training split
    assert f"--src-vocab {int(m.group(1)) + 50} or more" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("flags", "message"), [
    (["--data", "hsk-zh-en", "--augment", "cedict,nope"], "unknown augmentation nope (choose from cedict, substitution, roles, roles-wide)"),
    (["--data", "hsk-zh-en", "--augment-per-pair", "3"], "--augment-per-pair and --augment-pronouns need --augment substitution"),
    (["--data", "reverse", "--augment", "substitution"], "--augment needs word glosses"),
])
def test_train_explains_a_bad_augmentation(tmp_path, capsys, flags, message):
    assert main(["train", *flags, "--out", str(tmp_path / "run"), "--epochs", "1", "--quiet", *TINY]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "run" / "model.safetensors").exists()


@pytest.mark.slow
def test_train_augments_only_the_training_split_and_records_it(tmp_path, capsys):
    from attnviz.core.data.corpora import load_hsk
    from attnviz.core.training.trainer import Trainer

    hsk = load_hsk()
    out = tmp_path / "aug"
    flags = ["--src-vocab", "1900", "--tgt-vocab", "400", "--max-len", "24", "--quiet", *TINY]
    assert main(["train", "--data", "hsk-zh-en", "--augment", "substitution", "--augment-per-pair", "1", "--augment-pronouns", "--out", str(out), "--epochs", "1", *flags]) == 0
    assert "substitution pairs added" in capsys.readouterr().err
    data = load_bundle(out).meta["data"]
    added = data["spec"]["augment"]["added"]["substitution"]
    assert data["spec"]["augment"] == {"kinds": ["substitution"], "seed": 0, "per_pair": 1, "pronouns": True, "added": {"substitution": added}}
    assert added > 500 and data["sizes"] == {"train": len(hsk.train) + added, "valid": len(hsk.valid), "test": len(hsk.test)}
    assert data["train_hash"] != hsk.train_hash and data["split_hash"] != hsk.split_hash
    # A resumed run rebuilds the same augmented data from meta.json (else the split hash would differ).
    resumed = Trainer.from_checkpoint(out, None, epochs=2)
    assert resumed.dataset.train_hash == data["train_hash"] and resumed.dataset.split_hash == data["split_hash"]
    assert any(p.extra.get("swap", [""])[0] in ("他", "她") for p in resumed.dataset.train)  # --augment-pronouns kept
