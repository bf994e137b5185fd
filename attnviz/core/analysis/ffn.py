"""The FFN view's data: FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position on its own.

For every layer of both stacks, the hidden activations ``max(0, x W1 + b1)`` ``[token, d_ff]``
recorded by the model (``<stack>.layers.<i>.ffn.hidden``), how many units are off, and the units
most active for one token. Models whose activation is GELU or SiLU (Marian) have no exact zeros:
for them a unit counts as off when its activation is ≤ 0, and the labels say so. The model's FFN
form (:class:`FfnForm`: plain or gated, its activation, biases or none) writes the formula; a
gated FFN (T5 v1.1: (act(x W1) ⊙ x W_up) W2) also records its gate act(x W1) (``ffn.gate``),
and its units are off where the gate is.

The FFN's role (:func:`ffn_roles_for`, which runs the model: a worker's job): attention's output
is a weighted sum of value rows; the FFN is the non-linear part, and one set of weights acts on
every position alone. Per layer, the pre-activations x W1 + b1, FFN(x_i) computed for each
position on its own (equal to the layer's output row i), and the model's next token and greedy
translation with that layer's FFN removed (:class:`RemoveFfn`: its output set to 0, so the
sublayer leaves only the residual). No Qt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.core.decoding.result import model_device
from attnviz.core.decoding.session import DecodingSession, forced_first_of
from attnviz.core.model.interventions import InterventionError
from attnviz.core.model.sites import ffn_sublayer, n_layers

ACTIVATION_NAMES = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU", "silu": "SiLU"}  # gelu_tanh: GELU's tanh approximation
STACKS = ("encoder", "decoder")


def hidden_name(stack: str, layer: int) -> str:
    """The trace name of a layer's FFN hidden activations, e.g. ``encoder.layers.0.ffn.hidden``."""
    return f"{stack}.layers.{layer}.ffn.hidden"


def gate_name(stack: str, layer: int) -> str:
    """The trace name of a gated FFN's gate act(x W1), e.g. ``decoder.layers.0.ffn.gate``."""
    return f"{stack}.layers.{layer}.ffn.gate"


def output_name(stack: str, layer: int) -> str:
    """The trace name of a layer's FFN output FFN(x) ``[pos, d_model]``, e.g. ``decoder.layers.1.ffn.output``."""
    return f"{stack}.layers.{layer}.ffn.output"


def input_name(config, stack: str, layer: int) -> str:
    """The trace name of the x a layer's FFN reads: the output of the norm before it (post-norm:
    the previous sublayer's Norm(x + Sublayer(x)); pre-norm: its own Norm(x))."""
    j = ffn_sublayer(config, stack)
    return f"{stack}.layers.{layer}.norm{j - 1 if config.norm_placement == 'post' else j}.output"


def stack_of(kind: str) -> str:
    """The stack a selection's kind points into (cross-attention sits in the decoder)."""
    return "encoder" if kind == "encoder" else "decoder"


def off_share(hidden: np.ndarray, activation: str) -> float:
    """The share of units that are off: exact zeros after ReLU; ≤ 0 after GELU or SiLU."""
    h = np.asarray(hidden)
    if h.size == 0:
        return float("nan")
    off = h == 0.0 if activation == "relu" else h <= 0.0
    return float(np.mean(off))


def off_label(activation: str, gate: str = "max(0, xW₁ + b₁)") -> str:
    """What :func:`off_share` counts, in words (``gate``: what the activation makes, :attr:`FfnForm.gate_text`)."""
    if activation == "relu":
        return f"ReLU sparsity: share of exact zeros in {gate}"
    return f"share of units ≤ 0 after {ACTIVATION_NAMES.get(activation, activation)} (it has no exact zeros)"


def top_units(row: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """(unit indices, activations) of the ``k`` most active units of one token's hidden row, largest first."""
    r = np.asarray(row, np.float64)
    order = np.argsort(-r, kind="stable")[: max(0, k)]
    return order, r[order]


@dataclass(frozen=True)
class FfnForm:
    """The form of a model's FFN (``config.ffn``, ``activation``, ``bias``): plain act(x W1 + b1) W2 + b2
    or gated (act(x W1) ⊙ x W_up) W2, and whether b1, b2 (b_up) are added."""

    gated: bool = False  # (act(x W1) ⊙ x W_up) W2 (T5 v1.1); false: act(x W1) W2
    activation: str = "relu"  # "relu" | "gelu" | "gelu_tanh" | "silu"
    bias: bool = True  # false: no biases (T5)

    @classmethod
    def of(cls, config) -> FfnForm:
        return cls(config.ffn == "gated", config.activation, config.bias)

    @property
    def gate_text(self) -> str:
        """What the activation makes: ``max(0, xW₁ + b₁)``, ``GELU(xW₁)``."""
        pre = "xW₁ + b₁" if self.bias else "xW₁"
        return f"max(0, {pre})" if self.activation == "relu" else f"{ACTIVATION_NAMES.get(self.activation, self.activation)}({pre})"

    @property
    def hidden_text(self) -> str:
        """The hidden units: the gate text, times ``xW_up`` when gated (``GELU(xW₁) ⊙ xW_up``)."""
        if not self.gated:
            return self.gate_text
        return f"{self.gate_text} ⊙ {'(xW_up + b_up)' if self.bias else 'xW_up'}"

    @property
    def formula(self) -> str:
        """``FFN(x) = max(0, xW₁ + b₁)W₂ + b₂``; T5 v1.1: ``FFN(x) = (GELU(xW₁) ⊙ xW_up)W₂``."""
        hidden = f"({self.hidden_text})" if self.gated else self.hidden_text
        return f"FFN(x) = {hidden}W₂{' + b₂' if self.bias else ''}"


@dataclass(frozen=True, eq=False)
class FfnLayer:
    stack: str  # "encoder" | "decoder"
    layer: int  # 0-based
    hidden: np.ndarray  # [token, d_ff] max(0, x W1 + b1); gated: act(x W1) * (x W_up)
    pieces: tuple[str, ...]  # one per token
    gate: np.ndarray | None = None  # [token, d_ff] act(x W1) of a gated FFN (None: a plain one)
    pre: np.ndarray | None = None  # [token, d_ff] x W1 + b1, before the activation (None: not computed)
    output: np.ndarray | None = None  # [token, d_model] the layer's FFN output as the model's pass recorded it
    alone: np.ndarray | None = None  # [token, d_model] FFN(x_i) computed for each position on its own

    @property
    def positionwise_error(self) -> float:
        """max |FFN(x_i) alone − the pass's output row i| (NaN: not computed): position-wise means 0 up to rounding."""
        if self.alone is None or self.output is None or not self.output.size:
            return float("nan")
        return float(np.max(np.abs(self.alone - self.output)))

    @property
    def activated(self) -> np.ndarray:
        """[token, d_ff] what the activation made: the gate of a gated FFN, else the hidden units."""
        return self.hidden if self.gate is None else self.gate

    def off_per_token(self, activation: str) -> np.ndarray:
        """[token] share of units off for each token."""
        a = self.activated
        off = a == 0.0 if activation == "relu" else a <= 0.0
        return off.mean(axis=1) if a.size else np.zeros(len(self.pieces))


@dataclass(frozen=True)
class Prediction:
    """The model's next token at one row: the most likely token and its probability, and the
    probability it gives the intact model's choice."""

    piece: str
    token_id: int
    prob: float
    intact_prob: float  # P(the intact model's top token)


ALL = "all"  # FfnRemoval's key for every FFN removed at once


def layer_key(stack: str, layer: int) -> str:
    """``encoder:0``: FfnRemoval's key of one layer's FFN (0-based)."""
    return f"{stack}:{layer}"


@dataclass(frozen=True, eq=False)
class FfnRemoval:
    """The model with one layer's FFN removed (its output 0: the sublayer leaves the residual only)
    against the intact model: the next token at ``row`` and the greedy translation, by
    :func:`layer_key` (``ALL``: every FFN removed)."""

    row: int  # the decoder row (0-based) whose next token is compared
    fed: str  # the piece fed at that row
    intact: Prediction
    removed: Mapping[str, Prediction]
    translation: str  # greedy, intact model
    translations: Mapping[str, str]  # greedy, with the FFN(s) removed


@dataclass(frozen=True, eq=False)
class FfnData:
    """Every FFN of the current pass (model order: encoder layers, then decoder layers)."""

    form: FfnForm
    layers: tuple[FfnLayer, ...]
    removal: FfnRemoval | None = None  # None: not computed (no model call), or no decoder row

    @property
    def activation(self) -> str:
        return self.form.activation

    def get(self, stack: str, layer: int) -> FfnLayer | None:
        return next((f for f in self.layers if f.stack == stack and f.layer == layer), None)

    def stacks(self) -> tuple[str, ...]:
        return tuple(s for s in STACKS if any(f.stack == s for f in self.layers))

    def off_shares(self, stack: str) -> np.ndarray:
        """[layer] the share of units off in each layer of ``stack``."""
        return np.array([off_share(f.activated, self.activation) for f in self.layers if f.stack == stack])


def ffn_data_for(current, config) -> FfnData:
    """The FFN activations of the current decoding (a ``DecodingResult``) of a model with ``config``;
    the decoder's only once a row has been fed."""
    form = FfnForm.of(config)
    layers = []
    for stack in STACKS:
        pieces = tuple(current.src_pieces) if stack == "encoder" else tuple(current.input_pieces)
        if not pieces:
            continue
        for i in range(n_layers(config, stack)):
            hidden = np.asarray(current.accumulated(hidden_name(stack, i)), np.float32)
            gate = np.asarray(current.accumulated(gate_name(stack, i)), np.float32) if form.gated else None
            layers.append(FfnLayer(stack, i, hidden, pieces, gate))
    return FfnData(form, tuple(layers))


# -- the FFN's role: runs the model (a worker's job) ----------------------------------------------
@dataclass(frozen=True)
class RemoveFfn:
    """An intervention: FFN(x) = 0 at the chosen layers (``(stack, layer)``, 0-based), so each of
    their FFN sublayers leaves only the residual: x + 0 (pre-norm), Norm(x + 0) (post-norm)."""

    layers: tuple[tuple[str, int], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(output_name(s, i) for s, i in self.layers)

    def check(self, config) -> RemoveFfn:
        for stack, layer in self.layers:
            count = n_layers(config, stack) if stack in STACKS else 0
            if not 0 <= layer < count:
                raise InterventionError(f"no {stack} layer {layer + 1} with an FFN: the model has {count}")
        return self

    def __call__(self, name: str, t: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        return torch.zeros_like(t)


def with_roles(f: FfnLayer, current, model) -> FfnLayer:
    """``f`` with its pre-activations and FFN(x_i) of each position computed alone, from the x
    the pass recorded and the layer's own W1, b1, W2, b2."""
    ffn = model.get_submodule(f"{f.stack}.layers.{f.layer}.ffn")
    w = ffn.linear1.weight
    x = torch.tensor(np.array(current.accumulated(input_name(model.config, f.stack, f.layer))), device=w.device, dtype=w.dtype)  # [token, d]
    with torch.inference_mode():
        pre = F.linear(x, w, ffn.linear1.bias)  # [token, d_ff]
        alone = [ffn(x[i : i + 1][None])[0, 0] for i in range(x.shape[0])]  # one position per call
    out = torch.stack(alone) if alone else x.new_zeros((0, w.shape[1]))
    return dataclasses.replace(f, pre=pre.float().cpu().numpy(), output=np.asarray(current.accumulated(output_name(f.stack, f.layer)), np.float32),
                               alone=out.float().cpu().numpy())


def _prediction(model, tokenizer, src: torch.Tensor, tgt: torch.Tensor, changes: tuple, intact_id: int | None) -> Prediction:
    """The next token after the last of ``tgt`` ``[1, rows]`` with ``changes`` applied."""
    with torch.inference_mode():
        _, trace = model.run_with_trace(src, tgt, names=["generator.probs"], interventions=changes)
    probs = trace["generator.probs"][-1]  # [vocab]
    top = int(np.argmax(probs))
    return Prediction(tokenizer.piece(top), top, float(probs[top]), float(probs[top if intact_id is None else intact_id]))


def _greedy(model, src_tokenizer, tgt_tokenizer, text: str, changes: tuple) -> str:
    """The greedy translation of ``text`` with ``changes`` applied (no trace recorded)."""
    with torch.inference_mode():
        run = DecodingSession(model, src_tokenizer, tgt_tokenizer, text, capture=False, interventions=changes,
                              forced_first_token=forced_first_of(tgt_tokenizer))
        run.run()
    return run.translation()


def ffn_removal(current, model, src_tokenizer, tgt_tokenizer, row: int) -> FfnRemoval:
    """Each layer's FFN removed in turn, then all of them: the next token at decoder ``row`` of
    the current pass (its fed prefix kept) and the greedy translation of its source."""
    device = model_device(model)
    src = torch.tensor([current.src_ids], device=device)
    tgt = torch.tensor([current.input_ids[: row + 1]], device=device)
    layers = [(s, i) for s in STACKS for i in range(n_layers(model.config, s))]
    changes = {layer_key(s, i): (RemoveFfn(((s, i),)),) for s, i in layers}
    changes[ALL] = (RemoveFfn(tuple(layers)),)
    intact = _prediction(model, tgt_tokenizer, src, tgt, (), None)
    text = current.source.text
    return FfnRemoval(
        row, current.input_pieces[row], intact,
        {k: _prediction(model, tgt_tokenizer, src, tgt, c, intact.token_id) for k, c in changes.items()},
        _greedy(model, src_tokenizer, tgt_tokenizer, text, ()),
        {k: _greedy(model, src_tokenizer, tgt_tokenizer, text, c) for k, c in changes.items()},
    )


def ffn_roles_for(current, model, src_tokenizer, tgt_tokenizer, row: int | None) -> FfnData:
    """:func:`ffn_data_for` with every layer's roles (:func:`with_roles`) and the removal of each
    FFN at decoder ``row`` (``None``, or a model without decoder layers: no removal)."""
    data = ffn_data_for(current, model.config)
    layers = tuple(with_roles(f, current, model) for f in data.layers)
    has_row = row is not None and n_layers(model.config, "decoder") and 0 <= row < len(current.input_ids)
    removal = ffn_removal(current, model, src_tokenizer, tgt_tokenizer, row) if has_row else None
    return FfnData(data.form, layers, removal)
