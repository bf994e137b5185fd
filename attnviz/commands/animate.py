"""``attnviz animate``: a GIF (or MP4) with one frame per decoding step, drawn by the window's
views side by side."""

from __future__ import annotations

import argparse
import os

HELP = "an animated GIF or MP4 of a sentence's decoding, one frame per step, drawn by the app's views"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="DIR", help="model bundle (default: the bundled models/hsk-zh-en)")
    p.add_argument("--src", required=True, metavar="TEXT", help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence: one frame per position of it (teacher forcing) instead of decoding")
    p.add_argument("--view", default="grid", metavar="NAME[,NAME]", help="the views in each frame, side by side (default grid)")
    p.add_argument("--kind", choices=("encoder", "decoder", "cross"), help="attention kind, for the views that take one")
    p.add_argument("--layer", type=int, help="layer, 1-based, for the views that take one (default 1)")
    p.add_argument("--head", type=int, help="head, 1-based, for the views that take one (default 1)")
    p.add_argument("--strategy", default="greedy", help="greedy | beam:K | sample:T (default greedy)")
    p.add_argument("--seed", type=int, default=0, help="seed for sampling")
    p.add_argument("--fps", type=float, default=2.0, help="frames per second (default 2)")
    p.add_argument("--size", default="900x640", help="each view's size in logical pixels, WxH (default 900x640)")
    p.add_argument("--theme", choices=("light", "dark"), default="light")
    p.add_argument("--out", required=True, metavar="FILE", help="FILE.gif, or FILE.mp4 with the optional imageio-ffmpeg")


def _panels(args: argparse.Namespace):
    """The views asked for, each with the selectors it takes (one-line errors for unknown names)."""
    from attnviz.qt.export.animation import Panel
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.views.registry import view_spec

    panels = []
    for name in (n.strip() for n in args.view.split(",")):
        spec = view_spec(name)
        kind = args.kind if args.kind in spec.kinds else spec.default_kind
        choice = ViewChoice(kind=kind if spec.takes("kind") else None,
                            layer=(args.layer or 1) - 1 if spec.takes("layer") else None,
                            head=(args.head or 1) - 1 if spec.takes("head") else None,
                            mode="head" if spec.takes("head") else None)
        panels.append(Panel(spec, choice))
    return panels


def _checked(args: argparse.Namespace) -> tuple[int, int]:
    from attnviz.commands.export import parse_size
    from attnviz.errors import CommandError
    from attnviz.qt.export.animation import FORMATS, FPS_RANGE

    if not args.out.lower().endswith(tuple(f".{f}" for f in FORMATS)):
        raise CommandError(f"--out must end in .gif or .mp4, not {os.path.basename(args.out)!r}", 2)
    if not FPS_RANGE[0] <= args.fps <= FPS_RANGE[1]:
        raise CommandError(f"--fps must be from {FPS_RANGE[0]:g} to {FPS_RANGE[1]:g}, not {args.fps:g}", 2)
    for name in ("layer", "head"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise CommandError(f"--{name} is 1-based: at least 1, not {getattr(args, name)}", 2)
    return parse_size(args.size)


def run(args: argparse.Namespace) -> int:
    if not os.environ.get("QT_QPA_PLATFORM") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from attnviz.commands.export import quiet_qt_messages
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError, parse_strategy
    from attnviz.errors import CommandError
    from attnviz.paths import default_model
    from attnviz.qt.app import make_app
    from attnviz.qt.export.animation import animation_frames, write_animation

    size = _checked(args)
    panels = _panels(args)
    try:
        strategy = parse_strategy(args.strategy, seed=args.seed)
    except DecodingError as exc:
        raise CommandError(str(exc), 2) from None
    quiet_qt_messages()
    app = make_app()  # noqa: F841 - the views need a QApplication
    bundle = load_bundle(args.model or default_model())
    frames = animation_frames(bundle, args.src, args.tgt or "", panels, size, args.theme, strategy)
    path = write_animation(frames, args.out, args.fps)
    print(f"{path} ({len(frames)} frames)")
    return 0
