"""``attnviz tour --check FILE``: ``ok: N stops`` (exit 0) for a good tour file, the bundled tours
included; one line ``attnviz: error: FILE: …`` (exit 2), no traceback, for each kind of defect."""

from __future__ import annotations

import json

import pytest

from attnviz.cli import main
from attnviz.core.tour_data import MAX_TEXT, StopState, tour_path
from attnviz.core.tour_file import RecordedStop, save_tour, tour_document

VIEWS = ("grid", "head", "mask")


def stops() -> list[RecordedStop]:
    return [RecordedStop({"en": "One.", "zh_CN": "一。"}, "head", StopState("我喜欢吃鱼。", "", 2, "encoder", 0, 1, 3)),
            RecordedStop({"zh_CN": "二。"}, "grid", StopState("猫吃鱼。", "", None, "cross", 2, 3, None)),
            RecordedStop({"en": "Three."}, "mask", StopState("鱼吃猫。", "", 4, "decoder", 1, 0, None))]


def check(path, capsys) -> tuple[int, str, str]:
    code = main(["tour", "--check", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_good_tour_is_ok(tmp_path, capsys):
    path = save_tour(tmp_path / "lesson", stops(), "zh-en", VIEWS)
    assert check(path, capsys) == (0, "ok: 3 stops\n", "")
    assert main(["tour", "--check", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"file": str(path), "ok": True, "stops": 3, "model": "zh-en"}


def test_the_bundled_tours_are_ok(capsys):
    for language in ("en", "zh_CN"):
        assert check(tour_path(language), capsys) == (0, "ok: 17 stops\n", "")


def _doc(change):
    def write(path):
        doc = tour_document(stops(), "zh-en")
        change(doc)
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return write


def _stop(i, key, value):
    def change(doc):
        obj = doc["stops"][i]
        for k in key[:-1]:
            obj = obj[k]
        obj[key[-1]] = value
    return _doc(change)


HOSTILE = {
    "not JSON": (lambda p: p.write_text('{"format": "attnviz-tour", "version": 2,', encoding="utf-8"), "not a tour file (damaged JSON"),
    "not UTF-8": (lambda p: p.write_bytes(b"\xff\xfe{}"), "not a tour file (not UTF-8 text)"),
    "too large": (lambda p: p.write_bytes(b" " * (1024 * 1024 + 1)), "too large for a tour file"),
    "wrong version": (_doc(lambda d: d.update(version=7)), "a tour of a newer attnviz (format 7"),
    "no version": (_doc(lambda d: d.update(version="2")), "unknown tour format version '2'"),
    "unknown key": (_doc(lambda d: d.update(teacher="me")), "unknown key 'teacher'"),
    "unknown stop key": (_stop(0, ("colour",), "red"), "stop 1: unknown key 'colour'"),
    "no text": (_stop(1, ("text",), {}), "stop 2: 'text' is empty"),
    "text missing": (_doc(lambda d: d["stops"][2].pop("text")), "stop 3: missing key 'text'"),
    "text too long": (_stop(0, ("text", "en"), "x" * (MAX_TEXT + 1)), f"stop 1: 'text' in en is longer than {MAX_TEXT} characters"),
    "unknown view": (_stop(2, ("view",), "bar-chart"), "stop 3: unknown view 'bar-chart'"),
    "step out of range": (_stop(2, ("state", "steps"), 500), "stop 3: step 500 is out of range: the model zh-en decodes at most 128 tokens"),
    "negative step": (_stop(2, ("state", "steps"), -1), "stop 3: state: 'steps' must be a count of tokens"),
    "model not here": (_doc(lambda d: d.update(model="zh-en-gone")), "this tour names the model zh-en-gone, which is not here"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_tour_is_one_line_exit_2(tmp_path, capsys, name):
    write, words = HOSTILE[name]
    path = tmp_path / "hostile.attnviz-tour"
    write(path)
    code, out, err = check(path, capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"attnviz: error: {path}: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert words in err and "Traceback" not in err, err


def test_a_missing_file_is_one_line(tmp_path, capsys):
    code, out, err = check(tmp_path / "none.attnviz-tour", capsys)
    assert code == 2 and err.count("\n") == 1 and "could not read the tour" in err  # the CLI's stderr: data, not UI text
