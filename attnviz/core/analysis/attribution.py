"""Attribution of one output token to the source tokens: how much each source token contributes
to f = log P(y_t | source, y_<t) (``attnviz attribute``). No Qt.

The pass is teacher-forced: ``SOS + y[:-1]`` is fed and row t is scored, with y the typed target
plus EOS or, without one, the model's greedy output (as in ``ablation.ablate``). The default
position t is the last output token that is not EOS (the last word the model wrote; EOS itself
when the output is nothing but EOS). With a contrast token y', f = log P(y_t) - log P(y') instead:
what makes the model choose y_t rather than y'.

The source tokens enter through the encoder's embedding output, e_i = E[x_i] sqrt(d_model), the
value at trace name ``encoder.embed.tokens`` (positional encoding not included). The methods
replace that value with a ``Patch`` intervention on the call's recorder, never through the
embedding table: a model whose source and target share one table (Marian) would otherwise mix
the decoder's use of the table into the source's attribution.

* ``grad``: gradient x input, sum_d df/de_id e_id.
* ``ig``: integrated gradients from the zero baseline (e_i = 0 for every source token, positions
  kept): e_i . mean_k df/de_i at alpha_k e, alpha_k = (k + 1/2) / n (the midpoint rule), all n
  alphas the rows of batched passes (``ROWS_PER_PASS`` rows each). The scores then sum to
  f(x) - f(baseline) up to the rule's error, reported as ``completeness_gap``. In a ReLU model the
  gradient jumps along the path wherever a unit switches, so the error falls only about as 1/n and
  unevenly: on the bundled models' greedy outputs (six sentences, every position moving f by more
  than 0.05), 50 steps left it over 1% at 0-9 of 36-63 positions per model (up to 12%), 200 steps at
  0-1 (up to 3%); a smooth model (Marian's SiLU) stays far below 1% at 50. Hence 200 steps by
  default; the gap is reported so that a larger one can be asked for.
* ``occlusion``: f(x) - f(x without token i), the sequence without token i (the later tokens
  move up one position), all L of them as the rows of one pass of length L - 1. Leaving the token
  out asks what the model does with a sentence that never had it, an input of the kind it was
  trained on; zeroing its embedding instead keeps its position but feeds a vector no token has
  (that question is the one integrated gradients' baseline asks). A one-token source cannot lose
  its only token.

A decoder-only model (GPT-2) has no encoder: the source is its prompt, fed to the decoder between
SOS and the target (SOS + prompt + y[:-1]), and y is what follows the prompt (the typed target, or
the greedy continuation). The prompt's tokens enter through the decoder's embedding output at their
positions (``decoder.embed.tokens``, rows 1 .. prompt length); the methods patch them there, apart
from the rows of SOS and y_<t (``forced_pass``, ``after_prompt``). ``token_log_probs`` scores y
after the source in that pass, for every analysis that measures log P(y): patching, ablation and
head importance score a decoder-only model's continuation only, never its prompt.

``grad`` also gives the fed target prefix's scores (SOS + y_<t, through ``decoder.embed.tokens``)
from the same backward pass; ``ig`` gives them when asked (``prefix=True``: n more rows, the
target embeddings scaled from zero with the source kept, so they sum to f(x) - f(no prefix)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.data.tokenizer import TokenizerError
from attnviz.core.decoding.result import PreparedSource, check_eval_mode, check_finite, checked_interventions, model_device
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle
from attnviz.core.model.interventions import Patch
from attnviz.errors import AttnvizError

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.data.tokenizer import TokenizerLike
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.trace import Change, Trace
    from attnviz.core.model.transformer import Transformer

METHODS = ("grad", "ig", "occlusion")
METHOD_TITLES = {"grad": "gradient x input", "ig": "integrated gradients", "occlusion": "occlusion (leave one out)"}
DEFAULT_STEPS = 200  # integrated gradients: the completeness gap under 1% at nearly every position measured (module docstring)
ROWS_PER_PASS = 64  # rows of one batched pass: bounds the memory of many steps or a large model
SOURCE_EMBED = "encoder.embed.tokens"
TARGET_EMBED = "decoder.embed.tokens"


class AttributionError(AttnvizError, ValueError):
    """An attribution that cannot be asked for (a position or contrast token that does not exist); one line."""


@dataclass(frozen=True)
class Question:
    """What is attributed: output token y_t of the teacher-forced pass on ``output_ids``, against
    ``contrast_id`` when given."""

    source: PreparedSource
    input_ids: tuple[int, ...]  # SOS + output_ids[:-1]: what the decoder is fed (a decoder-only model: the prompt between them)
    input_pieces: tuple[str, ...]
    output_ids: tuple[int, ...]  # y + EOS (typed target) or the greedy output: row r produces output_ids[r]
    output_pieces: tuple[str, ...]
    target_given: bool  # typed target (True) or the greedy output (False)
    position: int  # t, 0-based
    contrast_id: int | None
    contrast_piece: str | None
    notices: tuple[str, ...]

    @property
    def token_id(self) -> int:
        return self.output_ids[self.position]

    @property
    def token_piece(self) -> str:
        return self.output_pieces[self.position]

    @property
    def quantity(self) -> str:
        """f in words: ``log P(y_t)``, or ``log P(y_t) - log P(y')`` with a contrast."""
        contrast = "" if self.contrast_piece is None else f" - log P({self.contrast_piece})"
        return f"log P({self.token_piece}){contrast}"


@dataclass(frozen=True, eq=False)
class Attribution:
    """Each source token's share of f (see the module docstring), by ``method``.

    ``scores`` ``[src]`` (float64, read-only); ``value`` f(x); ``baseline`` f at the zero
    baseline (``ig``); ``completeness_gap`` sum(scores) - (value - baseline) (``ig``);
    ``prefix_scores`` ``[t + 1]`` for the fed tokens SOS + y_<t (``grad``; ``ig`` when asked).
    """

    question: Question
    method: str
    scores: np.ndarray
    value: float
    baseline: float | None = None
    n_steps: int | None = None
    completeness_gap: float | None = None
    prefix_scores: np.ndarray | None = None
    prefix_baseline: float | None = None  # ig with the prefix: f with every fed target embedding zero

    @property
    def source_pieces(self) -> tuple[str, ...]:
        return self.question.source.pieces

    @property
    def target_pieces(self) -> tuple[str, ...]:
        return self.question.output_pieces

    @property
    def position(self) -> int:
        return self.question.position

    @property
    def token(self) -> str:
        return self.question.token_piece

    @property
    def contrast(self) -> str | None:
        return self.question.contrast_piece

    @property
    def notices(self) -> tuple[str, ...]:
        return self.question.notices

    @property
    def prefix_pieces(self) -> tuple[str, ...]:
        """The fed tokens SOS + y_<t that ``prefix_scores`` are of (empty without them)."""
        return () if self.prefix_scores is None else self.question.input_pieces[: self.position + 1]

    @property
    def relative_gap(self) -> float | None:
        """|completeness gap| / |f(x) - f(baseline)| (``ig``)."""
        if self.completeness_gap is None or self.baseline is None:
            return None
        span = abs(self.value - self.baseline)
        return abs(self.completeness_gap) / span if span else math.inf


# -- the question -------------------------------------------------------------------------------
def question(bundle: Bundle, source: str, target: str | None = None, position: int | None = None,
             contrast: str | int | None = None, max_len: int | None = None) -> Question:
    """The output token to attribute on ``source``: of the typed ``target`` (+ EOS) or, without
    one, of the greedy output (a decoder-only model's: what follows its prompt); ``position``
    0-based (default: see the module docstring)."""
    if target is not None:
        forced = teacher_forced_from_bundle(bundle, source, target, top_k=1, names=())
        src, output_ids, notices = forced.source, forced.output_ids, forced.notices
    else:
        clean = DecodingSession.from_bundle(bundle, source, capture=False, max_len=max_len)
        clean.run()
        src, output_ids, notices = clean.source, clean.output_ids, tuple(clean.notices)
    output_ids = after_prompt(bundle.config, src.ids, output_ids)
    return make_question(src, output_ids, bundle.tgt_tokenizer, bundle.config, position, contrast, target is not None, notices)


def after_prompt(config: TransformerConfig, source_ids: Sequence[int], output_ids: Sequence[int]) -> tuple[int, ...]:
    """``output_ids`` of a decoding or a teacher-forced pass without a decoder-only model's prompt
    (``source_ids``, which its output starts with): the target tokens a pass is scored on."""
    output_ids = tuple(output_ids)
    return output_ids[len(source_ids):] if config.kind == "decoder-only" else output_ids


def forced_pass(config: TransformerConfig, sources: Sequence[Sequence[int]], output_ids: Sequence[int],
                device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor, int]:
    """The teacher-forced pass that scores ``output_ids`` after each of ``sources`` (all of one
    length): (source ``[B, Ls]``, fed target ``[B, Lt]``, the fed row whose logits predict
    ``output_ids[0]``). An encoder-decoder model reads the source in its encoder and SOS +
    ``output_ids[:-1]`` in its decoder (row 0); a decoder-only model reads no source and SOS, the
    source (its prompt) and ``output_ids[:-1]`` in its decoder (row: the prompt's length)."""
    prefix = [int(t) for t in output_ids[:-1]]
    if config.kind != "decoder-only":
        src = torch.tensor([list(s) for s in sources], dtype=torch.long, device=device)
        return src, torch.tensor([[config.bos_id, *prefix]], dtype=torch.long, device=device).expand(len(sources), -1), 0
    fed = torch.tensor([[config.bos_id, *s, *prefix] for s in sources], dtype=torch.long, device=device)
    return torch.zeros(len(sources), 0, dtype=torch.long, device=device), fed, len(sources[0])


def token_log_probs(model: Transformer, source_rows: Sequence[Sequence[int]], target_ids: Sequence[int],
                    interventions: Sequence[Change] = (), names: Sequence[str] = ()) -> tuple[np.ndarray, Trace]:
    """``[row, t]`` log P(target_t | source, target_<t) of one teacher-forced pass (SOS + target[:-1]
    in; a decoder-only model: SOS + the source as its prompt + target[:-1]) over a batch of equally
    long sources, with ``interventions``; and row 0's trace of ``names``."""
    check_eval_mode(model)
    if not target_ids:
        raise DecodingError("no target tokens to score")
    cfg = model.config
    src, tgt, first = forced_pass(cfg, source_rows, target_ids, model_device(model))
    with torch.inference_mode():
        logits, trace = model.run_with_trace(src, tgt, names=tuple(names), interventions=checked_interventions(interventions, cfg))
    check_finite(logits, "for this target")
    logp = torch.log_softmax(logits.double(), -1)  # [row, fed, vocab]
    return logp[:, first + torch.arange(len(target_ids)), torch.tensor(list(target_ids))].cpu().numpy(), trace


def make_question(source: PreparedSource, output_ids: Sequence[int], tgt_tokenizer: TokenizerLike, config: TransformerConfig,
                  position: int | None = None, contrast: str | int | None = None, given: bool = False,
                  notices: Sequence[str] = ()) -> Question:
    """The ``Question`` of token ``position`` (0-based; default the last that is not EOS) of
    ``output_ids``; ``contrast`` a target piece or id. Errors speak 1-based, as on screen."""
    output_ids = tuple(int(i) for i in output_ids)
    if not output_ids:
        raise AttributionError("there is no output token to attribute")
    n = len(output_ids)
    if position is None:
        position = max((i for i, y in enumerate(output_ids) if y != config.eos_id), default=0)
    if not 0 <= position < n:
        raise AttributionError(f"no output position {position + 1}: the target has {n} token{'s' * (n != 1)} (1 to {n})")
    contrast_id = None if contrast is None else token_id(tgt_tokenizer, contrast)
    if contrast_id is not None and contrast_id == output_ids[position]:
        raise AttributionError(f"the contrast token {tgt_tokenizer.piece(contrast_id)!r} is the attributed token itself")
    input_ids = (config.bos_id, *output_ids[:-1])
    return Question(source, input_ids, tuple(tgt_tokenizer.pieces(input_ids)), output_ids, tuple(tgt_tokenizer.pieces(output_ids)),
                    given, position, contrast_id,
                    None if contrast_id is None else tgt_tokenizer.piece(contrast_id), tuple(notices))


def token_id(tokenizer: TokenizerLike, token: str | int) -> int:
    """The id of a target piece (exactly as in the vocabulary, or with the word-start mark ``▁``
    put in front; SOS/EOS/PAD/UNK by name; a number that is no piece: that id)."""
    if isinstance(token, int):
        if not 0 <= token < tokenizer.vocab_size:
            raise AttributionError(f"token id {token} is outside the target vocabulary (0 to {tokenizer.vocab_size - 1})")
        return token
    if not token.strip():
        raise AttributionError("the contrast token is empty: give a piece of the target vocabulary or its id")
    for piece in (token, f"▁{token}"):
        i = tokenizer.piece_to_id(piece)
        try:
            if tokenizer.piece(i) == piece:
                return i
        except TokenizerError:
            break
    if token.isdigit():
        return token_id(tokenizer, int(token))
    raise AttributionError(f"{token[:40]!r} is not a piece of the target vocabulary")


# -- the methods --------------------------------------------------------------------------------
def attribute(bundle: Bundle, source: str, method: str = "ig", target: str | None = None, position: int | None = None,
              contrast: str | int | None = None, n_steps: int = DEFAULT_STEPS, prefix: bool = False,
              max_len: int | None = None) -> Attribution:
    """Attribute token ``position`` (0-based) of the target of ``source`` by ``method``; see the module docstring."""
    q = question(bundle, source, target, position, contrast, max_len)
    return attribution_of(bundle.model, q, method, n_steps, prefix)


def attribute_all(bundle: Bundle, source: str, target: str | None = None, position: int | None = None,
                  contrast: str | int | None = None, n_steps: int = DEFAULT_STEPS, max_len: int | None = None) -> dict[str, Attribution]:
    """Every method on one question (the target decoded or forced once), by method name."""
    q = question(bundle, source, target, position, contrast, max_len)
    return {m: attribution_of(bundle.model, q, m, n_steps) for m in METHODS}


def attribution_of(model: Transformer, q: Question, method: str, n_steps: int = DEFAULT_STEPS, prefix: bool = False) -> Attribution:
    """``q`` attributed by ``method`` on ``model`` (``n_steps`` and ``prefix``: integrated gradients)."""
    check_eval_mode(model)
    if method == "grad":
        return gradient_x_input(model, q)
    if method == "ig":
        return integrated_gradients(model, q, n_steps, prefix)
    if method == "occlusion":
        return occlusion(model, q)
    raise AttributionError(f"unknown attribution method {method!r} (one of {', '.join(METHODS)})")


def gradient_x_input(model: Transformer, q: Question) -> Attribution:
    """sum_d df/de_id e_id for each source token (and each fed target token up to t)."""
    e_src, e_tgt = _embeddings(model, q)
    f, g_src, g_tgt = _gradients(model, q, e_src, e_tgt, torch.ones(1), torch.ones(1))
    scores = (g_src[0] * e_src.double()).sum(-1)  # [Ls]
    prefix = (g_tgt[0] * e_tgt.double()).sum(-1)[: q.position + 1]  # [t + 1]
    return Attribution(q, "grad", _frozen(scores), float(f[0]), prefix_scores=_frozen(prefix))


def integration_path(n_steps: int) -> torch.Tensor:
    """alpha_k = (k + 1/2) / n, k = 0 .. n - 1: the midpoints of n equal steps from 0 to 1."""
    if n_steps < 1:
        raise AttributionError(f"integrated gradients needs at least 1 step, not {n_steps}")
    return (torch.arange(n_steps, dtype=torch.float64) + 0.5) / n_steps


def integrated_gradients(model: Transformer, q: Question, n_steps: int = DEFAULT_STEPS, prefix: bool = False) -> Attribution:
    """e_i . mean_k df/de_i at alpha_k e (zero baseline, positions kept); rows 0 and 1 of the
    batch are the baseline and the input themselves, so f of both come from the same passes."""
    e_src, e_tgt = _embeddings(model, q)
    alphas = integration_path(n_steps)
    ones = torch.ones(n_steps, dtype=torch.float64)
    a_src = torch.cat([torch.tensor([0.0, 1.0], dtype=torch.float64), alphas, *([ones, ones[:1]] if prefix else [])])
    a_tgt = torch.cat([torch.ones(2 + n_steps, dtype=torch.float64), *([torch.zeros(1, dtype=torch.float64), alphas] if prefix else [])])
    f, g_src, g_tgt = _gradients(model, q, e_src, e_tgt, a_src, a_tgt)
    scores = (g_src[2:2 + n_steps].mean(0) * e_src.double()).sum(-1)  # [Ls]
    value, baseline = float(f[1]), float(f[0])
    out = Attribution(q, "ig", _frozen(scores), value, baseline, n_steps, float(scores.sum()) - (value - baseline))
    if not prefix:
        return out
    prefix_scores = (g_tgt[3 + n_steps:].mean(0) * e_tgt.double()).sum(-1)[: q.position + 1]  # [t + 1]
    return replace(out, prefix_scores=_frozen(prefix_scores), prefix_baseline=float(f[2 + n_steps]))


def occlusion(model: Transformer, q: Question) -> Attribution:
    """f(x) - f(x without token i): the L sources without one token as the rows of one pass."""
    ids = q.source.ids
    if len(ids) < 2:
        raise AttributionError("occlusion needs at least two source tokens: leaving out the only one leaves nothing to encode")
    value = float(_f(model, q, [list(ids)])[0])
    left_out = [list(ids[:i] + ids[i + 1:]) for i in range(len(ids))]  # [L, L - 1]
    rest = np.concatenate([_f(model, q, left_out[a:a + ROWS_PER_PASS]) for a in range(0, len(ids), ROWS_PER_PASS)])
    return Attribution(q, "occlusion", _frozen(value - rest), value)


# -- passes -------------------------------------------------------------------------------------
def _embeddings(model: Transformer, q: Question) -> tuple[torch.Tensor, torch.Tensor]:
    """The clean pass's source embeddings ``[Ls, d]`` and fed target embeddings (SOS + y[:-1])
    ``[Lt, d]``: ``encoder.embed.tokens`` and ``decoder.embed.tokens``, or a decoder-only model's
    ``decoder.embed.tokens`` split into its prompt's rows and the others."""
    src, tgt, n = forced_pass(model.config, [q.source.ids], q.output_ids, model_device(model))
    prompted = model.config.kind == "decoder-only"
    with torch.inference_mode():
        _, trace = model.run_with_trace(src, tgt, names=(TARGET_EMBED,) if prompted else (SOURCE_EMBED, TARGET_EMBED))
    fed = torch.from_numpy(np.array(trace[TARGET_EMBED]))
    if prompted:
        return fed[1:1 + n], torch.cat([fed[:1], fed[1 + n:]])
    return torch.from_numpy(np.array(trace[SOURCE_EMBED])), fed


def _embedding_patches(config: TransformerConfig, xs: torch.Tensor, xt: torch.Tensor) -> tuple[Patch, ...]:
    """The source embeddings ``xs`` ``[B, Ls, d]`` and fed target embeddings ``xt`` ``[B, Lt, d]``
    where the model reads them (a decoder-only model: the prompt's rows after SOS's)."""
    if config.kind == "decoder-only":
        return (Patch(TARGET_EMBED, torch.cat([xt[:, :1], xs, xt[:, 1:]], 1)),)
    return Patch(SOURCE_EMBED, xs), Patch(TARGET_EMBED, xt)


def _scored(logits: torch.Tensor, q: Question, first: int = 0) -> torch.Tensor:
    """f of each row: log P(y_t) (minus log P(y') with a contrast) at row ``first`` + t of ``logits``
    ``[B, Lt, V]`` (``first``: the row that predicts y_0, see ``forced_pass``).  # [B]"""
    check_finite(logits, "for this target")
    logp = torch.log_softmax(logits[:, first + q.position].double(), -1)  # [B, V]
    f = logp[:, q.token_id]
    return f if q.contrast_id is None else f - logp[:, q.contrast_id]


def _f(model: Transformer, q: Question, sources: list[list[int]]) -> np.ndarray:
    """f for each source of ``sources`` (all of one length), one pass, no gradient.  # [rows]"""
    src, tgt, first = forced_pass(model.config, sources, q.output_ids, model_device(model))
    with torch.inference_mode():
        return _scored(model(src, tgt), q, first).cpu().numpy()


def _gradients(model: Transformer, q: Question, e_src: torch.Tensor, e_tgt: torch.Tensor, a_src: torch.Tensor,
               a_tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Row r feeds a_src[r] e_src and a_tgt[r] e_tgt: (f ``[B]``, df/d(its source embeddings)
    ``[B, Ls, d]``, df/d(its target embeddings) ``[B, Lt, d]``), float64, ``ROWS_PER_PASS`` rows a pass."""
    parts = [_gradient_pass(model, q, e_src, e_tgt, a_src[a:a + ROWS_PER_PASS], a_tgt[a:a + ROWS_PER_PASS])
             for a in range(0, len(a_src), ROWS_PER_PASS)]
    f, g_src, g_tgt = zip(*parts)
    return torch.cat(f), torch.cat(g_src), torch.cat(g_tgt)


def _gradient_pass(model: Transformer, q: Question, e_src: torch.Tensor, e_tgt: torch.Tensor, a_src: torch.Tensor,
                   a_tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One batched pass of ``_gradients``: the embeddings are leaf tensors patched in where the
    model reads them (``_embedding_patches``); the model's parameters are untouched
    (``autograd.grad`` computes only what the two leaves need, and no ``.grad`` is written)."""
    device = model_device(model)
    with torch.inference_mode(False), torch.enable_grad():  # a caller's inference mode: its tensors cannot be saved for backward
        src, tgt, first = forced_pass(model.config, [q.source.ids] * len(a_src), q.output_ids, device)
        xs = (a_src.float()[:, None, None] * e_src[None]).to(device).requires_grad_(True)  # [B, Ls, d]
        xt = (a_tgt.float()[:, None, None] * e_tgt[None]).to(device).requires_grad_(True)  # [B, Lt, d]
        logits, _ = model.run_with_trace(src, tgt, names=(), interventions=_embedding_patches(model.config, xs, xt))
        f = _scored(logits, q, first)  # [B]
        g_src, g_tgt = torch.autograd.grad(f.sum(), (xs, xt))
    return f.detach().cpu(), g_src.double().cpu(), g_tgt.double().cpu()


def _frozen(a: torch.Tensor | np.ndarray) -> np.ndarray:
    out = np.array(a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else a, dtype=np.float64)
    out.flags.writeable = False
    return out


# -- as data ------------------------------------------------------------------------------------
def ranks(scores: np.ndarray) -> np.ndarray:
    """1 for the largest score (the token that raises f most), then 2, ...; ties in source order.  # [src]"""
    order = np.argsort(-np.asarray(scores), kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(1, len(order) + 1)
    return out


def figure_data(*results: Attribution) -> FigureData:
    """The scores along ``source``, one value array per method (the results of one question), with
    what they are of as extras (method-specific ones as ``<method>_<name>``): what ``attnviz attribute --out`` writes."""
    q = results[0].question
    if any(r.question is not q for r in results):
        raise ValueError("figure_data: the attributions are of different questions")
    extras: dict[str, np.ndarray] = {
        "source_ids": np.array(q.source.ids, dtype=np.int64), "target_ids": np.array(q.output_ids, dtype=np.int64),
        "target_pieces": np.array(q.output_pieces, dtype=str), "position": np.array(q.position + 1),
    }
    for r in results:
        extras |= _extras(r)
    methods = ", ".join(METHOD_TITLES[r.method] for r in results)
    title = f"attribution · {methods} of {q.quantity} at position {q.position + 1}"
    return FigureData(title, ("source",), {r.method: r.scores for r in results}, {"source": q.source.pieces}, extras)


def _extras(r: Attribution) -> dict[str, np.ndarray]:
    out = {f"{r.method}_value": np.array(r.value), f"{r.method}_rank": ranks(r.scores)}
    for name in ("baseline", "n_steps", "completeness_gap", "prefix_baseline"):
        if getattr(r, name) is not None:
            out[f"{r.method}_{name}"] = np.array(getattr(r, name))
    if r.prefix_scores is not None:
        out[f"{r.method}_prefix_scores"] = r.prefix_scores
        out[f"{r.method}_prefix_pieces"] = np.array(r.prefix_pieces, dtype=str)
    return out
