"""``RowBuffer``: an accumulated array whose rows (queries) are written once each into a buffer
with spare capacity, handed out as read-only views of its filled part. No Qt.

A decoding step appends one query row to every attention matrix; copying the whole matrix at
each step costs as much as the rows decoded so far (at 200 rows and 512 source tokens, tens of
megabytes per step). Here a step writes its one row and returns ``buffer[..., :n, :]``: the
cost of a step does not grow with the rows before it. The capacity doubles when full (the rows
are copied once into a new buffer; views handed out keep the old one).

A view handed out never changes: a row below the most ever handed out (``exposed``) is never
written again. When the rows asked for part from the filled ones inside that region (``back()``
and another token, or a beam search whose best beam changed), the rows they share are copied
into a new buffer and the others written there (copy on write).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

INITIAL_ROWS = 16  # capacity of a first buffer (more when more rows are asked for at once)

RowOf = Callable[[int], np.ndarray]  # row index -> that row, [..., 1, key]


class RowBuffer:
    """One accumulated array over rows identified by ``origin`` entries (one per row: the row
    is the same array whenever its entry and the entries before it are). The query axis is the
    one before the last (``[..., query, key]``). With ``fill`` the keys grow with the rows (row
    ``i`` has keys ``0..i``, decoder self-attention) and every later key holds ``fill``;
    without, every row has the same keys. ``limit``: the most rows there can be (capacity never
    doubles past it)."""

    def __init__(self, fill: float | None = None, limit: int | None = None):
        self._fill = fill
        self._limit = limit
        self._buf: np.ndarray | None = None  # [..., capacity, key] (growing keys: [..., capacity, capacity])
        self._origin: list[Hashable] = []  # the origin entry of each filled row
        self._exposed = 0  # rows handed out from this buffer: never written again

    @property
    def capacity(self) -> int:
        return 0 if self._buf is None else self._buf.shape[-2]

    def truncate(self, n: int) -> None:
        """Forget the rows from ``n`` on (what they came from is gone: the next rows differ)."""
        del self._origin[n:]

    def view(self, origin: Sequence[Hashable], row_of: RowOf) -> np.ndarray:
        """The array over the rows of ``origin``, read-only: rows in common with the filled ones
        are kept, the others written from ``row_of(i)`` (``[..., 1, key]``)."""
        n = len(origin)
        common = 0
        for mine, theirs in zip(self._origin, origin):
            if mine != theirs:
                break
            common += 1
        if common < n:
            self._write(common, origin, row_of)
        out = self._buf[..., :n, :n] if self._fill is not None else self._buf[..., :n, :]
        out.flags.writeable = False
        self._exposed = max(self._exposed, n)
        return out

    def _write(self, common: int, origin: Sequence[Hashable], row_of: RowOf) -> None:
        """Rows ``common..`` of ``origin`` written; the buffer replaced when too small or when a
        row to write was handed out."""
        first = row_of(common)
        need = len(origin)
        if self._buf is None or need > self.capacity or common < self._exposed or not self._holds(first):
            self._renew(common, need, first)
        del self._origin[common:]
        for i in range(common, need):
            row = first if i == common else row_of(i)
            if self._fill is None:
                self._buf[..., i, :] = row[..., 0, :]
            else:
                self._buf[..., i, : i + 1] = row[..., 0, :]
            self._origin.append(origin[i])

    def _holds(self, row: np.ndarray) -> bool:
        """``row`` has the buffer's leading axes (and keys, when they do not grow)."""
        same_keys = self._fill is not None or row.shape[-1] == self._buf.shape[-1]
        return row.shape[:-2] == self._buf.shape[:-2] and same_keys and row.dtype == self._buf.dtype

    def _renew(self, keep: int, need: int, row: np.ndarray) -> None:
        """A new buffer for at least ``need`` rows, the first ``keep`` rows copied over: of the old
        capacity when it holds them (copy on write), else of twice that, or a quarter more than
        ``need`` when many rows come at once (a prompt read in one go)."""
        old = self._buf
        if old is None or not self._holds(row):
            old, keep = None, 0
        cap = self.capacity
        if need > cap:
            cap = max(INITIAL_ROWS, 2 * cap, need + need // 4)
            if self._limit is not None:
                cap = max(need, min(cap, self._limit))
        keys = cap if self._fill is not None else row.shape[-1]
        shape = row.shape[:-2] + (cap, keys)
        if self._fill is None:
            buf = np.empty(shape, row.dtype)
        else:  # zeros come from untouched pages: only the rows written cost
            buf = np.zeros(shape, row.dtype) if self._fill == 0 else np.full(shape, self._fill, row.dtype)
        if keep:
            cols = keep if self._fill is not None else keys
            buf[..., :keep, :cols] = old[..., :keep, :cols]
        self._buf, self._exposed = buf, 0
        del self._origin[keep:]
