"""``attnviz ablate``: the translation of one sentence before and after ablating attention heads,
and the change in log P of the target (the typed ``--tgt``, or the clean greedy output)."""

from __future__ import annotations

import argparse

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_model_argument

HELP = "ablate attention heads on one sentence: the translation before and after, and the change in log P of the target"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_argument(p)
    p.add_argument("--src", metavar="TEXT", required=True, help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence whose log P is measured (default: the greedy translation)")
    p.add_argument("--heads", metavar="LIST", required=True,
                   help="heads to ablate as KIND:LAYER:HEAD, 1-based as on screen, comma-separated (e.g. cross:3:2,encoder:1:1)")
    p.add_argument("--kind", default="zero", choices=("zero", "mean", "uniform"),
                   help="zero: Z_i = 0 before W^O (default); mean: Z_i = its mean over this sentence's positions; uniform: equal attention")
    p.add_argument("--max-len", type=int, metavar="N", help="most target tokens to generate")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.analysis.ablation import ablate
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.core.model.interventions import check_heads, parse_heads
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    if args.max_len is not None and args.max_len < 1:
        raise CommandError(f"--max-len must be at least 1 (the most target tokens to generate), not {args.max_len}", code=2)
    try:
        heads = parse_heads(args.heads)
    except ValueError as exc:
        raise CommandError(f"--heads: {exc}", code=2) from None
    bundle = load_bundle(args.model or default_model())
    try:
        for site, h in heads.items():
            check_heads(site, h, bundle.config)
    except ValueError as exc:
        raise CommandError(f"--heads: {exc}", code=2) from None
    try:
        report = ablate(bundle, args.src, heads, args.kind, args.tgt, args.max_len)
    except DecodingError as exc:
        raise CommandError(str(exc), code=2) from None
    print(strict_json(summary(report)) if args.json else text(report))
    return 0



def head_labels(heads) -> list[str]:
    """``kind:layer:head``, 1-based, of every ablated head."""
    return [f"{site.kind}:{site.layer + 1}:{h + 1}" for site, hs in heads.items() for h in hs]


def summary(report) -> dict:
    return {
        "source": report.source.text, "source_pieces": list(report.source.pieces), "heads": head_labels(report.heads),
        "kind": report.kind, "before": report.before, "after": report.after,
        "target": "given" if report.target_given else "greedy output", "target_ids": list(report.target_ids),
        "target_pieces": list(report.target_pieces), "log_prob_before": report.log_prob_before,
        "log_prob_after": report.log_prob_after, "delta_log_prob": report.delta_log_prob, "notices": list(report.notices),
    }


def text(report) -> str:
    what = "the given target" if report.target_given else "the greedy output"
    return (f"ablated ({report.kind}): {', '.join(head_labels(report.heads))}\n"
            f"before: {report.before}\nafter:  {report.after}\n"
            f"log P({what}): {report.log_prob_before:.4f} -> {report.log_prob_after:.4f} (change {report.delta_log_prob:+.4f} nats)")
