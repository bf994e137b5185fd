"""The FFN view's data: FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position on its own.

For every layer of both stacks, the hidden activations ``max(0, x W1 + b1)`` ``[token, d_ff]``
recorded by the model (``<stack>.layers.<i>.ffn.hidden``), how many units are off, and the units
most active for one token. Models whose activation is GELU or SiLU (Marian) have no exact zeros:
for them a unit counts as off when its activation is ≤ 0, and the labels say so. No Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.core.model.sites import n_layers

ACTIVATION_NAMES = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU"}
STACKS = ("encoder", "decoder")


def hidden_name(stack: str, layer: int) -> str:
    """The trace name of a layer's FFN hidden activations, e.g. ``encoder.layers.0.ffn.hidden``."""
    return f"{stack}.layers.{layer}.ffn.hidden"


def stack_of(kind: str) -> str:
    """The stack a selection's kind points into (cross-attention sits in the decoder)."""
    return "encoder" if kind == "encoder" else "decoder"


def off_share(hidden: np.ndarray, activation: str) -> float:
    """The share of units that are off: exact zeros after ReLU; ≤ 0 after GELU or SiLU."""
    h = np.asarray(hidden)
    if h.size == 0:
        return float("nan")
    off = h == 0.0 if activation == "relu" else h <= 0.0
    return float(np.mean(off))


def off_label(activation: str) -> str:
    """What :func:`off_share` counts, in words."""
    if activation == "relu":
        return "ReLU sparsity: share of exact zeros in max(0, xW₁ + b₁)"
    return f"share of units ≤ 0 after {ACTIVATION_NAMES.get(activation, activation)} (it has no exact zeros)"


def top_units(row: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """(unit indices, activations) of the ``k`` most active units of one token's hidden row, largest first."""
    r = np.asarray(row, np.float64)
    order = np.argsort(-r, kind="stable")[: max(0, k)]
    return order, r[order]


@dataclass(frozen=True, eq=False)
class FfnLayer:
    stack: str  # "encoder" | "decoder"
    layer: int  # 0-based
    hidden: np.ndarray  # [token, d_ff] max(0, x W1 + b1)
    pieces: tuple[str, ...]  # one per token

    def off_per_token(self, activation: str) -> np.ndarray:
        """[token] share of units off for each token."""
        off = self.hidden == 0.0 if activation == "relu" else self.hidden <= 0.0
        return off.mean(axis=1) if self.hidden.size else np.zeros(len(self.pieces))


@dataclass(frozen=True, eq=False)
class FfnData:
    """Every FFN of the current pass (model order: encoder layers, then decoder layers)."""

    activation: str  # "relu" | "gelu" | "silu"
    layers: tuple[FfnLayer, ...]

    def get(self, stack: str, layer: int) -> FfnLayer | None:
        return next((f for f in self.layers if f.stack == stack and f.layer == layer), None)

    def stacks(self) -> tuple[str, ...]:
        return tuple(s for s in STACKS if any(f.stack == s for f in self.layers))

    def off_shares(self, stack: str) -> np.ndarray:
        """[layer] the share of units off in each layer of ``stack``."""
        return np.array([off_share(f.hidden, self.activation) for f in self.layers if f.stack == stack])


def ffn_data_for(current, config) -> FfnData:
    """The FFN activations of the current decoding (a ``DecodingResult``) of a model with ``config``;
    the decoder's only once a row has been fed."""
    layers = []
    for stack in STACKS:
        pieces = tuple(current.src_pieces) if stack == "encoder" else tuple(current.input_pieces)
        if not pieces:
            continue
        for i in range(n_layers(config, stack)):
            hidden = np.asarray(current.accumulated(hidden_name(stack, i)), np.float32)
            layers.append(FfnLayer(stack, i, hidden, pieces))
    return FfnData(config.activation, tuple(layers))
