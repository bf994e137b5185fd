"""``attnviz patch``: one sentence run with the value at one site taken from another sentence's run
(the translations before and after, and the change in log P of each target token), or with
``--map`` the layer x position map of where the difference between the two sentences is carried."""

from __future__ import annotations

import argparse

import numpy as np

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_data_file_argument, add_model_argument, check_at_least_one, data_file

HELP = "patch one sentence's run with another's value at a site (or --map every layer and position): the translation and log P change"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_argument(p)
    p.add_argument("--src", metavar="TEXT", required=True, help="the sentence whose run is patched (with --map: the clean sentence)")
    p.add_argument("--other", metavar="TEXT", required=True, help="the sentence the patched value comes from (with --map: the corrupt run)")
    p.add_argument("--site", metavar="SITE", help="encoder:LAYER or decoder:LAYER (a layer's output, 1-based; 0: the embeddings), "
                   "KIND:LAYER:HEAD (a head's Z_i, e.g. cross:3:2) or a trace name (e.g. encoder.output)")
    p.add_argument("--positions", metavar="LIST", help="patch only these positions of the site's stack, 1-based, comma-separated (e.g. 1,3)")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence whose log P is measured (default: the greedy translation of --src)")
    p.add_argument("--max-len", type=int, metavar="N", help="most target tokens to generate")
    p.add_argument("--map", action="store_true", help="the layer x position map: each layer output of --src patched into --other at one "
                   "position at a time, scored on one target token")
    p.add_argument("--position", type=int, metavar="N", help="with --map: the target token scored, 1-based (default: the one --other loses most)")
    add_data_file_argument(p, "with --map: write the map to FILE")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    out = _check(args)
    bundle = load_bundle(args.model or default_model())
    try:
        if args.map:
            return _run_map(args, bundle, out)
        return _run_patch(args, bundle)
    except (DecodingError, ValueError) as exc:
        raise CommandError(str(exc), code=2) from None


def _check(args: argparse.Namespace):
    """The arguments that need no model, checked; the ``--out`` path (or None)."""
    from attnviz.errors import CommandError

    check_at_least_one(("--max-len", args.max_len), ("--position", args.position))
    if args.map and (args.site or args.positions):
        raise CommandError("--map patches every layer output at every position: leave out --site and --positions", code=2)
    if not args.map and args.site is None:
        raise CommandError("--site is needed (or --map for the layer x position map)", code=2)
    if not args.map and (args.out or args.position is not None):
        raise CommandError(f"{'--out' if args.out else '--position'} goes with --map", code=2)
    return data_file(args.out)


def _run_patch(args: argparse.Namespace, bundle) -> int:
    from attnviz.core.analysis.patching import parse_positions, parse_site, patch_run
    from attnviz.errors import CommandError

    try:
        site = parse_site(args.site, bundle.config)
    except ValueError as exc:
        raise CommandError(f"--site: {exc}", code=2) from None
    try:
        positions = None if args.positions is None else parse_positions(args.positions)
    except ValueError as exc:
        raise CommandError(f"--positions: {exc}", code=2) from None
    report = patch_run(bundle, args.src, args.other, site, positions=positions, target=args.tgt, max_len=args.max_len)
    print(strict_json(summary(report)) if args.json else text(report))
    return 0


def _run_map(args: argparse.Namespace, bundle, out) -> int:
    from attnviz.core.analysis.patching import patching_map

    position = None if args.position is None else args.position - 1
    result = patching_map(bundle, args.src, args.other, position, args.tgt, args.max_len)
    if out is not None:
        _write(out, result, bundle.name, args.src, args.other)
    print(strict_json(map_summary(result)) if args.json else map_text(result))
    return 0


def _write(out, result, model: str, clean: str, corrupt: str) -> None:
    from attnviz.commands.trace import write_bytes
    from attnviz.core.analysis.patching import figure_data
    from attnviz.core.data_files import data_to_bytes

    target = " ".join(result.target_pieces) + ("" if result.target_given else " (the greedy translation)")
    meta = {"model": model, "source": clean, "patched into": corrupt, "target": target,
            "scored": f"{result.target_pieces[result.target_position]} at target position {result.target_position + 1}",
            "source pieces": " ".join(result.clean_pieces), "log P clean": f"{result.log_prob_clean:.6f} nats",
            "log P corrupt": f"{result.log_prob_corrupt:.6f} nats"}
    write_bytes(out, data_to_bytes(figure_data(result), out.suffix.lower().lstrip("."), meta))



def _numbers(a) -> list:
    """Floats (nested lists), NaN as null."""
    return [None if np.isnan(x) else float(x) for x in a] if np.ndim(a) == 1 else [_numbers(row) for row in a]


def summary(report) -> dict:
    return {
        "source": report.source.text, "source_pieces": list(report.source.pieces), "other": report.other.text,
        "other_pieces": list(report.other.pieces), "site": report.site.label or report.site.name, "site_name": report.site.name,
        "heads": None if report.heads is None else [h + 1 for h in report.heads],
        "positions": None if report.positions is None else [p + 1 for p in report.positions],
        "clean": report.clean, "patched": report.patched, "patched_ids": list(report.patched_ids), "other_translation": report.other_translation,
        "target": "given" if report.target_given else "greedy output", "target_ids": list(report.target_ids),
        "target_pieces": list(report.target_pieces), "log_prob_clean": _numbers(report.log_prob_clean),
        "log_prob_patched": _numbers(report.log_prob_patched), "log_prob_other": _numbers(report.log_prob_other),
        "delta_log_prob": _numbers(report.delta), "total_delta_log_prob": float(report.delta.sum()), "notices": list(report.notices),
    }


def text(report) -> str:
    what = "the given target" if report.target_given else "the greedy output"
    where = "" if report.positions is None else f" at position(s) {', '.join(str(p + 1) for p in report.positions)}"
    lines = [f"patched {report.site.label or report.site.name} ({report.site.name}){where} from: {report.other.text}",
             f"before: {report.clean}", f"after:  {report.patched}", f"other:  {report.other_translation}",
             f"log P({what}) per token, before -> after (change):"]
    lines += [f"  {p:<12} {a:9.4f} -> {b:9.4f} ({d:+.4f})"
              for p, a, b, d in zip(report.target_pieces, report.log_prob_clean, report.log_prob_patched, report.delta)]
    lines += [f"  total change {report.delta.sum():+.4f} nats", *report.notices]
    return "\n".join(lines)


def map_summary(result) -> dict:
    return {
        "clean_pieces": list(result.clean_pieces), "corrupt_pieces": list(result.corrupt_pieces),
        "clean_translation": result.clean_translation, "corrupt_translation": result.corrupt_translation,
        "target": "given" if result.target_given else "greedy output", "target_ids": list(result.target_ids),
        "target_pieces": list(result.target_pieces), "target_position": result.target_position + 1,
        "log_prob_clean": result.log_prob_clean, "log_prob_corrupt": result.log_prob_corrupt,
        "encoder": {"layers": list(result.layer_labels()[: len(result.encoder)]), "log_prob": _numbers(result.encoder),
                    "recovery": _numbers(result.recovery(result.encoder))},
        "decoder": {"layers": list(result.layer_labels()[len(result.encoder):]), "pieces": list(result.decoder_pieces),
                    "log_prob": _numbers(result.decoder), "recovery": _numbers(result.recovery(result.decoder))},
        "notices": list(result.notices),
    }


def map_text(result) -> str:
    piece = result.target_pieces[result.target_position]
    lines = [f"recovery of log P({piece}) at target position {result.target_position + 1} "
             f"(clean {result.log_prob_clean:.4f}, corrupt {result.log_prob_corrupt:.4f} nats): 0 = no effect, 1 = clean"]
    labels = result.layer_labels()
    target = "prompt + target" if result.decoder_only else "target"  # a decoder-only model's decoder reads its prompt too
    for name, values, pieces in (("source", result.encoder, result.clean_pieces), (target, result.decoder, result.decoder_pieces)):
        if not len(values):  # a decoder-only model has no encoder rows
            continue
        rows = labels[: len(result.encoder)] if name == "source" else labels[len(result.encoder):]
        lines.append(f"  {name + ' position':<20}" + "".join(f"{p[:8]:>9}" for p in pieces))
        lines += [f"  {label:<20}" + "".join(f"{v:9.2f}" for v in result.recovery(row)) for label, row in zip(rows, values)]
    return "\n".join([*lines, *result.notices])
