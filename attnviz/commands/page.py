"""``attnviz page``: one self-contained HTML page of a sentence's decoding to hand out: the sentence,
the tokens of each step, a step slider and the chosen views' figures with their numbers on hover,
readable offline in any browser.

The page is written as ``index.html`` in the folder ``--out`` (created when missing). An
``index.html`` there is replaced only when attnviz wrote it; any other file is left alone.
"""

from __future__ import annotations

import argparse

from attnviz.commands.replay import add_replay_arguments, check_ranges, offscreen_unless_a_display, replay_strategy, view_panels

HELP = "a self-contained web page (one HTML file) of a sentence's decoding: step slider, the views' figures, numbers on hover"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_replay_arguments(p, "grid,head", "each figure's size in logical pixels, WxH (default 900x640)")
    p.add_argument("--note", action="append", default=[], metavar="TEXT", help="a paragraph of text under the figures (repeatable)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: the page is DIR/index.html")


def run(args: argparse.Namespace) -> int:
    offscreen_unless_a_display()
    from attnviz.commands.export import parse_size, quiet_qt_messages
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model
    from attnviz.qt.app import make_app
    from attnviz.qt.export.web_page import build_page, check_page_folder, page_html, write_web_page

    size = parse_size(args.size)
    panels = view_panels(args)
    strategy = replay_strategy(args)
    check_page_folder(args.out)  # before any work
    quiet_qt_messages()
    app = make_app()  # noqa: F841 - the views need a QApplication
    bundle = load_bundle(args.model or default_model())
    check_ranges(panels, bundle.config)
    page = build_page(bundle, args.src, args.tgt or "", panels, size, args.theme, strategy, args.note)
    path = write_web_page(page_html(page), args.out)
    print(f"{path} ({len(page.steps)} steps)")
    return 0
