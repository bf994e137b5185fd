"""A ``DecodingSession``'s matrices (``SessionMatrices``: ``attention``, ``all_attention``,
``accumulated``): decoder trace arrays assembled over the steps so far from the cached
per-step rows, with the shapes a full teacher-forced pass gives. No Qt."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from attnviz.core.decoding.common import _ATTN, KINDS, DecodeStep
from attnviz.core.decoding.strategies import DecodingError


class SessionMatrices:
    """The matrix accessors of a ``DecodingSession`` (a mixin: the state is the session's)."""

    def attention(self, kind: str, layer: int) -> np.ndarray:
        """Attention weights of one layer, ``[head, query, key]``: ``encoder`` ``[head, src, src]``,
        ``decoder`` ``[head, steps, steps]`` (lower-triangular), ``cross`` ``[head, steps, src]``."""
        if kind not in KINDS:
            raise ValueError(f"attention kind must be one of {KINDS}, not {kind!r}")
        n_layers = self.config.n_encoder_layers if kind == "encoder" else self.config.n_decoder_layers
        if not 0 <= layer < n_layers:
            raise IndexError(f"{kind} layer {layer} does not exist (the model has {n_layers})")
        name = _ATTN[kind].format(layer) + ".weights"
        if kind != "encoder" and not self._records:
            keys = 0 if kind == "decoder" else len(self.src_ids)
            return np.zeros((self.config.n_heads, 0, keys), np.float32)
        return self.accumulated(name)

    def all_attention(self, kind: str) -> np.ndarray:
        """``attention(kind, i)`` for every layer: ``[layer, head, query, key]``."""
        n_layers = self.config.n_encoder_layers if kind == "encoder" else self.config.n_decoder_layers
        return np.stack([self.attention(kind, i) for i in range(n_layers)]) if n_layers else np.zeros((0, self.config.n_heads, 0, 0), np.float32)

    def accumulated(self, name: str) -> np.ndarray:
        """Trace array ``name`` over the whole current hypothesis, with the shape a full pass over
        the fed tokens gives (see ``trace_schema``): encoder names come from ``encoder_trace``;
        decoder names are assembled from the steps' cached rows:

        * per-query arrays are stacked along their query axis (``[..., steps, ...]``);
        * keys a cached step could not see (the future) are filled as the look-ahead mask makes
          them: weight 0, mask and masked scores -inf. Raw ``scores``/``scaled_scores`` there,
          which a cached step never computes, are filled in as ``q_i . k_j`` from the stacked
          ``q`` and the last step's ``k`` (what the tutorial's full ``QKᵀ`` shows);
        * ``k``/``v``/``memory``/running statistics are the last step's (they hold all keys);
        * BatchNorm ``batch_mean``/``batch_var`` are computed over the stacked ``input`` (the
          tokens of this hypothesis), as a full pass would.
        """
        if name in self.encoder_trace:
            return self.encoder_trace[name]
        if name not in self._schema:
            raise KeyError(f"no trace name {name!r} (see attnviz.core.schema_table)")
        steps = self.steps
        if not steps:
            raise DecodingError("nothing decoded yet: step() first")
        key = (name, id(self._hyp), len(steps))
        hit = self._acc.get(key)
        if hit is None:
            hit = self._assemble(name, steps)
            hit.flags.writeable = False
            self._acc[key] = hit
        return hit

    def _assemble(self, name: str, steps: Sequence[DecodeStep]) -> np.ndarray:
        field_name = name.rsplit(".", 1)[1]
        if field_name in ("batch_mean", "batch_var"):
            x = self.accumulated(name.rsplit(".", 1)[0] + ".input").astype(np.float64)  # [steps, d]
            stat = x.mean(0) if field_name == "batch_mean" else x.var(0)
            return stat.astype(np.float32)
        try:
            rows = [s.trace[name] for s in steps]
        except KeyError:
            raise KeyError(f"{name!r} was not captured in this session") from None
        dims = self._schema[name].strip("[]").split(", ")
        if dims[0] in ("query", "pos", "tgt"):
            axis = 0
        elif len(dims) > 1 and dims[1] == "query":
            axis = 1
        else:  # k, v, memory, running statistics: the last step holds everything
            return rows[-1]
        if dims[-1] != "key" or name.endswith("cross_attn." + field_name):
            return np.concatenate(rows, axis=axis)
        # a growing key axis: row i has i + 1 keys
        n = len(rows)
        fill = 0.0 if field_name == "weights" else -np.inf
        shape = list(rows[-1].shape)
        shape[axis] = n
        out = np.full(shape, fill, dtype=rows[-1].dtype)
        for i, r in enumerate(rows):
            if axis == 0:
                out[i, : i + 1] = r[0]
            else:
                out[:, i, : i + 1] = r[:, 0]
        if field_name in ("scores", "scaled_scores"):
            prefix = name.rsplit(".", 1)[0]
            q = self.accumulated(prefix + ".q")  # [head, steps, d_k]
            k = steps[-1].trace[prefix + ".k"]  # [head, steps, d_k]
            full = (q @ np.swapaxes(k, -1, -2)).astype(np.float32)
            if field_name == "scaled_scores":
                full = full * np.float32(1.0 / math.sqrt(self.config.d_k))
            upper = np.triu(np.ones((n, n), bool), 1)
            out[:, upper] = full[:, upper]
        return out
