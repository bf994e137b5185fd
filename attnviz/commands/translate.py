"""``attnviz translate``: greedy translations from a model bundle, one line per input, in order."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "translate sentences with a model bundle (greedy decoding); reads stdin lines when no TEXT is given"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="*", metavar="TEXT", help="sentences to translate (default: one per line from stdin)")
    p.add_argument("--model", metavar="DIR", help="model bundle folder (default: the bundled models/hsk-zh-en)")
    p.add_argument("--json", action="store_true", help="one JSON object per line: translation, tokens, ids, per-step top-k probabilities")
    p.add_argument("--top-k", type=int, default=5, help="with --json: how many candidates per step (default 5)")
    p.add_argument("--max-len", type=int, help="most target tokens per translation (default: 2 x source tokens + 10)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")


def run(args: argparse.Namespace) -> int:
    import torch

    from attnviz.cli import CommandError
    from attnviz.core.bundle import load_bundle
    from attnviz.core.training import greedy_decode
    from attnviz.paths import default_model

    texts = list(args.text)
    if not texts:
        if sys.stdin is None or sys.stdin.isatty():
            raise CommandError("nothing to translate: give TEXT arguments or pipe lines on stdin")
        texts = [line.rstrip("\r\n") for line in sys.stdin]
    if not texts:
        raise CommandError("nothing to translate: the input is empty")
    empty = [i + 1 for i, t in enumerate(texts) if not t.strip()]
    if empty:
        raise CommandError(f"input {empty[0]} is empty (every input needs some text to translate)")
    if args.top_k < 1:
        raise CommandError("--top-k must be at least 1")
    torch.set_num_threads(max(1, args.threads))
    bundle = load_bundle(args.model or default_model())
    src_tok, tgt_tok, model = bundle.src_tokenizer, bundle.tgt_tokenizer, bundle.model
    sources = [src_tok.encode(t.strip()) for t in texts]
    for i, (t, s) in enumerate(zip(texts, sources), 1):
        if not s:
            raise CommandError(f"input {i} has no tokens the model can read")
        if len(s) > model.config.max_len:
            raise CommandError(f"input {i} is {len(s)} tokens long; this model reads at most {model.config.max_len}")
        unknown = src_tok.unknown_characters(t)
        if unknown and not args.json:
            print(f"attnviz: note: input {i}: unknown character(s) {' '.join(unknown)} read as UNK", file=sys.stderr)
    with torch.inference_mode():
        results = greedy_decode(model, sources, max_new=args.max_len, top_k=args.top_k if args.json else 0)
    try:
        _print_results(texts, sources, results, src_tok, tgt_tok, args.json)
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _print_results(texts, sources, results, src_tok, tgt_tok, as_json: bool) -> None:
    for text, src, res in zip(texts, sources, results):
        translation = tgt_tok.decode(res.ids)
        if not as_json:
            print(translation)
            continue
        out_ids = list(res.ids) + ([tgt_tok.eos_id] if res.finished else [])
        obj = {
            "source": text,
            "translation": translation,
            "source_tokens": src_tok.pieces(src),
            "source_ids": list(src),
            "unknown_characters": src_tok.unknown_characters(text),
            "tokens": tgt_tok.pieces(out_ids),
            "ids": out_ids,
            "finished": res.finished,
            "steps": [
                {"token": tgt_tok.piece(i), "id": i, "top_k": [{"token": tgt_tok.piece(t), "id": t, "p": round(p, 6)} for t, p in step]}
                for i, step in zip(out_ids, res.topk)
            ],
        }
        print(json.dumps(obj, ensure_ascii=False))
    sys.stdout.flush()
