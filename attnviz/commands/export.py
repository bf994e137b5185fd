"""``attnviz export``: draw a view off screen with the app's own drawing code and write it to files.

Which views there are, the selectors each takes (``--kind``, ``--layer``, ``--head``, ``--query``)
and how each is fed come from the view registry, as in the app. A selector a view takes is always
applied; one it does not take, or a kind it does not show, is refused.

Data files start with what they are of (model, source, target, step, kind, layer, head: commented
lines in a CSV, ``metadata`` in an NPZ). Qt's own chatter about the off-screen platform is kept
out of stderr, which is left to our messages.

Every file carries attnviz's mark (:mod:`attnviz.core.outputs`) and is written only where nothing
is, or over a file attnviz wrote and nobody changed since: any other file, and a symbolic link, is
left alone and refused in one line naming it, before any drawing (before the model is loaded, where
the file's name does not depend on it).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from attnviz.core.model.sites import KINDS
from attnviz.errors import CommandError

if TYPE_CHECKING:
    from attnviz.core.model.config import TransformerConfig
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session
    from attnviz.qt.views.spec import ViewSpec

HELP = "export a view's figure (PNG/SVG/PDF) or data (CSV/NPZ) headless, exactly as the app draws it"
FIGURE_FORMATS = ("png", "svg", "pdf")
FORMATS = (*FIGURE_FORMATS, "csv", "npz")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="DIR", help="model bundle (default: the bundled models/zh-en)")
    p.add_argument("--src", required=True, metavar="TEXT", help="source sentence")
    p.add_argument("--tgt", metavar="TEXT", help="target sentence: teacher-forced mode instead of decoding")
    p.add_argument("--other", metavar="TEXT", help="compare view: the second source (default: --src with its first and "
                   "last word, or character, swapped: 猫吃鱼。 → 鱼吃猫。)")
    p.add_argument("--no-pe", action="store_true", help="compare view: both sources without positional encoding, "
                   "as the view's \"PE off\" toggle draws them (its data still carries the translations with and without PE)")
    p.add_argument("--strategy", default="greedy", help="greedy | beam:K | sample:T (default greedy)")
    p.add_argument("--seed", type=int, default=0, help="seed for sampling")
    p.add_argument("--steps", type=int, metavar="N", help="decode only N steps (default: to EOS)")
    p.add_argument("--view", default="grid", metavar="NAME",
                   help="which view to draw, by its name in the view registry: grid, head, lines, mask, pe, norm, output, "
                        "walkthrough, … (default grid; an unknown name lists them all)")
    p.add_argument("--kind", choices=KINDS, help="attention kind, for the views that take one "
                   "(default cross; mask: decoder; norm: encoder or decoder, default decoder)")
    p.add_argument("--layer", type=int, help="layer, 1-based as on screen (default 1)")
    p.add_argument("--head", help="head, 1-based (default 1); 'mean' (over heads), 'rollout', or 'all' "
                   "(figures: one file per layer and head; csv/npz: one file with every layer and head)")
    p.add_argument("--other-model", metavar="DIR", help="checkpoints view: the bundle compared with --model (same architecture); "
                   "norm-batch view: the bundle drawn beside it (default: the other bundled model, LayerNorm or BatchNorm)")
    p.add_argument("--ablate", metavar="LIST", default="",
                   help="heads ablated in every run drawn, KIND:LAYER:HEAD 1-based, comma-separated (e.g. cross:3:2,encoder:1:1)")
    p.add_argument("--ablation", default="zero", choices=("zero", "mean", "uniform"), help="how --ablate takes a head out (default zero)")
    p.add_argument("--query", type=int, help="query row of the walkthrough, 1-based (default: the current step)")
    p.add_argument("--group-words", action="store_true", help="grid, head and lines views: words instead of pieces, as their "
                   "\"Words\" switch shows them (keys summed, queries averaged over a word's pieces); data files say so")
    p.add_argument("--content-only", action="store_true", help="grid, head and lines views: content keys only, as their "
                   "\"Content\" switch shows them (SOS, EOS and punctuation keys left out, each row renormalised over the "
                   "keys left; with --group-words, the words are grouped first); data files say so")
    p.add_argument("--format", dest="fmt", choices=FORMATS, default="png", help="file format (default png)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--width", type=int, help="PNG width in pixels (16 to 20000)")
    p.add_argument("--dpi", type=float, help="PNG resolution, 24 to 1200 (96 = as on screen)")
    p.add_argument("--size", default="1000x760", help="figure size in logical pixels, WxH (default 1000x760)")
    p.add_argument("--theme", choices=("light", "dark"), default="light")
    p.add_argument("--colormap", default=None, help="colormap name, e.g. viridis, magma")


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise CommandError(f"--size must look like 1000x760, not {text!r}", 2) from None
    if not (100 <= w <= 10000 and 100 <= h <= 10000):
        raise CommandError("--size must be between 100x100 and 10000x10000", 2)
    return w, h


def _check_figure_options(args: argparse.Namespace) -> None:
    """``--width``, ``--dpi``, ``--colormap`` and ``--steps`` checked before any work (one line each)."""
    from attnviz.qt.export.files import ExportError, check_png_size
    from attnviz.qt.widgets.colormaps import SEQUENTIAL_COLORMAPS

    if args.steps is not None and not 0 <= args.steps <= 10_000:
        raise CommandError(f"--steps must be from 0 to 10000, not {args.steps}", 2)

    for option, size in (("--width", {"width": args.width}), ("--dpi", {"dpi": args.dpi})):
        try:
            check_png_size(**size)
        except ExportError as exc:
            raise CommandError(f"{option}: {exc}", 2) from None
    if args.colormap is not None and args.colormap not in SEQUENTIAL_COLORMAPS:
        raise CommandError(f"unknown --colormap {args.colormap!r}: use one of {', '.join(SEQUENTIAL_COLORMAPS)}", 2)


def _check_png_pixels(args: argparse.Namespace, size: tuple[int, int]) -> None:
    """``CommandError`` before any work when ``--size`` scaled by ``--width`` or ``--dpi`` (as the
    PNG renderer scales it) makes an image wider or taller than the PNG width limit."""
    from attnviz.qt.export.files import PNG_WIDTH_RANGE

    if args.fmt != "png" or (args.width is None and args.dpi is None):
        return
    scale = args.width / size[0] if args.width is not None else args.dpi / 96.0
    w, h = round(size[0] * scale), round(size[1] * scale)
    most = PNG_WIDTH_RANGE[1]
    if max(w, h) > most:
        given = f"--width {args.width}" if args.width is not None else f"--dpi {args.dpi:g}"
        raise CommandError(f"--size {size[0]}x{size[1]} at {given} makes a PNG of {w:,} x {h:,} pixels, more than {most:,} "
                           "on a side: lower --size, --width or --dpi", 2)


def _parse_head(text: str | None, spec: ViewSpec) -> tuple[str, int]:
    """(mode, 0-based head): mode "head", "mean", "rollout" or "all"."""
    if text is None:
        return "head", 0
    word = text.lower()
    if word in ("mean", "rollout", "all"):
        if word not in spec.head_modes:
            also = "".join(f" or '{m}'" for m in spec.head_modes)
            raise CommandError(f"--head {word} does not apply to the {spec.name} view (it takes a head number{also})", 2)
        return word, 0
    try:
        return "head", int(word) - 1
    except ValueError:
        raise CommandError(f"--head must be a number, 'mean', 'rollout' or 'all', not {text!r}", 2) from None


def _other_model_option(name: str) -> str | None:
    """The option holding the second model's folder (``--other-model``) of the view ``name``; ``None``: it has none."""
    from attnviz.qt.views import checkpoints, norm_batch

    return {"checkpoints": checkpoints.PATH_OPTION, "norm-batch": norm_batch.OTHER_OPTION}.get(name)


def _groups_words(spec: ViewSpec) -> bool:
    """The view has the "Words" switch (the attention views)."""
    from attnviz.qt.views.base import AttentionSetsMixin

    return issubclass(spec.cls, AttentionSetsMixin)


def _refuse_unused_selectors(args: argparse.Namespace, spec: ViewSpec) -> None:
    """A selector the view does not take, or a kind it does not show, is an error, not ignored."""
    for option in ("other", "no_pe"):
        if getattr(args, option, None) not in (None, False) and spec.name != "compare":
            raise CommandError(f"--{option.replace('_', '-')} does not apply to the {spec.name} view (only to compare)", 2)
    if getattr(args, "other_model", None) is not None and _other_model_option(spec.name) is None:
        raise CommandError(f"--other-model does not apply to the {spec.name} view (only to checkpoints and norm-batch)", 2)
    if getattr(args, "group_words", False) and not _groups_words(spec):
        raise CommandError(f"--group-words does not apply to the {spec.name} view (only to the attention views: grid, head, lines)", 2)
    if getattr(args, "content_only", False) and not _groups_words(spec):
        raise CommandError(f"--content-only does not apply to the {spec.name} view (only to the attention views: grid, head, lines)", 2)
    for selector in ("kind", "layer", "head", "query"):
        if getattr(args, selector) is not None and not spec.takes(selector):
            raise CommandError(f"--{selector} does not apply to the {spec.name} view", 2)
    if args.kind is not None and args.kind not in spec.kinds:
        raise CommandError(f"the {spec.name} view takes --kind {' or '.join(spec.kinds)}, not {args.kind}", 2)


def _request(args: argparse.Namespace, spec: ViewSpec) -> ViewChoice:
    """The choice the arguments ask for, before any model is loaded (0-based; ranges unchecked)."""
    from attnviz.qt.selection import ViewChoice

    _refuse_unused_selectors(args, spec)
    if args.layer is not None and args.layer < 1:
        raise CommandError(f"--layer is 1-based: at least 1, not {args.layer}", 2)
    mode, head = _parse_head(args.head, spec)
    return ViewChoice(
        kind=(args.kind or spec.default_kind) if spec.takes("kind") else None,
        layer=(1 if args.layer is None else args.layer) - 1 if spec.takes("layer") else None,
        head=head if spec.takes("head") else None,
        mode=mode if spec.takes("head") else None,
        query=None if args.query is None else args.query - 1,
    )


def _fitted_kind(choice: ViewChoice, spec: ViewSpec, session: Session, asked: str | None) -> ViewChoice:
    """A kind not asked for that the model has no layers of (cross-attention on GPT-2 or BERT)
    becomes the first of cross, decoder and encoder that the view shows and the model has."""
    from dataclasses import replace

    from attnviz.core.model.sites import first_kind

    if asked is not None or choice.kind is None or session.n_layers(choice.kind):
        return choice
    kind = first_kind(spec.kinds, session.bundle.config)
    return replace(choice, kind=kind) if kind else choice


def _check_ranges(choice: ViewChoice, session: Session) -> None:
    """``--layer``, ``--head`` and ``--query`` within the model and the decoded sentence."""
    if choice.layer is not None:
        n_layers = session.n_layers(choice.kind)
        if n_layers == 0:
            raise CommandError(f"the model has no {choice.kind} layers: there is no {choice.kind} attention to draw", 2)
        if not 0 <= choice.layer < n_layers:
            raise CommandError(f"--layer must be between 1 and {n_layers} for {choice.kind} attention", 2)
    n_heads = session.bundle.config.n_heads
    if choice.mode == "head" and not 0 <= choice.head < n_heads:
        raise CommandError(f"--head must be between 1 and {n_heads}", 2)
    if choice.query is not None:
        rows = len(session.src_pieces()) if choice.kind == "encoder" else session.n_rows()
        if not 0 <= choice.query < rows:
            raise CommandError(f"--query must be between 1 and {rows} for {choice.kind} attention", 2)


def _why_not(spec: ViewSpec, config: TransformerConfig) -> str:
    from attnviz.core.model.sites import n_layers

    if "masked" in spec.needs:
        return f"it needs an encoder-only model with a masked-token head, not an {config.kind} one"
    lacking = [part for part in spec.needs if n_layers(config, part) == 0] or list(spec.kinds)
    return f"the model has no {' or '.join(lacking)} layers"


def _decoded_session(args: argparse.Namespace, spec: ViewSpec) -> Session:
    """A session on ``--model`` with ``--src`` decoded (``--steps`` steps, or to the end), or
    teacher-forced on ``--tgt``; a view that does not apply to the model is refused first."""
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.strategies import DecodingError, parse_strategy
    from attnviz.paths import default_model
    from attnviz.qt.session import Session

    bundle = load_bundle(args.model or default_model())
    if not spec.applies(bundle.config):
        raise CommandError(f"the {spec.name} view does not apply to {bundle.name}: {_why_not(spec, bundle.config)}", 2)
    session = Session()
    try:
        session.set_strategy(parse_strategy(args.strategy, seed=args.seed))
    except DecodingError as exc:
        raise CommandError(str(exc), 2) from None
    session.set_bundle(bundle)
    _ablate(session, args)
    steps = None if args.steps is None or args.tgt else max(0, args.steps)  # teacher-forced: the last position
    error = session.apply(args.src, args.tgt or "", steps=steps)
    session.finish_runs()  # a teacher-forced or encoder-only pass (and a mean ablation's plan) runs in a worker
    if session.current is None:
        raise CommandError(session.error or "nothing to draw")
    if error:
        raise CommandError(error)
    return session


def _ablate(session: Session, args: argparse.Namespace) -> None:
    """``--ablate``/``--ablation`` as the session's ablation (bad heads: one line, exit code 2)."""
    from attnviz.core.analysis.ablation import HeadSet
    from attnviz.core.model.interventions import InterventionError

    try:
        heads = HeadSet.parse(args.ablate, args.ablation)
        heads.check(session.bundle.config)
    except InterventionError as exc:
        raise CommandError(f"--ablate: {exc}", 2) from None
    session.set_ablation(heads)


def _make_folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot create the output folder {out}: {exc.strerror or exc}") from None


def _planned_file(args: argparse.Namespace, spec: ViewSpec, choice: ViewChoice) -> Path | None:
    """The one file the export writes; ``None`` for ``--head all`` figures (one per layer and head,
    named once the model is loaded)."""
    from attnviz.qt.views.registry import file_stem

    if choice.mode != "all":
        return Path(args.out) / f"{file_stem(spec, choice)}.{args.fmt}"
    return None if args.fmt in FIGURE_FORMATS else Path(args.out) / f"{args.view}_{choice.kind}_all_heads.{args.fmt}"


def _write(path: Path, data: bytes) -> Path:
    """``data`` written to ``path`` with attnviz's mark; a file attnviz did not write, or a link, is
    refused in one line (``OutputError``), and so is a failed write."""
    from attnviz.core.outputs import write_output

    try:
        return write_output(path, data)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None


def _export_all_heads(args: argparse.Namespace, session: Session, spec: ViewSpec, choice: ViewChoice, size: tuple[int, int],
                      out: Path) -> list[Path]:
    """Figures: one head-detail figure per layer and head of the chosen kind. Data: one file
    with every layer's and head's weights."""
    from attnviz.core.data_files import data_to_bytes
    from attnviz.qt.export.files import all_heads_data
    from attnviz.qt.views.registry import choice_metadata

    data, notes = session.frames.attention_data(choice.kind), {}
    if getattr(args, "group_words", False):
        from attnviz.core.analysis.figure_data import AttentionFrame
        from attnviz.core.analysis.word_groups import group_frame, grouping_notes

        data, notes = group_frame(AttentionFrame.of(data)).sets[choice.kind], grouping_notes()
    if getattr(args, "content_only", False):
        from attnviz.core.analysis.content_keys import content_data, content_notes

        data, notes = content_data(data), {**notes, **content_notes()}
    if args.fmt in FIGURE_FORMATS:
        return _write_head_figures(args, data, size, out)
    metadata = {**choice_metadata(session, choice), **notes}
    return [_write(_planned_file(args, spec, choice), data_to_bytes(all_heads_data(data), args.fmt, metadata))]


def _write_head_figures(args: argparse.Namespace, data, size: tuple[int, int], out: Path) -> list[Path]:
    """Every layer's and head's figure, drawn by ``iter_export_all_heads`` into a temporary folder
    and written into ``out`` with attnviz's mark, one at a time; every name is checked before any
    figure is drawn."""
    import tempfile

    from attnviz.core.outputs import check_output
    from attnviz.qt.export.files import head_file_name, iter_export_all_heads
    from attnviz.qt.views.registry import head_figure

    for layer in range(data.n_layers):
        for head in range(data.n_heads):
            check_output(out / head_file_name(data.kind, layer, head, args.fmt))
    with tempfile.TemporaryDirectory(prefix="attnviz-heads-") as staging:
        drawn = iter_export_all_heads(head_figure(), data, staging, args.fmt, width=args.width, dpi=args.dpi,
                                      size=size, theme=args.theme, colormap=args.colormap)
        try:
            return [_write(out / path.name, _taken(path)) for path in drawn]
        finally:
            drawn.close()


def _taken(path: Path) -> bytes:
    """The bytes of ``path`` (a temporary file of ours), which is removed."""
    data = path.read_bytes()
    path.unlink()
    return data


def _export_view(args: argparse.Namespace, session: Session, spec: ViewSpec, choice: ViewChoice, size: tuple[int, int], out: Path) -> Path:
    """Build the view the app shows, give it the session's data and the choice, and write it."""
    from attnviz.core.data_files import data_to_bytes
    from attnviz.qt.export.files import render_view_to_bytes
    from attnviz.qt.views.registry import build_view, show_in_view

    view = build_view(spec, theme=args.theme)
    try:
        try:
            _set_view_options(args, spec, view)
            show_in_view(spec, view, session, choice)
        except ValueError as exc:  # data the view cannot draw (an unusual model): one line, no traceback
            raise CommandError(f"cannot draw the {spec.name} view for this model: {exc}") from None
        view.resize(*size)
        if args.colormap:
            view.set_colormap(args.colormap)
        path = _planned_file(args, spec, choice)
        if args.fmt in FIGURE_FORMATS:
            return _write(path, render_view_to_bytes(view, args.fmt, width=args.width, dpi=args.dpi))
        return _write(path, data_to_bytes(view.figure_data(), args.fmt, _data_metadata(view, session, choice)))
    finally:  # Qt objects are destroyed here, in this thread, not by a later garbage collection
        view.close()
        view.deleteLater()


def _set_view_options(args: argparse.Namespace, spec: ViewSpec, view) -> None:
    """The view's own options, set before it is fed: the compare view's second source and its PE
    toggle, the second model of the views that draw one, the attention views' "Words" and "Content" switches."""
    if getattr(args, "other", None) is not None:
        view.set_other(args.other)
    if getattr(args, "no_pe", False):
        view.set_positional(False)
    if getattr(args, "other_model", None) is not None:
        view.set_options({_other_model_option(spec.name): args.other_model})
    if getattr(args, "group_words", False):
        view.set_by_word(True)
    if getattr(args, "content_only", False):
        view.set_content_only(True)


def _data_metadata(view, session: Session, choice: ViewChoice) -> dict[str, object]:
    """What a data file is of (as the window's files say), what the view notes of it (words instead
    of pieces) and, from the compare view, the translations its legend shows, with PE and without."""
    from attnviz.qt.views.compare import QtCompareView
    from attnviz.qt.views.registry import choice_metadata

    compare = view.translation_fields() if isinstance(view, QtCompareView) else {}
    return {**choice_metadata(session, choice), **view.data_notes(), **compare}


QUIET_QT_MESSAGES = ("propagateSizeHints",)  # the off-screen platform's notes, not ours to show


def quiet_qt_messages() -> None:
    """Send Qt's messages to stderr as Qt does, except the off-screen platform's notes
    (:data:`QUIET_QT_MESSAGES`); installed before the QApplication exists."""
    import sys

    from PySide6 import QtCore

    def handler(mode, context, message: str) -> None:
        if not any(word in message for word in QUIET_QT_MESSAGES):
            print(message, file=sys.stderr)

    QtCore.qInstallMessageHandler(handler)


def run(args: argparse.Namespace) -> int:
    from attnviz.commands.replay import offscreen_unless_a_display

    offscreen_unless_a_display()
    from PySide6 import QtCore, QtWidgets

    from attnviz.core.outputs import check_output
    from attnviz.qt.app import make_app
    from attnviz.qt.export.files import ExportError
    from attnviz.qt.views.registry import view_spec

    size = parse_size(args.size)
    _check_figure_options(args)
    _check_png_pixels(args, size)
    spec = view_spec(args.view)
    choice = _request(args, spec)
    if (planned := _planned_file(args, spec, choice)) is not None:
        check_output(planned)  # before any work
    quiet_qt_messages()
    app = make_app()  # noqa: F841 - the views need a QApplication
    session = _decoded_session(args, spec)
    try:
        choice = _fitted_kind(choice, spec, session, args.kind)
        _check_ranges(choice, session)
        out = Path(args.out)
        _make_folder(out)
        if choice.mode == "all":
            written = _export_all_heads(args, session, spec, choice, size, out)
        else:
            written = [_export_view(args, session, spec, choice, size, out)]
        for path in written:
            print(path)
    except ExportError as exc:
        raise CommandError(str(exc)) from None
    finally:
        session.deleteLater()
        QtWidgets.QApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    return 0
