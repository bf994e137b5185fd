"""``attnviz animate``: a GIF (or MP4) with one frame per decoding step, drawn by the window's
views side by side — or, with ``--snapshots``, one frame per training snapshot of a probe
sentence, drawn by the Train panel's probe figure — or, with ``--stages``, one frame per stage and
sub-step of the one-head walkthrough of a query's row (QKᵀ, ÷√d_k, mask, softmax, ·V), once the
sentence is decoded.

``--out`` is written only where nothing is, or over an animation attnviz wrote and nobody changed
since; any other file, and a symbolic link, is left alone and refused in one line before any work.
The frames' memory (frames × views × width × height × ``FRAME_BYTES_PER_PIXEL``) is estimated
before any is drawn and refused in one line above :data:`attnviz.core.outputs.FRAMES_BUDGET`."""

from __future__ import annotations

import argparse
import os

from attnviz.commands.replay import add_replay_arguments, model_panels, offscreen_unless_a_display, replay_strategy, view_panels

HELP = "an animated GIF or MP4 of a sentence's decoding (or of a probe sentence over training), one frame per step"
_DECODING_ONLY = ("src", "tgt", "view", "kind", "layer", "head", "query")  # what --snapshots refuses


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_replay_arguments(p, "grid", "each view's size in logical pixels, WxH (default 900x640)", src_required=False)
    p.set_defaults(view=None)  # "grid" unless --snapshots (which refuses a --view)
    p.add_argument("--snapshots", action="store_true",
                   help="one frame per training snapshot in the bundle's meta.json: the probe sentence's cross-attention then")
    p.add_argument("--probe", type=int, default=1, metavar="N", help="with --snapshots: the probe sentence, 1-based (default 1)")
    p.add_argument("--stages", action="store_true",
                   help="one frame per stage of the walkthrough view (--view walkthrough, the default with it) of one query's row")
    p.add_argument("--query", type=int, metavar="N", help="with --stages: the query row, 1-based (default: the last)")
    p.add_argument("--fps", type=float, default=2.0, help="frames per second (default 2)")
    p.add_argument("--out", required=True, metavar="FILE", help="FILE.gif, or FILE.mp4 with the optional imageio-ffmpeg")


def _checked(args: argparse.Namespace) -> tuple[int, int]:
    from attnviz.commands.export import parse_size
    from attnviz.core.outputs import check_output
    from attnviz.errors import CommandError
    from attnviz.qt.publish.animation import FORMATS, FPS_RANGE

    if not args.out.lower().endswith(tuple(f".{f}" for f in FORMATS)):
        raise CommandError(f"--out must end in .gif or .mp4, not {os.path.basename(args.out)!r}", 2)
    if not FPS_RANGE[0] <= args.fps <= FPS_RANGE[1]:
        raise CommandError(f"--fps must be from {FPS_RANGE[0]:g} to {FPS_RANGE[1]:g}, not {args.fps:g}", 2)
    given = [f"--{name}" for name in _DECODING_ONLY if getattr(args, name) is not None]
    if args.snapshots and given:
        raise CommandError(f"--snapshots animates the stored probe sentence: it takes no {', '.join(given)}", 2)
    _check_stages(args)
    if not args.snapshots and args.src is None:
        raise CommandError("--src is required (or --snapshots, for a probe sentence over training)", 2)
    size = parse_size(args.size)
    check_output(args.out)  # before any work
    return size


def _check_stages(args: argparse.Namespace) -> None:
    """``--stages`` plays the walkthrough alone; ``--query`` is for it (one line, exit code 2)."""
    from attnviz.errors import CommandError

    if args.query is not None and not args.stages:
        raise CommandError("--query is for --stages (the walkthrough's query row)", 2)
    if args.query is not None and args.query < 1:
        raise CommandError(f"--query is 1-based: at least 1, not {args.query}", 2)
    if args.stages and args.snapshots:
        raise CommandError("--stages and --snapshots are two different animations: choose one", 2)
    if args.stages and (args.view or "walkthrough") != "walkthrough":
        raise CommandError(f"--stages plays the walkthrough view: --view walkthrough, not {args.view!r}", 2)


def run(args: argparse.Namespace) -> int:
    offscreen_unless_a_display()
    from attnviz.commands.export import quiet_qt_messages
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model
    from attnviz.qt.app import make_app
    from attnviz.qt.publish.animation import write_animation

    size = _checked(args)
    quiet_qt_messages()
    app = make_app()  # noqa: F841 - the views need a QApplication
    if args.snapshots:
        frames = _snapshot_frames(load_bundle(args.model or default_model()).meta, args.probe, size, args.theme)
    elif args.stages:
        frames = _stage_frames(args, size)
    else:
        frames = _decoding_frames(args, size)
    path = write_animation(frames, args.out, args.fps)
    print(f"{path} ({len(frames)} frames)")
    return 0


def _decoding_frames(args: argparse.Namespace, size: tuple[int, int]) -> list:
    from attnviz.core.bundle import load_bundle
    from attnviz.paths import default_model
    from attnviz.qt.publish.animation import animation_frames

    args.view = args.view or "grid"
    panels = view_panels(args)
    strategy = replay_strategy(args)
    bundle = load_bundle(args.model or default_model())
    panels = model_panels(panels, bundle.config, args.kind, "animate")
    return animation_frames(bundle, args.src, args.tgt or "", panels, size, args.theme, strategy)


def _stage_frames(args: argparse.Namespace, size: tuple[int, int]) -> list:
    """The walkthrough's stages for the chosen head and query, once the sentence is decoded; nothing to show: one line."""
    from dataclasses import replace

    from attnviz.core.bundle import load_bundle
    from attnviz.errors import CommandError
    from attnviz.paths import default_model
    from attnviz.qt.publish.animation import AnimationError, stage_animation_frames

    args.view = "walkthrough"
    (panel,) = view_panels(args)
    bundle = load_bundle(args.model or default_model())
    (panel,) = model_panels([panel], bundle.config, args.kind, "animate")
    query = None if args.query is None else args.query - 1
    panel = replace(panel, choice=replace(panel.choice, query=query))
    try:
        return stage_animation_frames(bundle, args.src, args.tgt or "", panel, size, args.theme, replay_strategy(args))
    except AnimationError as exc:
        raise CommandError(str(exc), 2) from None


def _snapshot_frames(meta: dict, probe: int, size: tuple[int, int], theme: str) -> list:
    """Every snapshot's frame; a bundle without snapshots or no probe ``probe`` (1-based): one line, exit code 2."""
    from attnviz.errors import CommandError
    from attnviz.qt.publish.animation import AnimationError, snapshot_frames

    try:
        return list(snapshot_frames(meta, probe - 1, size, theme))
    except AnimationError as exc:
        raise CommandError(f"--snapshots: {exc}", 2) from None
