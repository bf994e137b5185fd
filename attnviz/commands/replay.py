"""What ``attnviz animate`` and ``attnviz page`` share: both replay a sentence's decoding and draw
chosen views at every step. Their common arguments, the views asked for as panels (each with
the selectors it takes), and the checks of those selectors against the model. Not a command."""

from __future__ import annotations

import argparse
import os


def add_replay_arguments(p: argparse.ArgumentParser, views: str, size_help: str, src_required: bool = True) -> None:
    """The model, sentences, views, selectors, strategy, size and theme (``views``: the default
    ``--view``; ``src_required=False`` for a command that checks ``--src`` itself)."""
    p.add_argument("--model", metavar="DIR", help="model bundle (default: the bundled models/zh-en)")
    p.add_argument("--src", required=src_required, metavar="TEXT", help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence: one step per position of it (teacher forcing) instead of decoding")
    p.add_argument("--view", default=views, metavar="NAME[,NAME]", help=f"the views, side by side, by their export names (default {views})")
    p.add_argument("--kind", choices=("encoder", "decoder", "cross"), help="attention kind, for the views that take one")
    p.add_argument("--layer", type=int, help="layer, 1-based, for the views that take one (default 1)")
    p.add_argument("--head", type=int, help="head, 1-based, for the views that take one (default 1)")
    p.add_argument("--strategy", default="greedy", help="greedy | beam:K | sample:T (default greedy)")
    p.add_argument("--seed", type=int, default=0, help="seed for sampling")
    p.add_argument("--size", default="900x640", help=size_help)
    p.add_argument("--theme", choices=("light", "dark"), default="light")


def offscreen_unless_a_display() -> None:
    """Draw off screen when there is no display to draw on."""
    if not os.environ.get("QT_QPA_PLATFORM") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"


def view_panels(args: argparse.Namespace) -> list:
    """A panel per ``--view`` name: each view gets the selectors it takes (0-based), a kind only
    when it shows it (else its own default). Unknown names, no name or a selector below 1: one
    line, exit code 2."""
    from attnviz.errors import CommandError
    from attnviz.qt.publish.animation import Panel
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.views.registry import view_spec

    for name in ("layer", "head"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CommandError(f"--{name} is 1-based: at least 1, not {value}", 2)
    panels = []
    for name in dict.fromkeys(n.strip() for n in args.view.split(",") if n.strip()):
        spec = view_spec(name)
        kind = args.kind if args.kind in spec.kinds else spec.default_kind
        takes_head = spec.takes("head")
        panels.append(Panel(spec, ViewChoice(kind=kind if spec.takes("kind") else None,
                                             layer=(args.layer or 1) - 1 if spec.takes("layer") else None,
                                             head=(args.head or 1) - 1 if takes_head else None,
                                             mode="head" if takes_head else None)))
    if not panels:
        raise CommandError("--view names no view", 2)
    return panels


def model_panels(panels: list, config, kind: str | None, purpose: str) -> list:
    """``panels`` fitted to the loaded model, or one line (exit code 2): an encoder-only model has
    no decoding to replay (``purpose``: what the command would do with it, "animate"); a view whose
    kind was not asked for (``kind`` ``None``) shows one the model has (GPT-2 has no cross-attention:
    its decoder's); a view the model has nothing for, a kind it has no layers of, or a ``--layer``
    or ``--head`` past the model's, is refused."""
    from dataclasses import replace

    from attnviz.errors import CommandError

    if config.kind == "encoder-only":
        raise CommandError(f"an encoder-only model (BERT) has no decoding to {purpose}: it predicts masked tokens in one pass "
                           "(attnviz trace --src shows it; attnviz export --view masked draws it)", 2)
    fitted = []
    for panel in panels:
        if not panel.spec.applies(config):
            raise CommandError(f"the {panel.spec.name} view does not apply to this {config.kind} model", 2)
        fitted.append(replace(panel, choice=replace(panel.choice, kind=_kind(panel, config, kind))))
    _check_ranges(fitted, config)
    return fitted


def _kind(panel, config, asked: str | None) -> str | None:
    """The kind ``panel`` shows on a model of ``config``: the one asked for, else its own where the
    model has layers of it, else the first of cross, decoder and encoder that it shows and the model has."""
    from attnviz.core.model.sites import first_kind, n_layers
    from attnviz.errors import CommandError

    kind = panel.choice.kind
    if kind is None or n_layers(config, kind):
        return kind
    if kind == asked:
        has = [k for k in ("cross", "decoder", "encoder") if n_layers(config, k)]
        raise CommandError(f"--kind {asked}: this {config.kind} model has no {asked} attention (choose --kind {' or '.join(has)})", 2)
    return first_kind(panel.spec.kinds, config)


def _check_ranges(panels: list, config) -> None:
    """``--layer`` and ``--head`` within the model, for each view that takes them (exit code 2)."""
    from attnviz.core.model.sites import attention_sites
    from attnviz.errors import CommandError

    for panel in panels:
        choice = panel.choice
        if choice.layer is not None:
            n_layers = len(attention_sites(config, choice.kind))
            if not choice.layer < n_layers:
                raise CommandError(f"--layer must be between 1 and {n_layers} for {choice.kind} attention", 2)
        if choice.head is not None and not choice.head < config.n_heads:
            raise CommandError(f"--head must be between 1 and {config.n_heads}", 2)


def replay_strategy(args: argparse.Namespace):
    """``--strategy`` and ``--seed`` as a strategy (a bad one: one line, exit code 2)."""
    from attnviz.core.decoding.strategies import DecodingError, parse_strategy
    from attnviz.errors import CommandError

    try:
        return parse_strategy(args.strategy, seed=args.seed)
    except DecodingError as exc:
        raise CommandError(str(exc), 2) from None
