"""The tour files (resources/tour/*.json): both languages load, have the same stops in the same
order, quote only measures that exist, and a broken file is refused in one line naming the file
and the stop. No Qt."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.core.tour_data import (
    LANGUAGES,
    MEASURES,
    REGIONS,
    VIEWS,
    TourError,
    check_same_tour,
    fields_of,
    fill,
    load_tour,
    load_tour_file,
    tour_path,
)

#: The tutorial's terms a Chinese reader looks for (TUTORIAL-MAP.md).
TERMS_ZH = ("注意力机制", "多头注意力", "位置编码", "掩码", "残差连接", "层归一化", "批归一化", "前馈网络", "教师强制", "交叉注意力")


@pytest.fixture(scope="module")
def tours():
    return {lang: load_tour(lang) for lang in LANGUAGES}


def raw(language: str = "en") -> dict:
    return json.loads(tour_path(language).read_text(encoding="utf-8"))


def test_both_languages_load_with_the_same_stops_in_the_same_order(tours):
    en, zh = tours["en"], tours["zh_CN"]
    assert en.language == "en" and zh.language == "zh_CN"
    assert len(en.stops) >= 15
    assert en.ids() == zh.ids()
    check_same_tour(en, zh)
    check_same_tour(zh, en)


def test_the_stops_follow_the_tutorial(tours):
    ids = tours["en"].ids()
    order = ("weighted-sums", "importance", "qkv", "scaling", "softmax", "z-av", "multi-head", "positional-encoding",
             "residual-layernorm", "layernorm-vs-batchnorm", "ffn", "encoder-decoder-stacks", "shift-right",
             "teacher-forcing", "look-ahead-mask", "cross-attention", "output-softmax")
    assert ids == order


def test_every_placeholder_has_a_measure_of_its_view(tours):
    for tour in tours.values():
        for stop in tour.stops:
            assert REGIONS[stop.highlight] in (None, stop.view)
            assert stop.view in VIEWS
            for name, _spec in fields_of(stop.text):
                assert name in MEASURES, (tour.language, stop.id, name)
                assert MEASURES[name].view in (None, stop.view), (stop.id, name)
            assert stop.placeholders(), f"{stop.id} quotes no live number"


def test_the_panel_words_and_the_chinese_terms(tours):
    zh = tours["zh_CN"]
    assert zh.labels.counter.format(n=2, total=17) == "第 2 站，共 17 站"
    text = "".join(s.title + s.text for s in zh.stops)
    missing = [t for t in TERMS_ZH if t not in text]
    assert not missing, missing


def test_fill_writes_a_dash_for_what_is_missing():
    assert fill("sum {a:.3f}, top “{b}”, {c}", {"a": 0.99999, "b": "猫"}) == "sum 1.000, top “猫”, —"


def test_the_core_reads_tours_without_qt():
    code = "import sys, attnviz.core.tour_data as t; t.load_tour('zh_CN'); assert 'PySide6' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- a broken file is refused in one line ---------------------------------------------------------
def _stop(doc: dict, stop_id: str) -> dict:
    return next(s for s in doc["stops"] if s["id"] == stop_id)


def _set(path: tuple, value):
    def change(doc):
        obj = _stop(doc, path[0]) if path and path[0] in {s["id"] for s in doc["stops"]} else doc
        keys = path[1:] if obj is not doc else path
        for k in keys[:-1]:
            obj = obj[k]
        if value is KeyError:
            del obj[keys[-1]]
        else:
            obj[keys[-1]] = value
        return doc
    return change


BROKEN = [
    (_set(("look-ahead-mask", "colour"), "red"), "look-ahead-mask", "unknown key 'colour'"),
    (_set(("look-ahead-mask", "view"), "bars"), "look-ahead-mask", "unknown view 'bars'"),
    (_set(("look-ahead-mask", "highlight"), "everything"), "look-ahead-mask", "unknown highlight"),
    (_set(("look-ahead-mask", "highlight"), "head-row"), "look-ahead-mask", "lies in the head view"),
    (_set(("look-ahead-mask", "text"), "exactly {mask_upper_maximum:g}"), "look-ahead-mask", "unknown measure {mask_upper_maximum}"),
    (_set(("look-ahead-mask", "text"), "row {head_row_sum:.3f}"), "look-ahead-mask", "reads the head view"),
    (_set(("look-ahead-mask", "text"), "cells {mask_masked:.3s}"), "look-ahead-mask", "does not fit an integer"),
    (_set(("look-ahead-mask", "text"), "sums to 1.000 {mask_row}"), "look-ahead-mask", "by hand"),
    (_set(("look-ahead-mask", "text"), "{mask_row!r}"), "look-ahead-mask", "plain measure name"),
    (_set(("look-ahead-mask", "text"), "{mask_row"), "look-ahead-mask", "braces"),
    (_set(("look-ahead-mask", "text"), KeyError), "look-ahead-mask", "missing key 'text'"),
    (_set(("look-ahead-mask", "state", "steps"), -1), "look-ahead-mask", "'steps'"),
    (_set(("look-ahead-mask", "state", "selection", "layer"), 0), "look-ahead-mask", "from 1"),
    (_set(("look-ahead-mask", "state", "selection", "kind"), "self"), "look-ahead-mask", "unknown kind 'self'"),
    (_set(("look-ahead-mask", "state", "focus"), "开心"), "look-ahead-mask", "'focus'"),
    (_set(("look-ahead-mask", "state", "source"), ""), "look-ahead-mask", "'source'"),
    (_set(("look-ahead-mask", "id"), "qkv"), "qkv", "used twice"),
    (_set(("labels", "counter"), "{n}"), None, "'counter'"),
    (_set(("version",), 99), None, "newer"),
    (_set(("format",), "other"), None, "not an attnviz tour"),
    (_set(("stops",), []), None, "'stops'"),
]


@pytest.mark.parametrize("change,stop_id,words", BROKEN, ids=[b[2] for b in BROKEN])
def test_a_broken_tour_is_refused_in_one_line_naming_the_file_and_the_stop(tmp_path, change, stop_id, words):
    path = tmp_path / "en.json"
    path.write_text(json.dumps(change(copy.deepcopy(raw()))), encoding="utf-8")
    with pytest.raises(TourError) as info:
        load_tour_file(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith("en.json: "), message
    assert words in message, message
    if stop_id is not None:
        assert f"stop {stop_id!r}" in message, message


@pytest.mark.parametrize("content,words", [(b"{", "damaged JSON"), (b"\xff\xfe", "not UTF-8"), (b"[]", "JSON object")])
def test_a_file_that_is_no_tour_is_refused_in_one_line(tmp_path, content, words):
    path = tmp_path / "zh_CN.json"
    path.write_bytes(content)
    with pytest.raises(TourError, match=words) as info:
        load_tour_file(path)
    assert "\n" not in str(info.value) and str(info.value).startswith("zh_CN.json: ")
    with pytest.raises(TourError, match="no tour in 'fr'"):
        tour_path("fr")
    with pytest.raises(TourError, match="could not read"):
        load_tour_file(tmp_path / "missing.json")


def _translation(tmp_path: Path, change) -> Path:
    doc = change(raw("zh_CN"))
    path = tmp_path / "zh_CN.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def _swap_first_two(doc):
    doc["stops"][0], doc["stops"][1] = doc["stops"][1], doc["stops"][0]
    return doc


def _drop_last(doc):
    doc["stops"].pop()
    return doc


@pytest.mark.parametrize("change,words", [
    (_swap_first_two, "another order"),
    (_drop_last, "lacks ['output-softmax']"),
    (_set(("look-ahead-mask", "state", "selection", "head"), 2), "stop 'look-ahead-mask': its state differs"),
    (_set(("look-ahead-mask", "text"), "{mask_row}"), "stop 'look-ahead-mask': it quotes"),
])
def test_a_translation_must_have_the_same_stops(tmp_path, change, words):
    en = load_tour("en")
    other = load_tour_file(_translation(tmp_path, change))
    with pytest.raises(TourError) as info:
        check_same_tour(en, other)
    assert "\n" not in str(info.value) and words in str(info.value), str(info.value)
