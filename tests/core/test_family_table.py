"""README's table of every command on every family, run: each family's tiny model (an attnviz
bundle, and the Hugging Face ones ``transformers`` saves) through every command of the table, by
``attnviz.cli.main`` (the window: ``python -m attnviz`` in a process of its own, which quits once the
first view is drawn). A ✓ cell runs to the end (exit code 0) with the options its cell names in
backticks; any other cell is a refusal: exit code not 0 and one line on stderr, never a traceback.
The table is read from README.md, so it cannot drift from what the commands do."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.cli import main
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.core.model.sites import n_layers
from attnviz.qt.app import TIMELINE_ENV

from tiny_models import random_model, tokenizers

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import build_bart, build_bert, build_gpt2, build_t5  # noqa: E402  (needs transformers)
from tiny_marian import build_marian  # noqa: E402

pytestmark = pytest.mark.slow  # every family's tiny model through every command, and a window per family

ROOT = Path(__file__).resolve().parents[2]
HEADING = "### Every command on every family"
COMMANDS = ("window", "translate", "trace", "export", "ablate", "head-importance", "patch", "attribute", "animate", "page")
BUILDERS = {
    "attnviz bundle": lambda folder: save_bundle(folder, random_model(), *tokenizers()),
    "Marian": build_marian,
    "BART": build_bart,
    "mBART": lambda folder: build_bart(folder, mbart=True),
    "T5": build_t5,
    "mT5": lambda folder: build_t5(folder, v1_1=True, mt5=True),
    "GPT-2": build_gpt2,
    "BERT": build_bert,
}
#: (sentence, another of the same number of tokens) each family reads.
SENTENCES = {"attnviz bundle": ("我是学生。", "他是学生。"), "BERT": ("the cat [MASK]", "the dog [MASK]")}
ENGLISH = ("the cat sat", "the dog sat")


def readme_table() -> dict[str, dict[str, str]]:
    """family -> command -> cell, from the table under ``HEADING`` in README.md."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").split(HEADING, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in lines[start:end]]
    header, body = cells[0], cells[2:]  # the line after the header is its |---| rule
    assert tuple(header[1:]) == COMMANDS and all(len(row) == len(header) for row in body), header
    return {row[0]: dict(zip(COMMANDS, row[1:])) for row in body}


TABLE = readme_table()
CASES = [(family, command) for family in TABLE for command in COMMANDS]


def test_the_table_names_every_family_and_each_cell_says_something():
    assert list(TABLE) == list(BUILDERS)
    assert all(cell for row in TABLE.values() for cell in row.values())


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {family: Path(build(root / re.sub(r"\W+", "-", family))) for family, build in BUILDERS.items()}


def _options(cell: str) -> list[str]:
    """The options a ✓ cell names in backticks (``--kind decoder``), as arguments."""
    return [word for span in re.findall(r"`(--[^`]+)`", cell) for word in span.split()]


def _argv(command: str, folder: Path, family: str, out: Path) -> list[str]:
    src, other = SENTENCES.get(family, ENGLISH)
    config = load_bundle(folder).config
    kind = next(k for k in ("cross", "decoder", "encoder") if n_layers(config, k))
    model = ["--model", str(folder)]
    return {
        "translate": ["translate", *model, src],
        "trace": ["trace", *model, "--src", src, "--out", str(out / "trace.npz")],
        "export": ["export", *model, "--src", src, "--out", str(out / "export")],
        "ablate": ["ablate", *model, "--src", src, "--heads", f"{kind}:1:1"],
        "head-importance": ["head-importance", *model, "--src", src],
        "patch": ["patch", *model, "--src", src, "--other", other, "--site", "decoder:1"],
        "attribute": ["attribute", *model, "--src", src],
        "animate": ["animate", *model, "--src", src, "--out", str(out / "decoding.gif")],
        "page": ["page", *model, "--src", src, "--out", str(out / "page")],
    }[command]


def _window(folder: Path, src: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """``python -m attnviz --model FOLDER --src SRC`` until the window has drawn its first view (it then quits)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", TIMELINE_ENV: str(tmp_path / "timeline.json"), "OMP_NUM_THREADS": "1",
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "attnviz", "--model", str(folder), "--src", src], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize(("family", "command"), CASES)
def test_each_cell_is_what_the_command_does(folders, capsys, tmp_path, family, command):
    cell, folder = TABLE[family][command], folders[family]
    works = cell.startswith("✓")
    if command == "window":
        assert works, f"{family}: the window opens every family"
        done = _window(folder, SENTENCES.get(family, ENGLISH)[0], tmp_path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        moments = json.loads((tmp_path / "timeline.json").read_text())
        assert moments["loaded"] <= moments["decoded"]
        return
    argv = _argv(command, folder, family, tmp_path) + (_options(cell) if works else [])
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and err.count("\n") <= 1, err
    if works:
        assert code == 0, (family, command, err)
    else:
        assert code != 0 and err.startswith("attnviz: error: ") and not out, (family, command, code, err)
