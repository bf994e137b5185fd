"""``attnviz neighbours``: the training pairs whose decoder state is nearest (cosine) to one step's,
each with the position it was at and the token it went on to (as in Seq2Seq-Vis). The index of
training states is built once per model and kept in the user's cache folder (``--cache-dir`` to
choose another, ``--rebuild`` to build it again); a table or one JSON object."""

from __future__ import annotations

import argparse
import json
import sys
import time

from attnviz.commands.options import add_sentence_arguments, add_threads_argument, threaded_bundle
from attnviz.core.limits import MAX_THREADS

HELP = "the training sentences whose decoder state is nearest one step's (cosine), with the token each went on to"
MAX_K = 100
MAX_INDEX_PAIRS = 100_000


def add_arguments(p: argparse.ArgumentParser) -> None:
    from attnviz.core.limits import INDEX_PAIRS, NEIGHBOURS  # read before torch is loaded

    add_sentence_arguments(p)
    p.add_argument("--position", type=int, metavar="N",
                   help="the step, 1-based as on screen: the decoder row that produced output token N (default: the last that is not EOS)")
    p.add_argument("--k", type=int, default=NEIGHBOURS, metavar="K", help=f"how many neighbours, 1 to {MAX_K} (default {NEIGHBOURS})")
    p.add_argument("--index-pairs", type=int, default=INDEX_PAIRS, metavar="N",
                   help=f"training pairs in the index, evenly spaced over the training split (default {INDEX_PAIRS:,})")
    p.add_argument("--cache-dir", metavar="DIR", help="where the index is kept (default: the user's cache folder, attnviz/neighbours)")
    p.add_argument("--rebuild", action="store_true", help="build the index again even when one is kept")
    p.add_argument("--json", action="store_true", help="print the neighbours as one JSON object")
    add_threads_argument(p)


def run(args: argparse.Namespace) -> int:
    from attnviz.core.analysis.neighbours import UNAVAILABLE, NeighboursError, neighbours_of, unavailable
    from attnviz.core.data.examples import data_spec
    from attnviz.errors import CommandError

    _check(args)
    bundle = threaded_bundle(args)
    spec = data_spec(bundle.meta)
    reason = unavailable(bundle.config, spec)
    if reason is not None:
        raise CommandError(f"{bundle.name}: {UNAVAILABLE[reason]}", 2)
    result = _decoded(bundle, args)
    row = _row(result, bundle.config.eos_id, args.position)
    start = time.perf_counter()
    index, notice = _index(bundle, spec, args)
    seconds = time.perf_counter() - start
    try:
        found = neighbours_of(index, bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, result.src_ids, result.input_ids,
                              result.output_ids, row, args.k, notice)
    except NeighboursError as exc:
        raise CommandError(str(exc), 2) from None
    if args.json:
        json.dump(_summary(bundle.name, found, seconds), sys.stdout, ensure_ascii=False)
        print()
    else:
        _print(bundle.name, found, seconds)
    return 0


def _check(args: argparse.Namespace) -> None:
    from attnviz.errors import CommandError

    for flag, value, top in (("--k", args.k, MAX_K), ("--index-pairs", args.index_pairs, MAX_INDEX_PAIRS), ("--threads", args.threads, MAX_THREADS)):
        if not 1 <= value <= top:
            raise CommandError(f"{flag} must be from 1 to {top:,}, not {str(value)[:40]}", 2)
    if args.position is not None and args.position < 1:
        raise CommandError(f"--position must be at least 1, not {args.position}", 2)


def _decoded(bundle, args: argparse.Namespace):
    """The typed target teacher-forced, or the greedy translation: a result with its fed and output tokens."""
    from attnviz.core.decoding.session import DecodingSession
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
    from attnviz.errors import CommandError

    try:
        if args.tgt is not None:
            return teacher_forced_from_bundle(bundle, args.src, args.tgt, top_k=1, names=())
        session = DecodingSession.from_bundle(bundle, args.src, capture=False)
        session.run()
        return session.frozen()
    except DecodingError as exc:
        raise CommandError(str(exc), 2) from None


def _row(result, eos_id: int, position: int | None) -> int:
    """The decoder row of output token ``position`` (1-based; default the last that is not EOS), 0-based."""
    from attnviz.errors import CommandError

    n = len(result.output_ids)
    if position is None:
        return max((i for i, y in enumerate(result.output_ids) if y != eos_id), default=max(n - 1, 0))
    if not 1 <= position <= n:
        raise CommandError(f"no output position {position}: the output has {n} token{'s' * (n != 1)} (1 to {n})", 2)
    return position - 1


def _index(bundle, spec: dict, args: argparse.Namespace):
    """The model's index, read from the cache folder or built (then kept there), and one line saying which."""
    from attnviz.core.analysis.neighbours import build_index, cache_folder, cached_index, training_pairs
    from attnviz.qt.state import model_hash

    def build():
        pairs = training_pairs(spec, args.index_pairs)
        return build_index(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, pairs, digest or "", args.index_pairs)

    digest = model_hash(bundle.path) if bundle.path is not None else None
    folder = args.cache_dir or cache_folder()
    index, notice = cached_index(folder, digest, args.index_pairs, bundle.config.d_model, build, rebuild=args.rebuild)
    print(f"attnviz: {notice}", file=sys.stderr)
    return index, notice


def _summary(model: str, found, seconds: float) -> dict:
    return {"model": model, "position": found.position + 1, "step": found.marked(), "next": found.next_piece,
            "index": {"pairs": found.pairs, "states": found.states, "seconds": round(seconds, 2), "notice": found.notice},
            "neighbours": [{"id": n.pair_id, "source": n.source, "target": n.target, "position": n.position + 1, "at": n.marked(),
                            "next": n.next_piece, "similarity": round(n.similarity, 5)} for n in found.neighbours]}


def _print(model: str, found, seconds: float) -> None:
    print(f"{model}: step {found.position + 1} of {found.marked()} (went on to {found.next_piece}); "
          f"{found.pairs:,} training pairs, {found.states:,} states ({seconds:.1f} s)")
    for rank, n in enumerate(found.neighbours, 1):
        print(f"{rank}. {n.similarity:.3f}  {n.source}  →  {n.marked()}  (position {n.position + 1}, next {n.next_piece})  [{n.pair_id}]")
