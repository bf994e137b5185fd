"""What a model is, in one table: its kind (encoder-decoder, encoder-only, decoder-only), sizes,
where it normalizes, its parameters per part, and its data and licence as its bundle records
them. No Qt; the window's model-info view renders :class:`ModelInfo`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnviz.core.analysis.figure_data import FigureData, ScoreForm, attention_formula
from attnviz.core.model.config import NORM_NAMES

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.transformer import Transformer

PARTS = ("source embedding", "encoder layers", "target embedding", "decoder layers", "output layer")


@dataclass(frozen=True)
class InfoRow:
    """One property of the table: its name (a key the window names in its language), its value as
    an English template and what fills it (the window translates the template, then fills it)."""

    key: str
    template: str
    values: dict[str, object]

    @property
    def text(self) -> str:
        """The value in English: ``2 encoder + 2 decoder``."""
        return self.template.format(**self.values)


@dataclass(frozen=True)
class ModelInfo:
    """``rows``: the table's properties in order; ``parameters``: part -> count (a shared matrix is
    counted once, in the first part that holds it); ``total``: every parameter once; ``kind``: one
    of :func:`model_kind`'s texts (a key the window translates)."""

    name: str
    kind: str
    rows: tuple[InfoRow, ...]
    parameters: dict[str, int]
    total: int


def model_kind(n_encoder_layers: int, n_decoder_layers: int) -> str:
    if n_encoder_layers and n_decoder_layers:
        return "encoder-decoder"
    if n_encoder_layers:
        return "encoder-only (no decoder layers)"
    return "decoder-only (no encoder layers)" if n_decoder_layers else "no layers (embeddings and output layer only)"


def parameters_per_part(model: Transformer) -> dict[str, int]:
    """Parameters of each of :data:`PARTS`, a tensor shared by two parts counted in the first."""
    def embed(stack) -> list:
        return [stack.embed] if stack is not None else []  # a stack the model has not (GPT-2's encoder, BERT's decoder): none

    def layers(stack) -> list:
        return [m for n, m in stack.named_children() if n != "embed"] if stack is not None else []

    enc, dec = model.encoder, model.decoder
    modules = {"source embedding": embed(enc), "encoder layers": layers(enc), "target embedding": embed(dec), "decoder layers": layers(dec),
               "output layer": [model.generator]}
    seen: set[int] = set()
    out = {}
    for part in PARTS:
        tensors = [p for m in modules[part] for p in m.parameters() if id(p) not in seen]
        seen.update(id(p) for p in tensors)
        out[part] = sum(p.numel() for p in tensors)
    return out


def model_info(bundle: Bundle) -> ModelInfo:
    cfg, meta = bundle.config, bundle.meta or {}
    data = meta.get("data") if isinstance(meta.get("data"), dict) else {}
    kind = model_kind(cfg.n_encoder_layers, cfg.n_decoder_layers)
    placement = "{norm}, Norm(x + Sublayer(x)) (post-norm, as in the paper)" if cfg.norm_placement == "post" else "{norm}, x + Sublayer(Norm(x)) (pre-norm)"
    parameters = parameters_per_part(bundle.model)
    rows = (
        InfoRow("kind", kind, {}),
        InfoRow("layers", "{encoder} encoder + {decoder} decoder", {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers}),
        InfoRow("heads h", "{value}", {"value": cfg.n_heads}),
        InfoRow("d_model", "{value}", {"value": cfg.d_model}),
        _head_width(cfg),
        InfoRow("d_ff", "{value}", {"value": cfg.d_ff}),
        InfoRow("normalization", placement, {"norm": NORM_NAMES[cfg.norm]}),
        _positions(cfg),
        _scores(cfg),
        InfoRow("FFN", "act(x W₁ + b₁) W₂ + b₂" if cfg.ffn == "plain" else "gated: (act(x W₁) ⊙ x W_up) W₂", {}),
        InfoRow("FFN activation", "{value}", {"value": cfg.activation}),
        InfoRow("vocabularies", "{source:,} source, {target:,} target pieces", {"source": cfg.src_vocab_size, "target": cfg.tgt_vocab_size}),
        InfoRow("longest input", "{n} tokens", {"n": cfg.max_len}),
        InfoRow("parameters", "{n:,}", {"n": sum(parameters.values())}),
        _recorded("data", data.get("name") or meta.get("source")),
        _recorded("licence", data.get("licence") or meta.get("licence")),
        _recorded("attribution", data.get("attribution") or meta.get("attribution")),
    )
    return ModelInfo(bundle.name, kind, rows, parameters, sum(parameters.values()))


def _head_width(cfg: TransformerConfig) -> InfoRow:
    """d_k = d_v: d_model / h, or a head width of its own (mT5's ``head_dim``)."""
    if cfg.head_dim is None:
        return InfoRow("d_k = d_v", "{value} (d_model / h)", {"value": cfg.d_k})
    return InfoRow("d_k = d_v", "{value} (its own, not d_model / h; h·d_k = {inner})", {"value": cfg.d_k, "inner": cfg.n_heads * cfg.d_k})


def _positions(cfg: TransformerConfig) -> InfoRow:
    """How the model knows positions: a sinusoidal PE, a learned table, or a bias B on the scores."""
    if cfg.positional == "relative":
        return InfoRow("positions", "relative: a bias B on the scores per head, {buckets} distance buckets", {"buckets": cfg.relative_buckets})
    if cfg.positional == "learned":
        return InfoRow("positions", "a learned table of {n} positions added to the embeddings", {"n": cfg.max_len})
    return InfoRow("positions", "sinusoidal PE(pos, 2i) added to the embeddings", {})


#: The "scores" row's templates by (divides by √d_k, adds B): a note beside the formula.
SCORE_TEMPLATES = {
    (True, False): "{formula}",
    (False, False): "{formula}: no ÷√d_k (folded into the weights)",
    (True, True): "{formula}; B in the self-attentions only",
    (False, True): "{formula}: no ÷√d_k (folded into the weights); B in the self-attentions only",
}


def _scores(cfg: TransformerConfig) -> InfoRow:
    """What the softmax is taken of (a self-attention's, with its mask M): the views' own formula
    (``attention_formula``), and a note where the model does not divide by √d_k or adds B."""
    form = ScoreForm.of(cfg, "decoder")
    formula = attention_formula("decoder", form).removeprefix("A = ")
    return InfoRow("scores", SCORE_TEMPLATES[form.scaled, form.biased], {"formula": formula})


def _recorded(key: str, value: object) -> InfoRow:
    """What the bundle records of ``key`` (its own text, never a template), or that it records nothing."""
    return InfoRow(key, "{value}", {"value": str(value)}) if value else InfoRow(key, "not recorded", {})


def figure_data(info: ModelInfo) -> FigureData:
    """Parameters per part, with the table's rows as extras."""
    import numpy as np

    extras = {"property": np.array([r.key for r in info.rows]), "value": np.array([r.text for r in info.rows])}
    return FigureData(f"{info.name} · {info.kind} · {info.total:,} parameters", ("part",),
                      {"parameters": np.array([info.parameters[p] for p in PARTS], dtype=np.int64)}, {"part": PARTS}, extras)
