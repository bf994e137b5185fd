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


def _previous(path: Path) -> Path:
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
        sd.pop("generator.weight", None)  # the same tensor as tgt_embed.weight
    return {k: v.detach().cpu().contiguous() for k, v in sd.items()}


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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.saving-", dir=path.parent))
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; a bundle is an ordinary folder
    except OSError as exc:
        raise BundleError(path, f"cannot write here ({exc.strerror or exc})") from None
    try:
        files = {
            CONFIG: model.config.to_json().encode(),
            WEIGHTS: st_save(state_for_saving(model), metadata={"format": FORMAT, "format_version": str(FORMAT_VERSION)}),
            SRC_TOK: src_tokenizer.to_bytes(),
            TGT_TOK: tgt_tokenizer.to_bytes(),
            META: json.dumps(meta, indent=1, ensure_ascii=False, allow_nan=False).encode(),
        }
        for name, data in (extra_files or {}).items():
            if name in files or Path(name).name != name or name.startswith("."):
                raise ValueError(f"bad extra file name {name!r}")
            files[name] = bytes(data)
        for name, data in files.items():
            with open(tmp / name, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        _fsync_dir(tmp)
        prev = _previous(path)
        if prev.exists():
            if path.exists():
                shutil.rmtree(prev)
            else:  # a previous save died between its renames: keep the old bundle as the fallback
                pass
        if path.exists():
            os.replace(path, prev)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
        if prev.exists():
            shutil.rmtree(prev, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BundleError(path, f"cannot save ({exc.strerror or exc})") from None
    except (TypeError, ValueError) as exc:  # e.g. NaN in meta
        shutil.rmtree(tmp, ignore_errors=True)
        raise BundleError(path / META, f"cannot save metadata ({exc})") from None
    return path


def _read_json(file: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise BundleError(file, "is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BundleError(file, f"is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def load_bundle(path: str | os.PathLike, device: str | torch.device = "cpu") -> Bundle:
    """Load and check a bundle folder; the model is returned in eval mode."""
    path = Path(path)
    if not path.exists() and _previous(path).is_dir():
        path = _previous(path)  # a save was interrupted between its renames
    if not path.exists():
        raise BundleError(path, "no such model bundle")
    if not path.is_dir():
        raise BundleError(path, "a model bundle is a folder (config.json, model.safetensors, src.model, tgt.model, meta.json)")
    missing = [f for f in BUNDLE_FILES if not (path / f).is_file()]
    if missing:
        what = "not an attnviz model bundle" if len(missing) == len(BUNDLE_FILES) or CONFIG in missing else "incomplete bundle"
        raise BundleError(path / missing[0], f"missing ({what})")
    meta = _read_json(path / META)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise BundleError(path / META, "not an attnviz model bundle (no 'format': 'attnviz-bundle')")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise BundleError(path / META, f"bundle format version {version!r} is not supported (this attnviz reads version {FORMAT_VERSION})")
    try:
        config = TransformerConfig.from_dict(_read_json(path / CONFIG))
    except ConfigError as exc:
        raise BundleError(path / CONFIG, str(exc)) from None
    try:
        src_tok = Tokenizer.load(path / SRC_TOK)
    except TokenizerError as exc:
        raise BundleError(path / SRC_TOK, str(exc).split(": ", 1)[-1]) from None
    try:
        tgt_tok = Tokenizer.load(path / TGT_TOK)
    except TokenizerError as exc:
        raise BundleError(path / TGT_TOK, str(exc).split(": ", 1)[-1]) from None
    if src_tok.vocab_size != config.src_vocab_size or tgt_tok.vocab_size != config.tgt_vocab_size:
        raise BundleError(
            path / CONFIG,
            f"vocabulary sizes {config.src_vocab_size}/{config.tgt_vocab_size} do not match the tokenizers "
            f"({src_tok.vocab_size}/{tgt_tok.vocab_size})",
        )
    weights_file = path / WEIGHTS
    try:
        state = st_load(weights_file.read_bytes())  # parses a header and raw tensors; never unpickles
    except (SafetensorError, ValueError, OSError) as exc:
        raise BundleError(weights_file, f"not a valid safetensors file ({str(exc).splitlines()[0][:160]})") from None
    except Exception as exc:  # noqa: BLE001 - the Rust parser can raise other errors on garbage
        raise BundleError(weights_file, f"not a valid safetensors file ({type(exc).__name__})") from None
    model = Transformer(config)
    expected = state_for_saving(model)
    missing_keys = sorted(set(expected) - set(state))
    extra_keys = sorted(set(state) - set(expected))
    if missing_keys:
        raise BundleError(weights_file, f"{len(missing_keys)} tensor(s) missing, e.g. {missing_keys[0]!r}")
    if extra_keys:
        raise BundleError(weights_file, f"{len(extra_keys)} unexpected tensor(s), e.g. {extra_keys[0]!r} (foreign model?)")
    for k, v in expected.items():
        if state[k].shape != v.shape or state[k].dtype != v.dtype:
            raise BundleError(weights_file, f"tensor {k!r} has shape {tuple(state[k].shape)} {state[k].dtype}, expected {tuple(v.shape)} {v.dtype}")
        if not torch.isfinite(state[k]).all():
            raise BundleError(weights_file, f"tensor {k!r} holds NaN or infinite values")
    model.load_state_dict(state, strict=False)
    if config.tie_embeddings:
        model.generator.weight = model.tgt_embed.weight
    model.to(device).eval()
    return Bundle(model, src_tok, tgt_tok, meta, Path(path))
