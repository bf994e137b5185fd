"""The finite-probe check every way in applies to weights (a bundle's load, a Hugging Face
import): finite weights so large that a forward pass overflows are refused, not shown."""

from __future__ import annotations

import torch

from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.transformer import Transformer


def overflow_problem(model: Transformer, state: dict[str, torch.Tensor]) -> str | None:
    """A one-line problem when a forward pass of ``model`` (eval mode) on a probe input gives NaN
    or infinite scores, naming the tensor of ``state`` with the largest values; ``None`` otherwise."""
    cfg = model.config
    src = torch.tensor([_probe_ids(cfg.src_vocab_size, cfg, min(cfg.max_len, 8))])  # [1, src]
    tgt = torch.tensor([[cfg.bos_id, *_probe_ids(cfg.tgt_vocab_size, cfg, min(cfg.max_len, 4) - 1)]])  # [1, tgt]
    with torch.inference_mode():
        logits = model(src, tgt) if model.decoder is not None else model.predict_masked(src)  # [1, tgt or src, vocab]
        if bool(torch.isfinite(logits).all()):
            return None
        name, value = max(((k, float(v.detach().abs().max())) for k, v in state.items() if v.numel()), key=lambda kv: kv[1])
    return f"the weights overflow: a test input gives NaN or infinite scores (largest value {value:.3g} in {name!r})"


def _probe_ids(vocab_size: int, cfg: TransformerConfig, n: int) -> list[int]:
    """``n`` ordinary token ids (UNK where the vocabulary has too few)."""
    special = {cfg.pad_id, cfg.unk_id, cfg.bos_id, cfg.eos_id}
    ids = [i for i in range(min(vocab_size, n + len(special))) if i not in special][:n]
    return ids + [cfg.unk_id] * (n - len(ids))
