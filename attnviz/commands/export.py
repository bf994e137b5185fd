"""``attnviz export``: draw a view off screen with the app's own drawing code and write it to files."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

HELP = "export a view's figure (PNG/SVG/PDF) or data (CSV/NPZ) headless, exactly as the app draws it"
ATTENTION_VIEWS = ("grid", "head", "lines")
VIEWS = ("grid", "head", "lines", "mask", "pe", "norm", "output", "walkthrough")
FORMATS = ("png", "svg", "pdf", "csv", "npz")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="DIR", help="model bundle (default: the bundled models/hsk-zh-en)")
    p.add_argument("--src", required=True, metavar="TEXT", help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence: teacher-forced mode instead of decoding")
    p.add_argument("--strategy", default="greedy", help="greedy | beam:K | sample:T (default greedy)")
    p.add_argument("--seed", type=int, default=0, help="seed for sampling")
    p.add_argument("--steps", type=int, metavar="N", help="decode only N steps (default: to EOS)")
    p.add_argument("--view", choices=VIEWS, default="grid", help="which view to draw (default grid)")
    p.add_argument("--kind", choices=("encoder", "decoder", "cross"), default="cross", help="attention kind (default cross)")
    p.add_argument("--layer", type=int, default=1, help="layer, 1-based as on screen (default 1)")
    p.add_argument("--head", default="1", help="head, 1-based; 'mean' (over heads), 'rollout', or 'all' (one file per layer and head)")
    p.add_argument("--format", dest="fmt", choices=FORMATS, default="png", help="file format (default png)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--width", type=int, help="PNG width in pixels")
    p.add_argument("--dpi", type=float, help="PNG resolution (96 = as on screen)")
    p.add_argument("--size", default="1000x760", help="figure size in logical pixels, WxH (default 1000x760)")
    p.add_argument("--theme", choices=("light", "dark"), default="light")
    p.add_argument("--colormap", default=None, help="colormap name, e.g. viridis, magma")


def _parse_size(text: str) -> tuple[int, int]:
    from attnviz.errors import CommandError

    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise CommandError(f"--size must look like 1000x760, not {text!r}", 2) from None
    if not (100 <= w <= 10000 and 100 <= h <= 10000):
        raise CommandError("--size must be between 100x100 and 10000x10000", 2)
    return w, h


def run(args: argparse.Namespace) -> int:
    from attnviz.errors import CommandError

    if not os.environ.get("QT_QPA_PLATFORM") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    size = _parse_size(args.size)
    head_arg = str(args.head).lower()
    if head_arg not in ("all", "mean", "rollout"):
        try:
            head = int(head_arg) - 1
        except ValueError:
            raise CommandError(f"--head must be a number, 'mean', 'rollout' or 'all', not {args.head!r}", 2) from None
    else:
        head = 0
    out = Path(args.out)
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError, parse_strategy
    from attnviz.paths import default_model
    from attnviz.qt.app import make_app
    from attnviz.qt.export.files import ExportError, atomic_write_bytes, data_to_bytes, export_all_heads, render_view_to_file
    from attnviz.qt.session import Session

    bundle = load_bundle(args.model or default_model())
    app = make_app()  # noqa: F841 - the views need a QApplication
    session = Session()
    try:
        strategy = parse_strategy(args.strategy, seed=args.seed)
    except DecodingError as exc:
        raise CommandError(str(exc), 2) from None
    session.strategy = strategy
    session.set_bundle(bundle)
    session.set_inputs(args.src, args.tgt or "")
    if session.current is None:
        raise CommandError(session.error or "nothing to draw")
    if session.decoding is not None:
        try:
            if args.steps is None:
                session.decoding.run()
            else:
                for _ in range(max(0, args.steps)):
                    if not session.decoding.can_step:
                        break
                    session.decoding.step()
        except DecodingError as exc:
            raise CommandError(str(exc)) from None
    n_layers = session.n_layers(args.kind)
    if not 1 <= args.layer <= max(n_layers, 1):
        raise CommandError(f"--layer must be between 1 and {n_layers} for {args.kind} attention", 2)
    if head_arg not in ("all", "mean", "rollout") and not 0 <= head < bundle.config.n_heads:
        raise CommandError(f"--head must be between 1 and {bundle.config.n_heads}", 2)
    layer = args.layer - 1
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot create the output folder {out}: {exc.strerror or exc}") from None

    cleanup: list = []
    try:
        if head_arg == "all" and args.view in ATTENTION_VIEWS:
            if args.fmt not in ("png", "svg", "pdf"):
                raise CommandError("--head all writes figures: use --format png, svg or pdf", 2)
            data = session.attention_data(args.kind)
            written = export_all_heads(data, out, args.fmt, width=args.width, dpi=args.dpi, size=size,
                                       theme=args.theme, colormap=args.colormap)
            for p in written:
                print(p)
            return 0
        view = _make_view(args.view, session, args.kind, layer, head, head_arg, args.theme)
        cleanup.append(view)
        view.resize(*size)
        if args.colormap and hasattr(view, "set_colormap"):
            view.set_colormap(args.colormap)
        name = file_stem(args.view, args.kind, args.layer, head_arg if head_arg in ("mean", "rollout") else f"head{head + 1}")
        path = out / f"{name}.{args.fmt}"
        if args.fmt in ("csv", "npz"):
            atomic_write_bytes(path, data_to_bytes(view.figure_data(), args.fmt))
        else:
            render_view_to_file(view, path, args.fmt, width=args.width, dpi=args.dpi)
        print(path)
    except ExportError as exc:
        raise CommandError(str(exc)) from None
    finally:  # Qt objects are destroyed here, in this thread, not by a later garbage collection
        for view in cleanup:
            view.close()
            view.deleteLater()
        session.deleteLater()
        from PySide6 import QtCore, QtWidgets

        QtWidgets.QApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    return 0


def file_stem(view: str, kind: str, layer: int, head: str) -> str:
    """``head_cross_layer2_head3``, ``mask_layer1_head2``, ``norm_decoder_layer1``, ``pe`` (1-based, as on screen)."""
    if view in ("pe", "output"):
        return view
    if view == "norm":
        return f"norm_{'encoder' if kind == 'encoder' else 'decoder'}_layer{layer}"
    if view == "mask":
        return f"mask_layer{layer}_{head}"
    return f"{view}_{kind}_layer{layer}_{head}"


def _make_view(name: str, session, kind: str, layer: int, head: int, head_arg: str, theme: str):
    """Build the view the app shows and give it the session's data (the same code path as on screen)."""
    from attnviz.errors import CommandError

    if name in ATTENTION_VIEWS:
        data = {k: session.attention_data(k) for k in ("encoder", "decoder", "cross")}
        if name == "grid":
            from attnviz.qt.views.attention_grid import QtAttentionGrid

            view = QtAttentionGrid(theme=theme)
            view.set_data(data)
            view.set_kind(kind)
        elif name == "head":
            from attnviz.qt.views.head_detail import QtHeadDetailView

            view = QtHeadDetailView(theme=theme)
            view.set_data(data)
            mode = head_arg if head_arg in ("mean", "rollout") else "head"
            view.select(kind=kind, layer=layer, head=head, mode=mode)
        else:
            from attnviz.qt.views.lines import QtLineView

            view = QtLineView(theme=theme)
            view.set_data(data)
            view.set_kind(kind)
            view.set_layer(layer)
            if head_arg not in ("mean", "rollout"):
                view.set_heads([head])
        return view
    if name == "mask":
        from attnviz.qt.views.masks import QtMaskView

        md = session.mask_data()
        if md is None:
            raise CommandError("the mask view needs at least one decoded step")
        view = QtMaskView(theme=theme)
        view.set_data(md)
        view.select(layer=layer, head=head)
        return view
    from attnviz.qt.views.registry import make_inside_view

    return make_inside_view(name, session, layer=layer, head=head, theme=theme)
