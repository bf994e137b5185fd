"""The residual-stream view's data: how large the stream x is across depth, and how much each
sublayer adds to it.

Each sublayer j of a layer adds its output to the stream: ``x + Sublayer(x)`` is recorded as
``<layer>.residual{j}``. What enters sublayer j is the stream after sublayer j−1 (the embedding
+ PE before the first layer); with pre-norm the stream after a sublayer is the residual sum
itself, with post-norm it is ``Norm(x + Sublayer(x))``. Norms are Euclidean norms of each token's
d_model vector, averaged over the tokens. No Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.core.model.sites import n_layers, stack_kinds

SUBLAYER_MARKS = {"encoder": "A", "decoder": "A", "cross": "C", "ffn": "F"}  # short axis labels
SUBLAYER_LEGEND = "A = self-attention, C = cross-attention, F = FFN, after layer 1, 2, …"


@dataclass(frozen=True)
class Sublayer:
    """One sublayer of a stack: where it is and what the selection calls it."""

    stack: str  # "encoder" | "decoder"
    layer: int  # 0-based
    index: int  # j, 1-based within the layer
    kind: str  # the attention kind ("encoder", "decoder", "cross"), or "ffn"

    @property
    def label(self) -> str:
        """``2A``, ``2C``, ``2F``: layer (1-based) and sublayer (see :data:`SUBLAYER_LEGEND`)."""
        return f"{self.layer + 1}{SUBLAYER_MARKS[self.kind]}"

    @property
    def selection_kind(self) -> str:
        """The kind the other views are asked to show: the attention kind, or the stack's own for an FFN."""
        return self.stack if self.kind == "ffn" else self.kind


@dataclass(frozen=True, eq=False)
class ResidualStack:
    """One stack's stream: ``stream[p]`` ``[token]`` is ‖x‖ after point p (point 0: embedding + PE;
    point j: after sublayer ``sublayers[j-1]``); ``added[j-1]`` ``[token]`` is ‖Sublayer(x)‖."""

    stack: str
    pieces: tuple[str, ...]
    sublayers: tuple[Sublayer, ...]
    stream: np.ndarray  # [1 + sublayer, token]
    added: np.ndarray  # [sublayer, token]

    def mean_stream(self) -> np.ndarray:
        return self.stream.mean(axis=1)

    def mean_added(self) -> np.ndarray:
        return self.added.mean(axis=1)

    def labels(self) -> tuple[str, ...]:
        """One label per point of the stream: ``embed + PE``, then each sublayer's."""
        return ("emb", *(s.label for s in self.sublayers))


def stack_sublayers(config, stack: str) -> tuple[Sublayer, ...]:
    """The sublayers of ``stack`` in model order: each layer's attention blocks, then its FFN."""
    kinds = (*(k for k in stack_kinds(stack) if n_layers(config, k)), "ffn")  # GPT-2's decoder has no cross-attention
    return tuple(Sublayer(stack, i, j, k) for i in range(n_layers(config, stack)) for j, k in enumerate(kinds, 1))


def token_norms(x: np.ndarray) -> np.ndarray:
    """[token] the Euclidean norm of each row of ``x`` ``[token, d_model]``."""
    return np.linalg.norm(np.asarray(x, np.float64), axis=-1)


def residual_stack(current, config, stack: str) -> ResidualStack:
    """The stream of one stack of the current decoding (a ``DecodingResult``)."""
    post = config.norm_placement == "post"
    x = np.asarray(current.accumulated(f"{stack}.embed.sum"), np.float64)  # [token, d]
    stream, added = [token_norms(x)], []
    subs = stack_sublayers(config, stack)
    for s in subs:
        prefix = f"{stack}.layers.{s.layer}"
        r = np.asarray(current.accumulated(f"{prefix}.residual{s.index}"), np.float64)
        added.append(token_norms(r - x))
        x = np.asarray(current.accumulated(f"{prefix}.norm{s.index}.output"), np.float64) if post else r
        stream.append(token_norms(x))
    pieces = tuple(current.src_pieces) if stack == "encoder" else tuple(current.input_pieces)
    n = len(pieces)
    return ResidualStack(stack, pieces, subs, np.array(stream).reshape(-1, n), np.array(added).reshape(-1, n))


def residual_data_for(current, config) -> tuple[ResidualStack, ...]:
    """The encoder's stream, and the decoder's once a row has been fed."""
    stacks = [residual_stack(current, config, "encoder")] if config.kind != "decoder-only" else []
    if current.input_pieces and n_layers(config, "decoder"):
        stacks.append(residual_stack(current, config, "decoder"))
    return tuple(stacks)


@dataclass(frozen=True)
class ResidualFrame:
    """What the residual view draws: each stack's stream and the open model's sublayer formula."""

    stacks: Sequence[ResidualStack]
    formula: str = "x + Sublayer(LN(x))"
