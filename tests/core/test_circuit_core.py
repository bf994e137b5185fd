"""Edge attribution patching (core/analysis/circuit.py) against computations written here, on a
tiny random pre-norm model in float64: an edge's score is the finite difference of the metric when
only that edge's contribution moves toward the corrupted run; every edge kept recovers the whole
logit difference and none of it nothing; a node's outgoing scores sum to its attribution-patching
score; with EAP-IG the embeddings' scores sum to the metric's change. Then the graph's shape, the
models it refuses in one line, and ``attnviz circuit``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attnviz.cli import main
from attnviz.core.analysis.attribution import forced_pass
from attnviz.core.analysis.circuit import CircuitError, Node, circuit, circuit_graph, circuit_of
from attnviz.core.bundle import load_bundle
from attnviz.core.model.sites import AttentionSite
from attnviz.paths import default_model

from tiny_models import random_model

CLEAN, CORRUPT, TARGET = (5, 9, 14, 22, 7), (22, 9, 14, 5, 7), (11, 30, 17, 44, 3)


@pytest.fixture(scope="module")
def model():
    return random_model(placement="pre", seed=3).double()


@pytest.fixture(scope="module")
def result(model):
    return circuit_of(model, CLEAN, CORRUPT, TARGET)


class Nudge:
    """A test intervention: records the streams a sublayer reads and adds ``step`` to one input of
    one node, written out here: a head's own Q, K, V (from its norm of the nudged stream) or an
    FFN's norm input."""

    def __init__(self, model, down: Node, side: str, step: torch.Tensor):
        self.model, self.down, self.side, self.step = model, down, side, step
        self.seen: dict[str, torch.Tensor] = {}
        site = AttentionSite(down.attention, down.layer) if down.kind == "head" else None
        self.site, self.j = site, {"encoder": 1, "decoder": 1, "cross": 2}.get(down.attention, 0)
        if site is None:
            self.names = (f"{down.stack}.layers.{down.layer}.norm{2 if down.stack == 'encoder' else 3}.input",)
        else:
            self.names = (f"{site.layer_path}.norm{self.j}.input", "encoder.final_norm.input", *(site.name(f) for f in "qkv"))

    def __call__(self, name, t, offset=None):
        if self.site is None:
            return t + self.step
        if name.endswith(".input"):
            self.seen[name] = t
            return t
        field = name[-1]
        if self.site.kind == "cross" and (field == "q") != (self.side == "stream"):
            return t  # the head's other input
        if self.side == "memory":
            x = self.model.encoder.final_norm(self.seen["encoder.final_norm.input"] + self.step)
        else:
            x = self.model.get_submodule(f"{self.site.layer_path}.norm{self.j}")(self.seen[f"{self.site.layer_path}.norm{self.j}.input"] + self.step)
        lin = getattr(self.site.module(self.model), f"w_{field}")
        h, dk = self.down.head, t.shape[-1]
        out = t.clone()
        out[:, h] = x @ lin.weight[h * dk:(h + 1) * dk].T + lin.bias[h * dk:(h + 1) * dk]
        return out


def node_output(model, trace, node: Node) -> torch.Tensor:
    """A node's output in a run's trace, written out: Z_i W_i^O for a head  [L, d]."""
    if node.kind == "embed":
        return torch.from_numpy(np.array(trace[f"{node.stack}.embed.sum"])).double()
    if node.kind == "ffn":
        return torch.from_numpy(np.array(trace[f"{node.stack}.layers.{node.layer}.ffn.output"])).double()
    site = AttentionSite(node.attention, node.layer)
    z = torch.from_numpy(np.array(trace[site.name("z")])).double()[node.head]  # [L, dk]
    dk = z.shape[-1]
    return z @ site.module(model).w_o.weight[:, node.head * dk:(node.head + 1) * dk].T.detach()


def metric(model, source, decision, interventions=()) -> float:
    src, tgt, _ = forced_pass(model.config, [source], TARGET)
    with torch.no_grad():
        logits, _ = model.run_with_trace(src, tgt, names=(), interventions=interventions)
    row = logits[0, decision.position]
    return float(row[decision.clean_id] - row[decision.corrupt_id])


def traces(model):
    out = []
    for source in (CLEAN, CORRUPT):
        src, tgt, _ = forced_pass(model.config, [source], TARGET)
        with torch.no_grad():
            out.append(model.run_with_trace(src, tgt, names=("*.z", "*.ffn.output", "*.embed.sum"))[1])
    return out


@pytest.mark.parametrize(("up", "down", "side"), [
    (Node("head", "encoder", 0, 1, "encoder"), Node("head", "encoder", 1, 2, "encoder"), "stream"),
    (Node("head", "encoder", 0, 3, "encoder"), Node("ffn", "encoder", 1), "stream"),
    (Node("ffn", "encoder", 1), Node("head", "decoder", 1, 0, "cross"), "memory"),
    (Node("head", "decoder", 0, 2, "cross"), Node("head", "decoder", 1, 3, "cross"), "stream"),
    (Node("ffn", "decoder", 0), Node("head", "decoder", 1, 1, "decoder"), "stream"),
])
def test_an_edge_s_score_is_the_finite_difference_of_the_metric_along_that_edge_alone(model, result, up, down, side):
    g = result.graph
    u, v = g.nodes.index(up), g.nodes.index(down)
    inp = g.inputs[g.input_of(v, side)]
    e = inp.first_edge + inp.upstream.index(u)
    clean, corrupt = traces(model)
    delta = node_output(model, corrupt, up) - node_output(model, clean, up)  # [L, d]
    eps = 1e-4
    plus = metric(model, CLEAN, result.decision, [Nudge(model, down, side, eps * delta)])
    minus = metric(model, CLEAN, result.decision, [Nudge(model, down, side, -eps * delta)])
    assert abs(result.scores[e]) > 1e-4  # an edge that matters
    assert result.scores[e] == pytest.approx((plus - minus) / (2 * eps), rel=1e-4)


def test_every_edge_kept_recovers_the_clean_run_and_none_the_corrupted_one(model, result):
    assert result.metric_clean == pytest.approx(metric(model, CLEAN, result.decision), abs=1e-9)
    assert result.metric_corrupt == pytest.approx(metric(model, CORRUPT, result.decision), abs=1e-9)
    assert result.ks[0] == 0 and result.ks[-1] == result.graph.n_edges
    assert abs(result.recovered[0]) < 1e-4 and abs(result.recovered[-1] - 1) < 1e-4
    assert abs(result.metric_clean - result.metric_corrupt) > 0.1


class Probe:
    """A zero leaf added to one traced value: its gradient is dm/d(that value)."""

    def __init__(self, name):
        self.names, self.leaf = (name,), None

    def __call__(self, name, t, offset=None):
        self.leaf = torch.zeros_like(t, requires_grad=True)
        return t + self.leaf


@pytest.mark.parametrize("node", [Node("head", "encoder", 0, 2, "encoder"), Node("ffn", "encoder", 0), Node("head", "decoder", 0, 1, "cross"),
                                  Node("embed", "encoder")])
def test_a_node_s_outgoing_scores_sum_to_its_attribution_patching_score(model, result, node):
    site = AttentionSite(node.attention, node.layer) if node.kind == "head" else None
    name = site.name("z") if site else f"{node.stack}.layers.{node.layer}.ffn.output" if node.kind == "ffn" else "encoder.embed.sum"
    probe = Probe(name)
    src, tgt, _ = forced_pass(model.config, [CLEAN], TARGET)
    logits, _ = model.run_with_trace(src, tgt, names=(), interventions=[probe])
    d = result.decision
    grad = torch.autograd.grad(logits[0, d.position, d.clean_id] - logits[0, d.position, d.corrupt_id], probe.leaf)[0][0]
    clean, corrupt = (torch.from_numpy(np.array(t[name])).double() for t in traces(model))
    if site is not None:  # dm/dZ_i . delta Z_i = dm/da_i . delta a_i (a_i = Z_i W_i^O)
        grad, clean, corrupt = grad[node.head], clean[node.head], corrupt[node.head]
    atp = float(((corrupt - clean) * grad).sum())
    assert result.node_scores()[result.graph.nodes.index(node)] == pytest.approx(atp, rel=1e-6, abs=1e-9)


def test_with_integrated_gradients_the_embeddings_scores_sum_to_the_metric_s_change(model):
    ig = circuit_of(model, CLEAN, CORRUPT, TARGET, ig_steps=64)
    embed = ig.graph.nodes.index(Node("embed", "encoder"))
    change = ig.metric_corrupt - ig.metric_clean
    assert ig.node_scores()[embed] == pytest.approx(change, rel=2e-2)
    assert abs(ig.recovered[0]) < 1e-4 and abs(ig.recovered[-1] - 1) < 1e-4
    with torch.inference_mode():  # a caller's inference mode (a command, an export): the same scores
        inside = circuit_of(model, CLEAN, CORRUPT, TARGET, ig_steps=64)
    np.testing.assert_allclose(inside.scores, ig.scores, rtol=1e-9, atol=1e-12)


def test_the_graph_s_edges():
    """Heads of layer 2 read the embeddings and layer 1 (4 heads + FFN); a cross head's K/V every
    encoder node; the logits every decoder node; nothing reads the logits."""
    cfg = random_model(placement="pre").config
    g = circuit_graph(cfg)
    h = cfg.n_heads
    enc = 1 + 2 * (h + 1)
    assert len(g.nodes) == enc + 1 + 2 * (2 * h + 1) + 1
    v = g.nodes.index(Node("head", "encoder", 1, 0, "encoder"))
    assert len(g.inputs[g.input_of(v)].upstream) == 1 + h + 1
    cross = g.nodes.index(Node("head", "decoder", 0, 0, "cross"))
    assert len(g.inputs[g.input_of(cross, "memory")].upstream) == enc
    assert len(g.inputs[g.input_of(cross)].upstream) == 1 + h
    logits = g.nodes.index(Node("logits", "decoder", 2))
    assert len(g.inputs[g.input_of(logits)].upstream) == 1 + 2 * (2 * h + 1)
    assert logits not in set(g.edge_up.tolist())
    assert g.edge_label(g.inputs[g.input_of(cross, "memory")].first_edge) == "encoder:embed -> cross:1:1 (K/V)"


def test_a_post_norm_model_and_unequal_sentences_are_one_line():
    with pytest.raises(CircuitError, match="pre-norm"):
        circuit_graph(random_model(placement="post").config)
    with pytest.raises(CircuitError, match="same number of tokens"):
        circuit_of(random_model(placement="pre"), CLEAN, CORRUPT[:-1], TARGET)


def test_the_command_prints_the_top_edges_and_the_curve(capsys):
    """The command's decision and edges are the core's on the default model, computed here."""
    want = circuit(load_bundle(default_model()), "猫吃鱼。", "鱼吃猫。", ks=(7,))
    assert main(["circuit", "--src", "猫吃鱼。", "--corrupt", "鱼吃猫。", "--top", "7", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["clean_token"], got["corrupt_token"], got["position"]) == (want.clean_token, want.corrupt_token, want.decision.position + 1)
    assert got["clean_token"] != got["corrupt_token"] and got["n_edges"] == want.graph.n_edges
    assert len(got["edges"]) == 7 and [f["k"] for f in got["faithfulness"]][:3] == [0, 5, 7]
    assert [e["score"] for e in got["edges"]] == pytest.approx(want.scores[want.top(7)].tolist(), abs=1e-6)
    scores = [abs(e["score"]) for e in got["edges"]]
    assert scores == sorted(scores, reverse=True)
    assert got["faithfulness"][-1]["recovered"] == pytest.approx(1, abs=1e-4) and got["faithfulness"][-1]["k"] == got["n_edges"]
    assert main(["circuit", "--src", "猫吃鱼。", "--corrupt", "鱼吃猫。", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert f"logit({want.clean_token}) - logit({want.corrupt_token})" in out and f"k = {want.graph.n_edges}" in out


def test_the_command_refuses_unequal_sentences_in_one_line(capsys):
    assert main(["circuit", "--src", "猫吃鱼。", "--corrupt", "鱼。"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnviz: error:") and "same number of tokens" in err and "\n" not in err


@pytest.mark.slow
def test_on_gpt2_the_graph_is_the_decoder_s_and_bert_is_one_line(tmp_path, capsys):
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    from tiny_families import build_bert, build_gpt2

    gpt2, bert = build_gpt2(tmp_path / "gpt2"), build_bert(tmp_path / "bert")
    capsys.readouterr()  # what building them wrote
    assert main(["circuit", "--model", str(gpt2), "--src", "the cat sat", "--corrupt", "the dog sat", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert all(e["from"].startswith(("decoder", "logits")) for e in got["edges"])
    assert got["faithfulness"][0]["recovered"] == pytest.approx(0, abs=1e-4) and got["faithfulness"][-1]["recovered"] == pytest.approx(1, abs=1e-4)
    assert main(["circuit", "--model", str(bert), "--src", "the cat", "--corrupt", "the dog"]) == 2
    err = capsys.readouterr().err.strip()
    assert "encoder-only" in err and "\n" not in err


@pytest.mark.parametrize("kw", [{"norm": "batch"}, {"norm": "rms", "positional": "relative", "bias": False}, {"final_norm": False}])
def test_other_pre_norm_models_recover_all_and_nothing(kw):
    """BatchNorm (running statistics), RMSNorm with relative positions and no biases (T5's), no final norms."""
    m = random_model(placement="pre", seed=1, **kw).double()
    got = circuit_of(m, CLEAN, CORRUPT, TARGET, ks=(3,))
    assert abs(got.recovered[0]) < 1e-4 and abs(got.recovered[-1] - 1) < 1e-4 and 3 in got.ks
