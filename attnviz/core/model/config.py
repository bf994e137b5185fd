"""The model's configuration: a dataclass whose JSON is a bundle's ``config.json``."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any

from attnviz.core.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from attnviz.errors import AttnvizError

# -- the schema: one row per field ------------------------------------------------------------
MAX_PARAMETERS = 500_000_000  # the parameter budget: 2 GB of float32 weights
_REPR_LIMIT = 40  # characters of a bad value quoted in an error message


@dataclass(frozen=True)
class Rule:
    """What one config field may hold: ``kind`` (``int``, ``float``, ``bool`` or ``str``), an
    inclusive range ``[low, high]`` (``low_open``/``high_open`` exclude an end), the ``choices``
    of a string, whether ``null`` is allowed, and whether a ``config.json`` must give it."""

    kind: type
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    nullable: bool = False
    required: bool = False
    low_open: bool = False
    high_open: bool = False

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.nullable
        if self.kind is bool:
            return isinstance(value, bool)
        if self.kind is str:
            return isinstance(value, str) and (not self.choices or value in self.choices)
        if isinstance(value, bool) or not isinstance(value, int if self.kind is int else (int, float)):
            return False
        if isinstance(value, float) and not math.isfinite(value):  # an int of any size is finite (and too large for a float)
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def describe(self) -> str:
        if self.kind is bool:
            text = "true or false"
        elif self.kind is str:
            text = "one of " + ", ".join(repr(c) for c in self.choices) if self.choices else "a string"
        else:
            text = "an integer" if self.kind is int else "a finite number"
            if self.low is not None or self.high is not None:
                text += f" in {'(' if self.low_open else '['}{_bound(self.low)}, {_bound(self.high)}{')' if self.high_open else ']'}"
        return text + (" or null" if self.nullable else "")


def _bound(x: float | None) -> str:
    if x is None:
        return "inf"
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def shown(value: Any) -> str:
    """``value`` as an error message quotes it: its repr, cut to a few dozen characters."""
    try:
        text = repr(value)
    except ValueError:  # an int of more digits than Python prints
        text = "an integer of thousands of digits"
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


NORMS = ("layer", "batch", "rms")
PLACEMENTS = ("post", "pre")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
POSITIONAL_LAYOUTS = ("interleaved", "halves")
POSITIONALS = ("sinusoidal", "learned", "relative")
FFNS = ("plain", "gated")
KINDS = ("encoder-decoder", "decoder-only", "encoder-only")
MAX_SIZE = 1_048_576  # no width or vocabulary is larger

# field -> what it may hold. Every field of ``TransformerConfig`` has a row; checks that relate
# fields (divisibility, special ids inside the vocabularies, the parameter budget) are in ``validate``.
FIELDS: dict[str, Rule] = {
    "src_vocab_size": Rule(int, 1, MAX_SIZE, required=True),
    "tgt_vocab_size": Rule(int, 1, MAX_SIZE, required=True),
    "d_model": Rule(int, 1, 65_536, required=True),
    "n_heads": Rule(int, 1, 1024, required=True),
    "n_encoder_layers": Rule(int, 0, 256, required=True),
    "n_decoder_layers": Rule(int, 0, 256, required=True),
    "d_ff": Rule(int, 1, MAX_SIZE, required=True),
    "dropout": Rule(float, 0.0, 1.0, high_open=True),
    "max_len": Rule(int, 1, 65_536),
    "norm": Rule(str, choices=NORMS),
    "norm_placement": Rule(str, choices=PLACEMENTS),
    "final_norm": Rule(bool, nullable=True),
    "tie_embeddings": Rule(bool),
    "norm_eps": Rule(float, 0.0, 1.0, low_open=True),
    "bn_momentum": Rule(float, 0.0, 1.0),
    "pad_id": Rule(int, 0, MAX_SIZE),
    "unk_id": Rule(int, 0, MAX_SIZE),
    "bos_id": Rule(int, 0, MAX_SIZE),
    "eos_id": Rule(int, 0, MAX_SIZE),
    "activation": Rule(str, choices=ACTIVATIONS),
    "positional_layout": Rule(str, choices=POSITIONAL_LAYOUTS),
    "positional": Rule(str, choices=POSITIONALS),
    "relative_buckets": Rule(int, 2, 4096),
    "relative_max_distance": Rule(int, 2, 65_536),
    "scale_scores": Rule(bool),
    "ffn": Rule(str, choices=FFNS),
    "scale_embedding": Rule(bool),
    "layernorm_embedding": Rule(bool),
    "bias": Rule(bool),
    "scale_output": Rule(bool),
    "head_dim": Rule(int, 1, 65_536, nullable=True),
    "kind": Rule(str, choices=KINDS),
}


NORM_NAMES = {"layer": "LayerNorm", "batch": "BatchNorm", "rms": "RMSNorm"}  # config.norm -> its name on screen
NORM_SYMBOLS = {"layer": "LN", "batch": "BN", "rms": "RMS"}  # config.norm -> its symbol in a formula: LN(x + Sublayer(x))
KIND_NOTES = {  # config.kind -> what ``describe`` adds: what a model of one stack has not
    "encoder-decoder": "",
    "decoder-only": "; decoder-only: no encoder, no cross-attention (continues a prompt)",
    "encoder-only": "; encoder-only: no decoder, no decoding (predicts masked tokens)",
}


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
    activation: str = "relu"  # the FFN's nonlinearity: "relu" (paper), "gelu" or "silu" (swish, Marian's)
    positional_layout: str = "interleaved"  # PE columns: "interleaved" sin/cos (paper) or "halves" (all sin, then all cos: Marian)
    positional: str = "sinusoidal"  # "sinusoidal" PE (paper), "learned" table (BART), "relative": a bias B on the scores (T5)
    relative_buckets: int = 32  # "relative": how many distance buckets B has (T5's relative_attention_num_buckets)
    relative_max_distance: int = 128  # "relative": the distance from which all keys share the last bucket
    scale_scores: bool = True  # Q K^T / sqrt(d_k) (paper); false: Q K^T unscaled (T5 folds the scale into its weights)
    ffn: str = "plain"  # "plain": act(x W1 + b1) W2 + b2; "gated": (act(x W1) * (x W_up)) W2 (T5 v1.1)
    scale_embedding: bool = True  # token embeddings x sqrt(d_model) (paper, Marian); false: unscaled (T5, BART)
    layernorm_embedding: bool = False  # a LayerNorm on embedding + positions, before the first layer (BART)
    bias: bool = True  # biases in the attention projections, the FFN and the output layer; false: none (T5)
    scale_output: bool = False  # the last hidden states x d_model^-0.5 before the output layer (T5 with a tied output)
    head_dim: int | None = None  # d_k = d_v when it is not d_model / h (mT5); None: d_model / h
    kind: str = "encoder-decoder"  # the stacks: "encoder-decoder" (paper), "decoder-only" (GPT-2: no encoder, no cross-attention), "encoder-only" (BERT: no decoder; a masked-token head)

    def __post_init__(self) -> None:
        if self.final_norm is None:
            self.final_norm = self.norm_placement == "pre"
        self.validate()

    @property
    def cross_attention(self) -> bool:
        """Whether the decoder's layers attend to an encoder's output (an encoder-decoder model)."""
        return self.kind == "encoder-decoder"

    @property
    def d_k(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    def validate(self) -> None:
        """``ConfigError`` (one line) for the first field outside its ``FIELDS`` row, for fields that do
        not fit together, or for a model over the parameter budget (``MAX_PARAMETERS``)."""
        for name, rule in FIELDS.items():
            value = getattr(self, name)
            if not rule.accepts(value):
                raise ConfigError(f"{name} must be {rule.describe()}, not {shown(value)}")
        if self.head_dim is None and self.d_model % self.n_heads:
            raise ConfigError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        self._check_kind()
        ids = {"pad_id": self.pad_id, "unk_id": self.unk_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        one_id = self.kind == "decoder-only" and len(set(ids.values())) == 1  # GPT-2's <|endoftext|> is all four
        if not one_id and len(set(ids.values())) != len(ids) - (self.bos_id in (self.pad_id, self.eos_id)):  # a decoder may start from PAD (Marian) or EOS (BART)
            raise ConfigError(f"pad_id, unk_id, bos_id and eos_id must be distinct (bos_id may equal pad_id or eos_id), not {ids}")
        vocab = min(self.src_vocab_size, self.tgt_vocab_size)
        for name, value in ids.items():
            if value >= vocab:
                raise ConfigError(f"{name} {value} is outside the vocabularies (sizes {self.src_vocab_size}/{self.tgt_vocab_size})")
        n = self.estimated_parameters()
        if n > MAX_PARAMETERS:
            raise ConfigError(
                f"the model would have about {n / 1e6:,.0f} million parameters ({4 * n / 1e9:,.1f} GB of float32); "
                f"the budget is {MAX_PARAMETERS / 1e6:,.0f} million ({4 * MAX_PARAMETERS / 1e9:.1f} GB): make it smaller"
            )

    def _check_kind(self) -> None:
        """``ConfigError`` unless the layer counts fit ``kind``: no encoder layers in a decoder-only
        model, no decoder layers in an encoder-only one."""
        if self.kind == "decoder-only" and self.n_encoder_layers:
            raise ConfigError(f"a decoder-only model has no encoder: n_encoder_layers must be 0, not {self.n_encoder_layers}")
        if self.kind == "encoder-only" and self.n_decoder_layers:
            raise ConfigError(f"an encoder-only model has no decoder: n_decoder_layers must be 0, not {self.n_decoder_layers}")

    def estimated_parameters(self) -> int:
        """About how many numbers the model holds (weights, biases, norms, the positional table),
        computed from the sizes alone, before anything is allocated."""
        d, f, inner = self.d_model, self.d_ff, self.n_heads * self.d_k
        attention = 4 * (d * inner + d)
        ffn = (3 if self.ffn == "gated" else 2) * d * f + d + f
        norms = 4 * d  # weight, bias (and BatchNorm's two running statistics)
        encoder = self.n_encoder_layers * (attention + ffn + 2 * norms)
        decoder = self.n_decoder_layers * ((2 if self.cross_attention else 1) * attention + ffn + 3 * norms)
        tables = (self.src_vocab_size + self.tgt_vocab_size) * d + 2 * self.max_len * d
        generator = 0 if self.tie_embeddings else self.tgt_vocab_size * (d + 1)
        return encoder + decoder + tables + generator + 4 * norms

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TransformerConfig":
        if not isinstance(data, dict):
            raise ConfigError("config must be a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown config field(s): {', '.join(shown(u) for u in unknown[:3])}")
        missing = [name for name, rule in FIELDS.items() if rule.required and name not in data]
        if missing:
            raise ConfigError(f"missing config field(s): {', '.join(missing)}")
        try:
            return cls(**data)
        except TypeError as exc:  # wrong types inside comparisons etc.
            raise ConfigError(str(exc)) from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def length_limit(self) -> str:
        """Where the longest sequence, ``max_len``, comes from, for the message that says a sentence
        was cut: the positional table's rows, or (relative positions have no table) the setting."""
        if self.positional == "relative":
            return f"the model's max_len is {self.max_len} (its relative positions have no table)"
        return f"the model's position table holds {self.max_len} positions"

    def describe(self) -> str:
        """One line for a status bar: sizes and norm type; for a model with one stack, what it lacks."""
        norm = NORM_NAMES[self.norm]
        return (
            f"d_model {self.d_model}, {self.n_heads} heads, {self.n_encoder_layers}+{self.n_decoder_layers} layers, "
            f"d_ff {self.d_ff}, {norm} ({self.norm_placement}-norm), vocab {self.src_vocab_size}/{self.tgt_vocab_size}"
        ) + KIND_NOTES[self.kind]
