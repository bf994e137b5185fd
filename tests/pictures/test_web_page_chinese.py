"""The web page follows the interface's language: written with 简体中文 installed (File → Export Web
Page in a Chinese window), its labels, its ``<html lang>`` and the words its script writes (the
step label, the matrix's title, the tooltip's names) are Chinese; with nothing installed
(``attnviz page``) they stay English. The page's data (tokens, numbers) is the same in both."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest
from PySide6 import QtGui

from attnviz.core.data.pieces import display_piece
from attnviz.qt.publish.web_page import PageAttention, PageFigure, PageStep, WebPage, page_data, page_html, png_bytes

ENGLISH_CHROME = ("Previous", "Next", "Step 1 of 2", "Decoded so far", "After step", "Hover over a matrix", "Made with attnviz",
                  "Source pieces", "Attention in")


def tiny_page() -> WebPage:
    """Two steps of cross-attention, one layer and head: the second step's row weighs 0.25, 0.75."""
    image = QtGui.QImage(200, 100, QtGui.QImage.Format.Format_RGB32)
    image.fill(QtGui.QColor("white"))
    weights = np.array([[[[0.5, 0.5], [0.25, 0.75]]]], dtype=np.float32)  # [layer, head, query, key]
    rows, keys = ("SOS", "▁The"), ("猫", "鱼")
    steps = tuple(PageStep(rows[: i + 1], {"cross": PageAttention(weights[:, :, : i + 1], rows[: i + 1], keys, i)}) for i in range(2))
    return WebPage("tiny", "猫吃鱼。", "", "贪心 解码", ("▁猫", "吃", "鱼", "。"), steps, figures=(PageFigure("交叉注意力", png_bytes(image), 200, 100),))


class VisibleText(HTMLParser):
    """The text a reader sees: everything outside <script>, <style> and <title>, plus titles and aria-labels."""

    def __init__(self, text: str):
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style")
        self.parts += [v for k, v in attrs if k in ("title", "aria-label", "alt") and v]

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def test_a_page_written_in_chinese_speaks_chinese(chinese):
    text = page_html(tiny_page())
    shown = " ".join(VisibleText(text).parts)
    assert '<html lang="zh-CN">' in text
    assert "上一步" in shown and "下一步" in shown and "第 1 步，共 2 步" in shown and "目前已解码" in shown and "第 2 步后：" in shown
    assert not [s for s in ENGLISH_CHROME if s in shown]
    assert "查询" in shown and "键" in shown and "权重" in shown  # the tooltip's names
    words = page_data(text)["words"]
    assert words["step"] == "第 {step} 步，共 {total} 步" and words["kinds"]["cross"] != "Cross-attention"
    assert words["head"] != "head {n}" and words["mean"] != "mean of heads"
    assert page_data(text)["steps"][0]["attention"]["cross"]["colLabels"] == ["猫", "鱼"]  # the data stay as they are


def test_a_page_written_without_a_language_stays_english(qapp):
    text = page_html(tiny_page())
    shown = " ".join(VisibleText(text).parts)
    assert '<html lang="en">' in text and all(s in shown for s in ENGLISH_CHROME)
    words = page_data(text)["words"]
    assert words["step"] == "Step {step} of {total}" and words["kinds"]["cross"] == "Cross-attention" and words["head"] == "head {n}"


HOVER = """<script>window.addEventListener("load", function () {
  var canvas = document.getElementById("matrix"), g = canvas.getAttribute("data-geometry").split(" ").map(Number);
  var box = canvas.getBoundingClientRect(), w = parseFloat(canvas.style.width);
  canvas.dispatchEvent(new MouseEvent("mousemove", {bubbles: true,
    clientX: box.left + (g[0] + 1.5 * g[2]) * box.width / w, clientY: box.top + (g[1] + 1.5 * g[2]) * box.width / w}));
  var text = function (id) { return document.getElementById(id).textContent; };
  document.body.setAttribute("data-probe", JSON.stringify([text("step-label"), text("matrix-title"),
                                                           text("tip-row"), text("tip-col"), text("tip-weight")]));
});</script></body>"""


@pytest.mark.slow
def test_in_chromium_the_script_writes_chinese(chinese, tmp_path):
    """The page's own script (the policy allows it by its hash, so it is the same script in every
    language) writes the step label and the matrix's title in Chinese, and the cell under the mouse's tokens and weight."""
    exe = shutil.which("chromium")
    assert exe, "chromium is missing: install Debian's chromium package (.ci/run does)"
    probe = tmp_path / "probe.html"  # the page plus a script that moves the mouse (the policy would refuse it: taken out here)
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page_html(tiny_page()))
    probe.write_text(text.replace("</body>", HOVER), encoding="utf-8")
    dom = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", f"{probe.as_uri()}#step=2"],
                         capture_output=True, timeout=60, check=True).stdout.decode("utf-8")
    label, title, row, col, weight = json.loads(html.unescape(re.search(r'data-probe="([^"]*)"', dom).group(1)))
    assert label == "第 2 步，共 2 步" and title.endswith(" · 第 2 步，共 2 步") and "Cross-attention" not in title
    assert (row, col, weight) == (display_piece("▁The"), "鱼", "0.750")
