"""Hostile bundles (``tests/hostile_bundles.py``): every one is refused with one line, by
``load_bundle`` and by ``attnviz translate``; no payload runs; unreadable files say so."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hostile_bundles import BAD_CONFIG_VALUES, PICKLE_MARKER, hostile_bundles, valid_bundle
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from attnviz.cli import main
from attnviz.core.bundle import CONFIG, META, SRC_TOK, WEIGHTS, BundleError, load_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, DecodingError, Sampling
from attnviz.core.model.config import FIELDS, MAX_PARAMETERS, TransformerConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[tuple[str, Path]]]:
    folder = tmp_path_factory.mktemp("hostile")
    return folder, hostile_bundles(folder)


def test_every_config_field_has_a_row_and_hostile_cases(corpus):
    _, cases = corpus
    names = {name for name, _ in cases}
    assert set(FIELDS) == {f.name for f in dataclasses.fields(TransformerConfig)}
    assert {f"config-{field}-0" for field in FIELDS} <= names
    assert set(BAD_CONFIG_VALUES) <= set(FIELDS)


def test_every_hostile_bundle_is_refused_by_load_bundle_in_one_line(corpus):
    folder, cases = corpus
    wrong = []
    for name, path in cases:
        try:
            load_bundle(path)
            wrong.append(f"{name}: loaded")
        except BundleError as exc:
            if "\n" in str(exc) or not str(exc).startswith(str(path)):
                wrong.append(f"{name}: {exc!s}")
    assert not wrong
    assert not (folder / PICKLE_MARKER).exists()


def test_every_hostile_bundle_is_refused_by_translate_in_one_line(corpus, capsys):
    folder, cases = corpus
    wrong = []
    for name, path in cases:
        rc = main(["translate", "--model", str(path), "我是学生。"])
        out, err = capsys.readouterr()
        if rc == 0 or out or err.count("\n") != 1 or not err.startswith("attnviz: error: "):
            wrong.append(f"{name}: rc {rc}, out {out!r}, err {err!r}")
    assert not wrong
    assert not (folder / PICKLE_MARKER).exists()


def test_a_bad_config_value_is_named_in_the_message(corpus):
    _, cases = corpus
    for name, path in cases:
        field = name.removeprefix("config-").rsplit("-", 1)[0]
        if name.startswith("config-") and field in FIELDS:
            with pytest.raises(BundleError) as err:
                load_bundle(path)
            assert field in str(err.value) and CONFIG in str(err.value)


@pytest.mark.parametrize("change", [{"n_decoder_layers": 1_000_000}, {"d_model": 1e9},
                                    {"d_model": 65536, "d_ff": 1_048_576, "n_encoder_layers": 100}])
def test_a_huge_config_is_refused_before_anything_is_allocated(tmp_path, monkeypatch, change):
    path = valid_bundle(tmp_path)
    cfg = json.loads((path / CONFIG).read_text())
    (path / CONFIG).write_text(json.dumps({**cfg, **change}))
    monkeypatch.setattr(torch.nn.Module, "__init__", _never)  # no module may be built
    with pytest.raises(BundleError, match="n_decoder_layers|d_model|budget"):
        load_bundle(path)


def _never(*args, **kw):
    raise AssertionError("a module was built")


def test_the_budget_message_says_what_the_budget_is():
    with pytest.raises(ValueError, match=f"budget is {MAX_PARAMETERS // 10**6} million"):
        TransformerConfig(d_model=8192, d_ff=32768, n_encoder_layers=20, n_decoder_layers=20)


def test_huge_finite_weights_are_refused_at_load(tmp_path):
    path = valid_bundle(tmp_path)
    state = st_load((path / WEIGHTS).read_bytes())
    state["decoder.embed.table.weight"] = torch.full_like(state["decoder.embed.table.weight"], 3e38, dtype=torch.float32)
    (path / WEIGHTS).write_bytes(st_save(state))
    with pytest.raises(BundleError, match="overflow.*decoder.embed.table.weight"):
        load_bundle(path)


# -- unreadable files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [CONFIG, META, SRC_TOK, WEIGHTS])
def test_an_unreadable_file_says_permission_denied(tmp_path, monkeypatch, capsys, name):
    path = valid_bundle(tmp_path)
    real_open = os.open  # the capped reader (attnviz.core.files) opens with os.open, never waiting

    def guarded_open(file, *args, **kw):
        if Path(os.fsdecode(file)) == path / name:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kw)

    monkeypatch.setattr(os, "open", guarded_open)
    with pytest.raises(BundleError, match=f"{name}: permission denied"):
        load_bundle(path)
    assert main(["translate", "--model", str(path), "我是学生。"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "permission denied" in err and "not a valid safetensors" not in err


def test_an_unreadable_folder_says_permission_denied(tmp_path, monkeypatch):
    path = valid_bundle(tmp_path)
    real_listdir = os.listdir

    def guarded_listdir(p="."):
        if Path(p) == path:
            raise PermissionError(13, "Permission denied", str(p))
        return real_listdir(p)

    monkeypatch.setattr(os, "listdir", guarded_listdir)
    with pytest.raises(BundleError, match="permission denied"):
        load_bundle(path)


def test_a_chmod_000_file_is_refused_as_unreadable_where_permissions_hold(tmp_path):
    path = valid_bundle(tmp_path)
    os.chmod(path / META, 0)
    try:
        readable = os.access(path / META, os.R_OK)  # root reads anyway
        if readable:
            assert load_bundle(path).meta["note"] == "hostile corpus base"
        else:
            with pytest.raises(BundleError, match="permission denied"):
                load_bundle(path)
    finally:
        os.chmod(path / META, 0o644)


# -- models whose scores overflow on some inputs only ------------------------------------------------
@pytest.fixture
def overflowing(tmp_path):
    """A bundle that passes the load-time probe but overflows on source tokens the probe does not use."""
    path = valid_bundle(tmp_path)
    state = st_load((path / WEIGHTS).read_bytes())
    table = state["encoder.embed.table.weight"] = state["encoder.embed.table.weight"].float()  # float16 cannot hold 3e38
    table[12:] = 3e38
    (path / WEIGHTS).write_bytes(st_save(state))
    bundle = load_bundle(path)
    text = "我是学生。"
    assert max(bundle.src_tokenizer.encode(text)) >= 12
    return path, bundle, text


@pytest.mark.parametrize("strategy", [Sampling(seed=3), BeamSearch(2), None])
def test_a_session_on_overflowing_scores_is_a_one_line_error(overflowing, strategy):
    _, bundle, text = overflowing
    session = DecodingSession.from_bundle(bundle, text, strategy=strategy)
    with pytest.raises(DecodingError, match="NaN or infinite"):
        session.run()


@pytest.mark.parametrize("options", [["--sample"], ["--beam", "2"], [], ["--json"], ["--sample", "--json"]])
def test_translate_on_overflowing_scores_is_a_one_line_error(overflowing, capsys, options):
    path, _, text = overflowing
    assert main(["translate", "--model", str(path), *options, text]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "NaN or infinite" in err


# -- bad text and options --------------------------------------------------------------------------
def _translate(model: Path, *args: bytes | str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "attnviz", "translate", "--model", os.fsencode(model), *args],
                          input=stdin, capture_output=True, env=env, timeout=120)


@pytest.mark.slow
def test_invalid_utf8_on_stdin_and_in_argv_is_one_line(tmp_path):
    model = valid_bundle(tmp_path)
    for args, stdin in [((), "我是学生。\n".encode() + b"\xff\xfe bad\n"), ((b"\xff\xfe",), None),
                        ((), "我\udcff".encode("utf-8", "surrogatepass"))]:
        res = _translate(model, *args, stdin=stdin)
        err = res.stderr.decode()
        assert res.returncode == 1 and res.stdout == b"", err
        assert err.count("\n") == 1 and ("UTF-8" in err or "Unicode" in err), err


def test_valid_utf8_on_stdin_still_translates(tmp_path):
    res = _translate(valid_bundle(tmp_path), stdin="我是学生。\n他去学校了。\n".encode())
    assert res.returncode == 0 and len(res.stdout.decode().splitlines()) == 2


@pytest.mark.parametrize("args, message", [
    (["--seed", str(2**70), "--sample"], "--seed"),
    (["--seed", "-1", "--sample"], "--seed"),
    (["--max-len", "0"], "--max-len"),
    (["--max-len", "0", "--beam", "2"], "--max-len"),
    (["--max-len", "-3", "--sample"], "--max-len"),
    (["--threads", "0"], "--threads"),
])
def test_bad_options_are_one_line_errors(tmp_path, capsys, args, message):
    assert main(["translate", "--model", str(valid_bundle(tmp_path)), *args, "我是学生。"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err


def test_json_output_is_strict_json(tmp_path, capsys):
    model = valid_bundle(tmp_path)
    for options in ([], ["--sample"], ["--beam", "2"]):
        assert main(["translate", "--model", str(model), "--json", *options, "我是学生。"]) == 0
        line = capsys.readouterr().out
        json.loads(line, parse_constant=_no_constant)


def _no_constant(name):
    raise AssertionError(f"{name} in JSON output")
