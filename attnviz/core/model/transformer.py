"""The encoder-decoder Transformer, with ``encode`` / ``decode`` / ``generator`` kept apart so a
front end can encode once and step the decoder one position at a time (KV cache).

The module tree is the trace's: the module at an attribute path records the trace names that
start with it (``model.get_submodule("decoder.layers.1.cross_attn")`` records
``decoder.layers.1.cross_attn.*``, ``model.encoder.final_norm`` records ``encoder.final_norm.*``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.interventions import NoPositional, checked
from attnviz.core.model.kv_cache import CachedKV
from attnviz.core.model.modules import (
    InputEmbedding,
    Masks,
    MultiHeadAttention,
    RelativePositionBias,
    TokenEmbedding,
    Traced,
    make_embedding,
    make_ffn,
    make_generator,
    make_norm,
)
from attnviz.core.model.trace import Change, Recorder, Trace

KV = tuple[torch.Tensor, torch.Tensor]  # K, V [B, h, L, dk] x2


def _norm(config: TransformerConfig) -> nn.Module:
    return make_norm(config.norm, config.d_model, config.norm_eps, config.bn_momentum)


def _attention(config: TransformerConfig) -> MultiHeadAttention:
    return MultiHeadAttention(config.d_model, config.n_heads, config.dropout, d_k=config.head_dim, bias=config.bias, scale_scores=config.scale_scores)


def _position_bias(config: TransformerConfig, bidirectional: bool) -> RelativePositionBias | None:
    """A stack's relative position bias B (``positional == "relative"``), or None: positions enter with the embedding."""
    if config.positional != "relative":
        return None
    return RelativePositionBias(config.n_heads, config.relative_buckets, config.relative_max_distance, bidirectional)


class Sublayer(Traced):
    """The residual connection around one sublayer (the Annotated Transformer's ``SublayerConnection``):
    post ``Norm(x + Dropout(Sublayer(x)))`` (the paper) or pre ``x + Dropout(Sublayer(Norm(x)))``.

    The norm belongs to the layer (its ``norm{j}``); a layer keeps its connections as ``residual{j}``,
    and each records its sum under that name (``encoder.layers.0.residual1``).
    ``sublayer`` maps the normalized (pre) or raw (post) input to ``(output, extra)``; ``extra``
    (an attention's K and V) is handed back to the caller.
    """

    def __init__(self, config: TransformerConfig, index: int):
        super().__init__()
        self.post = config.norm_placement == "post"
        self.index = index  # j: 1-based position of the sublayer in its layer
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        x: torch.Tensor,  # [B, L, d]
        sublayer: Callable[[torch.Tensor], tuple[torch.Tensor, KV | None]],
        norm: nn.Module,
        valid: torch.Tensor,  # [B, L]
        rec: Recorder | None = None,
    ) -> tuple[torch.Tensor, KV | None]:
        if self.post:
            out, extra = sublayer(x)
            return norm(self._residual(x, out, rec), valid, rec), extra
        out, extra = sublayer(norm(x, valid, rec))
        return self._residual(x, out, rec), extra

    def _residual(self, x: torch.Tensor, out: torch.Tensor, rec: Recorder | None) -> torch.Tensor:
        r = x + (self.dropout(out) if self.training else out)  # [B, L, d]
        return r if rec is None else rec.tap(self.trace_name, r)  # <layer>.residual{j}: the module's own path


class EncoderLayer(Traced):
    """Self-attention and FFN, each inside a residual connection with its norm."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = _attention(config)
        self.ffn = make_ffn(config)
        self.norm1 = _norm(config)
        self.norm2 = _norm(config)
        self.residual1 = Sublayer(config, 1)
        self.residual2 = Sublayer(config, 2)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, valid: torch.Tensor, rec: Recorder | None = None, position_bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        def attend(h: torch.Tensor) -> tuple[torch.Tensor, KV]:
            return self.self_attn(h, h, mask, rec, position_bias=position_bias)

        def feed_forward(h: torch.Tensor) -> tuple[torch.Tensor, None]:
            return self.ffn(h, rec), None

        x = self.residual1(x, attend, self.norm1, valid, rec)[0]
        return self.residual2(x, feed_forward, self.norm2, valid, rec)[0]


class DecoderLayer(Traced):
    """Masked self-attention, cross-attention over the encoder output, and FFN, each inside a residual connection.

    A decoder-only model's layer (``config.cross_attention`` false: GPT-2) is built without the
    cross-attention sublayer: its FFN is sublayer 2 (``norm2``, ``residual2``), as in an encoder layer."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        n = 3 if config.cross_attention else 2  # sublayers
        self.self_attn = _attention(config)
        self.cross_attn = _attention(config) if config.cross_attention else None
        self.ffn = make_ffn(config)
        for j in range(1, n + 1):
            setattr(self, f"norm{j}", _norm(config))
        for j in range(1, n + 1):
            setattr(self, f"residual{j}", Sublayer(config, j))
        self.ffn_sublayer = (getattr(self, f"residual{n}"), getattr(self, f"norm{n}"))  # the FFN's connection and norm

    def forward(
        self,
        x: torch.Tensor,  # [B, Lt, d]
        memory: torch.Tensor,  # [B, Ls, d]
        self_mask: torch.Tensor | None,  # [B, 1, Lt, Lt] or None (a cached step sees no future)
        cross_mask: torch.Tensor,  # [B, 1, 1, Ls]
        valid: torch.Tensor,  # [B, Lt]
        rec: Recorder | None = None,
        past_kv: CachedKV | None = None,
        cross_kv: KV | None = None,
        position_bias: torch.Tensor | None = None,  # B of the self-attention  [1, h, Lt, t+Lt]
    ) -> tuple[torch.Tensor, KV | CachedKV]:
        def attend(h: torch.Tensor) -> tuple[torch.Tensor, KV | CachedKV]:
            return self.self_attn(h, h, self_mask, rec, past_kv=past_kv, position_bias=position_bias)

        def attend_memory(h: torch.Tensor) -> tuple[torch.Tensor, KV]:
            return self.cross_attn(h, memory, cross_mask, rec, static_kv=cross_kv, cross=True)

        def feed_forward(h: torch.Tensor) -> tuple[torch.Tensor, None]:
            return self.ffn(h, rec), None

        x, self_kv = self.residual1(x, attend, self.norm1, valid, rec)
        if self.cross_attn is not None:  # built for an encoder-decoder model only
            x = self.residual2(x, attend_memory, self.norm2, valid, rec)[0]
        residual, norm = self.ffn_sublayer
        x = residual(x, feed_forward, norm, valid, rec)[0]
        return x, self_kv


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
    self_kv: tuple[CachedKV, ...]  # per layer: K, V of the target positions so far  [B, h, t, dk] x2
    length: int  # t: target positions already processed

    def select(self, index: torch.Tensor) -> "DecoderCache":
        """Reorder/duplicate the batch (beam search)."""
        enc = Encoded(self.encoded.memory[index], self.encoded.mask[index], self.encoded.valid[index])
        return DecoderCache(
            enc,
            tuple((k[index], v[index]) for k, v in self.cross_kv),
            tuple(kv.select(index) for kv in self.self_kv),
            self.length,
        )


class Encoder(Traced):
    """The encoder stack: embedding + PE, N layers, and a final norm when the config asks for one;
    a relative position bias B shared by its self-attentions when positions are relative."""

    def __init__(self, config: TransformerConfig, embed: InputEmbedding | TokenEmbedding):
        super().__init__()
        self.embed = embed
        self.position_bias = _position_bias(config, bidirectional=True)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_encoder_layers))
        self.final_norm = _norm(config) if config.final_norm else None

    def forward(
        self, src: torch.Tensor, mask: torch.Tensor, valid: torch.Tensor, rec: Recorder | None = None
    ) -> torch.Tensor:
        """Source ids ``[B, Ls]`` -> C_encoder ``[B, Ls, d]``."""
        x = self.embed(src, 0, rec)  # [B, Ls, d]
        bias = None if self.position_bias is None else self.position_bias(src.shape[1], src.shape[1])  # [1, h, Ls, Ls]
        for layer in self.layers:
            x = layer(x, mask, valid, rec, bias)
        if self.final_norm is not None:
            x = self.final_norm(x, valid, rec)
        return x if rec is None else rec.tap(f"{self.trace_name}.output", x)


class Decoder(Traced):
    """The decoder stack: embedding + PE, N layers, and a final norm when the config asks for one;
    a relative position bias B (keys up to the query) shared by its self-attentions when positions are relative."""

    def __init__(self, config: TransformerConfig, embed: InputEmbedding | TokenEmbedding):
        super().__init__()
        self.embed = embed
        self.position_bias = _position_bias(config, bidirectional=False)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_decoder_layers))
        self.final_norm = _norm(config) if config.final_norm else None

    def forward(
        self,
        tgt: torch.Tensor,  # [B, Lt] target ids at positions offset .. offset + Lt - 1
        encoded: Encoded,
        self_mask: torch.Tensor | None,  # [B, 1, Lt, Lt]; None for a cached step
        valid: torch.Tensor,  # [B, Lt]
        rec: Recorder | None = None,
        cache: DecoderCache | None = None,  # earlier positions' K, V and the memory's (a cached step)
    ) -> tuple[torch.Tensor, tuple[KV | CachedKV, ...]]:
        """-> (the last hidden states ``[B, Lt, d]``, each layer's self-attention K, V so far: a
        ``CachedKV`` when ``cache`` is given)."""
        offset = 0 if cache is None else cache.length
        x = self.embed(tgt, offset, rec)  # [B, Lt, d]
        n = tgt.shape[1]
        bias = None if self.position_bias is None else self.position_bias(n, offset + n, offset)  # [1, h, Lt, t+Lt]
        self_kv = []
        for i, layer in enumerate(self.layers):
            past = None if cache is None else cache.self_kv[i] if offset else CachedKV.empty()
            cross = cache.cross_kv[i] if cache is not None and cache.cross_kv else None  # a decoder-only model has none
            x, kv = layer(x, encoded.memory, self_mask, encoded.mask, valid, rec, past_kv=past, cross_kv=cross, position_bias=bias)
            self_kv.append(kv)
        if self.final_norm is not None:
            x = self.final_norm(x, valid, rec)
        return (x if rec is None else rec.tap(f"{self.trace_name}.output", x)), tuple(self_kv)


class Transformer(nn.Module):
    """Encoder-decoder Transformer. ``forward(src_ids, tgt_ids)`` -> logits ``[B, Lt, tgt_vocab]``.

    ``config.kind`` may leave a stack out: a decoder-only model (GPT-2) has ``encoder`` None and
    its ``encode`` gives an empty memory (the prompt is the decoder's prefix); an encoder-only model
    (BERT) has ``decoder`` None and a masked-token head as its generator (``predict_masked``)."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        encoder, decoder = config.kind != "decoder-only", config.kind != "encoder-only"
        src_embed = make_embedding(config, config.src_vocab_size) if encoder else None  # both embeddings first: a seed gives the same numbers as ever
        tgt_embed = make_embedding(config, config.tgt_vocab_size) if decoder else None
        self.masks = Masks(config.pad_id, config.bos_id)
        self.encoder = Encoder(config, src_embed) if src_embed is not None else None
        self.decoder = Decoder(config, tgt_embed) if tgt_embed is not None else None
        self.generator = make_generator(config)
        self.reset_parameters()
        for path, module in self.named_modules():  # each module's trace prefix is its place in the tree
            if isinstance(module, Traced):
                module.trace_name = path

    def reset_parameters(self) -> None:
        """Xavier-uniform for every matrix; in the order of construction (embeddings, layers, output),
        so that a seed gives the same model whatever the module tree's order."""
        stacks = [s for s in (self.encoder, self.decoder) if s is not None]
        for part in [s.embed for s in stacks] + [s.layers for s in stacks] + [self.generator]:
            for p in part.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
        if self.config.tie_embeddings:  # to the embedding of the stack that feeds the output layer
            self.generator.weight = stacks[-1].embed.table.weight

    # -- passes ---------------------------------------------------------------
    def encode(self, src: torch.Tensor, rec: Recorder | None = None, positional: bool = True) -> Encoded:
        """Run the encoder stack on ``src`` ``[B, Ls]``; ``positional=False`` leaves out the
        positional encoding (the tokens' order then does not reach the encoder): it adds the
        ``NoPositional`` intervention to the call's recorder."""
        if self.encoder is None:
            return self._no_memory(src.shape[0])
        if not positional:
            rec = Recorder((), 0) if rec is None else rec
            rec.add(NoPositional())
        mask, valid = self.masks.source(src, rec)  # [B, 1, 1, Ls], [B, Ls]
        return Encoded(self.encoder(src, mask, valid, rec), mask, valid)

    def _no_memory(self, batch: int) -> Encoded:
        """A decoder-only model's "encoding": a memory of no positions (its layers read none)."""
        like = self.decoder.embed.table.weight
        memory = like.new_zeros(batch, 0, self.config.d_model)  # [B, 0, d]
        return Encoded(memory, like.new_zeros(batch, 1, 1, 0), torch.zeros(batch, 0, dtype=torch.bool, device=like.device))

    def predict_masked(self, ids: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        """An encoder-only model's masked-token prediction: ``ids`` ``[B, L]`` (with ``[MASK]`` where a
        token is hidden) -> logits over the vocabulary at every position ``[B, L, V]``."""
        if self.decoder is not None:
            raise ValueError("predict_masked needs an encoder-only model (config.kind 'encoder-only')")
        return self.project(self.encode(ids, rec).memory, rec)

    def decode(self, tgt: torch.Tensor, encoded: Encoded, rec: Recorder | None = None) -> torch.Tensor:
        """Run the decoder stack on the whole (shifted-right) target ``[B, Lt]`` at once -> ``[B, Lt, d]``."""
        self._check_decoder()
        self_mask, valid = self.masks.target(tgt, rec)  # [B, 1, Lt, Lt], [B, Lt]
        return self.decoder(tgt, encoded, self_mask, valid, rec)[0]

    def project(self, hidden: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        """The output layer: Linear to the target vocabulary -> logits (softmax gives the distribution)."""
        return self.generator(hidden, rec)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        """Teacher-forced pass: ``src`` ``[B, Ls]``, ``tgt`` (SOS + target) ``[B, Lt]`` -> logits ``[B, Lt, V]``."""
        return self.project(self.decode(tgt, self.encode(src, rec), rec), rec)

    def run_with_trace(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor | None,
        names: Iterable[str] | None = None,
        batch_index: int | None = 0,
        interventions: Iterable[Change] = (),
    ) -> tuple[torch.Tensor, Trace]:
        """``forward`` that also returns a ``Trace`` of the intermediates matching ``names`` (glob
        patterns), with ``interventions`` (``interventions.py``) applied where they act; ``tgt`` None:
        an encoder-only model's ``predict_masked`` pass over ``src``."""
        rec = Recorder(names, batch_index, checked(interventions, self.config))
        logits = self(src, tgt, rec) if tgt is not None else self.predict_masked(src, rec)
        return logits, rec.trace()

    # -- incremental decoding -------------------------------------------------
    def start_decoding(self, encoded: Encoded) -> DecoderCache:
        """Compute each layer's cross-attention K and V once (none in a decoder-only model); no target position processed yet."""
        self._check_decoder()
        cross = tuple(layer.cross_attn.key_value(encoded.memory) for layer in self.decoder.layers if layer.cross_attn is not None)
        return DecoderCache(encoded, cross, (), 0)

    def decode_step(self, token: torch.Tensor, cache: DecoderCache, rec: Recorder | None = None) -> tuple[torch.Tensor, DecoderCache]:
        """Process one new target position: ``token`` ``[B]`` or ``[B, 1]`` -> (logits ``[B, V]``, new cache).

        Equals the last row of a full ``decode`` over the whole prefix; costs one position.
        The trace holds that position's rows (query length 1, keys = positions so far).
        """
        ids = token.view(-1, 1)  # [B, 1]
        if rec is not None:
            rec.offset = cache.length  # where interventions that follow positions (a patch) act
        valid = self.masks.step(ids, cache.length, rec)  # [B, 1]
        x, self_kv = self.decoder(ids, cache.encoded, None, valid, rec, cache)  # [B, 1, d]
        logits = self.project(x, rec)[:, 0]  # [B, V]
        return logits, DecoderCache(cache.encoded, cache.cross_kv, self_kv, cache.length + 1)

    def prefill(self, tgt: torch.Tensor, cache: DecoderCache, rec: Recorder | None = None) -> tuple[torch.Tensor, DecoderCache]:
        """Process the first target positions ``tgt`` ``[B, Lt]`` (no PAD after the start token) in one
        pass from a cache that has processed none (``start_decoding``): -> (logits ``[B, Lt, V]``, the
        cache after them).

        Equals ``Lt`` ``decode_step`` calls, one per position: row i of the logits is step i's, and of
        each traced array (laid out as a full ``decode`` lays it out, with the look-ahead mask) row i
        over keys 0..i is what step i records. A patch intervention gives its first ``Lt`` positions,
        as the steps would take them one by one."""
        if cache.length:
            raise ValueError(f"prefill starts from a cache that has processed no position, not {cache.length}")
        if rec is not None:
            rec.offset = 0
        self_mask, valid = self.masks.target(tgt, rec)  # [B, 1, Lt, Lt], [B, Lt]
        x, self_kv = self.decoder(tgt, cache.encoded, self_mask, valid, rec, cache)  # [B, Lt, d]
        return self.project(x, rec), DecoderCache(cache.encoded, cache.cross_kv, self_kv, tgt.shape[1])

    def _check_decoder(self) -> None:
        if self.decoder is None:
            raise ValueError("an encoder-only model has no decoder: it predicts masked tokens (predict_masked), it does not decode")

    def n_parameters(self) -> int:
        return sum(p.numel() for p in {id(p): p for p in self.parameters()}.values())
