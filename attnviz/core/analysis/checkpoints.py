"""Comparing two models on the same sentence: two bundles, or two checkpoints of a training run, and
how far each attention head moved from one to the other. No Qt.

Model A is the open bundle, model B another bundle folder (``bundle.load_bundle``). A training
run's checkpoint is such a folder: the trainer rewrites its output folder as a bundle at the end
of every epoch (its training-state side files are ignored when loading), so a copy of that folder
taken at one epoch against the folder at a later one compares two snapshots of the run. The
``snapshots`` kept in ``meta.json`` are not weights (each is a probe's head-averaged
cross-attention), so they cannot be compared here.

Each model translates the source greedily, with its own tokenizers. Then each is teacher-forced
(SOS + output fed, as ``teacher_forcing.log_prob_of``) and its attention read:

- Two models of one architecture (every config field but those that only act in training,
  ``TRAINING_ONLY``) and the same tokenizers (the same piece for every id) are both forced on A's
  greedy output, so the rows of every decoder matrix are the same tokens in both.
- Other models (other vocabularies, tokenizers, even layer or head counts) are each forced on
  their own greedy output: each side's attention is the model's own, on its own tokens
  (:class:`ForcedAttention` holds them with their labels).

``delta[kind]`` is ``B − A``, ``[layer, head, query, key]``, and ``moved[kind]`` is each head's
total variation ½Σ_k|ΔA| averaged over its query rows, ``[layer, head]``: 0 when the head attends
alike in both, 1 when never to the same keys. Both exist only where the two token grids agree (the
same source pieces, the same fed target pieces, the same layers and heads of every kind);
otherwise they are empty and ``why_no_delta`` says why (one of ``NO_DELTA``). A model that does not
decode (encoder-only, BERT) is refused with ``ComparisonError``, in one line.
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
    from attnviz.core.decoding.result import PreparedSource
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.transformer import Transformer

TRAINING_ONLY = ("dropout", "bn_momentum")  # config fields that do not change what a model in eval mode computes
SHAPE_FIELDS = ("n_encoder_layers", "n_decoder_layers", "n_heads", "d_model", "d_ff")  # named first when they differ
SHOWN_DIFFERENCES = 3  # differing config fields named in a difference
#: Why two models' attention has no ΔA (``CheckpointComparison.why_no_delta``) -> the notice saying so.
NO_DELTA = {
    "tokens": "the models split the sentence into other tokens: each model's attention is shown on its own tokens, no ΔA",
    "heads": "the models have other layers or heads: each model's attention is shown on its own tokens, no ΔA",
}


class ComparisonError(AttnvizError):
    """Two models that cannot be compared (one-line message naming why)."""


@dataclass(frozen=True, eq=False)
class ForcedAttention:
    """One model teacher-forced on one token grid: its attention and the labels of its rows and columns.

    ``output_ids``/``output_pieces``: the tokens forced (EOS last); ``input_pieces``: SOS + all but
    the last, the decoder rows; ``log_prob``: log P(``output_ids``) under the model (nats);
    ``weights``: kind → ``[layer, head, query, key]`` (float64); kinds the model has no layers of
    are left out."""

    source_pieces: tuple[str, ...]
    output_ids: tuple[int, ...]
    output_pieces: tuple[str, ...]
    input_pieces: tuple[str, ...]
    log_prob: float
    weights: dict[str, np.ndarray]

    def labels(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query labels, key labels) of ``kind``'s matrices."""
        src, fed = self.source_pieces, self.input_pieces
        return {"encoder": (src, src), "decoder": (fed, fed), "cross": (fed, src)}[kind]

    def heads(self) -> dict[str, tuple[int, int]]:
        """kind → (layers, heads)."""
        return {k: w.shape[:2] for k, w in self.weights.items()}


@dataclass(frozen=True, eq=False)
class CheckpointComparison:
    """Models A and B on one source: their greedy translations and their attention.

    ``name_a``/``name_b``: the bundles' folder names; ``path_b``: B's folder. ``attention_a``/
    ``attention_b``: each model teacher-forced, with its labels: both on A's greedy output when
    ``on_a_tokens`` (one architecture and the same tokenizers), else each on its own.
    ``difference``: what differs between the models, one line (``""``: architecture and
    tokenizers agree). ``delta`` (B − A): kind → ``[layer, head, query, key]``; ``moved``: kind →
    ``[layer, head]`` ½Σ|ΔA| averaged over query rows; both empty where the token grids differ,
    and ``why_no_delta`` (a key of ``NO_DELTA``) says how."""

    name_a: str
    name_b: str
    path_b: str
    source: str
    translation_a: str
    translation_b: str
    attention_a: ForcedAttention
    attention_b: ForcedAttention
    delta: dict[str, np.ndarray]
    moved: dict[str, np.ndarray]
    on_a_tokens: bool = True
    difference: str = ""
    why_no_delta: str = ""
    notices: tuple[str, ...] = ()

    @property
    def same_translation(self) -> bool:
        return self.translation_a == self.translation_b

    @property
    def delta_available(self) -> bool:
        return not self.why_no_delta

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of attention both models have, in ``KINDS`` order."""
        return tuple(k for k in KINDS if k in self.attention_a.weights and k in self.attention_b.weights)

    def rows(self) -> list[tuple[str, int]]:
        """(kind, layer) of every layer, kinds in order: the rows of the summary (none without ΔA)."""
        return [(k, layer) for k, m in self.moved.items() for layer in range(m.shape[0])]

    def summary(self) -> np.ndarray:
        """``moved`` of every kind stacked: ``[kind and layer, head]`` (rows as :meth:`rows`); ``ValueError`` without ΔA."""
        if not self.moved:
            raise ValueError(f"no ΔA: {NO_DELTA.get(self.why_no_delta, self.why_no_delta)}")
        return np.concatenate([self.moved[k] for k in self.moved])

    def moved_most(self) -> tuple[str, int, int, float]:
        """(kind, layer, head, ½Σ|ΔA|) of the head that moved most, 0-based."""
        rows, s = self.rows(), self.summary()
        r, h = np.unravel_index(int(np.argmax(s)), s.shape)
        return rows[r][0], rows[r][1], int(h), float(s[r, h])


# -- how do the two differ? -------------------------------------------------------------------------
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


def model_difference(a: Bundle, b: Bundle) -> str:
    """What differs between ``a`` and ``b`` in one line: another architecture (the first few config
    fields), else another source or target vocabulary; ``""`` when neither does."""
    diffs = config_differences(a.config, b.config)
    if diffs:
        more = f" and {len(diffs) - SHOWN_DIFFERENCES} more" if len(diffs) > SHOWN_DIFFERENCES else ""
        return f"another architecture ({', '.join(diffs[:SHOWN_DIFFERENCES])}{more})"
    for side, ta, tb in (("source", a.src_tokenizer, b.src_tokenizer), ("target", a.tgt_tokenizer, b.tgt_tokenizer)):
        problem = tokenizer_difference(ta, tb)
        if problem:
            return f"another {side} vocabulary ({problem})"
    return ""


def check_decodes(a: Bundle, b: Bundle) -> None:
    """``ComparisonError`` (one line) when either model does not translate (encoder-only, BERT)."""
    for bundle in (b, a):
        if bundle.config.kind == "encoder-only":
            raise ComparisonError(f"{b.path or b.name} cannot be compared with {a.name}: "
                                  f"{bundle.name} is an encoder-only model (BERT), it does not translate")


def grid_difference(a: ForcedAttention, b: ForcedAttention) -> str:
    """``""`` when ``a`` and ``b`` are on the same token grid with the same heads (ΔA exists), else
    the key of ``NO_DELTA`` saying why not."""
    if (a.source_pieces, a.input_pieces) != (b.source_pieces, b.input_pieces):
        return "tokens"
    return "" if a.heads() == b.heads() else "heads"


# -- the comparison -------------------------------------------------------------------------------
def compare_with_folder(a: Bundle, path: str | os.PathLike, source: str, max_len: int | None = None) -> CheckpointComparison:
    """Load the bundle (or training checkpoint) folder ``path`` as model B, on A's device, and
    compare it with ``a`` on ``source``. A folder that is no bundle is a ``BundleError`` (one line)."""
    b = load_bundle(path, device=model_device(a.model))
    return compare_checkpoints(a, b, source, max_len)


def compare_checkpoints(a: Bundle, b: Bundle, source: str, max_len: int | None = None) -> CheckpointComparison:
    """Models ``a`` and ``b`` on ``source``; see the module docstring."""
    check_decodes(a, b)
    run_a, run_b = _greedy(a, source, max_len), _greedy(b, source, max_len)
    difference = model_difference(a, b)
    side_a = forced_on(a, run_a.source, run_a.output_ids)
    side_b = forced_on(b, run_b.source, run_b.output_ids) if difference else forced_on(b, run_a.source, run_a.output_ids)
    if not side_a.weights:
        raise ComparisonError(f"{a.name} has no attention layers to compare")
    why = grid_difference(side_a, side_b)
    delta = {} if why else {k: side_b.weights[k] - side_a.weights[k] for k in side_a.weights}
    return CheckpointComparison(
        a.name, b.name, str(b.path or b.name), run_a.source.text, run_a.translation(), run_b.translation(), side_a, side_b,
        delta, {k: total_variation(d) for k, d in delta.items()}, not difference, difference, why,
        _notices(run_a, run_b, difference, why),
    )


def _greedy(bundle: Bundle, source: str, max_len: int | None) -> DecodingSession:
    run = DecodingSession.from_bundle(bundle, source, capture=False, max_len=max_len)
    run.run()
    return run


def _notices(run_a: DecodingSession, run_b: DecodingSession, difference: str, why: str) -> tuple[str, ...]:
    """A's notices, then B's that A has not (``model B: …``), then what the difference means."""
    notices = [*run_a.notices, *(f"model B: {n}" for n in run_b.notices if n not in run_a.notices)]
    if why:
        notices.append(NO_DELTA[why])
    elif difference:
        notices.append(f"model B has {difference}: each model is forced on its own translation, on the same tokens")
    return tuple(notices)


def forced_on(bundle: Bundle, source: PreparedSource, output_ids: tuple[int, ...]) -> ForcedAttention:
    """``bundle``'s model teacher-forced on ``output_ids`` (EOS last) over ``source``, with the labels
    its tokenizers give them."""
    log_p, weights = forced_attention(bundle.model, source.ids, output_ids)
    pieces = tuple(bundle.tgt_tokenizer.pieces((bundle.config.bos_id, *output_ids)))
    return ForcedAttention(source.pieces, tuple(output_ids), pieces[1:], pieces[:-1], log_p, weights)


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


# -- the data behind the figure ---------------------------------------------------------------------
def figure_data(result: CheckpointComparison) -> FigureData:
    """With ΔA: ½Σ|ΔA| per head as ``[layer, head]`` (rows ``encoder 1`` … ``cross N``, heads
    1-based). Without: log P of its own translation and its token counts per model, ``[model]``.
    Either way both translations, each side's tokens and attention (``attention_a_cross`` …) and,
    with ΔA, every kind's ΔA (``delta_cross`` …) as extras."""
    extras = _side_extras(result)
    extras.update({f"delta_{k}": d for k, d in result.delta.items()})
    if not result.delta_available:
        return FigureData(f"compare checkpoints · A ({result.name_a}) and B ({result.name_b}), each on its own tokens, no ΔA",
                          ("model",), _per_model(result), {"model": (f"A {result.name_a}", f"B {result.name_b}")}, extras)
    rows = tuple(f"{k} {layer + 1}" for k, layer in result.rows())
    summary = result.summary()
    coords = {"layer": rows, "head": tuple(str(h + 1) for h in range(summary.shape[1]))}
    return FigureData(f"compare checkpoints · ½Σ|ΔA| per head, B ({result.name_b}) − A ({result.name_a})", ("layer", "head"),
                      {"total_variation": summary}, coords, extras)


def _per_model(result: CheckpointComparison) -> dict[str, np.ndarray]:
    sides = (result.attention_a, result.attention_b)
    return {"log_prob": np.array([s.log_prob for s in sides]), "source_tokens": np.array([len(s.source_pieces) for s in sides]),
            "target_tokens": np.array([len(s.output_ids) for s in sides])}


def _side_extras(result: CheckpointComparison) -> dict[str, np.ndarray]:
    """Both translations and, per side (``_a``, ``_b``), its forced tokens, log P and attention."""
    extras: dict[str, np.ndarray] = {"translation_a": np.array(result.translation_a), "translation_b": np.array(result.translation_b),
                                     "output_ids": np.array(result.attention_a.output_ids)}
    for tag, side in (("a", result.attention_a), ("b", result.attention_b)):
        extras.update({f"log_prob_{tag}": np.array(side.log_prob), f"output_ids_{tag}": np.array(side.output_ids),
                       f"source_pieces_{tag}": np.array(side.source_pieces, dtype=str),
                       f"input_pieces_{tag}": np.array(side.input_pieces, dtype=str)})
        extras.update({f"attention_{tag}_{k}": w for k, w in side.weights.items()})
    return extras
