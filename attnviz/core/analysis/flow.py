"""Attention flow (Abnar & Zuidema 2020): ``encoder_flow`` through the encoder and ``decoder_flow``
through the decoder to the source, on the same per-layer graphs as ``rollout.py``. Plain numpy and
scipy, no model and no Qt.

The attention graph has one node per (layer boundary, position): boundary 0 holds the input
tokens, boundary l + 1 what layer l outputs. Position ``i`` at boundary l + 1 has an edge to
position ``j`` at boundary l of capacity ``Ã_l[i, j]``, where ``Ã_l = rownorm(0.5 · mean_h A_l +
0.5 · I)`` is exactly rollout's graph of layer l (``rollout`` of that one layer), so the two
measures are comparable. ``flow[i, j]`` is the maximum flow from output node ``i`` at the top to
input node ``j`` at the bottom, one max-flow problem per (output, input) pair: a super-sink would
give the flow to a set of inputs, not to each one, and the flows to different inputs share edges.

Where rollout multiplies the weights along every path and sums the products, flow treats them as
pipe capacities: a token reaches the output through its widest set of edge-disjoint routes.
Rollout's path products are themselves a feasible flow (every row of ``Ã`` sums to 1, so no edge
carries more than its capacity), hence ``rollout[i, j] <= flow[i, j] <= 1``. Rows are *not*
normalised: each entry is its own max-flow problem, so a row can sum to more than 1; divide by the
row sum for a distribution over the inputs.

Integer capacities. ``scipy.sparse.csgraph.maximum_flow`` takes integer capacities, so each
capacity is multiplied by ``scale`` (default 10^6) and rounded: a capacity moves by at most
``0.5 / scale`` and a flow value by at most ``0.5 / scale`` times the number of edges of a minimum
cut (in practice about 10^-6 at the default scale; never more than ``layers · n² / (2 · scale)``).
Capacities below ``0.5 / scale`` vanish, and an entry can exceed 1 by that rounding (1.000003 seen).
On the default model, the tutorial sentence (32 source tokens, 3 layers: 1,024 max-flow problems)
takes about 0.2 s on one CPU thread, and both flows of its pass (``trace_flow``) about 0.4 s. Flow
there is far flatter than rollout: encoder entries 0.40-1.0 (median 0.75) where rollout's rows of
32 average 1/32, though each row ranks the tokens much as rollout does (Spearman about 0.86).

``trace_flow`` reads the attention weights of a full pass's ``Trace`` (a teacher-forced pass, or
a session's accumulated arrays) and returns both flows, for a view to show beside rollout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from attnviz.core.analysis.rollout import rollout
from attnviz.core.model.sites import AttentionSite

SCALE = 10**6  # capacities are multiplied by this and rounded to integers (see the module docstring)


def layer_graph(weights: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """``Ã = rownorm((1 - residual) · mean_h A + residual · I)`` of one layer's ``[head, q, k]``
    weights: rollout's graph of that layer (its rollout alone)."""
    return rollout(np.asarray(weights)[None], residual)


def max_flows(capacity: np.ndarray, sources: Sequence[int], sinks: Sequence[int], scale: int = SCALE) -> np.ndarray:
    """``[len(sources), len(sinks)]``: the maximum flow from each source node to each sink node of
    the directed graph whose edge ``u -> v`` has capacity ``capacity[u, v]`` (``[node, node]``, >= 0),
    with capacities rounded to multiples of ``1 / scale``."""
    ints = np.rint(np.asarray(capacity, dtype=np.float64) * scale)
    if ints.size and (ints.min() < 0 or ints.max() > np.iinfo(np.int32).max):
        raise ValueError("flow capacities must be non-negative and at most 2^31 / scale")
    from scipy.sparse import csr_array  # here, not at import: scipy costs the app's start a second
    from scipy.sparse.csgraph import maximum_flow

    graph = csr_array(ints.astype(np.int32))
    graph.eliminate_zeros()
    out = np.zeros((len(sources), len(sinks)))
    for a, s in enumerate(sources):
        for b, t in enumerate(sinks):
            out[a, b] = maximum_flow(graph, int(s), int(t)).flow_value
    return out / scale


def _stack_graph(capacity: np.ndarray, layers: Sequence[np.ndarray], first: int, n: int, residual: float) -> None:
    """Write a self-attention stack's edges into ``capacity``: boundary l's node p is
    ``first + l·n + p``; node i of boundary l + 1 -> node j of boundary l has capacity ``Ã_l[i, j]``."""
    for layer, weights in enumerate(layers):
        top, bottom = first + (layer + 1) * n, first + layer * n
        capacity[top : top + n, bottom : bottom + n] = layer_graph(weights, residual)


def encoder_flow(layers: Sequence[np.ndarray] | np.ndarray, residual: float = 0.5, scale: int = SCALE) -> np.ndarray:
    """Attention flow through a self-attention stack (``layers``: ``[layer, head, n, n]``, first
    layer first): ``[n, n]``, row ``i`` the maximum flow from position ``i`` after the last layer to
    each input token ``j``. Each value is in ``[rollout[i, j], 1]``; rows are not normalised (see the
    module docstring)."""
    layers = [np.asarray(a) for a in layers]
    if not layers:
        raise ValueError("attention flow needs at least one layer")
    n, depth = layers[0].shape[-1], len(layers)
    capacity = np.zeros(((depth + 1) * n, (depth + 1) * n))
    _stack_graph(capacity, layers, 0, n, residual)
    return max_flows(capacity, range(depth * n, (depth + 1) * n), range(n), scale)


def decoder_flow(
    self_layers: Sequence[np.ndarray] | np.ndarray,
    cross_layers: Sequence[np.ndarray] | np.ndarray,
    encoder_layers: Sequence[np.ndarray] | np.ndarray | None = None,
    residual: float = 0.5,
    scale: int = SCALE,
) -> dict[str, np.ndarray]:
    """Attention flow from each target position after the last decoder layer to the source tokens,
    on the graph of ``decoder_rollout``.

    Decoder layer l has three boundaries of ``t`` target nodes: its input, after masked
    self-attention, after cross-attention (= the next layer's input). Masked self-attention adds
    edges ``after-self[i] -> input[k]`` of capacity ``Ã_self[i, k]`` (its residual folded in, as in
    rollout). Cross-attention adds, from each ``after-cross[i]``, an edge of capacity ``residual``
    to ``after-self[i]`` (the residual connection) and edges of capacity ``(1 - residual) ·
    mean_h A_cross[i, j]`` to source node ``j`` of the encoder's top boundary: the
    ``R <- 0.5 · R + 0.5 · [0 | mean_h A_cross · E]`` of ``decoder_rollout``, with the encoder's
    rollout ``E`` replaced by the encoder's own flow graph (``encoder_layers``, ``[layer, head, s, s]``)
    down to the input tokens. Without ``encoder_layers`` the sinks are the encoder outputs (``E`` =
    identity in ``decoder_rollout``). The FFN works on each position alone: no edges.

    ``self_layers`` ``[layer, head, t, t]``, ``cross_layers`` ``[layer, head, t, s]``. Returns
    ``source`` ``[t, s]`` (maximum flow from target position ``i`` to source token ``j``; each at
    most 1, at least ``decoder_rollout``'s ``source`` entry) and ``source_normalized`` (rows
    rescaled to sum to 1, comparable with a cross-attention row).
    """
    self_layers = [np.asarray(a, dtype=np.float64) for a in self_layers]
    cross_layers = [np.asarray(a, dtype=np.float64) for a in cross_layers]
    if len(self_layers) != len(cross_layers) or not self_layers:
        raise ValueError("decoder_flow needs as many self- as cross-attention layers (at least one)")
    encoder_layers = [] if encoder_layers is None else [np.asarray(a) for a in encoder_layers]
    t, s = cross_layers[0].shape[-2:]
    top = len(encoder_layers) * s  # first node of the encoder's top boundary
    base = top + s  # first decoder node; boundary b of the decoder: base + b·t
    size = base + (2 * len(self_layers) + 1) * t
    capacity = np.zeros((size, size))
    _stack_graph(capacity, encoder_layers, 0, s, residual)
    diagonal = np.arange(t)
    for layer, (a_self, a_cross) in enumerate(zip(self_layers, cross_layers)):
        inp, mid, out = (base + (2 * layer + k) * t for k in range(3))
        capacity[mid : mid + t, inp : inp + t] = layer_graph(a_self, residual)
        capacity[out + diagonal, mid + diagonal] = residual
        capacity[out : out + t, top : top + s] = (1.0 - residual) * a_cross.mean(0)
    src = max_flows(capacity, range(size - t, size), range(s), scale)
    total = src.sum(-1, keepdims=True)
    return {"source": src, "source_normalized": src / np.where(total > 0, total, 1.0)}


def trace_flow(trace: Mapping[str, np.ndarray], residual: float = 0.5, scale: int = SCALE) -> dict[str, np.ndarray]:
    """Both flows of one full pass, from the ``weights`` of its attention blocks in ``trace`` (names
    as in the trace contract, batch axis dropped): ``encoder`` ``[s, s]`` (``encoder_flow``), and
    ``source``/``source_normalized`` ``[t, s]`` (``decoder_flow`` down to the source tokens,
    through the encoder's graph when the trace has it). A stack the trace lacks is left out."""
    encoder, decoder, cross = (_stack_weights(trace, kind) for kind in ("encoder", "decoder", "cross"))
    out: dict[str, np.ndarray] = {}
    if encoder:
        out["encoder"] = encoder_flow(encoder, residual, scale)
    if decoder and cross:
        out.update(decoder_flow(decoder, cross, encoder or None, residual, scale))
    return out


def _stack_weights(trace: Mapping[str, np.ndarray], kind: str) -> list[np.ndarray]:
    """The ``[head, query, key]`` weights of every layer of ``kind`` in ``trace``, first layer first."""
    layers: list[np.ndarray] = []
    while (name := AttentionSite(kind, len(layers)).name("weights")) in trace:
        weights = np.asarray(trace[name])
        if weights.ndim != 3:
            raise ValueError(f"attention flow needs {name} as [head, query, key], not {weights.shape} (drop the batch axis)")
        layers.append(weights)
    return layers
