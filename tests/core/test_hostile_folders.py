"""Hostile model folders of every family (``tests/hostile_folders.py``, "marian" today) through the
command line: ``attnviz import-hf`` and ``attnviz translate --model`` (which opens a Marian folder
directly) refuse each in one line naming the problem, with exit status 1 and no traceback; no
payload runs, nothing blocks, and every file that was there before (the hostile folder, a bundle
``--force`` would replace) is unchanged byte for byte (issue 25, cases 5-9 as folders)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from alarms import fails_after
from hostile_bundles import PICKLE_MARKER
from hostile_folders import FAMILIES, deny_unreadable, file_cases, hostile_folders, snapshot, valid_folder

from attnviz.cli import main

pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "the cat runs"


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def corpus(request, tmp_path_factory):
    """(family, valid folder, hostile cases, a bundle imported from the valid folder)."""
    folder = tmp_path_factory.mktemp(f"hostile-{request.param}")
    valid = valid_folder(request.param, folder)
    bundle = folder / "imported"
    assert main(["import-hf", str(valid), "--out", str(bundle)]) == 0
    return request.param, valid, hostile_folders(request.param, folder / "cases"), bundle


@pytest.fixture(autouse=True)
def guarded(monkeypatch):
    """chmod 000 means unreadable also for root; a read that blocks fails after 60 s instead of hanging."""
    deny_unreadable(monkeypatch)
    with fails_after(60, "blocked on a read"):
        yield


def problem(capsys, code: int, case) -> str | None:
    """What is wrong with the output of a command just run on ``case`` (``None`` if nothing)."""
    out, err = capsys.readouterr()
    if code != 1 or out or err.count("\n") != 1 or not err.startswith("attnviz: error: ") or "Traceback" in err:
        return f"{case.name}: exit {code}, stdout {out[:80]!r}, stderr {err[:300]!r}"
    if str(case.path) not in err or not re.search(case.expect, err):
        return f"{case.name}: {err.strip()!r} does not match {case.expect!r}"
    return None


def test_the_corpus_holds_every_kind_of_case_for_every_file(corpus):
    family, _, cases, _ = corpus
    names = {case.name for case in cases}
    assert {name for name, _, _ in file_cases(FAMILIES[family])} <= names
    for kind in ("weights-extra-tensor", "weights-missing-tensor", "weights-overflow", "weights-huge-header", "weights-nan"):
        assert kind in names
    assert len(names) == len(cases) > 60


def test_every_hostile_folder_is_refused_by_import_hf_in_one_line(corpus, capsys, tmp_path):
    _, _, cases, bundle = corpus
    wrong, kept = [], snapshot(bundle)
    for case in cases:
        before, out = snapshot(case.path), tmp_path / case.name
        wrong.append(problem(capsys, main(["import-hf", str(case.path), "--out", str(out)]), case))
        wrong.append(problem(capsys, main(["import-hf", str(case.path), "--out", str(bundle), "--force"]), case))
        if snapshot(case.path) != before or out.exists() or snapshot(bundle) != kept:
            wrong.append(f"{case.name}: a file changed")
    assert not [w for w in wrong if w]
    assert sorted(p.name for p in bundle.parent.iterdir()) == ["cases", "imported", "valid"]  # no lock, no .saving-*
    assert not (bundle.parent / PICKLE_MARKER).exists()


def test_every_hostile_folder_is_refused_by_translate_in_one_line(corpus, capsys):
    _, _, cases, _ = corpus
    wrong = []
    for case in cases:
        before = snapshot(case.path)
        wrong.append(problem(capsys, main(["translate", "--model", str(case.path), SOURCE]), case))
        if snapshot(case.path) != before:
            wrong.append(f"{case.name}: a file changed")
    assert not [w for w in wrong if w]
    assert not (case.path.parent.parent / PICKLE_MARKER).exists()


def test_the_valid_folder_of_every_family_still_imports_and_translates(corpus, capsys, tmp_path):
    _, valid, _, _ = corpus
    assert main(["translate", "--model", str(valid), SOURCE]) == 0
    assert capsys.readouterr().out.strip()
    assert main(["import-hf", str(valid), "--out", str(tmp_path / "b")]) == 0


SAMPLE = ("config.json-fifo", "weights-pickle-instead", "weights-overflow")  # a FIFO, a pickle payload, weights that overflow


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("command", ["import-hf", "translate"])
def test_the_attnviz_process_exits_1_with_one_line(corpus, tmp_path, command):
    _, _, cases, _ = corpus
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for case in [c for c in cases if c.name in SAMPLE]:
        args = ["--out", str(tmp_path / "out"), str(case.path)] if command == "import-hf" else ["--model", str(case.path), SOURCE]
        res = subprocess.run([sys.executable, "-m", "attnviz", command, *args], capture_output=True, text=True, env=env, timeout=120)
        assert res.returncode == 1 and res.stdout == "", (case.name, res.stderr)
        assert res.stderr.count("\n") == 1 and re.search(case.expect, res.stderr), (case.name, res.stderr)
