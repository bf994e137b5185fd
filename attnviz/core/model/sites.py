"""The one table of attention sites: which attention blocks a model has, and where each lives.

A site is a kind (``encoder`` self-attention, masked ``decoder`` self-attention, ``cross``
encoder-decoder attention) and a 0-based layer. Its ``path`` is both the trace-name prefix of
everything the block records (``decoder.layers.1.cross_attn.weights``) and the attribute path of
its ``MultiHeadAttention`` module in the ``Transformer`` (``model.get_submodule(site.path)``), so
a site can be read from a ``Trace`` and patched on the model through the same name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn

    from attnviz.core.model.config import TransformerConfig

KINDS: tuple[str, ...] = ("encoder", "decoder", "cross")
_STACK = {"encoder": "encoder", "decoder": "decoder", "cross": "decoder"}
_BLOCK = {"encoder": "self_attn", "decoder": "self_attn", "cross": "cross_attn"}
_LAYERS_FIELD = {"encoder": "n_encoder_layers", "decoder": "n_decoder_layers", "cross": "n_decoder_layers"}


def check_kind(kind: str) -> str:
    """``kind`` itself, or a one-line ``ValueError`` naming the kinds there are."""
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r} (one of {', '.join(KINDS)})")
    return kind


@dataclass(frozen=True, order=True)
class AttentionSite:
    kind: str  # "encoder" | "decoder" | "cross"
    layer: int  # 0-based

    @property
    def stack(self) -> str:
        """``encoder`` or ``decoder``: the stack the block sits in."""
        return _STACK[self.kind]

    @property
    def layer_path(self) -> str:
        """Trace-name prefix and module path of the layer the block sits in, e.g. ``decoder.layers.1``."""
        return f"{self.stack}.layers.{self.layer}"

    @property
    def path(self) -> str:
        """Trace-name prefix and module path, e.g. ``decoder.layers.1.cross_attn``."""
        return f"{self.layer_path}.{_BLOCK[self.kind]}"

    def name(self, field: str) -> str:
        """The trace name of one of the block's fields, e.g. ``site.name("weights")``."""
        return f"{self.path}.{field}"

    def module(self, model: nn.Module) -> nn.Module:
        """The block's ``MultiHeadAttention`` in ``model`` (to read its weights or patch it)."""
        return model.get_submodule(self.path)


def stack_kinds(stack: str) -> tuple[str, ...]:
    """The attention kinds in each layer of ``stack`` (``encoder`` or ``decoder``), in model order."""
    return tuple(k for k in KINDS if _STACK[k] == stack)


def n_layers(config: TransformerConfig, kind: str) -> int:
    """How many layers of ``kind`` attention a model with ``config`` has (no ``cross`` layers in a decoder-only model)."""
    if check_kind(kind) == "cross" and not config.cross_attention:
        return 0
    return int(getattr(config, _LAYERS_FIELD[kind]))


def first_kind(kinds, config: TransformerConfig) -> str | None:
    """The first of cross, decoder and encoder attention among ``kinds`` that a model with
    ``config`` has layers of (``None``: none): what a view shows when its own kind is missing."""
    return next((k for k in ("cross", "decoder", "encoder") if k in kinds and n_layers(config, k)), None)


def ffn_sublayer(config: TransformerConfig, stack: str) -> int:
    """The FFN's sublayer number (1-based: ``residual<j>``, ``norm<j>``) in a layer of ``stack``:
    after the attention kinds the model has (GPT-2's decoder has no cross-attention: 2, not 3)."""
    return sum(1 for kind in stack_kinds(stack) if n_layers(config, kind)) + 1


def position_biased(config: TransformerConfig, kind: str) -> bool:
    """Whether attention of ``kind`` adds a relative position bias B to its scores, recorded as
    ``<site>.position_bias`` (T5's self-attention: softmax(QKᵀ + B + M); cross-attention has none)."""
    return config.positional == "relative" and check_kind(kind) != "cross"


def attention_sites(config: TransformerConfig, kind: str | None = None) -> tuple[AttentionSite, ...]:
    """Every attention site of a model with ``config`` (of one ``kind``, if given), in model order."""
    kinds = KINDS if kind is None else (check_kind(kind),)
    return tuple(AttentionSite(k, i) for k in kinds for i in range(n_layers(config, k)))
