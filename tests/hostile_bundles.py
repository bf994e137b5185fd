"""A corpus of hostile model bundles, generated from a valid tiny one (no committed binaries).

``valid_bundle(folder)`` saves a tiny random model (1+1 layers, d_model 16) with the tiny
tokenizers of ``tiny_models`` and returns its path. ``hostile_bundles(folder)`` builds every
hostile case under ``folder`` and returns ``[(name, path)]``: each path must be refused by
``load_bundle`` with a one-line ``BundleError`` (and by every command and the app with one
line). ``PICKLE_MARKER`` is the file the pickle payload would create if it were ever run.
The folders of other model families (Marian's), keyed by family, are in ``hostile_folders.py``.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from attnviz.core.bundle import CONFIG, META, META_LIMIT, SRC_TOK, TGT_TOK, WEIGHTS, save_bundle
from attnviz.core.model.config import FIELDS, Rule, TransformerConfig
from attnviz.core.model.transformer import Transformer

from tiny_models import tokenizers

PICKLE_MARKER = "PAYLOAD_RAN"  # created next to the corpus if the pickle payload ever runs

# config field -> values it must never accept beyond those ``bad_values`` derives from its ``FIELDS`` row
BAD_CONFIG_VALUES: dict[str, list] = {
    "src_vocab_size": [10**12, 60.0],
    "d_model": [1e9, 17],
    "n_heads": [3],
    "n_encoder_layers": [1000000],
    "n_decoder_layers": [1000000],
    "norm": ["<b>bold</b>", "Layer"],
    "final_norm": ["no"],
    "norm_eps": [[1e-5], 1e30],
    "pad_id": [3, 5000],
    "unk_id": [0],
    "bos_id": [3],
    "eos_id": [5000],
}


def bad_values(rule: Rule) -> list:
    """Values outside ``rule``: a wrong type, null (unless allowed), a bool for a number, and one
    past each end of its range."""
    wrong_type = {int: "1", float: "0.1", bool: 1, str: 1}[rule.kind]
    values = [wrong_type, {"nested": [1]}]
    if not rule.nullable:
        values.append(None)
    if rule.kind in (int, float):
        values.append(True)
        step = 1 if rule.kind is int else 0.5
        if rule.low is not None:
            values.append(rule.low if rule.low_open else rule.low - step)
        if rule.high is not None:
            values.append(rule.high if rule.high_open else rule.high + step)
    if rule.kind is str and rule.choices:
        values.append("<b>" + rule.choices[0] + "</b>")
    return values


def valid_bundle(folder: Path, name: str = "valid") -> Path:
    """A tiny valid bundle at ``folder / name``."""
    src, tgt = tokenizers()
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=src.vocab_size, tgt_vocab_size=tgt.vocab_size, d_model=16, n_heads=2,
                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=40)
    return save_bundle(Path(folder) / name, Transformer(cfg).eval(), src, tgt, {"note": "hostile corpus base"})


def hostile_bundles(folder: Path) -> list[tuple[str, Path]]:
    """Every hostile case as ``(name, bundle path)``, built under ``folder`` from one valid tiny bundle."""
    folder = Path(folder)
    base = valid_bundle(folder, ".base")
    cases: list[tuple[str, Path]] = []

    def case(name: str, change: Callable[[Path], None]) -> None:
        path = folder / name
        shutil.copytree(base, path)
        change(path)
        cases.append((name, path))

    for name, change in [*_config_cases(base), *_meta_cases(), *_weight_cases(base, folder), *_tokenizer_cases(), *_folder_cases()]:
        case(name, change)
    return cases


def _write(name: str, data: bytes | str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        (path / name).write_bytes(data.encode() if isinstance(data, str) else data)

    return change


def _sparse(name: str, size: int) -> Callable[[Path], None]:
    """A file of ``size`` bytes that takes no room on disk."""

    def change(path: Path) -> None:
        with open(path / name, "wb") as fh:
            fh.truncate(size)

    return change


def _config_cases(base: Path) -> list[tuple[str, Callable[[Path], None]]]:
    good = json.loads((base / CONFIG).read_text())
    cases = [
        ("config-not-json", _write(CONFIG, "{d_model: 16")),
        ("config-empty", _write(CONFIG, "")),
        ("config-not-utf8", _write(CONFIG, b'{"norm": "\xff\xfe"}')),
        ("config-nested", _write(CONFIG, "[" * 30_000 + "]" * 30_000)),
        ("config-nested-object", _write(CONFIG, '{"a":' * 50 + "1" + "}" * 50)),
        ("config-a-list", _write(CONFIG, "[1, 2, 3]")),
        ("config-huge-file", _write(CONFIG, json.dumps(good) + " " * 200_000)),
        ("config-nan", _write(CONFIG, json.dumps({**good, "norm_eps": float("nan")}))),
        ("config-unknown-field", _write(CONFIG, json.dumps({**good, "evil": 1}))),
        ("config-over-budget", _write(CONFIG, json.dumps({**good, "d_model": 65536, "d_ff": 1048576, "n_encoder_layers": 200,
                                                          "n_decoder_layers": 200}))),
        ("config-special-ids-swapped", _write(CONFIG, json.dumps({**good, "pad_id": 3, "eos_id": 0}))),
    ]
    for field in ("d_model", "src_vocab_size", "n_heads"):
        cases.append((f"config-missing-{field}", _write(CONFIG, json.dumps({k: v for k, v in good.items() if k != field}))))
    for field, rule in FIELDS.items():
        for i, value in enumerate(bad_values(rule) + BAD_CONFIG_VALUES.get(field, [])):
            cases.append((f"config-{field}-{i}", _write(CONFIG, json.dumps({**good, field: value}))))
    return cases


def _meta_cases() -> list[tuple[str, Callable[[Path], None]]]:
    meta = {"format": "attnviz-bundle", "format_version": 1}
    return [
        ("meta-not-json", _write(META, "not json")),
        ("meta-nested", _write(META, "[" * 100_000 + "]" * 100_000)),
        ("meta-deep-object", _write(META, json.dumps({**meta, "history": [json.loads('{"a":' * 40 + "1" + "}" * 40)]}))),
        ("meta-too-large", _sparse(META, META_LIMIT + 1)),
        ("meta-no-format", _write(META, json.dumps({"format_version": 1}))),
        ("meta-version-string", _write(META, json.dumps({**meta, "format_version": "1"}))),
        ("meta-history-string", _write(META, json.dumps({**meta, "history": "all of it"}))),
        ("meta-step-bool", _write(META, json.dumps({**meta, "step": True}))),
    ]


def _weight_cases(base: Path, folder: Path) -> list[tuple[str, Callable[[Path], None]]]:
    good = (base / WEIGHTS).read_bytes()
    state = st_load(good)
    name = next(k for k in state if k.endswith("weight") and state[k].dim() == 2)
    return [
        ("weights-pickle", _write(WEIGHTS, pickle.dumps(_Payload(str(folder / PICKLE_MARKER))))),
        ("weights-torch-save", _write(WEIGHTS, _torch_save(state))),
        ("weights-truncated", _write(WEIGHTS, good[: len(good) // 2])),
        ("weights-empty", _write(WEIGHTS, b"")),
        ("weights-garbage", _write(WEIGHTS, os.urandom(4096))),
        ("weights-huge-header", _write(WEIGHTS, struct.pack("<Q", 2**60) + b"{}")),
        ("weights-too-large", _sparse(WEIGHTS, len(good) + 64 * 1024 * 1024)),
        ("weights-wrong-shape", _write(WEIGHTS, st_save({**state, name: torch.zeros(3, 3)}))),
        ("weights-wrong-dtype", _write(WEIGHTS, st_save({**state, name: state[name].double()}))),
        ("weights-missing-tensor", _write(WEIGHTS, st_save({k: v for k, v in state.items() if k != name}))),
        ("weights-extra-tensor", _write(WEIGHTS, st_save({**state, "evil.weight": torch.zeros(2)}))),
        ("weights-nan", _write(WEIGHTS, st_save({**state, name: torch.full_like(state[name], float("nan"))}))),
        ("weights-overflow", _write(WEIGHTS, st_save({k: torch.full_like(v, 3e38, dtype=torch.float32) if v.is_floating_point() else v
                                                       for k, v in state.items()}))),
    ]


def _torch_save(state: dict[str, torch.Tensor]) -> bytes:
    import io

    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


class _Payload:
    """Unpickling this creates ``marker`` (a loader that unpickles would run it)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _tokenizer_cases() -> list[tuple[str, Callable[[Path], None]]]:
    def swap(path: Path) -> None:
        src, tgt = (path / SRC_TOK).read_bytes(), (path / TGT_TOK).read_bytes()
        (path / SRC_TOK).write_bytes(tgt)
        (path / TGT_TOK).write_bytes(src)

    return [
        ("tokenizers-swapped", swap),
        ("tokenizer-garbage", _write(SRC_TOK, os.urandom(2048))),
        ("tokenizer-empty", _write(TGT_TOK, b"")),
        ("tokenizer-json", _write(SRC_TOK, '{"vocab": ["a"]}')),
        ("tokenizer-nested-json", _write(SRC_TOK, '{"a":' * 100_000 + "1" + "}" * 100_000)),
        ("tokenizer-too-large", _sparse(TGT_TOK, 65 * 1024 * 1024)),
    ]


def _folder_cases() -> list[tuple[str, Callable[[Path], None]]]:
    def remove(name: str) -> Callable[[Path], None]:
        return lambda path: (path / name).unlink()

    def config_folder(path: Path) -> None:
        (path / CONFIG).unlink()
        (path / CONFIG).mkdir()

    def fifo(path: Path) -> None:
        (path / META).unlink()
        os.mkfifo(path / META)

    return [
        ("missing-config", remove(CONFIG)),
        ("missing-weights", remove(WEIGHTS)),
        ("missing-tokenizer", remove(SRC_TOK)),
        ("config-is-a-folder", config_folder),
        ("meta-is-a-fifo", fifo),
    ]
