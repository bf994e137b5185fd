"""``attnviz ablate`` through the command line entry point, against the ablation done by hand on W^O."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from attnviz.cli import main
from attnviz.core.decoding.session import translate
from attnviz.core.model.sites import AttentionSite


def hand_ablated(bundle, heads):
    """The bundle with each (site, head)'s columns of W^O zeroed: Z_head no longer reaches the output."""
    other = copy.copy(bundle)
    other.model = copy.deepcopy(bundle.model)
    dk = bundle.config.d_k
    with torch.no_grad():
        for site, h in heads:
            site.module(other.model).w_o.weight[:, h * dk : (h + 1) * dk] = 0
    return other


def log_p(model, src_ids, out_ids):
    """sum_t log softmax(logits_t)[y_t] with SOS + y[:-1] fed: written out here, not taken from the core."""
    with torch.inference_mode():
        logits = model(torch.tensor([src_ids]), torch.tensor([[model.config.bos_id, *out_ids[:-1]]]))[0].double()
    return sum(float(torch.log_softmax(logits[t], -1)[y]) for t, y in enumerate(out_ids))


def run_json(capsys, *args):
    assert main(["ablate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ablate_reports_the_translations_and_log_p_of_the_hand_ablated_model(bundle, capsys):
    got = run_json(capsys, "--src", "猫吃鱼。", "--heads", "cross:3:2,encoder:1:1")
    heads = [(AttentionSite("cross", 2), 1), (AttentionSite("encoder", 0), 0)]
    hand = hand_ablated(bundle, heads)
    src_ids = bundle.src_tokenizer.encode("猫吃鱼。")
    clean_text, steps = translate(bundle, "猫吃鱼。")
    out_ids = [s.token_id for s in steps]
    assert got["heads"] == ["cross:3:2", "encoder:1:1"] and got["target"] == "greedy output"
    assert got["before"] == clean_text and got["after"] == translate(hand, "猫吃鱼。")[0]
    assert got["target_ids"] == out_ids
    assert got["log_prob_before"] == pytest.approx(log_p(bundle.model, src_ids, out_ids), abs=1e-6)
    assert got["log_prob_after"] == pytest.approx(log_p(hand.model, src_ids, out_ids), abs=1e-4)
    assert got["delta_log_prob"] == pytest.approx(got["log_prob_after"] - got["log_prob_before"])
    assert abs(got["delta_log_prob"]) > 1e-3


def test_ablate_scores_a_given_target_and_prints_plain_text(bundle, capsys):
    got = run_json(capsys, "--src", "猫吃鱼。", "--tgt", "The cat eats fish.", "--heads", "decoder:2:4", "--kind", "uniform")
    want = [*bundle.tgt_tokenizer.encode("The cat eats fish."), bundle.config.eos_id]
    assert got["target"] == "given" and got["target_ids"] == want and got["kind"] == "uniform"
    assert got["log_prob_before"] == pytest.approx(log_p(bundle.model, bundle.src_tokenizer.encode("猫吃鱼。"), want), abs=1e-6)
    assert main(["ablate", "--src", "猫吃鱼。", "--heads", "cross:1:1", "--kind", "mean"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ablated (mean): cross:1:1" and out[1].startswith("before: ") and out[3].startswith("log P(the greedy output): ")


@pytest.mark.parametrize("args, message", [
    (["--heads", "cross:4:2"], "--heads: no cross layer 4: the model has 3"),
    (["--heads", "cross:1:9"], "--heads: no head 9 in cross layer 1"),
    (["--heads", "cross:0:1"], "--heads: a head is KIND:LAYER:HEAD"),
    (["--heads", "cross:1"], "--heads: a head is KIND:LAYER:HEAD"),
    (["--heads", "cross:1:1", "--max-len", "0"], "--max-len must be at least 1"),
])
def test_bad_arguments_are_one_line_with_exit_code_2(capsys, args, message):
    assert main(["ablate", "--src", "猫吃鱼。", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnviz: error: {message}") and err.count("\n") == 1


def test_an_empty_source_and_an_unknown_kind_are_refused(capsys):
    assert main(["ablate", "--src", "  ", "--heads", "cross:1:1"]) == 2
    assert capsys.readouterr().err == "attnviz: error: the source sentence is empty\n"
    with pytest.raises(SystemExit) as exc:
        main(["ablate", "--src", "猫", "--heads", "cross:1:1", "--kind", "half"])
    assert exc.value.code == 2 and "invalid choice: 'half'" in capsys.readouterr().err
