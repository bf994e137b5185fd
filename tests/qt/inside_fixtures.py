"""Small models, tokenizers and decoding results for the tests of the "inside" views (positional
encoding, norm statistics, output distribution, one-head walkthrough). Built in well under a second."""

from __future__ import annotations

import functools

from attnviz.core.bundle import Bundle

from tiny_models import random_model, tokenizers


@functools.cache
def bundle(norm: str = "layer", placement: str = "post", d_model: int = 32, n_heads: int = 4, seed: int = 0) -> Bundle:
    """A random (untrained) model; BatchNorm models get realistic running statistics."""
    src, tgt = tokenizers()
    model = random_model(norm, placement, seed=seed, d_model=d_model, n_heads=n_heads)
    return Bundle(model, src, tgt, {"name": f"tiny-{norm}"})


def session(norm: str = "layer", steps: int = 3, source: str = "我喜欢吃苹果。", **kw):
    """A decoding session on ``source`` with ``steps`` greedy steps done."""
    from attnviz.core.decoding.session import DecodingSession

    s = DecodingSession.from_bundle(bundle(norm, **kw), source, max_len=12)
    for _ in range(steps):
        if s.finished:
            break
        s.step()
    return s


def forced(norm: str = "layer", source: str = "我喜欢吃苹果。", target: str = "I like eating apples.", **kw):
    from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle

    return teacher_forced_from_bundle(bundle(norm, **kw), source, target, top_k=8)
