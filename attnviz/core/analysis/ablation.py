"""Head ablation on one sentence: the translation before and after, and how much the target's
log-probability changes (``attnviz ablate``). No Qt.

The target is the typed one (``SOS + y`` in, ``y + EOS`` scored) or, without one, the clean
model's greedy output; a decoder-only model's target is what follows its prompt (the prompt is read,
never scored: ``attribution.forced_pass``). A ``mean`` ablation replaces each head's Z_i by its mean
over the positions of the clean teacher-forced pass on that target (the reference batch is this sentence).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from attnviz.core.analysis.attribution import after_prompt, token_log_probs
from attnviz.core.decoding.result import PreparedSource
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.core.model.interventions import ABLATION_KINDS, InterventionError, ablation, check_heads, parse_heads
from attnviz.core.model.sites import KINDS, AttentionSite

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.trace import Change, Trace
    from attnviz.core.model.transformer import Transformer


@dataclass(frozen=True)
class AblationReport:
    source: PreparedSource
    heads: dict[AttentionSite, tuple[int, ...]]  # 0-based
    kind: str
    before: str  # greedy translation of the clean model
    after: str  # greedy translation with the heads ablated
    target_ids: tuple[int, ...]  # the tokens scored (y + EOS, or the clean greedy output)
    target_pieces: tuple[str, ...]
    target_given: bool  # typed target (True) or the clean greedy output (False)
    log_prob_before: float  # log P(target | source), nats
    log_prob_after: float
    notices: tuple[str, ...]

    @property
    def delta_log_prob(self) -> float:
        return self.log_prob_after - self.log_prob_before


def ablate(bundle: Bundle, source: str, heads: dict[AttentionSite, tuple[int, ...]], kind: str = "zero",
           target: str | None = None, max_len: int | None = None) -> AblationReport:
    """Ablate ``heads`` (0-based, per site) of ``bundle``'s model on ``source``; see the module docstring."""
    clean = DecodingSession.from_bundle(bundle, source, capture=False, max_len=max_len)
    clean.run()
    notices = list(clean.notices)
    if target is None:
        target_ids = after_prompt(bundle.config, clean.source.ids, clean.output_ids)
    else:
        forced = teacher_forced_from_bundle(bundle, source, target, top_k=1, names=())
        target_ids, notices = after_prompt(bundle.config, forced.source.ids, forced.output_ids), list(forced.notices)
    before, reference = scored_log_prob(bundle.model, clean.source.ids, target_ids, names=[site.name("z") for site in heads])
    plan = [ablation(site, h, kind, reference) for site, h in heads.items()]
    after, _ = scored_log_prob(bundle.model, clean.source.ids, target_ids, plan)
    changed = DecodingSession.from_bundle(bundle, source, capture=False, max_len=max_len, interventions=plan)
    changed.run()
    return AblationReport(clean.source, dict(heads), kind, clean.translation(), changed.translation(), tuple(target_ids),
                          tuple(bundle.tgt_tokenizer.pieces(target_ids)), target is not None, before, after, tuple(notices))


def scored_log_prob(model: Transformer, source_ids: Sequence[int], target_ids: Sequence[int], interventions: Sequence[Change] = (),
                    names: Sequence[str] = ()) -> tuple[float, Trace]:
    """log P(target | source), nats, of one teacher-forced pass with ``interventions`` (a
    decoder-only model reads the source as its prompt and only the target is scored:
    :func:`~attnviz.core.analysis.attribution.token_log_probs`); and that pass's trace of ``names``."""
    log_probs, trace = token_log_probs(model, [source_ids], target_ids, interventions, names)
    return float(log_probs[0].sum()), trace


@dataclass(frozen=True)
class HeadSet:
    """The heads the window ablates, as one value of its state: ``heads`` ``(kind, layer, head)``
    0-based, all ablated the same way (``kind``: zero, mean or uniform)."""

    heads: frozenset[tuple[str, int, int]] = frozenset()
    kind: str = "zero"

    def __bool__(self) -> bool:
        return bool(self.heads)

    def toggled(self, kind: str, layer: int, head: int) -> HeadSet:
        """This set with head ``(kind, layer, head)`` added, or removed when it is in already."""
        return replace(self, heads=self.heads ^ {(kind, int(layer), int(head))})

    def by_site(self) -> dict[AttentionSite, tuple[int, ...]]:
        out: dict[AttentionSite, list[int]] = {}
        for kind, layer, head in sorted(self.heads, key=_head_order):
            out.setdefault(AttentionSite(kind, layer), []).append(head)
        return {site: tuple(h) for site, h in out.items()}

    def text(self) -> str:
        """``cross:3:2,encoder:1:1``: 1-based as on screen, what ``attnviz ablate --heads`` reads."""
        return ",".join(f"{k}:{layer + 1}:{h + 1}" for k, layer, h in sorted(self.heads, key=_head_order))

    @classmethod
    def parse(cls, text: str, kind: str = "zero") -> HeadSet:
        """The set ``text`` names (``""``: none); ``InterventionError`` (one line) for a bad one."""
        if kind not in ABLATION_KINDS:
            raise InterventionError(f"unknown ablation kind {kind!r} (one of {', '.join(ABLATION_KINDS)})")
        sites = parse_heads(text) if text.strip() else {}
        return cls(frozenset((s.kind, s.layer, h) for s, hs in sites.items() for h in hs), kind)

    def check(self, config: TransformerConfig) -> None:
        """``InterventionError`` (one line) when a head is not in a model of ``config``."""
        for site, heads in self.by_site().items():
            check_heads(site, heads, config)

    def plan(self, model: Transformer, src_ids: Sequence[int], output_ids: Sequence[int]) -> list[Change]:
        """The interventions for a run on ``src_ids``; a mean ablation takes each head's mean over
        the clean teacher-forced pass on ``output_ids`` (the reference batch is this sentence)."""
        sites = self.by_site()
        reference = None
        if self.kind == "mean":
            target = after_prompt(model.config, src_ids, output_ids)
            _, reference = scored_log_prob(model, src_ids, target, names=[site.name("z") for site in sites])
        return [ablation(site, heads, self.kind, reference) for site, heads in sites.items()]


def ablation_plan(bundle: Bundle, heads: HeadSet, source: str, target: str = "") -> list[Change]:
    """The interventions that ablate ``heads`` in every run on ``source``. A mean ablation averages
    over the clean model's teacher-forced pass on the typed ``target`` or, without one, on its own
    greedy output (a full decode: run it off the UI thread)."""
    if not heads or heads.kind != "mean":
        return heads.plan(bundle.model, (), ())
    if target.strip():
        forced = teacher_forced_from_bundle(bundle, source, target, top_k=1, names=())
        return heads.plan(bundle.model, forced.source.ids, forced.output_ids)
    clean = DecodingSession.from_bundle(bundle, source, capture=False)
    clean.run()
    return heads.plan(bundle.model, clean.source.ids, clean.output_ids)


def _head_order(head: tuple[str, int, int]) -> tuple[int, int, int]:
    return (KINDS.index(head[0]), head[1], head[2])
