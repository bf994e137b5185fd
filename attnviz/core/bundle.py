"""Model bundles: a folder with ``config.json``, ``model.safetensors``, ``src.model``/``tgt.model``
(sentencepiece) and ``meta.json``. No pickle anywhere.

* Saving is atomic: the new bundle is written to a sibling temporary folder, then swapped in
  by renames. A save killed at any moment leaves the previous bundle loadable: if it dies
  between the two renames, ``load_bundle`` finds the previous bundle under ``.NAME.previous``.
* Loading a truncated, corrupted, foreign or version-mismatched bundle raises ``BundleError``,
  whose one-line message names the file and the problem.
* Nothing read is trusted: every file is read with a size cap (``*_LIMIT``), JSON with a depth
  cap, ``meta.json`` keys by type (``META_TYPES``), ``config.json`` by its schema and parameter
  budget (``model.config.FIELDS``, ``MAX_PARAMETERS``) before anything is allocated, the special
  ids against the tokenizers', and the weights by name, shape, dtype, finiteness and a forward
  pass on a probe input (finite weights so large that the scores overflow are refused).
* Weights are stored as float16 (``stored_tensor``: half the size; a tensor that float16 cannot
  hold stays float32) and come back as float32 when loaded; a bundle saved in float32 opens as it is.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from attnviz.core.atomic import current_umask
from attnviz.core.data.hf_tokenizer import tokenizer_from_bytes
from attnviz.core.data.tokenizer import TokenizerError, TokenizerLike
from attnviz.core.files import read_capped, read_json_capped
from attnviz.core.model.config import ConfigError, TransformerConfig, shown
from attnviz.core.model.hf_import import PRECISIONS, WEIGHTS_PRECISION, is_hf_folder, read_hf_folder
from attnviz.core.model.overflow import overflow_problem
from attnviz.core.model.transformer import Transformer
from attnviz.errors import AttnvizError

FORMAT = "attnviz-bundle"
FORMAT_VERSION = 1
CONFIG, WEIGHTS, SRC_TOK, TGT_TOK, META = "config.json", "model.safetensors", "src.model", "tgt.model", "meta.json"
BUNDLE_FILES = (CONFIG, WEIGHTS, SRC_TOK, TGT_TOK, META)
CONFIG_LIMIT = 64 * 1024  # bytes: a config.json is a few hundred
META_LIMIT = 32 * 1024 * 1024  # bytes: a meta.json holds a training history (about 1 MB)
TOKENIZER_LIMIT = 64 * 1024 * 1024  # bytes: a sentencepiece model of a large vocabulary is a few MB
STORAGE_DTYPE = torch.float16  # float32 weights are stored as float16; loading gives float32 again (older float32 bundles open as they are)
WEIGHTS_SLACK = 16 * 1024 * 1024  # bytes a safetensors file may hold beyond its tensors (header, padding)

# meta.json key -> the JSON type its value must have (other keys are kept unchecked)
META_TYPES: dict[str, type | tuple[type, ...]] = {
    "format": str, "format_version": int, "saved_at": str, "command": str, "status": str, "device": str,
    "step": int, "epoch": int, "epochs": int, "training_time_s": (int, float),
    "data": dict, "tokenizers": dict, "options": dict, "final": dict, "hsk_alignment": dict,
    "history": list, "snapshots": list, "probes": list, "resumed_with": list,
}


class BundleError(AttnvizError):
    """A model bundle that cannot be loaded or saved. ``str(err)`` is one line naming the file and the problem."""

    def __init__(self, path: str | os.PathLike, problem: str):
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


@dataclass
class Bundle:
    """A loaded model with its tokenizers and metadata."""

    model: Transformer
    src_tokenizer: TokenizerLike
    tgt_tokenizer: TokenizerLike
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def config(self) -> TransformerConfig:
        return self.model.config

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "(unsaved model)"


def previous_path(path: Path) -> Path:
    """Where a save keeps the bundle it replaces until the new one is in place (``.NAME.previous``)."""
    return path.parent / f".{path.name}.previous"


def folder_stamp(out_dir: Path) -> tuple:
    """What identifies the checkpoint ``out_dir`` holds now, to tell later whether another run saved
    there meanwhile: the identity of its ``meta.json`` and of the one under ``.NAME.previous``
    (``None`` where there is none). Every save writes a new ``meta.json``, so every save changes it."""
    stamps = []
    for folder in (out_dir, previous_path(out_dir)):
        try:
            st = os.stat(folder / META)
        except OSError:
            stamps.append(None)
            continue
        stamps.append((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(stamps)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def state_for_saving(model: Transformer) -> dict[str, torch.Tensor]:
    sd = model.state_dict()
    if model.config.tie_embeddings:
        sd.pop("generator.weight", None)  # the same tensor as decoder.embed.table.weight
    return {k: v.detach().cpu().contiguous() for k, v in sd.items()}


def stored_tensor(t: torch.Tensor, dtype: torch.dtype = STORAGE_DTYPE) -> torch.Tensor:
    """How a tensor is stored in ``model.safetensors``: float32 as ``dtype`` (float16: half the size)
    when every value stays finite, anything else as it is."""
    if t.dtype != torch.float32 or dtype == torch.float32:
        return t
    low = t.to(dtype)
    return low if bool(torch.isfinite(low).all()) or not bool(torch.isfinite(t).all()) else t


def storage_dtype(meta: dict[str, Any]) -> torch.dtype:
    """How a bundle with ``meta`` stores its float32 weights: as its ``weights_precision`` says (an
    imported model keeps its checkpoint's), else float16 (our own bundles, for their size)."""
    return PRECISIONS.get(str(meta.get(WEIGHTS_PRECISION)), STORAGE_DTYPE)


def round_as_stored(model: torch.nn.Module) -> None:
    """Round ``model``'s weights in place to what a saved bundle gives back when loaded (float16
    values in float32), so figures measured on it are those of the shipped weights."""
    state = model.state_dict()
    model.load_state_dict({k: stored_tensor(v.detach()).to(v.dtype) for k, v in state.items()})


# Tensor names of bundles saved before the module tree followed the trace names (old -> today's).
_OLD_NAMES = (
    (re.compile(r"^src_embed\."), "encoder.embed.table."),
    (re.compile(r"^tgt_embed\."), "decoder.embed.table."),
    (re.compile(r"^(encoder|decoder)_layers\.(\d+)\.sub(\d+)\.norm\."), r"\1.layers.\2.norm\3."),
    (re.compile(r"^(encoder|decoder)_layers\."), r"\1.layers."),
    (re.compile(r"^(encoder|decoder)_norm\."), r"\1.final_norm."),
)


def rename_old_tensors(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state`` with the tensor names of older bundles (``src_embed.weight``,
    ``encoder_layers.0.sub1.norm.weight``, ``decoder_norm.bias``...) renamed to today's
    (``encoder.embed.table.weight``, ``encoder.layers.0.norm1.weight``, ``decoder.final_norm.bias``);
    other names are kept. Raises ``ValueError`` if two tensors would get the same name."""
    out: dict[str, torch.Tensor] = {}
    for key, tensor in state.items():
        new = key
        for pattern, replacement in _OLD_NAMES:
            new, n = pattern.subn(replacement, key)
            if n:
                break
        if new in out:
            raise ValueError(f"tensors {key!r} and {new!r} would have the same name")
        out[new] = tensor
    return out


def save_bundle(
    path: str | os.PathLike,
    model: Transformer,
    src_tokenizer: TokenizerLike,
    tgt_tokenizer: TokenizerLike,
    meta: dict[str, Any] | None = None,
    *,
    extra_files: dict[str, bytes] | None = None,
) -> Path:
    """Write a bundle folder atomically; returns its path.

    ``extra_files`` (name -> bytes) are written into the same folder in the same atomic swap
    (a trainer's checkpoint state travels with the weights it belongs to); loading ignores them.
    """
    path = Path(path)
    meta = dict(meta or {})
    meta.update(format=FORMAT, format_version=FORMAT_VERSION)
    meta.setdefault("saved_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    tmp = _temporary_folder(path)
    try:
        _write_files(tmp, _bundle_files(model, src_tokenizer, tgt_tokenizer, meta, extra_files or {}))
        _swap_in(tmp, path)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BundleError(path, f"cannot save ({exc.strerror or exc})") from None
    except (TypeError, ValueError) as exc:  # e.g. NaN in meta
        shutil.rmtree(tmp, ignore_errors=True)
        raise BundleError(path / META, f"cannot save metadata ({exc})") from None
    return path


def _temporary_folder(path: Path) -> Path:
    """A new, empty sibling folder of ``path`` to write the bundle into."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.saving-", dir=path.parent))
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; a bundle is an ordinary folder
    except OSError as exc:
        raise BundleError(path, f"cannot write here ({exc.strerror or exc})") from None
    return tmp


def _bundle_files(
    model: Transformer, src_tokenizer: TokenizerLike, tgt_tokenizer: TokenizerLike, meta: dict[str, Any], extra_files: dict[str, bytes]
) -> dict[str, bytes]:
    """File name -> content of every file of the bundle (``ValueError`` for a bad extra file name)."""
    dtype = storage_dtype(meta)
    stored_as = "float32" if dtype == torch.float32 else f"{str(dtype).removeprefix('torch.')} (float32 when loaded)"
    files = {
        CONFIG: model.config.to_json().encode(),
        WEIGHTS: st_save(
            {k: stored_tensor(v, dtype) for k, v in state_for_saving(model).items()},
            metadata={"format": FORMAT, "format_version": str(FORMAT_VERSION), "stored_as": stored_as},
        ),
        SRC_TOK: src_tokenizer.to_bytes(),
        TGT_TOK: tgt_tokenizer.to_bytes(),
        META: json.dumps(meta, indent=1, ensure_ascii=False, allow_nan=False).encode(),
    }
    for name, data in extra_files.items():
        if name in files or Path(name).name != name or name.startswith("."):
            raise ValueError(f"bad extra file name {name!r}")
        files[name] = bytes(data)
    return files


def _write_files(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        with open(folder / name, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    _fsync_dir(folder)


def _swap_in(tmp: Path, path: Path) -> None:
    """Rename the written folder ``tmp`` to ``path``; the bundle it replaces waits under ``.NAME.previous``
    until the new one is in place."""
    prev = previous_path(path)
    if prev.exists() and path.exists():
        shutil.rmtree(prev)
    # (a previous save that died between its renames left only prev: it stays, as the fallback)
    if path.exists():
        os.replace(path, prev)
    os.replace(tmp, path)
    _fsync_dir(path.parent)
    if prev.exists():
        shutil.rmtree(prev, ignore_errors=True)


def read_file(file: Path, limit: int) -> bytes:
    """The bytes of a bundle's ``file`` through the shared capped reader (``files.read_capped``:
    regular files only, at most ``limit`` bytes); ``BundleError`` (one line) otherwise."""
    return read_capped(file, limit, BundleError)


def read_json(file: Path, limit: int) -> Any:
    """The JSON value of a bundle's ``file`` (``files.read_json_capped``: at most ``limit`` bytes,
    ``JSON_DEPTH`` levels, no NaN); ``BundleError`` otherwise."""
    return read_json_capped(file, limit, BundleError)


def load_bundle(path: str | os.PathLike, device: str | torch.device = "cpu") -> Bundle:
    """Load and check a bundle folder, or open a Hugging Face Marian folder directly; the model is
    returned in eval mode."""
    if is_hf_folder(path):
        found = read_hf_folder(path, device)
        return Bundle(found.model, found.src_tokenizer, found.tgt_tokenizer, found.meta, Path(path))
    path = _bundle_folder(Path(path))
    meta = _read_meta(path / META)
    config = read_config(path / CONFIG)
    src_tok, tgt_tok = _read_tokenizer(path / SRC_TOK), _read_tokenizer(path / TGT_TOK)
    if src_tok.vocab_size != config.src_vocab_size or tgt_tok.vocab_size != config.tgt_vocab_size:
        raise BundleError(
            path / CONFIG,
            f"vocabulary sizes {config.src_vocab_size}/{config.tgt_vocab_size} do not match the tokenizers "
            f"({src_tok.vocab_size}/{tgt_tok.vocab_size})",
        )
    _check_special_ids(path / CONFIG, config, src_tok, tgt_tok)
    model = Transformer(config)
    expected = state_for_saving(model)
    state = _read_weights(path / WEIGHTS, sum(t.numel() * t.element_size() for t in expected.values()) + WEIGHTS_SLACK)
    _check_weights(path / WEIGHTS, state, expected)
    state = {k: v.to(expected[k].dtype) for k, v in state.items()}  # float16 on disk -> float32
    model.load_state_dict(state, strict=False)  # strict=False: a tied generator.weight is not in the file
    model.eval()
    _probe(path / WEIGHTS, model, state)
    model.to(device)
    return Bundle(model, src_tok, tgt_tok, meta, Path(path))


def read_config(file: Path) -> TransformerConfig:
    """The checked configuration in ``file`` (a bundle's ``config.json``); ``BundleError`` otherwise."""
    try:
        return TransformerConfig.from_dict(read_json(file, CONFIG_LIMIT))
    except ConfigError as exc:
        raise BundleError(file, str(exc)) from None


def _check_special_ids(file: Path, config: TransformerConfig, *tokenizers: TokenizerLike) -> None:
    """``BundleError`` unless the config's PAD/UNK/SOS/EOS ids are the tokenizers' own."""
    ids = {name: getattr(config, name) for name in ("pad_id", "unk_id", "bos_id", "eos_id")}
    for tok in tokenizers:
        if tok.special_ids() != ids:
            raise BundleError(file, f"special ids {ids} differ from the tokenizers' {tok.special_ids()} (swapped ids?)")


def _bundle_folder(path: Path) -> Path:
    """The folder to load: ``path``, or the bundle an interrupted save left under ``.NAME.previous``;
    ``BundleError`` unless it holds every bundle file."""
    try:
        return _complete_folder(path)
    except PermissionError:
        raise BundleError(path, "permission denied: make the folder readable (chmod u+rx) or open another bundle") from None
    except OSError as exc:
        raise BundleError(path, f"cannot be read ({exc.strerror or type(exc).__name__})") from None


def _complete_folder(path: Path) -> Path:
    if not path.exists() and previous_path(path).is_dir():
        path = previous_path(path)  # a save was interrupted between its renames
    if not path.exists():
        raise BundleError(path, "no such model bundle")
    if not path.is_dir():
        raise BundleError(path, "a model bundle is a folder (config.json, model.safetensors, src.model, tgt.model, meta.json)")
    missing = [f for f in BUNDLE_FILES if not (path / f).is_file()]
    if missing:
        what = "not an attnviz model bundle" if len(missing) == len(BUNDLE_FILES) or CONFIG in missing else "incomplete bundle"
        raise BundleError(path / missing[0], f"missing ({what})")
    os.listdir(path)  # PermissionError for a folder that cannot be read
    return path


def _read_meta(file: Path) -> dict[str, Any]:
    meta = read_json(file, META_LIMIT)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise BundleError(file, "not an attnviz model bundle (no 'format': 'attnviz-bundle')")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise BundleError(file, f"bundle format version {shown(version)} is not supported (this attnviz reads version {FORMAT_VERSION})")
    for key, kind in META_TYPES.items():
        value = meta.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise BundleError(file, f"{key!r} holds {type(value).__name__} {shown(value)}, not {_type_names(kind)}")
    return meta


def _type_names(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", dict: "a JSON object", list: "a list"}
    return " or ".join(names[k] for k in (kind if isinstance(kind, tuple) else (kind,)))


def _read_tokenizer(file: Path) -> TokenizerLike:
    data = read_file(file, TOKENIZER_LIMIT)
    try:
        return tokenizer_from_bytes(data)
    except TokenizerError as exc:
        raise BundleError(file, str(exc)) from None
    except RecursionError:
        raise BundleError(file, "is nested too deeply (not a tokenizer file)") from None


def _read_weights(file: Path, limit: int) -> dict[str, torch.Tensor]:
    """The tensors of ``file`` (at most ``limit`` bytes) under today's names (see ``rename_old_tensors``)."""
    data = read_file(file, limit)
    try:
        state = st_load(data)  # parses a header and raw tensors; never unpickles
    except (SafetensorError, ValueError) as exc:
        raise BundleError(file, f"not a valid safetensors file ({str(exc).splitlines()[0][:160]})") from None
    except Exception as exc:  # noqa: BLE001 - the Rust parser can raise other errors on garbage
        raise BundleError(file, f"not a valid safetensors file ({type(exc).__name__})") from None
    try:
        return rename_old_tensors(state)
    except ValueError as exc:
        raise BundleError(file, str(exc)) from None


def _check_weights(file: Path, state: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    """``BundleError`` unless ``state`` holds exactly the ``expected`` tensors' names, shapes and dtypes, all finite."""
    missing_keys = sorted(set(expected) - set(state))
    extra_keys = sorted(set(state) - set(expected))
    if missing_keys:
        raise BundleError(file, f"{len(missing_keys)} tensor(s) missing, e.g. {missing_keys[0]!r}")
    if extra_keys:
        raise BundleError(file, f"{len(extra_keys)} unexpected tensor(s), e.g. {extra_keys[0]!r} (foreign model?)")
    for k, v in expected.items():
        stored_ok = state[k].dtype == v.dtype or (v.dtype == torch.float32 and state[k].dtype in (torch.float16, torch.bfloat16))
        if state[k].shape != v.shape or not stored_ok:
            raise BundleError(file, f"tensor {k!r} has shape {tuple(state[k].shape)} {state[k].dtype}, expected {tuple(v.shape)} {v.dtype}")
        if not torch.isfinite(state[k]).all():
            raise BundleError(file, f"tensor {k!r} holds NaN or infinite values")


def _probe(file: Path, model: Transformer, state: dict[str, torch.Tensor]) -> None:
    """``BundleError`` when a forward pass on a probe input overflows (``overflow.overflow_problem``)."""
    problem = overflow_problem(model, state)
    if problem is not None:
        raise BundleError(file, problem)
