"""Array helpers shared by the core's data objects and the views' data objects."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def frozen_float32(a: np.ndarray | Sequence, ndim: int, what: str) -> np.ndarray:
    """``a`` as a read-only, C-contiguous float32 array of ``ndim`` dimensions (``ValueError`` naming ``what``)."""
    arr = np.ascontiguousarray(a, dtype=np.float32)
    if arr.ndim != ndim:
        raise ValueError(f"{what}: expected {ndim} dimensions, got shape {arr.shape}")
    arr.flags.writeable = False
    return arr
