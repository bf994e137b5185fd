"""Where the mask view's rows come from: one full pass over the fed tokens (teacher forcing), or
the KV-cached steps of free decoding.

A cached step at position t computes one query row, q_t against the keys 0..t; it never computes
a score of a future key. The matrices of a stepped result (``DecodingSession.accumulated``) fill
that part in: weights 0 and M, QKᵀ/√d_k + M −∞ (what the look-ahead mask makes them), and the raw
QKᵀ/√d_k above the diagonal recomputed as q_i·k_j/√d_k from the recorded q and the last step's k,
which is what a full pass over the decoded prefix gives (q_i and k_j depend only on the tokens up
to i and j). :class:`MaskRows` carries that fact to the view. No Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.core.analysis.figure_data import MaskFrame


@dataclass(frozen=True, eq=False)
class MaskRows:
    """The mask view's frame and how its rows were computed.

    frame   the masks, scores and weights (:class:`MaskFrame`)
    cached  True: free decoding, each row computed by its own KV-cached step (the current row is
            that step's own scores); the scores above the diagonal were recomputed, not computed
            by any step. False: one full pass computed every cell
    """

    frame: MaskFrame
    cached: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.frame, MaskFrame):
            raise TypeError(f"MaskRows holds a MaskFrame, not {type(self.frame).__name__}")

    def recomputed(self) -> np.ndarray:
        """``[query, key]`` True where the shown score was recomputed (no cached step computed it):
        the future keys of a stepped result; nowhere for a full pass."""
        n_query, n_key = self.frame.masks.look_ahead.shape
        future = np.triu(np.ones((n_query, n_key), dtype=bool), 1)
        return future if self.cached else np.zeros_like(future)
