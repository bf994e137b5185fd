"""A checkpoint on disk: the training state saved next to a checkpoint's bundle (the side files'
names, the optimiser state as safetensors tensors plus JSON, no pickle), reading it back with
every field checked, what an output folder holds (only an attnviz bundle, or an empty folder,
may be replaced) and the leftovers of killed saves. No Qt.

Saving itself is ``bundle.save_bundle`` (write a sibling ``.NAME.saving-*`` folder, then swap it in
by renames, the old bundle waiting under ``.NAME.previous`` until the new one is in place)."""

from __future__ import annotations

import glob
import json
import math
import os
import re
import shutil
import stat
import time
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load as st_load

from attnviz.core.bundle import BUNDLE_FILES, FORMAT, META, META_LIMIT, WEIGHTS, WEIGHTS_SLACK, previous_path
from attnviz.core.files import read_capped, read_json_capped, read_safetensors_header, regular_size
from attnviz.errors import AttnvizError

STATE_TENSORS = "training_state.safetensors"
STATE_JSON = "training_state.json"


def optimizer_state_to_files(opt: torch.optim.Optimizer, param_names: list[str]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The optimiser's state as (tensors named ``optimizer.<param>.<key>``, JSON-able rest).
    ``param_names`` names the optimiser's parameters in order, so a resume can match them by name."""
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v):
                tensors[f"optimizer.{pid}.{k}"] = v.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(pid), {})[k] = v
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in sd["param_groups"]]
    return tensors, {"param_groups": groups, "scalars": scalars, "param_names": list(param_names)}


def optimizer_state_from_files(tensors: dict[str, torch.Tensor], info: dict[str, Any], param_names: list[str]) -> dict[str, Any]:
    """The inverse of ``optimizer_state_to_files``: a state dict for ``Optimizer.load_state_dict``
    whose entries follow ``param_names`` (the model's parameters now), matched by name.

    Raises ``ValueError`` when the saved state cannot be matched to these parameters by name
    (a checkpoint saved before names were recorded, or of another model).
    """
    order = _saved_order(info, param_names)
    try:
        return {"state": _saved_state(tensors, info, order), "param_groups": _saved_groups(info)}
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"the optimiser state is damaged ({type(exc).__name__}: {str(exc)[:80]})") from None


def _saved_state(tensors: dict[str, torch.Tensor], info: dict[str, Any], order: dict[int, int]) -> dict[int, dict[str, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for name, t in tensors.items():
        if name.startswith("optimizer."):
            _, pid, k = name.split(".", 2)
            state.setdefault(order[int(pid)], {})[k] = t
    for pid, sc in info.get("scalars", {}).items():
        state.setdefault(order[int(pid)], {}).update(sc)
    return state


def _saved_groups(info: dict[str, Any]) -> list[dict[str, Any]]:
    groups = []
    for g in info["param_groups"]:
        g = dict(g)
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    return groups


def _saved_order(info: dict[str, Any], param_names: list[str]) -> dict[int, int]:
    """Saved parameter index -> index of the same parameter in ``param_names``."""
    saved = info.get("param_names")
    if not isinstance(saved, list):
        raise ValueError("the checkpoint does not name its optimiser's parameters (saved by an older attnviz): "
                         "it opens as a model, but training cannot resume from it")
    if not all(isinstance(n, str) for n in saved) or sorted(saved) != sorted(param_names):
        raise ValueError("the checkpoint's optimiser state is for other parameters than this model's")
    where = {name: i for i, name in enumerate(param_names)}
    return {i: where[name] for i, name in enumerate(saved)}


# -- the checkpoint folder on disk -----------------------------------------------------------
STATE_FILES = (STATE_TENSORS, STATE_JSON)
STATE_JSON_LIMIT = 16 * 2**20  # bytes: training_state.json is a few kB; anything near this is not ours
# Per parameter the state holds its float32 weight (4 bytes), Adam's two float32 moments (8) and, with
# --average-last, float64 sums (8) plus the weights as trained (4): 24 bytes against 2 in a float16
# model.safetensors (measured: a 6.1 MB bundle, a 61.2 MB state). 16x leaves room for the rest.
STATE_PER_WEIGHT_BYTE = 16
LEFTOVER_AGE_S = 600.0  # a save's leftovers untouched this long belong to no running save
_PART = re.compile(r"^\.(?P<name>.+)\.[a-z0-9_]{8}\.part$")  # an atomic write's temporary file


class CheckpointError(AttnvizError):
    """A checkpoint folder or training state that cannot be used (one-line message)."""


def checkpoint_folder(out_dir: Path) -> Path:
    """Where the last good checkpoint of ``out_dir`` is: ``out_dir``, or the ``.NAME.previous``
    a save killed between its two renames left (the folder ``load_bundle`` falls back to)."""
    prev = previous_path(out_dir)
    return prev if not out_dir.exists() and prev.is_dir() else out_dir


def folder_kind(out_dir: Path) -> str:
    """What ``out_dir`` holds now: "absent", "empty", "bundle" (an attnviz bundle or checkpoint,
    also one an interrupted save left under ``.NAME.previous``), "file" (not a folder) or
    "foreign" (anything else: never replaced)."""
    folder = checkpoint_folder(out_dir)
    if not folder.exists() and not folder.is_symlink():
        return "absent"
    if folder.is_symlink() or not folder.is_dir():
        return "file"
    try:
        names = [p.name for p in folder.iterdir()]
    except OSError:
        return "foreign"
    if not names:
        return "empty"
    ours = set(BUNDLE_FILES) | set(STATE_FILES)
    if not all((n in ours or _is_our_part(n)) and _plain_file(folder / n) for n in names) or META not in names:
        return "foreign"  # a link, a folder or a pipe under a bundle file's name is not ours either
    try:
        meta = read_json_object(folder / META, META_LIMIT)
    except CheckpointError:
        return "foreign"
    return "bundle" if meta.get("format") == FORMAT else "foreign"


def _plain_file(path: Path) -> bool:
    """Whether ``path`` is a regular file itself (not a symbolic link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_our_part(name: str) -> bool:
    m = _PART.match(name)
    return bool(m) and m.group("name") in set(BUNDLE_FILES) | set(STATE_FILES)


def remove_leftovers(out_dir: Path, min_age_s: float = LEFTOVER_AGE_S) -> list[Path]:
    """Remove what killed saves of ``out_dir`` left behind: ``.NAME.saving-*`` folders beside it and
    ``.FILE.xxxxxxxx.part`` files of bundle files inside it, untouched for ``min_age_s`` (so a save
    still running elsewhere keeps its work). Nothing else is touched. Returns what was removed."""
    found = [p for p in out_dir.parent.glob(f".{glob.escape(out_dir.name)}.saving-*") if p.is_dir() and not p.is_symlink()]
    if out_dir.is_dir() and not out_dir.is_symlink():
        found += [p for p in out_dir.iterdir() if _is_our_part(p.name) and p.is_file() and not p.is_symlink()]
    removed = []
    now = time.time()
    for p in found:
        if now - _last_touched(p) < min_age_s:
            continue
        try:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        except OSError:
            continue
        removed.append(p)
    return removed


def _last_touched(path: Path) -> float:
    """The newest modification time of ``path`` and (for a folder) its entries."""
    try:
        times = [path.stat().st_mtime] + ([p.lstat().st_mtime for p in path.iterdir()] if path.is_dir() else [])
    except OSError:
        return time.time()
    return max(times)


def check_meta_size(folder: Path) -> None:
    """``CheckpointError`` when the checkpoint's meta.json is larger than ``META_LIMIT`` (checked
    before anything reads it)."""
    try:
        size = (folder / META).stat().st_size
    except OSError:
        return  # missing or unreadable: the bundle loader says so in its own words
    if size > META_LIMIT:
        raise CheckpointError(f"{folder / META}: larger than {META_LIMIT // 2**20} MB; not written by attnviz")


def checkpoint_error(path: Path, problem: str) -> CheckpointError:
    """The ``CheckpointError`` the shared capped reader raises for a checkpoint's file."""
    return CheckpointError(f"{path}: {problem}")


def read_json_object(file: Path, limit: int) -> dict[str, Any]:
    """A JSON object from ``file`` (``files.read_json_capped``: a regular file of at most ``limit``
    bytes); ``CheckpointError`` otherwise."""
    value = read_json_capped(file, limit, checkpoint_error)
    if not isinstance(value, dict):
        raise CheckpointError(f"{file}: not a JSON object")
    return value


# The counters of training_state.json: name -> the number type it must be (all >= 0, finite).
_COUNTERS: dict[str, type] = {"step": int, "epoch": int, "batch_in_epoch": int, "elapsed_s": float, "epoch_loss_sum": float, "epoch_loss_n": int}


def read_training_state(folder: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The side files of the checkpoint in ``folder``: (training_state.json checked for types and
    ranges, training_state.safetensors). ``CheckpointError`` with one line otherwise."""
    sfile, jfile = folder / STATE_TENSORS, folder / STATE_JSON
    if not sfile.is_file() or not jfile.is_file():
        raise CheckpointError(f"{folder} has no training state ({STATE_JSON}, {STATE_TENSORS})")
    info = read_json_object(jfile, STATE_JSON_LIMIT)
    _check_state_info(jfile, info)
    read_safetensors_header(sfile, checkpoint_error)
    limit = STATE_PER_WEIGHT_BYTE * regular_size(folder / WEIGHTS, checkpoint_error) + WEIGHTS_SLACK
    try:
        tensors = st_load(read_capped(sfile, limit, checkpoint_error))
    except CheckpointError:
        raise
    except Exception as exc:  # noqa: BLE001 - the Rust parser raises several types on damage
        raise CheckpointError(f"{sfile}: damaged training state ({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})") from None
    rng = tensors.get("rng.cpu")
    if rng is None or rng.dtype != torch.uint8 or rng.shape != torch.get_rng_state().shape:
        raise CheckpointError(f"{sfile}: no valid random generator state ('rng.cpu')")
    return info, tensors


MAX_COUNT = 2**53  # steps, epochs, sums: a float counts every integer exactly up to here


def _check_state_info(file: Path, info: dict[str, Any]) -> None:
    """``CheckpointError`` unless training_state.json has every field, of the right type and range."""
    for name, kind in _COUNTERS.items():
        value = info.get(name)
        ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
        if not ok or not 0 <= value <= MAX_COUNT or not (isinstance(value, int) or math.isfinite(value)):  # an int may be too large for a float
            raise CheckpointError(f"{file}: '{name}' must be a non-negative {kind.__name__} of at most {MAX_COUNT:,}, not {_short(value)}")
    if not isinstance(info.get("options"), dict):
        raise CheckpointError(f"{file}: 'options' must be a JSON object")
    opt = info.get("optimizer")
    if not isinstance(opt, dict) or not isinstance(opt.get("param_groups"), list) or not isinstance(opt.get("scalars", {}), dict):
        raise CheckpointError(f"{file}: 'optimizer' must be an object with a 'param_groups' list")
    if not all(isinstance(g, dict) for g in opt["param_groups"]) or not all(isinstance(s, dict) for s in opt.get("scalars", {}).values()):
        raise CheckpointError(f"{file}: 'optimizer' holds entries that are not JSON objects")


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
