"""Teacher forcing next to the inference loop on the same sentence.

Teacher forcing feeds "SOS + y" (the reference) and reads every position's prediction in one
pass; the inference loop feeds "SOS + ŷ", its own earlier predictions, one step at a time
(greedy). Both predict the same tokens until the first position where the loop's prediction
departs from the reference; from the next position on they are fed different tokens. No Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.decoding.result import DecodingResult
from attnviz.core.decoding.session import DecodingSession, forced_first_of
from attnviz.core.decoding.strategies import Greedy
from attnviz.core.decoding.teacher_forcing import TeacherForced
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.sites import AttentionSite, n_layers
from attnviz.core.model.transformer import Transformer


@dataclass(frozen=True)
class Run:
    """One way of feeding the decoder: what is fed at each position and what it predicts."""

    fed_ids: tuple[int, ...]  # SOS + y (teacher) or SOS + ŷ (free)
    fed_pieces: tuple[str, ...]
    predicted_ids: tuple[int, ...]  # argmax at each position
    predicted_pieces: tuple[str, ...]
    cross: np.ndarray  # [layer, head, position, source]  cross-attention


@dataclass(frozen=True)
class TeacherVsFree:
    """The two runs of one source and reference: ``reference`` is y + EOS, what teacher
    forcing's labels are; ``departure`` the first position whose free-running prediction is not
    the reference's token (``None``: the loop reproduces the reference)."""

    src_pieces: tuple[str, ...]
    reference_ids: tuple[int, ...]  # y + EOS
    reference_pieces: tuple[str, ...]
    teacher: Run
    free: Run

    @property
    def departure(self) -> int | None:
        ref, free = self.reference_ids, self.free.predicted_ids
        for i, (r, f) in enumerate(zip(ref, free)):
            if r != f:
                return i
        return None if len(ref) == len(free) else min(len(ref), len(free))

    @property
    def fed_apart(self) -> int | None:
        """The first position the two runs are fed different tokens (departure + 1), when both
        runs reach it; else the departure itself."""
        d = self.departure
        if d is None:
            return None
        both = min(len(self.teacher.fed_ids), len(self.free.fed_ids))
        return d + 1 if d + 1 < both else min(d, both - 1)


def _cross(result: DecodingResult, config: TransformerConfig) -> np.ndarray:
    """Every layer's cross-attention weights of ``result``.  # [layer, head, position, source]"""
    layers = [result.accumulated(AttentionSite("cross", i).name("weights")) for i in range(n_layers(config, "cross"))]
    if not layers:  # a model without decoder layers
        return np.zeros((0, config.n_heads, len(result.input_ids), len(result.src_ids)), np.float32)
    return np.stack(layers).astype(np.float32)


@dataclass(frozen=True)
class TeacherVsFreeFrame:
    """What the teacher-vs-free view draws: the two runs (``None``: no reference, nothing to
    compare) and the row the teacher-forced pass is at (0-based)."""

    result: TeacherVsFree | None
    cursor: int | None = None


def teacher_vs_free(model: Transformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer, forced: TeacherForced) -> TeacherVsFree:
    """Greedy decoding of ``forced``'s source with ``model`` (to EOS or the maximum length),
    next to the teacher-forced pass ``forced``."""
    loop = DecodingSession(model, src_tokenizer, tgt_tokenizer, forced.source.text, strategy=Greedy(),
                           capture=["decoder.layers.*.cross_attn.weights"], forced_first_token=forced_first_of(tgt_tokenizer))
    loop.run()
    teacher = Run(tuple(forced.input_ids), tuple(forced.input_pieces), forced.predicted_ids,
                  tuple(p.predicted_piece for p in forced.steps), _cross(forced, model.config))
    free = Run(tuple(loop.input_ids), tuple(loop.input_pieces), tuple(loop.output_ids), tuple(loop.output_pieces),
               _cross(loop, model.config))
    return TeacherVsFree(tuple(forced.src_pieces), tuple(forced.output_ids), tuple(forced.output_pieces), teacher, free)
