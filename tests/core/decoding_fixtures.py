"""Tiny models and tokenizers for the decoding, analysis and trace-command tests (built in well under a second,
except ``reverse_bundle``, trained for a few seconds on the reverse task so that it really ends with EOS)."""

from __future__ import annotations

import functools
import random

import torch

from attnviz.core import Transformer, TransformerConfig
from attnviz.core.bundle import Bundle, BundleError, load_bundle
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.paths import models_dir

from tiny_models import random_model, tokenizers


def random_bundle(**kw) -> Bundle:
    src, tgt = tokenizers()
    return Bundle(random_model(**kw), src, tgt, {"name": "tiny-random"})


@functools.cache
def reverse_bundle() -> Bundle:
    """A model that reverses digit strings ("3 1 4" -> "4 1 3"): the bundled ``models/reverse`` when
    it is there, otherwise a 1+1-layer stand-in trained here for a few seconds."""
    try:
        return load_bundle(models_dir() / "reverse")
    except BundleError:
        return train_reverse()


def train_reverse() -> Bundle:
    """A 1+1-layer model trained briefly to reverse strings of 3-6 digits."""
    rng = random.Random(0)
    pairs = []
    for _ in range(400):
        seq = [rng.choice("0123456789") for _ in range(rng.randint(3, 6))]
        pairs.append((" ".join(seq), " ".join(seq[::-1])))
    tok = Tokenizer.train([s for s, _ in pairs], vocab_size=20, model_type="word")
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=32, n_heads=2,
                            n_encoder_layers=1, n_decoder_layers=1, d_ff=64, dropout=0.0, max_len=16, norm_placement="pre")
    model = Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = [(tok.encode(s), tok.encode(t)) for s, t in pairs]
    model.train()
    for _ in range(250):
        batch = rng.sample(data, 32)
        ls, lt = max(len(s) for s, _ in batch), max(len(t) for _, t in batch) + 1
        src = torch.zeros(32, ls, dtype=torch.long)
        tin = torch.zeros(32, lt, dtype=torch.long)
        lab = torch.zeros(32, lt, dtype=torch.long)
        for r, (s, t) in enumerate(batch):
            src[r, : len(s)] = torch.tensor(s)
            tin[r, : len(t) + 1] = torch.tensor([cfg.bos_id, *t])
            lab[r, : len(t) + 1] = torch.tensor([*t, cfg.eos_id])
        logits = model(src, tin)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1), ignore_index=0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return Bundle(model, tok, tok, {"name": "tiny-reverse", "final_loss": loss.item()})
