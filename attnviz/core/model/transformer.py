"""The encoder-decoder Transformer, with ``encode`` / ``decode`` / ``generator`` kept apart so a
front end can encode once and step the decoder one position at a time (KV cache)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn

from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.modules import FeedForward, MultiHeadAttention, look_ahead_mask, make_norm, padding_mask, sinusoidal_encoding
from attnviz.core.model.trace import Recorder, Trace

KV = tuple[torch.Tensor, torch.Tensor]


class Sublayer(nn.Module):
    """Residual + norm around one sublayer: post ``Norm(x + Sublayer(x))`` or pre ``x + Sublayer(Norm(x))``."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.post = config.norm_placement == "post"
        self.norm = make_norm(config.norm, config.d_model, config.norm_eps, config.bn_momentum)
        self.dropout = nn.Dropout(config.dropout)


class EncoderLayer(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout)
        self.ffn = FeedForward(config.d_model, config.d_ff, config.dropout)
        self.sub1 = Sublayer(config)
        self.sub2 = Sublayer(config)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, valid: torch.Tensor, rec: Recorder | None = None, name: str = "") -> torch.Tensor:
        x = _attn_sublayer(self.sub1, 1, self.self_attn, x, None, mask, valid, rec, name, "self_attn")[0]
        return _ffn_sublayer(self.sub2, 2, self.ffn, x, valid, rec, name)


class DecoderLayer(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout)
        self.cross_attn = MultiHeadAttention(config.d_model, config.n_heads, config.dropout)
        self.ffn = FeedForward(config.d_model, config.d_ff, config.dropout)
        self.sub1 = Sublayer(config)
        self.sub2 = Sublayer(config)
        self.sub3 = Sublayer(config)

    def forward(
        self,
        x: torch.Tensor,  # [B, Lt, d]
        memory: torch.Tensor,  # [B, Ls, d]
        self_mask: torch.Tensor | None,  # [B, 1, Lt, Lt] or None (a cached step sees no future)
        cross_mask: torch.Tensor,  # [B, 1, 1, Ls]
        valid: torch.Tensor,  # [B, Lt]
        rec: Recorder | None = None,
        name: str = "",
        past_kv: KV | None = None,
        cross_kv: KV | None = None,
    ) -> tuple[torch.Tensor, KV]:
        x, self_kv = _attn_sublayer(self.sub1, 1, self.self_attn, x, None, self_mask, valid, rec, name, "self_attn", past_kv=past_kv)
        x = _attn_sublayer(self.sub2, 2, self.cross_attn, x, memory, cross_mask, valid, rec, name, "cross_attn", static_kv=cross_kv)[0]
        return _ffn_sublayer(self.sub3, 3, self.ffn, x, valid, rec, name), self_kv


def _attn_sublayer(sub, j, attn, x, memory, mask, valid, rec, name, kind, past_kv=None, static_kv=None):
    cross = memory is not None
    n = f"{name}.{kind}" if rec is not None else ""
    if sub.post:
        h = x
        a, kv = attn.forward(h, memory if cross else h, mask, rec, n, past_kv=past_kv, static_kv=static_kv, cross=cross)
        r = x + (sub.dropout(a) if sub.training else a)
        if rec is not None:
            rec.put(f"{name}.residual{j}", r)
        return sub.norm.forward(r, valid, rec, f"{name}.norm{j}" if rec is not None else ""), kv
    h = sub.norm.forward(x, valid, rec, f"{name}.norm{j}" if rec is not None else "")
    a, kv = attn.forward(h, memory if cross else h, mask, rec, n, past_kv=past_kv, static_kv=static_kv, cross=cross)
    r = x + (sub.dropout(a) if sub.training else a)
    if rec is not None:
        rec.put(f"{name}.residual{j}", r)
    return r, kv


def _drop(sub, t):
    return sub.dropout(t) if sub.training else t


def _ffn_sublayer(sub, j, ffn, x, valid, rec, name):
    n = f"{name}.ffn" if rec is not None else ""
    if sub.post:
        r = x + _drop(sub, ffn.forward(x, rec, n))
        if rec is not None:
            rec.put(f"{name}.residual{j}", r)
        return sub.norm.forward(r, valid, rec, f"{name}.norm{j}" if rec is not None else "")
    h = sub.norm.forward(x, valid, rec, f"{name}.norm{j}" if rec is not None else "")
    r = x + _drop(sub, ffn.forward(h, rec, n))
    if rec is not None:
        rec.put(f"{name}.residual{j}", r)
    return r


@dataclass(frozen=True)
class Encoded:
    """The encoder's result for a batch of sources."""

    memory: torch.Tensor  # [B, Ls, d]  C_encoder
    mask: torch.Tensor  # [B, 1, 1, Ls]  additive source padding mask
    valid: torch.Tensor  # [B, Ls]  True for real (non-PAD) tokens


@dataclass(frozen=True)
class DecoderCache:
    """Everything a decoder step needs from earlier steps. Immutable: a step returns a new cache,
    so stepping back is keeping the old one."""

    encoded: Encoded
    cross_kv: tuple[KV, ...]  # per layer: K, V of the memory  [B, h, Ls, dk] x2
    self_kv: tuple[KV, ...]  # per layer: K, V of the target positions so far  [B, h, t, dk] x2
    length: int  # t: target positions already processed

    def select(self, index: torch.Tensor) -> "DecoderCache":
        """Reorder/duplicate the batch (beam search)."""
        enc = Encoded(self.encoded.memory[index], self.encoded.mask[index], self.encoded.valid[index])
        return DecoderCache(
            enc,
            tuple((k[index], v[index]) for k, v in self.cross_kv),
            tuple((k[index], v[index]) for k, v in self.self_kv),
            self.length,
        )


class Transformer(nn.Module):
    """Encoder-decoder Transformer. ``forward(src_ids, tgt_ids)`` -> logits ``[B, Lt, tgt_vocab]``."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.src_embed = nn.Embedding(config.src_vocab_size, d)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, d)
        self.register_buffer("pe", sinusoidal_encoding(config.max_len, d), persistent=False)  # [max_len, d]
        self.embed_dropout = nn.Dropout(config.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_decoder_layers))
        norm = lambda: make_norm(config.norm, d, config.norm_eps, config.bn_momentum)  # noqa: E731
        self.encoder_norm = norm() if config.final_norm else None
        self.decoder_norm = norm() if config.final_norm else None
        self.generator = nn.Linear(d, config.tgt_vocab_size)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        if self.config.tie_embeddings:
            self.generator.weight = self.tgt_embed.weight

    # -- pieces --------------------------------------------------------------
    def embed(self, ids: torch.Tensor, table: nn.Embedding, offset: int, rec: Recorder | None, name: str) -> torch.Tensor:
        n = ids.shape[1]
        if offset + n > self.config.max_len:
            raise ValueError(f"sequence of {offset + n} tokens exceeds the model's max_len ({self.config.max_len})")
        tokens = table(ids) * math.sqrt(self.config.d_model)  # [B, L, d]
        pos = self.pe[offset : offset + n]  # [L, d]
        x = tokens + pos  # [B, L, d]
        if rec is not None:
            rec.put(f"{name}.tokens", tokens)
            rec.put(f"{name}.positional", pos, batched=False)
            rec.put(f"{name}.sum", x)
        return self.embed_dropout(x) if self.training else x

    def encode(self, src: torch.Tensor, rec: Recorder | None = None) -> Encoded:
        """Run the encoder stack on ``src`` ``[B, Ls]``."""
        pad = src == self.config.pad_id  # [B, Ls]
        mask = padding_mask(src, self.config.pad_id)  # [B, 1, 1, Ls]
        valid = ~pad
        if rec is not None:
            rec.put("masks.src_padding", pad.float())
        x = self.embed(src, self.src_embed, 0, rec, "encoder.embed")
        for i, layer in enumerate(self.encoder_layers):
            x = layer(x, mask, valid, rec, f"encoder.layers.{i}")
        if self.encoder_norm is not None:
            x = self.encoder_norm(x, valid, rec, "encoder.final_norm")
        if rec is not None:
            rec.put("encoder.output", x)
        return Encoded(x, mask, valid)

    def decode(self, tgt: torch.Tensor, encoded: Encoded, rec: Recorder | None = None) -> torch.Tensor:
        """Run the decoder stack on the whole (shifted-right) target ``[B, Lt]`` at once -> ``[B, Lt, d]``."""
        lt = tgt.shape[1]
        pad = tgt == self.config.pad_id  # [B, Lt]
        causal = look_ahead_mask(lt).to(tgt.device)  # [Lt, Lt]
        self_mask = causal + padding_mask(tgt, self.config.pad_id)  # [B, 1, Lt, Lt]
        valid = ~pad
        if rec is not None:
            rec.put("masks.tgt_padding", pad.float())
            rec.put("masks.look_ahead", causal.expand(tgt.shape[0], lt, lt))
        x = self.embed(tgt, self.tgt_embed, 0, rec, "decoder.embed")
        for i, layer in enumerate(self.decoder_layers):
            x = layer(x, encoded.memory, self_mask, encoded.mask, valid, rec, f"decoder.layers.{i}")[0]
        return self._decoder_out(x, valid, rec)

    def _decoder_out(self, x: torch.Tensor, valid: torch.Tensor, rec: Recorder | None) -> torch.Tensor:
        if self.decoder_norm is not None:
            x = self.decoder_norm(x, valid, rec, "decoder.final_norm")
        if rec is not None:
            rec.put("decoder.output", x)
        return x

    def project(self, hidden: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        """The output layer: Linear to the target vocabulary -> logits (softmax gives the distribution)."""
        logits = self.generator(hidden)
        if rec is not None:
            rec.put("generator.logits", logits)
            rec.put_lazy("generator.probs", lambda: torch.softmax(logits.float(), dim=-1))
        return logits

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        """Teacher-forced pass: ``src`` ``[B, Ls]``, ``tgt`` (SOS + target) ``[B, Lt]`` -> logits ``[B, Lt, V]``."""
        return self.project(self.decode(tgt, self.encode(src, rec), rec), rec)

    def run_with_trace(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        names: Iterable[str] | None = None,
        batch_index: int | None = 0,
    ) -> tuple[torch.Tensor, Trace]:
        """``forward`` that also returns a ``Trace`` of the intermediates matching ``names`` (glob patterns)."""
        rec = Recorder(names, batch_index)
        logits = self.forward(src, tgt, rec)
        return logits, rec.trace()

    # -- incremental decoding -------------------------------------------------
    def start_decoding(self, encoded: Encoded) -> DecoderCache:
        """Compute each layer's cross-attention K and V once; no target position processed yet."""
        cross = tuple(
            (layer.cross_attn.project(encoded.memory, layer.cross_attn.w_k), layer.cross_attn.project(encoded.memory, layer.cross_attn.w_v))
            for layer in self.decoder_layers
        )
        return DecoderCache(encoded, cross, (), 0)

    def decode_step(self, token: torch.Tensor, cache: DecoderCache, rec: Recorder | None = None) -> tuple[torch.Tensor, DecoderCache]:
        """Process one new target position: ``token`` ``[B]`` or ``[B, 1]`` -> (logits ``[B, V]``, new cache).

        Equals the last row of a full ``decode`` over the whole prefix; costs one position.
        The trace holds that position's rows (query length 1, keys = positions so far).
        """
        ids = token.view(-1, 1)  # [B, 1]
        t = cache.length
        valid = torch.ones_like(ids, dtype=torch.bool)
        if rec is not None:
            rec.put("masks.tgt_padding", torch.zeros(ids.shape, device=ids.device))
            rec.put("masks.look_ahead", torch.zeros(ids.shape[0], 1, t + 1, device=ids.device))
        x = self.embed(ids, self.tgt_embed, t, rec, "decoder.embed")  # [B, 1, d]
        new_kv = []
        for i, layer in enumerate(self.decoder_layers):
            past = cache.self_kv[i] if t else None
            x, kv = layer.forward(
                x, cache.encoded.memory, None, cache.encoded.mask, valid, rec, f"decoder.layers.{i}", past_kv=past, cross_kv=cache.cross_kv[i]
            )
            new_kv.append(kv)
        x = self._decoder_out(x, valid, rec)
        logits = self.project(x, rec)[:, 0]  # [B, V]
        return logits, DecoderCache(cache.encoded, cache.cross_kv, tuple(new_kv), t + 1)

    def n_parameters(self) -> int:
        return sum(p.numel() for p in {id(p): p for p in self.parameters()}.values())
