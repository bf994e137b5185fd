"""The tour's exercises on the web page: ``attnviz page --tour`` works out each stop's exercise on
the page's model and sentence (:mod:`attnviz.core.exercises`) and the page asks it before the
stop's text and the matrix show. Opened in headless Chromium: a right answer is marked right and
scored, a wrong one is marked wrong with the core's numbers in the feedback, Skip shows the answer,
a grid of cells is ticked; the feedback is the window's for the same answer; a question and
choices with markup stay text; the page of the tutorial's sentence with the whole tour stays small."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from dataclasses import replace

import pytest
from page_helpers import MAX_PAGE_BYTES, TUTORIAL, chromium, run_page

from attnviz.core.bundle import load_bundle
from attnviz.core.exercises import Question, compute
from attnviz.core.tour_data import load_tour, parse_tour
from attnviz.paths import default_model
from attnviz.qt.exercises import feedback_text
from attnviz.qt.publish.animation import Panel
from attnviz.qt.publish.tour_notes import stop_choice
from attnviz.qt.publish.web_page import CONTENT_SECURITY_POLICY, PAGE_NAME, PageNote, build_page, page_data, page_html

SRC = "我喜欢吃鱼。"
STOPS = ("scaling", "look-ahead-mask", "cross-attention", "output-softmax")  # in the tour's order: data-stop 0 to 3
SCALING, MASK, CROSS, NEXT = range(4)
HOSTILE = "<img src=x onerror=alert(1)>"



# A script added to a copy of the page (its policy taken out, else it would be refused): it goes
# to stops, ticks choices and clicks Check or Skip as a reader does, and after each "look" writes
# what the shown stop's exercise, the matrix and the score show on <body>.
PROBE = """<script>window.addEventListener("load", function () {
  var out = {looks: []}, byId = function (id) { return document.getElementById(id); };
  var articles = Array.prototype.slice.call(document.querySelectorAll("#notes [data-stop]"));
  var at = function () { return articles.findIndex(function (a) { return !a.hidden; }); };
  var box = function () { return articles[at()].querySelector(".exercise"); };
  var indices = function (selector) {
    return Array.prototype.map.call(box().querySelectorAll(selector), function (el) {
      return parseInt((el.matches("input") ? el : el.querySelector("input")).value, 10); });
  };
  function look() {
    var e = box(), feedback = e.querySelector(".exercise-feedback"), text = articles[at()].querySelector(".stop-text");
    var score = byId("exercise-score");
    return {stop: at(), question: e.querySelector(".exercise-question").textContent,
            choices: Array.prototype.map.call(e.querySelectorAll(".exercise-choices label"), function (l) { return l.textContent; }),
            cells: e.querySelectorAll(".exercise-grid input").length,
            verdict: feedback.getAttribute("data-verdict"), feedback: feedback.hidden ? null : feedback.textContent,
            marked: indices(".is-answer"), wrong: indices(".chosen-wrong"), textShown: !text.hidden,
            matrixShown: !byId("explorer").hidden, coverShown: !byId("matrix-cover").hidden,
            score: score.hidden ? null : [score.getAttribute("data-right"), score.getAttribute("data-total")]};
  }
  ACTIONS.forEach(function (a) {
    if (a[0] === "stop") {
      while (at() < a[1]) { byId("stop-next").click(); }
      while (at() > a[1]) { byId("stop-prev").click(); }
    } else if (a[0] === "tick") {
      box().querySelector('input[value="' + a[1] + '"]').click();
    } else if (a[0] === "check" || a[0] === "skip") {
      box().querySelector(".exercise-" + a[0]).click();
    } else {
      out.looks.push(look());
    }
  });
  out.imgs = document.getElementsByTagName("img").length;
  out.alerted = window.alerted || 0;
  document.body.setAttribute("data-probe", JSON.stringify(out));
});</script></body>"""


def probe(text: str, tmp_path, actions: list, screenshot: str | None = None) -> dict:
    """What the page shows after ``actions``: ``["stop", i]`` goes to stop i, ``["tick", k]`` clicks
    choice k, ``["check"]``, ``["skip"]``, ``["look"]`` records what the shown stop shows."""
    page = tmp_path / "probe.html"
    guard = "<script>window.alert = function () { window.alerted = (window.alerted || 0) + 1; };</script>"
    without_policy = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text).replace("<head>", "<head>" + guard, 1)
    page.write_text(without_policy.replace("</body>", PROBE.replace("ACTIONS", json.dumps(actions))), encoding="utf-8")
    if screenshot:
        chromium(f"--screenshot={screenshot}", "--window-size=1366,768", page.as_uri())
    dom = chromium("--dump-dom", page.as_uri()).decode("utf-8")
    return json.loads(html.unescape(re.search(r'data-probe="([^"]*)"', dom).group(1)))


@pytest.fixture(scope="module")
def tour_page(qapp, tmp_path_factory):
    """``attnviz page --tour`` of four stops with exercises on SRC, its HTML and its data."""
    out = tmp_path_factory.mktemp("exercises")
    assert run_page(["--src", SRC, "--view", "head", "--size", "400x300", "--tour", ",".join(STOPS), "--out", str(out)]) == 0
    text = (out / PAGE_NAME).read_text(encoding="utf-8")
    return text, page_data(text)


def core_exercise(data: dict, stop: int, source: str = SRC):
    """The stop's exercise as the core computes it on the page's sentence, at the stop's step."""
    tour = load_tour("en")
    st = tour.stops[tour.index(STOPS[stop])]
    c = data["stops"][stop]
    question = Question(source, "", c["step"], st.state.kind, st.state.layer, st.state.head, st.state.query)
    return compute(load_bundle(default_model()), st.exercise.kind, question, st.exercise.options())


@pytest.mark.slow
def test_the_exercises_travel_as_data_and_the_page_asks_them_under_its_policy(tour_page, tmp_path):
    text, data = tour_page
    policy = html.unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', text).group(1))
    script = re.findall(r"<script>(.*?)</script>", text, re.S)
    assert policy == CONTENT_SECURITY_POLICY and len(script) == 1 and "unsafe-inline" not in policy
    digest = base64.b64encode(hashlib.sha256(script[0].encode("utf-8")).digest()).decode("ascii")
    assert f"script-src 'sha256-{digest}';" in policy
    (tmp_path / PAGE_NAME).write_text(text, encoding="utf-8")
    dom = chromium("--dump-dom", (tmp_path / PAGE_NAME).as_uri()).decode("utf-8")  # the page as it is: its script allowed by its hash
    assert 'class="exercise-question"' in dom and 'id="matrix-cover">' in dom
    assert len(data["exercises"]) == len(data["stops"]) == len(STOPS) and all(data["exercises"])
    for stop, ex in enumerate(data["exercises"]):
        e = core_exercise(data, stop)
        assert ex["kind"] == e.kind and ex["answers"] == list(e.answers) and len(ex["choices"]) == len(e.choices)
        assert ex["feedback"]["right"] == feedback_text(e, frozenset(e.answers), "right")  # the window's words
        assert ex["question"] == load_tour("en").stops[load_tour("en").index(STOPS[stop])].exercise.question
    assert data["exercises"][MASK]["columns"] > 0 and text.count('class="exercise"') == len(STOPS)


@pytest.mark.slow
def test_right_wrong_and_skip_in_chromium(tour_page, tmp_path):
    text, data = tour_page
    exercises = data["exercises"]
    right = exercises[CROSS]["answers"][0]
    wrong = next(i for i in range(len(exercises[SCALING]["choices"])) if i not in exercises[SCALING]["answers"])
    shown = probe(text, tmp_path, [["stop", CROSS], ["look"], ["tick", right], ["check"], ["look"],
                                   ["stop", SCALING], ["tick", wrong], ["check"], ["look"], ["stop", NEXT], ["skip"], ["look"]])
    asking, cross, scaling, skipped = shown["looks"]
    assert not asking["textShown"] and not asking["matrixShown"] and asking["coverShown"] and asking["verdict"] is None
    assert asking["choices"] == exercises[CROSS]["choices"] and asking["score"] is None  # nothing answered yet
    assert cross["verdict"] == "right" and cross["score"] == ["1", "4"] and cross["marked"] == [right]
    assert cross["textShown"] and cross["matrixShown"] and not cross["coverShown"]

    e = core_exercise(data, SCALING)  # the numbers the core computes on the page's sentence
    assert scaling["verdict"] == "wrong" and scaling["wrong"] == [wrong] and scaling["score"] == ["1", "4"]
    assert f"{e.numbers['entropy_scaled']:.3f}" in scaling["feedback"] and f"{e.numbers['max_scaled']:.3f}" in scaling["feedback"]
    assert scaling["feedback"] == feedback_text(e, frozenset({wrong}), "wrong")

    e = core_exercise(data, NEXT)  # Skip shows the answer
    assert skipped["verdict"] == "skipped" and skipped["marked"] == list(e.answers) and skipped["wrong"] == []
    assert skipped["choices"][e.answer].strip() in skipped["feedback"] and f"{e.numbers['prob']:.3f}" in skipped["feedback"]
    assert skipped["textShown"] and skipped["matrixShown"] and skipped["score"] == ["1", "4"]


@pytest.mark.slow
def test_a_grid_of_cells_counts_the_cells_ticked(tour_page, tmp_path):
    text, data = tour_page
    answers = data["exercises"][MASK]["answers"]
    extra = next(i for i in range(len(data["exercises"][MASK]["choices"])) if i not in answers)
    ticked = [answers[0], answers[1], extra]
    shown = probe(text, tmp_path, [["stop", MASK], *[["tick", i] for i in ticked], ["check"], ["look"],
                                   ["stop", MASK + 1], ["stop", MASK], ["look"]])
    grid, again = shown["looks"]
    e = core_exercise(data, MASK)
    assert grid["cells"] == len(e.choices) and grid["verdict"] == "wrong" and grid["marked"] == list(e.answers)
    assert grid["feedback"] == feedback_text(e, frozenset(ticked), "wrong") and grid["wrong"] == [extra]
    assert again == grid  # a stop answered shows its answer again

    shown = probe(text, tmp_path, [["stop", MASK], *[["tick", i] for i in answers], ["check"], ["look"]])
    assert shown["looks"][0]["verdict"] == "right" and shown["looks"][0]["score"] == ["1", "4"]


@pytest.mark.slow
def test_a_question_and_choices_with_markup_stay_text(qapp, tmp_path):
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.views.registry import view_spec

    tour = load_tour("en")
    stop = tour.stops[tour.index("cross-attention")]
    question = f"{HOSTILE} which piece? </script>"
    raw = {"format": "attnviz-tour", "version": 1, "language": "en", "labels": vars(tour.labels),
           "stops": [{"id": stop.id, "title": stop.title, "view": stop.view, "highlight": stop.highlight, "text": "the text",
                      "state": {"source": SRC, "steps": 2, "selection": {"kind": "cross", "layer": 2, "head": 3}},
                      "exercise": {"kind": "cross-argmax", "question": question}}]}
    hostile = parse_tour(raw, tour.path).stops[0]
    note = PageNote("the text", hostile.title, "en", SRC, stop_choice(hostile), hostile.exercise)
    panel = Panel(view_spec("head"), ViewChoice(kind="cross", layer=0, head=0, mode="head"))
    page = build_page(load_bundle(default_model()), SRC, "", [panel], (300, 200), notes=[note])
    asked = page.exercises[0]  # a choice with markup too (a piece of the model's vocabulary could be one)
    page = replace(page, exercises=(replace(asked, choices=(f"{HOSTILE}{asked.choices[0]}", *asked.choices[1:])),))
    text = page_html(page)
    assert HOSTILE not in text and "</script> which" not in text
    choices = page_data(text)["exercises"][0]["choices"]
    assert choices[0].startswith(HOSTILE)  # the words travel as data
    shown = probe(text, tmp_path, [["look"], ["skip"], ["look"]])
    assert shown["imgs"] == 0 and shown["alerted"] == 0
    assert shown["looks"][0]["question"] == question and [c.strip() for c in shown["looks"][0]["choices"]] == choices
    assert shown["looks"][1]["verdict"] == "skipped"


@pytest.mark.slow
def test_the_tutorial_sentence_with_the_whole_tour_stays_under_two_megabytes(qapp, tmp_path):
    assert run_page(["--src", TUTORIAL, "--tour", ",".join(load_tour("en").ids()), "--out", str(tmp_path)]) == 0
    text = (tmp_path / PAGE_NAME).read_text(encoding="utf-8")
    assert sum(e is not None for e in page_data(text)["exercises"]) == sum(s.exercise is not None for s in load_tour("en").stops)
    assert (tmp_path / PAGE_NAME).stat().st_size <= MAX_PAGE_BYTES
