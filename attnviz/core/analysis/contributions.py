"""Source and target contributions: for every output token, the share of its prediction that
comes from the source (through cross-attention) against the target prefix (through the decoder's
self-attention), per decoder layer and overall (``attnviz contributions``). No Qt.

What is implemented: ALTI+ (Ferrando, Gállego, Alastruey, Escolano, Costa-jussà 2022, "Towards
Opening the Black Box of Neural Machine Translation: Source and Target Contributions to the Model
Predictions"), which extends ALTI (Ferrando, Gállego, Costa-jussà 2022, "Measuring the Mixing of
Contextual Information in the Transformer") to the encoder-decoder, on one teacher-forced pass
(``SOS + y[:-1]`` fed; y the typed target + EOS or the greedy output).

1. Decomposition of an attention block. With A^h the attention weights of head h, v^h_j its value
   of input j (``<site>.v``: the value bias and, in a pre-norm model, the norm before the block
   included: both act on x_j alone) and W^O_h its slice of the output projection, the block's
   output at position i, with its residual, is ``y_i = sum_j T_i(x_j) + b``, where

   * self-attention: ``T_i(x_j) = sum_h A^h_ij v^h_j W^O_h + [i = j] x_i``, j over the block's own
     positions (the encoder's source tokens, the decoder's fed target tokens);
   * cross-attention: ``T_i(e_j) = sum_h A^h_ij v^h_j W^O_h`` for each encoder output e_j, and one
     more input, the residual, ``T_i(x_i) = x_i``: the decoder's own stream.

   x_i is the stream entering the block (``residual{j}`` less the block's output). The bias b
   (W^O's, and with post-norm the norm's beta) belongs to no input: it is in y_i and in no T_i.

2. Norms. Pre-norm: y_i is the residual sum itself (``residual{j}``), no norm after it. Post-norm:
   ``y_i = Norm(...)`` (``norm{j}.output``) and each T_i(x_j) is put through the norm's linear part
   with the scale held at this pass (ALTI's treatment of LayerNorm: ``(v - mean_d v) / std_i *
   gamma``; :mod:`linear_norm`, which also covers RMSNorm and BatchNorm).

3. Contribution (ALTI's Manhattan-distance score): ``d_ij = ||y_i - T_i(x_j)||_1`` and
   ``c_ij = max(0, ||y_i||_1 - d_ij) / sum_k max(0, ||y_i||_1 - d_ik)``: rows sum to 1. A masked
   key contributes 0 (T_i = 0, so d = ||y_i||_1). A row whose every score is 0 (never seen) gives
   its whole weight to the residual.

4. Rollout (ALTI+). The FFN works on each position alone and mixes nothing: contributions pass
   through it unchanged. The encoder's ``E = C^enc_L ... C^enc_1`` (``[s, s]``; rows sum to 1) says
   what each encoder output holds of each source token. Each decoder position carries
   ``R = [R_src | R_tgt]`` (``[t, s + t]``) over the source tokens and the fed target tokens,
   starting at ``[0 | I]``; per decoder layer l:

   * self-attention: ``R <- C^self_l R``;
   * cross-attention, ``C^cross_l = [S | r]`` (``S`` ``[t, s]`` the encoder outputs, ``r`` ``[t]``
     the residual): ``R_src <- S E + diag(r) R_src``, ``R_tgt <- diag(r) R_tgt``.

   Rows of R sum to 1 after every layer. The source share of output token i is ``sum_k R_src[i, k]``
   after the last layer, in [0, 1]; the target prefix's share is 1 minus it.

Per layer, two readings: ``layer_source[l, i]`` = ``sum_k S[i, k]``, what layer l's cross-attention
block alone takes from the encoder against its residual; ``rolled_source[l, i]``, the source share
of R after layers 1..l (the last is the overall share).

Simplifications: attention weights are taken as they are (not differentiated), the norms' scales
are held at this pass (post-norm), and biases are attributed to no token (as ALTI does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.analysis.attribution import after_prompt, forced_pass, make_question, question
from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.analysis.linear_norm import linear_norm, norm_statistic
from attnviz.core.decoding.result import check_eval_mode, model_device
from attnviz.core.model.sites import AttentionSite, attention_sites, n_layers
from attnviz.errors import AttnvizError

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.decoding.result import DecodingResult, PreparedSource
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.transformer import Transformer

SUBLAYER = {"encoder": 1, "decoder": 1, "cross": 2}  # the residual{j}/norm{j} of each attention kind


class ContributionsError(AttnvizError, ValueError):
    """A model or a sentence the shares cannot be computed for; one line."""


@dataclass(frozen=True, eq=False)
class Contributions:
    """The contribution matrices of one pass (rows sum to 1) and their rollout. ``t`` fed rows (row
    i predicts ``output_pieces[i]``), ``s`` source tokens."""

    source_pieces: tuple[str, ...]
    input_pieces: tuple[str, ...]  # SOS + y[:-1]
    output_pieces: tuple[str, ...]  # y + EOS, or the greedy output
    target_given: bool
    encoder: np.ndarray  # [layer, s, s]
    self_attn: np.ndarray  # [layer, t, t]
    cross: np.ndarray  # [layer, t, s + 1]; last column: the residual
    rollout: np.ndarray  # [layer, t, s + t]: R after layers 1..l, source columns first
    notices: tuple[str, ...] = ()

    @property
    def n_source(self) -> int:
        return len(self.source_pieces)

    @property
    def layer_source(self) -> np.ndarray:
        """``[layer, t]``: each layer's cross-attention block alone, the encoder's share against the residual."""
        return self.cross[:, :, : self.n_source].sum(-1)

    @property
    def rolled_source(self) -> np.ndarray:
        """``[layer, t]``: the source share after layers 1..l."""
        return self.rollout[:, :, : self.n_source].sum(-1)

    @property
    def source_share(self) -> np.ndarray:
        """``[t]``: each output token's share from the source (after the last layer)."""
        return self.rolled_source[-1]

    @property
    def target_share(self) -> np.ndarray:
        return 1.0 - self.source_share

    @property
    def mean_source_share(self) -> float:
        return float(self.source_share.mean())


def not_applicable(config: TransformerConfig) -> str | None:
    """Why a model of ``config`` has no source and target shares (one line), or None."""
    if config.kind == "encoder-only":
        return "an encoder-only model (BERT) has no decoder: it predicts no target tokens to share between source and target"
    if not n_layers(config, "cross"):
        return "a decoder-only model (GPT-2) has no cross-attention: its prompt and output are one sequence, so a source share is undefined"
    return None


def contributions(bundle: Bundle, source: str, target: str | None = None, max_len: int | None = None) -> Contributions:
    """The shares of every token of the typed ``target`` (+ EOS) or of the greedy translation of ``source``."""
    why = not_applicable(bundle.config)
    if why:
        raise ContributionsError(why)
    q = question(bundle, source, target, 0, None, max_len)
    return contributions_of(bundle.model, q.source, q.output_ids, q.input_pieces, q.output_pieces, q.target_given, q.notices)


def contributions_for(current: DecodingResult, model: Transformer, tgt_tokenizer: Tokenizer) -> Contributions | None:
    """The window's view: the tokens of ``current`` so far; None before the first, or where :func:`not_applicable`."""
    if not_applicable(model.config) or not current.output_ids:
        return None
    output_ids = after_prompt(model.config, current.src_ids, current.output_ids)
    q = make_question(current.source, output_ids, tgt_tokenizer, model.config, 0)
    return contributions_of(model, current.source, output_ids, q.input_pieces, q.output_pieces, bool(getattr(current, "target", "")))


def contributions_of(model: Transformer, source: PreparedSource, output_ids, input_pieces, output_pieces, given: bool = False,
                     notices=()) -> Contributions:
    """One teacher-forced pass over ``output_ids`` after ``source``, decomposed (see the module docstring)."""
    check_eval_mode(model)
    src, tgt, _ = forced_pass(model.config, [source.ids], output_ids, model_device(model))
    with torch.inference_mode():
        _, trace = model.run_with_trace(src, tgt, names=contribution_names(model))
    per_kind = {kind: [block_contributions(model, trace, site) for site in attention_sites(model.config, kind)]
                for kind in ("encoder", "decoder", "cross")}
    s = len(source.ids)
    enc = np.stack(per_kind["encoder"]) if per_kind["encoder"] else np.zeros((0, s, s))
    roll = rollout(enc, np.stack(per_kind["decoder"]), np.stack(per_kind["cross"]))
    return Contributions(tuple(source.pieces), tuple(input_pieces), tuple(output_pieces), given, _frozen(enc),
                         _frozen(np.stack(per_kind["decoder"])), _frozen(np.stack(per_kind["cross"])), _frozen(roll), tuple(notices))


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64)
    a.flags.writeable = False
    return a


def contribution_names(model: Transformer) -> list[str]:
    """The trace names :func:`block_contributions` reads, every attention site of the model."""
    post = model.config.norm_placement == "post"
    names = []
    for site in attention_sites(model.config):
        j = SUBLAYER[site.kind]
        names += [site.name("weights"), site.name("v"), site.name("output"), f"{site.layer_path}.residual{j}"]
        if post:
            norm = f"{site.layer_path}.norm{j}"
            stat = norm_statistic(model.get_submodule(norm))
            names += [f"{norm}.output"] + ([f"{norm}.{stat}"] if stat else [])
    return names


def transformed_vectors(model: Transformer, trace: Mapping[str, np.ndarray], site: AttentionSite) -> tuple[np.ndarray, np.ndarray]:
    """(T ``[q, k, d]``: T_i(x_j) of step 1, through the norm's linear part with post-norm; y ``[q, d]``)."""
    attn = site.module(model)
    weights = np.asarray(trace[site.name("weights")], np.float64)  # [h, q, k]
    v = np.asarray(trace[site.name("v")], np.float64)  # [h, k, dk]
    h, _, dk = v.shape
    w_o = attn.w_o.weight.detach().double().cpu().numpy()  # [d, h*dk]
    value_out = np.einsum("hkc,dhc->hkd", v, w_o.reshape(w_o.shape[0], h, dk))  # v^h_j W^O_h  [h, k, d]
    t = np.einsum("hqk,hkd->qkd", weights, value_out)  # [q, k, d]
    j = SUBLAYER[site.kind]
    summed = np.asarray(trace[f"{site.layer_path}.residual{j}"], np.float64)  # [q, d]
    x = summed - np.asarray(trace[site.name("output")], np.float64)  # the stream entering the block
    if site.kind == "cross":
        t = np.concatenate([t, x[:, None, :]], axis=1)  # the residual: one more input
    else:
        t[np.arange(len(x)), np.arange(len(x))] += x
    if model.config.norm_placement != "post":
        return t, summed
    prefix = f"{site.layer_path}.norm{j}"
    norm = linear_norm(model.get_submodule(prefix), trace, prefix)
    t = norm.linear(t.transpose(1, 0, 2)).transpose(1, 0, 2)  # rows (queries) second to last for the per-row scale
    return t, np.asarray(trace[f"{prefix}.output"], np.float64)


def alti_scores(t: np.ndarray, y: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """``c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1)``, rows normalised to 1; ``t`` ``[q, k, d]``,
    ``y`` ``[q, d]``; a row of zeros takes ``fallback`` ``[q, k]`` (its residual) instead."""
    size = np.abs(y).sum(-1)  # [q]
    distance = np.abs(y[:, None, :] - t).sum(-1)  # [q, k]
    c = np.maximum(0.0, size[:, None] - distance)
    total = c.sum(-1, keepdims=True)
    return np.where(total > 0, c / np.where(total > 0, total, 1.0), fallback)


def block_contributions(model: Transformer, trace: Mapping[str, np.ndarray], site: AttentionSite) -> np.ndarray:
    """``C`` of one attention block: ``[q, k]`` (self-attention) or ``[q, s + 1]`` (cross-attention, the residual last)."""
    t, y = transformed_vectors(model, trace, site)
    q, k = t.shape[:2]
    fallback = np.zeros((q, k))
    if site.kind == "cross":
        fallback[:, -1] = 1.0
    else:
        fallback[np.arange(q), np.arange(q)] = 1.0
    return alti_scores(t, y, fallback)


def rollout(encoder: np.ndarray, self_attn: np.ndarray, cross: np.ndarray) -> np.ndarray:
    """``[layer, t, s + t]``: R after each decoder layer (step 4 of the module docstring), from the
    encoder's ``[layer, s, s]``, the decoder's ``[layer, t, t]`` and the cross ``[layer, t, s + 1]`` matrices."""
    s, t = cross.shape[2] - 1, cross.shape[1]
    e = np.eye(s)
    for c in encoder:
        e = c @ e
    r = np.concatenate([np.zeros((t, s)), np.eye(t)], axis=1)  # [t, s + t]
    out = []
    for c_self, c_cross in zip(self_attn, cross):
        r = c_self @ r
        keep = c_cross[:, s:]  # [t, 1] the residual's share
        r = np.concatenate([c_cross[:, :s] @ e + keep * r[:, :s], keep * r[:, s:]], axis=1)
        out.append(r)
    return np.stack(out)


def figure_data(result: Contributions) -> FigureData:
    """The source share of every output token, per layer (its cross-attention alone, and rolled up
    to it) and overall: what the view exports."""
    layers = tuple(str(i + 1) for i in range(result.cross.shape[0]))
    values = {"layer_source": result.layer_source, "rolled_source": result.rolled_source}
    extras = {"source_share": result.source_share, "target_share": result.target_share,
              "mean_source_share": np.array(result.mean_source_share)}
    return FigureData("source contributions (ALTI+) · share of each prediction from the source", ("layer", "token"),
                      values, {"layer": layers, "token": result.output_pieces}, extras)
