"""``attnviz evaluate``: a bundle's scores on its own splits and on TSV files, as numbers computed
here from its translations; a bad request is one line and exit code 2."""

from __future__ import annotations

import json

import sacrebleu

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.data.augment import augment_as
from attnviz.core.data.examples import data_spec
from attnviz.core.data.sources import load_data
from attnviz.core.training.evaluation import greedy_translate
from attnviz.paths import models_dir

REVERSE = models_dir() / "reverse"


def run_json(capsys, *args) -> dict:
    assert main(["evaluate", "--model", str(REVERSE), *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["scores"]


def test_a_split_and_a_file_score_what_the_translations_give(capsys, tmp_path):
    tsv = tmp_path / "digits.tsv"
    rows = [("1 2 3", "3 2 1"), ("4 5", "5 4"), ("6 7 8 9", "9 8 7 1"), ("6 7 8 9", "9 8 7 6")]  # a source with two references
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    got = run_json(capsys, "--splits", "test", "--tsv", str(tsv))
    b = load_bundle(REVERSE)
    spec = data_spec(b.meta)
    test = augment_as(load_data(spec), spec).test
    refs: dict[str, list[str]] = {}
    for p in test:
        refs.setdefault(p.src, []).append(p.tgt)
    hyps = greedy_translate(b.model, b.src_tokenizer, b.tgt_tokenizer, list(refs))
    width = max(map(len, refs.values()))
    columns = [[r[k] if k < len(r) else None for r in refs.values()] for k in range(width)]
    assert abs(got["test"]["chrf"] - sacrebleu.corpus_chrf(hyps, columns).score) < 1e-3
    assert got["test"]["sources"] == len(refs)
    out = greedy_translate(b.model, b.src_tokenizer, b.tgt_tokenizer, ["1 2 3", "4 5", "6 7 8 9"])
    file = got["file:digits.tsv"]
    assert file["sources"] == 3 and file["exact"] == sum(o in ("3 2 1", "5 4", "9 8 7 1", "9 8 7 6") for o in out)
    assert abs(file["bleu"] - sacrebleu.corpus_bleu(out, [["3 2 1", "5 4", "9 8 7 1"], [None, None, "9 8 7 6"]]).score) < 1e-3


def test_the_table_names_each_set(capsys):
    assert main(["evaluate", "--model", str(REVERSE), "--splits", "valid,test"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("reverse: ") and [line.split()[0] for line in lines[2:]] == ["valid", "test"]


def test_a_bad_split_is_one_line_and_exit_code_2(capsys):
    assert main(["evaluate", "--model", str(REVERSE), "--splits", "tests"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["attnviz: error: --splits: unknown split 'tests' (choose from train, valid, test)"]
