"""What several commands share of their options: ``--model``, the sentence looked into (``--src``,
``--tgt``), ``--threads`` (torch's CPU threads, for those that run a model over many sentences)
and the bundle loaded with them, a data file to write (``--out`` FILE, .csv or .npz), and numbers
that must be at least 1. Nothing here loads torch before a command runs: the parser is built at
the app's start."""

from __future__ import annotations

import argparse
from pathlib import Path

from attnviz.core.limits import MAX_THREADS


def add_model_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="DIR", help="model bundle folder (default: the bundled models/zh-en)")


def add_sentence_arguments(p: argparse.ArgumentParser) -> None:
    """``--model``, ``--src`` and ``--tgt`` (teacher-forced; default: the greedy translation): the one sentence a command looks into."""
    add_model_argument(p)
    p.add_argument("--src", metavar="TEXT", required=True, help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence, teacher-forced (default: the greedy translation)")


def add_threads_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=1, help=f"torch CPU threads, 1 to {MAX_THREADS} (default 1)")


def check_threads(threads: int) -> None:
    """``CommandError`` (exit 2) for a ``--threads`` out of 1 to ``MAX_THREADS``."""
    from attnviz.errors import CommandError

    if not 1 <= threads <= MAX_THREADS:
        raise CommandError(f"--threads must be from 1 to {MAX_THREADS}, not {str(threads)[:40]}", 2)


def threaded_bundle(args: argparse.Namespace):
    """torch set to ``--threads`` CPU threads, then the ``--model`` bundle (default: the bundled model) loaded."""
    import torch

    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model

    torch.set_num_threads(args.threads)
    return load_bundle(args.model or default_model())


def add_data_file_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--out FILE``, ``what`` saying what is written (e.g. "write the scores to FILE")."""
    p.add_argument("--out", metavar="FILE", help=f"{what} (.csv or .npz; the data's metadata lines included)")


def data_file(out: str | None) -> Path | None:
    """The ``--out`` file (``None``: none asked for); ``CommandError`` (exit 2) unless it ends in .csv or .npz."""
    from attnviz.errors import CommandError

    path = Path(out) if out else None
    if path is not None and path.suffix.lower() not in (".csv", ".npz"):
        raise CommandError(f"--out: {path} must end in .csv or .npz", code=2)
    return path


def check_at_least_one(*flags: tuple[str, int | None]) -> None:
    """``CommandError`` (exit 2) for the first (flag, value) given (not ``None``) below 1."""
    from attnviz.errors import CommandError

    for flag, value in flags:
        if value is not None and value < 1:
            raise CommandError(f"{flag} must be at least 1, not {value}", code=2)
