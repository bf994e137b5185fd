"""``CachedKV``: a decoder self-attention's keys and values of the positions so far, ``[B, h, t, dk]``
each, kept in a buffer with spare positions so that a step writes its one new position instead of
copying all of them (``torch.cat`` of 700 positions at BASE size costs ~30 ms a step).

A ``CachedKV`` never changes once made: stepping back is keeping an older one. Several may share
one buffer; each reads the positions ``[0, length)``, and a step writes only past the most
positions the buffer ever held (``filled``). When the positions to write were already written for
another continuation (back, then another token), or the buffer is full, the shared positions are
copied into a new buffer (copy on write); views handed out keep the old one. With autograd on
(gradients through a cached step) a step concatenates as before, so nothing is written in place.
"""

from __future__ import annotations

import torch

INITIAL_POSITIONS = 16  # capacity of a first buffer (more when a prompt brings more positions at once)


class _Store:
    """One buffer pair ``[B, h, capacity, dk]`` and how many positions of it were ever written."""

    __slots__ = ("k", "v", "filled")

    def __init__(self, k: torch.Tensor, v: torch.Tensor, filled: int):
        self.k, self.v, self.filled = k, v, filled

    @classmethod
    def holding(cls, k: torch.Tensor, v: torch.Tensor, capacity: int) -> _Store:
        """A new buffer of ``capacity`` positions whose first ones are ``k``, ``v`` (copied)."""
        t = k.shape[2]
        store = cls(k.new_empty(*k.shape[:2], capacity, k.shape[3]), v.new_empty(*v.shape[:2], capacity, v.shape[3]), t)
        store.k[:, :, :t] = k
        store.v[:, :, :t] = v
        return store

    def takes(self, length: int, k_new: torch.Tensor) -> bool:
        """Whether positions ``length ..`` can be written here in place (no one else wrote them, room, same batch)."""
        return (
            self.filled == length
            and length + k_new.shape[2] <= self.k.shape[2]
            and self.k.shape[:2] == k_new.shape[:2]
            and self.k.dtype == k_new.dtype
            and self.k.device == k_new.device
        )


class CachedKV:
    """K and V ``[B, h, length, dk]`` of one layer's self-attention after some positions."""

    __slots__ = ("_store", "length")

    def __init__(self, store: _Store | None, length: int):
        self._store, self.length = store, length

    @classmethod
    def empty(cls) -> CachedKV:
        """Before the first position."""
        return cls(None, 0)

    @property
    def k(self) -> torch.Tensor:
        return self._store.k[:, :, : self.length]  # [B, h, t, dk]

    @property
    def v(self) -> torch.Tensor:
        return self._store.v[:, :, : self.length]  # [B, h, t, dk]

    def extended(self, k_new: torch.Tensor, v_new: torch.Tensor) -> CachedKV:
        """K, V after the new positions ``k_new``, ``v_new`` ``[B, h, n, dk]`` (this one unchanged)."""
        t, n = self.length, k_new.shape[2]
        if torch.is_grad_enabled() and (k_new.requires_grad or v_new.requires_grad):
            k, v = (k_new, v_new) if self._store is None else (torch.cat([self.k, k_new], 2), torch.cat([self.v, v_new], 2))
            return CachedKV(_Store(k, v, t + n), t + n)
        store = self._store
        if store is None or not store.takes(t, k_new):
            capacity = max(INITIAL_POSITIONS, 2 * (t + n))
            store = _Store.holding(self.k, self.v, capacity) if store is not None else _Store.holding(k_new[:, :, :0], v_new[:, :, :0], capacity)
        store.k[:, :, t : t + n] = k_new
        store.v[:, :, t : t + n] = v_new
        store.filled = t + n
        return CachedKV(store, t + n)

    def select(self, index: torch.Tensor) -> CachedKV:
        """The batch rows ``index`` (beam search reorders and duplicates hypotheses), in a buffer of their own."""
        if self._store is None:
            return self
        k, v = self.k[index], self.v[index]
        return CachedKV(_Store.holding(k, v, max(INITIAL_POSITIONS, 2 * self.length)), self.length)
