"""``attnviz tour --check FILE``: read a tour file (a teacher's ``.attnviz-tour``, or a bundled
tour's JSON) as the window would open it, and say ``ok: N stops``, or the first thing wrong with it
in one line (exit code 2): not JSON, a format version this attnviz does not read, an unknown key, a
stop without text or with a text over its length cap, a view the window does not have, a step out
of range, a model folder that is not there.

The views a stop may raise are the window's (:data:`attnviz.qt.views.registry.VIEW_NAMES`);
every language's text is checked (:func:`attnviz.core.tour_data.load_tour_file`).
"""

from __future__ import annotations

import argparse
import json

HELP = "check a tour file (.attnviz-tour) as the window would open it: ok: N stops, or what is wrong, in one line"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", required=True, metavar="FILE", help="the tour file to check")
    p.add_argument("--json", action="store_true", help="print one JSON object: the file, its stops, its model")


def run(args: argparse.Namespace) -> int:
    from attnviz.core.tour_data import TourError, load_tour_file
    from attnviz.errors import CommandError
    from attnviz.qt.views.registry import VIEW_NAMES

    try:
        tour = load_tour_file(args.check, views=VIEW_NAMES, name=args.check)
    except TourError as exc:
        raise CommandError(str(exc), 2) from None
    n = len(tour.stops)
    if args.json:
        print(json.dumps({"file": args.check, "ok": True, "stops": n, "model": tour.model}, ensure_ascii=False))
    else:
        print(f"ok: {n} stop{'' if n == 1 else 's'}")
    return 0
