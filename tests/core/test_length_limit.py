"""A sentence is cut at the open model's own limit (its position table), and the notice says which."""

from __future__ import annotations

import pytest
import torch

from attnviz.core import Transformer, TransformerConfig
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.teacher_forcing import teacher_forced

from tiny_models import random_model, tokenizers

UNIT = "我是学生。"


def long_source(at_least: int) -> tuple[str, int]:
    """A source of at least ``at_least`` tokens, and its length in tokens."""
    src, _ = tokenizers()
    per_unit = len(src.encode(UNIT))
    text = UNIT * (at_least // per_unit + 2)
    return text, len(src.encode(text))


def decode(model, source: str) -> DecodingSession:
    src, tgt = tokenizers()
    return DecodingSession(model, src, tgt, source, max_len=2)


@pytest.mark.parametrize("max_len", [40, 600])
def test_a_longer_source_is_cut_at_the_position_table(max_len):
    text, n = long_source(max_len + 1)
    s = decode(random_model(max_len=max_len), text)
    assert len(s.src_ids) == max_len < n
    (notice,) = [n_ for n_ in s.notices if "truncated" in n_]
    assert notice == f"source truncated to {max_len} of {n} tokens: the model's position table holds {max_len} positions"


def test_a_source_within_the_table_is_kept_whole_past_128_tokens():
    text, n = long_source(520)
    assert 128 < n <= 600
    s = decode(random_model(max_len=600), text)
    assert len(s.src_ids) == n and not any("truncated" in x for x in s.notices)
    s.step()
    assert s.attention("cross", 0).shape == (4, 1, n)


def test_a_learned_table_and_relative_positions_say_where_their_limit_comes_from():
    text, n = long_source(41)
    learned = decode(random_model(max_len=40, positional="learned"), text)
    assert f"truncated to 40 of {n} tokens: the model's position table holds 40 positions" in learned.notices[-1]
    relative = decode(random_model(max_len=40, positional="relative", scale_scores=False), text)
    assert relative.notices[-1].endswith("the model's max_len is 40 (its relative positions have no table)")


def test_a_longer_target_is_cut_and_says_so():
    src, tgt = tokenizers()
    target = "I am a student. " * 20
    n = len(tgt.encode(target.strip()))
    forced = teacher_forced(random_model(max_len=40), src, tgt, UNIT, target)
    assert len(forced.input_ids) == 40
    assert f"target truncated to 39 of {n} tokens (SOS takes a position): the model's position table holds 40 positions" in forced.notices


def test_a_decoder_only_prompt_leaves_a_position_for_sos():
    src, _ = tokenizers()
    vocab = src.vocab_size
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=16, n_heads=2, n_encoder_layers=0,
                            n_decoder_layers=2, d_ff=32, dropout=0.0, max_len=40, kind="decoder-only")
    text, n = long_source(41)
    s = DecodingSession(Transformer(cfg).eval(), src, src, text)
    assert len(s.src_ids) == 39 and len(s.tgt_ids) == 40  # SOS and the 39 prompt tokens fill the table
    assert f"source truncated to 39 of {n} tokens (SOS takes a position): the model's position table holds 40 positions" in s.notices
