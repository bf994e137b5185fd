"""The building blocks of "Attention Is All You Need", written out so every step can be recorded.

Shapes in comments: B batch, L/Lq query length, Lk key length, h heads, d d_model, dk = d/h.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.kv_cache import CachedKV
from attnviz.core.model.trace import Recorder, taps

NEG_INF = float("-inf")


def sinusoidal_encoding(max_len: int, d_model: int, dtype: torch.dtype = torch.float32, layout: str = "interleaved") -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).  # [pos, d_model]

    ``layout`` ``"halves"`` puts the same sines in the first ceil(d_model/2) columns and the cosines
    after them (Marian's order). Computed in float64, returned as ``dtype``.
    """
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # [pos, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [d_model/2]
    angle = pos / torch.pow(10000.0, two_i / d_model)  # [pos, d_model/2]
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    if layout == "halves":
        half = angle.shape[1]
        pe[:, :half] = torch.sin(angle)
        pe[:, half:] = torch.cos(angle[:, : d_model // 2])
    else:
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(dtype)


def look_ahead_mask(n_query: int, n_key: int | None = None, offset: int = 0) -> torch.Tensor:
    """M: 0 on and below the diagonal, -inf above it.  # [query, key]

    ``offset`` is the position of the first query (a cached step at position t has offset t).
    """
    n_key = n_query + offset if n_key is None else n_key
    q = torch.arange(offset, offset + n_query).unsqueeze(1)
    k = torch.arange(n_key).unsqueeze(0)
    return torch.zeros(n_query, n_key).masked_fill(k > q, NEG_INF)


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Additive key mask from ids: 0 for tokens, -inf for PAD.  # [B, 1, 1, L]"""
    return key_mask(ids == pad_id)


def key_mask(pad: torch.Tensor) -> torch.Tensor:
    """Additive key mask from ``pad`` ``[B, L]`` (True: padding): 0 for tokens, -inf for padding.  # [B, 1, 1, L]"""
    return torch.zeros(pad.shape, dtype=torch.float32, device=pad.device).masked_fill(pad, NEG_INF)[:, None, None, :]


def _version(t: torch.Tensor) -> int:
    """In-place modification counter (inference tensors have none: they cannot change outside inference mode)."""
    try:
        return t._version
    except RuntimeError:
        return -1


class Traced(nn.Module):
    """A module that records under its trace prefix, ``trace_name``: its attribute path in the
    ``Transformer`` (``decoder.layers.1.cross_attn``), given once by ``Transformer.__init__``
    from the module tree ("" for a module used on its own)."""

    trace_name: str = ""


class MultiHeadAttention(Traced):
    """softmax(Q_i K_i^T / sqrt(d_k) + B + M) V_i for each head i, then Concat(Z_1..Z_h) W^O.

    ``d_k`` defaults to d_model / h (mT5 sets it apart); ``scale_scores=False`` leaves out the
    ÷sqrt(d_k) (T5: the scaled scores are the scores); ``bias=False`` builds projections without
    biases (T5). B, a relative position bias (T5), is given to ``forward`` by the stack, or is absent."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, *, d_k: int | None = None, bias: bool = True, scale_scores: bool = True):
        super().__init__()
        self.n_heads = n_heads
        self.d_k = d_model // n_heads if d_k is None else d_k
        inner = n_heads * self.d_k  # d_model unless d_k is set apart
        self.scale = 1.0 / math.sqrt(self.d_k) if scale_scores else 1.0
        self.w_q = nn.Linear(d_model, inner, bias=bias)  # rows i*d_k:(i+1)*d_k are W_i^Q (transposed)
        self.w_k = nn.Linear(d_model, inner, bias=bias)
        self.w_v = nn.Linear(d_model, inner, bias=bias)
        self.w_o = nn.Linear(inner, d_model, bias=bias)  # W^O
        self.dropout = nn.Dropout(dropout)
        self._fused: tuple | None = None  # (weight versions, W_qkv, b_qkv) cache for inference

    def project(self, x: torch.Tensor, lin: nn.Linear) -> torch.Tensor:
        b, n, _ = x.shape
        return F.linear(x, lin.weight, lin.bias).view(b, n, self.n_heads, self.d_k).transpose(1, 2)  # [B, h, n, dk]

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention's Q, K, V from one fused matmul (in inference; same numbers as three)."""
        ws = (self.w_q.weight, self.w_k.weight, self.w_v.weight, self.w_q.bias, self.w_k.bias, self.w_v.bias)
        key = tuple((w.data_ptr(), _version(w)) for w in ws if w is not None)
        if self._fused is None or self._fused[0] != key:
            biases = None if ws[3] is None else torch.cat(ws[3:]).detach()
            self._fused = (key, torch.cat(ws[:3]).detach(), biases)
        b, n, _ = x.shape
        qkv = F.linear(x, self._fused[1], self._fused[2]).view(b, n, 3, self.n_heads, self.d_k)  # [B, n, 3, h, dk]
        qkv = qkv.permute(2, 0, 3, 1, 4)  # [3, B, h, n, dk]
        return qkv[0], qkv[1], qkv[2]

    def key_value(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V of ``memory`` ``[B, Lk, d]``: cross-attention's, computed once per source.  # [B, h, Lk, dk] x2"""
        return self.project(memory, self.w_k), self.project(memory, self.w_v)

    def forward(
        self,
        x: torch.Tensor,  # [B, Lq, d]
        kv: torch.Tensor | None,  # [B, Lk, d]; None when ``static_kv`` is given
        mask: torch.Tensor | None,  # additive, broadcastable to [B, 1, Lq, Lk]
        rec: Recorder | None = None,
        past_kv: CachedKV | None = None,  # self-attention cache: K, V of the earlier positions [B, h, t, dk] x2
        static_kv: tuple[torch.Tensor, torch.Tensor] | None = None,  # cross-attention K, V computed once
        cross: bool = False,
        position_bias: torch.Tensor | None = None,  # B, added to the scaled scores  [1, h, Lq, Lk]
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor] | CachedKV]:
        """Every field of ``trace.ATTENTION_FIELDS`` passes a tap, in its order; -> (output, (K, V)),
        K, V as a ``CachedKV`` after this call's positions when ``past_kv`` is given."""
        tap = taps(rec, self.trace_name)
        b, lq, _ = x.shape
        x, kv = self._tap_inputs(tap, x, kv, cross)
        q, k, v = self._queries_keys_values(x, kv, static_kv)  # [B, h, Lq, dk], [B, h, Lk, dk] x2
        if past_kv is not None:
            past_kv = past_kv.extended(k, v)
            k, v = past_kv.k, past_kv.v  # [B, h, t+Lq, dk]
        q, tapped_k, tapped_v = tap("q", q), tap("k", k), tap("v", v)
        if past_kv is not None and (tapped_k is not k or tapped_v is not v):  # an intervention replaced K or V: cache what was used
            past_kv = CachedKV.empty().extended(tapped_k, tapped_v)
        k, v = tapped_k, tapped_v
        scores = tap("scores", q @ k.transpose(-2, -1))  # [B, h, Lq, Lk]
        scaled = tap("scaled_scores", scores * self.scale)  # [B, h, Lq, Lk]
        if position_bias is not None:
            scaled = scaled + tap("position_bias", position_bias.expand(b, -1, -1, -1))  # [B, h, Lq, Lk]
        if rec is not None:
            rec.put_lazy(f"{self.trace_name}.mask", _full_mask(mask, b, lq, k.shape[2], x.device))
        masked = tap("masked_scores", scaled if mask is None else scaled + mask)  # [B, h, Lq, Lk]
        weights = tap("weights", torch.softmax(masked, dim=-1))  # [B, h, Lq, Lk]
        z = tap("z", (self.dropout(weights) if self.training else weights) @ v)  # [B, h, Lq, dk]
        concat = tap("concat", z.transpose(1, 2).reshape(b, lq, self.n_heads * self.d_k))  # [B, Lq, h*dk] (d unless d_k is set apart)
        out = tap("output", F.linear(concat, self.w_o.weight, self.w_o.bias))  # [B, Lq, d]
        return out, ((k, v) if past_kv is None else past_kv)

    @staticmethod
    def _tap_inputs(tap, x: torch.Tensor, kv: torch.Tensor | None, cross: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """X (and, for cross-attention, the memory) through their taps; self-attention's K, V side is X itself."""
        tapped = tap("input", x)
        if cross:
            return tapped, tap("memory", kv)
        return tapped, tapped if kv is x else kv

    def _queries_keys_values(self, x, kv, static_kv) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if static_kv is not None:
            return (self.project(x, self.w_q), *static_kv)  # [B, h, Lq, dk]; K, V [B, h, Lk, dk]
        assert kv is not None
        if kv is x and not torch.is_grad_enabled():
            q, k, v = self._qkv(x)  # [B, h, Lq, dk] x3
        else:
            q = self.project(x, self.w_q)  # [B, h, Lq, dk]
            k = self.project(kv, self.w_k)  # [B, h, Lk, dk]
            v = self.project(kv, self.w_v)
        return q, k, v


def _full_mask(mask: torch.Tensor | None, b: int, lq: int, lk: int, device) -> Callable[[], torch.Tensor]:
    """The trace's ``mask`` ``[B, Lq, Lk]`` (computed when read): the additive mask, zeros where there is none."""
    if mask is None:
        return lambda: torch.zeros(b, lq, lk, device=device)
    return lambda: mask.expand(b, 1, lq, lk)[:, 0]


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


ACTIVATION_FUNCTIONS = {"relu": torch.relu, "gelu": F.gelu, "gelu_tanh": _gelu_tanh, "silu": F.silu}  # config.activation -> function


class FeedForward(Traced):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position on its own (``activation``
    replaces max(0, .) by GELU or SiLU; ``bias=False``: no b1, b2)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu", bias: bool = True):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.activation = ACTIVATION_FUNCTIONS[activation]

    def forward(self, x: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        tap = taps(rec, self.trace_name)
        hidden = tap("hidden", self.activation(F.linear(x, self.linear1.weight, self.linear1.bias)))  # [B, L, d_ff]
        return tap("output", F.linear(self.dropout(hidden) if self.training else hidden, self.linear2.weight, self.linear2.bias))  # [B, L, d]


class GatedFeedForward(FeedForward):
    """FFN(x) = (act(x W1) * (x W_up)) W2: the activation gates a second projection (T5 v1.1's gated GELU)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "gelu_tanh", bias: bool = True):
        super().__init__(d_model, d_ff, dropout, activation, bias)
        self.linear_up = nn.Linear(d_model, d_ff, bias=bias)  # W_up

    def forward(self, x: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        tap = taps(rec, self.trace_name)
        gate = tap("gate", self.activation(F.linear(x, self.linear1.weight, self.linear1.bias)))  # [B, L, d_ff]
        hidden = tap("hidden", gate * F.linear(x, self.linear_up.weight, self.linear_up.bias))  # [B, L, d_ff]
        return tap("output", F.linear(self.dropout(hidden) if self.training else hidden, self.linear2.weight, self.linear2.bias))  # [B, L, d]


def make_ffn(config: TransformerConfig) -> FeedForward:
    """The position-wise FFN ``config.ffn`` names: plain or gated."""
    kind = GatedFeedForward if config.ffn == "gated" else FeedForward
    return kind(config.d_model, config.d_ff, config.dropout, config.activation, config.bias)


class LayerNorm(Traced):
    """LayerNorm over the features of each token (torch.nn.LayerNorm's arithmetic, with recorded statistics)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None, rec: Recorder | None = None) -> torch.Tensor:
        if rec is None:
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)  # [B, L, d]
        x = rec.tap(f"{self.trace_name}.input", x)
        rec.put_lazy(f"{self.trace_name}.mean", lambda: x.mean(-1))  # [B, L]
        rec.put_lazy(f"{self.trace_name}.var", lambda: x.var(-1, unbiased=False))  # [B, L]
        return rec.tap(f"{self.trace_name}.output", F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps))


class MaskedBatchNorm(Traced):
    """BatchNorm of each feature over the batch's non-PAD tokens; running statistics in evaluation.

    Padding never enters the statistics: ``valid`` ([B, L] bool) selects the tokens that count.
    Matches ``torch.nn.BatchNorm1d`` applied to the [N_tokens, d_model] matrix of real tokens
    (biased variance to normalize, unbiased variance into the running estimate).
    """

    def __init__(self, d_model: int, eps: float = 1e-5, momentum: float = 0.1):
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.register_buffer("running_mean", torch.zeros(d_model))
        self.register_buffer("running_var", torch.ones(d_model))

    def batch_stats(self, x: torch.Tensor, valid: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, int]:
        flat = x.reshape(-1, x.shape[-1]) if valid is None else x[valid]  # [N, d]
        mean = flat.mean(0)
        var = flat.var(0, unbiased=False) if flat.shape[0] else torch.zeros_like(mean)
        return mean, var, int(flat.shape[0])

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None, rec: Recorder | None = None) -> torch.Tensor:
        if rec is not None:
            x = rec.tap(f"{self.trace_name}.input", x)
        if not self.training and rec is not None and "batch_statistics" in rec.flags:  # the BatchStatistics intervention
            use_mean, use_var, _ = self.batch_stats(x, valid)
        elif self.training:
            mean, var, n = self.batch_stats(x, valid)  # [d], [d]
            if n > 1:
                with torch.no_grad():
                    m = self.momentum
                    self.running_mean.mul_(1 - m).add_(m * mean.detach())
                    self.running_var.mul_(1 - m).add_(m * var.detach() * n / (n - 1))
            use_mean, use_var = mean, var
        else:
            use_mean, use_var = self.running_mean, self.running_var
        y = (x - use_mean) * torch.rsqrt(use_var + self.eps) * self.weight + self.bias  # [B, L, d]
        if rec is not None:
            if self.training:
                rec.put(f"{self.trace_name}.batch_mean", mean)
                rec.put(f"{self.trace_name}.batch_var", var)
            else:  # what this batch's statistics are, next to the running ones the model uses
                rec.put_lazy(f"{self.trace_name}.batch_mean", lambda: self.batch_stats(x, valid)[0])
                rec.put_lazy(f"{self.trace_name}.batch_var", lambda: self.batch_stats(x, valid)[1])
            rec.put(f"{self.trace_name}.running_mean", self.running_mean.clone())
            rec.put(f"{self.trace_name}.running_var", self.running_var.clone())
            y = rec.tap(f"{self.trace_name}.output", y)
        return y


class RMSNorm(Traced):
    """x / sqrt(mean(x^2) + eps) * weight over the features of each token: no mean taken away, no bias (T5's LayerNorm)."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None, rec: Recorder | None = None) -> torch.Tensor:
        if rec is not None:
            x = rec.tap(f"{self.trace_name}.input", x)
        mean_square = x.pow(2).mean(-1, keepdim=True)  # [B, L, 1]
        y = x * torch.rsqrt(mean_square + self.eps) * self.weight  # [B, L, d]
        if rec is None:
            return y
        rec.put(f"{self.trace_name}.mean_square", mean_square[..., 0])  # [B, L]
        return rec.tap(f"{self.trace_name}.output", y)


def make_norm(kind: str, d_model: int, eps: float, momentum: float) -> nn.Module:
    if kind == "rms":
        return RMSNorm(d_model, eps)
    return LayerNorm(d_model, eps) if kind == "layer" else MaskedBatchNorm(d_model, eps, momentum)


class InputEmbedding(Traced):
    """A stack's first-layer input: token embedding x sqrt(d_model) + PE of the positions.

    ``learned=True`` makes PE a trained table (a parameter, BART's) instead of the sinusoids (a
    buffer); ``scale=False`` leaves the embedding unscaled; ``norm=True`` adds a LayerNorm on the
    sum (BART's ``layernorm_embedding``, with ``eps``)."""

    def __init__(
        self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.0, layout: str = "interleaved",
        *, learned: bool = False, scale: bool = True, norm: bool = False, eps: float = 1e-5,
    ):
        super().__init__()
        self.table = nn.Embedding(vocab_size, d_model)  # the token embedding matrix  [vocab, d_model]
        if learned:
            self.pe = nn.Parameter(torch.zeros(max_len, d_model))  # [max_len, d_model]
        else:
            self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, layout=layout), persistent=False)  # [max_len, d_model]
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.norm = LayerNorm(d_model, eps) if norm else None
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, ids: torch.Tensor, offset: int = 0, rec: Recorder | None = None
    ) -> torch.Tensor:
        """``ids`` ``[B, L]`` at positions ``offset .. offset + L - 1`` -> ``[B, L, d]``.

        PE is left out by the ``interventions.NoPositional`` intervention at ``<stack>.embed.positional``."""
        n = ids.shape[1]
        if offset + n > self.pe.shape[0]:
            raise ValueError(f"sequence of {offset + n} tokens exceeds the model's max_len ({self.pe.shape[0]})")
        tap = taps(rec, self.trace_name)
        tokens = tap("tokens", self.table(ids) * self.scale)  # [B, L, d]
        x = tap("sum", tokens + tap("positional", self.pe[offset : offset + n], False))  # [B, L, d]
        if self.norm is not None:
            x = self.norm(x, None, rec)  # [B, L, d]
        return self.dropout(x) if self.training else x


class TokenEmbedding(Traced):
    """A stack's first-layer input without positions (x sqrt(d_model) unless ``scale=False``): a
    model whose positions enter as a relative bias B on the attention scores (T5)."""

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.0, *, scale: bool = True):
        super().__init__()
        self.table = nn.Embedding(vocab_size, d_model)  # [vocab, d_model]
        self.max_len = max_len
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor, offset: int = 0, rec: Recorder | None = None) -> torch.Tensor:
        """``ids`` ``[B, L]`` -> ``[B, L, d]`` (``sum`` is the tokens alone: no positions are added here)."""
        if offset + ids.shape[1] > self.max_len:
            raise ValueError(f"sequence of {offset + ids.shape[1]} tokens exceeds the model's max_len ({self.max_len})")
        tap = taps(rec, self.trace_name)
        x = tap("sum", tap("tokens", self.table(ids) * self.scale))  # [B, L, d]
        return self.dropout(x) if self.training else x


def make_embedding(config: TransformerConfig, vocab_size: int) -> InputEmbedding | TokenEmbedding:
    """A stack's input embedding as ``config.positional`` and the embedding choices say."""
    d, n = config.d_model, config.max_len
    if config.positional == "relative":
        return TokenEmbedding(vocab_size, d, n, config.dropout, scale=config.scale_embedding)
    return InputEmbedding(vocab_size, d, n, config.dropout, config.positional_layout, learned=config.positional == "learned",
                          scale=config.scale_embedding, norm=config.layernorm_embedding, eps=config.norm_eps)


class RelativePositionBias(Traced):
    """B[h, q, k] = table[bucket(k - q), h]: T5's learned bias for each head and bucketed distance
    from the query to the key, computed once per pass by a stack and added to every self-attention's
    scores. ``bidirectional`` (the encoder) gives keys after the query their own buckets; the decoder's
    buckets count only keys before it."""

    def __init__(self, n_heads: int, buckets: int, max_distance: int, bidirectional: bool):
        super().__init__()
        self.table = nn.Embedding(buckets, n_heads)  # [bucket, head]
        self.buckets, self.max_distance, self.bidirectional = buckets, max_distance, bidirectional

    def forward(self, n_query: int, n_key: int, offset: int = 0) -> torch.Tensor:
        """B for queries at positions ``offset ..`` and keys at ``0 .. n_key - 1``.  # [1, h, Lq, Lk]"""
        device = self.table.weight.device
        query = torch.arange(offset, offset + n_query, device=device)[:, None]  # [Lq, 1]
        key = torch.arange(n_key, device=device)[None, :]  # [1, Lk]
        return self.table(self.bucket(key - query)).permute(2, 0, 1).unsqueeze(0)  # [1, h, Lq, Lk]

    def bucket(self, distance: torch.Tensor) -> torch.Tensor:
        """T5's bucket of each distance k - q: exact below half the buckets, logarithmic up to ``max_distance``."""
        n, out = self.buckets, torch.zeros_like(distance)
        if self.bidirectional:
            n //= 2
            out = out + (distance > 0).long() * n
            distance = distance.abs()
        else:
            distance = -torch.clamp(distance, max=0)
        exact = n // 2
        large = exact + (torch.log(distance.float() / exact) / math.log(self.max_distance / exact) * (n - exact)).long()
        large = torch.clamp(large, max=n - 1)
        return out + torch.where(distance < exact, distance, large)


class Generator(nn.Linear, Traced):
    """The output layer: Linear(d_model -> vocab) gives the logits; their softmax is the next-token distribution."""

    def forward(self, hidden: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        logits = F.linear(hidden, self.weight, self.bias)  # [B, L, vocab]
        if rec is not None:
            logits = rec.tap(f"{self.trace_name}.logits", logits)
            rec.put_lazy(f"{self.trace_name}.probs", lambda: torch.softmax(logits.float(), dim=-1))
        return logits


class ScaledGenerator(Generator):
    """The output layer of hidden states x ``output_scale`` (T5's tied output layer: d_model^-0.5)."""

    output_scale = 1.0

    def forward(self, hidden: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        return super().forward(hidden * self.output_scale, rec)  # [B, L, vocab]


class MaskedLMHead(Generator):
    """An encoder-only model's output layer (BERT's ``cls.predictions``): a transform
    LayerNorm(act(h W_t + b_t)) of each encoder output, then Linear(d_model -> vocab) (tied to the
    token embedding, with its own bias) gives the logits of the token at each position."""

    def __init__(self, d_model: int, vocab_size: int, activation: str, eps: float):
        super().__init__(d_model, vocab_size)
        self.transform = nn.Linear(d_model, d_model)  # W_t, b_t
        self.activation = ACTIVATION_FUNCTIONS[activation]
        self.norm = LayerNorm(d_model, eps)

    def forward(self, hidden: torch.Tensor, rec: Recorder | None = None) -> torch.Tensor:
        h = self.activation(F.linear(hidden, self.transform.weight, self.transform.bias))  # [B, L, d]
        if rec is not None:
            h = rec.tap(f"{self.trace_name}.transform", h)
        return super().forward(self.norm(h, None, rec), rec)  # [B, L, vocab]


def make_generator(config: TransformerConfig) -> Generator:
    """The output layer ``config`` asks for: with or without a bias, scaling the hidden states or not;
    an encoder-only model's masked-token head."""
    if config.kind == "encoder-only":
        return MaskedLMHead(config.d_model, config.src_vocab_size, config.activation, config.norm_eps)
    if not config.scale_output:
        return Generator(config.d_model, config.tgt_vocab_size, bias=config.bias)
    out = ScaledGenerator(config.d_model, config.tgt_vocab_size, bias=config.bias)
    out.output_scale = config.d_model**-0.5
    return out


class Masks(Traced):
    """The padding and look-ahead masks of a batch (no parameters; it records ``masks.*``).

    A target's first position holds the decoder's start token, never padding, even where that
    token is PAD itself (``start_id == pad_id``: Marian)."""

    def __init__(self, pad_id: int, start_id: int | None = None):
        super().__init__()
        self.pad_id = pad_id
        self.start_is_pad = start_id == pad_id

    def source(self, src: torch.Tensor, rec: Recorder | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(additive key mask ``[B, 1, 1, Ls]``, valid ``[B, Ls]``) of source ids ``[B, Ls]``."""
        pad = src == self.pad_id  # [B, Ls]
        if rec is not None:
            rec.put(f"{self.trace_name}.src_padding", pad.float())
        return padding_mask(src, self.pad_id), ~pad

    def target(self, tgt: torch.Tensor, rec: Recorder | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(look-ahead + padding mask ``[B, 1, Lt, Lt]``, valid ``[B, Lt]``) of a whole target ``[B, Lt]``."""
        lt = tgt.shape[1]
        pad = tgt == self.pad_id  # [B, Lt]
        if self.start_is_pad:
            pad[:, :1] = False
        causal = look_ahead_mask(lt).to(tgt.device)  # [Lt, Lt]
        if rec is not None:
            rec.put(f"{self.trace_name}.tgt_padding", pad.float())
            rec.put(f"{self.trace_name}.look_ahead", causal.expand(tgt.shape[0], lt, lt))
        return causal + key_mask(pad), ~pad

    def step(self, ids: torch.Tensor, offset: int, rec: Recorder | None = None) -> torch.Tensor:
        """valid ``[B, 1]`` of one new target position ``ids`` ``[B, 1]`` (a cached step sees no future and no PAD)."""
        if rec is not None:
            rec.put(f"{self.trace_name}.tgt_padding", torch.zeros(ids.shape, device=ids.device))
            rec.put(f"{self.trace_name}.look_ahead", torch.zeros(ids.shape[0], 1, offset + 1, device=ids.device))
        return torch.ones_like(ids, dtype=torch.bool)
