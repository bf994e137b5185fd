"""Direct logit attribution: one output logit split into what each part of the decoder wrote into
the residual stream (``attnviz logit-attribution``). No Qt.

The question. Row t of one teacher-forced pass (``SOS + y[:-1]`` fed, y the typed target + EOS
or the greedy output; a decoder-only model reads its prompt first: ``attribution.forced_pass``)
and one token w: by default the token row t produced, y_t, and t the last row. The quantity is
``f = logit_t(w)``, or ``logit_t(w) - logit_t(w')`` with a contrast token w'.

The pieces. With a pre-norm decoder the stream at row t before the final norm is a sum:
``x = e + sum_l (sum_h Z_h W^O_h + b^O)_self + (sum_h Z_h W^O_h + b^O)_cross + FFN_l`` with
e the first layer's input (token embedding + positional encoding, after the embedding's own norm
where there is one) and Z_h W^O_h head h's slice of the attention's output projection. Each piece
is a term: ``embed``, every head of every self- and cross-attention, each attention's W^O bias,
each FFN's output (its bias b2 inside).

Through the norm. The final norm with its scale held at this pass (:mod:`linear_norm`, as
TransformerLens's ``apply_ln_to_stack``: a piece less its own mean over d_model, divided by the
pass's std of the whole stream, times the gain) is linear, so each piece goes through it alone;
the norm's bias is a term of its own (``final_norm``). Each term is then projected on the output
row: ``term = L(piece) . u``, ``u = s (W_U[w] - W_U[w'])`` (s the output layer's scale of its
input, T5's d_model^-0.5; else 1). The terms sum to ``f - (b_U[w] - b_U[w'])``: ``gap`` measures
the difference and ``exact`` says it is within float rounding.

What is exact and what is held (``frozen_scales``, ``notes``):

* pre-norm with a LayerNorm or RMSNorm at the end: the sum is exact; one scale is held (the final
  norm's std at row t). A term is a piece's share at that scale, not what removing the piece would
  change (the std would move with it).
* BatchNorm (evaluation): its running statistics do not depend on the input, so the final norm is
  an affine map of the stream: the sum is exact and each term is the piece's own effect for any
  input (0 held scales); the running mean enters the norm's term.
* post-norm (a norm after every residual sum, none at the end): every piece goes, in order, through
  each norm after it (three per decoder layer), each held at its scale in this pass, and each norm's
  bias is a term (``norm:<layer>.<j>``) that goes through the norms after it in turn. The sum is
  still exact (each held map is the norm at this pass's input), but an early piece's term depends on
  every scale held between it and the output: the last sublayer's pieces have one held scale, the
  embedding 3L. It reads as a linearisation at this pass, not as the effect of removing the piece.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.analysis.attribution import AttributionError, Question, after_prompt, forced_pass, make_question, question, token_id
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.head_importance import head_label
from attnviz.core.analysis.linear_norm import LinearNorm, linear_norm, norm_statistic
from attnviz.core.analysis.residual import stack_sublayers
from attnviz.core.decoding.result import check_eval_mode, check_finite, model_device
from attnviz.core.model.sites import AttentionSite

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.decoding.result import DecodingResult
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.trace import Trace
    from attnviz.core.model.transformer import Transformer

GROUPS = ("embed", "head", "attn_bias", "ffn", "norm_bias")
TOLERANCE = 1e-4  # |gap| under which the terms are said to sum to the logit (float32 passes)


@dataclass(frozen=True)
class Term:
    """One piece of the stream: ``group`` of :data:`GROUPS`; ``kind`` (``decoder``/``cross``) of an
    attention's head or bias; ``layer`` and ``head`` 0-based; ``sublayer`` j of a post-norm's ``norm{j}``."""

    group: str
    kind: str | None = None
    layer: int | None = None
    head: int | None = None
    sublayer: int | None = None

    @property
    def label(self) -> str:
        """``embed``, ``cross:2:3`` (a head, 1-based), ``cross:2:bias``, ``ffn:2``, ``norm:2.1``, ``final_norm``."""
        if self.group == "head":
            return head_label(self.kind, self.layer, self.head)
        if self.group == "attn_bias":
            return f"{self.kind}:{self.layer + 1}:bias"
        if self.group == "ffn":
            return f"ffn:{self.layer + 1}"
        if self.group == "norm_bias":
            return "final_norm" if self.layer is None else f"norm:{self.layer + 1}.{self.sublayer}"
        return self.group


@dataclass(frozen=True, eq=False)
class LogitAttribution:
    """``values[k]`` is ``terms[k]``'s share of ``f`` (see the module docstring), float64."""

    question: Question  # the source, the tokens and the row t (``position``)
    token_id: int  # w
    token_piece: str
    terms: tuple[Term, ...]
    values: np.ndarray  # [term]
    logit: float  # f of the pass
    output_bias: float  # b_U[w] (- b_U[w'])
    placement: str  # "pre" | "post"
    frozen_scales: int  # norm scales held at this pass between the farthest piece and the output
    notes: tuple[str, ...]

    @property
    def position(self) -> int:
        return self.question.position

    @property
    def contrast_piece(self) -> str | None:
        return self.question.contrast_piece

    @property
    def quantity(self) -> str:
        contrast = "" if self.contrast_piece is None else f" - logit({self.contrast_piece})"
        return f"logit({self.token_piece}){contrast}"

    @property
    def gap(self) -> float:
        """``f - output_bias - sum(values)``: what the terms leave out (float rounding)."""
        return self.logit - self.output_bias - float(self.values.sum())

    @property
    def exact(self) -> bool:
        return abs(self.gap) <= TOLERANCE * max(1.0, abs(self.logit))

    def heads(self, kind: str) -> np.ndarray:
        """``[layer, head]`` the terms of ``kind``'s heads (empty where the model has none)."""
        rows = [(t.layer, t.head, v) for t, v in zip(self.terms, self.values) if t.group == "head" and t.kind == kind]
        if not rows:
            return np.zeros((0, 0))
        out = np.zeros((max(r[0] for r in rows) + 1, max(r[1] for r in rows) + 1))
        for layer, head, v in rows:
            out[layer, head] = v
        return out

    def others(self) -> list[tuple[Term, float]]:
        """Every term that is no head, in model order."""
        return [(t, float(v)) for t, v in zip(self.terms, self.values) if t.group != "head"]

    def ranked(self) -> list[tuple[Term, float]]:
        """Every term, the largest |value| first."""
        return sorted(((t, float(v)) for t, v in zip(self.terms, self.values)), key=lambda p: -abs(p[1]))


def not_applicable(config: TransformerConfig) -> str | None:
    """Why a model of ``config`` has no logit to attribute (one line), or None."""
    if config.kind == "encoder-only":
        return "an encoder-only model (BERT) has no decoder: it predicts masked tokens, with no decoder stream to split"
    return None


def logit_attribution(bundle: Bundle, source: str, target: str | None = None, position: int | None = None,
                      token: str | int | None = None, contrast: str | int | None = None, max_len: int | None = None) -> LogitAttribution:
    """The logit of ``token`` (default: the one produced) at row ``position`` (0-based; default the
    last) of the target of ``source`` (typed, else the greedy output), split into its terms."""
    why = not_applicable(bundle.config)
    if why:
        raise AttributionError(why)
    q = question(bundle, source, target, 0, None, max_len)
    tok = bundle.tgt_tokenizer
    asked = _asked(q, tok, bundle.config, position, token, contrast)
    wid = None if token is None else token_id(tok, token)
    return attribution_of(bundle.model, asked, None if wid is None else (wid, tok.piece(wid)))


def logit_attribution_for(current: DecodingResult, position: int | None, model: Transformer, tgt_tokenizer: Tokenizer,
                          contrast: str | int | None = None) -> LogitAttribution | None:
    """The window's view: the token row ``position`` (default: the last, the step on screen) of
    ``current`` produced, against ``contrast``; None before the first row."""
    if not current.output_ids or not_applicable(model.config):
        return None
    output_ids = after_prompt(model.config, current.src_ids, current.output_ids)
    if not output_ids:
        return None
    last = len(output_ids) - 1
    q = make_question(current.source, output_ids, tgt_tokenizer, model.config, last if position is None else min(position, last), contrast,
                      bool(getattr(current, "target", "")))
    return attribution_of(model, q)


def _asked(q: Question, tokenizer, config: TransformerConfig, position: int | None, token: str | int | None,
           contrast: str | int | None) -> Question:
    """``q`` at ``position`` (default the last row) against ``contrast`` (checked against ``token``, or the produced one)."""
    last = len(q.output_ids) - 1
    asked = make_question(q.source, q.output_ids, tokenizer, config, last if position is None else position, None, q.target_given, q.notices)
    if contrast is None:
        return asked
    cid = token_id(tokenizer, contrast)
    if cid == (asked.token_id if token is None else token_id(tokenizer, token)):
        raise AttributionError(f"the contrast token {tokenizer.piece(cid)!r} is the attributed token itself")
    return replace(asked, contrast_id=cid, contrast_piece=tokenizer.piece(cid))


def attribution_of(model: Transformer, q: Question, token: tuple[int, str] | None = None) -> LogitAttribution:
    """``q``'s logit of ``token`` (id, piece; default the token row t produced) split into its terms, one pass."""
    check_eval_mode(model)
    src, tgt, first = forced_pass(model.config, [q.source.ids], q.output_ids, model_device(model))
    with torch.inference_mode():
        logits, trace = model.run_with_trace(src, tgt, names=stream_names(model))
    check_finite(logits, "for this target")
    row = first + q.position
    wid, piece = (q.token_id, q.token_piece) if token is None else token
    terms, pieces, held = stream_pieces(model, trace, row)
    u, bias = _readout(model, wid, q.contrast_id)
    row_logits = logits[0, row].double().cpu()
    f = float(row_logits[wid] - (0.0 if q.contrast_id is None else row_logits[q.contrast_id]))
    values = pieces @ u
    values.flags.writeable = False
    return LogitAttribution(q, wid, piece, tuple(terms), values, f, bias, model.config.norm_placement, held, _notes(model.config, held))


def _readout(model: Transformer, token: int, contrast: int | None) -> tuple[np.ndarray, float]:
    """``u = s (W_U[w] - W_U[w'])`` ``[d]`` and ``b_U[w] - b_U[w']``."""
    gen = model.generator
    w = gen.weight.detach().double().cpu()
    b = gen.bias.detach().double().cpu() if gen.bias is not None else torch.zeros(w.shape[0], dtype=torch.float64)
    u, bias = w[token].clone(), float(b[token])
    if contrast is not None:
        u, bias = u - w[contrast], bias - float(b[contrast])
    return (u * float(getattr(gen, "output_scale", 1.0))).numpy(), bias


def _stream_start(model: Transformer) -> str:
    """The trace name of the decoder's first-layer input: the embedding (+ PE), after its own norm where it has one."""
    return "decoder.embed.norm.output" if getattr(model.decoder.embed, "norm", None) is not None else "decoder.embed.sum"


def _norms(model: Transformer) -> list[tuple[str, torch.nn.Module]]:
    """(trace prefix, module) of every norm a piece passes on its way out: a post-norm's sublayer norms, then the final norm."""
    out = []
    if model.config.norm_placement == "post":
        for s in stack_sublayers(model.config, "decoder"):
            prefix = f"decoder.layers.{s.layer}.norm{s.index}"
            out.append((prefix, model.get_submodule(prefix)))
    if model.decoder.final_norm is not None:
        out.append(("decoder.final_norm", model.decoder.final_norm))
    return out


def stream_names(model: Transformer) -> list[str]:
    """The trace names :func:`stream_pieces` reads."""
    names = [_stream_start(model), "generator.logits"]
    for s in stack_sublayers(model.config, "decoder"):
        names.append(f"decoder.layers.{s.layer}.ffn.output" if s.kind == "ffn" else AttentionSite(s.kind, s.layer).name("z"))
    return names + [f"{prefix}.{stat}" for prefix, module in _norms(model) if (stat := norm_statistic(module))]


def stream_pieces(model: Transformer, trace: Trace, row: int) -> tuple[list[Term], np.ndarray, int]:
    """The terms of the stream at ``row`` as the output layer reads it: (terms, their vectors
    ``[term, d]`` after every norm on the way, float64; how many held scales the first passed)."""
    post = model.config.norm_placement == "post"
    terms, vecs = [Term("embed")], [np.asarray(trace[_stream_start(model)][row], np.float64)]
    held = 0
    for s in stack_sublayers(model.config, "decoder"):
        new_terms, new_vecs = _sublayer_pieces(model, trace, row, s.kind, s.layer)
        terms += new_terms
        vecs += list(new_vecs)
        if post:
            prefix = f"decoder.layers.{s.layer}.norm{s.index}"
            vecs, held = _through(linear_norm(model.get_submodule(prefix), trace, prefix).at(row), vecs, held)
            terms.append(Term("norm_bias", layer=s.layer, sublayer=s.index))
    if model.decoder.final_norm is not None:
        vecs, held = _through(linear_norm(model.decoder.final_norm, trace, "decoder.final_norm").at(row), vecs, held)
        terms.append(Term("norm_bias"))
    return terms, np.stack(vecs), held


def _through(norm: LinearNorm, vecs: Sequence[np.ndarray], held: int) -> tuple[list[np.ndarray], int]:
    """Every vector through ``norm`` (one row), its offset appended: the norm's own term."""
    out = list(norm.linear(np.stack(vecs)))
    return out + [np.asarray(norm.offset[0], np.float64)], held + int(norm.held)


def _sublayer_pieces(model: Transformer, trace: Trace, row: int, kind: str, layer: int) -> tuple[list[Term], np.ndarray]:
    """One sublayer's output at ``row`` as its pieces: an FFN's output whole; an attention's
    ``Z_h W^O_h`` per head and its W^O bias."""
    if kind == "ffn":
        return [Term("ffn", layer=layer)], np.asarray(trace[f"decoder.layers.{layer}.ffn.output"][row], np.float64)[None]
    site = AttentionSite(kind, layer)
    attn = site.module(model)
    z = np.asarray(trace[site.name("z")][:, row], np.float64)  # [h, dk]
    w_o = attn.w_o.weight.detach().double().cpu().numpy()  # [d, h*dk]
    h, dk = z.shape
    per_head = np.einsum("hk,dhk->hd", z, w_o.reshape(w_o.shape[0], h, dk))  # [h, d]
    terms = [Term("head", kind, layer, i) for i in range(h)]
    if attn.w_o.bias is None:
        return terms, per_head
    bias = attn.w_o.bias.detach().double().cpu().numpy()[None]
    return terms + [Term("attn_bias", kind, layer)], np.concatenate([per_head, bias])


def _notes(config: TransformerConfig, held: int) -> tuple[str, ...]:
    """What is exact and what is held, in words (the module docstring's cases)."""
    exact = "exact: the terms sum to the logit less the output bias (see gap)"
    if held == 0:
        return (exact, "linear: no norm scale depends on the input (BatchNorm in evaluation uses its running statistics, "
                       "or no norm follows the stream): each term is the piece's own effect, and the running mean is in the norm's term")
    if config.norm_placement == "post":
        return (exact, f"held: every norm after a piece keeps its scale from this pass ({held} for the embedding, one for the last FFN); "
                       "a term is the piece's effect with those scales held (a linearisation at this pass), "
                       "not what removing the piece would change; each norm's bias is its own term")
    return (exact, "held: the final norm keeps its scale (1/std) from this pass; a term is the piece's share at that scale, "
                   "not what removing the piece would change")


def figure_data(result: LogitAttribution) -> FigureData:
    """Every term's value along ``term`` (labels as :attr:`Term.label`), with the logit, the output
    bias and the gap: what the view exports and ``attnviz logit-attribution`` summarises."""
    extras = {"logit": np.array(result.logit), "output_bias": np.array(result.output_bias), "gap": np.array(result.gap),
              "position": np.array(result.position + 1), "token_id": np.array(result.token_id),
              "frozen_scales": np.array(result.frozen_scales)}
    return FigureData(f"direct logit attribution · {result.quantity} at row {result.position + 1}", ("term",),
                      {"contribution": result.values}, {"term": tuple(t.label for t in result.terms)}, extras)
