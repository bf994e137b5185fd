"""The export dialogs and their errors in 简体中文 (the window walk of test_i18n opens no dialog):
the figure dialog's labels, formats and note are Chinese, the file patterns stay as they are, and
an export refused says why in Chinese."""

from __future__ import annotations

import pytest
from test_i18n import english_words, widget_texts

from attnviz.qt.export.dialogs import FigureExportDialog
from attnviz.qt.export.files import ExportError, render_view_to_file
from attnviz.qt.train.figure import TrainingFigure


@pytest.fixture
def figure(qtbot, chinese):
    view = TrainingFigure()
    qtbot.addWidget(view)
    view.resize(600, 400)
    return view


def test_the_figure_dialog_is_chinese(qtbot, figure):
    dialog = FigureExportDialog(figure)
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == "导出图形"
    formats = [dialog.format_combo.itemText(i) for i in range(dialog.format_combo.count())]
    assert formats == ["PNG 图像 (*.png)", "SVG 矢量图 (*.svg)", "PDF 文档 (*.pdf)"]
    assert [dialog.format_combo.itemData(i) for i in range(dialog.format_combo.count())] == ["png", "svg", "pdf"]
    bad = [(where, text) for where, text in widget_texts(dialog) if english_words(text, {"png", "svg", "pdf", "dpi"})]
    assert not bad, bad


def test_a_refused_export_says_why_in_chinese(figure, tmp_path):
    with pytest.raises(ExportError) as err:
        render_view_to_file(figure, tmp_path / "figure")
    assert str(err.value) == f"无法导出到 {tmp_path / 'figure'}：请给出以 .png, .svg, .pdf 结尾的文件名"
