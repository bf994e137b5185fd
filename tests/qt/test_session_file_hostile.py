"""Hostile session files: a number too long to read, a strategy parameter out of its range, a view's
option or selection no Qt control holds are refused when the file is read (``load_state``,
``attnviz --session``, File → Open Session) in one line, and nothing in the window changes; a
huge weights file a session names is never read on the window's thread."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
from window_helpers import TIMEOUT_MS, close_shared_window, open_shared_window, open_window, wait_until

from attnviz.cli import main as cli_main
from attnviz.core.decoding.strategies import BEAM_WIDTH, BeamSearch, Sampling
from attnviz.qt.session_file import capture
from attnviz.qt.state import HASHED_FILES, QT_INT_MAX, AppState, SessionFileError, load_state, model_hash

ROOT = Path(__file__).resolve().parents[2]
SPARSE = 40 * 2**30  # bytes of the sparse weights file: written in an instant, never read


def _set(path: tuple, value):
    """A change of the saved JSON: ``value`` at ``path`` (keys into nested objects)."""

    def change(raw: dict) -> str:
        node = raw
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
        return json.dumps(raw)

    return change


def _long_number(raw: dict) -> str:
    return json.dumps(raw).replace('"source":', '"note": ' + "7" * 5000 + ', "source":', 1)


HOSTILE = {  # case -> (the change, the words of its one line)
    "a 5000-digit integer": (_long_number, "a number too long to read"),
    "temperature 10**400": (_set(("strategy",), {"name": "sample", "temperature": 10**400}), "temperature must be a finite number in [0.01, 100]"),
    "length penalty 10**400": (_set(("strategy",), {"name": "beam", "length_penalty": 10**400}), "length penalty must be a finite number in [0, 10]"),
    "length penalty Infinity": (_set(("strategy",), {"name": "beam", "length_penalty": float("inf")}), "length penalty must be"),
    "top-k 10**30": (_set(("strategy",), {"name": "sample", "top_k": 10**30}), "top-k (0: no limit) must be an integer in [0, 1,048,576]"),
    "beam width 100000": (_set(("strategy",), {"name": "beam", "width": 100_000}), "beam width must be an integer in [1, 64], not 100000"),
    "an unhashable strategy name": (_set(("strategy",), {"name": ["beam"]}), "unknown decoding strategy"),
    "lineTopK 2**40": (_set(("options", "lines", "lineTopK"), 2**40), "options.lines.lineTopK holds 1099511627776, out of range"),
    "an option NaN": (_set(("options", "lines", "lineTopK"), float("nan")), "options.lines.lineTopK holds nan, out of range"),
    "a selected layer 2**40": (_set(("selection", "layer"), 2**40), "selection.layer holds 1099511627776, out of range"),
    "an unlinked view's head -2**40": (_set(("own", "lines", "head"), -(2**40)), "own.lines.head holds"),
}


@pytest.fixture(scope="module")
def shared(qapp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile_sessions")
    w = open_shared_window(folder)
    saved = w.session_files.save(folder / "good.attnviz")
    yield w, json.loads(saved.read_text(encoding="utf-8")), folder
    close_shared_window(w)


def _hostile_file(folder: Path, raw: dict, case: str) -> Path:
    change, _ = HOSTILE[case]
    path = folder / f"{case.replace(' ', '_').replace('*', '^')}.attnviz"
    path.write_text(change(json.loads(json.dumps(raw))), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", HOSTILE)
def test_load_state_refuses_it_in_one_line(tmp_path, case):
    path = _hostile_file(tmp_path, json.loads(AppState().to_json()), case)
    with pytest.raises(SessionFileError) as info:
        load_state(path)
    assert HOSTILE[case][1] in str(info.value) and "\n" not in str(info.value) and len(str(info.value)) < 400


@pytest.mark.parametrize("case", HOSTILE)
def test_the_window_refuses_it_and_changes_nothing(shared, case):
    window, raw, folder = shared
    before = asdict(capture(window))
    assert not window.session_files.open(_hostile_file(folder, raw, case))
    text = window.message_bar.text()
    assert window.message_bar.property("level") == "error" and HOSTILE[case][1] in text and "\n" not in text
    assert asdict(capture(window)) == before


@pytest.mark.parametrize("case", ["a 5000-digit integer", "beam width 100000", "lineTopK 2**40"])
def test_the_command_line_refuses_it_in_one_line(tmp_path, capsys, case):
    path = _hostile_file(tmp_path, json.loads(AppState().to_json()), case)
    assert cli_main(["--session", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert HOSTILE[case][1] in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_strategy_at_the_ends_of_its_ranges_is_restored(shared):
    """The widest beam is shown as it is; a seed past what a spin box holds restores (no overflow),
    decoded with the saved seed, shown at the control's limit."""
    window, raw, folder = shared
    for strategy, shown in (({"name": "beam", "width": BEAM_WIDTH.high, "length_penalty": 0.0}, ("beamWidthSpin", BEAM_WIDTH.high)),
                            ({"name": "sample", "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 2**40}, ("seedSpin", QT_INT_MAX))):
        path = folder / "ends.attnviz"
        path.write_text(_set(("strategy",), strategy)(json.loads(json.dumps(raw))), encoding="utf-8")
        assert window.session_files.open(path)
        wait_until(lambda: not window.session.running and window.session.decoding is not None)
        expected = BeamSearch(width=BEAM_WIDTH.high, length_penalty=0.0) if strategy["name"] == "beam" else Sampling(seed=2**40)
        assert window.session.strategy == expected
        assert getattr(window.step_bar, {"beamWidthSpin": "beam_spin", "seedSpin": "seed_spin"}[shown[0]]).value() == shown[1]
        assert window.message_bar.property("level") != "error"


def _bytes_read() -> int:
    """Bytes this process has read so far, page cache included (Linux's /proc/self/io rchar)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_a_huge_sparse_weights_file_is_never_hashed(qtbot, tmp_path):
    folder = shutil.copytree(ROOT / "models" / "reverse", tmp_path / "huge")
    with open(folder / "model.safetensors", "r+b") as f:
        f.truncate(SPARSE)
    assert HASHED_FILES["model.safetensors"] < SPARSE and model_hash(folder) is None
    session = tmp_path / "huge.attnviz"
    session.write_text(AppState(model_path=str(folder), model_hash="0" * 64, source="1 2 3").to_json(), encoding="utf-8")
    window = open_window(qtbot, tmp_path)
    try:
        start = _bytes_read()
        assert window.session_files.open(session)
        assert _bytes_read() - start < 64 * 2**20  # the session and the config, not 40 GiB
        qtbot.waitUntil(lambda: window.message_bar.property("level") == "error", timeout=TIMEOUT_MS)  # the loader refuses it in one line
        assert "\n" not in window.message_bar.text()
    finally:
        window.session.stop_run()
        window.session.wait_for_workers(5000)
