"""``attnviz translate``: greedy translations from a model bundle, one line per input, in order."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "translate sentences with a model bundle (greedy, beam search or sampling); reads stdin lines when no TEXT is given"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="*", metavar="TEXT", help="sentences to translate (default: one per line from stdin)")
    p.add_argument("--model", metavar="DIR", help="model bundle folder (default: the bundled models/hsk-zh-en)")
    p.add_argument("--json", action="store_true", help="one JSON object per line: translation, tokens, ids, per-step top-k probabilities")
    p.add_argument("--candidates", type=int, default=5, help="with --json: how many top-k candidates per step to list (default 5)")
    g = p.add_argument_group("strategy (default: greedy)")
    g.add_argument("--beam", type=int, metavar="K", help="beam search of width K")
    g.add_argument("--sample", action="store_true", help="sample from the distribution instead of taking the most likely token")
    g.add_argument("--temperature", type=float, default=1.0, help="sampling temperature T: softmax(logits / T) (default 1)")
    g.add_argument("--top-k", type=int, default=0, help="sampling: keep the K most likely tokens (default 0: all)")
    g.add_argument("--top-p", type=float, default=1.0, help="sampling: keep the smallest set with probability >= P (default 1: all)")
    g.add_argument("--seed", type=int, default=0, help="sampling seed: the same seed gives the same translation (default 0)")
    p.add_argument("--max-len", type=int, help="most target tokens per translation (default: 2 x source tokens + 10)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")


def run(args: argparse.Namespace) -> int:
    import torch

    from attnviz.core.bundle import load_bundle
    from attnviz.core.training.evaluation import greedy_decode
    from attnviz.errors import CommandError
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
    if args.candidates < 1:
        raise CommandError("--candidates must be at least 1")
    if args.beam is not None and args.sample:
        raise CommandError("choose one strategy: --beam or --sample")
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
    strategy = _strategy(args)
    try:
        if strategy is None:
            with torch.inference_mode():
                results = greedy_decode(model, sources, max_new=args.max_len, top_k=args.candidates if args.json else 0)
            _print_results(texts, sources, results, src_tok, tgt_tok, args.json)
        else:
            _print_session_results(bundle, texts, strategy, args)
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _strategy(args: argparse.Namespace):
    """The decoding strategy the options ask for (``None``: batched greedy decoding)."""
    from attnviz.core.decoding.strategies import BeamSearch, DecodingError, Sampling
    from attnviz.errors import CommandError

    try:
        if args.beam is not None:
            return BeamSearch(width=args.beam)
        if args.sample or args.temperature != 1.0 or args.top_k or args.top_p != 1.0:
            return Sampling(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    except (DecodingError, ValueError) as exc:
        raise CommandError(str(exc), 2) from None
    return None


def _print_session_results(bundle, texts, strategy, args: argparse.Namespace) -> None:
    """Beam search or sampling through the decoding session (one sentence at a time)."""
    from attnviz.core.decoding.session import DecodingSession
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.errors import CommandError

    src_tok = bundle.src_tokenizer
    for text in texts:
        try:
            session = DecodingSession.from_bundle(bundle, text, strategy=strategy, max_len=args.max_len, top_k=args.candidates, capture=False)
            session.run()
        except DecodingError as exc:
            raise CommandError(str(exc)) from None
        if not args.json:
            print(session.translation())
            continue
        obj = {
            "source": text,
            "translation": session.translation(),
            "strategy": strategy.describe(),
            "source_tokens": list(session.src_pieces),
            "source_ids": list(session.src_ids),
            "unknown_characters": src_tok.unknown_characters(text),
            "tokens": list(session.output_pieces),
            "ids": list(session.output_ids),
            "finished": session.finished and session.tgt_ids[-1] == session.config.eos_id,
            "steps": [
                {"token": st.piece, "id": st.token_id, "top_k": [{"token": p, "id": i, "p": round(pr, 6)} for p, i, pr in st.topk]}
                for st in session.steps
            ],
        }
        if len(session.beams()) > 1:
            obj["beams"] = [{"tokens": list(b.pieces), "score": round(b.score, 6), "finished": b.finished} for b in session.beams()]
        print(json.dumps(obj, ensure_ascii=False))
    sys.stdout.flush()


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
