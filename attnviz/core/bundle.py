"""Model bundles: a folder with ``config.json``, ``model.safetensors``, ``src.model``/``tgt.model``
(sentencepiece) and ``meta.json``. No pickle anywhere.

* Saving is atomic: the new bundle is written to a sibling temporary folder, then swapped in
  by renames. A save killed at any moment leaves the previous bundle loadable: if it dies
  between the two renames, ``load_bundle`` finds the previous bundle under ``.NAME.previous``.
* Loading a truncated, corrupted, foreign or version-mismatched bundle raises ``BundleError``,
  whose one-line message names the file and the problem.
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
from attnviz.core.data.tokenizer import Tokenizer, TokenizerError
from attnviz.core.model.config import ConfigError, TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.errors import AttnvizError

FORMAT = "attnviz-bundle"
FORMAT_VERSION = 1
CONFIG, WEIGHTS, SRC_TOK, TGT_TOK, META = "config.json", "model.safetensors", "src.model", "tgt.model", "meta.json"
BUNDLE_FILES = (CONFIG, WEIGHTS, SRC_TOK, TGT_TOK, META)


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
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
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
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
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
    model: Transformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, meta: dict[str, Any], extra_files: dict[str, bytes]
) -> dict[str, bytes]:
    """File name -> content of every file of the bundle (``ValueError`` for a bad extra file name)."""
    files = {
        CONFIG: model.config.to_json().encode(),
        WEIGHTS: st_save(state_for_saving(model), metadata={"format": FORMAT, "format_version": str(FORMAT_VERSION)}),
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


def _read_json(file: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise BundleError(file, "is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BundleError(file, f"is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def load_bundle(path: str | os.PathLike, device: str | torch.device = "cpu") -> Bundle:
    """Load and check a bundle folder; the model is returned in eval mode."""
    path = _bundle_folder(Path(path))
    meta = _read_meta(path / META)
    try:
        config = TransformerConfig.from_dict(_read_json(path / CONFIG))
    except ConfigError as exc:
        raise BundleError(path / CONFIG, str(exc)) from None
    src_tok, tgt_tok = _read_tokenizer(path / SRC_TOK), _read_tokenizer(path / TGT_TOK)
    if src_tok.vocab_size != config.src_vocab_size or tgt_tok.vocab_size != config.tgt_vocab_size:
        raise BundleError(
            path / CONFIG,
            f"vocabulary sizes {config.src_vocab_size}/{config.tgt_vocab_size} do not match the tokenizers "
            f"({src_tok.vocab_size}/{tgt_tok.vocab_size})",
        )
    model = Transformer(config)
    state = _read_weights(path / WEIGHTS)
    _check_weights(path / WEIGHTS, state, state_for_saving(model))
    model.load_state_dict(state, strict=False)  # strict=False: a tied generator.weight is not in the file
    model.to(device).eval()
    return Bundle(model, src_tok, tgt_tok, meta, Path(path))


def _bundle_folder(path: Path) -> Path:
    """The folder to load: ``path``, or the bundle an interrupted save left under ``.NAME.previous``;
    ``BundleError`` unless it holds every bundle file."""
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
    return path


def _read_meta(file: Path) -> dict[str, Any]:
    meta = _read_json(file)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise BundleError(file, "not an attnviz model bundle (no 'format': 'attnviz-bundle')")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise BundleError(file, f"bundle format version {version!r} is not supported (this attnviz reads version {FORMAT_VERSION})")
    return meta


def _read_tokenizer(file: Path) -> Tokenizer:
    try:
        return Tokenizer.load(file)
    except TokenizerError as exc:
        raise BundleError(file, str(exc).split(": ", 1)[-1]) from None


def _read_weights(file: Path) -> dict[str, torch.Tensor]:
    """The tensors of ``file`` under today's names (see ``rename_old_tensors``)."""
    try:
        state = st_load(file.read_bytes())  # parses a header and raw tensors; never unpickles
    except (SafetensorError, ValueError, OSError) as exc:
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
        if state[k].shape != v.shape or state[k].dtype != v.dtype:
            raise BundleError(file, f"tensor {k!r} has shape {tuple(state[k].shape)} {state[k].dtype}, expected {tuple(v.shape)} {v.dtype}")
        if not torch.isfinite(state[k]).all():
            raise BundleError(file, f"tensor {k!r} holds NaN or infinite values")
