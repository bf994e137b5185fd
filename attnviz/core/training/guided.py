"""Guided alignment (Garg et al. 2019, "Jointly Learning to Align and Translate"): one
cross-attention head is trained toward reference word alignments, next to the translation loss::

    loss = CE + weight * A
    A    = mean over aligned target rows p of  -sum_j g_pj log(a_pj + eps)

``a_p`` is row p of the chosen head's cross-attention, the "predicting" row (the query fed
SOS y1 .. that predicts label p; ``analysis.alignment.evaluate_hsk_alignment`` scores the same
row) and ``g_p`` is uniform over the source positions the reference allows for label p. The
references come from the HSK word glosses (``analysis.alignment.reference_pairs``), which
substitution pairs carry along with their swap; pairs without glosses (CC-CEDICT word pairs)
add no term. No Qt.

The head's weights are taken, with their gradient, by ``WeightsCapture``: a ``Recorder`` that
keeps one trace name instead of detaching it, passed only on guided training steps, so the
normal forward pass is untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from attnviz.core.analysis.alignment import reference_pairs
from attnviz.core.data import corpora as D
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.sites import AttentionSite, n_layers
from attnviz.core.model.trace import Recorder
from attnviz.core.model.transformer import Transformer

LOG_EPS = 1e-6  # keeps log(a) finite where the head gives an allowed position no weight


@dataclass(frozen=True)
class GuidedHead:
    """The cross-attention head trained toward the alignments (0-based here; 1-based on screen)."""

    layer: int
    head: int

    @classmethod
    def parse(cls, text: object) -> "GuidedHead":
        """``"LAYER.HEAD"``, 1-based as on screen (``"2.1"``: layer 2, head 1); ``ValueError`` (one
        line) for anything else."""
        parts = text.split(".") if isinstance(text, str) else []
        if len(parts) != 2 or not all(p.isdigit() and int(p) >= 1 for p in parts):
            raise ValueError(f"guided alignment head must be LAYER.HEAD, 1-based (e.g. 2.1), not {str(text)[:40]!r}")
        return cls(int(parts[0]) - 1, int(parts[1]) - 1)

    @property
    def site(self) -> AttentionSite:
        return AttentionSite("cross", self.layer)

    def label(self) -> str:
        return f"{self.layer + 1}.{self.head + 1}"

    def check(self, config: TransformerConfig) -> "GuidedHead":
        """``self``, or a one-line ``ValueError`` when a model of ``config`` has no such head."""
        layers = n_layers(config, "cross")
        if self.layer >= layers or self.head >= config.n_heads:
            raise ValueError(
                f"guided alignment head {self.label()} does not exist: the model has {layers} cross-attention layer(s) "
                f"of {config.n_heads} head(s); choose LAYER.HEAD within them"
            )
        return self


class WeightsCapture(Recorder):
    """A ``Recorder`` that keeps one attention block's ``weights`` ``[B, h, Lq, Lk]`` as they are,
    with their gradient (a ``Recorder`` detaches), and records nothing else."""

    def __init__(self, site: AttentionSite):
        super().__init__([site.name("weights")], batch_index=None)
        self.wanted = site.name("weights")
        self.weights: torch.Tensor | None = None

    def put(self, name: str, tensor: torch.Tensor, batched: bool | None = None) -> None:
        if name == self.wanted:
            self.weights = tensor

    def put_lazy(self, name: str, compute: Callable[[], torch.Tensor], batched: bool | None = None) -> None:
        return None  # nothing derived is wanted


# One example's alignment rows, flattened: label positions, source positions and target weights
# (1 / number of allowed positions of the row), one entry per allowed (row, source) cell.
Rows = tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]


def example_rows(pair: D.Pair, example: D.Example, src_tok: Tokenizer, tgt_tok: Tokenizer, max_len: int | None) -> Rows | None:
    """The reference alignment of one training pair as ``Rows`` (``None`` without glosses or
    without any aligned row). Rows of one label position are merged (the union of their sources)."""
    tokens = pair.extra.get("tokens") if isinstance(pair.extra, dict) else None
    if not tokens:
        return None
    record = {"chinese": pair.src, "translation": {"en": pair.tgt}, "tokens": tokens}
    allowed: dict[int, set[int]] = {}
    for p, sources, _word in reference_pairs(record, src_tok, tgt_tok, max_len).pairs:
        inside = {j for j in sources if j < len(example.src)}
        if p <= len(example.tgt) and inside:
            allowed.setdefault(p, set()).update(inside)
    if not allowed:
        return None
    ps, js, ws = [], [], []
    for p in sorted(allowed):
        for j in sorted(allowed[p]):
            ps.append(p)
            js.append(j)
            ws.append(1.0 / len(allowed[p]))
    return tuple(ps), tuple(js), tuple(ws)


def alignment_term(weights: torch.Tensor, rows: Sequence[Rows | None]) -> torch.Tensor | None:
    """A: the mean over aligned rows of the cross-entropy between the reference distribution and
    the head's row. ``weights``: the head's cross-attention ``[B, Lt, Ls]``; ``rows``: each batch
    row's ``Rows`` (or ``None``). ``None`` when no row of the batch is aligned. Taken in float32
    (the weights may be bfloat16 under autocast; ``float()`` leaves float32 ones as they are)."""
    b_idx: list[int] = []
    p_idx: list[int] = []
    j_idx: list[int] = []
    g: list[float] = []
    n_rows = 0
    for b, r in enumerate(rows):
        if r is None:
            continue
        ps, js, ws = r
        b_idx.extend([b] * len(ps))
        p_idx.extend(ps)
        j_idx.extend(js)
        g.extend(ws)
        n_rows += len(set(ps))
    if not n_rows:
        return None
    weights, dev = weights.float(), weights.device  # [B, Lt, Ls]
    picked = weights[torch.tensor(b_idx, device=dev), torch.tensor(p_idx, device=dev), torch.tensor(j_idx, device=dev)]  # [cells]
    target = torch.tensor(g, dtype=weights.dtype, device=dev)  # [cells]
    return -(target * torch.log(picked + LOG_EPS)).sum() / n_rows


class GuidedAlignment:
    """The guided head and the reference alignment of every training example (computed once)."""

    def __init__(
        self,
        head: GuidedHead,
        pairs: Sequence[D.Pair],
        examples: Sequence[D.Example],
        src_tok: Tokenizer,
        tgt_tok: Tokenizer,
        max_len: int | None = None,
    ):
        self.head = head
        self.rows: dict[int, Rows] = {}  # Example.index -> its rows
        for e in examples:
            r = example_rows(pairs[e.index], e, src_tok, tgt_tok, max_len)
            if r is not None:
                self.rows[e.index] = r

    def forward(self, model: Transformer, batch: D.Batch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The teacher-forced logits ``[B, Lt, V]`` and the batch's alignment term (``None``
        when no row of the batch is aligned)."""
        rows = [self.rows.get(i) for i in batch.indices]
        if not any(rows):
            return model(batch.src, batch.tgt_in), None
        capture = WeightsCapture(self.head.site)
        logits = model(batch.src, batch.tgt_in, capture)
        assert capture.weights is not None
        return logits, alignment_term(capture.weights[:, self.head.head], rows)
