"""``attnviz animate``: a GIF (or MP4) with one frame per decoding step, drawn by the window's
views side by side."""

from __future__ import annotations

import argparse
import os

from attnviz.commands.replay import add_replay_arguments, check_ranges, offscreen_unless_a_display, replay_strategy, view_panels

HELP = "an animated GIF or MP4 of a sentence's decoding, one frame per step, drawn by the app's views"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_replay_arguments(p, "grid", "each view's size in logical pixels, WxH (default 900x640)")
    p.add_argument("--fps", type=float, default=2.0, help="frames per second (default 2)")
    p.add_argument("--out", required=True, metavar="FILE", help="FILE.gif, or FILE.mp4 with the optional imageio-ffmpeg")


def _checked(args: argparse.Namespace) -> tuple[int, int]:
    from attnviz.commands.export import parse_size
    from attnviz.errors import CommandError
    from attnviz.qt.export.animation import FORMATS, FPS_RANGE

    if not args.out.lower().endswith(tuple(f".{f}" for f in FORMATS)):
        raise CommandError(f"--out must end in .gif or .mp4, not {os.path.basename(args.out)!r}", 2)
    if not FPS_RANGE[0] <= args.fps <= FPS_RANGE[1]:
        raise CommandError(f"--fps must be from {FPS_RANGE[0]:g} to {FPS_RANGE[1]:g}, not {args.fps:g}", 2)
    return parse_size(args.size)


def run(args: argparse.Namespace) -> int:
    offscreen_unless_a_display()
    from attnviz.commands.export import quiet_qt_messages
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model
    from attnviz.qt.app import make_app
    from attnviz.qt.export.animation import animation_frames, write_animation

    size = _checked(args)
    panels = view_panels(args)
    strategy = replay_strategy(args)
    quiet_qt_messages()
    app = make_app()  # noqa: F841 - the views need a QApplication
    bundle = load_bundle(args.model or default_model())
    check_ranges(panels, bundle.config)
    frames = animation_frames(bundle, args.src, args.tgt or "", panels, size, args.theme, strategy)
    path = write_animation(frames, args.out, args.fps)
    print(f"{path} ({len(frames)} frames)")
    return 0
