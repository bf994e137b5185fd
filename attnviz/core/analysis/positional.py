"""The positional-encoding view's data: :class:`PositionalData` (PE, PE·PEᵀ and the current
tokens' embeddings), :class:`TokenEmbeddingData` (one side's first-layer input) and
``positional_data_for`` (builds them from a decoding).

No widgets here; ``positional_data_for`` imports the model (and so torch) only when called.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.core.arrays import frozen_float32


@dataclass(frozen=True, eq=False)
class TokenEmbeddingData:
    """One side's first-layer input, row by row (the trace's ``<stack>.embed.*``).

    side        ``"source"`` (encoder) or ``"target"`` (decoder)
    pieces      token pieces, one per row
    tokens      ``[n, d_model]`` token embedding × √d_model          (``<stack>.embed.tokens``)
    positional  ``[n, d_model]`` PE rows of the positions             (``<stack>.embed.positional``)
    summed      ``[n, d_model]`` embedding + PE                       (``<stack>.embed.sum``)
    token_norm, positional_norm  ``[n]`` (``analysis.embedding_positional_ratio``); sum_norm ``[n]``.
    Norms left None are the rows' L2 norms.
    """

    side: str
    pieces: tuple[str, ...]
    tokens: np.ndarray
    positional: np.ndarray
    summed: np.ndarray
    token_norm: np.ndarray | None = None
    positional_norm: np.ndarray | None = None
    sum_norm: np.ndarray | None = None

    def __post_init__(self) -> None:
        t = frozen_float32(self.tokens, 2, "tokens [n, d_model]")
        p = frozen_float32(self.positional, 2, "positional [n, d_model]")
        s = frozen_float32(self.summed, 2, "summed [n, d_model]")
        if not t.shape == p.shape == s.shape:
            raise ValueError(f"tokens {t.shape}, positional {p.shape} and summed {s.shape} differ in shape")
        pieces = tuple(str(x) for x in self.pieces)
        if len(pieces) != t.shape[0]:
            raise ValueError(f"{len(pieces)} pieces for {t.shape[0]} rows")
        object.__setattr__(self, "pieces", pieces)
        for name, arr, given in (("tokens", t, self.token_norm), ("positional", p, self.positional_norm), ("summed", s, self.sum_norm)):
            object.__setattr__(self, name, arr)
            key = {"tokens": "token_norm", "positional": "positional_norm", "summed": "sum_norm"}[name]
            norm = np.linalg.norm(arr.astype(np.float64), axis=-1) if given is None else np.asarray(given, np.float64)
            if norm.shape != (t.shape[0],):
                raise ValueError(f"{key} has shape {norm.shape}, expected ({t.shape[0]},)")
            object.__setattr__(self, key, norm)


@dataclass(frozen=True, eq=False)
class PositionalData:
    """What the positional view shows.

    pe          ``[pos, d_model]`` PE for positions 0..pos−1 (the model's ``sinusoidal_encoding(n, d_model)``,
                n = the longer of the current source and target)
    similarity  ``[pos, pos]`` PE·PEᵀ (``analysis.positional_similarity(pe)``)
    embeddings  the current tokens' embedding / PE / sum (source and/or target)
    layout      the model's ``positional_layout``: ``interleaved`` (sin in column 2i, cos in 2i+1)
                or ``halves`` (the sines first, then the cosines)
    kind        the model's ``positional``: ``sinusoidal`` (PE as above), ``learned`` (``pe`` holds the
                model's own table rows, as its first stack added them) or ``relative`` (no table: a
                bias B on the scores instead; ``pe`` and ``embeddings`` are empty)
    """

    pe: np.ndarray
    similarity: np.ndarray
    embeddings: tuple[TokenEmbeddingData, ...] = ()
    layout: str = "interleaved"
    kind: str = "sinusoidal"

    def __post_init__(self) -> None:
        pe = frozen_float32(self.pe, 2, "pe [pos, d_model]")
        sim = frozen_float32(self.similarity, 2, "similarity [pos, pos]")
        if sim.shape != (pe.shape[0], pe.shape[0]):
            raise ValueError(f"similarity {sim.shape} does not match pe {pe.shape}")
        object.__setattr__(self, "pe", pe)
        object.__setattr__(self, "similarity", sim)
        object.__setattr__(self, "embeddings", tuple(self.embeddings))
        for e in self.embeddings:
            if e.tokens.shape[1] != pe.shape[1]:
                raise ValueError(f"{e.side} embeddings have d_model {e.tokens.shape[1]}, PE has {pe.shape[1]}")

    @property
    def d_model(self) -> int:
        return int(self.pe.shape[1])

    @property
    def n_positions(self) -> int:
        return int(self.pe.shape[0])

    def column_pair(self, column: int) -> tuple[int, bool]:
        """(the tutorial's i, True for its sine) of a PE column: i numbers the sin/cos pairs."""
        return column_pair(column, self.d_model, self.layout)

    def side(self, name: str) -> TokenEmbeddingData | None:
        for e in self.embeddings:
            if e.side == name:
                return e
        return None


def positional_data_for(current) -> PositionalData:
    """The view's data for the current decoding (a ``DecodingSession`` or a ``TeacherForced`` result).

    For whoever owns the session (the main window, ``attnviz export``), not for the widget: it
    imports ``attnviz.core.model.modules`` (and so torch) when called. PE is the model's own
    ``sinusoidal_encoding`` for the longer of the two sides, PE·PEᵀ ``analysis.positional_similarity``;
    norms from ``analysis.embedding_positional_ratio``.
    """
    import torch

    from attnviz.core.analysis import stats as A
    from attnviz.core.model.modules import sinusoidal_encoding

    cfg = current.config
    if cfg.positional == "relative":  # nothing is added to the embeddings: B sits in the attention scores
        return PositionalData(np.zeros((0, cfg.d_model)), np.zeros((0, 0)), (), cfg.positional_layout, "relative")

    def side(name: str, stack: str, pieces) -> TokenEmbeddingData:
        t = current.accumulated(f"{stack}.embed.tokens")
        p = current.accumulated(f"{stack}.embed.positional")
        r = A.embedding_positional_ratio(t, p)
        return TokenEmbeddingData(name, pieces, t, p, current.accumulated(f"{stack}.embed.sum"), r["token_norm"], r["positional_norm"])

    src, tgt = tuple(current.src_pieces), tuple(current.input_pieces)
    sides = [side("source", "encoder", src)] if current.config.kind != "decoder-only" else []  # GPT-2's prompt is the decoder's
    if tgt:
        sides.append(side("target", "decoder", tgt))
    layout = current.config.positional_layout
    if cfg.positional == "learned":  # the model's own table: the rows its first stack (the encoder's, where it has one) added
        pe = sides[0].positional.astype(np.float64)  # [pos, d_model]
    else:
        pe = sinusoidal_encoding(max(len(src), len(tgt)), current.config.d_model, torch.float64, layout).numpy()  # [pos, d_model]
    return PositionalData(pe, A.positional_similarity(pe), tuple(sides), layout, cfg.positional)


def column_pair(column: int, d_model: int, layout: str = "interleaved") -> tuple[int, bool]:
    """(i, is_sine) of PE column ``column``: in PE(pos, 2i) = sin(pos/10000^(2i/d_model)) and
    PE(pos, 2i+1) = cos(…) the index i numbers the sin/cos *pairs* (``sinusoidal_encoding``'s layouts)."""
    if layout == "halves":
        half = (d_model + 1) // 2
        return (column, True) if column < half else (column - half, False)
    return column // 2, column % 2 == 0
