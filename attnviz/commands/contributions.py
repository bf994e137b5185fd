"""``attnviz contributions``: for every output token, the share of its prediction that comes from
the source (through cross-attention) against the target prefix (through the decoder's
self-attention), per decoder layer and overall (ALTI+); a table or JSON."""

from __future__ import annotations

import argparse

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_sentence_arguments

HELP = "share of each output token's prediction from the source against the target prefix, per decoder layer (ALTI+)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_sentence_arguments(p)
    p.add_argument("--max-len", type=int, metavar="N", help="most target tokens to generate")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.analysis.contributions import ContributionsError, contributions, not_applicable
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    if args.max_len is not None and args.max_len < 1:
        raise CommandError(f"--max-len must be at least 1, not {args.max_len}", code=2)
    bundle = load_bundle(args.model or default_model())
    why = not_applicable(bundle.config)
    if why:
        raise CommandError(f"no source contributions: {why}", code=2)
    try:
        result = contributions(bundle, args.src, args.tgt, args.max_len)
    except (ContributionsError, DecodingError) as exc:
        raise CommandError(str(exc), code=2) from None
    print(strict_json(summary(result)) if args.json else text(result))
    return 0



def summary(result) -> dict:
    return {"source_pieces": list(result.source_pieces), "target": "given" if result.target_given else "greedy output",
            "target_pieces": list(result.output_pieces), "source_share": result.source_share.tolist(),
            "target_share": result.target_share.tolist(), "mean_source_share": result.mean_source_share,
            "layer_source": result.layer_source.tolist(), "rolled_source": result.rolled_source.tolist(),
            "notices": list(result.notices)}


def text(result) -> str:
    """One row per output token: the overall source share, then each layer's cross-attention alone."""
    what = "the given target" if result.target_given else "the greedy output"
    n = result.layer_source.shape[0]
    lines = [f"source share of each token of {what} (ALTI+); mean {result.mean_source_share:.3f}, the target prefix has the rest",
             f"  {'#':>3}  {'token':<14} {'source':>7} {'target':>7}  " + " ".join(f"{'L' + str(i + 1):>5}" for i in range(n))]
    for i, piece in enumerate(result.output_pieces):
        layers = " ".join(f"{v:>5.2f}" for v in result.layer_source[:, i])
        lines.append(f"  {i + 1:>3}  {piece:<14} {result.source_share[i]:>7.3f} {result.target_share[i]:>7.3f}  {layers}")
    lines.append("  L1..: each decoder layer's cross-attention alone, its share from the encoder against its residual")
    lines += [f"  notice: {n}" for n in result.notices]
    return "\n".join(lines)
