"""Head ablation on one sentence: the translation before and after, and how much the target's
log-probability changes (``attnviz ablate``). No Qt.

The target is the typed one (``SOS + y`` in, ``y + EOS`` scored) or, without one, the clean
model's greedy output. A ``mean`` ablation replaces each head's Z_i by its mean over the positions
of the clean teacher-forced pass on that target (the reference batch is this sentence).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnviz.core.decoding.result import PreparedSource
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import log_prob_of, teacher_forced_from_bundle
from attnviz.core.model.interventions import ablation
from attnviz.core.model.sites import AttentionSite

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle


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
        target_ids = clean.output_ids
    else:
        forced = teacher_forced_from_bundle(bundle, source, target, top_k=1, names=())
        target_ids, notices = forced.output_ids, list(forced.notices)
    z_names = [site.name("z") for site in heads]
    before, reference = log_prob_of(bundle.model, clean.source.ids, target_ids, names=z_names)
    plan = [ablation(site, h, kind, reference) for site, h in heads.items()]
    after, _ = log_prob_of(bundle.model, clean.source.ids, target_ids, plan)
    changed = DecodingSession.from_bundle(bundle, source, capture=False, max_len=max_len, interventions=plan)
    changed.run()
    return AblationReport(clean.source, dict(heads), kind, clean.translation(), changed.translation(), tuple(target_ids),
                          tuple(bundle.tgt_tokenizer.pieces(target_ids)), target is not None, before, after, tuple(notices))
