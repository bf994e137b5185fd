"""The normalization-statistics view's data: :class:`NormSites` (every :class:`NormSiteData`, one
normalization site of the current pass, and the model's norm and placement),
``norm_site_data_for`` (builds the sites from a decoding), what each site normalizes (its
sublayer's kind, its formula) and the histogram binning.

No widgets here; ``norm_site_data_for`` imports the core (and so torch) only when called.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnviz.core.model.config import NORM_NAMES, NORM_SYMBOLS
from attnviz.core.model.sites import stack_kinds

HIST_BINS = 40
_SITE = re.compile(r"^(encoder|decoder)\.(?:layers\.(\d+)\.norm(\d+)|final_norm)$")
_SUBLAYER_FORMULA = {"encoder": "SelfAttn", "decoder": "MaskedSelfAttn", "cross": "CrossAttn", "ffn": "FFN"}  # by sublayer kind


@dataclass(frozen=True, eq=False)
class NormSiteData:
    """One normalization site of the current pass.

    site        trace prefix, e.g. ``encoder.layers.0.norm1`` or ``decoder.final_norm``
    stats       ``analysis.norm_statistics(arrays, site)`` (a ``NormStats``: kind ``layer``/``batch``,
                input/output mean and std, and for BatchNorm batch/running mean and var)
    x_in        ``[token, d_model]`` what the norm normalizes (``<site>.input``)
    x_out       ``[token, d_model]`` the norm's output (``<site>.output``)
    comparison  ``analysis.compare_norms(x_in)`` (a ``NormComparison``: LN and BN of ``x_in``)
    pieces      token pieces, one per row
    """

    site: str
    stats: Any
    x_in: np.ndarray
    x_out: np.ndarray
    comparison: Any
    pieces: tuple[str, ...]

    def __post_init__(self) -> None:
        xi = np.ascontiguousarray(self.x_in, dtype=np.float32)
        xo = np.ascontiguousarray(self.x_out, dtype=np.float32)
        if xi.ndim != 2 or xi.shape != xo.shape:
            raise ValueError(f"x_in {xi.shape} and x_out {xo.shape} must be the same [token, d_model] shape")
        pieces = tuple(str(p) for p in self.pieces)
        if len(pieces) != xi.shape[0]:
            raise ValueError(f"{len(pieces)} pieces for {xi.shape[0]} tokens")
        object.__setattr__(self, "x_in", xi)
        object.__setattr__(self, "x_out", xo)
        object.__setattr__(self, "pieces", pieces)

    @property
    def kind(self) -> str:
        return str(self.stats.kind)

    @property
    def group(self) -> tuple[str, int]:
        """(stack, layer index); the final norm of a stack has layer -1."""
        m = _SITE.match(self.site)
        if not m:
            return (self.site.split(".")[0], -1)
        return (m.group(1), int(m.group(2)) if m.group(2) is not None else -1)

    @property
    def normalized_stats(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, std) per token of LayerNorm's output *before* its learned γ, β:
        (x − mean) / √(var + ε) of each row, about 0 and 1 (the learner's expectation)."""
        return row_stats(np.asarray(self.comparison.layer_output))

    @property
    def normalized(self) -> np.ndarray:
        """``[token, d_model]`` RMSNorm's output before its learned γ: each row of ``x_in`` divided by
        its root mean square (``stats.rms``, with the model's ε inside)."""
        return self.x_in / np.asarray(self.stats.rms, np.float32)[:, None]

    @property
    def index(self) -> int:
        m = _SITE.match(self.site)
        return int(m.group(3)) if m and m.group(3) else 0


@dataclass(frozen=True, eq=False)
class NormSites:
    """Every normalization site of one pass and how the model normalizes: what the
    normalization-statistics view draws.

    sites      the :class:`NormSiteData` of each normalization of the pass (any order)
    norm       the model's normalization, ``"layer"``, ``"batch"`` or ``"rms"`` (``TransformerConfig.norm``)
    placement  ``"pre"`` or ``"post"`` (``TransformerConfig.norm_placement``)
    """

    sites: tuple[NormSiteData, ...]
    norm: str = "layer"
    placement: str = "post"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sites", tuple(self.sites))


def norm_site_data_for(current, config) -> list[NormSiteData]:
    """Every normalization site of the current decoding (a ``DecodingSession`` or a
    ``TeacherForced`` result) of a model with ``config`` (its ``TransformerConfig``).

    For whoever owns the session (the main window, ``attnviz export``), not for the widget: it
    imports the core (and so torch) when called. Statistics from ``analysis.norm_statistics``,
    the LN-vs-BN pair from ``analysis.compare_norms`` on each site's input.
    """
    from attnviz.core.analysis import stats as A
    from attnviz.core.model.trace import trace_schema

    src, tgt = tuple(current.src_pieces), tuple(current.input_pieces)
    names = [n for n, _, _ in trace_schema(config, decoder=bool(tgt)) if ".norm" in n or ".final_norm" in n]
    arrays = {n: current.accumulated(n) for n in names}
    out = []
    for site in A.norm_sites(arrays):
        x = arrays[f"{site}.input"]
        pieces = src if site.startswith("encoder") or config.kind == "encoder-only" else tgt  # BERT's masked-token head reads the encoder's positions
        out.append(NormSiteData(site, A.norm_statistics(arrays, site), x, arrays[f"{site}.output"], A.compare_norms(x), pieces))
    return out


def row_stats(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, std) of each row of ``[token, feature]`` activations (std over the features, biased, as LN)."""
    a = np.asarray(a, np.float64)
    return a.mean(-1), a.std(-1)


def row_rms(a: np.ndarray) -> np.ndarray:
    """The root mean square of each row of ``[token, feature]`` activations: what RMSNorm divides by."""
    return np.sqrt(np.square(np.asarray(a, np.float64)).mean(-1))


def placement_formula(norm: str, placement: str) -> str:
    """Which formula the model's sublayers follow: ``x + Sublayer(LN(x))`` (pre-norm) or
    ``LN(x + Sublayer(x))`` (post-norm, the tutorial's); BN for a BatchNorm model, RMS for an RMSNorm one."""
    n = NORM_SYMBOLS[norm]
    return f"x + Sublayer({n}(x))" if placement == "pre" else f"{n}(x + Sublayer(x))"


def tutorial_formula(norm: str, placement: str) -> str:
    """The same in the tutorial's notation, where Sublayer is the whole residual block:
    post-norm ``Sublayer(x) = LayerNorm(x + SublayerModule(x))``."""
    n = NORM_NAMES[norm]
    return f"Sublayer(x) = x + SublayerModule({n}(x))" if placement == "pre" else f"Sublayer(x) = {n}(x + SublayerModule(x))"


def sublayer_kind(stack: str, index: int) -> str:
    """What sublayer ``index`` (1-based) of a ``stack`` layer is: its attention kinds in model order
    (``encoder``, ``decoder``, ``cross``), then ``ffn``; ``""`` for none of them."""
    kinds = stack_kinds(stack)
    if not kinds or index < 1:
        return ""
    if index <= len(kinds):
        return kinds[index - 1]
    return "ffn" if index == len(kinds) + 1 else ""


def site_formula(site: NormSiteData, placement: str) -> str:
    """What a site computes: ``LN(x + SelfAttn(x))`` (post-norm), ``x + SelfAttn(LN(x))``
    (pre-norm); ``LN(x)`` for a stack's final norm (after its last layer)."""
    stack, layer = site.group
    norm = NORM_SYMBOLS[site.kind]
    if layer < 0:
        return f"{norm}(x)"
    f = _SUBLAYER_FORMULA.get(sublayer_kind(stack, site.index), "Sublayer")
    return f"x + {f}({norm}(x))" if placement == "pre" else f"{norm}(x + {f}(x))"


def histogram(before: np.ndarray, after: np.ndarray, bins: int = HIST_BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(edges, counts before, counts after) on shared bins spanning both arrays."""
    a = np.asarray(before, np.float64).ravel()
    b = np.asarray(after, np.float64).ravel()
    both = np.concatenate([a[np.isfinite(a)], b[np.isfinite(b)]])
    lo, hi = (float(both.min()), float(both.max())) if both.size else (-1.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    return edges, np.histogram(a, edges)[0], np.histogram(b, edges)[0]
