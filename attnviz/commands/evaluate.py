"""``attnviz evaluate``: a bundle's scores as shipped — greedy BLEU and chrF (sacrebleu) and token
accuracy on the splits of the data it was trained on (per corpus for a mix, every reference of a
source), and on any ``source<TAB>target`` files, with the sentences translated exactly."""

from __future__ import annotations

import argparse
import json
import sys

from attnviz.commands.options import add_model_argument, add_threads_argument, check_threads, threaded_bundle

HELP = "score a model bundle as shipped: BLEU/chrF and token accuracy on its data's splits and on TSV files"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_argument(p)
    p.add_argument("--splits", default="test", metavar="NAMES",
                   help="splits of the bundle's own data to score, comma-separated: train (an evenly spaced sample), valid, test; "
                        "'' for none (default test)")
    p.add_argument("--tsv", action="append", default=[], metavar="FILE", help="also score a source<TAB>target file (repeatable)")
    p.add_argument("--json", action="store_true", help="print the scores as one JSON object")
    add_threads_argument(p)


def run(args: argparse.Namespace) -> int:
    check_threads(args.threads)
    splits = _splits(args.splits)
    bundle = threaded_bundle(args)
    scores = {**_split_scores(bundle, splits), **_file_scores(bundle, args.tsv)}
    if args.json:
        json.dump({"model": bundle.name, "scores": scores}, sys.stdout, ensure_ascii=False, indent=1)
        print()
    else:
        _print_table(bundle.name, scores)
    return 0


def _splits(text: str) -> list[str]:
    from attnviz.core.data.corpora import SPLITS
    from attnviz.errors import CommandError

    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in SPLITS]
    if bad:
        raise CommandError(f"--splits: unknown split {bad[0]!r} (choose from {', '.join(SPLITS)})", 2)
    return names


def _split_scores(bundle, splits: list[str]) -> dict:
    """The final evaluation of ``splits`` of the data the bundle's meta.json names (none for a model without one)."""
    from attnviz.core.data.augment import augment_as
    from attnviz.core.data.examples import data_spec
    from attnviz.core.data.sources import load_data
    from attnviz.core.training.evaluation import final_evaluation
    from attnviz.errors import CommandError

    if not splits:
        return {}
    spec = data_spec(bundle.meta)
    if spec is None:
        raise CommandError(f"{bundle.name} names no training data: score it on files with --tsv and --splits ''", 2)
    data = augment_as(load_data(spec), spec)
    with torch_inference():
        return final_evaluation(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, data, splits=splits)


def _file_scores(bundle, files: list[str]) -> dict:
    from pathlib import Path

    from attnviz.core.data.corpora import load_tsv
    from attnviz.core.training.evaluation import file_scores

    out = {}
    for name in files:
        data = load_tsv(name)
        with torch_inference():
            out[f"file:{Path(name).name}"] = file_scores(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer,
                                                         data.train + data.valid + data.test)
    return out


def torch_inference():
    import torch

    return torch.inference_mode()


def _print_table(model: str, scores: dict) -> None:
    print(f"{model}: greedy decoding, sacrebleu defaults, every reference of a source")
    print(f"{'set':32} {'BLEU':>6} {'chrF':>6} {'token acc.':>10} {'exact':>14}")
    for key, s in scores.items():
        acc = f"{s['token_accuracy']:.1%}" if "token_accuracy" in s else "—"
        n = s["exact"] if isinstance(s["exact"], int) else round(s["exact"] * s["sources"])  # a split gives a share
        exact = f"{n} of {s['sources']}"
        print(f"{key:32} {s['bleu']:6.1f} {s['chrf']:6.1f} {acc:>10} {exact:>14}")
