"""Session files as data: a state round-trips through its JSON; a damaged, foreign, future or
mistyped file is refused in one line; writes are atomic and never replace a folder."""

from __future__ import annotations

import json

import pytest

from attnviz.qt.state import MAX_BYTES, VERSION, AppState, SessionFileError, load_state, model_hash, save_state


def sample() -> AppState:
    return AppState(model_path="/m", model_hash="ab", source="猫吃鱼。", target="", strategy={"name": "beam", "width": 3, "length_penalty": 1.0},
                    tokens=[5, 9, 3], forced=[1], selection={"kind": "encoder", "layer": 1, "head": 2, "mode": "head", "query": None},
                    own={"lines": {"kind": "cross", "layer": 0, "head": 0, "mode": "mean", "query": None}},
                    options={"grid": {"kindCombo": 2}}, theme="dark")


def test_a_state_round_trips(tmp_path):
    path = save_state(sample(), tmp_path / "s")
    assert path.name == "s.attnviz"
    assert load_state(path) == sample()
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["format"] == "attnviz-session" and raw["version"] == VERSION and raw["source"] == "猫吃鱼。"


@pytest.mark.parametrize("text, why", [
    ("{", "damaged JSON"),
    ("[]", "not an attnviz session"),
    ('{"format": "other"}', "not an attnviz session"),
    ('{"format": "attnviz-session"}', "no format version"),
    ('{"format": "attnviz-session", "version": 99}', "newer attnviz"),
    ('{"format": "attnviz-session", "version": 1, "tokens": ["x"]}', "'tokens' has the wrong type"),
    ('{"format": "attnviz-session", "version": 1, "source": 5}', "'source' has the wrong type"),
    ('{"format": "attnviz-session", "version": 1, "forced": [-1]}', "'forced' has the wrong type"),
])
def test_a_bad_file_is_refused_in_one_line(tmp_path, text, why):
    path = tmp_path / "bad.attnviz"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SessionFileError) as info:
        load_state(path)
    assert why in str(info.value) and "\n" not in str(info.value)


def test_files_that_are_not_session_files(tmp_path):
    (tmp_path / "big.attnviz").write_bytes(b" " * (MAX_BYTES + 1))
    (tmp_path / "bin.attnviz").write_bytes(b"\xff\xfe\x00")
    for name, why in (("big.attnviz", "too large"), ("bin.attnviz", "not UTF-8"), ("missing.attnviz", "no such session file")):
        with pytest.raises(SessionFileError, match=why):
            load_state(tmp_path / name)
    with pytest.raises(SessionFileError, match="not a regular file"):
        load_state(tmp_path)


def test_saving_is_atomic_and_refuses_what_it_cannot_write(tmp_path):
    folder = tmp_path / "dir.attnviz"
    folder.mkdir()
    with pytest.raises(SessionFileError, match="could not save"):
        save_state(sample(), folder)
    assert folder.is_dir() and not any(folder.iterdir())
    with pytest.raises(SessionFileError, match="could not save"):
        save_state(sample(), tmp_path / "missing" / "s.attnviz")
    path = save_state(sample(), tmp_path / "s.attnviz")
    save_state(AppState(source="new"), path)
    assert load_state(path).source == "new"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no partial file left


def test_the_model_hash_follows_its_weights(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert model_hash(tmp_path) is None  # no weights: no hash
    (tmp_path / "model.safetensors").write_bytes(b"abc")
    first = model_hash(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"abd")
    assert first is not None and model_hash(tmp_path) != first
