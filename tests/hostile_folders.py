"""Hostile model folders of other families than attnviz's own bundles, keyed by family ("marian"
today): each case a mutation of a valid tiny folder of that family (no committed binaries).

``hostile_folders(family, folder)`` builds every case of ``FAMILIES[family]`` under ``folder`` and
returns ``[HostileFolder]``: each must be refused by every way in (``attnviz import-hf``,
``attnviz translate --model``, the window's File -> Open) with one line matching its ``expect``
pattern, and leave every file it holds as it was.

A family is a ``Family``: how to build a valid folder, which file is its config and which its
weights, the files it reads (the file mutations, a link to ``/dev/zero``, a FIFO, a folder, an
unreadable file, ..., apply to each), and its own config and weight mutations. The weight
mutations every safetensors family shares (``common_weight_cases``) take its state dict, so a new
family adds a ``Family`` row and runs against the same tests.

Unreadable files are ``chmod 000``; where the tests run as root (who reads them anyway),
``deny_unreadable`` makes the capped reader see them as a non-root user would.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from hostile_bundles import PICKLE_MARKER, _Payload
from safetensors.torch import load_file, save_file

Change = Callable[[Path], None]  # mutates a copy of the valid folder in place
StateChange = Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]]


@dataclass(frozen=True)
class HostileFolder:
    """One case: its name, its folder, and a regular expression its one-line refusal must match."""

    name: str
    path: Path
    expect: str


@dataclass(frozen=True)
class Family:
    """What the corpus needs to know of one model family."""

    name: str
    build: Callable[[Path], Path]  # a valid tiny folder of this family at the given path
    config: str  # the config file's name (JSON)
    weights: str  # the safetensors weights file's name
    files: tuple[str, ...]  # every file a folder of this family has that is read
    config_cases: Callable[[dict], list[tuple[str, dict, str]]]  # good config -> (name, bad config, expect)
    weight_cases: Callable[[dict[str, torch.Tensor]], list[tuple[str, StateChange, str]]]  # family-specific
    other_cases: Callable[[Path], list[tuple[str, Change, str]]]  # valid folder -> anything else


# -- the file mutations every family shares -----------------------------------------------------
def _replace(name: str, make: Callable[[Path], None]) -> Change:
    def change(folder: Path) -> None:
        (folder / name).unlink()
        make(folder / name)

    return change


def _write(name: str, data: bytes | str) -> Change:
    return lambda folder: (folder / name).write_bytes(data.encode() if isinstance(data, str) else data)


def _sparse(size: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with open(path, "wb") as fh:
            fh.truncate(size)

    return make


def file_cases(family: Family) -> list[tuple[str, Change, str]]:
    """Each file of ``family`` replaced by what a file of a model folder must never be."""
    cases = []
    for name in family.files:
        cases += [
            (f"{name}-dev-zero", _replace(name, lambda p: p.symlink_to("/dev/zero")), rf"{name}: is a device \(through a symbolic link\)"),
            (f"{name}-fifo", _replace(name, os.mkfifo), rf"{name}: is a named pipe \(FIFO\)"),
            (f"{name}-folder", _replace(name, Path.mkdir), rf"{name}: is a folder, not a regular file"),
            (f"{name}-unreadable", lambda folder, n=name: os.chmod(folder / n, 0), rf"{name}: permission denied"),
            (f"{name}-missing", lambda folder, n=name: (folder / n).unlink(), rf"{name}: missing|no weights"),
            (f"{name}-huge-sparse", _replace(name, _sparse(6 * 2**30)), rf"{name}: is 6,442,450,944 bytes"),
            (f"{name}-dangling-link", _replace(name, lambda p: p.symlink_to(p.parent / "nowhere")), rf"{name}: missing"),
        ]
    return cases


# -- the weight mutations every safetensors family shares ---------------------------------------
def _header_only(n: int, header: dict | None = None) -> bytes:
    text = json.dumps(header).encode() if header is not None else b"{}"
    return struct.pack("<Q", n if header is None else len(text)) + text


def common_weight_cases(family: Family, state: dict[str, torch.Tensor]) -> list[tuple[str, Change, str]]:
    """A family's safetensors file: a lying header, a damaged file, tensors that are not what the config says."""
    w = family.weights
    name = next(k for k, v in sorted(state.items()) if v.dim() == 2 and min(v.shape) > 1)  # a matrix the config explains
    n = 6 * 2**30 // 4
    lying = {name: {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}}
    states: list[tuple[str, StateChange, str]] = [
        ("weights-extra-tensor", lambda s: {**s, "evil.weight": torch.zeros(2, 2)}, r"'evil.weight'"),
        ("weights-missing-tensor", lambda s: {k: v for k, v in s.items() if k != name}, r"missing from the weights"),
        ("weights-wrong-shape", lambda s: {**s, name: torch.zeros(3, 3)}, r"has shape \(3, 3\)"),
        ("weights-nan", lambda s: {**s, name: torch.full_like(s[name], float("nan"))}, r"NaN or infinite"),
        ("weights-inf", lambda s: {**s, name: torch.full_like(s[name], float("inf"))}, r"NaN or infinite"),
        ("weights-overflow", lambda s: {k: torch.full_like(v, 3e38) for k, v in s.items()}, r"the weights overflow"),
        ("weights-integers", lambda s: {**s, name: s[name].to(torch.int32)}, r"holds torch.int32"),
        ("weights-float8", lambda s: {**s, name: s[name].to(torch.float8_e4m3fn)}, r"holds torch.float8_e4m3fn"),
    ]
    cases = [(case, _state_change(w, change), expect) for case, change, expect in states]
    return cases + [
        ("weights-huge-header", _write(w, _header_only(2**60)), r"a header of"),
        ("weights-header-past-the-file", _write(w, _header_only(0, lying) + b"\0" * 64), r"tensors hold 6,442,450,944 bytes, the file 64"),
        ("weights-sparse-as-declared", _replace(w, _sparse_declared(lying, 4 * n)), rf"{w}: is 6,442,45\d,\d\d\d bytes, more than"),
        ("weights-truncated", lambda folder: _truncate(folder / w), r"not a valid safetensors file"),
        ("weights-garbage", _write(w, bytes(range(256)) * 16), r"not a valid safetensors file"),
        ("weights-empty", _write(w, b""), r"not a valid safetensors file"),
        ("weights-pickle-instead", _pickled_instead(w), r"pytorch_model.bin: refused"),
    ]


def _state_change(weights: str, change: StateChange) -> Change:
    def apply(folder: Path) -> None:
        save_file(change(load_file(folder / weights)), folder / weights)

    return apply


def _sparse_declared(header: dict, data_size: int) -> Callable[[Path], None]:
    """A header declaring ``data_size`` bytes and a sparse file that long: consistent, and far too large."""
    def make(path: Path) -> None:
        head = _header_only(0, header)
        with open(path, "wb") as fh:
            fh.write(head)
            fh.truncate(len(head) + data_size)

    return make


def _truncate(file: Path) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def _pickled_instead(weights: str) -> Change:
    """No safetensors file, and a ``pytorch_model.bin`` whose unpickling would create ``PICKLE_MARKER``."""
    def change(folder: Path) -> None:
        (folder / weights).unlink()
        (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(str(folder.parent / PICKLE_MARKER))))

    return change


def _config_change(file: str, config: dict) -> Change:
    return _write(file, json.dumps(config))


# -- the Marian family ------------------------------------------------------------------------------
def _marian_build(path: Path) -> Path:
    from tiny_marian import build_marian  # needs transformers (the hf extra)

    return build_marian(path)


def _marian_config_cases(good: dict) -> list[tuple[str, dict, str]]:
    return [
        ("config-fewer-encoder-layers", {**good, "encoder_layers": 1}, r"does not explain, e.g. 'encoder.layers.1."),
        ("config-more-decoder-layers", {**good, "decoder_layers": 3}, r"missing from the weights, e.g. 'decoder.layers.2."),
        ("config-wider-model", {**good, "d_model": 32}, r"has shape"),
        ("config-larger-vocabulary", {**good, "vocab_size": good["vocab_size"] + 1, "decoder_vocab_size": good["vocab_size"] + 1}, r"shape|pieces"),
        ("config-activation-list", {**good, "activation_function": ["swish"]}, r"activation \['swish'\] is not supported"),
        ("config-activation-number", {**good, "activation_function": 1}, r"activation 1 is not supported"),
        ("config-activation-unknown", {**good, "activation_function": "tanh"}, r"activation 'tanh' is not supported"),
        ("config-heads-differ", {**good, "decoder_attention_heads": 2}, r"decoder_attention_heads \(2\)"),
        ("config-heads-do-not-divide", {**good, "encoder_attention_heads": 3, "decoder_attention_heads": 3}, r"config.json: cannot describe"),
        ("config-no-scaling", {**good, "scale_embedding": False}, r"scale_embedding must be true"),
        ("config-pre-norm", {**good, "normalize_before": True}, r"pre-norm"),
        ("config-other-architecture", {**good, "architectures": ["XLNetLMHeadModel"]}, r"'XLNetLMHeadModel' is not supported"),
        ("config-missing-d_model", {k: v for k, v in good.items() if k != "d_model"}, r"field 'd_model' is missing"),
        ("config-d_model-string", {**good, "d_model": "16"}, r"config.json: cannot describe"),
        ("config-d_model-huge", {**good, "d_model": 2**40}, r"config.json: cannot describe"),
        ("config-pad-out-of-range", {**good, "pad_token_id": 10**6, "decoder_start_token_id": 10**6}, r"config.json: cannot describe"),
        ("config-dropout-list", {**good, "dropout": [0.1]}, r"config.json: cannot describe"),
        ("config-untied-without-head", {**good, "tie_word_embeddings": False}, r"no 'lm_head.weight'"),
        ("config-separate-vocabularies", {**good, "share_encoder_decoder_embeddings": False}, r"separate source and target vocabularies"),
        ("config-a-list", [good], r"config.json: is not a JSON object"),
    ]


def _positions(rows: int, d: int, shift: float) -> torch.Tensor:
    from attnviz.core.model.modules import sinusoidal_encoding

    return sinusoidal_encoding(rows, d, layout="halves") + shift


def _marian_weight_cases(state: dict[str, torch.Tensor]) -> list[tuple[str, StateChange, str]]:
    d = state["model.shared.weight"].shape[1]
    pos = "model.encoder.embed_positions.weight"
    head = state["model.shared.weight"]
    return [
        ("positions-shifted", lambda s: {**s, pos: _positions(64, d, 0.5)}, r"differs from the sinusoidal positions"),
        ("positions-wrong-length", lambda s: {**s, pos: _positions(32, d, 0.0)}, r"has shape \(32, 16\)"),
        ("positions-nan", lambda s: {**s, pos: torch.full((64, d), float("nan"))}, r"embed_positions"),
        ("lm-head-differs", lambda s: {**s, "lm_head.weight": head + 1.0}, r"'lm_head.weight' differs"),
        ("no-embedding", lambda s: {k: v for k, v in s.items() if k != "model.shared.weight" and "embed_tokens" not in k},
         r"no token embedding"),
        ("final-logits-bias-wrong-shape", lambda s: {**s, "final_logits_bias": torch.zeros(1, 3)}, r"generator.bias"),
        ("final-logits-bias-missing", lambda s: {k: v for k, v in s.items() if k != "final_logits_bias"}, r"'final_logits_bias' .* is missing"),
        ("an-unknown-layer-part", lambda s: {**s, "model.encoder.layers.0.gate.weight": torch.zeros(d, d)}, r"encoder.layers.0.gate.weight"),
    ]


def _marian_other_cases(valid: Path) -> list[tuple[str, Change, str]]:
    vocab = json.loads((valid / "vocab.json").read_text())
    spm = (valid / "source.spm").read_bytes()
    return [
        ("vocab-a-list", _write("vocab.json", json.dumps(list(vocab))), r"vocab.json: is not a piece -> id object"),
        ("vocab-no-unk", _write("vocab.json", json.dumps({k: v for k, v in vocab.items() if k != "<unk>"})), r"vocab.json: is not a piece -> id object"),
        ("vocab-fewer-pieces", _write("vocab.json", json.dumps(dict(list(vocab.items())[:-3]))), r"vocab.json|pieces|id"),
        ("vocab-nested", _write("vocab.json", "[" * 50_000 + "]" * 50_000), r"vocab.json: is nested too deeply"),
        ("vocab-nan", _write("vocab.json", '{"<unk>": NaN}'), r"vocab.json: holds NaN"),
        ("spm-garbage", _write("source.spm", bytes(range(256)) * 8), r"source.spm: "),
        ("spm-empty", _write("target.spm", b""), r"target.spm: "),
        ("spm-truncated", _write("source.spm", spm[: len(spm) // 2]), r"source.spm: "),
        ("config-not-json", _write("config.json", '{"model_type": "marian",'), r"config.json: is not valid JSON"),
    ]


MARIAN = Family(
    name="marian",
    build=_marian_build,
    config="config.json",
    weights="model.safetensors",
    files=("config.json", "vocab.json", "source.spm", "target.spm", "model.safetensors"),
    config_cases=_marian_config_cases,
    weight_cases=_marian_weight_cases,
    other_cases=_marian_other_cases,
)

FAMILIES: dict[str, Family] = {"marian": MARIAN}


def valid_folder(family: str, folder: Path) -> Path:
    """A valid tiny folder of ``family`` at ``folder / "valid"``."""
    return FAMILIES[family].build(Path(folder) / "valid")


def hostile_folders(family: str, folder: Path) -> list[HostileFolder]:
    """Every hostile case of ``family``, each a mutated copy of one valid folder, under ``folder``."""
    fam, folder = FAMILIES[family], Path(folder)
    base = fam.build(folder / ".base")
    good = json.loads((base / fam.config).read_text())
    state = load_file(base / fam.weights)
    changes = [(name, _config_change(fam.config, config), expect) for name, config, expect in fam.config_cases(good)]
    changes += [(name, _state_change(fam.weights, change), expect) for name, change, expect in fam.weight_cases(state)]
    changes += file_cases(fam) + common_weight_cases(fam, state) + fam.other_cases(base)
    cases = []
    for name, change, expect in changes:
        path = folder / name
        shutil.copytree(base, path)
        change(path)
        cases.append(HostileFolder(name, path, expect))
    return cases


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root``, without opening anything that is not a small regular file: a
    file's bytes (a large one's size and mtime), a link's target, a FIFO's or folder's kind and mode."""
    out: dict[str, object] = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = os.lstat(p)
        key = str(p.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            out[key] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode) and st.st_size < 2**24 and st.st_mode & 0o400:
            out[key] = (st.st_mode, p.read_bytes())
        else:
            out[key] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def deny_unreadable(monkeypatch) -> None:
    """``os.open`` refuses a file with no read permission as it would for a user who is not root."""
    real_open = os.open

    def guarded(file, flags, *args, **kw):
        try:
            unreadable = not (os.stat(file).st_mode & 0o444)
        except OSError:
            unreadable = False
        if unreadable:
            raise PermissionError(13, "Permission denied", os.fsdecode(file))
        return real_open(file, flags, *args, **kw)

    monkeypatch.setattr(os, "open", guarded)
