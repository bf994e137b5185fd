"""``attnviz heads``: what every attention head does over many sentence pairs — mean entropy, the
mass on EOS, the start token and punctuation (attention sinks), the diagonal and previous-token
scores and, where the pairs have HSK glosses, the alignment score — on held-out pairs of the
model's own data or on a ``source<TAB>target`` file; a table or one JSON object."""

from __future__ import annotations

import argparse
import json
import sys
import time

from attnviz.commands.options import add_model_argument, add_threads_argument, check_threads, threaded_bundle

HELP = "measure every head over held-out sentence pairs: entropy, attention sinks, diagonal, previous-token and alignment scores"
MAX_SENTENCES = 100_000


def add_arguments(p: argparse.ArgumentParser) -> None:
    from attnviz.core.limits import CORPUS_PAIRS  # read before torch is loaded

    add_model_argument(p)
    p.add_argument("--pairs", metavar="FILE", help="a source<TAB>target file to measure on (default: the test split of the model's data)")
    p.add_argument("--sentences", type=int, default=CORPUS_PAIRS, metavar="N",
                   help=f"how many pairs, evenly spaced over the split or the file (default {CORPUS_PAIRS})")
    p.add_argument("--kind", choices=("encoder", "decoder", "cross"), help="only this kind of attention (default: every kind the model has)")
    p.add_argument("--json", action="store_true", help="print the measures as one JSON object: per kind, per measure [layer][head]")
    add_threads_argument(p)


def run(args: argparse.Namespace) -> int:
    from attnviz.core.analysis.head_roles import HeadRolesError, file_pairs, head_roles, held_out_pairs
    from attnviz.core.data.examples import data_spec
    from attnviz.errors import CommandError

    _check(args)
    bundle = threaded_bundle(args)
    kinds = _kinds(bundle.config, args.kind)
    try:
        pairs = file_pairs(args.pairs, args.sentences) if args.pairs else held_out_pairs(data_spec(bundle.meta), args.sentences, bundle.name)
    except HeadRolesError as exc:
        raise CommandError(str(exc), 2) from None
    start = time.perf_counter()
    roles = head_roles(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, pairs)
    seconds = time.perf_counter() - start
    report = roles.to_json()
    report["kinds"] = {k: v for k, v in report["kinds"].items() if k in kinds}
    report["rows"] = {k: v for k, v in report["rows"].items() if k in kinds}
    head = {"model": bundle.name, "pairs": args.pairs or "held-out (test split)", "seconds": round(seconds, 2)}
    if args.json:
        json.dump({**head, **report}, sys.stdout, ensure_ascii=False)
        print()
    else:
        _print(head, report)
    return 0


def _check(args: argparse.Namespace) -> None:
    from attnviz.errors import CommandError

    check_threads(args.threads)
    if not 1 <= args.sentences <= MAX_SENTENCES:
        raise CommandError(f"--sentences must be from 1 to {MAX_SENTENCES:,}, not {str(args.sentences)[:40]}", 2)


def _kinds(config, kind: str | None) -> tuple[str, ...]:
    """The kinds to report; a kind the model has no layers of is a one-line error saying why."""
    from attnviz.core.model.sites import KINDS, n_layers
    from attnviz.errors import CommandError

    has = tuple(k for k in KINDS if n_layers(config, k))
    if kind is not None and kind not in has:
        why = {"encoder-only": "an encoder-only model (BERT) has no decoder and no cross-attention",
               "decoder-only": "a decoder-only model (GPT-2) has no encoder and no cross-attention"}
        raise CommandError(f"the model has no {kind} attention layers: {why.get(config.kind, 'it was built without them')}", 2)
    if not has:
        raise CommandError("the model has no attention layers: there are no heads to measure", 2)
    return (kind,) if kind else has


def _print(head: dict, report: dict) -> None:
    print(f"{head['model']}: {report['sentences']} pairs ({head['pairs']}; {report['skipped']} left out), {head['seconds']} s; "
          "means over the query rows, padding left out; heads 1-based")
    for kind, measures in report["kinds"].items():
        print(f"\n{kind} attention ({report['rows'][kind]['entropy']} rows)")
        for name, layers in measures.items():
            cells = " | ".join(f"L{i + 1}: " + " ".join("  —  " if v is None else f"{v:5.3f}" for v in row) for i, row in enumerate(layers))
            print(f"  {name:<12} {cells}")
