"""``attnviz attribute``: how much each source token contributes to one output token's log P (gradient
x input, integrated gradients, occlusion; against a contrast token when asked), on the typed
``--tgt`` or the greedy translation; a table, JSON, or a CSV/NPZ file."""

from __future__ import annotations

import argparse
import math
import unicodedata

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_data_file_argument, add_sentence_arguments, check_at_least_one, data_file

HELP = "attribute one output token's log P to the source tokens (gradient x input, integrated gradients, occlusion)"
METHOD_CHOICES = ("grad", "ig", "occlusion", "all")
MAX_STEPS = 10_000  # integrated gradients' steps at most: 50 times the default, one row of a batched pass each


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_sentence_arguments(p)
    p.add_argument("--method", default="ig", choices=METHOD_CHOICES,
                   help="grad: gradient x input; ig: integrated gradients from the zero embedding (default); "
                        "occlusion: each source token left out; all: the three")
    p.add_argument("--position", type=int, metavar="N",
                   help="output position to attribute, 1-based as on screen (default: the last token that is not EOS)")
    p.add_argument("--contrast", metavar="TOKEN",
                   help="attribute log P(token) - log P(TOKEN): a target piece (the leading ▁ may be left out), SOS/EOS/PAD/UNK, or an id")
    p.add_argument("--steps", type=int, metavar="N",
                   help=f"integrated gradients' steps along the path, 1 to {MAX_STEPS:,} "
                        "(default: enough to keep the printed completeness gap under 1%% nearly always)")
    p.add_argument("--max-len", type=int, metavar="N", help="most target tokens to generate")
    add_data_file_argument(p, "write the scores to FILE")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model

    out = _checked(args)
    bundle = load_bundle(args.model or default_model())
    results = _attribute(bundle, args)
    if out is not None:
        _write(out, results, bundle.name, args.src)
    print(strict_json(summary(results)) if args.json else text(results))
    return 0


def _checked(args: argparse.Namespace):
    """The ``--out`` path (or ``None``), once the numbers and the file's kind are checked (exit code 2)."""
    from attnviz.errors import CommandError

    check_at_least_one(("--position", args.position), ("--steps", args.steps), ("--max-len", args.max_len))
    if args.steps is not None and args.steps > MAX_STEPS:
        raise CommandError(f"--steps must be from 1 to {MAX_STEPS:,}, not {str(args.steps)[:40]}", code=2)
    return data_file(args.out)


def _attribute(bundle, args: argparse.Namespace) -> dict:
    """Each asked method's ``Attribution`` of one question, by method name; a request the sentence
    cannot answer (no such position or contrast token, an empty source) is exit code 2."""
    from attnviz.core.analysis.attribution import DEFAULT_STEPS, METHODS, AttributionError, attribution_of, question
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.errors import CommandError

    methods = METHODS if args.method == "all" else (args.method,)
    position = None if args.position is None else args.position - 1
    try:
        q = question(bundle, args.src, args.tgt, position, args.contrast, args.max_len)
        return {m: attribution_of(bundle.model, q, m, args.steps or DEFAULT_STEPS) for m in methods}
    except (AttributionError, DecodingError) as exc:
        raise CommandError(str(exc), code=2) from None


def _write(out, results: dict, model: str, source: str) -> None:
    from attnviz.commands.trace import write_bytes
    from attnviz.core.analysis.attribution import METHOD_TITLES, figure_data
    from attnviz.core.data_files import data_to_bytes

    q = next(iter(results.values())).question
    target = " ".join(q.output_pieces) + ("" if q.target_given else " (the greedy translation)")
    meta = {"model": model, "source": source, "target": target, "position": f"{q.position + 1} ({q.token_piece})",
            "attributed": q.quantity, **{METHOD_TITLES[m]: numbers(r) for m, r in results.items()}}
    write_bytes(out, data_to_bytes(figure_data(*results.values()), out.suffix.lower().lstrip("."), meta))



def numbers(r) -> str:
    """f and, for integrated gradients, f(baseline), the steps and the completeness gap, on one line."""
    line = f"f(x) = {r.value:.6f}"
    if r.baseline is not None:
        line += (f"; f(baseline) = {r.baseline:.6f}; {r.n_steps} steps; completeness gap {r.completeness_gap:+.2e}"
                 f" ({100 * r.relative_gap:.2f}% of f(x) - f(baseline))")
    return line


def summary(results: dict) -> dict:
    q = next(iter(results.values())).question
    return {"source_pieces": list(q.source.pieces), "target": "given" if q.target_given else "greedy output",
            "target_pieces": list(q.output_pieces), "position": q.position + 1, "token": q.token_piece,
            "contrast": q.contrast_piece, "attributed": q.quantity,
            "methods": {m: _method_summary(r) for m, r in results.items()}, "notices": list(q.notices)}


def _method_summary(r) -> dict:
    from attnviz.core.analysis.attribution import ranks

    out = {"scores": r.scores.tolist(), "ranks": ranks(r.scores).tolist(), "value": r.value}
    if r.baseline is not None:
        gap = r.relative_gap
        out |= {"baseline": r.baseline, "n_steps": r.n_steps, "completeness_gap": r.completeness_gap,
                "relative_gap": gap if math.isfinite(gap) else None}
    if r.prefix_scores is not None:
        out |= {"prefix_pieces": list(r.prefix_pieces), "prefix_scores": r.prefix_scores.tolist()}
    return out


def text(results: dict) -> str:
    """What is attributed, each method's numbers, then one row per source token: its score and rank per method."""
    from attnviz.core.analysis.attribution import METHOD_TITLES, ranks

    q = next(iter(results.values())).question
    what = "the given target" if q.target_given else "the greedy output"
    lines = [f"{q.quantity} at output position {q.position + 1} of {what}: {' '.join(q.output_pieces)}"]
    lines += [f"  {METHOD_TITLES[m]}: {numbers(r)}" for m, r in results.items()]
    width = max(6, *(_width(p) for p in q.source.pieces))
    lines.append(f"  {'#':>3}  {_pad('token', width)}" + "".join(f"  {m:>10} {'rank':>4}" for m in results))
    rank = {m: ranks(r.scores) for m, r in results.items()}
    for i, piece in enumerate(q.source.pieces):
        lines.append(f"  {i + 1:>3}  {_pad(piece, width)}" + "".join(f"  {r.scores[i]:>+10.4f} {rank[m][i]:>4}" for m, r in results.items()))
    lines += [f"  notice: {n}" for n in q.notices]
    return "\n".join(lines)


def _width(s: str) -> int:
    """Columns ``s`` takes in a terminal (CJK characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _pad(s: str, width: int) -> str:
    return s + " " * (width - _width(s))
