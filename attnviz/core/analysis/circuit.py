"""A circuit for one decision: edge attribution patching (EAP) over the graph of the model's
nodes, and how much of the decision the top edges carry when everything else takes another
sentence's values (``attnviz circuit``). No Qt.

**The decision.** Both sentences are teacher-forced on the same target (the typed one, or the
clean sentence's greedy translation). The decision is the target position where the corrupted
sentence loses the most log P of the clean token (as the patching map picks its default: for
猫吃鱼。 against 鱼吃猫。 the first content word, ``cat`` after ``The``), and the metric is the logit
difference there, m = logit(clean token) - logit(the corrupted run's most likely other token).

**The graph.** Nodes: each stack's input embeddings (what its first layer reads: token
embedding, plus PE where positions are added), every attention head of every kind (its output
Z_i W_i^O; the bias b^O belongs to no head and is the same in every run), every FFN (its
output) and the logits. In a pre-norm model the residual stream a sublayer reads is the embedding
plus the outputs of the sublayers before it (and the b^O constants), so a node's input is a sum
of its upstream nodes' outputs; an edge u -> v is one term of that sum. Inside a stack a head
reads every node of an earlier sublayer and an FFN also its own layer's heads. A cross-attention
head has two inputs: its queries read the decoder stream (decoder nodes), its keys and values the
encoder's output, that is every encoder node through the final encoder norm (the only way an
encoder node reaches the decoder). The logits read every decoder node through the final decoder
norm.

**Each input held apart** (the "detach trick" of the EAP papers). A head's input is its own: at
its block's ``q``/``k``/``v`` taps each head's Q_i, K_i, V_i are computed anew from Norm(x_i) of
its own x_i (the stream it reads, plus what a patch or a gradient probe puts there for it alone).
An FFN's and the logits' inputs are changed at the tap of their norm's input. Node outputs are read
where they are tapped (``z``, ``ffn.output``, the embedding's ``sum``). ``_GraphPass`` does all
this in one pass, as an intervention on the call's recorder: the model runs as ever
(``run_with_trace``).

**Scores** (EAP, Syed et al. 2023): score(u -> v) = sum over positions of
(a_u(corrupt) - a_u(clean)) . dm/dx_v, the gradient at v's input in the clean run: a first-order
estimate of the change in m when that edge alone carries the corrupted value. One forward and one
backward give every input's gradient (a zero tensor added to each input: its gradient is the
input's). Negative: corrupting the edge lowers m, the edge carries the clean decision. With
``ig_steps`` n (EAP-IG, Hanna et al. 2024) dm/dx_v is averaged over n passes whose input embeddings
go from the corrupted to the clean ones (the midpoints alpha_k = (k + 1/2) / n). **LayerNorm**:
gradients go through the actual norms (each head's norm of its own input, the final encoder norm
of each cross-attention head's K/V, the final decoder norm before the logits) at the run's
values: EAP is a first-order approximation, and faithfulness below is measured with the real,
nonlinear network. The outgoing scores of a node sum to its attribution-patching score
(delta a_u . dm/da_u).

**Faithfulness**, by edge-level patching: the top k edges by |score| carry the patched run's own
values and every other edge the corrupted run's (each input x_v = the stream - sum over dropped
edges of (a_u(now) - a_u(corrupt))), one batched pass with a row per k. The recovered share is
(m_k - m_corrupt) / (m_clean - m_corrupt): 1 with every edge kept (the clean run), 0 with none
(the corrupted run).

A post-norm model normalizes the stream after every sublayer: a node's input is then no sum of
node outputs, and the graph does not apply (a one-line ``CircuitError``). A decoder-only model
(GPT-2) reads its prompt in the decoder: the graph is its decoder's nodes, from the embeddings
where the two prompts differ, and the prompts need the same number of tokens. An encoder-only
model (BERT) makes no decision to trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.analysis.attribution import after_prompt, forced_pass, integration_path
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.head_importance import ROWS_PER_PASS, head_label
from attnviz.core.decoding.result import check_eval_mode, check_finite, model_device, prepare_source
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.core.model.sites import AttentionSite, ffn_sublayer, n_layers, stack_kinds
from attnviz.errors import AttnvizError

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.transformer import Transformer

DEFAULT_KS = (5, 10, 20, 50, 100)  # the faithfulness curve's edge counts (with 0 and every edge)


class CircuitError(AttnvizError, ValueError):
    """A circuit that cannot be traced (a model or sentence pair the graph does not fit); one line."""


# -- the graph ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Node:
    """A node: ``embed`` (a stack's input embeddings), ``head``, ``ffn`` or ``logits``; 0-based layer and head."""

    kind: str
    stack: str  # encoder | decoder
    layer: int = -1  # -1: the embeddings; the logits: the decoder's layer count
    head: int = -1
    attention: str = ""  # a head's kind: encoder, decoder or cross

    @property
    def label(self) -> str:
        """``cross:3:2``, ``encoder:2:ffn``, ``decoder:embed``, ``logits``: 1-based, as on screen."""
        if self.kind == "head":
            return head_label(self.attention, self.layer, self.head)
        if self.kind == "ffn":
            return f"{self.stack}:{self.layer + 1}:ffn"
        return f"{self.stack}:embed" if self.kind == "embed" else "logits"


@dataclass(frozen=True)
class Input:
    """One input of node ``node``: it reads ``side`` (``stream``: its stack's residual stream, a
    cross head's queries; ``memory``: a cross head's K/V), the sum of ``upstream`` nodes' outputs;
    its edges are ``first_edge ..`` in ``upstream``'s order."""

    node: int
    side: str
    upstream: tuple[int, ...]
    first_edge: int

    @property
    def edges(self) -> range:
        return range(self.first_edge, self.first_edge + len(self.upstream))


@dataclass(frozen=True, eq=False)
class Graph:
    """The nodes, their inputs and the edges (edge e: node ``edge_up[e]`` into input ``edge_input[e]``)."""

    nodes: tuple[Node, ...]
    inputs: tuple[Input, ...]
    edge_up: np.ndarray  # [edge] upstream node
    edge_input: np.ndarray  # [edge] input index

    @property
    def n_edges(self) -> int:
        return len(self.edge_up)

    def edge_down(self, e: int) -> int:
        """The node edge ``e`` feeds."""
        return self.inputs[int(self.edge_input[e])].node

    def edge_label(self, e: int) -> str:
        """``encoder:1:2 -> cross:3:1 (K/V)``."""
        inp = self.inputs[int(self.edge_input[e])]
        down = self.nodes[inp.node]
        side = {"memory": " (K/V)", "stream": " (Q)" if down.attention == "cross" else ""}[inp.side]
        return f"{self.nodes[int(self.edge_up[e])].label} -> {down.label}{side}"

    def input_of(self, node: int, side: str = "stream") -> int:
        return next(i for i, inp in enumerate(self.inputs) if inp.node == node and inp.side == side)


def check_model(config: TransformerConfig) -> None:
    """A one-line ``CircuitError`` for a model whose graph this module cannot build."""
    if config.kind == "encoder-only":
        raise CircuitError("an encoder-only model (BERT) has no decoder: it makes no decision to trace a circuit for")
    if config.norm_placement != "pre":
        raise CircuitError("a post-norm model normalizes the residual stream after every sublayer, so a node's input is no sum of "
                           "the nodes before it: edge attribution needs a pre-norm model")


def _stacks(config: TransformerConfig) -> tuple[str, ...]:
    return ("decoder",) if config.kind == "decoder-only" else ("encoder", "decoder")


def _layer_kinds(config: TransformerConfig, stack: str) -> tuple[str, ...]:
    """The attention kinds each layer of ``stack`` has, in order: sublayers 1, 2, ... (the FFN follows)."""
    return tuple(k for k in stack_kinds(stack) if n_layers(config, k))


def _stack_nodes(config: TransformerConfig, stack: str) -> list[tuple[Node, tuple[int, int]]]:
    """``stack``'s nodes in order, each with its place in the stream: (layer, sublayer)."""
    out = [(Node("embed", stack), (-1, 0))]
    n = config.n_encoder_layers if stack == "encoder" else config.n_decoder_layers
    for layer in range(n):
        for j, kind in enumerate(_layer_kinds(config, stack), 1):
            out += [(Node("head", stack, layer, h, kind), (layer, j)) for h in range(config.n_heads)]
        out.append((Node("ffn", stack, layer), (layer, ffn_sublayer(config, stack))))
    return out


def circuit_graph(config: TransformerConfig) -> Graph:
    """The graph of a model of ``config`` (see the module docstring)."""
    check_model(config)
    placed = {s: _stack_nodes(config, s) for s in _stacks(config)}
    logits = (Node("logits", "decoder", config.n_decoder_layers), (config.n_decoder_layers, 0))
    placed["decoder"].append(logits)
    nodes = [node for s in placed for node, _ in placed[s]]
    index = {node: i for i, node in enumerate(nodes)}
    encoder = tuple(index[n] for n, _ in placed.get("encoder", ()))
    inputs: list[Input] = []
    ups: list[int] = []
    for members in placed.values():
        for node, place in members:
            if node.kind == "embed":
                continue
            reads = [("stream", tuple(index[u] for u, p in members if p < place and u.kind != "logits"))]
            if node.attention == "cross":
                reads.append(("memory", encoder))
            for side, upstream in reads:
                inputs.append(Input(index[node], side, upstream, len(ups)))
                ups += upstream
    edge_input = np.concatenate([np.full(len(i.upstream), k) for k, i in enumerate(inputs)]).astype(np.int64)
    return Graph(tuple(nodes), tuple(inputs), np.array(ups, dtype=np.int64), edge_input)


# -- one pass over the graph --------------------------------------------------------------------
def embedding_output(config: TransformerConfig, stack: str) -> str:
    """The trace name of ``stack``'s embedding node's output: what its first layer reads."""
    normed = config.layernorm_embedding and config.positional != "relative"
    return f"{stack}.embed.norm.output" if normed else f"{stack}.embed.sum"


def _stream_end(config: TransformerConfig, stack: str) -> str:
    """The trace name of ``stack``'s last stream, before its final norm (the memory's source, the logits' input)."""
    return f"{stack}.final_norm.input" if config.final_norm else f"{stack}.output"


class _GraphPass:
    """One pass over a ``Graph`` as an intervention (the ``Change`` protocol; a new one per call):
    records every node's output in ``outputs`` and holds every input apart (module docstring).

    ``corrupt``: each node's output in the corrupted run (``[1, L, d]``); ``dropped`` ``[B, edge]``:
    1 where an edge carries that corrupted output instead of the pass's own; ``embeds``: each
    stack's embedding output to use instead of the pass's (``[B, L, d]``); ``probe``: a zero leaf
    added to every input, ``leaves`` (its gradient is the input's)."""

    def __init__(self, model: Transformer, graph: Graph, *, corrupt: dict[int, torch.Tensor] | None = None,
                 dropped: torch.Tensor | None = None, embeds: dict[str, torch.Tensor] | None = None, probe: bool = False):
        self.model, self.graph = model, graph
        self.corrupt, self.dropped, self.embeds, self.probe = corrupt, dropped, embeds, probe
        self.outputs: dict[int, torch.Tensor] = {}  # node -> [B, L, d]
        self.leaves: list[tuple[torch.Tensor, tuple[int, ...]]] = []  # ([B, n, L, d] zeros, the n inputs it probes)
        self._index = {node: i for i, node in enumerate(graph.nodes)}
        self._inputs = {(inp.node, inp.side): k for k, inp in enumerate(graph.inputs)}
        self._streams: dict[str, torch.Tensor] = {}  # what a block's heads read, by site path; the encoder's end as "memory"
        self._normed: dict[tuple[AttentionSite, str], torch.Tensor] = {}  # each block side's Norm(x_i)  [B, h, L, d]
        self._handlers = self._build_handlers()
        self.names = tuple(self._handlers)

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return self._handlers[name](t)

    def _build_handlers(self) -> dict:
        cfg, h = self.model.config, {}
        for stack in _stacks(cfg):
            h[embedding_output(cfg, stack)] = partial(self._embedding, stack)
            for layer in range(cfg.n_encoder_layers if stack == "encoder" else cfg.n_decoder_layers):
                for j, kind in enumerate(_layer_kinds(cfg, stack), 1):
                    site = AttentionSite(kind, layer)
                    h[f"{site.layer_path}.norm{j}.input"] = partial(self._keep, site.path)
                    for field in "qkv":
                        h[site.name(field)] = partial(self._project, site, j, field)
                    h[site.name("z")] = partial(self._heads_out, site)
                ffn = self._index[Node("ffn", stack, layer)]
                h[f"{stack}.layers.{layer}.norm{ffn_sublayer(cfg, stack)}.input"] = partial(self._input, ffn)
                h[f"{stack}.layers.{layer}.ffn.output"] = partial(self._output, ffn)
        if cfg.kind != "decoder-only":
            h[_stream_end(cfg, "encoder")] = partial(self._keep, "memory")
        h[_stream_end(cfg, "decoder")] = partial(self._input, self._index[Node("logits", "decoder", cfg.n_decoder_layers)])
        return h

    # the taps -------------------------------------------------------------------------------------
    def _embedding(self, stack: str, t: torch.Tensor) -> torch.Tensor:
        if self.embeds is not None:
            t = self.embeds[stack].to(t).expand_as(t)
        self.outputs[self._index[Node("embed", stack)]] = t
        return t

    def _keep(self, key: str, t: torch.Tensor) -> torch.Tensor:
        self._streams[key] = t
        return t

    def _output(self, node: int, t: torch.Tensor) -> torch.Tensor:
        self.outputs[node] = t
        return t

    def _input(self, node: int, t: torch.Tensor) -> torch.Tensor:
        """An FFN's or the logits' input: the stream plus what this pass puts there."""
        return t + self._changes((self._inputs[(node, "stream")],), t)[:, 0]

    def _heads_out(self, site: AttentionSite, z: torch.Tensor) -> torch.Tensor:
        """Each head's output Z_i W_i^O  [B, L, d] from Z  [B, h, L, dk]."""
        w_o = site.module(self.model).w_o.weight  # [d, h * dk]
        out = torch.einsum("bhlk,dhk->bhld", z, w_o.view(w_o.shape[0], z.shape[1], z.shape[3]))
        for h in range(z.shape[1]):
            self.outputs[self._index[Node("head", site.stack, site.layer, h, site.kind)]] = out[:, h]
        return z

    def _project(self, site: AttentionSite, j: int, field: str, t: torch.Tensor) -> torch.Tensor:
        """Q, K or V ``[B, h, L, dk]`` of each head from its own normalized input."""
        side = "memory" if site.kind == "cross" and field != "q" else "stream"
        x = self._head_inputs(site, j, side)  # [B, h, L, d]
        lin = getattr(site.module(self.model), f"w_{field}")
        h, dk = t.shape[1], t.shape[3]
        out = torch.einsum("bhld,hkd->bhlk", x, lin.weight.view(h, dk, -1))
        return (out if lin.bias is None else out + lin.bias.view(h, 1, dk)).to(t.dtype)

    def _head_inputs(self, site: AttentionSite, j: int, side: str) -> torch.Tensor:
        """Norm(x_i) of every head of ``site`` on ``side``  [B, h, L, d] (computed once a pass)."""
        key = (site, side)
        if key not in self._normed:
            if side == "memory":
                stream, norm = self._streams["memory"], self.model.encoder.final_norm
            else:
                stream, norm = self._streams[site.path], self.model.get_submodule(f"{site.layer_path}.norm{j}")
            nodes = [self._index[Node("head", site.stack, site.layer, h, site.kind)] for h in range(self.model.config.n_heads)]
            x = stream.unsqueeze(1) + self._changes(tuple(self._inputs[(n, side)] for n in nodes), stream)
            self._normed[key] = x if norm is None else norm(x)
        return self._normed[key]

    def _changes(self, inputs: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """What this pass adds to each of ``inputs`` (all with the same upstream nodes)  [B, n, L, d]:
        the dropped edges' corrupted-minus-own outputs, and a zero probe."""
        out = like.new_zeros(like.shape[0], len(inputs), *like.shape[1:])
        if self.dropped is not None and self.corrupt is not None:
            first = self.graph.inputs[inputs[0]]
            diff = torch.stack([self.corrupt[u].to(like) - self.outputs[u] for u in first.upstream])  # [U, B, L, d]
            cols = torch.tensor([list(self.graph.inputs[i].edges) for i in inputs], device=like.device)  # [n, U]
            out = out + torch.einsum("bnu,ubld->bnld", self.dropped[:, cols].to(like), diff)
        if self.probe:
            leaf = torch.zeros_like(out, requires_grad=True)
            self.leaves.append((leaf, inputs))
            out = out + leaf
        return out


# -- the decision and the passes ----------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """What is explained: at target position ``position`` (0-based), m = logit(``clean_id``) - logit(``corrupt_id``)."""

    position: int
    clean_id: int
    corrupt_id: int


@dataclass(frozen=True)
class _Pair:
    """The two sources and the target both are teacher-forced on."""

    clean: tuple[int, ...]
    corrupt: tuple[int, ...]
    target: tuple[int, ...]


def _logits(model: Transformer, pair: _Pair, rows: Sequence[tuple[int, ...]], **kw) -> tuple[torch.Tensor, _GraphPass, int]:
    """One teacher-forced pass over ``rows`` (sources of one length) with a ``_GraphPass`` of ``kw``:
    (logits ``[B, fed, V]``, the pass, the fed row that predicts target position 0)."""
    src, tgt, first = forced_pass(model.config, rows, pair.target, model_device(model))
    run = _GraphPass(model, **kw)
    logits, _ = model.run_with_trace(src, tgt, names=(), interventions=(run,))
    check_finite(logits, "for this target")
    return logits, run, first


def _metric(logits: torch.Tensor, first: int, decision: Decision) -> torch.Tensor:
    """m of each row  [B]."""
    row = logits[:, first + decision.position].double()  # [B, V]
    return row[:, decision.clean_id] - row[:, decision.corrupt_id]


def decide(clean: torch.Tensor, corrupt: torch.Tensor, target: Sequence[int], position: int | None = None) -> Decision:
    """The decision of two runs' logits ``[T, V]`` over ``target``: at ``position`` (default: where
    the corrupted run loses the most log P of the target token), against the corrupted run's most
    likely token other than the clean one."""
    ids = torch.tensor(list(target))
    rows = torch.arange(len(ids))
    lost = torch.log_softmax(clean.double(), -1)[rows, ids] - torch.log_softmax(corrupt.double(), -1)[rows, ids]
    if position is None:
        position = int(torch.argmax(lost))
    if not 0 <= position < len(ids):
        raise CircuitError(f"no target position {position + 1}: the target has {len(ids)} tokens")
    other = corrupt[position].clone()
    other[ids[position]] = -torch.inf
    return Decision(position, int(ids[position]), int(torch.argmax(other)))


# -- scores and faithfulness --------------------------------------------------------------------
def _gradients(model: Transformer, graph: Graph, pair: _Pair, decision: Decision, embeds: dict[str, torch.Tensor] | None,
               rows: int) -> list[torch.Tensor]:
    """dm/dx of every input (its stack's positions)  [L, d] each, the mean over ``rows`` rows (one
    pass; ``embeds``: each row's embedding outputs)."""
    with torch.inference_mode(False), torch.enable_grad():  # a caller's inference mode: nothing could be saved for backward
        embeds = None if embeds is None else {s: e.clone() for s, e in embeds.items()}  # tensors made in inference mode, as normal ones
        logits, run, first = _logits(model, pair, [pair.clean] * rows, graph=graph, embeds=embeds, probe=True)
        grads = torch.autograd.grad(_metric(logits, first, decision).sum(), [leaf for leaf, _ in run.leaves])
    out: list[torch.Tensor | None] = [None] * len(graph.inputs)
    for grad, (_, inputs) in zip(grads, run.leaves):
        for k, i in enumerate(inputs):
            out[i] = grad[:, k].double().sum(0).detach()
    return out


def edge_scores(model: Transformer, graph: Graph, pair: _Pair, decision: Decision, clean: dict[int, torch.Tensor],
                corrupt: dict[int, torch.Tensor], ig_steps: int = 0) -> np.ndarray:
    """The EAP score of every edge  [edge]: (a_u(corrupt) - a_u(clean)) . dm/dx_v summed over
    positions; dm/dx_v at the clean run, or (``ig_steps``) its mean along the embeddings' path."""
    if ig_steps:
        alphas = integration_path(ig_steps)
        grads = None
        for a in range(0, ig_steps, ROWS_PER_PASS):
            alpha = alphas[a:a + ROWS_PER_PASS].float()[:, None, None]  # [B, 1, 1]
            embeds = {n.stack: corrupt[i][:1] + alpha * (clean[i][:1] - corrupt[i][:1]) for i, n in enumerate(graph.nodes) if n.kind == "embed"}
            part = _gradients(model, graph, pair, decision, embeds, len(alpha))
            grads = part if grads is None else [g + p for g, p in zip(grads, part)]
        grads = [g / ig_steps for g in grads]
    else:
        grads = _gradients(model, graph, pair, decision, None, 1)
    scores = np.zeros(graph.n_edges)
    for k, inp in enumerate(graph.inputs):
        delta = torch.stack([(corrupt[u][0] - clean[u][0]).double() for u in inp.upstream])  # [U, L, d]
        scores[inp.first_edge:inp.first_edge + len(inp.upstream)] = torch.einsum("uld,ld->u", delta, grads[k]).numpy()
    return scores


def ranked_edges(scores: np.ndarray) -> np.ndarray:
    """Edge indices by |score|, the largest first (ties in edge order)."""
    return np.argsort(-np.abs(scores), kind="stable")


def patched_metric(model: Transformer, graph: Graph, pair: _Pair, decision: Decision, corrupt: dict[int, torch.Tensor],
                   kept: np.ndarray) -> np.ndarray:
    """m with the edges ``kept[r]`` (bool ``[rows, edge]``) carrying the pass's own values and every
    other edge the corrupted run's, one row each: edge-level patching, ``ROWS_PER_PASS`` rows a pass."""
    out = []
    for a in range(0, len(kept), ROWS_PER_PASS):
        dropped = torch.from_numpy(~kept[a:a + ROWS_PER_PASS]).float()  # [B, edge]
        with torch.no_grad():
            logits, _, first = _logits(model, pair, [pair.clean] * len(dropped), graph=graph, corrupt=corrupt, dropped=dropped)
        out.append(_metric(logits, first, decision).cpu().numpy())
    return np.concatenate(out)


def curve_ks(n_edges: int, extra: Sequence[int] = ()) -> tuple[int, ...]:
    """0, ``DEFAULT_KS`` and ``extra`` below ``n_edges``, and ``n_edges`` (every edge), in order."""
    return tuple(sorted({0, n_edges, *(k for k in (*DEFAULT_KS, *extra) if 0 < k < n_edges)}))


# -- the whole analysis -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Circuit:
    """The EAP score of every edge of ``graph`` for one decision, and the faithfulness curve:
    ``recovered[i]``, the share of m_clean - m_corrupt that the top ``ks[i]`` edges recover."""

    graph: Graph
    scores: np.ndarray  # [edge]
    decision: Decision
    metric_clean: float  # m in the clean run
    metric_corrupt: float  # m in the corrupted run
    ks: tuple[int, ...]
    metric_at_k: np.ndarray  # [len(ks)] m with the top ks[i] edges kept
    ig_steps: int  # 0: plain EAP
    clean_pieces: tuple[str, ...] = ()
    corrupt_pieces: tuple[str, ...] = ()
    target_pieces: tuple[str, ...] = ()
    clean_token: str = ""
    corrupt_token: str = ""
    notices: tuple[str, ...] = ()

    @property
    def recovered(self) -> np.ndarray:
        """``[len(ks)]`` (m_k - m_corrupt) / (m_clean - m_corrupt); NaN where the two runs agree."""
        gap = self.metric_clean - self.metric_corrupt
        return (self.metric_at_k - self.metric_corrupt) / gap if abs(gap) > 1e-12 else np.full(len(self.ks), np.nan)

    def top(self, k: int) -> np.ndarray:
        """The ``k`` edges of the largest |score|, largest first."""
        return ranked_edges(self.scores)[:max(k, 0)]

    def node_scores(self) -> np.ndarray:
        """``[node]`` the sum of each node's outgoing edge scores (its attribution-patching score)."""
        return np.bincount(self.graph.edge_up, weights=self.scores, minlength=len(self.graph.nodes))


def circuit_of(model: Transformer, clean: Sequence[int], corrupt: Sequence[int], target: Sequence[int], position: int | None = None,
               ig_steps: int = 0, ks: Sequence[int] = ()) -> Circuit:
    """The circuit of the decision between source ids ``clean`` and ``corrupt`` (a decoder-only
    model's prompts) teacher-forced on ``target``; ``ks``: edge counts for the curve besides the defaults."""
    check_eval_mode(model)
    graph = circuit_graph(model.config)
    if len(clean) != len(corrupt):
        raise CircuitError(f"patching needs two sentences of the same number of tokens: {len(clean)} and {len(corrupt)}")
    if not target:
        raise CircuitError("there is no target token to explain")
    if ig_steps < 0:
        raise CircuitError(f"integrated gradients needs a number of steps of at least 1 (0: plain EAP), not {ig_steps}")
    pair = _Pair(tuple(clean), tuple(corrupt), tuple(target))
    with torch.no_grad():
        logits_clean, clean_run, first = _logits(model, pair, [pair.clean], graph=graph)
        logits_corrupt, corrupt_run, _ = _logits(model, pair, [pair.corrupt], graph=graph)
    span = slice(first, first + len(target))
    decision = decide(logits_clean[0, span], logits_corrupt[0, span], target, position)
    clean_out, corrupt_out = clean_run.outputs, corrupt_run.outputs
    scores = edge_scores(model, graph, pair, decision, clean_out, corrupt_out, ig_steps)
    all_ks = curve_ks(graph.n_edges, ks)
    order = ranked_edges(scores)
    kept = np.zeros((len(all_ks), graph.n_edges), dtype=bool)
    for r, k in enumerate(all_ks):
        kept[r, order[:k]] = True
    at_k = patched_metric(model, graph, pair, decision, corrupt_out, kept)
    return Circuit(graph, scores, decision, float(_metric(logits_clean, first, decision)[0]),
                   float(_metric(logits_corrupt, first, decision)[0]), all_ks, at_k, ig_steps)


def _target(bundle: Bundle, clean: str, target: str | None, max_len: int | None) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]:
    """The clean source ids, the target ids (typed: y + EOS; else the greedy translation; a
    decoder-only model's without its prompt) and notices."""
    if target is not None:
        forced = teacher_forced_from_bundle(bundle, clean, target, top_k=1, names=())
        return forced.source.ids, after_prompt(bundle.config, forced.source.ids, forced.output_ids), tuple(forced.notices)
    session = DecodingSession.from_bundle(bundle, clean, capture=False, max_len=max_len)
    session.run()
    return session.source.ids, after_prompt(bundle.config, session.source.ids, session.output_ids), tuple(session.notices)


def circuit(bundle: Bundle, clean: str, corrupt: str, target: str | None = None, position: int | None = None, ig_steps: int = 0,
            ks: Sequence[int] = (), max_len: int | None = None) -> Circuit:
    """The circuit of the decision between the sentences ``clean`` and ``corrupt`` (module docstring)."""
    check_model(bundle.config)
    src, target_ids, notices = _target(bundle, clean, target, max_len)
    other = prepare_source(bundle.src_tokenizer, corrupt, bundle.config, reserved=int(bundle.config.kind == "decoder-only"))
    result = circuit_of(bundle.model, src, other.ids, target_ids, position, ig_steps, ks)
    pieces = bundle.tgt_tokenizer.pieces
    d = result.decision
    return replace(result, clean_pieces=tuple(bundle.src_tokenizer.pieces(src)), corrupt_pieces=other.pieces,
                   target_pieces=tuple(pieces(target_ids)), clean_token=pieces([d.clean_id])[0], corrupt_token=pieces([d.corrupt_id])[0],
                   notices=(*notices, *other.notices))


def node_positions(graph: Graph) -> np.ndarray:
    """Where a picture of ``graph`` puts each node  ``[node, 2]`` (x, y): x its place along its
    stack's stream (one step a sublayer: the embeddings at 0, the logits after the last layer), y
    its band: the encoder's nodes on top (2), the cross-attention heads between (1), the decoder's
    other nodes below (0); the heads of one block spread over their band, the first on top. The
    encoder's places are stretched to span the decoder's layers."""
    kinds = {s: [k for k in stack_kinds(s) if any(n.attention == k for n in graph.nodes)] for s in ("encoder", "decoder")}
    heads = max((n.head + 1 for n in graph.nodes), default=1)
    out = np.zeros((len(graph.nodes), 2))
    for i, n in enumerate(graph.nodes):
        w = len(kinds[n.stack]) + 1  # sublayers a layer
        x = {"embed": 0, "logits": n.layer * w + 1, "ffn": n.layer * w + w}.get(n.kind)
        if x is None:
            x = n.layer * w + 1 + kinds[n.stack].index(n.attention)
        band = 2 if n.stack == "encoder" else 1 if n.attention == "cross" else 0
        out[i] = x, band + (0.3 - 0.6 * n.head / max(heads - 1, 1) if n.kind == "head" else 0.0)
    ffn_x = {s: max((x for (x, _), n in zip(out, graph.nodes) if n.stack == s and n.kind == "ffn"), default=0.0) for s in kinds}
    if ffn_x["encoder"] and ffn_x["decoder"]:
        encoder = np.array([n.stack == "encoder" for n in graph.nodes])
        out[encoder, 0] *= ffn_x["decoder"] / ffn_x["encoder"]
    return out


def figure_data(result: Circuit) -> FigureData:
    """Every edge's score, largest |score| first, with its nodes, and the faithfulness curve as
    extras: what the view and ``attnviz circuit`` write."""
    order = ranked_edges(result.scores)
    g = result.graph
    coords = {"edge": tuple(g.edge_label(int(e)) for e in order)}
    extras = {"ks": np.array(result.ks), "recovered": result.recovered, "metric_at_k": result.metric_at_k,
              "metric_clean": np.array(result.metric_clean), "metric_corrupt": np.array(result.metric_corrupt),
              "position": np.array(result.decision.position + 1)}
    title = f"circuit · EAP score of each edge for logit({result.clean_token}) - logit({result.corrupt_token})"
    return FigureData(title, ("edge",), {"score": result.scores[order]}, coords, extras)
