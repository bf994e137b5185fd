"""A teacher's tour file (.attnviz-tour): what the recorder writes loads back stop for stop, in
either language; the bundled tours load through the same loader; a hostile file is refused in one
line; and a file attnviz did not write is never replaced without the user's word. No Qt."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from attnviz.core.tour_data import LANGUAGES, MAX_STEPS, MAX_TEXT, StopState, TourError, load_tour, load_tour_file, model_name, tour_path
from attnviz.core.tour_file import (
    MARK,
    SUFFIX,
    RecordedStop,
    TourFileExists,
    check_stop,
    is_our_tour,
    marked_bytes,
    save_tour,
    tour_document,
)
from attnviz.paths import default_model, models_dir

VIEWS = ("grid", "head", "mask", "output")  # the views a window would offer


def stops() -> list[RecordedStop]:
    return [
        RecordedStop({"en": "Look at the first row.", "zh_CN": "看第一行。"}, "head", StopState("我喜欢吃鱼。", "", 2, "encoder", 0, 1, 3)),
        RecordedStop({"zh_CN": "只有中文。"}, "grid", StopState("猫吃鱼。", "", None, "cross", 2, 3, None)),
        RecordedStop({"en": "Forced: {mask_row} rows"}, "mask", StopState("这是最好的时代", "This is the best time.", 4, "decoder", 1, 0, 2)),
    ]


def test_a_saved_tour_loads_back_stop_for_stop_in_either_language(tmp_path):
    path = save_tour(tmp_path / "lesson", stops(), model_name(default_model()), VIEWS)
    assert path.name == "lesson" + SUFFIX and is_our_tour(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["model"] == "zh-en" and doc["version"] == 2 and list(doc)[-1] == MARK
    for language in LANGUAGES:
        tour = load_tour_file(path, language, VIEWS)
        assert tour.model == "zh-en" and tour.language == language
        assert [s.state for s in tour.stops] == [s.state for s in stops()]
        assert [s.view for s in tour.stops] == ["head", "grid", "mask"]
        assert [s.highlight for s in tour.stops] == ["view"] * 3
        assert tour.labels == load_tour(language).labels  # the panel's words: the bundled tour's
    assert [s.text for s in load_tour_file(path, "en", VIEWS).stops] == ["Look at the first row.", "只有中文。", "Forced: {mask_row} rows"]
    assert [s.text for s in load_tour_file(path, "zh_CN", VIEWS).stops] == ["看第一行。", "只有中文。", "Forced: {mask_row} rows"]


def test_the_bundled_tours_load_through_the_same_loader():
    for language in LANGUAGES:
        tour = load_tour_file(tour_path(language), views=VIEWS + ("attribution", "walkthrough", "scaling", "compare", "residual",
                                                                   "norm", "ffn", "model-info", "teacher-vs-free"))
        assert tour == load_tour(language) and tour.model is None


def test_a_model_outside_models_is_named_by_its_path_and_checked(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    shutil.copy(default_model() / "config.json", folder / "config.json")
    assert model_name(folder) == str(folder.absolute())
    assert model_name(models_dir() / "zh-en") == "zh-en"
    path = save_tour(tmp_path / "t", stops(), model_name(folder), VIEWS)
    assert load_tour_file(path, views=VIEWS).model == str(folder.absolute())
    shutil.rmtree(folder)
    with pytest.raises(TourError, match="this tour names the model .*my-model, which is not here"):
        load_tour_file(path, views=VIEWS)


def hostile(tmp_path: Path, change) -> Path:
    doc = tour_document(stops(), "zh-en")
    change(doc)
    path = tmp_path / "bad.attnviz-tour"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def _set_stop(i: int, *keys_and_value):
    *keys, value = keys_and_value

    def change(doc):
        obj = doc["stops"][i]
        for k in keys[:-1]:
            obj = obj[k]
        obj[keys[-1]] = value
    return change


HOSTILE = [
    (lambda d: d.update(version=3), "a tour of a newer attnviz (format 3"),
    (lambda d: d.update(version=0), "unknown tour format version 0"),
    (lambda d: d.update(colour="red"), "unknown key 'colour'"),
    (_set_stop(1, "colour", "red"), "stop 2: unknown key 'colour'"),
    (_set_stop(1, "text", {"en": " ", "zh_CN": ""}), "stop 2: 'text' is empty"),
    (_set_stop(1, "text", {"fr": "Bonjour"}), "stop 2: 'text': unknown language 'fr'"),
    (_set_stop(0, "text", "zh_CN", "长" * (MAX_TEXT + 1)), f"stop 1: 'text' in zh_CN is longer than {MAX_TEXT} characters"),
    (_set_stop(0, "text", "en", "It is 0.5 here"), "stop 1: the text writes a number (0.5…) by hand"),
    (_set_stop(2, "view", "bars"), "stop 3: unknown view 'bars'"),
    (_set_stop(2, "state", "steps", MAX_STEPS + 1), "stop 3: state: 'steps' 65537 is out of range"),
    (_set_stop(2, "state", "steps", 129), "stop 3: step 129 is out of range: the model zh-en decodes at most 128 tokens"),
    (_set_stop(2, "state", "selection", "layer", 4), "stop 3: layer 4 is out of range: the model zh-en has 3 decoder layers"),
    (_set_stop(2, "state", "selection", "head", 5), "stop 3: head 5 is out of range: the model zh-en has 4 heads"),
    (lambda d: d.update(model="no-such-model"), "this tour names the model no-such-model, which is not here"),
]


@pytest.mark.parametrize("change,words", HOSTILE, ids=[h[1] for h in HOSTILE])
def test_a_hostile_tour_is_refused_in_one_line(tmp_path, change, words):
    with pytest.raises(TourError) as info:
        load_tour_file(hostile(tmp_path, change), views=VIEWS)
    message = str(info.value)
    assert "\n" not in message and message.startswith("bad.attnviz-tour: ") and words in message, message


def test_a_stop_is_checked_when_it_is_recorded():
    check_stop(stops()[0], 1, VIEWS)
    with pytest.raises(TourError, match=r"^stop 4: 'text' is empty"):
        check_stop(RecordedStop({"en": "  "}, "grid", stops()[0].state), 4, VIEWS)
    with pytest.raises(TourError, match=r"^stop 2: unknown view 'beam-tree'"):
        check_stop(RecordedStop({"en": "x"}, "beam-tree", stops()[0].state), 2, VIEWS)


def test_only_a_tour_attnviz_wrote_is_replaced_without_asking(tmp_path):
    path = save_tour(tmp_path / "a", stops(), None, VIEWS)
    save_tour(path, stops()[:1], None, VIEWS)  # its own file: replaced
    assert len(load_tour_file(path, views=VIEWS).stops) == 1
    path.write_bytes(path.read_bytes().replace(b"\n", b"\n "))  # edited since (still a tour)
    assert not is_our_tour(path)
    before = path.read_bytes()
    with pytest.raises(TourFileExists):
        save_tour(path, stops(), None, VIEWS)
    assert path.read_bytes() == before
    save_tour(path, stops(), None, VIEWS, replace=True)  # the user agreed
    assert is_our_tour(path) and len(load_tour_file(path, views=VIEWS).stops) == 3
    notes = tmp_path / "notes.attnviz-tour"
    notes.write_text("my notes", encoding="utf-8")
    with pytest.raises(TourFileExists, match="exists and is not a tour attnviz wrote"):
        save_tour(notes, stops(), None, VIEWS)
    assert notes.read_text(encoding="utf-8") == "my notes"


def test_a_link_or_a_folder_is_never_written_through(tmp_path):
    target = tmp_path / "target.attnviz-tour"
    target.write_text("theirs", encoding="utf-8")
    link = tmp_path / "link.attnviz-tour"
    os.symlink(target, link)
    (tmp_path / "dir.attnviz-tour").mkdir()
    for path, what in ((link, "a symbolic link"), (tmp_path / "dir.attnviz-tour", "a folder")):
        with pytest.raises(TourError, match=what):
            save_tour(path, stops(), None, VIEWS, replace=True)
    assert target.read_text(encoding="utf-8") == "theirs"


def test_an_unwritable_place_is_one_line_and_leaves_nothing(tmp_path):
    with pytest.raises(TourError) as info:
        save_tour(tmp_path / "missing" / "t", stops(), None, VIEWS)
    assert "\n" not in str(info.value) and str(info.value).startswith("could not save the tour to ")
    assert not (tmp_path / "missing").exists()


def test_the_mark_is_the_hash_of_the_file_without_it():
    import hashlib

    doc = tour_document(stops(), None)
    data = marked_bytes(doc)
    marked = json.loads(data)
    plain = (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    assert marked[MARK] == "sha256=" + hashlib.sha256(plain).hexdigest()
    assert {k: v for k, v in marked.items() if k != MARK} == doc
