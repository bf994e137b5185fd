"""What a norm (or any module) of a model gets in one forward pass, found with a hook, for the
norm-batch tests of the core and the view: the pass's inputs padded, a training-mode copy of the
model (its BatchNorms with the batch's statistics), the arguments a module is called with."""

from __future__ import annotations

import copy

import numpy as np
import torch


def padded(rows, pad: int) -> torch.Tensor:
    """``rows`` of token ids ``[B, max len]``, the shorter ones filled with ``pad``."""
    out = torch.full((len(rows), max(len(r) for r in rows)), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(list(r))
    return out


def training_copy(model):
    """A copy of ``model`` in training mode with every dropout at p = 0: what the norm-batch view's
    BatchNorm batch must equal (its running statistics change on each pass; the original's do not)."""
    copied = copy.deepcopy(model).train()
    for m in copied.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    return copied


def inputs_of(model, path: str, src: torch.Tensor, tgt: torch.Tensor) -> list[tuple]:
    """The positional arguments module ``path`` is called with in one forward pass (a hook, removed after)."""
    seen = []
    handle = model.get_submodule(path).register_forward_hook(lambda m, args, out: seen.append(args))
    try:
        with torch.no_grad():
            model(src, tgt)
    finally:
        handle.remove()
    return seen


def norm_input(model, site: str, src: torch.Tensor, tgt: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(x ``[B, L, d]``, valid ``[B, L]``) that norm ``site`` gets in one pass of ``model``: its first call's arguments."""
    x, valid, *_ = inputs_of(model, site, src, tgt)[0]
    return x.double().numpy(), valid.numpy()
