"""The web page's live matrix: the reader chooses kind, layer, head (or the mean) and step, and the
page's script draws that attention matrix on a canvas from the data the page carries, with the
weight of the cell under the mouse in a tooltip. Opened in headless Chromium, the cell drawn and
the number shown are the model's; the page of the tutorial's sentence stays small; a token with
markup stays text; the page's policy allows its one script by its hash only; the tour's stops set
the choice when shown."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from page_helpers import MAX_PAGE_BYTES, TUTORIAL, chromium, run_page
from PIL import Image
from PySide6 import QtGui

from attnviz.core.bundle import load_bundle
from attnviz.core.data.pieces import display_pieces
from attnviz.core.decoding.session import DecodingSession
from attnviz.paths import default_model
from attnviz.qt.publish.web_page import (
    CONTENT_SECURITY_POLICY,
    PAGE_NAME,
    SCALE,
    PageAttention,
    PageChoice,
    PageFigure,
    PageNote,
    PageStep,
    WebPage,
    page_data,
    page_html,
    png_bytes,
)
from attnviz.qt.widgets.colormaps import get_theme, lookup_table

SRC = "猫吃鱼。"
HOSTILE = "</script><img src=x onerror=alert(1)>"



# A script added to a copy of the page (its policy taken out, else it would be refused): it sets
# the boxes and the slider as a reader does (the events they send), reads the canvas's pixel at
# the centre of cell (Q, K), moves the mouse there and writes what the page shows on <body>.
PROBE = """<script>window.addEventListener("load", function () {
  var set = SETTINGS, cell = CELL, out = {};
  set.forEach(function (s) {
    var box = document.getElementById(s[0]);
    if (s[0] === "stop-next") { box.click(); return; }
    box.value = s[1];
    box.dispatchEvent(new Event(s[0] === "step" ? "input" : "change", {bubbles: true}));
  });
  var canvas = document.getElementById("matrix"), g = canvas.getAttribute("data-geometry").split(" ").map(Number);
  var w = parseFloat(canvas.style.width), h = parseFloat(canvas.style.height), ratio = canvas.width / w;
  var x = g[0] + (cell[1] + 0.5) * g[2], y = g[1] + (cell[0] + 0.5) * g[2];
  out.pixel = Array.prototype.slice.call(canvas.getContext("2d").getImageData(Math.floor(x * ratio), Math.floor(y * ratio), 1, 1).data);
  var box = canvas.getBoundingClientRect();
  canvas.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: box.left + x * box.width / w, clientY: box.top + y * box.height / h}));
  var text = function (id) { return document.getElementById(id).textContent; };
  out.choice = canvas.getAttribute("data-choice");
  out.tip = [text("tip-row"), text("tip-col"), text("tip-weight")];
  out.tipShown = !document.getElementById("tip").hidden;
  out.title = text("matrix-title");
  out.imgs = document.getElementsByTagName("img").length;
  out.alerted = window.alerted || 0;
  document.body.setAttribute("data-probe", JSON.stringify(out));
});</script></body>"""


def probe(text: str, tmp_path, settings: list, cell: tuple[int, int], address: str = "", screenshot: str | None = None) -> dict:
    """What the page shows after ``settings`` (``[id, value]``; ``["stop-next"]`` clicks it), at ``cell``."""
    page = tmp_path / "probe.html"
    script = PROBE.replace("SETTINGS", json.dumps(settings)).replace("CELL", json.dumps(list(cell)))
    guard = "<script>window.alert = function () { window.alerted = (window.alerted || 0) + 1; };</script>"
    without_policy = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text).replace("<head>", "<head>" + guard, 1)
    page.write_text(without_policy.replace("</body>", script), encoding="utf-8")
    if screenshot:
        chromium(f"--screenshot={screenshot}", "--window-size=1366,768", page.as_uri() + address)
    dom = chromium("--dump-dom", page.as_uri() + address).decode("utf-8")
    return json.loads(html.unescape(re.search(r'data-probe="([^"]*)"', dom).group(1)))


def expected_colour(weight: float, theme: str = "light") -> np.ndarray:
    """The colour map's entry for ``weight`` (0 to 1), as the page and the app's views map it."""
    return lookup_table(get_theme(theme).colormap)[int(round(min(max(weight, 0.0), 1.0) * 255)), :3].astype(int)


def rebuilt(data: dict, kind: str, step: int) -> np.ndarray:
    """``kind``'s ``[layer, head + mean, query, key]`` at ``step`` (1-based), in thousandths, rebuilt
    from the page's data as its format says: rows kept from the step before (0 for new keys), then the step's own."""
    before = None
    for entry in (s["attention"][kind] for s in data["steps"][:step]):
        L, H, Q, K = entry["shape"]
        now = np.zeros((L, H, Q, K), dtype=np.int64)
        keep = entry["keep"]
        if keep:
            now[:, :, :keep, : before.shape[3]] = before[:, :, :keep]
        now[:, :, keep:] = np.array(entry["rows"]).reshape(L, H, Q - keep, K)
        before = now
    return before


@pytest.fixture(scope="module")
def decoded(qapp, tmp_path_factory):
    """The page of SRC (the head view for readers without scripts) and the core's decoding of it."""
    out = tmp_path_factory.mktemp("live")
    assert run_page(["--src", SRC, "--view", "head", "--size", "500x400", "--out", str(out)]) == 0
    session = DecodingSession.from_bundle(load_bundle(default_model()), SRC)
    session.run()
    return (out / PAGE_NAME).read_text(encoding="utf-8"), session


def test_every_kind_layer_head_and_step_travels_as_data(decoded):
    text, session = decoded
    data = page_data(text)
    n = len(session.steps)
    assert data["kinds"] == ["encoder", "decoder", "cross"] and len(data["steps"]) == n and data["scale"] == SCALE
    for kind in data["kinds"]:
        for step in range(1, n + 1):
            weights = session.prefix(step).all_attention(kind)  # [layer, head, query, key]
            page = rebuilt(data, kind, step) / SCALE
            assert page.shape[:1] + (page.shape[1] - 1,) + page.shape[2:] == weights.shape
            assert np.abs(page[:, :-1] - weights).max() <= 0.0005 + 1e-6  # 3 decimals
            assert np.abs(page[:, -1] - weights.mean(axis=1)).max() <= 0.0005 + 1e-6  # the mean over heads
    last = data["steps"][-1]["attention"]
    assert last["cross"]["keep"] == n - 1 and last["encoder"]["keep"] == len(session.src_pieces)  # one new row a step
    assert data["steps"][0]["attention"]["cross"]["colLabels"] == list(display_pieces(session.src_pieces))


@pytest.mark.slow
def test_in_chromium_the_chosen_cell_is_drawn_and_its_weight_shown(decoded, tmp_path):
    text, session = decoded
    step, kind, layer, head, q, k = 4, "decoder", 1, 2, 3, 1
    shown = probe(text, tmp_path, [["kind", kind], ["layer", str(layer)], ["head", str(head)], ["step", str(step)]], (q, k))
    weight = float(session.prefix(step).all_attention(kind)[layer, head, q, k])
    assert shown["choice"] == f"{kind} {layer} {head} {step}" and shown["tipShown"]
    assert shown["tip"][2] == f"{weight:.3f}" or abs(float(shown["tip"][2]) - weight) <= 0.0005 + 1e-6
    rows = display_pieces(session.prefix(step).input_pieces)
    assert shown["tip"][:2] == [rows[q], rows[k]] and "layer 2" in shown["title"] and "head 3" in shown["title"]
    assert np.abs(np.array(shown["pixel"][:3]) - expected_colour(float(shown["tip"][2]))).max() <= 2

    mean = probe(text, tmp_path, [["kind", "cross"], ["layer", "2"], ["head", "mean"], ["step", "2"]], (1, 0))
    weights = session.prefix(2).all_attention("cross")[2].mean(axis=0)
    assert mean["choice"] == "cross 2 mean 2" and abs(float(mean["tip"][2]) - weights[1, 0]) <= 0.0005 + 1e-6
    assert mean["tip"][1] == display_pieces(session.src_pieces)[0]


@pytest.mark.slow
def test_the_tutorial_sentence_page_stays_under_two_megabytes(qapp, tmp_path):
    assert run_page(["--src", TUTORIAL, "--out", str(tmp_path)]) == 0  # the default views and size
    size = (tmp_path / PAGE_NAME).stat().st_size
    assert size <= MAX_PAGE_BYTES, size


@pytest.mark.slow
def test_markup_in_a_token_stays_text(qapp, tmp_path):
    assert run_page(["--src", f"猫{HOSTILE}吃鱼。", "--view", "head", "--size", "400x300", "--out", str(tmp_path / "page")]) == 0
    text = (tmp_path / "page" / PAGE_NAME).read_text(encoding="utf-8")
    assert HOSTILE not in text and "</script><img" not in text and _policy(text) == CONTENT_SECURITY_POLICY
    labels = "".join(page_data(text)["steps"][0]["attention"]["cross"]["colLabels"])
    assert "script" in labels and "onerror" in labels  # the pieces travel as data
    dom = chromium("--dump-dom", (tmp_path / "page" / PAGE_NAME).as_uri()).decode("utf-8")
    assert "img" not in Tags(re.sub(r"<noscript>.*?</noscript>", "", dom, flags=re.S)).names and _policy(dom) == CONTENT_SECURITY_POLICY

    token = f"▁{HOSTILE}"  # one token that is all markup, in every label and box the script fills
    shown = probe(page_html(tiny_page(token)), tmp_path, [["head", "1"], ["step", "2"]], (1, 1))
    assert shown["imgs"] == 0 and shown["alerted"] == 0 and shown["tip"][:2] == list(display_pieces([token, token]))


def test_the_policy_allows_the_one_script_by_its_hash(decoded):
    text, _ = decoded
    policy = _policy(text)
    assert policy == CONTENT_SECURITY_POLICY and "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "default-src 'none'" in policy and not re.search(r"https?:|\*", policy)
    tags = Tags(text)
    (script,) = [s for s, a in zip(tags.scripts, tags.script_attrs) if not a]
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    assert re.search(r"script-src '([^']+)';", policy).group(1) == f"sha256-{digest}"
    assert [a.get("type") for a in tags.script_attrs] == ["application/json", None]
    assert not re.search(r"\.innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", script)


@pytest.mark.slow
def test_the_tours_stops_set_the_choice_when_shown(qapp, tmp_path):
    stops = (PageNote("first", "Stop one", choice=PageChoice("encoder", 0, 1, None)),
             PageNote("a paragraph"),
             PageNote("second", "Stop two", choice=PageChoice("cross", 1, None, 1)))
    page = tiny_page("▁cat", notes=stops)
    first = probe(page_html(page), tmp_path, [], (0, 0))
    assert first["choice"] == "encoder 0 1 2"  # on its own step ("end": the last)
    second = probe(page_html(page), tmp_path, [["stop-next"]], (0, 0))
    assert second["choice"] == "cross 1 mean 1"


@pytest.mark.slow
def test_screenshot_after_choosing_another_head(decoded, tmp_path):
    text, _ = decoded
    shot = tmp_path / "live.png"
    probe(text, tmp_path, [["head", "3"], ["step", "5"]], (2, 1), screenshot=str(shot))
    grey = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert grey.shape == (768, 1366) and grey.std() > 10


# ---------------------------------------------------------------------------
def _policy(text: str) -> str:
    return html.unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', text).group(1))


class Tags(HTMLParser):
    """Every start tag's name, and each <script>'s attributes and text."""

    def __init__(self, text: str):
        super().__init__()
        self.names: list[str] = []
        self.scripts: list[str] = []
        self.script_attrs: list[dict] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.names.append(tag)
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")
            self.script_attrs.append({k: v for k, v in attrs if k != "id"})

    def handle_endtag(self, tag):
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def tiny_page(token: str, notes: tuple = ()) -> WebPage:
    """Two steps of a made-up two-layer, two-head model: ``token`` as every target piece and the
    second source piece; encoder and cross-attention."""
    image = QtGui.QImage(4, 3, QtGui.QImage.Format.Format_RGB32)
    image.fill(QtGui.QColor("white"))
    rng = np.random.default_rng(0)

    def weights(q: int, k: int) -> np.ndarray:
        w = rng.random((2, 2, q, k)).astype(np.float32)
        return w / w.sum(axis=-1, keepdims=True)

    src, enc, cross = ("▁猫", token), weights(2, 2), weights(2, 2)
    steps = tuple(PageStep(("SOS", token)[: i + 1], {"encoder": PageAttention(enc, src, src),
                                                    "cross": PageAttention(cross[:, :, : i + 1], ("SOS", token)[: i + 1], src, i)})
                  for i in range(2))
    return WebPage("tiny", "猫" + token, "", "greedy decoding", src, steps, notes=notes,
                   figures=(PageFigure("grid", png_bytes(image), 4, 3),))
