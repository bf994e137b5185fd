"""The tour's text on the web page: File → Export Web Page while the tour is open puts each stop
it has explained under the figures, its title and its text exactly as the panel showed them;
``attnviz page --tour`` puts the stops named, explained by the tour itself in an unseen window;
a stop's text is plain text on the page (escaped), and an unknown stop is refused in one line."""

from __future__ import annotations

import argparse
import re
import string
from dataclasses import replace
from html.parser import HTMLParser

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from attnviz.commands import page as page_command
from attnviz.core.bundle import load_bundle
from attnviz.core.tour_data import fill, load_tour, parse_tour
from attnviz.errors import AttnvizError
from attnviz.paths import default_model
from attnviz.qt.main_window import MainWindow
from attnviz.qt.publish.web_page import PAGE_NAME, PageFigure, PageNote, PageStep, WebPage, page_data, page_html, png_bytes
from attnviz.qt.tour import start_tour

SRC = "猫吃鱼。"
HOSTILE = "<script>alert(1)</script>"
READY_MS = 180000


def run_page(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="attnviz page")
    page_command.add_arguments(parser)
    return page_command.run(parser.parse_args(argv))


class Notes(HTMLParser):
    """The page's notes: each ``<article>`` under ``#notes`` as ``{"title", "text", "lang",
    "measured_on"}`` (texts unescaped as a browser shows them); every start tag seen, in order."""

    def __init__(self, text: str):
        super().__init__()
        self.notes: list[dict] = []
        self.tags: list[str] = []
        self._in_notes = False
        self._field: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        self._in_notes = self._in_notes or attrs.get("id") == "notes"
        if self._in_notes and tag == "article":
            self.notes.append({"title": "", "text": "", "lang": None, "measured_on": ""})
        elif self._in_notes and self.notes and tag in ("h2", "p"):
            self._field = "title" if tag == "h2" else "measured_on" if attrs.get("class") == "measured-on" else "text"
            if tag == "h2":
                self.notes[-1]["lang"] = attrs.get("lang")

    def handle_endtag(self, tag):
        self._field = None
        self._in_notes = self._in_notes and tag != "section"

    def handle_data(self, data):
        if self._field is not None:
            self.notes[-1][self._field] += data


def template_pattern(text: str) -> re.Pattern:
    """A stop's text with each placeholder as a filled value (anything but the missing mark "—")."""
    parts = [re.escape(literal) + ("" if name is None else "([^—]+?)") for literal, name, _, _ in string.Formatter().parse(text)]
    return re.compile("^" + "".join(parts) + "$", re.S)


# -- the page itself (no window) -------------------------------------------------------------------
def hostile_tour():
    """The English tour with its look-ahead stop's title and text carrying markup and a script."""
    tour = load_tour("en")
    raw = {"format": "attnviz-tour", "version": 1, "language": "en", "labels": vars(tour.labels), "stops": []}
    stop = tour.stops[tour.index("look-ahead-mask")]
    state = {"source": stop.state.source, "steps": "end", "selection": {"kind": "decoder", "layer": 1, "head": 1}}
    raw["stops"].append({"id": stop.id, "title": f"<b>Mask</b> {HOSTILE}", "view": stop.view, "state": state,
                         "highlight": stop.highlight, "text": f"{HOSTILE} & <img src=x onerror=alert(2)> the max is {{mask_upper_max:g}}"})
    return parse_tour(raw, tour.path)


def test_a_stop_text_with_markup_is_plain_text_on_the_page(qapp):
    tour = hostile_tour()
    stop = tour.stops[0]
    text = fill(stop.text, {"mask_upper_max": 0.0})
    image = QtGui.QImage(4, 3, QtGui.QImage.Format.Format_RGB32)
    image.fill(QtGui.QColor("white"))
    figure = PageFigure("grid", png_bytes(image), 4, 3)
    page = WebPage("m", SRC, "", "greedy decoding", ("猫",), (PageStep(("SOS",)),), figures=(figure,),
                   notes=(PageNote("a paragraph"), PageNote(text, stop.title, "zh_CN", "我喜欢吃鱼。")))
    html_text = page_html(page)
    parsed = Notes(html_text)
    assert parsed.notes == [{"title": stop.title, "text": text, "lang": "zh-CN", "measured_on": "Numbers measured on: 我喜欢吃鱼。"}]
    assert parsed.tags.count("script") == 2 and "b" not in parsed.tags and "img" in parsed.tags  # only the figure's <img>
    assert parsed.tags.count("img") == 1 and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img" in html_text
    assert "<p>a paragraph</p>" in html_text


def test_an_unknown_stop_is_refused_in_one_line(tmp_path):
    with pytest.raises(AttnvizError) as err:
        run_page(["--src", SRC, "--tour", "look-ahead-mask,no-such-stop", "--out", str(tmp_path / "out")])
    message = str(err.value)
    assert err.value.code == 2 and "\n" not in message and "'no-such-stop'" in message
    assert all(i in message for i in load_tour("en").ids())
    assert not list(tmp_path.iterdir())


# -- attnviz page --tour ------------------------------------------------------------------------------
@pytest.mark.slow
def test_page_tour_holds_the_stops_texts_in_their_language(qapp, tmp_path):
    ids = ("ffn", "look-ahead-mask")
    assert run_page(["--src", SRC, "--view", "head", "--size", "400x300", "--tour", ",".join(ids), "--language", "zh_CN",
                     "--out", str(tmp_path)]) == 0
    notes = Notes((tmp_path / PAGE_NAME).read_text(encoding="utf-8")).notes
    tour, cfg = load_tour("zh_CN"), load_bundle(default_model()).config
    stops = sorted((tour.stops[tour.index(i)] for i in ids), key=lambda s: tour.index(s.id))  # in the tour's order
    assert [n["title"] for n in notes] == [s.title for s in stops] and {n["lang"] for n in notes} == {"zh-CN"}
    for note, stop in zip(notes, stops):
        found = template_pattern(stop.text).match(note["text"])
        assert found, (stop.id, note["text"])  # every number filled: no "—"
        values = dict(zip([name for _, name, _, _ in string.Formatter().parse(stop.text) if name], found.groups()))
        assert note["measured_on"] == f"Numbers measured on: {stop.state.source}"
        if stop.id == "ffn":
            assert (values["d_model"], values["d_ff"]) == (str(cfg.d_model), str(cfg.d_ff))
        else:  # the look-ahead mask: nothing above the diagonal, n(n-1)/2 cells there, the row sums to 1
            n = int(values["mask_row"])
            assert float(values["mask_upper_max"]) == 0.0 and int(values["mask_masked"]) == n * (n - 1) // 2
            assert int(values["mask_allowed"]) == n and np.isclose(float(values["mask_row_sum"]), 1.0, atol=1e-3)


# -- File → Export Web Page with the tour open ----------------------------------------------------------
def open_window(qtbot, tmp_path) -> MainWindow:
    """The main window on the bundled model (settings in a temporary file), its first sentence decoded."""
    w = MainWindow(settings=QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    qtbot.waitUntil(lambda: w.session.decoding is not None and w.session.decoding.finished, timeout=READY_MS)
    return w


def export_page(window, folder) -> list[dict]:
    window.findChild(QtGui.QAction, "exportWebPageAction").trigger()
    return Notes((folder / PAGE_NAME).read_text(encoding="utf-8")).notes


@pytest.mark.slow
def test_export_web_page_carries_the_stops_the_tour_explained(qtbot, tmp_path, monkeypatch):
    folder = tmp_path / "page"
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(folder), ""))
    monkeypatch.setattr(QtWidgets.QMessageBox, "question", lambda *a, **k: QtWidgets.QMessageBox.StandardButton.Yes)
    w = open_window(qtbot, tmp_path)
    panel = start_tour(w, "en")
    shown = {}
    for stop_id in ("look-ahead-mask", "ffn"):  # ffn comes first in the tour
        panel.go(panel.tour.index(stop_id))
        qtbot.waitUntil(lambda: panel.ready, timeout=READY_MS)
        shown[stop_id] = (w.findChild(QtWidgets.QLabel, "tourTitle").text(), w.findChild(QtWidgets.QLabel, "tourText").text())
    notes = export_page(w, folder)
    assert [(n["title"], n["text"]) for n in notes] == [shown["ffn"], shown["look-ahead-mask"]]
    stops = page_data((folder / PAGE_NAME).read_text(encoding="utf-8"))["stops"]  # what each stop sets when the page shows it
    assert stops == [{"kind": "encoder", "layer": 0, "head": 0, "step": None}, {"kind": "decoder", "layer": 0, "head": 0, "step": None}]
    assert {n["lang"] for n in notes} == {"en"} and all("—" not in n["text"] for n in notes)

    hostile = hostile_tour().stops[0]  # the same stop, its words replaced: the page shows them as text
    mask = panel.tour.index("look-ahead-mask")
    panel.tour = replace(panel.tour, stops=tuple(hostile if i == mask else s for i, s in enumerate(panel.tour.stops)))
    notes = export_page(w, folder)
    assert notes[1]["title"] == hostile.title and notes[1]["text"].startswith(f"{HOSTILE} & <img src=x")
    assert Notes((folder / PAGE_NAME).read_text(encoding="utf-8")).tags.count("script") == 2

    panel.leave()
    assert export_page(w, folder) == []  # the tour left: no notes
