"""``attnviz trace``: decode one sentence headless and write every captured array to an ``.npz``.

Layout of the file (``numpy.load(path)``; no pickled objects):

* every trace name under its documented name (``attnviz trace --names`` lists them with their
  shapes). Encoder names come from the encoder pass. Decoder names hold the whole decoding:
  the per-step rows stacked along the query axis (``DecodingSession.accumulated``), so they have
  the shapes a full pass over the fed tokens gives, e.g. ``decoder.layers.1.cross_attn.weights``
  ``[head, steps, src]``. With ``--tgt`` they come from the one teacher-forced pass.
* ``tokens.src_ids``/``tokens.src_pieces`` ``[src]``; ``tokens.input_ids``/``tokens.input_pieces``
  ``[steps]`` (what the decoder was fed: SOS + ..., the rows of every decoder matrix);
  ``tokens.output_ids``/``tokens.output_pieces`` ``[steps]`` (what each row produced; with
  ``--tgt``: the targets y + EOS).
* ``steps.*`` per row: ``token_ids``, ``prob``, ``entropy`` ``[steps]``, ``forced`` (bool),
  ``topk_ids``/``topk_probs``/``topk_pieces`` ``[steps, k]``; with ``--tgt`` also
  ``predicted_ids``, ``match``, ``target_prob``, ``loss``.
* ``beams.*`` (decoding only): the final beams, best first: ``token_ids`` ``[beam, len]`` padded
  with -1, ``scores``, ``log_probs``, ``finished``.
* An encoder-only model (BERT) does not decode: ``--src`` gets its one masked-token pass (type
  ``[MASK]`` where a token is hidden), with the encoder's and the masked-token head's names
  (``generator.logits`` ``[src, vocab]``...), ``tokens.src_*``, empty ``tokens.input_*``/``output_*``
  and ``steps.*``, and in the JSON summary the top-k at each ``[MASK]`` (``masked``).
* ``analysis.*``: ``analysis.{encoder,decoder,cross}.{entropy,distance,max_weight}`` ``[layer, head]``;
  ``analysis.cross.alignment`` ``[layer, head, steps]`` and ``analysis.cross.alignment_mean``
  ``[layer, steps]`` (argmax source position); ``analysis.encoder.rollout`` ``[src, src]``;
  ``analysis.cross.rollout`` ``[steps, src]`` (``decoder_rollout`` source part);
  ``analysis.positional.{encoder,decoder}.{similarity,ratio}``; ``analysis.norm.<site>.<field>``
  (``NormStats`` fields) and ``analysis.norm.<site>.compare.<field>`` (``NormComparison`` fields).

The file is written to a temporary file next to ``--out`` and renamed into place, so a failed
run never leaves a partial file.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.commands.json_output import strict_json
from attnviz.commands.options import add_model_argument

HELP = "decode one sentence headless and write every captured array (.npz) with tokens and analyses"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_argument(p)
    p.add_argument("--src", metavar="TEXT", help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence: teacher-forced mode (SOS + target in, target + EOS out)")
    p.add_argument("--strategy", default="greedy", metavar="S", help="greedy (default), beam:K or sample:T")
    p.add_argument("--seed", type=int, default=0, help="random seed for sampling (default 0)")
    p.add_argument("--max-len", type=int, metavar="N", help="most target tokens to generate")
    p.add_argument("--top-k", type=int, default=10, metavar="K", help="entries in each step's top-k list (default 10)")
    p.add_argument("--out", metavar="FILE.npz", help="where to write the arrays")
    p.add_argument("--json", action="store_true", help="print a JSON summary (tokens, top-k per step, head statistics)")
    p.add_argument("--names", action="store_true", help="print every trace name with its shape and meaning, then exit")
    p.add_argument("--hsk-alignment", action="store_true",
                   help="instead of one sentence: score cross-attention alignment against HSK gloss pairs (JSON on stdout)")
    p.add_argument("--split", default="test", choices=("train", "valid", "test"), help="with --hsk-alignment: the HSK split (default test)")
    p.add_argument("--limit", type=int, metavar="N", help="with --hsk-alignment: use only the first N records of the split")
    p.add_argument("--write-meta", action="store_true", help="with --hsk-alignment: also keep the scores in the bundle's meta.json")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.core.model.trace import schema_table
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    if args.hsk_alignment:
        return hsk_alignment(args)
    if args.write_meta or args.limit is not None:
        raise CommandError("--write-meta and --limit go with --hsk-alignment", code=2)
    if not args.names and args.src is None:
        raise CommandError("--src is required: the sentence to decode (or --names to list the trace names)", code=2)
    if not args.names and not args.out and not args.json:
        raise CommandError("nothing to do: give --out FILE.npz and/or --json", code=2)
    _check_options(args)
    out = Path(args.out) if args.out else None
    if out is not None:
        _check_writable(out)
    bundle = load_bundle(args.model or default_model())
    if args.names:
        print(schema_table(bundle.config))
        return 0
    import torch

    with torch.inference_mode():
        try:
            arrays, summary = collect(bundle, args)
        except DecodingError as exc:
            raise CommandError(str(exc)) from None
    for note in summary["notices"]:
        print(f"attnviz: note: {note}", file=sys.stderr)
    if out is not None:
        summary["out"] = str(out)
    text = strict_json(summary, indent=1) if args.json else None  # before writing: a broken model leaves no file
    if out is not None:
        write_npz(out, arrays)
    if text is not None:
        print(text)
    else:
        print(f"{summary['translation']}\nwrote {len(arrays)} arrays to {out}")
    return 0


def _check_options(args: argparse.Namespace) -> None:
    """``CommandError`` for an option that cannot be honoured, before the model is loaded."""
    from attnviz.core.decoding.strategies import SEED_LIMIT, DecodingError, parse_strategy
    from attnviz.errors import CommandError

    if not 0 <= args.seed < SEED_LIMIT:
        raise CommandError(f"--seed must be from 0 to 2**63 - 1, not {str(args.seed)[:40]}", code=2)
    if args.top_k < 1:
        raise CommandError("--top-k must be at least 1", code=2)
    if args.max_len is not None and args.max_len < 1:
        raise CommandError(f"--max-len must be at least 1 (the most target tokens to generate), not {args.max_len}", code=2)
    try:
        parse_strategy(args.strategy, seed=args.seed)
    except DecodingError as exc:
        raise CommandError(str(exc)) from None




def hsk_alignment(args: argparse.Namespace) -> int:
    """``--hsk-alignment``: ``analysis.evaluate_hsk_alignment`` on an HSK split, as JSON."""
    import time

    import torch

    from attnviz.core.analysis.alignment import evaluate_hsk_alignment, hsk_records
    from attnviz.core.bundle import META, META_LIMIT, load_bundle, read_json
    from attnviz.core.folder_lock import output_lock
    from attnviz.core.model.hf_import import is_hf_folder
    from attnviz.errors import CommandError
    from attnviz.paths import default_model

    if args.limit is not None and args.limit < 1:
        raise CommandError("--limit must be at least 1", code=2)
    path = Path(args.model) if args.model else default_model()
    if args.write_meta and is_hf_folder(path):
        raise CommandError(f"--write-meta: {path} is a Hugging Face folder, not an attnviz bundle; it has no meta.json to write "
                           "(convert it with attnviz import-hf first)", code=2)
    bundle = load_bundle(path)
    records = hsk_records(args.split)[: args.limit]
    with torch.inference_mode():
        report = evaluate_hsk_alignment(bundle, records)
    report = {
        "split": args.split,
        "records": len(records),
        "method": "argmax of cross-attention vs. gloss-derived reference pairs (attnviz.core.analysis.alignment.evaluate_hsk_alignment)",
        "computed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **report,
    }
    if args.write_meta:
        with output_lock(bundle.path, "trace"):  # not while a run writes the same bundle
            meta = read_json(bundle.path / META, META_LIMIT)
            meta["hsk_alignment"] = report
            write_bytes(bundle.path / META, json.dumps(meta, indent=1, ensure_ascii=False, allow_nan=False).encode())
    print(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically (temporary file in the same folder, then a rename)."""
    from attnviz.core.atomic import atomic_write_bytes
    from attnviz.errors import CommandError

    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None


def _check_writable(out: Path) -> None:
    from attnviz.errors import CommandError

    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise CommandError(f"cannot write {out}: it is a folder")
    if not parent.is_dir():
        raise CommandError(f"cannot write {out}: no folder {parent}")
    if not os.access(parent, os.W_OK):
        raise CommandError(f"cannot write {out}: the folder is not writable")


def write_npz(out: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write atomically: a temporary file in the same folder, then a rename."""
    from attnviz.errors import CommandError

    buf = io.BytesIO()
    try:
        np.savez_compressed(buf, **arrays)
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
    write_bytes(out, buf.getvalue())


def _strs(items) -> np.ndarray:
    return np.array(list(items), dtype=str) if len(items) else np.zeros(0, dtype="<U1")


def collect(bundle, args: argparse.Namespace) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Decode (or teacher-force) and gather the arrays and the JSON summary."""
    summary: dict[str, Any] = {"model": bundle.name, "config": bundle.config.describe()}
    if bundle.config.kind == "encoder-only":
        result, arrays, steps = _masked(bundle, args, summary)
    elif args.tgt is not None:
        result, arrays, steps = _teacher_forced(bundle, args, summary)
    else:
        result, arrays, steps = _decoded(bundle, args, summary)
    arrays.update(_result_arrays(result))
    summary.update(
        src_pieces=list(result.src_pieces),
        input_pieces=list(result.input_pieces),
        output_pieces=list(result.output_pieces),
        notices=list(result.notices),
        steps=steps,
        heads=analyses(arrays, result),
    )
    return arrays, summary


def _masked(bundle, args: argparse.Namespace, summary: dict[str, Any]):
    """An encoder-only model's one masked-token pass (it does not decode: ``--tgt``, ``--strategy`` and
    ``--max-len`` are refused); the top-k at each ``[MASK]`` goes to ``summary``."""
    from attnviz.core.decoding.masked import masked_prediction_from_bundle
    from attnviz.errors import CommandError

    asked = [flag for flag, given in (("--tgt", args.tgt is not None), ("--strategy", args.strategy.strip().lower() != "greedy"),
                                      ("--max-len", args.max_len is not None)) if given]
    if asked:
        raise CommandError(f"{asked[0]}: an encoder-only model ({bundle.name}) does not decode; trace shows its one masked-token pass "
                           "over --src (type [MASK] where a token is hidden)", code=2)
    result = masked_prediction_from_bundle(bundle, args.src, top_k=args.top_k)
    summary.update(mode="masked", source=result.source.text, translation=result.filled(),
                   masked=[{"index": p.index, "entropy": round(p.entropy, 6), "topk": _topk_json(p.topk)} for p in result.positions])
    return result, {}, []


def _teacher_forced(bundle, args: argparse.Namespace, summary: dict[str, Any]):
    """The teacher-forced pass, its own ``steps.*`` arrays and JSON step rows; fills ``summary``."""
    from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle

    tf = teacher_forced_from_bundle(bundle, args.src, args.tgt, top_k=args.top_k)
    rows = tf.steps
    arrays = {
        "steps.predicted_ids": np.array([p.predicted_id for p in rows], dtype=np.int64),
        "steps.match": np.array([p.match for p in rows], dtype=bool),
        "steps.prob": np.array([p.prob for p in rows], dtype=np.float64),
        "steps.loss": np.array([p.loss for p in rows], dtype=np.float64),
    }
    summary.update(
        mode="teacher-forced",
        source=tf.source.text,
        target=tf.target,
        loss=round(tf.loss, 6),
        accuracy=round(tf.accuracy, 6),
        translation=bundle.tgt_tokenizer.decode(tf.predicted_ids),
    )
    steps = [
        {
            "index": p.index,
            "input": p.input_piece,
            "target": p.piece,
            "predicted": p.predicted_piece,
            "match": p.match,
            "target_prob": round(p.prob, 6),
            "loss": round(p.loss, 6),
            "entropy": round(p.entropy, 6),
            "topk": _topk_json(p.topk),
        }
        for p in rows
    ]
    return tf, arrays, steps


def _decoded(bundle, args: argparse.Namespace, summary: dict[str, Any]):
    """The decoding session run to the end, its ``beams.*`` arrays and JSON step rows; fills ``summary``."""
    from attnviz.core.decoding.session import DecodingSession
    from attnviz.core.decoding.strategies import parse_strategy

    strategy = parse_strategy(args.strategy, seed=args.seed)
    session = DecodingSession.from_bundle(bundle, args.src, strategy=strategy, max_len=args.max_len, top_k=args.top_k)
    session.run()
    beams = session.beams()
    summary.update(mode="decode", strategy=strategy.describe(), source=session.source.text, translation=session.translation())
    summary["beams"] = [{"pieces": list(b.pieces), "score": round(b.score, 6), "finished": b.finished} for b in beams]
    steps = [
        {
            "index": s.index,
            "piece": s.piece,
            "id": s.token_id,
            "prob": round(s.prob, 6),
            "entropy": round(s.entropy, 6),
            "forced": s.forced,
            "topk": _topk_json(s.topk),
        }
        for s in session.steps
    ]
    return session, _beam_arrays(beams), steps


def _topk_json(topk) -> list:
    return [[piece, i, round(prob, 6)] for piece, i, prob in topk]


def _beam_arrays(beams) -> dict[str, np.ndarray]:
    """The final beams, best first; ``beams.token_ids`` ``[beam, len]`` padded with -1."""
    width = max(len(b.token_ids) for b in beams)
    ids = np.full((len(beams), width), -1, dtype=np.int64)
    for i, b in enumerate(beams):
        ids[i, : len(b.token_ids)] = b.token_ids
    return {
        "beams.token_ids": ids,
        "beams.scores": np.array([b.score for b in beams], dtype=np.float64),
        "beams.log_probs": np.array([b.log_prob for b in beams], dtype=np.float64),
        "beams.finished": np.array([b.finished for b in beams], dtype=bool),
    }


def _result_arrays(result) -> dict[str, np.ndarray]:
    """What every ``DecodingResult`` gives: the trace names over all rows, ``tokens.*`` and ``steps.*``."""
    from attnviz.core.model.trace import trace_names

    names = trace_names(result.config, decoder=bool(result.steps))
    arrays = {name: result.accumulated(name) for name in names}
    rows = result.steps
    k = max((len(r.topk) for r in rows), default=0)
    arrays.update({
        "tokens.src_ids": np.array(result.src_ids, dtype=np.int64),
        "tokens.src_pieces": _strs(result.src_pieces),
        "tokens.input_ids": np.array(result.input_ids, dtype=np.int64),
        "tokens.input_pieces": _strs(result.input_pieces),
        "tokens.output_ids": np.array(result.output_ids, dtype=np.int64),
        "tokens.output_pieces": _strs(result.output_pieces),
        "steps.token_ids": np.array(result.output_ids, dtype=np.int64),
        "steps.prob": np.array([r.prob for r in rows], dtype=np.float64),
        "steps.forced": np.array([r.forced for r in rows], dtype=bool),
        "steps.entropy": np.array([r.entropy for r in rows], dtype=np.float64),
        "steps.topk_ids": np.array([[i for _, i, _ in r.topk] for r in rows], dtype=np.int64).reshape(len(rows), k),
        "steps.topk_probs": np.array([[p for _, _, p in r.topk] for r in rows], dtype=np.float64).reshape(len(rows), k),
        "steps.topk_pieces": _strs([[piece for piece, _, _ in r.topk] for r in rows]).reshape(len(rows), k),
    })
    return arrays


def analyses(arrays: dict[str, np.ndarray], result) -> dict[str, Any]:
    """Add ``analysis.*`` arrays; returns the head statistics for the JSON summary."""
    from attnviz.core.analysis import stats as an

    att, heads = _head_statistics(arrays, result)
    if "cross" in att:
        arrays["analysis.cross.alignment"] = an.alignment(att["cross"])
        arrays["analysis.cross.alignment_mean"] = an.alignment(att["cross"].mean(1))
    _rollouts(arrays, att)
    for stack in ("encoder", "decoder"):
        tokens, pos = arrays.get(f"{stack}.embed.tokens"), arrays.get(f"{stack}.embed.positional")
        if tokens is None or pos is None:
            continue
        arrays[f"analysis.positional.{stack}.similarity"] = an.positional_similarity(pos)
        arrays[f"analysis.positional.{stack}.ratio"] = an.embedding_positional_ratio(tokens, pos)["ratio"]
    _norm_analyses(arrays, result.config)
    return heads


def _head_statistics(arrays: dict[str, np.ndarray], result) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``analysis.<kind>.<statistic>`` ``[layer, head]`` for every attention kind the result has rows of;
    returns the attention ``[layer, head, query, key]`` per kind and the statistics for the JSON summary."""
    from attnviz.core.analysis import stats as an
    from attnviz.core.model.sites import KINDS

    att: dict[str, np.ndarray] = {}
    heads: dict[str, Any] = {}
    for kind in KINDS:
        if not result.n_layers(kind) or (kind != "encoder" and not result.steps):
            continue
        att[kind] = result.all_attention(kind)  # [layer, head, query, key]
        heads[kind] = {}
        for key, value in an.head_statistics(att[kind]).items():
            arrays[f"analysis.{kind}.{key}"] = value
            heads[kind][key] = np.round(value, 6).tolist()
    return att, heads


def _rollouts(arrays: dict[str, np.ndarray], att: dict[str, np.ndarray]) -> None:
    from attnviz.core.analysis.rollout import decoder_rollout, rollout

    enc_roll = None
    if "encoder" in att:
        enc_roll = rollout(att["encoder"])
        arrays["analysis.encoder.rollout"] = enc_roll
    if "cross" in att:
        arrays["analysis.cross.rollout"] = decoder_rollout(att["decoder"], att["cross"], enc_roll)["source"]


def _norm_analyses(arrays: dict[str, np.ndarray], cfg) -> None:
    """``analysis.norm.<site>.<field>`` (``NormStats``) and ``analysis.norm.<site>.compare.<field>``."""
    from attnviz.core.analysis import stats as an

    for site in an.norm_sites(arrays):
        stats = an.norm_statistics(arrays, site)
        for f in dataclasses.fields(stats):
            v = getattr(stats, f.name)
            if isinstance(v, np.ndarray):
                arrays[f"analysis.norm.{site}.{f.name}"] = v
        comp = an.compare_norms(arrays[f"{site}.input"], eps=cfg.norm_eps)
        for f in dataclasses.fields(comp):
            arrays[f"analysis.norm.{site}.compare.{f.name}"] = getattr(comp, f.name)
