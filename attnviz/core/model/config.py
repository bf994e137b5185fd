"""The model's configuration: a dataclass whose JSON is a bundle's ``config.json``."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from attnviz.errors import AttnvizError

NORMS = ("layer", "batch")
PLACEMENTS = ("post", "pre")


class ConfigError(AttnvizError, ValueError):
    """A configuration that cannot describe a model (one-line message)."""


@dataclass
class TransformerConfig:
    """Sizes and choices of an encoder-decoder Transformer ("Attention Is All You Need")."""

    src_vocab_size: int = 1000  # source vocabulary size (incl. PAD/UNK/SOS/EOS)
    tgt_vocab_size: int = 1000  # target vocabulary size (incl. PAD/UNK/SOS/EOS)
    d_model: int = 128  # width of every residual stream vector
    n_heads: int = 4  # h; d_k = d_v = d_model / h
    n_encoder_layers: int = 3  # N for the encoder stack
    n_decoder_layers: int = 3  # N for the decoder stack
    d_ff: int = 512  # hidden width of the position-wise FFN
    dropout: float = 0.1  # on embeddings+PE, attention weights, FFN hidden, sublayer outputs
    max_len: int = 128  # longest sequence (positions with a positional encoding)
    norm: str = "layer"  # "layer" (LayerNorm) or "batch" (BatchNorm over non-pad tokens)
    norm_placement: str = "post"  # "post": Norm(x + Sublayer(x)) (paper); "pre": x + Sublayer(Norm(x))
    final_norm: bool | None = None  # a Norm after each stack; None -> on for pre-norm, off for post-norm
    tie_embeddings: bool = False  # output projection shares the target embedding matrix
    norm_eps: float = 1e-5  # epsilon inside the normalization's square root
    bn_momentum: float = 0.1  # BatchNorm running-statistics momentum (as torch.nn.BatchNorm1d)
    pad_id: int = PAD_ID  # PAD id, shared by tokenizer, model and UI
    unk_id: int = UNK_ID  # UNK id
    bos_id: int = BOS_ID  # SOS (BOS) id: the decoder's first input
    eos_id: int = EOS_ID  # EOS id: ends a translation

    def __post_init__(self) -> None:
        if self.final_norm is None:
            self.final_norm = self.norm_placement == "pre"
        self.validate()

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    def validate(self) -> None:
        if self.norm not in NORMS:
            raise ConfigError(f"norm must be one of {NORMS}, not {self.norm!r}")
        if self.norm_placement not in PLACEMENTS:
            raise ConfigError(f"norm_placement must be one of {PLACEMENTS}, not {self.norm_placement!r}")
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be a positive integer, not {getattr(self, name)!r}")
        for name in ("n_encoder_layers", "n_decoder_layers"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ConfigError(f"{name} must be a non-negative integer")
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), not {self.dropout}")
        ids = {self.pad_id, self.unk_id, self.bos_id, self.eos_id}
        if len(ids) != 4:
            raise ConfigError("pad_id, unk_id, bos_id and eos_id must be distinct")
        if max(ids) >= min(self.src_vocab_size, self.tgt_vocab_size):
            raise ConfigError("special ids must be smaller than both vocabulary sizes")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TransformerConfig":
        if not isinstance(data, dict):
            raise ConfigError("config must be a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown config field(s): {', '.join(unknown)}")
        try:
            return cls(**data)
        except TypeError as exc:  # wrong types inside comparisons etc.
            raise ConfigError(str(exc)) from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def describe(self) -> str:
        """One line for a status bar: sizes and norm type."""
        norm = "LayerNorm" if self.norm == "layer" else "BatchNorm"
        return (
            f"d_model {self.d_model}, {self.n_heads} heads, {self.n_encoder_layers}+{self.n_decoder_layers} layers, "
            f"d_ff {self.d_ff}, {norm} ({self.norm_placement}-norm), vocab {self.src_vocab_size}/{self.tgt_vocab_size}"
        )
