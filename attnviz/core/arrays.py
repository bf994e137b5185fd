"""Array helpers shared by the core's data objects and the views' data objects."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def frozen_float32(a: np.ndarray | Sequence, ndim: int, what: str) -> np.ndarray:
    """``a`` as a read-only float32 array of ``ndim`` dimensions (``ValueError`` naming ``what``).
    A float32 array is kept as it is, strided or not (a decoding's attention is a view of a
    buffer that grows row by row: copying it would cost a step as much as every row before it)."""
    arr = np.asarray(a, dtype=np.float32)
    if arr.ndim != ndim:
        raise ValueError(f"{what}: expected {ndim} dimensions, got shape {arr.shape}")
    arr.flags.writeable = False
    return arr
