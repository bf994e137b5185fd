"""What a model is, in one table: its kind (encoder-decoder, encoder-only, decoder-only), sizes,
where it normalizes, its parameters per part, and its data and licence as its bundle records
them. No Qt; the window's model-info view renders :class:`ModelInfo`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnviz.core.analysis.figure_data import FigureData

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.model.transformer import Transformer

PARTS = ("source embedding", "encoder layers", "target embedding", "decoder layers", "output layer")


@dataclass(frozen=True)
class ModelInfo:
    """``rows``: (property, value) as shown; ``parameters``: part -> count (a shared matrix is
    counted once, in the first part that holds it); ``total``: every parameter once."""

    name: str
    kind: str
    rows: tuple[tuple[str, str], ...]
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
    enc, dec = model.encoder, model.decoder
    modules = {"source embedding": [enc.embed], "encoder layers": [m for n, m in enc.named_children() if n != "embed"],
               "target embedding": [dec.embed], "decoder layers": [m for n, m in dec.named_children() if n != "embed"],
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
    placement = "Norm(x + Sublayer(x)) (post-norm, as in the paper)" if cfg.norm_placement == "post" else "x + Sublayer(Norm(x)) (pre-norm)"
    parameters = parameters_per_part(bundle.model)
    rows = (
        ("kind", kind),
        ("layers", f"{cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder"),
        ("heads h", str(cfg.n_heads)),
        ("d_model", str(cfg.d_model)),
        ("d_k = d_v = d_model / h", str(cfg.d_k)),
        ("d_ff", str(cfg.d_ff)),
        ("normalization", f"{'LayerNorm' if cfg.norm == 'layer' else 'BatchNorm'}, {placement}"),
        ("FFN activation", cfg.activation),
        ("vocabularies", f"{cfg.src_vocab_size:,} source, {cfg.tgt_vocab_size:,} target pieces"),
        ("longest input", f"{cfg.max_len} tokens"),
        ("parameters", f"{sum(parameters.values()):,}"),
        ("data", str(data.get("name") or meta.get("source") or "not recorded")),
        ("licence", str(data.get("licence") or meta.get("licence") or "not recorded")),
        ("attribution", str(data.get("attribution") or meta.get("attribution") or "not recorded")),
    )
    return ModelInfo(bundle.name, kind, rows, parameters, sum(parameters.values()))


def figure_data(info: ModelInfo) -> FigureData:
    """Parameters per part, with the table's rows as extras."""
    import numpy as np

    extras = {"property": np.array([k for k, _ in info.rows]), "value": np.array([v for _, v in info.rows])}
    return FigureData(f"{info.name} · {info.kind} · {info.total:,} parameters", ("part",),
                      {"parameters": np.array([info.parameters[p] for p in PARTS], dtype=np.int64)}, {"part": PARTS}, extras)
