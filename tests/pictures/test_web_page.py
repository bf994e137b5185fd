"""The web page to hand out (``attnviz page``, File → Export Web Page): one HTML file that loads
nothing from elsewhere, one step per decoding step, the numbers of each step the session's own,
every text escaped; opened in headless Chromium, the slider's step changes the tokens and the
matrix shown. (The live matrix itself: ``test_web_page_live.py``.)"""

from __future__ import annotations

import argparse
import base64
import io
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest
from PIL import Image

from attnviz.commands import page as page_command
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.errors import AttnvizError
from attnviz.paths import default_model
from attnviz.qt.publish.web_page import PAGE_NAME, page_data

SRC, TGT = "猫吃鱼。", "The cat eats fish."
HOSTILE = "<script>alert(1)</script>"
CHROMIUM = "chromium"  # Debian's package and command (.ci/run installs it)


def run_page(argv: list[str]) -> int:
    """``attnviz page ARGS`` as the command line runs it (parsed, then run)."""
    parser = argparse.ArgumentParser(prog="attnviz page")
    page_command.add_arguments(parser)
    return page_command.run(parser.parse_args(argv))


@pytest.fixture(scope="module")
def decoded_page(qapp, tmp_path_factory):
    """The page of SRC decoded, with the grid and head views of cross-attention, layer 1, head 1."""
    out = tmp_path_factory.mktemp("page")
    assert run_page(["--src", SRC, "--view", "grid,head", "--size", "700x500", "--out", str(out)]) == 0
    text = (out / PAGE_NAME).read_text(encoding="utf-8")
    decoded = DecodingSession.from_bundle(load_bundle(default_model()), SRC)
    decoded.run()
    return out / PAGE_NAME, text, decoded


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each <script>."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def assert_self_contained(text: str) -> None:
    tags = Tags(text)
    for tag, attrs in tags.tags:
        for name in ("src", "href", "action", "srcset", "data", "poster"):
            assert not re.match(r"\s*(https?:)?//", attrs.get(name) or "", re.I), (tag, name)
        assert tag not in ("link", "iframe", "object", "embed", "base", "form")
    imgs = [attrs for tag, attrs in tags.tags if tag == "img"]
    assert imgs and all(a["src"].startswith("data:image/png;base64,") for a in imgs)
    csp = next(a["content"] for tag, a in tags.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "img-src data:" in csp and "unsafe-inline" not in csp
    assert not re.search(r"https?://", re.sub(r"<img [^>]*>", "", text))  # no address anywhere, not even in a script


def noscript_images(text: str) -> list[np.ndarray]:
    """The pictures kept for readers without scripts, as grey levels."""
    section = text.split("<noscript>", 1)[1].split("</noscript>", 1)[0]
    pngs = re.findall(r'src="data:image/png;base64,([^"]+)"', section)
    return [np.asarray(Image.open(io.BytesIO(base64.b64decode(p))).convert("L"), dtype=float) for p in pngs]


def weights(step: dict, kind: str, before: np.ndarray | None) -> np.ndarray:
    """``kind``'s ``[layer, head + mean, query, key]`` of a step, from its entry and the step before's (the page's format)."""
    e = step["attention"][kind]
    L, H, Q, K = e["shape"]
    now = np.zeros((L, H, Q, K))
    if e["keep"]:
        now[:, :, : e["keep"], : before.shape[3]] = before[:, :, : e["keep"]]
    now[:, :, e["keep"]:] = np.array(e["rows"]).reshape(L, H, Q - e["keep"], K)
    return now


def test_the_page_loads_nothing_from_elsewhere(decoded_page):
    path, text, _ = decoded_page
    assert_self_contained(text)
    assert text.startswith("<!DOCTYPE html>") and '<meta name="generator" content="attnviz' in text[:3000]


def test_one_step_per_decoding_step(decoded_page):
    _, text, decoded = decoded_page
    n = len(decoded.steps)
    data = page_data(text)
    assert len(data["steps"]) == n and f'max="{n}"' in text and text.count('class="step-tokens"') == n
    assert [tuple(s["tokens"]) for s in data["steps"]] == [tuple(decoded.output_pieces[: i + 1]) for i in range(n)]
    assert len(noscript_images(text)) == 2 and all(im.std() > 5 for im in noscript_images(text))  # grid and head, the last step


def test_the_numbers_of_a_step_are_the_sessions_attention_at_that_step(decoded_page):
    _, text, decoded = decoded_page
    before = None
    for step, entry in enumerate(page_data(text)["steps"], 1):
        before = weights(entry, "cross", before)
        if step in (1, 3, len(decoded.steps)):
            cross = decoded.prefix(step).all_attention("cross")  # [layer, head, query, key]
            assert before.shape[1] == cross.shape[1] + 1 and np.allclose(before[:, :-1] / 1000, cross, atol=5e-4 + 1e-6)


def test_text_from_the_user_and_the_model_is_escaped(qapp, tmp_path):
    model = tmp_path / "<img src=x onerror=alert(3)>"  # the model's name is its folder's
    model.symlink_to(default_model(), target_is_directory=True)
    tgt = f"{HOSTILE} The cat </script><img src=x onerror=alert(2)>"
    assert run_page(["--model", str(model), "--src", f"{HOSTILE}猫吃鱼。", "--tgt", tgt, "--view", "head", "--size", "500x400",
                     "--note", f"A note {HOSTILE} & <b>bold</b>", "--out", str(tmp_path / "page")]) == 0
    text = (tmp_path / "page" / PAGE_NAME).read_text(encoding="utf-8")
    assert_self_contained(text)
    tags = Tags(text)
    assert [t for t, _ in tags.tags].count("script") == 2 and "alert" not in "".join(tags.scripts[1:])
    assert not any(t == "b" for t, _ in tags.tags) and [a["src"][:5] for t, a in tags.tags if t == "img"] == ["data:"] * text.count("<img ")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "A note &lt;script&gt;" in text and "&amp; &lt;b&gt;bold" in text
    assert "<title>Attention in &lt;img src=x onerror=alert(3)&gt;: &lt;script&gt;" in text
    steps = page_data(text)["steps"]  # one per position of the typed target
    assert len(steps) == len(teacher_forced_from_bundle(load_bundle(default_model()), f"{HOSTILE}猫吃鱼。", tgt).steps)
    assert "<" not in tags.scripts[0]


@pytest.mark.parametrize("argv,word", [(["--view", "nope"], "nope"), (["--layer", "0"], "--layer"),
                                       (["--layer", "9"], "--layer"), (["--head", "99"], "--head"), (["--size", "9x9"], "--size")])
def test_bad_arguments_are_one_line_and_write_nothing(qapp, tmp_path, argv, word):
    with pytest.raises(AttnvizError) as err:
        run_page(["--src", SRC, *argv, "--out", str(tmp_path / "out")])
    assert err.value.code == 2 and word in str(err.value) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


def test_a_file_it_did_not_write_is_never_replaced(qapp, tmp_path):
    foreign = tmp_path / PAGE_NAME
    foreign.write_text("<p>my own page</p>")
    not_a_folder = tmp_path / "notes.txt"
    not_a_folder.write_text("mine")
    for out, word in ((tmp_path, "not a page written by attnviz"), (not_a_folder, "not a folder"), (not_a_folder / "sub", "cannot write")):
        with pytest.raises(AttnvizError) as err:
            run_page(["--src", SRC, "--view", "head", "--out", str(out)])
        assert word in str(err.value) and "\n" not in str(err.value)
    assert foreign.read_text() == "<p>my own page</p>" and not_a_folder.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [PAGE_NAME, "notes.txt"]


def test_its_own_page_is_replaced(qapp, tmp_path, capsys):
    for view in ("grid", "head"):
        assert run_page(["--src", SRC, "--view", view, "--size", "500x400", "--out", str(tmp_path / "new")]) == 0
    assert "Cross-attention · layer 1 · head 1" in (tmp_path / "new" / PAGE_NAME).read_text(encoding="utf-8")
    assert [p.name for p in (tmp_path / "new").iterdir()] == [PAGE_NAME]
    assert capsys.readouterr().out.strip().endswith("steps)")


def test_export_web_page_asks_for_a_folder_and_before_replacing(qapp, tmp_path, monkeypatch):
    from PySide6 import QtWidgets

    from attnviz.qt.publish.animation import Panel
    from attnviz.qt.publish.web_page import web_page_dialog
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.views.registry import view_spec

    answers = []
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path), ""))
    monkeypatch.setattr(QtWidgets.QMessageBox, "question", lambda *a, **k: answers.pop(0))
    bundle, panel = load_bundle(default_model()), Panel(view_spec("head"), ViewChoice(kind="cross", layer=0, head=0, mode="head"))
    export = lambda notes: web_page_dialog(None, bundle, SRC, "", [panel], "light", None, notes, size=(500, 400))
    assert export(["first"]) == tmp_path / PAGE_NAME  # a new page: nothing to ask
    answers.append(QtWidgets.QMessageBox.StandardButton.No)
    assert export(["second"]) is None and "<p>first</p>" in (tmp_path / PAGE_NAME).read_text(encoding="utf-8")
    answers.append(QtWidgets.QMessageBox.StandardButton.Yes)
    assert export(["second"]) == tmp_path / PAGE_NAME and "<p>second</p>" in (tmp_path / PAGE_NAME).read_text(encoding="utf-8")
    assert not answers and [p.name for p in tmp_path.iterdir()] == [PAGE_NAME]


# ---------------------------------------------------------------------------
# In a browser
# ---------------------------------------------------------------------------
def chromium(*args: str) -> bytes:
    exe = shutil.which(CHROMIUM)
    assert exe, "chromium is missing: install Debian's chromium package (.ci/run does)"
    done = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, timeout=60, check=True)
    return done.stdout


def shown_steps(dom: str) -> set[str]:
    """The data-step-item of every element the page shows (not hidden)."""
    tags = Tags(dom)
    return {a["data-step-item"] for t, a in tags.tags if "data-step-item" in a and "hidden" not in a}


@pytest.mark.slow
def test_in_chromium_the_step_changes_the_tokens_and_the_matrix(decoded_page, tmp_path):
    path, text, decoded = decoded_page
    n = len(decoded.steps)
    doms = {s: chromium("--dump-dom", f"{path.as_uri()}#step={s}").decode("utf-8") for s in (1, n)}
    assert shown_steps(doms[1]) == {"1"} and shown_steps(doms[n]) == {str(n)}
    assert '<main data-step="1"' in doms[1] and f'<main data-step="{n}"' in doms[n] and f"Step {n} of {n}" in doms[n]
    assert 'data-choice="cross 0 0 1"' in doms[1] and f'data-choice="cross 0 0 {n}"' in doms[n]  # the matrix drawn follows the step

    shots = {}
    for s in (1, n):
        chromium(f"--screenshot={tmp_path / f'{s}.png'}", "--window-size=1200,900", f"{path.as_uri()}#step={s}")
        shots[s] = np.asarray(Image.open(tmp_path / f"{s}.png").convert("L"), dtype=float)
    assert shots[1].shape == (900, 1200) and shots[1].std() > 10  # a page, not a blank
    changed = np.abs(shots[1] - shots[n]) > 40
    assert changed.mean() > 0.01 and changed[450:].mean() > 0.01  # the matrix below the controls, not only the step's label
