"""``attnviz logit-attribution``: one output logit split into what each part of the decoder wrote
into the residual stream (the embedding, every attention head and bias, every FFN, the norms'
biases), through the final norm with its scale held at this pass; a table or JSON."""

from __future__ import annotations

import argparse

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_sentence_arguments, check_at_least_one

HELP = "split one output logit into the decoder's pieces: embedding, each attention head and bias, each FFN (direct logit attribution)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_sentence_arguments(p)
    p.add_argument("--position", type=int, metavar="N", help="output position, 1-based as on screen (default: the last)")
    p.add_argument("--token", metavar="T",
                   help="the token whose logit is split: a target piece (the leading ▁ may be left out), SOS/EOS/PAD/UNK, or an id "
                        "(default: the token produced at the position)")
    p.add_argument("--contrast", metavar="T", help="split logit(token) - logit(T) instead")
    p.add_argument("--max-len", type=int, metavar="N", help="most target tokens to generate")
    p.add_argument("--top", type=int, metavar="N", help="print only the N terms of largest magnitude")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.analysis.attribution import AttributionError
    from attnviz.core.analysis.logit_attribution import logit_attribution, not_applicable
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    check_at_least_one(("--position", args.position), ("--max-len", args.max_len), ("--top", args.top))
    bundle = load_bundle(args.model or default_model())
    why = not_applicable(bundle.config)
    if why:
        raise CommandError(f"no logit attribution: {why}", code=2)
    position = None if args.position is None else args.position - 1
    try:
        result = logit_attribution(bundle, args.src, args.tgt, position, args.token, args.contrast, args.max_len)
    except (AttributionError, DecodingError) as exc:
        raise CommandError(str(exc), code=2) from None
    print(strict_json(summary(result, args.top)) if args.json else text(result, args.top))
    return 0



def summary(result, top: int | None = None) -> dict:
    q = result.question
    return {"source_pieces": list(q.source.pieces), "target": "given" if q.target_given else "greedy output",
            "target_pieces": list(q.output_pieces), "position": result.position + 1, "token": result.token_piece,
            "contrast": result.contrast_piece, "attributed": result.quantity, "logit": result.logit,
            "output_bias": result.output_bias, "sum_of_terms": float(result.values.sum()), "gap": result.gap,
            "exact": result.exact, "placement": result.placement, "frozen_scales": result.frozen_scales, "notes": list(result.notes),
            "terms": [{"term": t.label, "group": t.group, "value": v} for t, v in result.ranked()[:top]],
            "notices": list(q.notices)}


def text(result, top: int | None = None) -> str:
    q = result.question
    what = "the given target" if q.target_given else "the greedy output"
    lines = [f"{result.quantity} at output position {result.position + 1} of {what}: {' '.join(q.output_pieces)}",
             f"  = {result.logit:.4f}; output bias {result.output_bias:+.4f}; terms sum to {float(result.values.sum()):.4f} "
             f"(gap {result.gap:+.1e}; {result.frozen_scales} norm scale(s) held at this pass)"]
    lines += [f"  {t.label:<16} {v:+.4f}" for t, v in result.ranked()[:top]]
    lines += [f"  note: {n}" for n in result.notes]
    lines += [f"  notice: {n}" for n in q.notices]
    return "\n".join(lines)
