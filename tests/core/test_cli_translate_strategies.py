"""``attnviz translate`` with beam search and sampling, on the bundled default model."""

import json

from attnviz.cli import main

SENTENCES = ["我爱你。", "我喜欢吃鱼。", "医生救了他的生命。"]


def run(capsys, *args):
    assert main(["translate", *args, *SENTENCES]) == 0
    return capsys.readouterr().out.splitlines()


def test_beam_width_one_equals_greedy(capsys):
    greedy = run(capsys)
    assert len(greedy) == len(SENTENCES)
    assert run(capsys, "--beam", "1") == greedy
    assert greedy[0] == "I love you."  # an everyday sentence the default model gets right


def test_beam_json_lists_beams(capsys):
    lines = run(capsys, "--beam", "4", "--json")
    objs = [json.loads(line) for line in lines]
    assert [o["source"] for o in objs] == SENTENCES
    assert all("beam search" in o["strategy"] and len(o["beams"]) > 1 for o in objs)
    assert all(o["steps"][0]["top_k"][0]["p"] >= o["steps"][0]["top_k"][-1]["p"] for o in objs)


def test_sampling_is_reproducible_by_seed(capsys):
    a = run(capsys, "--sample", "--temperature", "1.5", "--seed", "11")
    b = run(capsys, "--sample", "--temperature", "1.5", "--seed", "11")
    assert a == b
    many = {tuple(run(capsys, "--sample", "--temperature", "2.0", "--seed", str(s))) for s in range(6)}
    assert len(many) > 1  # different seeds explore different translations


def test_conflicting_or_bad_strategy_options(capsys):
    assert main(["translate", "--beam", "2", "--sample", "x"]) != 0
    assert "choose one strategy" in capsys.readouterr().err
    assert main(["translate", "--sample", "--top-p", "0", "x"]) != 0
    assert "error" in capsys.readouterr().err
