"""``attnviz qk``: one head's queries and keys in one 2-D space (AttentionViz): keys and queries each
centred, scaled to the same mean norm (queries by c, keys by 1/c: Q Kᵀ unchanged), projected
together by PCA; the sentence's and, with ``--held-out N``, N held-out pairs' too. A table or one
JSON object (every point: query or key, its piece, sentence, position, x, y)."""

from __future__ import annotations

import argparse

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_sentence_arguments
from attnviz.core.model.sites import KINDS

HELP = "one head's queries and keys projected together into 2-D (AttentionViz: centred, scaled to equal norm, PCA)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from attnviz.core.limits import MAX_HELD_OUT

    add_sentence_arguments(p)
    p.add_argument("--kind", choices=KINDS, default="cross", help="attention kind (default cross: target queries beside source keys)")
    p.add_argument("--layer", type=int, default=1, help="layer, 1-based (default 1)")
    p.add_argument("--head", type=int, default=1, help="head, 1-based (default 1)")
    p.add_argument("--held-out", type=int, default=0, metavar="N",
                   help=f"also N held-out pairs of the model's data, 0 to {MAX_HELD_OUT} (default 0: the sentence alone)")
    p.add_argument("--json", action="store_true", help="print the points as one JSON object")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.analysis.qk_space import qk_space

    bundle = _checked_bundle(args)
    result = _result(bundle, args)
    pairs = _pairs(bundle, args.held_out)
    space = qk_space(bundle.model, result, args.kind, args.layer - 1, args.head - 1, pairs, (bundle.src_tokenizer, bundle.tgt_tokenizer))
    if space is None:
        from attnviz.errors import CommandError

        raise CommandError("the model has no attention layers: there is no head to project", 2)
    print(strict_json({"model": bundle.name, **space.to_json()}) if args.json else text(space))
    return 0


def _checked_bundle(args: argparse.Namespace):
    """The bundle, once the options are known to fit it (one line, exit code 2, where they do not)."""
    from attnviz.core.bundle import load_bundle
    from attnviz.core.limits import MAX_HELD_OUT
    from attnviz.core.model.sites import n_layers
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    if not 0 <= args.held_out <= MAX_HELD_OUT:
        raise CommandError(f"--held-out must be from 0 to {MAX_HELD_OUT}, not {args.held_out}", 2)
    if args.layer < 1 or args.head < 1:
        raise CommandError("--layer and --head are 1-based: at least 1", 2)
    bundle = load_bundle(args.model or default_model())
    cfg = bundle.config
    count = n_layers(cfg, args.kind)
    if count == 0:
        raise CommandError(f"the model has no {args.kind} attention layers", 2)
    if args.layer > count or args.head > cfg.n_heads:
        raise CommandError(f"{args.kind} attention has layers 1 to {count} and heads 1 to {cfg.n_heads}", 2)
    if args.kind != "encoder" and cfg.kind == "encoder-only":
        raise CommandError("an encoder-only model has encoder attention only", 2)
    return bundle


def _result(bundle, args: argparse.Namespace):
    """The sentence teacher-forced on ``--tgt``, or decoded greedily to the end (an encoder-only model: read once)."""
    from attnviz.core.decoding.masked import masked_prediction_from_bundle
    from attnviz.core.decoding.session import DecodingSession
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
    from attnviz.errors import CommandError

    try:
        if bundle.config.kind == "encoder-only":
            return masked_prediction_from_bundle(bundle, args.src)
        if args.tgt is not None:
            return teacher_forced_from_bundle(bundle, args.src, args.tgt, top_k=1)
        session = DecodingSession.from_bundle(bundle, args.src)
        session.run()
        return session.frozen()
    except DecodingError as exc:
        raise CommandError(str(exc), 2) from None


def _pairs(bundle, n: int) -> list:
    from attnviz.core.analysis.head_roles import HeadRolesError, held_out_pairs
    from attnviz.core.data.examples import data_spec
    from attnviz.errors import CommandError

    if n == 0:
        return []
    try:
        return held_out_pairs(data_spec(bundle.meta), n, bundle.name)
    except HeadRolesError as exc:
        raise CommandError(str(exc), 2) from None


def text(space) -> str:
    """Each point of the sentence (held-out points summed up in a line)."""
    v = space.vectors
    lines = [f"{space.kind} layer {space.layer + 1} head {space.head + 1}: {space.n_queries} queries, {len(v.key_pieces)} keys over "
             f"{len(v.sentences)} sentence(s); queries scaled by c = {space.normalised.scale:.4f}, keys by 1/c; "
             f"PC1 {space.explained[0]:.1%}, PC2 {space.explained[1]:.1%} of the variance",
             f"  {'':5} {'#':>3}  {'piece':<14} {'PC1':>8} {'PC2':>8}"]
    for what, pieces, sent, pos, xy in (("query", v.query_pieces, v.query_sentence, v.query_position, space.query_coords),
                                        ("key", v.key_pieces, v.key_sentence, v.key_position, space.key_coords)):
        lines += [f"  {what:<5} {i + 1:>3}  {p:<14} {x:>8.3f} {y:>8.3f}" for p, s, i, (x, y) in zip(pieces, sent, pos, xy) if s == 0]
    if len(v.sentences) > 1:
        lines.append(f"  and {int((v.query_sentence > 0).sum())} queries, {int((v.key_sentence > 0).sum())} keys of "
                     f"{len(v.sentences) - 1} held-out pairs (--json lists every point)")
    return "\n".join(lines)
