"""The frame: what the views draw now (the open bundle, the decoding result and its prefix, the
ablation, the cursor), its key (:meth:`FrameCache.key`) and the one cache of what is derived from
it (:meth:`FrameCache.derive`), at three scopes: the model, the source (a decoding result: a step
keeps it, the encoder ran once) and the step. The session owns one; it reads the session's
public state and writes nothing of it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np

from attnviz.core.analysis.figure_data import AttentionData, MaskData, ScoreForm
from attnviz.core.analysis.rollout import decoder_rollout, rollout
from attnviz.core.decoding.result import DecodingResult, TopK
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.model.sites import attention_sites, position_biased
from attnviz.qt.frame_key import FRAME_PARTS, FrameKey

SCOPES: dict[str, tuple[str, ...]] = {"model": (), "source": ("source",), "step": ("source", "step")}  # scope → frame parts


class FrameCache:
    """``derive(key, build, scope)``: ``build()`` once per frame of that scope and ``key``, shared by
    every view that asks; ``builds`` counts the builds of each key (what a test reads)."""

    def __init__(self, session: Any):
        self._session = session  # read only: bundle, current, ablation, forced_cursor and the piece lists
        self._held: dict[str, tuple[FrameKey, dict[object, object]]] = {}
        self.builds: Counter[str] = Counter()

    def key(self, parts: Iterable[str]) -> FrameKey:
        """What the data of a view that changes with ``parts`` (of :data:`FRAME_PARTS`) is of now:
        always the bundle and the ablation; ``"source"``: the decoding result (a new sentence, target
        or ablation makes a new one; stepping keeps it); ``"step"``: also the frame's steps and
        cursor. ``()``: the model alone."""
        parts = tuple(parts)
        unknown = set(parts) - set(FRAME_PARTS)
        if unknown:
            raise ValueError(f"unknown frame parts {sorted(unknown)} (of {FRAME_PARTS})")
        s = self._session
        cur = s.current
        if "step" in parts and cur is not None:
            last = cur.steps[-1] if cur.steps else None
            return FrameKey((s.bundle, cur, last), (s.ablation, len(cur.steps), s.forced_cursor))
        if parts:
            return FrameKey((s.bundle, cur), (s.ablation,))
        return FrameKey((s.bundle,), (s.ablation,))

    def derive(self, key: object, build: Callable[[], object], scope: str = "step") -> object:
        """``build()`` once per frame of ``scope`` ("model": kept while one bundle is open, whatever
        the ablation; "source": while one decoding result is current; "step": this step) and ``key``."""
        now = FrameKey((self._session.bundle,)) if scope == "model" else self.key(SCOPES[scope])
        held = self._held.get(scope)
        if held is None or not now.same(held[0]):
            held = self._held[scope] = (now, {})
        kept = held[1]
        if key not in kept:
            self.builds[key if isinstance(key, str) else ":".join(map(str, key))] += 1
            kept[key] = build()
        return kept[key]

    def frozen(self) -> DecodingResult | None:
        """The current result as it stands at this frame, unchanged by later steps: what an
        analysis running in a worker reads."""
        cur = self._session.current
        return self.derive("frozen", lambda: cur.frozen() if cur is not None else None)

    def attention_data(self, kind: str) -> AttentionData | None:
        """The current frame's attention of ``kind``; the encoder's is built once per sentence."""
        cur = self._session.current
        if cur is None or self._session.n_layers(kind) == 0:  # a model without layers of this kind has nothing to show
            return None
        scope = "source" if kind == "encoder" else "step"
        return self.derive(("attention", kind), lambda: self._attention_data(cur, kind), scope)

    def mask_data(self) -> MaskData | None:
        """The current frame's masks and scores of the decoder self-attention."""
        return self.derive("mask", self._mask_data)

    def next_topk(self) -> TopK:
        """The distribution of the next position, P(y_t | y_<t, x), that the user can force from.

        Stepping mode: the session's ``peek()`` (the state is left as it is; the next step reuses
        its model call). Finished decoding: the last step's distribution. Teacher-forced mode: the
        cursor's position.
        """
        s = self._session
        if s.forced is not None:
            return s.forced.steps[s.forced_cursor].topk
        d = s.decoding
        if d is None:  # nothing decoded, or a masked-token prediction: no next token
            return ()
        if not d.can_step:
            return d.steps[-1].topk if d.steps else ()
        try:
            return s.decoding.peek().topk
        except DecodingError:
            return ()

    def _attention_data(self, cur: DecodingResult, kind: str) -> AttentionData:
        """``kind``'s attention of the current frame; its rollout is computed when first shown."""
        s = self._session
        weights = cur.all_attention(kind)
        src, tgt = s.src_pieces(), s.input_pieces()
        rows, cols = (src if kind == "encoder" else tgt), (tgt if kind == "decoder" else src)
        highlight = None if kind == "encoder" else s.current_row()
        form = ScoreForm.of(cur.config, kind)
        if weights.shape[2] == 0:
            return AttentionData(kind, weights, rows, cols, highlight=None, form=form)
        if kind == "cross":  # this frame's rows (the session steps on) through the encoder's rollout, computed once per sentence
            lazy = partial(_rollout, _cross_rollout, self.attention_data("decoder"), weights, self.attention_data("encoder"))
        else:
            lazy = partial(_rollout, rollout, weights)
        return AttentionData(kind, weights, rows, cols, highlight=highlight, rollout=lazy, form=form)

    def _mask_data(self) -> MaskData | None:
        s = self._session
        cur = s.current
        sites = attention_sites(cur.config, "decoder") if cur is not None else []
        if not sites or s.n_rows() == 0:
            return None
        scaled, masked, weights = (np.stack([cur.accumulated(site.name(part)) for site in sites])
                                   for part in ("scaled_scores", "masked_scores", "weights"))
        bias = np.stack([cur.accumulated(site.name("position_bias")) for site in sites]) if position_biased(cur.config, "decoder") else None
        src_pad = cur.accumulated("masks.src_padding") if cur.config.cross_attention else None  # a decoder-only model reads no source
        tgt = s.input_pieces()
        return MaskData(
            tgt, tgt, cur.accumulated("masks.look_ahead"), scaled, weights, masked_scores=masked, mask=cur.accumulated(sites[0].name("mask")),
            tgt_padding=cur.accumulated("masks.tgt_padding"), src_padding=src_pad, src_labels=s.src_pieces() if src_pad is not None else (),
            step=s.current_row(), position_bias=bias, scaled=cur.config.scale_scores,
        )


def _cross_rollout(decoder: AttentionData | None, cross: np.ndarray, encoder: AttentionData | None) -> np.ndarray | None:
    """Rollout through the decoder down to the source tokens, rows rescaled to sum to 1."""
    enc = encoder.rollout_matrix() if encoder is not None else None
    if enc is None or decoder is None:
        return None
    return decoder_rollout(decoder.weights, cross, enc)["source_normalized"]


def _rollout(compute, *args) -> np.ndarray | None:
    """``compute(*args)``: an attention rollout, or ``None`` when it cannot be computed."""
    try:
        return compute(*args)
    except Exception:  # noqa: BLE001 - a summary that cannot be computed is left out, not fatal
        return None
