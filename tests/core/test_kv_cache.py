"""``CachedKV``: cached steps write one position into a shared buffer, and a cache handed out never changes."""

from __future__ import annotations

import torch

from attnviz.core.model.kv_cache import INITIAL_POSITIONS, CachedKV

from tiny_models import random_model


def _kv(b: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, 2, n, 3, generator=g), torch.randn(b, 2, n, 3, generator=g)


def test_extended_equals_concatenation_and_shares_the_buffer():
    first, second = _kv(1, 5, 0), _kv(1, 1, 1)
    a = CachedKV.empty().extended(*first)
    b = a.extended(*second)
    assert torch.equal(b.k, torch.cat([first[0], second[0]], 2)) and torch.equal(b.v, torch.cat([first[1], second[1]], 2))
    assert b.k.data_ptr() == a.k.data_ptr()  # written in place: no copy of the earlier positions
    assert a.length == 5 and torch.equal(a.k, first[0])


def test_a_branch_copies_and_leaves_the_other_continuation_unchanged():
    base = CachedKV.empty().extended(*_kv(1, 4, 0))
    one, other = _kv(1, 1, 1), _kv(1, 1, 2)
    left = base.extended(*one)
    held = left.k.clone()
    right = base.extended(*other)  # back to ``base``, then another token
    assert torch.equal(left.k, held)  # the first continuation still reads its own position
    assert torch.equal(right.k[:, :, 4:], other[0]) and torch.equal(right.k[:, :, :4], base.k)
    assert right.k.data_ptr() != left.k.data_ptr()


def test_growing_past_the_capacity_keeps_every_earlier_cache():
    caches = [CachedKV.empty()]
    steps = [_kv(2, 1, i) for i in range(3 * INITIAL_POSITIONS)]
    for kv in steps:
        caches.append(caches[-1].extended(*kv))
    for n, cache in enumerate(caches[1:], 1):
        assert torch.equal(cache.k, torch.cat([k for k, _ in steps[:n]], 2))
        assert torch.equal(cache.v, torch.cat([v for _, v in steps[:n]], 2))


def test_select_reorders_the_batch():
    cache = CachedKV.empty().extended(*_kv(3, 4, 0))
    index = torch.tensor([2, 0, 0])
    picked = cache.select(index).extended(*_kv(3, 1, 5))
    assert torch.equal(picked.k[:, :, :4], cache.k[index])
    assert cache.k.shape == (3, 2, 4, 3)


def test_with_gradients_nothing_is_written_in_place():
    k, v = (t.requires_grad_() for t in _kv(1, 3, 0))
    a = CachedKV.empty().extended(k, v)
    b = a.extended(*(t.requires_grad_() for t in _kv(1, 1, 1)))
    b.k.sum().backward()
    assert torch.equal(k.grad, torch.ones_like(k))
    assert a.k.shape[2] == 3


def test_stepping_back_and_forcing_another_token_equals_a_full_decode():
    model = random_model(seed=3)
    src = torch.tensor([[5, 6, 7, 8, 2]])
    prefix = [1, 9, 10, 11]
    with torch.inference_mode():
        encoded = model.encode(src)
        caches = [model.start_decoding(encoded)]
        for token in prefix:
            caches.append(model.decode_step(torch.tensor([token]), caches[-1])[1])
        kept = [layer.k.clone() for layer in caches[-1].self_kv]
        logits, _ = model.decode_step(torch.tensor([20]), caches[2])  # back two steps, another token
        full = model.project(model.decode(torch.tensor([prefix[:2] + [20]]), encoded))[:, -1]
    torch.testing.assert_close(logits, full, atol=1e-5, rtol=0)
    for layer, before in zip(caches[-1].self_kv, kept):
        assert torch.equal(layer.k, before)
