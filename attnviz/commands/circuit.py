"""``attnviz circuit``: the circuit of one decision between two sentences, by edge attribution
patching (core/analysis/circuit.py): the top edges with their scores, and the share of the
decision the top k edges recover when every other edge carries the corrupted sentence's value."""

from __future__ import annotations

import argparse

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_model_argument

HELP = "edge attribution patching: the edges between heads, FFNs and embeddings that carry one decision, and how much of it they recover"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_argument(p)
    p.add_argument("--src", metavar="TEXT", required=True, help="the clean sentence")
    p.add_argument("--corrupt", metavar="TEXT", required=True,
                   help="the corrupted sentence (the same number of tokens), e.g. 鱼吃猫。 for 猫吃鱼。")
    p.add_argument("--tgt", metavar="TEXT", help="target both are teacher-forced on (default: the clean sentence's greedy translation)")
    p.add_argument("--position", type=int, metavar="N", help="the target position explained, 1-based (default: where the corrupted sentence loses the most log P)")
    p.add_argument("--top", type=int, default=20, metavar="K", help="print the K edges of the largest |score| (default 20); the curve also measures K")
    p.add_argument("--ig-steps", type=int, default=0, metavar="N", help="EAP-IG: average the gradients over N steps from the corrupted to the clean embeddings (default 0: plain EAP)")
    p.add_argument("--max-len", type=int, metavar="N", help="most target tokens to generate")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.analysis.circuit import CircuitError, circuit
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    for flag, value, least in (("--top", args.top, 1), ("--ig-steps", args.ig_steps, 0), ("--position", args.position, 1), ("--max-len", args.max_len, 1)):
        if value is not None and value < least:
            raise CommandError(f"{flag} must be at least {least}, not {value}", code=2)
    bundle = load_bundle(args.model or default_model())
    position = None if args.position is None else args.position - 1
    try:
        result = circuit(bundle, args.src, args.corrupt, args.tgt, position, args.ig_steps, (args.top,), args.max_len)
    except (CircuitError, DecodingError) as exc:
        raise CommandError(str(exc), code=2) from None
    print(strict_json(summary(result, args.top)) if args.json else text(result, args.top))
    return 0


def summary(result, top: int) -> dict:
    g, d = result.graph, result.decision
    return {"clean_pieces": list(result.clean_pieces), "corrupt_pieces": list(result.corrupt_pieces),
            "target_pieces": list(result.target_pieces), "position": d.position + 1, "clean_token": result.clean_token,
            "corrupt_token": result.corrupt_token, "metric_clean": result.metric_clean, "metric_corrupt": result.metric_corrupt,
            "ig_steps": result.ig_steps, "n_nodes": len(g.nodes), "n_edges": g.n_edges,
            "edges": [{"edge": g.edge_label(int(e)), "from": g.nodes[int(g.edge_up[e])].label, "to": g.nodes[g.edge_down(int(e))].label,
                       "side": g.inputs[int(g.edge_input[e])].side, "score": float(result.scores[e])} for e in result.top(top)],
            "faithfulness": [{"k": k, "metric": float(m), "recovered": None if r != r else float(r)} for k, m, r in zip(result.ks, result.metric_at_k, result.recovered)],
            "notices": list(result.notices)}


def text(result, top: int) -> str:
    d = result.decision
    method = f"EAP-IG, {result.ig_steps} steps" if result.ig_steps else "EAP"
    lines = [f"target: {' '.join(result.target_pieces)}",
             f"decision at target position {d.position + 1}: m = logit({result.clean_token}) - logit({result.corrupt_token}) = "
             f"{result.metric_clean:+.4f} clean, {result.metric_corrupt:+.4f} corrupted",
             f"top {min(top, result.graph.n_edges)} of {result.graph.n_edges} edges by |score| ({method}; negative: the edge carries the clean decision):"]
    lines += [f"  {result.scores[e]:+.4f}  {result.graph.edge_label(int(e))}" for e in result.top(top)]
    lines.append("faithfulness (edge-level patching: the top k edges keep their values, every other edge the corrupted run's):")
    lines += [f"  k = {k:<5d} m = {m:+.4f}  recovered {r:7.1%}" for k, m, r in zip(result.ks, result.metric_at_k, result.recovered)]
    return "\n".join([*lines, *result.notices])
