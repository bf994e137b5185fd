"""Activation patching: one sentence's run with the value at one site taken from another
sentence's run (``patch_run``, ``attnviz patch``), and the layer x position map of where a
difference between two sentences is carried (``patching_map``, ``attnviz patch --map``). No Qt.

Log P is measured with both runs teacher-forced on the same target (the typed one, or the greedy
translation of the run being patched), so the decoder positions line up; the encoder positions
line up when the two sources have the same number of tokens (``猫吃鱼。`` and ``鱼吃猫。``), which
patching the encoder needs. The patched greedy translation takes a value at target positions from
the other sentence's pass over its own greedy output instead (step t gets the value that sentence
had at its step t), so patching a whole stack's state gives the other sentence's translation.
A site is a tapped trace name (``encoder.layers.1.residual2``); on the command
line and the screen, 1-based, ``encoder:2`` is the output of encoder layer 2 (its residual stream,
``encoder:0`` the embeddings), ``decoder:1`` that of decoder layer 1, and ``cross:3:2`` the Z_2 of
decoder layer 3's cross-attention (``parse_site``).

A decoder-only model (GPT-2) has no encoder: a sentence is its prompt, read by the decoder after SOS,
and the target is what follows it, so each run feeds SOS + its own prompt + the same target
(``attribution.forced_pass``) and both prompts need the same number of tokens. Its layer outputs
(``decoder:1``) are its residual stream after each block, over the prompt's positions and the
target's; its map has the decoder's rows only, from the embeddings (``decoder:0``), where the two
prompts differ.

The map patches the clean run's value at one (layer output, position) into the corrupt run and
reads log P of the clean target's token at one target position; each patch is one row of a
batched pass (``PatchWhere`` with a ``[B, pos, 1]`` mask), ``ROWS_PER_PASS`` rows to a pass.
Recovery is ``(log P - log P_corrupt) / (log P_clean - log P_corrupt)``: 0 where the patch changes
nothing, 1 where it restores the clean run's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.analysis.attribution import after_prompt, token_log_probs
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.head_importance import ROWS_PER_PASS
from attnviz.core.decoding.result import PreparedSource
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.core.model.interventions import InterventionError, PatchWhere, check_heads, parse_heads
from attnviz.core.model.sites import ffn_sublayer, n_layers
from attnviz.core.model.trace import Change, Trace, is_tapped, trace_names

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.transformer import Transformer

STACKS = ("encoder", "decoder")
SITE_FORMS = "encoder:LAYER or decoder:LAYER (a layer's output; 0: the embeddings), KIND:LAYER:HEAD (a head's Z_i, e.g. cross:3:2) or a trace name"


# -- sites -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PatchSite:
    """Where a patch acts: a tapped trace name and, for a head's field, the heads patched (0-based)."""

    name: str  # e.g. encoder.layers.1.residual2, decoder.layers.2.cross_attn.z
    heads: tuple[int, ...] | None = None  # None: every head (or a field without heads)
    label: str = ""  # as typed: encoder:2, cross:3:2, or the trace name

    @property
    def stack(self) -> str:
        """``encoder`` (source positions) or ``decoder`` (target positions, the generator's too)."""
        return "encoder" if self.name.startswith("encoder.") else "decoder"

    @property
    def position_kind(self) -> str:
        """What axis -2 of the value counts: ``source`` positions (the encoder's values, and the
        cross-attention's memory, K and V) or ``target`` positions."""
        memory = self.name.endswith(("cross_attn.memory", "cross_attn.k", "cross_attn.v"))
        return "source" if self.stack == "encoder" or memory else "target"


def layer_output(config: TransformerConfig, stack: str, layer: int) -> str:
    """The trace name of the residual stream after ``layer`` (0-based) of ``stack``; layer -1: the embeddings."""
    if layer < 0:
        return f"{stack}.embed.sum"
    last = ffn_sublayer(config, stack)  # the FFN's sublayer comes after the attention blocks the model has
    return f"{stack}.layers.{layer}." + (f"norm{last}.output" if config.norm_placement == "post" else f"residual{last}")


def parse_site(text: str, config: TransformerConfig) -> PatchSite:
    """``encoder:2`` / ``decoder:1`` (a layer's output, 1-based; 0 the embeddings), ``cross:3:2`` (a
    head's Z_i; ``cross:3:2,cross:3:4`` several heads of one block) or a tapped trace name."""
    text = (text or "").strip()
    parts = text.split(":")
    if len(parts) == 2 and parts[0] in STACKS and parts[1].isdigit():
        layer, layers = int(parts[1]), n_layers(config, parts[0])
        if not layers:
            raise InterventionError(f"a {config.kind} model has no {parts[0]}: patch {STACKS[parts[0] == 'encoder']}:LAYER")
        if layer > layers:
            raise InterventionError(f"no {parts[0]} layer {layer}: the model has {layers}")
        return PatchSite(layer_output(config, parts[0], layer - 1), None, text)
    if ":" in text:
        return _head_site(text, config)
    if text in trace_names(config) and is_tapped(text):
        return PatchSite(text, None, text)
    raise InterventionError(f"a site is {SITE_FORMS} (e.g. encoder.output), not {text[:60]!r}")


def _head_site(text: str, config: TransformerConfig) -> PatchSite:
    try:
        sites = parse_heads(text)
    except InterventionError:
        raise InterventionError(f"a site is {SITE_FORMS}, not {text[:60]!r}") from None
    if len(sites) != 1:
        raise InterventionError(f"patch the heads of one attention block at a time, not {text[:60]!r}")
    (site, heads), = sites.items()
    check_heads(site, heads, config)
    return PatchSite(site.name("z"), heads, text)


def parse_positions(text: str) -> tuple[int, ...]:
    """``"1,3"`` (1-based, as on screen) -> ``(0, 2)``; a one-line ``InterventionError`` otherwise."""
    items = [p.strip() for p in (text or "").split(",")]
    if not all(p.isdigit() and int(p) >= 1 for p in items):
        raise InterventionError(f"positions are 1-based numbers separated by commas (e.g. 1,3), not {text[:40]!r}")
    return tuple(sorted({int(p) - 1 for p in items}))


def site_patch(site: PatchSite, values: np.ndarray, own_shape: Sequence[int], heads: Sequence[int] | None = None,
               positions: Sequence[int] | None = None) -> PatchWhere:
    """``site``'s ``values`` (another run's, batch axis dropped) patched over a run whose own value
    there has ``own_shape``, only at ``heads`` (axis -3) and ``positions`` (axis -2) when given."""
    values = np.asarray(values, dtype=np.float32)
    if values.shape != tuple(own_shape):
        raise InterventionError(f"cannot patch {site.label or site.name}: it has shape {values.shape} in the other run and "
                                f"{tuple(own_shape)} in this one (patching needs the same number of {site.position_kind} tokens)")
    mask = torch.ones((1,) * values.ndim, dtype=torch.bool)
    if heads is not None:
        mask = mask & _axis_mask(values.shape, -3, heads, f"{site.label or site.name} has no head", "heads")
    if positions is not None:
        mask = mask & _axis_mask(values.shape, -2, positions, f"{site.label or site.name} has no position", f"{site.position_kind} positions")
    return PatchWhere(site.name, torch.from_numpy(values.copy()), mask)


def _axis_mask(shape: tuple[int, ...], axis: int, chosen: Sequence[int], missing: str, what: str) -> torch.Tensor:
    """A bool mask of ``len(shape)`` dims, True at ``chosen`` along ``axis`` (size 1 elsewhere)."""
    if len(shape) < -axis:
        raise InterventionError(f"{missing} axis: its value is {shape}")
    size = shape[axis]
    bad = [i + 1 for i in chosen if not 0 <= i < size]
    if bad or not chosen:
        raise InterventionError(f"{missing} {bad[0] if bad else '(none given)'}: it has {size} {what}")
    mask = torch.zeros(size, dtype=torch.bool)
    mask[list(chosen)] = True
    view = [1] * len(shape)
    view[axis] = size
    return mask.view(view)


# -- teacher-forced passes -------------------------------------------------------------------------
def _greedy(bundle: Bundle, text: str, max_len: int | None, interventions: Sequence[Change] = ()) -> DecodingSession:
    session = DecodingSession.from_bundle(bundle, text, capture=False, max_len=max_len, interventions=interventions)
    session.run()
    return session


def _target(bundle: Bundle, source: str, target: str | None, max_len: int | None) -> tuple[DecodingSession, list[int], list[str]]:
    """The clean greedy session, the target ids to score (typed: y + EOS; else its output; a
    decoder-only model's without its prompt) and notices."""
    clean = _greedy(bundle, source, max_len)
    if target is None:
        return clean, list(_continuation(bundle, clean)), list(clean.notices)
    forced = teacher_forced_from_bundle(bundle, source, target, top_k=1, names=())
    return clean, list(after_prompt(bundle.config, forced.source.ids, forced.output_ids)), list(forced.notices)


def _continuation(bundle: Bundle, session: DecodingSession) -> tuple[int, ...]:
    """A greedy session's output, without a decoder-only model's prompt."""
    return after_prompt(bundle.config, session.source.ids, session.output_ids)


def _check_prompts(config: TransformerConfig, a: PreparedSource, b: PreparedSource) -> None:
    """A decoder-only model reads the prompt in its decoder: a patch there needs prompts of one length."""
    if config.kind == "decoder-only" and len(a.ids) != len(b.ids):
        raise InterventionError(f"a decoder-only model reads the prompt in its decoder, so patching it needs prompts of the same number "
                                f"of tokens: {len(a.ids)} and {len(b.ids)}")


# -- one patch -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PatchReport:
    """``source`` run with ``site``'s value taken from ``other``'s run: translations and log P per target token."""

    source: PreparedSource
    other: PreparedSource
    site: PatchSite
    heads: tuple[int, ...] | None  # 0-based; None: all
    positions: tuple[int, ...] | None  # 0-based positions along the site's position axis (source or target); None: all
    target_ids: tuple[int, ...]
    target_pieces: tuple[str, ...]
    target_given: bool
    clean: str  # greedy translation of source
    patched: str  # greedy translation of source with the patch
    patched_ids: tuple[int, ...]  # its output tokens
    other_translation: str  # greedy translation of other
    log_prob_clean: np.ndarray  # [t] log P(target_t), nats
    log_prob_patched: np.ndarray  # [t]
    log_prob_other: np.ndarray  # [t] the other sentence's own run on the same target
    notices: tuple[str, ...]

    @property
    def delta(self) -> np.ndarray:
        """``[t]`` log P change of each target token (patched - clean)."""
        return self.log_prob_patched - self.log_prob_clean


def patch_run(bundle: Bundle, source: str, other: str, site: str | PatchSite, heads: Sequence[int] | None = None,
              positions: Sequence[int] | None = None, target: str | None = None, max_len: int | None = None) -> PatchReport:
    """Run ``source`` with the value at ``site`` taken from ``other``'s run (at ``heads`` and
    ``positions``, 0-based, when given); see the module docstring."""
    site = parse_site(site, bundle.config) if isinstance(site, str) else site
    heads = tuple(heads) if heads is not None else site.heads
    clean, target_ids, notices = _target(bundle, source, target, max_len)
    theirs = _greedy(bundle, other, max_len)
    _check_prompts(bundle.config, clean.source, theirs.source)
    lp_other, other_trace = token_log_probs(bundle.model, [theirs.source.ids], target_ids, names=[site.name])
    lp_clean, own = token_log_probs(bundle.model, [clean.source.ids], target_ids, names=[site.name])
    patch = site_patch(site, other_trace[site.name], own[site.name].shape, heads, positions)
    lp_patched, _ = token_log_probs(bundle.model, [clean.source.ids], target_ids, [patch])
    patched = _patched_greedy(bundle, clean, site, patch, theirs, heads, positions, notices)
    return PatchReport(clean.source, theirs.source, site, heads, None if positions is None else tuple(positions), tuple(target_ids),
                       tuple(bundle.tgt_tokenizer.pieces(target_ids)), target is not None, clean.translation(),
                       patched.translation(), tuple(patched.output_ids), theirs.translation(), lp_clean[0], lp_patched[0], lp_other[0], tuple(notices))


def _patched_greedy(bundle: Bundle, clean: DecodingSession, site: PatchSite, patch: PatchWhere, theirs: DecodingSession,
                    heads: Sequence[int] | None, positions: Sequence[int] | None, notices: list[str]) -> DecodingSession:
    """Greedy decoding of the ``clean`` session's source, as long, with ``patch``. A value at target
    positions comes instead from the other sentence's pass over its own greedy output (step t gets
    that run's position t, as when it decoded); steps past that run's length keep their own value (with a notice)."""
    source, max_len = clean.source.text, clean.max_len  # max_len: the positions it may feed
    new = max_len - len(clean.source.ids) if bundle.config.kind == "decoder-only" else max_len  # what a session's max_len counts
    if site.position_kind == "source":
        return _greedy(bundle, source, new, [patch])
    covered = len(theirs.output_ids)  # the positions its pass feeds: SOS (+ a decoder-only model's prompt) + its output but the last
    chosen = range(covered) if positions is None else [p for p in positions if p < covered]
    values = token_log_probs(bundle.model, [theirs.source.ids], _continuation(bundle, theirs), names=[site.name])[1][site.name]
    values = _padded(values, max_len)
    plan = [site_patch(site, values, values.shape, heads, chosen)] if chosen else []
    session = _greedy(bundle, source, new, plan)
    if (positions is None and len(session.output_ids) > covered) or len(chosen) < len(positions or ()):
        notices.append(f"greedy decoding: the other sentence decoded {covered} steps; target positions after {covered} are not patched")
    return session


def _padded(values: np.ndarray, length: int) -> np.ndarray:
    """``values`` with zeros appended along axis -2 up to ``length`` positions (never patched: the mask is False there)."""
    pad = [(0, 0)] * values.ndim
    pad[-2] = (0, max(0, length - values.shape[-2]))
    return np.pad(values, pad)


# -- the layer x position map ----------------------------------------------------------------------
@dataclass(frozen=True)
class PatchingMap:
    """log P of the clean target's token at ``target_position`` in the corrupt run with the clean
    run's value patched in at one (layer output, position): ``encoder`` ``[layer + 1, src]`` (row 0:
    the embeddings, row l: encoder layer l's output), ``decoder`` ``[layer, tgt]`` (row l - 1:
    decoder layer l's output; the embeddings are the same in both runs). A decoder-only model
    (``decoder_only``): ``encoder`` ``[0, 0]``, ``decoder`` ``[layer + 1, prompt + tgt]`` from the
    embeddings (row 0), where the prompts differ."""

    clean_pieces: tuple[str, ...]
    corrupt_pieces: tuple[str, ...]
    target_ids: tuple[int, ...]
    target_pieces: tuple[str, ...]
    target_given: bool
    target_position: int  # 0-based index into target_ids
    clean_translation: str
    corrupt_translation: str
    clean_token_log_probs: np.ndarray  # [t] the clean run's log P of every target token
    corrupt_token_log_probs: np.ndarray  # [t]
    encoder: np.ndarray  # [encoder layers + 1, src] patched log P, nats
    decoder: np.ndarray  # [decoder layers, tgt]; decoder-only: [decoder layers + 1, prompt + tgt]
    notices: tuple[str, ...]
    decoder_only: bool = False

    @property
    def log_prob_clean(self) -> float:
        return float(self.clean_token_log_probs[self.target_position])

    @property
    def log_prob_corrupt(self) -> float:
        return float(self.corrupt_token_log_probs[self.target_position])

    def recovery(self, values: np.ndarray) -> np.ndarray:
        """``(values - log P_corrupt) / (log P_clean - log P_corrupt)``; NaN when the two runs agree."""
        gap = self.log_prob_clean - self.log_prob_corrupt
        return (values - self.log_prob_corrupt) / gap if abs(gap) > 1e-9 else np.full_like(values, np.nan)

    def layer_labels(self) -> tuple[str, ...]:
        """One label per row of ``encoder`` then ``decoder``, 1-based as on screen."""
        enc = ("encoder embeddings", *(f"encoder {i}" for i in range(1, len(self.encoder)))) if len(self.encoder) else ()
        first = 0 if self.decoder_only else 1
        return (*enc, *(f"decoder {i}" if i else "decoder embeddings" for i in range(first, first + len(self.decoder))))

    @property
    def decoder_pieces(self) -> tuple[str, ...]:
        """What each decoder position predicts: the target's pieces (a decoder-only model: the clean prompt's, then the target's)."""
        return (*self.clean_pieces, *self.target_pieces) if self.decoder_only else self.target_pieces


def map_names(config: TransformerConfig) -> dict[str, list[str]]:
    """The trace names of the map's rows: each stack's layer outputs (the encoder's embeddings first;
    a decoder-only model's decoder's, where the prompts differ)."""
    first = {"encoder": -1, "decoder": -1 if config.kind == "decoder-only" else 0}
    return {s: [layer_output(config, s, i) for i in range(first[s], n_layers(config, s))] for s in STACKS if n_layers(config, s)}


def patching_map(bundle: Bundle, clean: str, corrupt: str, target_position: int | None = None, target: str | None = None,
                 max_len: int | None = None) -> PatchingMap:
    """The layer x position patching map of ``clean`` into ``corrupt`` for the clean target's token
    at ``target_position`` (0-based; default: where the corrupt run loses the most log P)."""
    model = bundle.model
    clean_s, target_ids, notices = _target(bundle, clean, target, max_len)
    corrupt_s = _greedy(bundle, corrupt, max_len)
    src, bad = clean_s.source.ids, corrupt_s.source.ids
    if len(src) != len(bad):
        raise InterventionError(f"a patching map needs sources of the same number of tokens: {len(src)} and {len(bad)}")
    names = map_names(bundle.config)
    lp_clean, trace = token_log_probs(model, [src], target_ids, names=[n for ns in names.values() for n in ns])
    lp_corrupt, _ = token_log_probs(model, [bad], target_ids)
    tp = _target_position(lp_clean[0], lp_corrupt[0], target_position)
    if abs(lp_clean[0, tp] - lp_corrupt[0, tp]) <= 1e-9:
        notices.append("the two sentences give the scored token the same log P: recovery is undefined (NaN)")
    got = {s: patched_at_positions(model, bad, target_ids, trace, ns)[..., tp] for s, ns in names.items()}
    return PatchingMap(clean_s.source.pieces, corrupt_s.source.pieces, tuple(target_ids), tuple(bundle.tgt_tokenizer.pieces(target_ids)),
                       target is not None, tp, clean_s.translation(), corrupt_s.translation(), lp_clean[0], lp_corrupt[0],
                       got.get("encoder", np.zeros((0, 0))), got["decoder"], tuple(notices), "encoder" not in got)


def _target_position(clean: np.ndarray, corrupt: np.ndarray, chosen: int | None) -> int:
    if chosen is None:
        return int(np.argmax(clean - corrupt))
    if not 0 <= chosen < len(clean):
        raise InterventionError(f"no target position {chosen + 1}: the target has {len(clean)} tokens")
    return int(chosen)


def patched_at_positions(model: Transformer, source_ids: Sequence[int], target_ids: Sequence[int], trace: Trace,
                         names: Sequence[str]) -> np.ndarray:
    """``[len(names), positions, t]``: log P of every target token with ``trace``'s value of one of
    ``names`` (all with the same positions on axis -2) patched in at one position, each patch a row
    of a batched pass over ``source_ids``, ``ROWS_PER_PASS`` rows to a pass."""
    n_pos = int(np.shape(trace[names[0]])[-2]) if names else 0
    rows = [(i, p) for i in range(len(names)) for p in range(n_pos)]
    out = [_rows_pass(model, source_ids, target_ids, trace, names, rows[a:a + ROWS_PER_PASS])
           for a in range(0, len(rows), ROWS_PER_PASS)]
    return np.concatenate(out).reshape(len(names), n_pos, len(target_ids)) if out else np.zeros((len(names), 0, len(target_ids)))


def _rows_pass(model: Transformer, source_ids: Sequence[int], target_ids: Sequence[int], trace: Trace, names: Sequence[str],
               rows: Sequence[tuple[int, int]]) -> np.ndarray:
    """One batched pass: row r patches ``names[i]`` at position p for ``rows[r]`` = (i, p)."""
    plan = []
    for i, name in enumerate(names):
        values = np.asarray(trace[name], dtype=np.float32)  # [pos, d]
        mask = torch.zeros(len(rows), values.shape[-2], 1, dtype=torch.bool)  # [B, pos, 1]
        for r, (j, p) in enumerate(rows):
            mask[r, p, 0] = i == j
        if mask.any():
            plan.append(PatchWhere(name, torch.from_numpy(values.copy()), mask))
    return token_log_probs(model, [source_ids] * len(rows), target_ids, plan)[0]


def figure_data(result: PatchingMap) -> FigureData:
    """Recovery and patched log P as ``[layer, position]`` (the encoder's rows, then the decoder's;
    positions 1-based, NaN past a stack's length), with the pieces and baselines as extras: what
    ``attnviz patch --map`` writes."""
    width = max(result.encoder.shape[1], result.decoder.shape[1])
    log_prob = np.full((len(result.encoder) + len(result.decoder), width), np.nan)
    log_prob[: len(result.encoder), : result.encoder.shape[1]] = result.encoder
    log_prob[len(result.encoder):, : result.decoder.shape[1]] = result.decoder
    coords = {"layer": result.layer_labels(), "position": tuple(str(i + 1) for i in range(width))}
    extras = {"clean_pieces": np.array(result.clean_pieces), "corrupt_pieces": np.array(result.corrupt_pieces),
              "target_pieces": np.array(result.target_pieces), "target_ids": np.array(result.target_ids),
              "target_position": np.array(result.target_position), "log_prob_clean": np.array(result.log_prob_clean),
              "log_prob_corrupt": np.array(result.log_prob_corrupt)}
    title = f"activation patching · recovery of log P({result.target_pieces[result.target_position]}) at target position {result.target_position + 1}"
    return FigureData(title, ("layer", "position"), {"recovery": result.recovery(log_prob), "log_prob": log_prob}, coords, extras)


# -- the window's view: the map and one cell's patch -------------------------------------------------
@dataclass(frozen=True)
class PatchingPair:
    """The map of ``other``'s values patched into ``this`` sentence's run, and the patch of the
    chosen cell (``None``: none chosen) with the translation it gives."""

    map: PatchingMap
    cell: tuple[str, int, int] | None  # (stack, map row, position), 0-based
    patch: PatchReport | None


def map_and_patch(bundle: Bundle, this: str, other: str, target_position: int | None = None,
                  cell: tuple[str, int, int] | None = None) -> PatchingPair:
    """The layer x position map of ``other`` patched into ``this`` (recovery of ``other``'s target
    token), and for ``cell`` (a map row of ``stack`` and a position) ``this`` decoded with that one
    value taken from ``other``."""
    result = patching_map(bundle, other, this, target_position)
    if cell is None:
        return PatchingPair(result, None, None)
    stack, row, position = cell
    layer = row if stack == "encoder" or result.decoder_only else row + 1  # row 0 of the encoder (of a decoder-only model's decoder): its embeddings
    return PatchingPair(result, cell, patch_run(bundle, this, other, f"{stack}:{layer}", positions=[position]))
