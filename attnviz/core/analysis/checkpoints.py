"""Comparing two checkpoints of one architecture on the same sentence: two bundles, or two
checkpoints of a training run, and how far each attention head moved from one to the other. No Qt.

Model A is the open bundle, model B another bundle folder (``bundle.load_bundle``). A training
run's checkpoint is such a folder: the trainer rewrites its output folder as a bundle at the end
of every epoch (its training-state side files are ignored when loading), so a copy of that folder
taken at one epoch against the folder at a later one compares two snapshots of the run. The
``snapshots`` kept in ``meta.json`` are not weights (each is a probe's head-averaged
cross-attention), so they cannot be compared here.

The two models must be comparable: the same architecture (every config field but those that
only act in training, ``TRAINING_ONLY``) and the same tokenizers (the same piece for every id);
otherwise ``ComparisonError`` says in one line what differs.

Each model translates the source greedily. Then both are teacher-forced on the same tokens, A's
greedy output (SOS + output fed, as ``teacher_forcing.log_prob_of``), so the rows of every
decoder matrix are the same tokens in both: ``delta[kind]`` is ``B − A``, ``[layer, head, query,
key]``, and ``moved[kind]`` is each head's total variation ½Σ_k|ΔA| averaged over its query
rows, ``[layer, head]``: 0 when the head attends alike in both, 1 when never to the same keys.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.result import model_device
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import log_prob_of
from attnviz.core.model.config import shown
from attnviz.core.model.sites import KINDS, attention_sites
from attnviz.errors import AttnvizError

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.transformer import Transformer

TRAINING_ONLY = ("dropout", "bn_momentum")  # config fields that do not change what a model in eval mode computes
SHAPE_FIELDS = ("n_encoder_layers", "n_decoder_layers", "n_heads", "d_model", "d_ff")  # named first when they differ
SHOWN_DIFFERENCES = 3  # differing config fields named in a refusal


class ComparisonError(AttnvizError):
    """Two models that cannot be compared (one-line message naming what differs)."""


@dataclass(frozen=True, eq=False)
class CheckpointComparison:
    """Models A and B on one source: their greedy translations and their attention on A's tokens.

    ``name_a``/``name_b``: the bundles' folder names; ``path_b``: B's folder.
    ``output_ids``/``output_pieces``: A's greedy output (EOS last), the tokens both are forced on;
    ``input_pieces``: SOS + all but the last, the decoder rows. ``log_prob_a``/``log_prob_b``: log P
    of A's output under each model (nats). ``attention_a``/``attention_b``/``delta`` (B − A): kind →
    ``[layer, head, query, key]``; ``moved``: kind → ``[layer, head]`` ½Σ|ΔA| averaged over query
    rows. Kinds the models have no layers of are left out."""

    name_a: str
    name_b: str
    path_b: str
    source: str
    source_pieces: tuple[str, ...]
    output_ids: tuple[int, ...]
    output_pieces: tuple[str, ...]
    input_pieces: tuple[str, ...]
    translation_a: str
    translation_b: str
    log_prob_a: float
    log_prob_b: float
    attention_a: dict[str, np.ndarray]
    attention_b: dict[str, np.ndarray]
    delta: dict[str, np.ndarray]
    moved: dict[str, np.ndarray]
    notices: tuple[str, ...] = ()

    @property
    def same_translation(self) -> bool:
        return self.translation_a == self.translation_b

    def labels(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query labels, key labels) of ``kind``'s matrices."""
        src, fed = self.source_pieces, self.input_pieces
        return {"encoder": (src, src), "decoder": (fed, fed), "cross": (fed, src)}[kind]

    def rows(self) -> list[tuple[str, int]]:
        """(kind, layer) of every layer, kinds in order: the rows of the summary."""
        return [(k, layer) for k, m in self.moved.items() for layer in range(m.shape[0])]

    def summary(self) -> np.ndarray:
        """``moved`` of every kind stacked: ``[kind and layer, head]`` (rows as :meth:`rows`)."""
        return np.concatenate([self.moved[k] for k in self.moved])

    def moved_most(self) -> tuple[str, int, int, float]:
        """(kind, layer, head, ½Σ|ΔA|) of the head that moved most, 0-based."""
        rows, s = self.rows(), self.summary()
        r, h = np.unravel_index(int(np.argmax(s)), s.shape)
        return rows[r][0], rows[r][1], int(h), float(s[r, h])


# -- are the two comparable? ------------------------------------------------------------------------
def config_differences(a: TransformerConfig, b: TransformerConfig) -> list[str]:
    """``"n_heads 4 vs 8"`` for every config field (but ``TRAINING_ONLY``) where ``b`` differs from ``a``."""
    da, db = a.to_dict(), b.to_dict()
    fields = [*SHAPE_FIELDS, *(k for k in da if k not in SHAPE_FIELDS and k not in TRAINING_ONLY)]
    return [f"{k} {shown(da[k])} vs {shown(db[k])}" for k in fields if da[k] != db[k]]


def tokenizer_difference(a: Tokenizer, b: Tokenizer) -> str | None:
    """How ``b``'s vocabulary differs from ``a``'s (the first id with another piece), or ``None``."""
    if a.to_bytes() == b.to_bytes():
        return None
    if a.vocab_size != b.vocab_size:
        return f"{a.vocab_size} vs {b.vocab_size} pieces"
    for i in range(a.vocab_size):
        if a.piece(i) != b.piece(i):
            return f"id {i} is {shown(a.piece(i))} vs {shown(b.piece(i))}"
    return None


def check_comparable(a: Bundle, b: Bundle) -> None:
    """``ComparisonError`` (one line) unless ``b`` has ``a``'s architecture and tokenizers."""
    what = f"{b.path or b.name} cannot be compared with {a.name}"
    diffs = config_differences(a.config, b.config)
    if diffs:
        more = f" and {len(diffs) - SHOWN_DIFFERENCES} more" if len(diffs) > SHOWN_DIFFERENCES else ""
        raise ComparisonError(f"{what}: another architecture ({', '.join(diffs[:SHOWN_DIFFERENCES])}{more})")
    for side, ta, tb in (("source", a.src_tokenizer, b.src_tokenizer), ("target", a.tgt_tokenizer, b.tgt_tokenizer)):
        problem = tokenizer_difference(ta, tb)
        if problem:
            raise ComparisonError(f"{what}: another {side} vocabulary ({problem})")


# -- the comparison -------------------------------------------------------------------------------
def compare_with_folder(a: Bundle, path: str | os.PathLike, source: str, max_len: int | None = None) -> CheckpointComparison:
    """Load the bundle (or training checkpoint) folder ``path`` as model B, on A's device, and
    compare it with ``a`` on ``source``. A folder that is no bundle is a ``BundleError`` (one line)."""
    b = load_bundle(path, device=model_device(a.model))
    return compare_checkpoints(a, b, source, max_len)


def compare_checkpoints(a: Bundle, b: Bundle, source: str, max_len: int | None = None) -> CheckpointComparison:
    """Models ``a`` and ``b`` on ``source``; see the module docstring."""
    check_comparable(a, b)
    run_a, run_b = _greedy(a, source, max_len), _greedy(b, source, max_len)
    src_ids, out_ids = run_a.source.ids, run_a.output_ids
    log_a, att_a = forced_attention(a.model, src_ids, out_ids)
    log_b, att_b = forced_attention(b.model, src_ids, out_ids)
    if not att_a:
        raise ComparisonError(f"{a.name} has no attention layers to compare")
    delta = {k: att_b[k] - att_a[k] for k in att_a}
    notices = list(run_a.notices)
    if run_b.source.ids != src_ids:
        notices.append("model B's tokenizer splits the source otherwise: its translation reads other tokens")
    pieces = tuple(a.tgt_tokenizer.pieces(run_a.tgt_ids))
    return CheckpointComparison(
        a.name, b.name, str(b.path or b.name), run_a.source.text, run_a.source.pieces, out_ids, pieces[1:], pieces[:-1],
        run_a.translation(), run_b.translation(), log_a, log_b, att_a, att_b, delta,
        {k: total_variation(d) for k, d in delta.items()}, tuple(notices),
    )


def _greedy(bundle: Bundle, source: str, max_len: int | None) -> DecodingSession:
    run = DecodingSession.from_bundle(bundle, source, capture=False, max_len=max_len)
    run.run()
    return run


def forced_attention(model: Transformer, src_ids: tuple[int, ...], output_ids: tuple[int, ...]) -> tuple[float, dict[str, np.ndarray]]:
    """log P(``output_ids``) and every kind's attention ``[layer, head, query, key]`` (float64) of
    one teacher-forced pass (SOS + ``output_ids[:-1]`` fed)."""
    sites = {k: attention_sites(model.config, k) for k in KINDS}
    log_p, trace = log_prob_of(model, src_ids, output_ids, names=[s.name("weights") for ss in sites.values() for s in ss])
    return log_p, {k: np.stack([np.asarray(trace[s.name("weights")], np.float64) for s in ss]) for k, ss in sites.items() if ss}


def total_variation(delta: np.ndarray) -> np.ndarray:
    """``[layer, head]``: ½Σ_key|ΔA| of each query row, averaged over the rows (0 without rows)."""
    tv = 0.5 * np.abs(delta).sum(-1)  # [layer, head, query]
    return tv.mean(-1) if tv.shape[-1] else np.zeros(tv.shape[:-1])


def figure_data(result: CheckpointComparison) -> FigureData:
    """½Σ|ΔA| per head as ``[layer, head]`` (rows ``encoder 1`` … ``cross N``, heads 1-based), with
    both translations, the forced tokens, both log P and every kind's ΔA as extras."""
    rows = tuple(f"{k} {layer + 1}" for k, layer in result.rows())
    summary = result.summary()
    coords = {"layer": rows, "head": tuple(str(h + 1) for h in range(summary.shape[1]))}
    extras: dict[str, np.ndarray] = {
        "translation_a": np.array(result.translation_a), "translation_b": np.array(result.translation_b),
        "output_ids": np.array(result.output_ids), "log_prob_a": np.array(result.log_prob_a), "log_prob_b": np.array(result.log_prob_b),
    }
    extras.update({f"delta_{k}": d for k, d in result.delta.items()})
    return FigureData(f"compare checkpoints · ½Σ|ΔA| per head, B ({result.name_b}) − A ({result.name_a})", ("layer", "head"),
                      {"total_variation": summary}, coords, extras)
