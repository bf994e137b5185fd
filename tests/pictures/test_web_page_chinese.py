"""The web page follows the interface's language: written with 简体中文 installed (File → Export Web
Page in a Chinese window), its labels, its ``<html lang>`` and the words its script writes (the
step label, the hover read-out's names) are Chinese; with nothing installed (``attnviz page``)
they stay English. The page's data (tokens, dimension names, numbers) is the same in both."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
from PySide6 import QtGui

from attnviz.qt.i18n import install
from attnviz.qt.publish.web_page import PageFigure, PageStep, WebPage, page_data, page_html, png_bytes

ENGLISH_CHROME = ("Previous", "Next", "Step 1 of 2", "Decoded so far", "After step", "Hover over a matrix", "Made with attnviz",
                  "Source pieces", "Attention in")


@pytest.fixture
def chinese(qapp):
    assert install("zh_CN") == "zh_CN"
    try:
        yield
    finally:
        install("en")


def tiny_page() -> WebPage:
    """Two steps of one figure: a 1×2 matrix (weights 0.25, 0.75) filling a 200×100 picture."""
    image = QtGui.QImage(200, 100, QtGui.QImage.Format.Format_RGB32)
    image.fill(QtGui.QColor("white"))
    numbers = {"dims": ["query", "key"], "shape": [1, 2], "coords": {"query": ["▁The"], "key": ["猫", "鱼"]}, "values": {"weight": [0.25, 0.75]}}
    matrix = {"value": "weight", "tiles": [1, 1], "gap": 0, "q": 1, "k": 2, "axes": [], "fixed": None,
              "x0": 0, "y0": 0, "x1": 200, "y1": 100, "rows": 1, "cols": 2}
    figure = PageFigure("交叉注意力", png_bytes(image), 200, 100, numbers, (matrix,))
    steps = (PageStep(("SOS", "▁The"), (figure,)), PageStep(("SOS", "▁The", "▁cat"), (figure,)))
    return WebPage("tiny", "猫吃鱼。", "", "贪心 解码", ("▁猫", "吃", "鱼", "。"), steps)


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
    words = page_data(text)["words"]
    assert words["step"] == "第 {step} 步，共 {total} 步" and words["masked"] == "已掩码"
    assert (words["names"]["query"], words["names"]["key"], words["names"]["weight"]) == ("查询", "键", "权重")
    assert page_data(text)["steps"][0]["figures"][0]["numbers"]["dims"] == ["query", "key"]  # the data keep their names


def test_a_page_written_without_a_language_stays_english(qapp):
    text = page_html(tiny_page())
    shown = " ".join(VisibleText(text).parts)
    assert '<html lang="en">' in text and all(s in shown for s in ENGLISH_CHROME)
    words = page_data(text)["words"]
    assert words["step"] == "Step {step} of {total}" and words["masked"] == "masked" and words["names"]["query"] == "query"


HOVER = """<script>window.addEventListener("load", function () {
  var fig = document.querySelector("figure[data-figure]"), img = fig.querySelector("img:not([hidden])"), box = img.getBoundingClientRect();
  fig.querySelector(".frames").dispatchEvent(new MouseEvent("mousemove", {bubbles: true,
    clientX: box.left + 150 * box.width / img.naturalWidth, clientY: box.top + 50 * box.height / img.naturalHeight}));
  document.body.setAttribute("data-probe", JSON.stringify([document.getElementById("step-label").textContent,
                                                           fig.querySelector(".readout").textContent]));
});</script></body>"""


@pytest.mark.slow
def test_in_chromium_the_script_writes_chinese(chinese, tmp_path):
    """The page's own script (the policy allows it by its hash, so it is the same script in every
    language) writes the step label and the read-out of the cell under the mouse in Chinese."""
    exe = shutil.which("chromium")
    assert exe, "chromium is missing: install Debian's chromium package (.ci/run does)"
    probe = tmp_path / "probe.html"  # the page plus a script that moves the mouse (the policy would refuse it: taken out here)
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page_html(tiny_page()))
    probe.write_text(text.replace("</body>", HOVER), encoding="utf-8")
    dom = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", f"{probe.as_uri()}#step=2"],
                         capture_output=True, timeout=60, check=True).stdout.decode("utf-8")
    label, readout = json.loads(html.unescape(re.search(r'data-probe="([^"]*)"', dom).group(1)))
    assert label == "第 2 步，共 2 步"
    assert readout == "查询 ▁The · 键 鱼 → 权重 0.7500"
