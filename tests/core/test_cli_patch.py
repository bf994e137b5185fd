"""``attnviz patch`` through the command line entry point: its JSON and files carry the core's
numbers (core/analysis/patching.py), and bad arguments are one line with exit code 2."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from attnviz.cli import main
from attnviz.core.analysis.patching import patch_run, patching_map

CAT, FISH = "猫吃鱼。", "鱼吃猫。"


@pytest.fixture(scope="module")
def swap(bundle):
    return patching_map(bundle, CAT, FISH)


def run_json(capsys, *args):
    assert main(["patch", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_patch_reports_the_core_s_translations_and_log_p(bundle, capsys):
    got = run_json(capsys, "--src", FISH, "--other", CAT, "--site", "encoder:2", "--positions", "1")
    want = patch_run(bundle, FISH, CAT, "encoder:2", positions=[0])
    assert got["site"] == "encoder:2" and got["site_name"] == "encoder.layers.1.residual2" and got["positions"] == [1]
    assert got["clean"] == want.clean and got["patched"] == want.patched and got["other_translation"] == want.other_translation
    assert got["patched_ids"] == list(want.patched_ids) and got["target_ids"] == list(want.target_ids)
    assert got["target"] == "greedy output" and got["heads"] is None
    for key, values in (("log_prob_clean", want.log_prob_clean), ("log_prob_patched", want.log_prob_patched),
                        ("log_prob_other", want.log_prob_other), ("delta_log_prob", want.delta)):
        assert got[key] == values.tolist(), key
    assert got["total_delta_log_prob"] == pytest.approx(float(want.delta.sum()))


def greedy(bundle, text: str) -> str:
    """``text`` translated greedily: what a run patched with its whole encoder output decodes."""
    from attnviz.core.training.evaluation import greedy_translate

    return greedy_translate(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, [text])[0]


def test_a_head_patch_on_a_given_target_and_the_plain_text(bundle, capsys):
    got = run_json(capsys, "--src", FISH, "--other", CAT, "--site", "cross:3:2", "--tgt", "The fish eats the cat.")
    want = patch_run(bundle, FISH, CAT, "cross:3:2", target="The fish eats the cat.")
    assert got["heads"] == [2] and got["target"] == "given" and got["log_prob_patched"] == want.log_prob_patched.tolist()
    assert main(["patch", "--src", FISH, "--other", CAT, "--site", "encoder.output"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"patched encoder.output (encoder.output) from: {CAT}"
    assert out[1] == f"before: {want.clean}" and out[2] == f"after:  {greedy(bundle, CAT)}" and out[4].startswith("log P(the greedy output)")


def test_the_map_s_json_carries_the_core_s_numbers(bundle, swap, capsys):
    got = run_json(capsys, "--src", CAT, "--other", FISH, "--map")
    assert got["target_position"] == swap.target_position + 1 and got["target_pieces"] == list(swap.target_pieces)
    assert got["log_prob_clean"] == swap.log_prob_clean and got["log_prob_corrupt"] == swap.log_prob_corrupt
    n_enc, n_dec = bundle.config.n_encoder_layers, bundle.config.n_decoder_layers
    assert got["encoder"]["layers"] == ["encoder embeddings", *(f"encoder {i}" for i in range(1, n_enc + 1))]
    assert got["decoder"]["layers"] == [f"decoder {i}" for i in range(1, n_dec + 1)]
    assert got["encoder"]["log_prob"] == swap.encoder.tolist() and got["decoder"]["log_prob"] == swap.decoder.tolist()
    assert got["encoder"]["recovery"] == swap.recovery(swap.encoder).tolist()
    assert got["decoder"]["recovery"] == swap.recovery(swap.decoder).tolist()


def test_the_map_scores_a_chosen_position_and_writes_csv_and_npz_with_provenance(bundle, swap, tmp_path, capsys):
    csv_path, npz_path = tmp_path / "map.csv", tmp_path / "map.npz"
    assert main(["patch", "--src", CAT, "--other", FISH, "--map", "--out", str(csv_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    token, position = swap.target_pieces[swap.target_position], swap.target_position + 1  # where the default model's runs differ most
    assert out[0].startswith(f"recovery of log P({token}) at target position {position}")
    assert out[1].split() == ["source", "position", *swap.clean_pieces]
    text = csv_path.read_text(encoding="utf-8")
    assert f"# source: {CAT}" in text and f"# patched into: {FISH}" in text and f"# scored: {token} at target position {position}" in text
    rows = list(csv.DictReader(io.StringIO("\n".join(line for line in text.splitlines() if not line.startswith("#")))))
    n_src, n_tgt, n_layers = len(swap.clean_pieces), len(swap.target_ids), len(swap.encoder) + len(swap.decoder)
    assert n_src == 4 < n_tgt  # the source's 4 positions, then NaN in the encoder's rows
    assert len(rows) == n_layers * n_tgt  # 4 encoder + 3 decoder rows (3 layers a stack), a column a target position
    row = next(r for r in rows if (r["layer"], r["position"]) == ("decoder 2", "2"))
    assert float(row["recovery"]) == pytest.approx(swap.recovery(swap.decoder)[1, 1], abs=1e-8)
    assert next(r for r in rows if (r["layer"], r["position"]) == ("encoder 1", str(n_src + 1)))["recovery"] == "nan"
    assert main(["patch", "--src", CAT, "--other", FISH, "--map", "--position", "4", "--out", str(npz_path)]) == 0
    data = np.load(npz_path)
    other = patching_map(bundle, CAT, FISH, target_position=3)
    assert int(data["target_position"]) == 3 and "metadata" in data and not data.allow_pickle
    np.testing.assert_array_equal(data["log_prob"][4:], other.decoder)


@pytest.mark.parametrize("args, message", [
    (["--site", "encoder:{past_layer}"], "--site: no encoder layer {past_layer}: the model has {layers}"),
    (["--site", "cross:3"], "--site: a site is encoder:LAYER or decoder:LAYER"),
    (["--site", "cross:1:9"], "--site: no head 9 in cross layer 1"),
    (["--site", "encoder:1", "--positions", "0"], "--positions: positions are 1-based numbers"),
    (["--site", "encoder:1", "--positions", "{past_source}"], "encoder:1 has no position {past_source}: it has {source} source positions"),
    ([], "--site is needed (or --map for the layer x position map)"),
    (["--map", "--site", "encoder:1"], "--map patches every layer output at every position"),
    (["--site", "encoder:1", "--out", "x.csv"], "--out goes with --map"),
    (["--map", "--out", "x.txt"], "--out: x.txt must end in .csv or .npz"),
    (["--map", "--position", "0"], "--position must be at least 1"),
    (["--map", "--position", "30"], "no target position 30: the target has {target} tokens"),
    (["--site", "encoder:1", "--other", "我明天去北京。"], "patching needs the same number of source tokens"),
    (["--site", "encoder:1", "--other", ""], "the source sentence is empty"),
])
def test_bad_arguments_are_one_line_with_exit_code_2(bundle, swap, capsys, args, message):
    """The numbers in braces are the default model's, counted here: its encoder layers, the
    source's tokens and the greedy target's (EOS included)."""
    layers, source, target = bundle.config.n_encoder_layers, len(swap.clean_pieces), len(swap.target_ids)
    assert target < 30
    facts = {"layers": layers, "past_layer": layers + 1, "source": source, "past_source": source + 1, "target": target}
    args, message = [a.format(**facts) for a in args], message.format(**facts)
    assert main(["patch", "--src", CAT, "--other", FISH, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnviz: error: ") and message in err and "\n" not in err
