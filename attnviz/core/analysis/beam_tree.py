"""The beams of a beam search as a tree of prefixes (``beam_tree``), laid out to be drawn, and the
cross-attention behind one of its nodes (``node_attention``). No Qt.

Every prefix that was ever a hypothesis of the search (a live beam or a finished one, at any
step) is a node; its parent is the prefix one token shorter, the root is SOS. A node records its
tokens, log P and ranking score, the step it appeared at, whether it ended with EOS (finished),
whether it is one of the beams when decoding stopped (final) or on the best one's path (best),
and whether it was pruned: no final beam descends from it. With greedy decoding or sampling the
tree is a single path.

Where the beams come from. A ``FrozenDecoding`` keeps only the path of the best hypothesis: its
``steps[i].beams`` are the beams after step ``i`` of that path, so when the best beam finished
before the search stopped, the beams of the later steps are not in it. The tree is therefore
built from the beams of every step, ``beam_history(session)``: read from the
``DecodingSession`` in the thread that drives it (through ``prefix(n)`` and ``beams()``), a
tuple of frozen ``Beam`` tuples that a worker thread may then read while the session steps on.

A node's cross-attention is one teacher-forced pass over the source with the node's tokens
(``log_prob_of``): the decoder is fed ``SOS`` and the node's tokens but the last, so row ``i``
is the query whose distribution chose the node's token ``i + 1`` (the rows of the session's
accumulated matrices for the same tokens); the last row chose the node's own token. The root
(SOS alone) chose nothing and has no rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.arrays import frozen_float32
from attnviz.core.decoding.session import Beam
from attnviz.core.decoding.teacher_forcing import log_prob_of
from attnviz.core.model.sites import attention_sites

if TYPE_CHECKING:
    from attnviz.core.decoding.result import PreparedSource
    from attnviz.core.decoding.session import DecodingSession
    from attnviz.core.model.trace import Change
    from attnviz.core.model.transformer import Transformer

BeamHistory = tuple[tuple[Beam, ...], ...]  # the beams after each step, best first; [0] is SOS alone


# -- the tree ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class BeamNode:
    """One prefix that was a hypothesis of the search."""

    token_ids: tuple[int, ...]  # SOS first
    pieces: tuple[str, ...]  # labels of token_ids
    log_prob: float  # sum of log-probabilities of the generated tokens
    score: float  # ranking score (log P / length penalty; = log P for greedy and sampling)
    step: int  # the step it first was a hypothesis at (0: SOS, before any step)
    parent: int | None  # index of the node of token_ids[:-1]; None for the root
    finished: bool  # ended with EOS
    final: bool  # one of the beams when decoding stopped
    best: bool  # on the path of the best final beam
    pruned: bool  # no final beam descends from it

    @property
    def piece(self) -> str:
        """The label of its last token."""
        return self.pieces[-1]

    @property
    def depth(self) -> int:
        """Tokens generated (the root's 0)."""
        return len(self.token_ids) - 1


@dataclass(frozen=True)
class BeamTree:
    """The prefixes of a search (root first, then by step and rank) and where each is drawn:
    ``x`` = its depth, ``rows`` = its row (see :func:`tree_rows`)."""

    nodes: tuple[BeamNode, ...]
    final: tuple[int, ...]  # the final beams' nodes, best first
    rows: tuple[int, ...]  # per node

    @property
    def n_steps(self) -> int:
        """Steps of the search (the last node's step)."""
        return max((n.step for n in self.nodes), default=0)

    @property
    def n_rows(self) -> int:
        return max(self.rows, default=-1) + 1

    def children(self, index: int) -> tuple[int, ...]:
        return tuple(i for i, n in enumerate(self.nodes) if n.parent == index)

    def edges(self) -> tuple[tuple[int, int], ...]:
        """(parent, child) of every node but the root."""
        return tuple((n.parent, i) for i, n in enumerate(self.nodes) if n.parent is not None)

    def leaves(self) -> tuple[int, ...]:
        parents = {n.parent for n in self.nodes}
        return tuple(i for i in range(len(self.nodes)) if i not in parents)

    def best_path(self) -> tuple[int, ...]:
        """The nodes from the root to the best final beam."""
        return tuple(i for i, n in enumerate(self.nodes) if n.best)

    def find(self, token_ids: Sequence[int]) -> int | None:
        """The node of ``token_ids`` (SOS first), or ``None``."""
        key = tuple(token_ids)
        return next((i for i, n in enumerate(self.nodes) if n.token_ids == key), None)

    def positions(self) -> np.ndarray:
        """``[node, 2]``: (x = depth, y = row) of every node."""
        return np.array([(n.depth, r) for n, r in zip(self.nodes, self.rows)], dtype=float).reshape(-1, 2)


def beam_history(session: DecodingSession) -> BeamHistory:
    """The beams after each kept step of ``session`` (``[0]``: SOS alone), read in the thread that
    drives it: before the last step the best beam is live, so ``prefix(n)``'s last step carries
    the beams after step ``n``; the last step's are ``beams()``."""
    bos = session.config.bos_id
    root = (Beam((bos,), (session.tgt_tokenizer.piece(bos),), 0.0, False, 0.0),)
    n = session.n_steps
    middle = tuple(session.prefix(k).steps[-1].beams for k in range(1, n))
    return (root, *middle, *((session.beams(),) if n else ()))


def beam_tree(history: BeamHistory) -> BeamTree:
    """The tree of every prefix in ``history`` (:func:`beam_history`); the last entry's beams
    are the final ones."""
    if not history or not history[0]:
        raise ValueError("a beam tree needs the beams of at least the start (SOS)")
    first, order = _first_seen(history)
    final = [b.token_ids for b in history[-1]]
    kept = {ids[:k] for ids in final for k in range(1, len(ids) + 1)}  # the final beams and their prefixes
    best = {final[0][:k] for k in range(1, len(final[0]) + 1)}
    index = {ids: i for i, ids in enumerate(order)}
    nodes = []
    for ids in order:
        beam, step = first[ids]
        parent = index.get(ids[:-1]) if len(ids) > 1 else None
        if len(ids) > 1 and parent is None:
            raise ValueError(f"the prefix {ids[:-1]} of a beam was never a hypothesis: not a beam history")
        nodes.append(BeamNode(ids, beam.pieces, beam.log_prob, beam.score, step, parent, beam.finished,
                              ids in final, ids in best, ids not in kept))
    return BeamTree(tuple(nodes), tuple(index[ids] for ids in final), tree_rows(nodes))


def _first_seen(history: BeamHistory) -> tuple[dict[tuple[int, ...], tuple[Beam, int]], list[tuple[int, ...]]]:
    """Each prefix's beam and the step it first appeared at; the prefixes in that order."""
    first: dict[tuple[int, ...], tuple[Beam, int]] = {}
    order: list[tuple[int, ...]] = []
    for step, beams in enumerate(history):
        for b in beams:
            if b.token_ids not in first:
                first[b.token_ids] = (b, step)
                order.append(b.token_ids)
    return first, order


def tree_rows(nodes: Sequence[BeamNode]) -> tuple[int, ...]:
    """A row per node such that nothing overlaps and children sit by their parent: the leaves
    take rows 0, 1, 2, ... in depth-first order (the best-path child first, then by score), and a
    node sits on its first child's row, so the best path is the top row and each subtree holds
    a block of consecutive rows."""
    children: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        if n.parent is not None:
            children[n.parent].append(i)
    for kids in children:
        kids.sort(key=lambda i: (not nodes[i].best, -nodes[i].score, i))
    rows = [0] * len(nodes)
    preorder, stack, leaf = [], [0] if nodes else [], 0
    while stack:
        i = stack.pop()
        preorder.append(i)
        stack.extend(reversed(children[i]))
    for i in preorder:
        if not children[i]:
            rows[i], leaf = leaf, leaf + 1
    for i in reversed(preorder):
        if children[i]:
            rows[i] = rows[children[i][0]]
    return tuple(rows)


# -- a node's cross-attention -------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class NodeAttention:
    """The cross-attention of the teacher-forced pass over one node's tokens.

    weights       ``[layer, head, query, key]`` float32: row i is the query fed ``fed_pieces[i]``,
                  which chose ``chose_pieces[i]``; columns are the source pieces
    log_prob      log P of the node's tokens in that pass (the search's, up to rounding)
    """

    token_ids: tuple[int, ...]  # the node's, SOS first
    weights: np.ndarray
    fed_pieces: tuple[str, ...]  # the rows: SOS and the node's tokens but the last
    chose_pieces: tuple[str, ...]  # what each row chose: the node's tokens after SOS
    source_pieces: tuple[str, ...]  # the columns
    log_prob: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", frozen_float32(self.weights, 4, "weights [layer, head, query, key]"))

    def shown(self, layer: int, head: int | None) -> np.ndarray:
        """``[query, key]`` of ``layer``: one head, or the mean over heads (``None``)."""
        w = self.weights[layer]
        return w.mean(axis=0) if head is None else w[head]


def node_attention(model: Transformer, source: PreparedSource, token_ids: Sequence[int], pieces: Sequence[str],
                   interventions: Iterable[Change] = ()) -> NodeAttention:
    """One teacher-forced pass over ``source`` with the node's tokens (``token_ids``, SOS first,
    labelled ``pieces``) and ``interventions``: its cross-attention weights of every layer."""
    sites = attention_sites(model.config, "cross")
    ids, pieces = tuple(token_ids), tuple(pieces)
    empty = np.zeros((len(sites), model.config.n_heads, max(len(ids) - 1, 0), len(source.ids)), dtype=np.float32)
    if len(ids) < 2:  # the root chose nothing: no row
        return NodeAttention(ids, empty, (), (), tuple(source.pieces), 0.0)
    log_prob, trace = log_prob_of(model, source.ids, ids[1:], interventions, names=[s.name("weights") for s in sites])
    weights = np.stack([trace[s.name("weights")] for s in sites]) if sites else empty  # [layer, head, query, key]
    return NodeAttention(ids, weights, pieces[:-1], pieces[1:], tuple(source.pieces), log_prob)


# -- what the view draws --------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class BeamTreeFrame:
    """A tree and the selected node's cross-attention."""

    tree: BeamTree
    selected: int  # index of the selected node
    attention: NodeAttention
    strategy: str  # the strategy, described

    @property
    def node(self) -> BeamNode:
        return self.tree.nodes[self.selected]


def beam_tree_frame(model: Transformer, source: PreparedSource, history: BeamHistory, selected: Sequence[int] | None,
                    interventions: Iterable[Change] = (), strategy: str = "") -> BeamTreeFrame:
    """The tree of ``history`` and the cross-attention of the node ``selected`` (token ids, SOS
    first; ``None`` or a prefix not in the tree: the best final beam). Runs the model once."""
    tree = beam_tree(history)
    index = tree.find(selected) if selected else None
    index = tree.final[0] if index is None else index
    node = tree.nodes[index]
    return BeamTreeFrame(tree, index, node_attention(model, source, node.token_ids, node.pieces, interventions), strategy)


def node_label(node: BeamNode) -> str:
    """The node's tokens as one line of pieces (SOS left out)."""
    return " ".join(node.pieces[1:]) or node.pieces[0]


def figure_data(frame: BeamTreeFrame) -> FigureData:
    """One row per node (its label, log P, score, step, parent, row and flags); the selected
    node's cross-attention and tokens as extras."""
    nodes = frame.tree.nodes
    values = {
        "log_prob": np.array([n.log_prob for n in nodes]), "score": np.array([n.score for n in nodes]),
        "step": np.array([n.step for n in nodes]), "parent": np.array([-1 if n.parent is None else n.parent + 1 for n in nodes]),
        "row": np.array(frame.tree.rows), "finished": np.array([n.finished for n in nodes]),
        "final": np.array([n.final for n in nodes]), "best": np.array([n.best for n in nodes]),
        "pruned": np.array([n.pruned for n in nodes]),
    }
    a = frame.attention
    extras = {"selected": np.array(frame.selected + 1), "selected_token_ids": np.array(a.token_ids),
              "cross_attention": a.weights, "fed_pieces": np.array(a.fed_pieces, dtype=str),
              "source_pieces": np.array(a.source_pieces, dtype=str)}
    return FigureData(f"beam tree ({frame.strategy}) · cross-attention of node {frame.selected + 1}: {node_label(frame.node)}",
                      ("node",), values, {"node": tuple(node_label(n) for n in nodes)}, extras)
