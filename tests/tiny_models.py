"""Tiny tokenizers and random models shared by the tests (built in well under a second)."""

from __future__ import annotations

import functools

import torch

from attnviz.core import Transformer, TransformerConfig
from attnviz.core.data.tokenizer import Tokenizer

ZH = ["老师，您好！", "我是学生。", "他去学校了。", "今天天气很好。", "我喜欢吃苹果。", "你叫什么名字？", "我们一起去吧。", "这本书很有意思。"]
EN = ["Hello, teacher!", "I am a student.", "He went to school.", "The weather is nice today.", "I like eating apples.",
      "What is your name?", "Let's go together.", "This book is very interesting."]


@functools.cache
def tokenizers() -> tuple[Tokenizer, Tokenizer]:
    src = Tokenizer.train(ZH * 3, vocab_size=60, add_dummy_prefix=False)
    tgt = Tokenizer.train(EN * 3, vocab_size=80, model_type="bpe")
    return src, tgt


def random_model(norm: str = "layer", placement: str = "post", seed: int = 0, max_len: int = 40, d_model: int = 32,
                 n_heads: int = 4, **kw) -> Transformer:
    """A random (untrained) 2+2-layer model in eval mode; BatchNorm models get realistic running statistics."""
    src, tgt = tokenizers()
    torch.manual_seed(seed)
    cfg = TransformerConfig(src_vocab_size=src.vocab_size, tgt_vocab_size=tgt.vocab_size, d_model=d_model, n_heads=n_heads,
                            n_encoder_layers=2, n_decoder_layers=2, d_ff=2 * d_model, dropout=0.1, max_len=max_len,
                            norm=norm, norm_placement=placement, **kw)
    model = Transformer(cfg)
    if norm == "batch":
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(torch.randint(4, src.vocab_size, (4, 8)), torch.randint(4, tgt.vocab_size, (4, 6)))
    return model.eval()


NORM_VARIANTS = [dict(norm="layer", placement="post"), dict(norm="layer", placement="pre"), dict(norm="batch", placement="post")]


def random_batch(model, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Random source ids [2, 7] and target ids [2, 5] (none of them special) for ``model``, drawn from generator seed ``seed``."""
    g = torch.Generator().manual_seed(seed)
    c = model.config
    return torch.randint(4, c.src_vocab_size, (2, 7), generator=g), torch.randint(4, c.tgt_vocab_size, (2, 5), generator=g)
