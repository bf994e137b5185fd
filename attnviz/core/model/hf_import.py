"""Open a local Hugging Face model folder as an attnviz ``Transformer`` with its tokenizers.

Each family is a module of ``families/`` (``marian``, ``bart``, ``t5``, ``gpt2``, ``bert``): ``read_hf_folder`` picks
the one whose architectures ``config.json`` names (``families.common.matches``), which gives the
attnviz config, maps the weights to ours and reads the tokenizers. A folder of any other family
is refused in one line that names the ones attnviz opens.

Nothing here imports ``transformers`` and nothing is unpickled: weights come from
``model.safetensors``, or from ``pytorch_model.bin`` through ``torch.load(weights_only=True)``.
Every problem is a one-line ``HFImportError`` raised before a model is built.
"""

from __future__ import annotations

import io
import os
import pickle
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as st_load

from attnviz.core.data.tokenizer import TokenizerError, TokenizerLike
from attnviz.core.files import read_capped, read_json_capped, read_safetensors_header, regular_size
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.families import bart, bert, gpt2, marian, t5
from attnviz.core.model.families.common import CONFIG, CONFIG_LIMIT, Family, HFImportError, architecture, matches
from attnviz.core.model.overflow import overflow_problem
from attnviz.core.model.transformer import Transformer

SAFETENSORS, PICKLED = "model.safetensors", "pytorch_model.bin"
BUNDLE_META = "meta.json"  # an attnviz bundle's (attnviz.core.bundle.META, which imports this module)
FAMILIES: tuple[Family, ...] = (marian.FAMILY, bart.FAMILY, t5.FAMILY, gpt2.FAMILY, bert.FAMILY)
WEIGHTS_SLACK = 16 * 1024 * 1024  # bytes a weights file may hold beyond the float32 tensors its config implies


@dataclass
class ImportedModel:
    """What a Hugging Face folder holds, as attnviz objects (``bundle.Bundle``'s parts)."""

    model: Transformer
    src_tokenizer: TokenizerLike
    tgt_tokenizer: TokenizerLike
    meta: dict[str, Any] = field(default_factory=dict)


def is_hf_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a Hugging Face model folder, not an attnviz bundle: its ``config.json``
    names a ``model_type``, or (a ``config.json`` that cannot be read: missing, a FIFO, not JSON)
    it holds a family's tokenizer files and no bundle's ``meta.json``, so that opening it
    names the problem of its ``config.json``. Reads only ``config.json``."""
    folder = Path(path)
    try:
        data = read_json_capped(folder / CONFIG, CONFIG_LIMIT, HFImportError)
    except HFImportError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("model_type"), str):
        return True
    names = {name for family in FAMILIES for name in family.files}
    return not os.path.lexists(folder / BUNDLE_META) and any(os.path.lexists(folder / name) for name in names)


def family_of(hf: Any, file: Path) -> Family:
    """The family of a folder whose ``config.json`` holds ``hf``; ``HFImportError`` naming those attnviz opens otherwise."""
    if not isinstance(hf, dict):
        raise HFImportError(file, "is not a JSON object")
    for family in FAMILIES:
        if matches(family, hf):
            return family
    known = ", ".join(arch for family in FAMILIES for arch in family.architectures)
    raise HFImportError(file, f"architecture {architecture(hf)!r} is not supported (attnviz opens {known})")


def read_hf_folder(
    path: str | os.PathLike, device: str | torch.device = "cpu", src_lang: str | None = None, tgt_lang: str | None = None
) -> ImportedModel:
    """The model and tokenizers of a local Hugging Face folder of a family attnviz opens, in eval mode on ``device``.
    ``src_lang``/``tgt_lang``: the languages of a multilingual model's tokenizers (mBART's ``zh_CN``,
    ``en_XX``; by default the folder's own); ``HFImportError`` for a model without language codes."""
    folder = Path(path)
    if not folder.is_dir():
        raise HFImportError(folder, "not a folder (a Hugging Face model folder holds config.json and the weights)")
    hf = read_json_capped(folder / CONFIG, CONFIG_LIMIT, HFImportError)
    family = family_of(hf, folder / CONFIG)
    config = family.config(hf, folder)
    raw = _read_weights(folder, weights_limit(config))
    precision = checkpoint_precision(raw)
    state = family.state_dict(raw, config, folder)
    src_tok, tgt_tok = family.tokenizers(folder, config)
    src_tok, tgt_tok = _in_language(src_tok, src_lang, folder, "--src-lang"), _in_language(tgt_tok, tgt_lang, folder, "--tgt-lang")
    model = Transformer(config)
    model.load_state_dict(state, strict=False)  # strict=False: a tied generator.weight is not in ``state``
    model.eval()
    problem = overflow_problem(model, state)  # the same finite-probe check as a bundle's
    if problem is not None:
        raise HFImportError(folder, problem)
    model.to(device)
    meta = {"imported_from": str(folder), "architecture": architecture(hf), "family": family.name, "hf_config": hf,
            WEIGHTS_PRECISION: precision}
    return ImportedModel(model, src_tok, tgt_tok, meta)


def _in_language(tokenizer: TokenizerLike, language: str | None, folder: Path, option: str) -> TokenizerLike:
    """``tokenizer`` for ``language`` (itself for ``None``); ``HFImportError`` where it has no such language code."""
    if language is None:
        return tokenizer
    if not hasattr(tokenizer, "with_language"):
        raise HFImportError(folder, f"{option} {language!r}: this model's tokenizer has no language codes (mBART's has)")
    try:
        return tokenizer.with_language(language)
    except TokenizerError as exc:
        raise HFImportError(folder, f"{option}: {exc}") from None


# -- weights ------------------------------------------------------------------------------------
WEIGHTS_PRECISION = "weights_precision"  # meta.json: how a bundle stores its weights (an import keeps its checkpoint's)
PRECISIONS = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def checkpoint_precision(tensors: dict[str, torch.Tensor]) -> str:
    """The floating-point type that holds most of ``tensors``' values, as a :data:`PRECISIONS` name
    (float64 and other types: ``float32``, what the model computes in)."""
    counts: dict[torch.dtype, int] = {}
    for t in tensors.values():
        if t.is_floating_point():
            counts[t.dtype] = counts.get(t.dtype, 0) + t.numel()
    most = max(counts, key=counts.get, default=torch.float32)
    return next((name for name, dtype in PRECISIONS.items() if dtype == most), "float32")


def weights_limit(config: TransformerConfig) -> int:
    """The most bytes a weights file of a model of ``config`` may hold: every tensor it may store
    (ours, Marian's position tables, separate embeddings, an untied output layer) in float32."""
    with torch.device("meta"):
        ours = sum(t.numel() for t in Transformer(config).state_dict().values())
    vocab, d = max(config.src_vocab_size, config.tgt_vocab_size), config.d_model
    return 4 * (ours + 3 * vocab * d + vocab + 2 * config.max_len * d) + WEIGHTS_SLACK


def _read_weights(folder: Path, limit: int) -> dict[str, torch.Tensor]:
    """The tensors of ``model.safetensors`` (preferred) or ``pytorch_model.bin`` (tensors only: no
    code runs), each file at most ``limit`` bytes (checked before any tensor is read)."""
    file = folder / SAFETENSORS
    if file.exists() or file.is_symlink():
        _check_weights_size(file, limit)
        read_safetensors_header(file, HFImportError)  # every declared size against the file's, before reading
        try:
            return st_load(read_capped(file, limit, HFImportError))  # parses a header and raw tensors; never unpickles
        except (SafetensorError, ValueError) as exc:
            raise HFImportError(file, f"not a valid safetensors file ({str(exc).splitlines()[0][:160]})") from None
        except Exception as exc:  # noqa: BLE001 - the Rust parser can raise other errors on garbage
            raise HFImportError(file, f"not a valid safetensors file ({type(exc).__name__})") from None
    file = folder / PICKLED
    if not file.exists() and not file.is_symlink():
        for index in (f"{SAFETENSORS}.index.json", f"{PICKLED}.index.json"):
            if os.path.lexists(folder / index):
                raise HFImportError(folder / index, f"sharded weights are not read: attnviz reads the weights from one {SAFETENSORS} or {PICKLED}")
        raise HFImportError(folder, f"no weights ({SAFETENSORS} or {PICKLED})")
    _check_weights_size(file, limit)
    return _unpickled_tensors(file, read_capped(file, limit, HFImportError))


def _check_weights_size(file: Path, limit: int) -> None:
    size = regular_size(file, HFImportError)
    if size > limit:
        raise HFImportError(file, f"is {size:,} bytes, more than the {limit:,} the model config.json describes can need")


def _unpickled_tensors(file: Path, data: bytes) -> dict[str, torch.Tensor]:
    """The name -> tensor dictionary a ``pytorch_model.bin``'s bytes hold, through torch's safe unpickler."""
    try:
        with warnings.catch_warnings():  # torch warns about unusual pickle protocols: the refusal below is the one line
            warnings.simplefilter("ignore")
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)  # refuses any object but tensors and containers
    except pickle.UnpicklingError as exc:
        if "global" in str(exc).lower():  # torch names the global (a function, a class) its safe unpickler refused
            raise HFImportError(file, "refused: it holds objects other than tensors (a pickle that could run code); nothing was run") from None
        raise HFImportError(file, "refused: not a readable PyTorch file of tensors (corrupt, or another format)") from None
    except Exception as exc:  # noqa: BLE001 - torch's reader raises many types on damaged or unusual files
        first = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise HFImportError(file, f"refused: not a PyTorch file of tensors ({first})") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise HFImportError(file, "does not hold a name -> tensor dictionary")
    return state
