"""``attnviz attribute`` through the command line entry point: its JSON and its CSV/NPZ files hold
the core's numbers with their provenance; a bad request is one line and exit code 2."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from attnviz.cli import main
from attnviz.core.analysis.attribution import METHODS, attribute, ranks
from attnviz.paths import default_model

SHORT = "我喜欢喝茶。"


def source_pieces(bundle):
    """The open model's own pieces of ``SHORT`` (the default reads 我喜欢 as one piece)."""
    return list(bundle.src_tokenizer.pieces(bundle.src_tokenizer.encode(SHORT)))


def run_json(capsys, *args):
    assert main(["attribute", "--src", SHORT, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_holds_the_core_numbers_for_every_method(bundle, capsys):
    got = run_json(capsys, "--method", "all", "--steps", "30")
    assert got["source_pieces"] == source_pieces(bundle) and got["target"] == "greedy output"
    assert got["target_pieces"] == ["▁I", "▁like", "▁tea", ".", "EOS"] and got["position"] == 4 and got["token"] == "."
    assert got["contrast"] is None and got["attributed"] == "log P(.)" and list(got["methods"]) == list(METHODS)
    for m in METHODS:
        want = attribute(bundle, SHORT, m, n_steps=30)
        assert np.allclose(got["methods"][m]["scores"], want.scores, atol=1e-9, rtol=0)
        assert got["methods"][m]["ranks"] == ranks(want.scores).tolist() and got["methods"][m]["value"] == pytest.approx(want.value, abs=1e-9)
    ig, want = got["methods"]["ig"], attribute(bundle, SHORT, "ig", n_steps=30)
    assert ig["n_steps"] == 30 and ig["baseline"] == pytest.approx(want.baseline, abs=1e-9)
    assert ig["completeness_gap"] == pytest.approx(want.completeness_gap, abs=1e-9) and ig["relative_gap"] == pytest.approx(want.relative_gap)
    assert got["methods"]["grad"]["prefix_pieces"] == ["SOS", "▁I", "▁like", "▁tea"] and len(got["methods"]["grad"]["prefix_scores"]) == 4


def test_a_position_a_contrast_and_a_typed_target(bundle, capsys):
    got = run_json(capsys, "--tgt", "I like tea.", "--position", "3", "--contrast", "water", "--method", "grad")
    want = attribute(bundle, SHORT, "grad", "I like tea.", position=2, contrast="water")
    assert got["target"] == "given" and got["token"] == "▁tea" and got["contrast"] == "▁water"
    assert got["attributed"] == "log P(▁tea) - log P(▁water)" and list(got["methods"]) == ["grad"]
    assert np.allclose(got["methods"]["grad"]["scores"], want.scores, atol=1e-9, rtol=0)


def test_the_table_lists_each_token_with_its_score_and_rank(bundle, capsys):
    assert main(["attribute", "--src", SHORT, "--method", "occlusion"]) == 0
    lines = capsys.readouterr().out.splitlines()
    want = attribute(bundle, SHORT, "occlusion")
    assert lines[0] == "log P(.) at output position 4 of the greedy output: ▁I ▁like ▁tea . EOS"
    assert lines[1].startswith("  occlusion (leave one out): f(x) = ") and lines[2].split() == ["#", "token", "occlusion", "rank"]
    rows = [line.split() for line in lines[3:]]
    assert [r[1] for r in rows] == list(want.source_pieces)
    assert np.allclose([float(r[2]) for r in rows], want.scores, atol=1e-4) and [int(r[3]) for r in rows] == ranks(want.scores).tolist()


def metadata(lines):
    return dict(line[2:].split(": ", 1) for line in lines if line.startswith("# "))


def test_npz_holds_the_scores_and_the_metadata(bundle, tmp_path, capsys):
    out = tmp_path / "a.npz"
    assert main(["attribute", "--src", SHORT, "--method", "ig", "--steps", "25", "--out", str(out)]) == 0
    capsys.readouterr()
    want = attribute(bundle, SHORT, "ig", n_steps=25)
    with np.load(out, allow_pickle=False) as z:
        assert np.allclose(z["ig"], want.scores, atol=1e-12, rtol=0) and z["ig_rank"].tolist() == ranks(want.scores).tolist()
        assert z["source_labels"].tolist() == list(want.source_pieces) and int(z["position"]) == 4
        assert float(z["ig_completeness_gap"]) == pytest.approx(want.completeness_gap) and int(z["ig_n_steps"]) == 25
        meta = dict(line.split(": ", 1) for line in z["metadata"].tolist())
    assert meta["model"] == default_model().name and meta["source"] == SHORT
    assert meta["target"] == "▁I ▁like ▁tea . EOS (the greedy translation)" and meta["position"] == "4 (.)" and meta["attributed"] == "log P(.)"
    assert meta["integrated gradients"].startswith(f"f(x) = {want.value:.6f}; f(baseline) = {want.baseline:.6f}; 25 steps; completeness gap ")
    assert meta["view"].startswith("attribution · integrated gradients of log P(.) at position 4")


def test_csv_holds_every_method_and_the_metadata(bundle, tmp_path, capsys):
    out = tmp_path / "a.csv"
    assert main(["attribute", "--src", SHORT, "--method", "all", "--tgt", "I like tea.", "--position", "2", "--out", str(out)]) == 0
    capsys.readouterr()
    lines = out.read_text(encoding="utf-8").splitlines()
    meta = metadata(lines)
    assert meta["model"] == default_model().name and meta["target"] == "▁I ▁like ▁tea . EOS" and meta["position"] == "2 (▁like)"
    assert {"gradient x input", "integrated gradients", "occlusion (leave one out)"} <= set(meta)
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    assert [r["source"] for r in rows] == source_pieces(bundle)
    for m in METHODS:
        want = attribute(bundle, SHORT, m, "I like tea.", position=1)
        assert np.allclose([float(r[m]) for r in rows], want.scores, atol=1e-8, rtol=0)


@pytest.mark.parametrize("args, message", [
    (["--position", "0"], "--position must be at least 1, not 0"),
    (["--position", "9"], "no output position 9: the target has 5 tokens (1 to 5)"),
    (["--steps", "0"], "--steps must be at least 1, not 0"),
    (["--max-len", "-2"], "--max-len must be at least 1, not -2"),
    (["--contrast", "qqzzxx"], "'qqzzxx' is not a piece of the target vocabulary"),
    (["--contrast", "tea", "--position", "3"], "the contrast token '▁tea' is the attributed token itself"),
    (["--out", "scores.txt"], "--out: scores.txt must end in .csv or .npz"),
])
def test_bad_arguments_are_one_line_with_exit_code_2(capsys, args, message):
    assert main(["attribute", "--src", SHORT, *args]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"attnviz: error: {message}") and captured.err.count("\n") == 1 and captured.out == ""


def test_an_empty_source_a_lone_token_and_an_unknown_method_are_refused(capsys):
    assert main(["attribute", "--src", "  "]) == 2
    assert capsys.readouterr().err == "attnviz: error: the source sentence is empty\n"
    assert main(["attribute", "--src", "猫", "--method", "occlusion"]) == 2
    assert capsys.readouterr().err.startswith("attnviz: error: occlusion needs at least two source tokens")
    with pytest.raises(SystemExit) as exc:  # argparse's own refusal: usage, then the error line
        main(["attribute", "--src", "猫", "--method", "shap"])
    assert exc.value.code == 2 and "invalid choice: 'shap'" in capsys.readouterr().err
