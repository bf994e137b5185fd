"""``attnviz translate``: greedy translations from a model bundle, one line per input, in order. A
decoder-only model (GPT-2) continues each input: its line is the prompt and the continuation, as in
the window; an encoder-only model (BERT) does not decode and is refused in one line."""

from __future__ import annotations

import argparse
import json
import math
import sys

from attnviz.commands.options import add_model_argument, check_threads, threaded_bundle

HELP = "translate sentences with a model bundle (greedy, beam search or sampling); reads stdin lines when no TEXT is given"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="*", metavar="TEXT", help="sentences to translate (default: one per line from stdin)")
    add_model_argument(p)
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

    from attnviz.core.training.evaluation import greedy_decode

    _check_options(args)
    texts = _read_texts(args)
    strategy = _strategy(args)
    bundle = threaded_bundle(args)
    src_tok, tgt_tok, model = bundle.src_tokenizer, bundle.tgt_tokenizer, bundle.model
    _check_model(model)
    sources = _encode(texts, src_tok, model.config, args.json)
    try:
        if strategy is None:
            with torch.inference_mode():
                results = greedy_decode(model, sources, max_new=args.max_len, top_k=args.candidates if args.json else 1)
            _print_results(texts, sources, results, src_tok, tgt_tok, args.json)
        else:
            _print_session_results(bundle, texts, strategy, args)
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _check_options(args: argparse.Namespace) -> None:
    """``CommandError`` (exit 2) for an option no strategy can honour, before anything is loaded."""
    from attnviz.core.decoding.strategies import SEED_LIMIT
    from attnviz.errors import CommandError

    if not 0 <= args.seed < SEED_LIMIT:
        raise CommandError(f"--seed must be from 0 to 2**63 - 1, not {str(args.seed)[:40]}", 2)
    if args.candidates < 1:
        raise CommandError("--candidates must be at least 1", 2)
    if args.beam is not None and args.sample:
        raise CommandError("choose one strategy: --beam or --sample", 2)
    if args.max_len is not None and args.max_len < 1:
        raise CommandError(f"--max-len must be at least 1 (the most target tokens per translation), not {args.max_len}", 2)
    check_threads(args.threads)


def _check_model(model) -> None:
    """``CommandError`` for a model that cannot decode (encoder-only: BERT), in the words every way of decoding uses."""
    from attnviz.core.decoding.result import check_eval_mode
    from attnviz.core.decoding.strategies import DecodingError
    from attnviz.errors import CommandError

    try:
        check_eval_mode(model)
    except DecodingError as exc:
        raise CommandError(f"{exc} (attnviz translate needs one; attnviz trace --src shows its masked-token pass)") from None


def _read_texts(args: argparse.Namespace) -> list[str]:
    """The sentences to translate: the TEXT arguments, else the lines of stdin; each readable and not empty."""
    from attnviz.core.data.tokenizer import unreadable_text
    from attnviz.errors import CommandError

    texts = list(args.text) or _stdin_lines()
    if not texts:
        raise CommandError("nothing to translate: the input is empty")
    for i, text in enumerate(texts, 1):
        problem = unreadable_text(text)
        if problem:
            raise CommandError(f"input {i} cannot be read: {problem}")
        if not text.strip():
            raise CommandError(f"input {i} is empty (every input needs some text to translate)")
    return texts


def _stdin_lines() -> list[str]:
    """The lines of stdin, decoded as strict UTF-8."""
    from attnviz.errors import CommandError

    if sys.stdin is None or sys.stdin.isatty():
        raise CommandError("nothing to translate: give TEXT arguments or pipe lines on stdin")
    raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8", "surrogateescape")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CommandError(f"input {line} is not valid UTF-8 (byte {exc.start + 1} of stdin): give UTF-8 text") from None
    return text.splitlines()


def _encode(texts: list[str], src_tok, config, as_json: bool) -> list[list[int]]:
    """The source ids of every text; ``CommandError`` for one the model cannot read (a decoder-only
    model's prompt follows SOS, which takes one of its positions)."""
    from attnviz.errors import CommandError

    prompted = config.kind == "decoder-only"
    max_len = config.max_len - 1 if prompted else config.max_len
    sources = [src_tok.encode(t.strip()) for t in texts]
    for i, (t, s) in enumerate(zip(texts, sources), 1):
        if not s:
            raise CommandError(f"input {i} has no tokens the model can read")
        if len(s) > max_len:
            sos = " after SOS" if prompted else ""
            raise CommandError(f"input {i} is {len(s)} tokens long; this model reads at most {max_len}{sos}")
        unknown = src_tok.unknown_characters(t)
        if unknown and not as_json:
            print(f"attnviz: note: input {i}: unknown character(s) {' '.join(unknown)} read as UNK", file=sys.stderr)
    return sources


def _json_line(obj: dict) -> str:
    """``obj`` as one line of strict JSON; ``CommandError`` when it holds NaN or infinity (a broken model)."""
    from attnviz.errors import CommandError

    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise CommandError(f"the model gave NaN or infinite probabilities for {obj['source'][:40]!r}: its weights are broken") from None


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
        print(_json_line(obj))
    sys.stdout.flush()


def _print_results(texts, sources, results, src_tok, tgt_tok, as_json: bool) -> None:
    from attnviz.errors import CommandError

    for i, (text, src, res) in enumerate(zip(texts, sources, results), 1):
        if not all(math.isfinite(p) for step in res.topk for _, p in step):
            raise CommandError(f"the model gave NaN or infinite probabilities for input {i}: its weights are broken; retrain it or use another")
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
        print(_json_line(obj))
    sys.stdout.flush()
