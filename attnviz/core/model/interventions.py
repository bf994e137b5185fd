"""Interventions: changes to the model's values where the trace records them.

Each intervention names the trace names it acts at (``names``) and maps the batched value there to
the value the rest of the pass uses. They travel with a call on its ``Recorder``
(``Recorder(..., interventions=[...])``; ``Transformer.run_with_trace(..., interventions=...)``,
``DecodingSession(..., interventions=...)``, ``teacher_forced(..., interventions=...)``), never on
the model; several compose in the order given.

* ``ZeroHeads``: Z_i = 0 for the chosen heads, on the input of the output projection W^O, where the
  heads are still apart (the block's output is then Concat(Z) W^O + b without those heads).
* ``MeanHeads``: Z_i = its mean over the positions of a reference run (``MeanHeads.from_trace``).
* ``UniformHeads``: the heads' scaled scores set to 0, so softmax gives every allowed key the same
  weight (the mask still applies: look-ahead, padding).
* ``ScaleHeads``: Z_i multiplied by a factor.
* ``RowHeads``: a different set of heads ablated in each batch row (many ablations in one pass).
* ``Patch``: any tapped trace name replaced by the value another run recorded (``Patch.from_trace``);
  in a cached decoder step at position t, a full pass's value gives its row t (and its keys 0..t).
* ``PatchWhere``: a ``Patch`` only where a mask says (some heads, some positions, or a different
  position in each batch row); elsewhere the run keeps its own value.
* ``NoPositional``: the positional encoding left out of a stack's input.
* ``NoScaling``: softmax(QKᵀ + M) instead of softmax(QKᵀ/√d_k + M) at the chosen attention blocks.
* ``BatchStatistics``: every BatchNorm normalizes with the statistics of the batch it is given (PAD
  left out), as in training, though the model is in evaluation mode; the running statistics are
  neither used nor changed. It acts through the recorder's ``flags``, not at a traced value.

Heads and layers are 0-based here; ``parse_heads`` reads the 1-based ``kind:layer:head`` of the
screen and the command line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.sites import KINDS, AttentionSite, n_layers
from attnviz.core.model.trace import Change, Trace, is_batchless, is_tapped, trace_names
from attnviz.errors import AttnvizError

ABLATION_KINDS = ("zero", "mean", "uniform")


class InterventionError(AttnvizError, ValueError):
    """An intervention the model cannot take (no such site or head, a patch of the wrong shape); one line."""


def _where_heads(t: torch.Tensor, heads: tuple[int, ...], value: torch.Tensor) -> torch.Tensor:
    """``t`` ``[B, h, ...]`` with the chosen heads' entries taken from ``value`` (broadcast)."""
    keep = torch.ones(t.shape[1], dtype=torch.bool, device=t.device)
    keep[list(heads)] = False
    return torch.where(keep.view(1, -1, *(1,) * (t.dim() - 2)), t, value.to(t))


@dataclass(frozen=True)
class _Heads:
    site: AttentionSite
    heads: tuple[int, ...]  # 0-based
    tapped: ClassVar[str] = "z"  # the field of the site it changes: Z_i, before W^O

    @property
    def names(self) -> tuple[str, ...]:
        return (self.site.name(self.tapped),)

    def check(self, config: TransformerConfig) -> "_Heads":
        check_heads(self.site, self.heads, config)
        return self


def check_heads(site: AttentionSite, heads: Sequence[int], config: TransformerConfig) -> None:
    """A one-line ``ValueError`` (1-based numbers, as on screen) when a model of ``config`` has no such site or head."""
    layers = n_layers(config, site.kind)
    if not 0 <= site.layer < layers:
        raise InterventionError(f"no {site.kind} layer {site.layer + 1}: the model has {layers}")
    bad = [h + 1 for h in heads if not 0 <= h < config.n_heads]
    if bad or not heads:
        raise InterventionError(f"no head {bad[0] if bad else '(none given)'} in {site.kind} layer {site.layer + 1}: the model has {config.n_heads} heads")


@dataclass(frozen=True)
class ZeroHeads(_Heads):
    """Z_i = 0 for ``heads`` of ``site``."""

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return _where_heads(t, self.heads, torch.zeros((), dtype=t.dtype))


@dataclass(frozen=True)
class ScaleHeads(_Heads):
    """Z_i x ``factor`` for ``heads`` of ``site``."""

    factor: float = 0.0

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return _where_heads(t, self.heads, t * self.factor)


@dataclass(frozen=True)
class UniformHeads(_Heads):
    """Uniform attention for ``heads`` of ``site``: their scaled scores are 0 before the mask."""

    tapped: ClassVar[str] = "scaled_scores"

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return _where_heads(t, self.heads, torch.zeros((), dtype=t.dtype))


@dataclass(frozen=True, eq=False)
class MeanHeads(_Heads):
    """Z_i = ``mean[i]`` (``[head, d_k]``, one vector per head) at every position."""

    mean: torch.Tensor = None  # type: ignore[assignment]

    @classmethod
    def from_trace(cls, site: AttentionSite, heads: Sequence[int], reference: Trace) -> "MeanHeads":
        """The mean of each head's Z_i over the positions (and batch rows) of ``reference``, a trace
        holding ``site``'s ``z`` (``[head, query, d_k]``, or ``[B, head, query, d_k]``)."""
        z = torch.from_numpy(np.array(reference[site.name("z")], dtype=np.float32))
        return cls(site, tuple(heads), z.mean(dim=(0, 2) if z.dim() == 4 else 1))

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return _where_heads(t, self.heads, self.mean[None, :, None, :])


@dataclass(frozen=True, eq=False)
class Patch:
    """The value at trace name ``name`` replaced by ``values`` (another run's, from its ``Trace``):
    without the batch axis it applies to every batch row; the shapes must match the run's."""

    name: str
    values: torch.Tensor

    @classmethod
    def from_trace(cls, trace: Trace, *names: str) -> tuple["Patch", ...]:
        return tuple(cls(n, torch.from_numpy(np.array(trace[n], dtype=np.float32))) for n in names)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name,)

    def check(self, config: TransformerConfig) -> "Patch":
        if self.name not in trace_names(config) or not is_tapped(self.name):
            raise InterventionError(f"cannot patch {self.name!r}: not a value the model computes and reads back")
        return self

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        v = self.values.to(t)
        batch = 0 if is_batchless(name) or v.dim() == t.dim() else 1
        if offset is not None and v.dim() + batch == t.dim():
            v = _step_rows(v, t.shape[batch:], offset)
        if v.shape == t.shape:
            return v
        if batch and v.shape == t.shape[1:]:
            return v.expand_as(t)
        raise InterventionError(f"cannot patch {name}: the patch has shape {tuple(v.shape)}, the run {tuple(t.shape)}")


@dataclass(frozen=True, eq=False)
class PatchWhere:
    """``Patch`` of ``name`` by ``values`` only where ``mask`` (bool) is True; elsewhere the run
    keeps its own value. ``mask`` broadcasts against the batched value: ``[1, head, 1, 1]`` on a
    ``z`` patches some heads' Z_i (``heads``), ``[1, pos, 1]`` on a stream some positions,
    ``[B, pos, 1]`` a different position in each batch row. In a cached decoder step the mask is cut
    to the step's row as the values are."""

    name: str
    values: torch.Tensor
    mask: torch.Tensor

    @classmethod
    def heads(cls, site: AttentionSite, heads: Sequence[int], trace: Trace) -> "PatchWhere":
        """Z_i of ``heads`` (0-based) of ``site`` taken from ``trace`` (another run's), the other heads kept."""
        keep = torch.zeros(1, int(np.shape(trace[site.name("z")])[-3]), 1, 1, dtype=torch.bool)
        keep[0, list(heads)] = True
        return cls(site.name("z"), Patch.from_trace(trace, site.name("z"))[0].values, keep)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name,)

    def check(self, config: TransformerConfig) -> "PatchWhere":
        Patch(self.name, self.values).check(config)
        return self

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        v = Patch(self.name, self.values)(name, t, offset)
        return torch.where(self._mask_for(name, t, offset), v, t)

    def _mask_for(self, name: str, t: torch.Tensor, offset: int | None) -> torch.Tensor:
        """The mask against ``t`` (right-aligned); in a cached decoder step at position ``offset``, cut
        as ``Patch`` cuts the values: row ``offset`` on a query axis of size 1, the keys so far elsewhere."""
        m = self.mask.to(t.device)
        if m.dim() > t.dim():
            raise InterventionError(f"cannot patch {name}: the mask has shape {tuple(self.mask.shape)}, the run {tuple(t.shape)}")
        m = m.view(*(1,) * (t.dim() - m.dim()), *m.shape)
        first = 0 if is_batchless(name) else 1  # the batch axis is never cut
        for axis, size in enumerate(t.shape):
            if offset is not None and axis >= first and m.shape[axis] not in (1, size):
                start = offset if size == 1 else 0
                if start + size <= m.shape[axis]:
                    m = m.narrow(axis, start, size)
            if m.shape[axis] not in (1, size):
                raise InterventionError(f"cannot patch {name}: the mask has shape {tuple(self.mask.shape)}, the run {tuple(t.shape)}")
        return m


def _step_rows(v: torch.Tensor, shape: torch.Size, offset: int) -> torch.Tensor:
    """A full pass's value ``v`` cut to a cached step at position ``offset``: the step's one query
    (target) row, ``offset``, on an axis of size 1; the keys so far, ``:size``, on any other axis that differs."""
    for axis, size in enumerate(shape):
        if v.shape[axis] == size:
            continue
        start = offset if size == 1 else 0
        if start + size > v.shape[axis]:
            raise InterventionError(f"the patch covers {v.shape[axis]} positions; this step needs position {start + size}")
        v = v.narrow(axis, start, size)
    return v


@dataclass(frozen=True)
class NoPositional:
    """The positional encoding left out of the inputs of ``stacks`` (the model sees a bag of tokens)."""

    stacks: tuple[str, ...] = ("encoder",)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"{s}.embed.positional" for s in self.stacks)

    def check(self, config: TransformerConfig) -> "NoPositional":
        if not set(self.stacks) <= {"encoder", "decoder"}:
            raise InterventionError(f"positional encoding is left out of 'encoder' or 'decoder', not {self.stacks!r}")
        if config.positional == "relative":
            raise InterventionError("this model adds no positional encoding to its inputs: its positions enter as the bias B on the scores")
        return self

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return torch.zeros_like(t)


@dataclass(frozen=True)
class NoScaling:
    """The ÷√d_k left out at ``sites`` (every attention block of the model when built by
    ``for_config``): the scaled scores multiplied back by √d_k, so the weights are softmax(QKᵀ + M)."""

    sites: tuple[AttentionSite, ...]
    d_k: int

    @classmethod
    def for_config(cls, config: TransformerConfig, kinds: Sequence[str] = KINDS) -> "NoScaling":
        return cls(tuple(AttentionSite(k, i) for k in kinds for i in range(n_layers(config, k))), config.d_k)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(site.name("scaled_scores") for site in self.sites)

    def check(self, config: TransformerConfig) -> "NoScaling":
        if self.d_k != config.d_k:
            raise InterventionError(f"NoScaling was built for d_k = {self.d_k}; this model has d_k = {config.d_k}")
        if not config.scale_scores:
            raise InterventionError("this model does not divide its scores by sqrt(d_k): there is no scaling to leave out")
        for site in self.sites:
            check_heads(site, tuple(range(config.n_heads)), config)
        return self

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return t * float(self.d_k) ** 0.5


@dataclass(frozen=True)
class BatchStatistics:
    """Each BatchNorm uses the batch's own statistics (see the module docstring); no effect on a
    LayerNorm model."""

    names: ClassVar[tuple[str, ...]] = ()
    flags: ClassVar[tuple[str, ...]] = ("batch_statistics",)

    def check(self, config: TransformerConfig) -> "BatchStatistics":
        return self

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return t


@dataclass(frozen=True, eq=False)
class RowHeads:
    """A different set of ``site``'s heads ablated in each batch row: ``rows`` ``[B, head]``, True
    where that row's head is ablated (``kind``: zero, uniform, or mean with ``mean`` ``[head, d_k]``).
    One batched pass then answers many single-head ablations at once (head importance)."""

    site: AttentionSite
    rows: torch.Tensor
    kind: str = "zero"
    mean: torch.Tensor | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.site.name("scaled_scores" if self.kind == "uniform" else "z"),)

    def check(self, config: TransformerConfig) -> "RowHeads":
        check_heads(self.site, tuple(range(self.rows.shape[1])), config)
        if self.kind not in ABLATION_KINDS or (self.kind == "mean") != (self.mean is not None):
            raise InterventionError(f"a row ablation is zero, uniform or mean (with its mean), not {self.kind!r}")
        return self

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        rows = self.rows.to(t.device).view(*self.rows.shape, *(1,) * (t.dim() - 2))
        value = self.mean[None, :, None, :] if self.mean is not None else torch.zeros((), dtype=t.dtype)
        return torch.where(rows, value.to(t), t)


def ablation(site: AttentionSite, heads: Sequence[int], kind: str = "zero", reference: Trace | None = None) -> Change:
    """The ablation of ``kind`` (``zero``, ``mean``: needs the ``reference`` trace, ``uniform``) of ``heads``."""
    if kind == "zero":
        return ZeroHeads(site, tuple(heads))
    if kind == "uniform":
        return UniformHeads(site, tuple(heads))
    if kind == "mean":
        if reference is None:
            raise InterventionError("a mean ablation needs a reference run's trace of z")
        return MeanHeads.from_trace(site, heads, reference)
    raise InterventionError(f"unknown ablation kind {kind!r} (one of {', '.join(ABLATION_KINDS)})")


def checked(interventions: Iterable[Change], config: TransformerConfig) -> tuple[Change, ...]:
    """The interventions as a tuple, each checked against a model of ``config`` (one-line ``InterventionError``)."""
    out = tuple(interventions)
    for change in out:
        check = getattr(change, "check", None)
        if check is not None:
            check(config)
    return out


def parse_heads(text: str) -> dict[AttentionSite, tuple[int, ...]]:
    """``"cross:3:2,encoder:1:1"`` (kind:layer:head, 1-based as on screen) -> the 0-based heads of each site."""
    out: dict[AttentionSite, list[int]] = {}
    for item in (text or "").split(","):
        parts = item.strip().split(":")
        if len(parts) != 3 or parts[0] not in KINDS or not all(p.isdigit() and int(p) >= 1 for p in parts[1:]):
            raise InterventionError(f"a head is KIND:LAYER:HEAD with KIND one of {', '.join(KINDS)} and 1-based numbers (e.g. cross:3:2), not {item.strip()[:40]!r}")
        heads = out.setdefault(AttentionSite(parts[0], int(parts[1]) - 1), [])
        if int(parts[2]) - 1 not in heads:
            heads.append(int(parts[2]) - 1)
    return {site: tuple(h) for site, h in out.items()}
