"""A normalization as the affine map it is in one pass: ``Norm(x) = L(x) + offset``, with every
statistic that depends on the input held at the value it had in that pass (TransformerLens's
``apply_ln_to_stack``; ALTI's linearised LayerNorm). No Qt.

* LayerNorm: ``L(v) = (v - mean_d(v)) / sqrt(var + eps) * gamma``, offset ``beta``; ``var`` the
  token's own in the pass (``<norm>.var``): a held scale.
* RMSNorm: ``L(v) = v / sqrt(mean_square + eps) * gamma``, offset 0; ``mean_square`` the token's
  own (``<norm>.mean_square``): a held scale.
* BatchNorm in evaluation: ``L(v) = v * gamma / sqrt(running_var + eps)``, offset
  ``beta - running_mean * gamma / sqrt(running_var + eps)``. Its statistics are the running ones,
  which no input changes: the map is the norm itself, for any input (``held`` is False).

``L`` is linear, so ``L(sum_k v_k) = sum_k L(v_k)``: a sum of pieces goes through the norm piece by
piece, and ``sum_k L(v_k) + offset`` is the norm's output at the pass's own input (to float rounding).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from torch import nn

from attnviz.core.model.modules import LayerNorm, MaskedBatchNorm, RMSNorm


@dataclass(frozen=True, eq=False)
class LinearNorm:
    """``L(v) = (v - mean_d v if center) * scale``; ``scale`` and ``offset`` ``[row, d_model]`` (one
    row for every token when nothing depends on the input); ``held``: the scale is the pass's own
    (LayerNorm, RMSNorm), not a constant of the model (BatchNorm in evaluation)."""

    scale: np.ndarray  # [row or 1, d]
    offset: np.ndarray  # [row or 1, d]
    center: bool
    held: bool

    def at(self, row: int) -> LinearNorm:
        """The map of one token (row ``row`` of the pass)."""
        pick = 0 if self.scale.shape[0] == 1 else row
        return LinearNorm(self.scale[pick:pick + 1], self.offset[pick:pick + 1], self.center, self.held)

    def linear(self, v: np.ndarray) -> np.ndarray:
        """``L(v)`` of ``v`` ``[..., row, d]`` (or ``[..., d]`` with a one-row map), float64."""
        v = np.asarray(v, np.float64)
        if self.center:
            v = v - v.mean(-1, keepdims=True)
        out = v * self.scale
        return out[0] if v.ndim == 1 else out


def norm_statistic(module: nn.Module) -> str | None:
    """The trace field holding the per-token statistic of ``module``'s scale (``var``,
    ``mean_square``), or None where the scale is a constant (BatchNorm in evaluation)."""
    if isinstance(module, LayerNorm):
        return "var"
    if isinstance(module, RMSNorm):
        return "mean_square"
    if isinstance(module, MaskedBatchNorm):
        return None
    raise ValueError(f"no linear form for a {type(module).__name__}")


def linear_norm(module: nn.Module, trace: Mapping[str, np.ndarray], prefix: str) -> LinearNorm:
    """``module`` (recorded under ``prefix``) as its affine map in the pass of ``trace``."""
    if isinstance(module, MaskedBatchNorm):
        if module.training:
            raise ValueError("a BatchNorm in training mode normalizes with the batch's statistics: call model.eval() first")
        inv = (module.running_var.double() + module.eps).rsqrt()
        gain = module.weight.detach().double() * inv
        offset = module.bias.detach().double() - module.running_mean.double() * gain
        return LinearNorm(gain.cpu().numpy()[None], offset.cpu().numpy()[None], False, False)
    stat = np.asarray(trace[f"{prefix}.{norm_statistic(module)}"], np.float64)  # [row]
    gamma = module.weight.detach().double().cpu().numpy()
    scale = gamma[None] / np.sqrt(stat + module.eps)[:, None]  # [row, d]
    beta = getattr(module, "bias", None)
    offset = np.zeros_like(scale) if beta is None else np.broadcast_to(beta.detach().double().cpu().numpy(), scale.shape).copy()
    return LinearNorm(scale, offset, isinstance(module, LayerNorm), True)
