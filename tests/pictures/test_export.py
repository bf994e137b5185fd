"""Exports: PNG pixels (a 4×4 asymmetric matrix catches a transpose), SVG text, PDF pages,
CSV/NPZ data, atomic writes, export of all heads."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import threading
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

import attnviz.core.atomic as atomic_mod
from attnviz.core.analysis.figure_data import AttentionData
from attnviz.core.data.pieces import display_piece
from attnviz.qt.export.dialogs import FigureExportDialog
from attnviz.qt.export.files import ExportError, atomic_write_bytes, export_all_heads, export_view_data, render_view_to_bytes, render_view_to_file
from attnviz.qt.sample_data import sample_attention, sample_attention_sets, sample_masks
from attnviz.qt.views.attention_grid import QtAttentionGridView
from attnviz.qt.views.head_detail import QtHeadDetailView
from attnviz.qt.views.lines import QtLinesView
from attnviz.qt.views.masks import QtMasksView

QUERIES = ("SOS", "▁I", "▁eat", "鱼")
KEYS = ("我", "吃", "鱼", "。")
# Asymmetric: M[r, c] != M[c, r] wherever a transpose would show.
MATRIX = np.array(
    [[0.95, 0.05, 0.00, 0.00],
     [0.10, 0.20, 0.70, 0.00],
     [0.00, 0.60, 0.10, 0.30],
     [0.40, 0.00, 0.25, 0.35]], dtype=np.float32)
SVG_NS = "{http://www.w3.org/2000/svg}"


def _head_view(qtbot, theme="light") -> QtHeadDetailView:
    view = QtHeadDetailView(theme=theme)
    qtbot.addWidget(view)
    view.resize(640, 560)
    view.set_data(AttentionData("cross", MATRIX[None, None], QUERIES, KEYS, highlight=None))
    return view


def _qimage(data: bytes) -> QtGui.QImage:
    image = QtGui.QImage()
    assert image.loadFromData(data, "PNG"), "the PNG does not decode"
    return image.convertToFormat(QtGui.QImage.Format.Format_RGB32)


def _pixel(image: QtGui.QImage, x: float, y: float) -> np.ndarray:
    c = image.pixelColor(int(round(x)), int(round(y)))
    return np.array([c.red(), c.green(), c.blue()])


def _probe_point(view: QtHeadDetailView, r: int, c: int, scale: float) -> tuple[float, float]:
    """Image coordinates of a point inside cell (r, c), away from the number written at its centre."""
    canvas = view.figure_canvas()
    source = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    p = view.plot.getViewBox().mapViewToScene(QtCore.QPointF(c - 0.32, r - 0.3))
    return (p.x() - source.x()) * scale, (p.y() - source.y()) * scale


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_png_known_pixels_catch_a_transpose(qtbot, scale):
    view = _head_view(qtbot)
    data = render_view_to_bytes(view, "png", dpi=96 * scale)
    image = _qimage(data)
    size = view.figure_canvas().viewport().size()
    assert (image.width(), image.height()) == (round(size.width() * scale), round(size.height() * scale))
    expected = view.plot.cell_colors(MATRIX)[..., :3].astype(int)
    for r in range(4):
        for c in range(4):
            got = _pixel(image, *_probe_point(view, r, c, scale))
            assert np.abs(got - expected[r, c]).max() <= 3, f"cell ({r}, {c}): {got} != {expected[r, c]}"
    # the known asymmetric pair: (0, 1) is pale, (1, 0) pale-ish too, but (1, 2) dark and (2, 1) lighter
    dark = _pixel(image, *_probe_point(view, 1, 2, scale))
    light = _pixel(image, *_probe_point(view, 2, 1, scale))
    assert dark.sum() < light.sum()
    # not blank: the figure has the background, the colour map and text
    arr = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(image.height(), image.bytesPerLine())
    assert len(np.unique(arr[:, : image.width() * 4].reshape(-1, 4), axis=0)) > 50


def test_png_width_and_dpi(qtbot, tmp_path):
    view = _head_view(qtbot)
    out = render_view_to_file(view, tmp_path / "wide.png", width=1500)
    image = QtGui.QImage(str(out))
    assert image.width() == 1500
    out = render_view_to_file(view, tmp_path / "print.png", dpi=300)
    image = QtGui.QImage(str(out))
    assert round(image.dotsPerMeterX() * 0.0254) == 300
    assert image.width() == round(view.figure_canvas().viewport().width() * 300 / 96)


def test_svg_is_vector_with_text_labels(qtbot, tmp_path):
    view = _head_view(qtbot)
    out = render_view_to_file(view, tmp_path / "head.svg")
    root = ET.parse(out).getroot()
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]
    joined = "\n".join(texts)
    for label in map(display_piece, QUERIES + KEYS):
        assert label in texts, f"token {label!r} is not an SVG <text>"
    assert "Cross-attention · layer 1 · head 1" in joined
    assert "attention weight" in joined and "0.95" in joined  # colour bar label, cell values
    # the 16 cells are vector shapes; the only bitmap is the colour bar's gradient
    images = list(root.iter(f"{SVG_NS}image"))
    assert len(images) == 1
    parent = {child: el for el in root.iter() for child in el}
    shapes = [el for el in root.iter() if el.tag in (f"{SVG_NS}path", f"{SVG_NS}rect", f"{SVG_NS}polygon")]
    fills = {el.get("fill") or parent[el].get("fill") for el in shapes}
    expected = {QtGui.QColor(*map(int, rgb)).name() for rgb in view.plot.cell_colors(MATRIX)[..., :3].reshape(-1, 3)}
    assert expected <= fills
    family = next(t.get("font-family") for t in root.iter(f"{SVG_NS}text"))
    assert "WenQuanYi Micro Hei" in family and family.endswith("sans-serif")


@pytest.mark.skipif(not (shutil.which("pdftotext") and shutil.which("pdftoppm")), reason="needs poppler-utils (pdftotext, pdftoppm)")
def test_pdf_has_a_page_and_chinese_text(qtbot, tmp_path):
    view = _head_view(qtbot)
    out = render_view_to_file(view, tmp_path / "head.pdf")
    data = out.read_bytes()
    assert data.startswith(b"%PDF")
    assert b"/Type /Page" in data or b"/Type/Page" in data
    text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True, check=True).stdout
    assert "我" in text and "SOS" in text and "attention weight" in text
    subprocess.run(["pdftoppm", "-r", "40", "-png", "-singlefile", str(out), str(tmp_path / "page")], check=True)
    page = QtGui.QImage(str(tmp_path / "page.png"))
    assert not page.isNull() and page.width() > 100
    colours = {page.pixel(x, y) for x in range(0, page.width(), 5) for y in range(0, page.height(), 5)}
    assert len(colours) > 10  # not a blank page


@pytest.mark.parametrize("view_cls", [QtAttentionGridView, QtHeadDetailView, QtLinesView, QtMasksView])
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_every_view_exports_every_format(qtbot, tmp_path, view_cls, fmt):
    view = view_cls()
    qtbot.addWidget(view)
    view.resize(700, 560)
    view.set_data(sample_masks() if view_cls is QtMasksView else sample_attention_sets())
    out = render_view_to_file(view, tmp_path / f"fig.{fmt}")
    data = out.read_bytes()
    if fmt == "png":
        assert not _qimage(data).isNull()
    elif fmt == "svg":
        texts = {"".join(t.itertext()) for t in ET.fromstring(data).iter(f"{SVG_NS}text")}
        expected = {"layer 1", "head 4"} if view_cls is QtAttentionGridView else {"我", "鱼"}
        assert expected <= texts
    else:
        assert data.startswith(b"%PDF")
    assert [p.name for p in tmp_path.iterdir()] == [f"fig.{fmt}"]  # no temporary file left


def test_hover_outlines_stay_out_of_exports(qtbot):
    view = _head_view(qtbot)
    view.plot.hover_cell(1, 1)
    assert view.plot.hover_marker.isVisible()
    svg = render_view_to_bytes(view, "svg").decode()
    assert view.plot.hover_marker.isVisible()  # restored after the export
    colour = QtGui.QColor(view.theme.selection).name()
    assert f'stroke="{colour}"' not in svg


def _csv_body(text: str) -> io.StringIO:
    """The CSV without its commented metadata lines, which must come first."""
    lines = text.splitlines(keepends=True)
    n_meta = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    assert n_meta >= 1 and all(not line.startswith("#") for line in lines[n_meta:])
    return io.StringIO("".join(lines[n_meta:]))


def test_csv_and_npz_data(qtbot, tmp_path):
    view = _head_view(qtbot)
    out = export_view_data(view, tmp_path / "head.csv")
    rows = list(csv.reader(_csv_body(out.read_text(encoding="utf-8"))))
    assert rows[0] == ["query_index", "query", "key_index", "key", "weight"]
    assert len(rows) == 1 + 16
    cell = {(int(r[0]), int(r[2])): (r[1], r[3], float(r[4])) for r in rows[1:]}
    assert cell[(1, 2)] == ("▁I", "鱼", pytest.approx(0.7))
    assert cell[(2, 1)] == ("▁eat", "吃", pytest.approx(0.6))
    out = export_view_data(view, tmp_path / "head.npz")
    with np.load(out, allow_pickle=False) as z:
        np.testing.assert_array_equal(z["weight"], MATRIX)
        assert tuple(z["query_labels"]) == QUERIES and tuple(z["key_labels"]) == KEYS
        assert tuple(z["dims"]) == ("query", "key")


def test_mask_data_keeps_minus_infinity(qtbot, tmp_path):
    view = QtMasksView()
    qtbot.addWidget(view)
    view.set_data(sample_masks())
    rows = list(csv.DictReader(_csv_body(export_view_data(view, tmp_path / "m.csv").read_text(encoding="utf-8"))))
    first = next(r for r in rows if r["query_index"] == "0" and r["key_index"] == "1")
    assert first["mask"] == "-inf" and first["masked_scores"] == "-inf" and float(first["weights"]) == 0.0
    with np.load(export_view_data(view, tmp_path / "m.npz"), allow_pickle=False) as z:
        assert np.isneginf(z["look_ahead"][0, 1]) and "src_padding" in z.files


def test_grid_data_is_four_dimensional(qtbot, tmp_path):
    view = QtAttentionGridView()
    qtbot.addWidget(view)
    view.set_data(sample_attention("decoder", n_layers=2, n_heads=3))
    rows = list(csv.reader(_csv_body(export_view_data(view, tmp_path / "g.csv").read_text(encoding="utf-8"))))
    assert rows[0][:4] == ["layer_index", "layer", "head_index", "head"]
    assert len(rows) == 1 + 2 * 3 * 6 * 6


# -- destinations -------------------------------------------------------------------------
def test_invalid_destinations_raise_one_error_and_leave_nothing(qtbot, tmp_path):
    view = _head_view(qtbot)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    bad = [
        tmp_path / "missing" / "fig.png",  # no such folder
        a_file / "fig.png",  # the "folder" is a file
        tmp_path,  # a folder, not a file
        tmp_path / "fig.bmp",  # unknown format
        tmp_path / "fig",  # no format at all
    ]
    for path in bad:
        with pytest.raises(ExportError) as info:
            render_view_to_file(view, path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ExportError):
        export_view_data(view, tmp_path / "data.xlsx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "fig.svg"
    target.write_bytes(b"old")

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_mod.os, "replace", failing_replace)
    with pytest.raises(ExportError, match="No space left"):
        atomic_write_bytes(target, b"new contents")
    assert target.read_bytes() == b"old"  # the old file is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["fig.svg"]


# -- all heads ----------------------------------------------------------------------------------
def test_export_all_heads_with_progress(qtbot, tmp_path):
    data = sample_attention("cross", n_layers=2, n_heads=3)
    calls = []
    written = export_all_heads(QtHeadDetailView, data, tmp_path / "heads", "svg", progress=lambda d, t, p: calls.append((d, t, p.name)))
    names = sorted(p.name for p in (tmp_path / "heads").iterdir())
    assert names == sorted(f"cross_layer{layer}_head{h}.svg" for layer in (1, 2) for h in (1, 2, 3))
    assert [c[:2] for c in calls] == [(i, 6) for i in range(1, 7)]
    assert [p.name for p in written] == [c[2] for c in calls]
    title = "".join(ET.parse(tmp_path / "heads" / "cross_layer2_head3.svg").getroot().find(f"{SVG_NS}title").itertext())
    assert "layer 2 · head 3" in title


def test_export_all_heads_can_be_cancelled(qtbot, tmp_path):
    data = sample_attention("encoder", n_layers=3, n_heads=4)
    stop = threading.Event()

    def progress(done, total, path):
        if done == 3:
            stop.set()

    written = export_all_heads(QtHeadDetailView, data, tmp_path, "png", progress=progress, cancel=stop)
    assert len(written) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)
    assert all(not _qimage(p.read_bytes()).isNull() for p in written)


def test_export_all_heads_into_a_file_fails_cleanly(qtbot, tmp_path):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    with pytest.raises(ExportError):
        export_all_heads(QtHeadDetailView, sample_attention("cross"), a_file, "png")


# -- dialog and fonts -----------------------------------------------------------------------------
def test_export_dialog_without_the_file_chooser(qtbot, tmp_path):
    view = _head_view(qtbot)
    dialog = FigureExportDialog(view)
    qtbot.addWidget(dialog)
    dialog.path_edit.setText(str(tmp_path / "chosen.png"))
    dialog.width_spin.setValue(900)
    assert dialog.dpi_spin.value() == round(96 * 900 / view.figure_canvas().viewport().width())
    out = dialog.export()
    assert QtGui.QImage(str(out)).width() == 900
    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData("pdf"))
    assert dialog.path_edit.text().endswith("chosen.pdf") and not dialog.width_spin.isEnabled()
    assert dialog.export().read_bytes().startswith(b"%PDF")


def test_an_image_too_large_to_draw_is_refused_in_one_line(qtbot, monkeypatch, tmp_path):
    """Checked on the figure as drawn (a headless figure may grow past the size it was given)."""
    from attnviz.qt.export.files import ExportError, render_view_to_file
    from attnviz.qt.widgets import figures

    view = _head_view(qtbot)
    monkeypatch.setattr(figures, "MAX_IMAGE_PIXELS", 10_000)
    with pytest.raises(ExportError, match="megapixels") as info:
        render_view_to_file(view, tmp_path / "big.png", width=2000)
    assert "\n" not in str(info.value) and not (tmp_path / "big.png").exists()
