"""``attnviz page``: one self-contained HTML page of a sentence's decoding to hand out: the sentence,
the tokens of each step, a step slider, and the attention matrix the reader chooses (kind, layer,
head or the mean over heads) drawn by the page's own script at the chosen step, with the weight
of the cell under the mouse; readable offline in any browser. Every kind's, layer's and head's
weights travel in the page as data (3 decimals). The ``--view`` figures at the last step are kept
for readers without scripts; ``--kind``, ``--layer`` and ``--head`` choose the matrix it opens on.

The page is written as ``index.html`` in the folder ``--out`` (created when missing). An
``index.html`` there is replaced only when attnviz wrote it and nobody changed it since; any other
file, a link or a pipe is left alone (and never opened). The frames' memory (steps × views × width
× height × ``FRAME_BYTES_PER_PIXEL``) is estimated before any is drawn and refused in one line above
:data:`attnviz.core.outputs.FRAMES_BUDGET`.

``--tour STOP[,STOP…]`` puts those stops of the guided tour under the matrix, each its title and
its text with the numbers the tour quotes, explained by the tour itself in a window that is never
shown (:mod:`attnviz.qt.tour_offscreen`), on the stop's own sentence; the page plays them one at a
time, each setting the kind, layer, head and step it is about. A stop that does not apply to the
model (attention of a kind it has no layers of; positional encoding explained as
sin/cos on a model with learned positions or relative position biases) is refused in one line
before the window opens.
"""

from __future__ import annotations

import argparse

from attnviz.commands.replay import add_replay_arguments, model_panels, offscreen_unless_a_display, replay_strategy, view_panels
from attnviz.core.tour_data import LANGUAGES

HELP = "a self-contained web page (one HTML file) of a sentence's decoding: any kind, layer, head and step's attention, numbers on hover"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_replay_arguments(p, "grid,head", "each figure's size in logical pixels, WxH (default 900x640)")
    p.add_argument("--note", action="append", default=[], metavar="TEXT", help="a paragraph of text under the matrix (repeatable)")
    p.add_argument("--tour", metavar="STOP[,STOP]", help="the guided tour's stops whose titles and texts go under the matrix, by id")
    p.add_argument("--language", choices=LANGUAGES, default="en", help="the language of the tour's texts (default en)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder: the page is DIR/index.html")


def run(args: argparse.Namespace) -> int:
    offscreen_unless_a_display()
    from attnviz.commands.export import parse_size, quiet_qt_messages
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model
    from attnviz.qt.app import make_app
    from attnviz.qt.publish.web_page import build_page, check_page_folder, page_html, write_web_page

    size = parse_size(args.size)
    panels = view_panels(args)
    strategy = replay_strategy(args)
    tour = tour_stops(args.tour, args.language)
    check_page_folder(args.out)  # before any work
    quiet_qt_messages()
    app = make_app()  # noqa: F841 - the views need a QApplication
    bundle = load_bundle(args.model or default_model())
    panels = model_panels(panels, bundle.config, args.kind, "put on a page")
    notes = list(args.note)
    if tour is not None:
        from attnviz.qt.tour_offscreen import explained_stops

        check_tour_applies(*tour, bundle.config)
        notes += explained_stops(bundle.path or args.model or default_model(), *tour)
    page = build_page(bundle, args.src, args.tgt or "", panels, size, args.theme, strategy, notes)
    path = write_web_page(page_html(page), args.out)
    print(f"{path} ({len(page.steps)} steps)")
    return 0


def tour_stops(ids: str | None, language: str):
    """``(tour, stop indices)`` for ``--tour`` (``None`` without it): the tour of ``language`` and
    the stops named; an unknown id is refused in one line (exit code 2)."""
    if ids is None:
        return None
    from attnviz.core.tour_data import load_tour
    from attnviz.errors import CommandError

    tour = load_tour(language)
    names = list(dict.fromkeys(i.strip() for i in ids.split(",") if i.strip()))
    unknown = [i for i in names if i not in tour.ids()] or ([] if names else [ids])
    if unknown:
        raise CommandError(f"--tour: no stop {unknown[0]!r} in the tour (one of {', '.join(tour.ids())})", 2)
    return tour, [tour.index(i) for i in names]


def check_tour_applies(tour, indices, config) -> None:
    """The first of the stops ``indices`` of ``tour`` that does not apply to a model of ``config``,
    refused in one line (exit code 2): see :func:`attnviz.core.tour_data.stop_mismatch`."""
    from attnviz.core.tour_data import stop_mismatch
    from attnviz.errors import CommandError

    for i in indices:
        why = stop_mismatch(tour.stops[i], config)
        if why is not None:
            raise CommandError(f"--tour: {why}", 2)
