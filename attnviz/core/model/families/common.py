"""What every Hugging Face family shares: the one-line ``HFImportError``, the ``Family`` a module
describes, building a checked config, the checks of the tensors a family maps to ours, and reading
the tokenizer files several families hold (``vocab.json``, ``merges.txt``)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import torch

from attnviz.core.data.bpe_tokenizer import BPETokenizer
from attnviz.core.data.tokenizer import TokenizerError, TokenizerLike
from attnviz.core.files import read_capped, read_json_capped
from attnviz.core.model.config import ConfigError, TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.errors import AttnvizError

CONFIG = "config.json"
VOCAB_JSON, MERGES = "vocab.json", "merges.txt"  # a piece -> id vocabulary; byte-level BPE's merge rules
CONFIG_LIMIT = 1024 * 1024  # bytes: a config.json is a few kB
VOCAB_LIMIT = 64 * 1024 * 1024  # bytes: a vocab.json or merges.txt is a few MB
SPM_LIMIT = 64 * 1024 * 1024  # bytes: a sentencepiece model of a large vocabulary is a few MB (as bundles' TOKENIZER_LIMIT)
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "swish": "silu", "silu": "silu"}  # theirs -> ours


class HFImportError(AttnvizError, ValueError):
    """A folder that cannot be opened as a model (one-line message naming the file and the problem)."""

    def __init__(self, path: str | os.PathLike, problem: str):
        super().__init__(f"{Path(path)}: {problem}")


class Family(Protocol):
    """One Hugging Face family: which folders are its own, and how each part becomes attnviz's."""

    name: str
    architectures: tuple[str, ...]  # config.json's "architectures" it opens
    model_types: tuple[str, ...]  # config.json's "model_type" it opens when "architectures" is absent
    files: tuple[str, ...]  # the files besides config.json and the weights that it reads

    def config(self, hf: dict[str, Any], folder: Path) -> TransformerConfig: ...

    def state_dict(self, theirs: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]: ...

    def tokenizers(self, folder: Path, config: TransformerConfig) -> tuple[TokenizerLike, TokenizerLike]: ...


def architecture(hf: dict[str, Any]) -> str:
    """The architecture a ``config.json`` names (its first ``architectures``, else its ``model_type``)."""
    archs = hf.get("architectures")
    return str(archs[0]) if isinstance(archs, list) and archs else str(hf.get("model_type"))


def matches(family: Family, hf: dict[str, Any]) -> bool:
    """Whether ``hf`` (a ``config.json``) is a model of ``family``: its architecture, or its model type where none is named."""
    archs = hf.get("architectures")
    if isinstance(archs, list) and archs:
        return architecture(hf) in family.architectures
    return hf.get("model_type") in family.model_types


def build_config(file: Path, fields: dict[str, Any]) -> TransformerConfig:
    """``TransformerConfig(**fields)``; a one-line ``HFImportError`` for anything it cannot describe."""
    try:
        return TransformerConfig(**fields)
    except (ConfigError, TypeError, ValueError) as exc:
        raise HFImportError(file, f"cannot describe this model ({exc})") from None


def field(hf: dict[str, Any], file: Path, name: str) -> Any:
    """``hf[name]``; ``HFImportError`` when it is missing."""
    if name not in hf:
        raise HFImportError(file, f"field {name!r} is missing")
    return hf[name]


def activation(name: Any, file: Path) -> str:
    """Our name of a ``config.json`` activation; ``HFImportError`` for one attnviz does not have."""
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise HFImportError(file, f"activation {name!r} is not supported (one of {', '.join(ACTIVATIONS)})")
    return ACTIVATIONS[name]


def check_equal_pairs(hf: dict[str, Any], file: Path, pairs: tuple[tuple[str, str], ...]) -> None:
    """``HFImportError`` unless each pair of encoder/decoder fields holds one value (attnviz's config has one)."""
    for a, b in pairs:
        if hf.get(a) != hf.get(b):
            raise HFImportError(file, f"{a} ({hf.get(a)!r}) and {b} ({hf.get(b)!r}) differ; attnviz needs them equal")


def check_tensor_kind(key: str, tensor: torch.Tensor, where: Path) -> None:
    """``HFImportError`` for a tensor that holds no plain floating-point numbers (sparse, meta, float8, integers)."""
    if tensor.layout != torch.strided:
        raise HFImportError(where, f"tensor {key!r} is a sparse tensor ({tensor.layout}); attnviz reads dense weights only")
    if tensor.device.type == "meta":
        raise HFImportError(where, f"tensor {key!r} holds no values (a meta tensor)")
    if tensor.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise HFImportError(where, f"tensor {key!r} holds {tensor.dtype}, not float16, bfloat16, float32 or float64 numbers")


def check_kinds(theirs: dict[str, torch.Tensor], where: Path) -> None:
    for key, tensor in theirs.items():
        check_tensor_kind(key, tensor, where)


def rename(key: str, names: tuple[tuple[re.Pattern[str], str], ...]) -> str | None:
    """Our name of ``key`` by the first pattern of ``names`` that matches it all (``None`` if none does)."""
    for pattern, ours in names:
        m = pattern.fullmatch(key)
        if m is not None:
            return m.expand(ours)
    return None


def output_layer(theirs: dict[str, torch.Tensor], tgt: torch.Tensor, config: TransformerConfig, where: Path) -> dict[str, torch.Tensor]:
    """The untied output layer's ``generator.weight`` (from ``lm_head.weight``), or nothing when tied
    (then an ``lm_head.weight`` stored must equal the embedding it is tied to)."""
    head = theirs.get("lm_head.weight")
    if not config.tie_embeddings:
        if head is None:
            raise HFImportError(where, "tie_word_embeddings is false but there is no 'lm_head.weight'")
        return {"generator.weight": head}
    if head is not None and not torch.equal(head, tgt):
        raise HFImportError(where, "'lm_head.weight' differs from the embedding it is tied to (tie_word_embeddings)")
    return {}


def check_shapes(ours: dict[str, torch.Tensor], config: TransformerConfig, where: Path) -> None:
    """``HFImportError`` unless ``ours`` holds exactly the tensors of a model of ``config``, each of
    its shape, floating-point and finite; converts each to float32 in place."""
    with torch.device("meta"):
        expected = Transformer(config).state_dict()
    if config.tie_embeddings:
        expected.pop("generator.weight")
    missing, extra = sorted(set(expected) - set(ours)), sorted(set(ours) - set(expected))
    if missing:
        raise HFImportError(where, f"{len(missing)} tensor(s) missing from the weights, e.g. {missing[0]!r}")
    if extra:
        raise HFImportError(where, f"{len(extra)} tensor(s) that config.json does not explain, e.g. {extra[0]!r} "
                                   f"(its {config.n_encoder_layers}+{config.n_decoder_layers} layers hold no such tensor)")
    for name, want in expected.items():
        got = ours[name]
        if tuple(got.shape) != tuple(want.shape):
            raise HFImportError(where, f"tensor {name!r} has shape {tuple(got.shape)}, config.json implies {tuple(want.shape)}")
        if not got.is_floating_point():
            raise HFImportError(where, f"tensor {name!r} holds {got.dtype}, not floating-point numbers")
        if not torch.isfinite(got).all():
            raise HFImportError(where, f"tensor {name!r} holds NaN or infinite values")
        ours[name] = got.to(torch.float32)


# -- tokenizer files ---------------------------------------------------------------------------
def tokenizer_ids(config: TransformerConfig) -> dict[str, int]:
    """The config's PAD, UNK, SOS and EOS ids, as a tokenizer's keyword arguments."""
    return dict(pad_id=config.pad_id, unk_id=config.unk_id, bos_id=config.bos_id, eos_id=config.eos_id)


def check_present(file: Path, needs: str) -> None:
    """``HFImportError`` ``missing (NEEDS)`` where there is no ``file`` (a broken link is there: reading it tells why)."""
    if not file.exists() and not file.is_symlink():
        raise HFImportError(file, f"missing ({needs})")


def check_vocab_size(file: Path, pieces: int, config: TransformerConfig) -> None:
    """``HFImportError`` unless a vocabulary of ``pieces`` (in ``file``) is the config's ``vocab_size``."""
    if pieces != config.src_vocab_size:
        raise HFImportError(file, f"holds {pieces} pieces, config.json says vocab_size {config.src_vocab_size}")


def read_vocab_json(folder: Path, piece: str) -> dict[str, int]:
    """``vocab.json`` (piece -> id); ``HFImportError`` unless it is an object that gives ``piece`` an id."""
    vocab = read_json_capped(folder / VOCAB_JSON, VOCAB_LIMIT, HFImportError)
    if not isinstance(vocab, dict) or not isinstance(vocab.get(piece), int):
        raise HFImportError(folder / VOCAB_JSON, f"is not a piece -> id object with {piece!r}")
    return vocab


def bpe_tokenizers(folder: Path, vocab: dict[str, int], config: TransformerConfig, needs: str,
                   sides: Sequence[dict[str, Any]]) -> list[BPETokenizer]:
    """A ``BPETokenizer`` of ``vocab`` and ``merges.txt`` with the config's special ids for each of
    ``sides`` (its other options); ``HFImportError`` (``needs``: what a missing file says) otherwise."""
    file = folder / MERGES
    check_present(file, needs)
    text = read_capped(file, VOCAB_LIMIT, HFImportError).decode("utf-8", errors="replace")
    merges = [line for line in text.splitlines() if line.strip() and not line.startswith("#version")]
    try:
        tokenizers = [BPETokenizer(vocab, merges, **tokenizer_ids(config), **options) for options in sides]
    except TokenizerError as exc:
        raise HFImportError(file if "merge" in str(exc) else folder / VOCAB_JSON, str(exc)) from None
    check_vocab_size(folder / VOCAB_JSON, tokenizers[0].vocab_size, config)
    return tokenizers
