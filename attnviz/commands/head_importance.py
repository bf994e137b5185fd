"""``attnviz head-importance``: every attention head of every kind ablated alone on one sentence,
and how much the target's log-probability changes; a table, JSON, or a CSV/NPZ file."""

from __future__ import annotations

import argparse

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_data_file_argument, add_model_argument, check_at_least_one, data_file

HELP = "ablate each attention head alone on one sentence: the change in log P of the target per head, largest first"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_argument(p)
    p.add_argument("--src", metavar="TEXT", required=True, help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence whose log P is measured (default: the greedy translation)")
    p.add_argument("--kind", default="zero", choices=("zero", "mean", "uniform"),
                   help="zero: Z_i = 0 before W^O (default); mean: Z_i = its mean over this sentence's positions; uniform: equal attention")
    p.add_argument("--max-len", type=int, metavar="N", help="most target tokens to generate")
    p.add_argument("--top", type=int, metavar="N", help="print only the N heads with the largest change")
    add_data_file_argument(p, "write every head's change to FILE")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.analysis.head_importance import head_importance
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    check_at_least_one(("--max-len", args.max_len), ("--top", args.top))
    out = data_file(args.out)
    bundle = load_bundle(args.model or default_model())
    try:
        report = head_importance(bundle, args.src, args.tgt, args.kind, max_len=args.max_len)
    except DecodingError as exc:
        raise CommandError(str(exc), code=2) from None
    if out is not None:
        _write(out, report, bundle.name, args.src)
    print(strict_json(summary(report, args.top)) if args.json else text(report, args.top))
    return 0


def _write(out, report, model: str, source: str) -> None:
    from attnviz.commands.trace import write_bytes
    from attnviz.core.analysis.head_importance import figure_data
    from attnviz.core.data_files import data_to_bytes

    target = " ".join(report.target_pieces) + ("" if report.target_given else " (the greedy translation)")
    meta = {"model": model, "source": source, "target": target, "ablation": report.kind,
            "log P(target), clean": f"{report.log_prob:.6f} nats"}
    write_bytes(out, data_to_bytes(figure_data(report), out.suffix.lower().lstrip("."), meta))



def summary(report, top: int | None = None) -> dict:
    from attnviz.core.analysis.head_importance import head_label

    ranked = report.ranked()[:top]
    return {"source_pieces": list(report.source_pieces), "target": "given" if report.target_given else "greedy output",
            "target_pieces": list(report.target_pieces), "kind": report.kind, "log_prob": report.log_prob,
            "heads": [{"head": head_label(k, layer, h), "delta_log_prob": d} for k, layer, h, d in ranked],
            "notices": list(report.notices)}


def text(report, top: int | None = None) -> str:
    from attnviz.core.analysis.head_importance import head_label

    what = "the given target" if report.target_given else "the greedy output"
    lines = [f"log P({what}) = {report.log_prob:.4f} nats; change when one head is ablated ({report.kind}), largest first:"]
    lines += [f"  {head_label(k, layer, h):<14} {d:+.4f}" for k, layer, h, d in report.ranked()[:top]]
    return "\n".join(lines)
