"""One drawing code for the screen and for files.

Every view draws into a pyqtgraph scene (its *figure canvas*). On screen Qt paints that
scene into the window; to export, :func:`paint_figure` renders the very same scene into
another paint device: a ``QImage`` (PNG), a ``QSvgGenerator`` (SVG) or a ``QPdfWriter``
(PDF). Nothing is redrawn by a second code path, so a file looks like the view.

On vector devices the matrix items (:class:`attnviz.qt.widgets.matrix_image.MatrixImageItem`) paint
their cells as filled rectangles (:func:`paint_cells_vector`) instead of an embedded
bitmap, up to :data:`VECTOR_CELL_LIMIT` cells; larger matrices are embedded as a
bitmap upscaled without smoothing, so no viewer blurs the cell edges. Token labels,
titles and colour-bar ticks are text on every device (``<text>`` in SVG).

A *figure view* is any widget with::

    theme                      a attnviz.qt.widgets.colormaps.Theme
    figure_canvas()            the QGraphicsView whose scene is the figure
    figure_title()             a one-line title (SVG <title>, PDF title, default file name)
    figure_data()              the FigureData behind the figure (CSV / NPZ export)
    export_mode()              a context manager that hides transient items (hover outlines)

and may have ``figure_rect()``: the part of the scene that holds the drawing (``None``: the
whole canvas), so a file is cropped to the content.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Protocol

import numpy as np
from PySide6 import QtCore, QtGui, QtSvg, QtWidgets

from attnviz.qt.i18n import translate
from attnviz.qt.widgets.colormaps import CSS_FONT_FAMILY, Theme

#: Matrices with at most this many cells are drawn as vector rectangles in SVG and PDF.
VECTOR_CELL_LIMIT = 64 * 64
#: Larger matrices are embedded as a bitmap at least this many pixels on its long side.
_EMBED_MIN_PIXELS = 1600
_SCREEN_DPI = 96.0


class FigureView(Protocol):
    theme: Theme

    def figure_canvas(self) -> QtWidgets.QGraphicsView: ...

    def figure_title(self) -> str: ...

    def figure_data(self) -> Any: ...  # the view's FigureData (attnviz.core.analysis.figure_data)

    def export_mode(self) -> contextlib.AbstractContextManager: ...


# ---------------------------------------------------------------------------
# Painting matrices on any device
# ---------------------------------------------------------------------------
def is_vector_painter(painter: QtGui.QPainter) -> bool:
    """True when ``painter`` writes SVG or PDF (or prints), where cells should stay vector."""
    engine = painter.paintEngine()
    if engine is None:
        return False
    return engine.type() in (QtGui.QPaintEngine.Type.SVG, QtGui.QPaintEngine.Type.Pdf)


def lut_indices(values: np.ndarray, levels: tuple[float, float], n: int) -> np.ndarray:
    """Lookup-table index of each finite value, as pyqtgraph maps levels onto a LUT."""
    lo, hi = float(levels[0]), float(levels[1])
    scale = n / (hi - lo) if hi > lo else 0.0
    with np.errstate(invalid="ignore"):
        idx = np.floor((values - lo) * scale)
    return np.clip(np.nan_to_num(idx, nan=0.0, posinf=n - 1, neginf=0), 0, n - 1).astype(np.intp)


def paint_cells_vector(
    painter: QtGui.QPainter, values: np.ndarray, lut: np.ndarray, levels: tuple[float, float]
) -> None:
    """Paint ``values`` [row, col] as one filled rectangle per finite cell.

    Cell (r, c) covers [c, c+1] × [r, r+1] in the painter's coordinates. Cells of one colour
    are drawn together; each is widened by a hair so viewers show no seams between cells.
    """
    finite = np.isfinite(values)
    idx = lut_indices(values, levels, len(lut))
    eps = 0.02
    painter.save()
    painter.setPen(QtCore.Qt.PenStyle.NoPen)
    for colour_index in np.unique(idx[finite]):
        rows, cols = np.nonzero(finite & (idx == colour_index))
        rgba = lut[colour_index]
        alpha = int(rgba[3]) if len(rgba) > 3 else 255
        painter.setBrush(QtGui.QColor(int(rgba[0]), int(rgba[1]), int(rgba[2]), alpha))
        painter.drawRects([QtCore.QRectF(float(c), float(r), 1 + eps, 1 + eps) for r, c in zip(rows, cols)])
    painter.restore()


def paint_qimage_unsmoothed(painter: QtGui.QPainter, qimage: QtGui.QImage, rect: QtCore.QRectF) -> None:
    """Draw a small bitmap into ``rect`` after nearest-neighbour upscaling (viewers smooth small images)."""
    long_side = max(qimage.width(), qimage.height(), 1)
    factor = max(1, int(np.ceil(_EMBED_MIN_PIXELS / long_side)))
    if factor > 1:
        qimage = qimage.scaled(
            qimage.width() * factor,
            qimage.height() * factor,
            QtCore.Qt.AspectRatioMode.IgnoreAspectRatio,
            QtCore.Qt.TransformationMode.FastTransformation,
        )
    painter.drawImage(rect, qimage)


# ---------------------------------------------------------------------------
# Rendering a figure view
# ---------------------------------------------------------------------------
def ensure_laid_out(view: QtWidgets.QWidget) -> None:
    """Make sure ``view`` and its canvas have their final geometry before rendering.

    A top-level view that was never shown (headless export) is shown off screen; then all
    pending layout requests are processed (pyqtgraph lays out its scene lazily).
    """
    if not view.isVisible():
        if view.isWindow():
            view.setAttribute(QtCore.Qt.WidgetAttribute.WA_DontShowOnScreen, True)
            view.show()
        else:
            view.grab()  # sends the pending resize events down the hidden widget tree
    for _ in range(3):
        QtCore.QCoreApplication.sendPostedEvents()
    if view.isWindow():
        _grow_to_content(view)
    canvas = view.figure_canvas()
    scene = canvas.scene()
    if hasattr(scene, "prepareForPaint"):
        scene.prepareForPaint()


def _grow_to_content(view: QtWidgets.QWidget) -> None:
    """A figure drawn on its own (headless export) is never cut: when its plots need more room
    than the canvas has, the view grows by the difference."""
    canvas = view.figure_canvas()
    layout_item = getattr(canvas, "ci", None)
    if layout_item is None:
        return
    for _ in range(4):  # a resize can move what the layout needs (plots wrap, scroll bars come and go)
        need = layout_item.effectiveSizeHint(QtCore.Qt.SizeHint.MinimumSize).expandedTo(layout_item.geometry().size())
        have = canvas.viewport().size()
        grow_w, grow_h = max(0, int(need.width()) - have.width()), max(0, int(need.height()) - have.height())
        if not (grow_w or grow_h):
            return
        view.resize(view.width() + grow_w, view.height() + grow_h)
        for _ in range(3):
            QtCore.QCoreApplication.sendPostedEvents()


def figure_source(view: FigureView) -> QtCore.QRectF:
    """The scene rectangle a file shows: the canvas as shown, cropped to the view's
    ``figure_rect()`` when it has one."""
    canvas = view.figure_canvas()
    whole = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    crop = getattr(view, "figure_rect", None)  # optional in the protocol (the training figure has none)
    rect = crop() if crop is not None else None
    if rect is None or rect.isEmpty():
        return whole
    inside = whole.intersected(rect)
    return inside if not inside.isEmpty() else whole


def figure_size(view: FigureView) -> QtCore.QSize:
    """The figure's logical size in pixels (1 px = 1/96 inch): the canvas as shown, cropped."""
    return figure_source(view).size().toSize()


def paint_figure(view: FigureView, painter: QtGui.QPainter, target: QtCore.QRectF) -> None:
    """Render the view's figure into ``target`` of any paint device."""
    canvas = view.figure_canvas()
    source = figure_source(view)
    with view.export_mode():
        painter.fillRect(target, QtGui.QColor(view.theme.background))
        painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        canvas.scene().render(painter, target, source, QtCore.Qt.AspectRatioMode.IgnoreAspectRatio)


def render_qimage(view: FigureView, width: int | None = None, dpi: float | None = None) -> QtGui.QImage:
    """The figure as an image: ``width`` pixels wide (aspect kept), or scaled to ``dpi``.

    With neither, one pixel per logical pixel (96 dpi). The image's DPI metadata is ``dpi``
    when given, else 96 × the scale, so its printed size stays the size on screen.
    """
    ensure_laid_out(view)
    size = figure_size(view)
    if size.width() <= 0 or size.height() <= 0:
        raise ValueError(translate("figures", "the view has no size to render"))
    if width is not None:
        if width <= 0:
            raise ValueError(translate("figures", "width must be positive, not {width}").format(width=width))
        scale = width / size.width()
    elif dpi is not None:
        if dpi <= 0:
            raise ValueError(translate("figures", "dpi must be positive, not {dpi}").format(dpi=dpi))
        scale = dpi / _SCREEN_DPI
    else:
        scale = 1.0
    w, h = max(1, round(size.width() * scale)), max(1, round(size.height() * scale))
    if w * h > MAX_IMAGE_PIXELS:  # checked on the figure as it is drawn (a headless figure may grow to its plots)
        raise ValueError(translate("figures", "the image would be {w}×{h} pixels, more than {limit} megapixels: "
                                   "choose a smaller width, dpi or size").format(w=w, h=h, limit=MAX_IMAGE_PIXELS // 1_000_000))
    image = QtGui.QImage(w, h, QtGui.QImage.Format.Format_RGB32)
    image.fill(QtGui.QColor(view.theme.background))
    painter = QtGui.QPainter(image)  # paint at the screen's DPI, so point sizes match the view
    try:
        paint_figure(view, painter, QtCore.QRectF(0, 0, w, h))
    finally:
        painter.end()
    meta_dpi = dpi if dpi is not None else _SCREEN_DPI * scale
    dots_per_metre = round(meta_dpi / 0.0254)
    image.setDotsPerMeterX(dots_per_metre)
    image.setDotsPerMeterY(dots_per_metre)
    return image


def _qbuffer() -> QtCore.QBuffer:
    buf = QtCore.QBuffer()
    buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
    return buf


def render_png_bytes(view: FigureView, width: int | None = None, dpi: float | None = None) -> bytes:
    image = render_qimage(view, width=width, dpi=dpi)
    buf = _qbuffer()
    if not image.save(buf, "PNG"):
        raise RuntimeError("Qt could not encode the PNG image")
    return bytes(buf.data())


MAX_IMAGE_PIXELS = 100_000_000  # 400 MB of RGB32: a PNG larger than this is refused, not allocated

_FONT_FAMILY_ATTR = re.compile(r'font-family="[^"]*"')


_GROUP = re.compile(r'(<g\b[^>]*?transform="matrix\(([^)]*)\)"[^>]*>)(.*?)(</g>)', re.S)
_SCALE_FREE = re.compile(r'<(rect|path|polyline|polygon)\b([^>]*?)\svector-effect="non-scaling-stroke"([^>]*?)(/?)>')
_NUMBER = r'-?[\d.]+(?:[eE][-+]?\d+)?'  # as Qt writes one: 1.28e+06 too (a bar a million wide)
_PAIR = re.compile(rf'({_NUMBER}),({_NUMBER})')
_ATTR = re.compile(rf'\s(x|y|width|height)="({_NUMBER})"')


def _matrix_map(m: tuple[float, ...]):
    a, b, c, d, e, f = m
    return lambda x, y: (a * x + c * y + e, b * x + d * y + f)


def _inverse(m: tuple[float, ...]) -> tuple[float, ...] | None:
    a, b, c, d, e, f = m
    det = a * d - b * c
    if abs(det) < 1e-12:
        return None
    return (d / det, -b / det, -c / det, a / det, (c * f - d * e) / det, (b * e - a * f) / det)


def _device_shape(tag: str, attrs: str, m: tuple[float, ...]) -> str | None:
    """A rect, path or polyline's outline in device coordinates, as a path (``None``: unknown)."""
    to_device = _matrix_map(m)

    def pair(match: re.Match) -> str:
        x, y = to_device(float(match.group(1)), float(match.group(2)))
        return f"{x:.6g},{y:.6g}"

    if tag == "rect":
        v = {k: float(val) for k, val in _ATTR.findall(attrs)}
        x, y, w, h = v.get("x", 0.0), v.get("y", 0.0), v.get("width", 0.0), v.get("height", 0.0)
        pts = [to_device(px, py) for px, py in ((x, y), (x + w, y), (x + w, y + h), (x, y + h))]
        rest = _ATTR.sub("", attrs)
        return f'<path{rest} d="M{" L".join(f"{px:.6g},{py:.6g}" for px, py in pts)} Z"'
    if tag == "path" or tag in ("polyline", "polygon"):
        return _PAIR.sub(pair, attrs) if ("d=" in attrs or "points=" in attrs) else None
    return None


def _unscaled_group(match: re.Match) -> str:
    """One ``<g transform=matrix(M)>``: each outline drawn with a non-scaling (cosmetic) pen gets its
    geometry in device coordinates and the transform M⁻¹, so no viewer scales its stroke."""
    head, matrix, body, tail = match.groups()
    try:
        m = tuple(float(v) for v in matrix.replace(" ", ",").split(",") if v)
    except ValueError:
        return match.group(0)
    inv = _inverse(m) if len(m) == 6 else None
    if inv is None:
        return match.group(0)

    def element(em: re.Match) -> str:
        tag, before, after, close = em.groups()
        shape = _device_shape(tag, before + after, m)
        if shape is None:
            return em.group(0)
        if tag != "rect":
            shape = f"<{tag}{shape}"
        return f'{shape} transform="matrix({",".join(f"{v:.9g}" for v in inv)})"{close}>'

    return head + _SCALE_FREE.sub(element, body) + tail


def scale_free_strokes(svg: str) -> str:
    """Qt writes a cosmetic pen inside a scaled group as ``vector-effect="non-scaling-stroke"``,
    which librsvg and ImageMagick ignore (they draw the stroke scaled: wide bands over the figure).
    Write those outlines so that every viewer draws them the same, in device coordinates."""
    return _GROUP.sub(_unscaled_group, svg)


def render_svg_bytes(view: FigureView) -> bytes:
    """The figure as SVG: text stays ``<text>``, small matrices are vector rectangles."""
    ensure_laid_out(view)
    size = figure_size(view)
    canvas = view.figure_canvas()
    buf = _qbuffer()
    gen = QtSvg.QSvgGenerator()
    gen.setOutputDevice(buf)
    gen.setSize(size)
    gen.setViewBox(QtCore.QRect(0, 0, size.width(), size.height()))
    gen.setResolution(canvas.logicalDpiX())  # text sizes in points must match the screen's
    gen.setTitle(view.figure_title())
    gen.setDescription("attnviz figure")
    painter = QtGui.QPainter(gen)
    try:
        paint_figure(view, painter, QtCore.QRectF(0, 0, size.width(), size.height()))
    finally:
        painter.end()
    text = bytes(buf.data()).decode("utf-8")
    # Qt writes only the first family; give viewers the whole fallback list (CJK included).
    text = _FONT_FAMILY_ATTR.sub(f'font-family="{CSS_FONT_FAMILY}"', text)
    return scale_free_strokes(text).encode("utf-8")


def render_pdf_bytes(view: FigureView) -> bytes:
    """The figure as a one-page PDF of the figure's size: vector shapes and embedded fonts."""
    ensure_laid_out(view)
    size = figure_size(view)
    dpi = view.figure_canvas().logicalDpiX() or int(_SCREEN_DPI)
    buf = _qbuffer()
    writer = QtGui.QPdfWriter(buf)
    writer.setResolution(dpi)
    page = QtGui.QPageSize(
        QtCore.QSizeF(size.width() * 72.0 / dpi, size.height() * 72.0 / dpi),
        QtGui.QPageSize.Unit.Point,
        "",
        QtGui.QPageSize.SizeMatchPolicy.ExactMatch,
    )
    writer.setPageSize(page)
    writer.setPageMargins(QtCore.QMarginsF(0, 0, 0, 0))
    writer.setTitle(view.figure_title())
    writer.setCreator("attnviz")
    painter = QtGui.QPainter(writer)
    try:
        target = QtCore.QRectF(0, 0, writer.width(), writer.height())
        paint_figure(view, painter, target)
    finally:
        painter.end()
    return bytes(buf.data())


def render_figure_bytes(view: FigureView, fmt: str, width: int | None = None, dpi: float | None = None) -> bytes:
    """The view's figure in ``fmt`` (``png``, ``svg`` or ``pdf``) as bytes."""
    fmt = fmt.lower()
    if fmt == "png":
        return render_png_bytes(view, width=width, dpi=dpi)
    if fmt == "svg":
        return render_svg_bytes(view)
    if fmt == "pdf":
        return render_pdf_bytes(view)
    raise ValueError(f"unknown figure format {fmt!r}; use png, svg or pdf")
