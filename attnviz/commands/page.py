"""``attnviz page``: one self-contained HTML page of a sentence's decoding to hand out: the sentence,
the tokens of each step, a step slider and the chosen views' figures with their numbers on hover,
readable offline in any browser.

The page is written as ``index.html`` in the folder ``--out`` (created when missing). An
``index.html`` there is replaced only when attnviz wrote it; any other file is left alone.
"""

from __future__ import annotations

import argparse
import os

HELP = "a self-contained web page (one HTML file) of a sentence's decoding: step slider, the views' figures, numbers on hover"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="DIR", help="model bundle (default: the bundled models/hsk-zh-en)")
    p.add_argument("--src", required=True, metavar="TEXT", help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence: one step per position of it (teacher forcing) instead of decoding")
    p.add_argument("--view", default="grid,head", metavar="NAME[,NAME]", help="the views on the page, by their export names (default grid,head)")
    p.add_argument("--kind", choices=("encoder", "decoder", "cross"), help="attention kind, for the views that take one (default cross)")
    p.add_argument("--layer", type=int, help="layer, 1-based, for the views that take one (default 1)")
    p.add_argument("--head", type=int, help="head, 1-based, for the views that take one (default 1)")
    p.add_argument("--strategy", default="greedy", help="greedy | beam:K | sample:T (default greedy)")
    p.add_argument("--seed", type=int, default=0, help="seed for sampling")
    p.add_argument("--size", default="900x640", help="each figure's size in logical pixels, WxH (default 900x640)")
    p.add_argument("--theme", choices=("light", "dark"), default="light")
    p.add_argument("--note", action="append", default=[], metavar="TEXT", help="a paragraph of text under the figures (repeatable)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: the page is DIR/index.html")


def view_panels(args: argparse.Namespace) -> list:
    """A panel per ``--view`` name: each view gets the selectors it takes (0-based), a kind only
    when it shows it (else its own default). Unknown names: one line, exit code 2."""
    from attnviz.errors import CommandError
    from attnviz.qt.export.animation import Panel
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
    return panels


def check_ranges(panels: list, config) -> None:
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


def run(args: argparse.Namespace) -> int:
    if not os.environ.get("QT_QPA_PLATFORM") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from attnviz.commands.export import parse_size, quiet_qt_messages
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError, parse_strategy
    from attnviz.errors import CommandError
    from attnviz.paths import default_model
    from attnviz.qt.app import make_app
    from attnviz.qt.export.web_page import build_page, check_page_folder, page_html, write_web_page

    size = parse_size(args.size)
    panels = view_panels(args)
    if not panels:
        raise CommandError("--view names no view", 2)
    try:
        strategy = parse_strategy(args.strategy, seed=args.seed)
    except DecodingError as exc:
        raise CommandError(str(exc), 2) from None
    check_page_folder(args.out)  # before any work
    quiet_qt_messages()
    app = make_app()  # noqa: F841 - the views need a QApplication
    bundle = load_bundle(args.model or default_model())
    check_ranges(panels, bundle.config)
    page = build_page(bundle, args.src, args.tgt or "", panels, size, args.theme, strategy, args.note)
    path = write_web_page(page_html(page), args.out)
    print(f"{path} ({len(page.steps)} steps)")
    return 0
