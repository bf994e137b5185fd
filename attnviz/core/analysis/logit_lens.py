"""The logit lens: each decoder layer's output sent through the final norm and the output layer,
as if the decoder ended there.

The last layer's lens is the model's own prediction; earlier layers show how soon the final
choice takes shape. For each position (each row fed to the decoder: SOS, y1, …), the lens gives
every layer's top tokens with their probabilities, and the first layer from which the top token
is the final prediction and stays so in every later layer. No Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnviz.core.model.sites import ffn_sublayer, n_layers


def layer_output_name(config, layer: int) -> str:
    """The trace name of decoder layer ``layer``'s output: its last residual sum (pre-norm) or
    the norm after it (post-norm)."""
    last = ffn_sublayer(config, "decoder")
    prefix = f"decoder.layers.{layer}"
    return f"{prefix}.norm{last}.output" if config.norm_placement == "post" else f"{prefix}.residual{last}"


def lens_logits(model, hidden: np.ndarray) -> np.ndarray:
    """Logits ``[layer, position, vocab]`` of ``hidden`` ``[layer, position, d_model]``: the decoder's
    final norm (when the model has one) and the output layer, applied to each layer's output."""
    h = torch.as_tensor(np.asarray(hidden, np.float32))
    norm = model.decoder.final_norm
    with torch.inference_mode():
        if norm is not None:
            h = norm(h)
        return model.project(h).float().numpy()


def first_stable_layer(top1: np.ndarray) -> np.ndarray:
    """[position] the first layer (0-based) from which ``top1`` ``[layer, position]`` equals the
    last layer's entry in every later layer."""
    same = top1 == top1[-1:]
    stable = np.flip(np.logical_and.accumulate(np.flip(same, 0), axis=0), 0)  # [layer, position]
    return np.argmax(stable, axis=0)


@dataclass(frozen=True, eq=False)
class LogitLens:
    """top_ids/top_probs ``[layer, position, k]``: each layer's k most likely next tokens;
    final_prob ``[layer, position]``: the probability each layer gives the final prediction."""

    pieces: tuple[str, ...]  # the rows fed to the decoder (SOS first)
    top_ids: np.ndarray
    top_probs: np.ndarray
    top_pieces: tuple[tuple[tuple[str, ...], ...], ...]  # [layer][position][k]
    final_prob: np.ndarray
    first_layer: np.ndarray  # [position] 0-based
    final_norm: bool = True  # the output layer reads Norm(h_l); False: h_l itself (no norm after the decoder)

    @property
    def n_layers(self) -> int:
        return int(self.top_ids.shape[0])


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def logit_lens_for(current, model, tokenizer, k: int = 5) -> LogitLens | None:
    """The lens of every decoder layer at every row of the current decoding; ``None`` before
    the first row or for a model without decoder layers."""
    cfg = model.config
    rows = tuple(current.input_pieces)
    if not rows or n_layers(cfg, "decoder") == 0:
        return None
    hidden = np.stack([current.accumulated(layer_output_name(cfg, i)) for i in range(n_layers(cfg, "decoder"))])
    probs = softmax(lens_logits(model, hidden))  # [layer, position, vocab]
    k = min(k, probs.shape[-1])
    part = np.argpartition(-probs, k - 1, axis=-1)[..., :k]  # the k largest, unordered
    order = np.argsort(-np.take_along_axis(probs, part, axis=-1), axis=-1, kind="stable")
    top_ids = np.take_along_axis(part, order, axis=-1)  # [layer, position, k]
    top_probs = np.take_along_axis(probs, top_ids, axis=-1)
    final = top_ids[-1, :, 0]  # [position]
    final_prob = probs[:, np.arange(len(rows)), final]
    pieces = tuple(tuple(tuple(tokenizer.piece(int(i)) for i in row) for row in layer) for layer in top_ids)
    return LogitLens(rows, top_ids, top_probs.astype(np.float32), pieces, final_prob.astype(np.float32),
                     first_stable_layer(top_ids[..., 0]), bool(cfg.final_norm))
