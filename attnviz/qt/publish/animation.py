"""Animated exports: one frame per decoding step (or per position of a teacher-forced target),
each drawn by the views of the window (the same classes, fed by the same session), written as a
GIF (Pillow) or an MP4 (the optional ``imageio-ffmpeg``; its bundled ffmpeg is GPL-licensed).

:func:`animation_frames` replays a sentence's decoding in a session of its own, so the window's
session is left as it is; ``progress(done, total)`` is called after each frame and returning
``False`` from it cancels (``None`` comes back). Before any frame is drawn, the memory the frames
will take is estimated and refused above the budget of :mod:`attnviz.core.outputs`
(``FRAMES_BUDGET``): a decoding's frames are counted by the model's maximum length, or, when that
count is over the budget, by decoding the sentence once without drawing. :func:`write_animation`
writes the frames atomically, with attnviz's mark, and never replaces a file attnviz did not write
nor writes through a symbolic link (:func:`attnviz.core.outputs.write_output`).

:func:`stage_animation_frames` draws the one-head walkthrough's stages instead (one frame per stage
and sub-step of the chosen query's row, at the end of the sentence), under the same budget.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PySide6 import QtCore, QtGui

from attnviz.core.bundle import Bundle
from attnviz.core.decoding.strategies import Greedy
from attnviz.core.outputs import FRAMES_BUDGET, OutputError, check_frames_memory, check_output, frames_memory, write_output
from attnviz.errors import AttnvizError
from attnviz.qt.i18n import translate
from attnviz.qt.selection import ViewChoice
from attnviz.qt.session import Session
from attnviz.qt.views.spec import ViewSpec

FORMATS = ("gif", "mp4")
MAX_FRAMES = 256  # a decoding is at most the model's max_len steps; more frames than this is not an animation to hand out
FPS_RANGE = (0.2, 30.0)


class AnimationError(AttnvizError):
    """An animation that cannot be made or written: one line."""


def _obeyed(rule, *args):
    """``rule(*args)``, a rule of :mod:`attnviz.core.outputs`, its refusal an ``AnimationError``
    (what the window's Export menu shows)."""
    try:
        return rule(*args)
    except OutputError as exc:
        raise AnimationError(str(exc)) from None


@dataclass(frozen=True)
class Panel:
    """One view in each frame: its entry in the registry and the choice it shows."""

    spec: ViewSpec
    choice: ViewChoice


def animation_frames(bundle: Bundle, source: str, target: str, panels: Sequence[Panel], size: tuple[int, int],
                     theme: str = "light", strategy=None, progress: Callable[[int, int], bool] | None = None,
                     on_frame: Callable[[Session, list], None] | None = None) -> list[QtGui.QImage] | None:
    """One image per step of ``source``'s decoding (or per position of ``target``): ``panels``
    side by side, each ``size`` logical pixels. ``None`` when ``progress`` cancels. ``on_frame(session,
    views)`` is called after each frame is drawn, with the replay's session and the panels' views
    as they drew it (what a web page reads besides the pictures)."""
    from attnviz.qt.views.registry import build_view

    session = _replay_session(bundle, source, target, strategy)
    _check_memory(session, len(panels), size)
    views = [build_view(p.spec, theme=theme) for p in panels]
    for view in views:
        view.resize(*size)
    try:
        return _frames(session, list(zip(panels, views)), progress, on_frame)
    finally:
        for view in views:
            view.close()
            view.deleteLater()
        session.deleteLater()


def stage_animation_frames(bundle: Bundle, source: str, target: str, panel: Panel, size: tuple[int, int], theme: str = "light",
                           strategy=None, progress: Callable[[int, int], bool] | None = None) -> list[QtGui.QImage] | None:
    """One image per stage and sub-step of the walkthrough of ``panel.choice`` (its query; by
    default the last row) once ``source`` is decoded to the end (or every position of ``target``
    is fed): the walkthrough view's title and stages, ``size`` logical pixels. ``None`` when
    ``progress`` cancels; ``AnimationError`` (one line, before any frame is drawn) for nothing to
    show or frames over the memory budget."""
    from attnviz.errors import CommandError
    from attnviz.qt.views.registry import build_view, show_in_view
    from attnviz.qt.widgets.figures import MAX_IMAGE_PIXELS

    session = _replay_session(bundle, source, target, strategy)
    view = build_view(panel.spec, theme=theme)
    view.resize(*size)
    try:
        error = session.go_to(None)
        if error:
            raise AnimationError(error)
        try:
            show_in_view(panel.spec, view, session, panel.choice)
        except CommandError as exc:
            raise AnimationError(str(exc)) from None
        total = len(view.stage_frames())
        _obeyed(check_frames_memory, total, *size, MAX_IMAGE_PIXELS)
        return _stage_images(view, total, progress)
    finally:
        view.close()
        view.deleteLater()
        session.deleteLater()


def _stage_images(view, total: int, progress) -> list[QtGui.QImage] | None:
    from attnviz.qt.widgets.figures import render_qimage

    view.set_stages_only(True)
    frames = []
    for i in range(total):
        view.show_stage_frame(i)
        frames.append(render_qimage(view))
        if progress is not None and progress(i + 1, total) is False:
            return None
    return frames


def _replay_session(bundle: Bundle, source: str, target: str, strategy) -> Session:
    session = Session()
    session.set_decode_as_you_type(False)
    session.set_bundle(bundle)
    session.apply(source, target, strategy=strategy if strategy is not None else Greedy(), cursor=0)  # SOS, or the first position of a target
    session.finish_runs()  # a target's teacher-forced pass runs in a worker
    if session.current is None:
        raise AnimationError(session.error or translate("animation", "nothing to animate: type a source sentence"))
    return session


def _check_memory(session: Session, panels: int, size: tuple[int, int]) -> None:
    """``AnimationError`` (one line) before any frame is drawn when the frames of ``panels`` views
    side by side, ``size`` each, would take more than the budget (see the module docstring)."""
    from attnviz.qt.widgets.figures import MAX_IMAGE_PIXELS

    width, height = size[0] * panels, size[1]
    frames = _frame_count(session)
    if session.forced is None and frames_memory(frames, width, height) > FRAMES_BUDGET:
        frames = _decoded_length(session)
    _obeyed(check_frames_memory, frames, width, height, MAX_IMAGE_PIXELS)


def _decoded_length(session: Session) -> int:
    """The frames the decoding gives, counted by decoding it once to the end (nothing is drawn);
    the session is left at its start again."""
    start = session.decoding.n_steps
    error = session.go_to(None)
    if error:
        raise AnimationError(error)
    frames = session.decoding.n_steps - start
    session.reset()
    return min(max(frames, 1), MAX_FRAMES)


def _frames(session: Session, shown: list, progress, on_frame=None) -> list[QtGui.QImage] | None:
    total = _frame_count(session)
    frames: list[QtGui.QImage] = []
    for i in range(total):
        if i or session.forced is None:  # a decoding's first frame is its first step
            _advance(session)
        frames.append(side_by_side([_drawn(panel, view, session) for panel, view in shown]))
        if on_frame is not None:
            on_frame(session, [view for _, view in shown])
        if progress is not None and progress(i + 1, total) is False:
            return None
        if session.forced is None and not session.decoding.can_step:
            break
    return frames


def _drawn(panel: Panel, view, session: Session) -> QtGui.QImage:
    from attnviz.qt.views.registry import show_in_view
    from attnviz.qt.widgets.figures import render_qimage

    show_in_view(panel.spec, view, session, panel.choice)
    return render_qimage(view)


def _frame_count(session: Session) -> int:
    if session.forced is not None:
        return min(len(session.forced.steps), MAX_FRAMES)
    return min(session.decoding.max_len, MAX_FRAMES)  # stops earlier at EOS (see _advance)


def _advance(session: Session) -> None:
    """One step further: the next position of a teacher-forced target, or one decoding step."""
    if session.forced is not None:
        session.set_cursor(session.forced_cursor + 1)
    elif session.decoding.can_step:
        session.step()


def snapshot_frames(meta: dict, probe: int, size: tuple[int, int], theme: str = "light") -> Iterator[QtGui.QImage]:
    """One image per training snapshot in a bundle's ``meta``: probe sentence ``probe``'s
    (0-based) cross-attention then, drawn by the Train panel's probe cell, ``size`` logical pixels.
    ``AnimationError`` (one line, before any frame) for a bundle without snapshots or no such
    probe or frames over the memory budget. The caller cancels by no longer asking for frames."""
    from attnviz.qt.train.snapshot_figure import SnapshotFigure
    from attnviz.qt.widgets.figures import MAX_IMAGE_PIXELS, render_qimage

    snapshots = _stored_snapshots(meta, probe)
    _obeyed(check_frames_memory, len(snapshots), *size, MAX_IMAGE_PIXELS)
    figure = SnapshotFigure(theme=theme)
    figure.resize(*size)
    try:
        for epoch, step, snapshot in snapshots:
            figure.show_snapshot(epoch, step, snapshot)
            yield render_qimage(figure)
    finally:
        figure.close()
        figure.deleteLater()


def _stored_snapshots(meta: dict, probe: int) -> list:
    from attnviz.core.training.evaluation import stored_probe_snapshots

    if not meta.get("snapshots"):
        raise AnimationError(translate("animation", "this model has no training snapshots (its meta.json lists none)"))
    count = len(meta.get("probes", []))
    if not 0 <= probe < count:
        raise AnimationError(translate("animation", "probe {probe} is not there: the model has probe sentences 1 to {count}").format(
            probe=probe + 1, count=count))
    return stored_probe_snapshots(meta, probe)


def side_by_side(images: Sequence[QtGui.QImage]) -> QtGui.QImage:
    """``images`` in a row on white, top-aligned."""
    width = sum(im.width() for im in images)
    height = max(im.height() for im in images)
    out = QtGui.QImage(width, height, QtGui.QImage.Format.Format_RGB32)
    out.fill(QtGui.QColor("white"))
    painter = QtGui.QPainter(out)
    x = 0
    for im in images:
        painter.drawImage(QtCore.QPoint(x, 0), im)
        x += im.width()
    painter.end()
    return out


def to_rgb_array(image: QtGui.QImage) -> np.ndarray:
    """``[h, w, 3]`` uint8 of ``image``."""
    rgb = image.convertToFormat(QtGui.QImage.Format.Format_RGB888)
    arr = np.frombuffer(rgb.constBits(), np.uint8, rgb.sizeInBytes()).reshape(rgb.height(), rgb.bytesPerLine())
    return arr[:, : rgb.width() * 3].reshape(rgb.height(), rgb.width(), 3).copy()


def gif_bytes(frames: Sequence[QtGui.QImage], fps: float) -> bytes:
    """An endlessly looping GIF of ``frames`` at ``fps`` (the last frame held twice as long)."""
    from PIL import Image

    pictures = [Image.fromarray(to_rgb_array(f)) for f in _same_size(frames)]
    step = round(1000 / fps)
    durations = [step] * (len(pictures) - 1) + [2 * step]
    buf = io.BytesIO()
    pictures[0].save(buf, format="GIF", save_all=True, append_images=pictures[1:], duration=durations, loop=0, optimize=False)
    return buf.getvalue()


def _same_size(frames: Sequence[QtGui.QImage]) -> list[QtGui.QImage]:
    """Every frame on a canvas of the largest width and height (a figure may grow with the text)."""
    w, h = max(f.width() for f in frames), max(f.height() for f in frames)
    return [f if (f.width(), f.height()) == (w, h) else side_by_side([f, _blank(w - f.width(), h)]) for f in frames]


def _blank(width: int, height: int) -> QtGui.QImage:
    im = QtGui.QImage(max(width, 1), height, QtGui.QImage.Format.Format_RGB32)
    im.fill(QtGui.QColor("white"))
    return im


def mp4_bytes(frames: Sequence[QtGui.QImage], fps: float) -> bytes:
    """An H.264 MP4 of ``frames`` (needs the optional ``imageio-ffmpeg``)."""
    try:
        import imageio_ffmpeg
    except ImportError:
        raise AnimationError(translate("animation", "MP4 needs the optional imageio-ffmpeg (pip install 'attnviz[mp4]'; it bundles a GPL-licensed "
                                       "ffmpeg); GIF needs nothing more")) from None
    arrays = [to_rgb_array(f) for f in _same_size(frames)]
    h, w = arrays[0].shape[:2]
    even = [a[: h - h % 2, : w - w % 2] for a in arrays]  # H.264 wants even sides
    fd, tmp = tempfile.mkstemp(suffix=".mp4")
    os.close(fd)
    try:
        writer = imageio_ffmpeg.write_frames(tmp, (even[0].shape[1], even[0].shape[0]), fps=fps, macro_block_size=1)
        writer.send(None)
        for a in even:
            writer.send(np.ascontiguousarray(a))
        writer.close()
        return Path(tmp).read_bytes()
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_animation(frames: Sequence[QtGui.QImage], path: str | os.PathLike, fps: float = 2.0) -> Path:
    """Write ``frames`` to ``path`` (``.gif`` or ``.mp4``) atomically, with attnviz's mark;
    ``AnimationError`` in one line, also where ``path`` is a file attnviz did not write or a link
    (checked before the frames are encoded, and again when written)."""
    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise AnimationError(translate("animation", "an animation is a .gif or an .mp4 file, not {name!r}").format(name=path.name))
    if not frames:
        raise AnimationError(translate("animation", "no frames to write"))
    if not FPS_RANGE[0] <= fps <= FPS_RANGE[1]:
        raise AnimationError(translate("animation", "frames per second must be from {low:g} to {high:g}, not {fps:g}").format(
            low=FPS_RANGE[0], high=FPS_RANGE[1], fps=fps))
    _obeyed(check_output, path)
    data = gif_bytes(frames, fps) if fmt == "gif" else mp4_bytes(frames, fps)
    try:
        return _obeyed(write_output, path, data)
    except OSError as exc:
        raise AnimationError(translate("animation", "cannot write {path}: {reason}").format(path=path, reason=exc.strerror or exc)) from None


def progress_dialog(parent, text: str, object_name: str):
    """A window-modal progress dialog with Cancel, and ``tick(done, total)`` for a drawing loop:
    it moves the bar, lets the window paint, and answers ``False`` once the user cancelled."""
    from PySide6 import QtWidgets

    progress = QtWidgets.QProgressDialog(text, translate("animation", "Cancel"), 0, 1, parent)
    progress.setObjectName(object_name)
    progress.setWindowModality(QtCore.Qt.WindowModality.WindowModal)
    progress.setMinimumDuration(300)

    def tick(done: int, total: int) -> bool:
        progress.setMaximum(total)
        progress.setValue(done)
        QtCore.QCoreApplication.processEvents()
        return not progress.wasCanceled()

    return progress, tick


def animation_dialog(parent, bundle: Bundle, source: str, target: str, panel: Panel, theme: str, strategy,
                     size: tuple[int, int] = (900, 640)) -> Path | None:
    """Export → Animation: asks for a file, draws the frames with a cancellable progress dialog
    and writes them; ``None`` when cancelled. ``AnimationError`` (one line) when it cannot. From
    the walkthrough it first asks whether to play its stages or its decoding steps."""
    stages = False
    if panel.spec.name == "walkthrough":
        stages = ask_walkthrough_frames(parent)
        if stages is None:
            return None
    path = _ask_file(parent, translate("animation", "Export animation"), f"{panel.spec.name}{'-stages' if stages else ''}.gif")
    if not path:
        return None
    _obeyed(check_output, path)  # before any frame is drawn
    progress, tick = progress_dialog(parent, translate("animation", "Drawing the frames…"), "animationProgress")
    try:
        if stages:
            frames = stage_animation_frames(bundle, source, target, panel, size, theme, strategy, tick)
        else:
            frames = animation_frames(bundle, source, target, [panel], size, theme, strategy, tick)
    finally:
        progress.close()
    return None if frames is None else _remembered(write_animation(frames, path))


def ask_walkthrough_frames(parent) -> bool | None:
    """The walkthrough's animation: ``True`` one frame per stage of the query's row, ``False`` one per
    decoding step, ``None`` cancelled."""
    from PySide6 import QtWidgets

    box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Question, translate("animation", "Export animation"),
                                translate("animation", "Animate the walkthrough's stages (QKᵀ, ÷√d_k, mask, softmax, ·V) of the chosen "
                                          "query's row, or the walkthrough at every decoding step?"), parent=parent)
    box.setObjectName("walkthroughAnimationBox")
    stages = box.addButton(translate("animation", "Stages"), QtWidgets.QMessageBox.ButtonRole.AcceptRole)
    steps = box.addButton(translate("animation", "Decoding steps"), QtWidgets.QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QtWidgets.QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(stages)
    box.exec()
    clicked = box.clickedButton()
    return True if clicked is stages else False if clicked is steps else None


def snapshot_animation_dialog(parent, meta: dict, name: str, theme: str, probe: int = 0,
                              size: tuple[int, int] = (900, 640)) -> Path | None:
    """Export → Training Animation: asks for a file, draws probe ``probe``'s frame at every
    training snapshot with a cancellable progress dialog and writes them; ``None`` when cancelled.
    ``AnimationError`` (one line) for a model without snapshots."""
    total = len(meta.get("snapshots") or ())
    if not total:
        raise AnimationError(translate("animation", "this model has no training snapshots (its meta.json lists none)"))
    path = _ask_file(parent, translate("animation", "Export training animation"), f"{name}-training.gif")
    if not path:
        return None
    _obeyed(check_output, path)  # before any frame is drawn
    progress, tick = progress_dialog(parent, translate("animation", "Drawing the frames…"), "animationProgress")
    frames: list[QtGui.QImage] = []
    try:
        for frame in snapshot_frames(meta, probe, size, theme):
            frames.append(frame)
            if not tick(len(frames), total):
                return None
    finally:
        progress.close()
    return _remembered(write_animation(frames, path))


def _ask_file(parent, title: str, name: str) -> str:
    """The file an animation is written to, asked in a save dialog that starts with ``name`` in the
    folder of the last export (every export dialog's); empty when cancelled."""
    from PySide6 import QtWidgets

    from attnviz.qt.export.dialogs import last_export_dir

    path, _ = QtWidgets.QFileDialog.getSaveFileName(parent, title, str(last_export_dir() / name),
                                                    translate("animation", "GIF animation (*.gif);;MP4 video (*.mp4)"))
    return path


def _remembered(written: Path) -> Path:
    """``written``, its folder kept as where the next export dialog starts."""
    from attnviz.qt.export.dialogs import remember_export_dir

    remember_export_dir(written)
    return written
