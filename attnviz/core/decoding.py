"""Step-by-step decoding of one source sentence: the state the app's stepping controls drive.

The tutorial's inference loop (feed the previous prediction back until EOS or the maximum
length) made explicit and reversible. A ``DecodingSession`` encodes the source once, then
runs the decoder one position at a time with the model's KV cache:

* ``step()`` appends one target token chosen by the strategy (``Greedy``, ``Sampling``,
  ``BeamSearch``); ``force(token)`` appends a token the user chose (a piece or an id);
  ``back()`` undoes the last ``step``/``force`` exactly (the previous state is kept, nothing
  is recomputed); ``reset()`` goes back to SOS; ``run()`` steps to EOS or the maximum length.
* Every step yields an immutable ``DecodeStep``: the new token, the top-k of the distribution
  it came from, its entropy, the live beams, and the step's ``Trace`` (decoder names only;
  query length 1, keys = the positions so far).
* ``accumulated(name)`` assembles any decoder trace name over all steps so far from the
  cached per-step rows (no recompute); the result has the shape a full teacher-forced pass
  over the same prefix would give (``attention("decoder", i)`` is lower-triangular
  ``[head, steps, steps]``, ``attention("cross", i)`` is ``[head, steps, src]``).

Rows and columns. After ``n`` steps the decoder has been fed ``n`` tokens, ``tgt_ids[:n]``
(SOS first), and has produced ``n`` tokens, ``tgt_ids[1:]``. Row ``i`` of every accumulated
matrix is the query of the fed token ``tgt_ids[i]`` (``input_pieces[i]``), the row whose
distribution chose ``tgt_ids[i + 1]`` (``output_pieces[i]``).

Documented behaviours (never a traceback; ``DecodingError`` carries a one-line message):

* an empty (or all-whitespace) source: ``DecodingError``;
* a source longer than the model's ``max_len`` tokens: truncated to ``max_len``, with a notice;
* characters the source tokenizer does not know: encoded as UNK (shown as the piece ``UNK``),
  with a notice naming them;
* ``force`` of a piece the target vocabulary does not have, of PAD or SOS, or of an id out of
  range: ``DecodingError``;
* ``step()``/``force()`` once the session is finished (EOS chosen or maximum length reached):
  ``DecodingError`` (``back()`` or ``reset()`` first); ``back()`` with no step: ``DecodingError``.

Strategies never generate PAD or SOS (their probability is kept in the top-k lists, which show
the model's distribution at temperature 1). Beam search follows the best-ranked beam: the
session's hypothesis (``tgt_ids``, ``steps``, the accumulated matrices) is always
``steps[-1].beams[0]``; as a different beam takes the lead, ``steps`` (the path of that beam)
can change in earlier positions. ``force`` during a beam search continues from the leading
beam alone (the other beams are dropped). ``back()`` undoes one search step for all beams.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

import numpy as np
import torch

from .model import DecoderCache, Transformer
from .tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer
from .trace import _BATCHLESS, Recorder, Trace, trace_schema

if TYPE_CHECKING:
    from .bundle import Bundle

__all__ = [
    "Beam",
    "BeamSearch",
    "DecodeStep",
    "DecodingError",
    "DecodingSession",
    "ForcedPosition",
    "Greedy",
    "PreparedSource",
    "Sampling",
    "Strategy",
    "TeacherForced",
    "parse_strategy",
    "prepare_source",
    "teacher_forced",
    "teacher_forced_from_bundle",
    "translate",
]

KINDS = ("encoder", "decoder", "cross")
_ATTN = {"encoder": "encoder.layers.{}.self_attn", "decoder": "decoder.layers.{}.self_attn", "cross": "decoder.layers.{}.cross_attn"}


class DecodingError(ValueError):
    """Input or a request the decoding cannot honour; ``str(err)`` is one line for the user."""


# -- strategies -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Greedy:
    """Always the most likely token (argmax)."""

    def describe(self) -> str:
        return "greedy"


@dataclass(frozen=True)
class Sampling:
    """Draw the next token from softmax(logits / temperature), optionally restricted to the
    ``top_k`` most likely tokens (0: all) and to the smallest set whose probability reaches
    ``top_p`` (1.0: all). Reproducible: the same ``seed`` gives the same tokens."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature) and self.temperature > 0):
            raise DecodingError(f"temperature must be a positive number, not {self.temperature!r}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise DecodingError(f"top-k must be a non-negative integer (0 = no limit), not {self.top_k!r}")
        if not (isinstance(self.top_p, (int, float)) and 0.0 < self.top_p <= 1.0):
            raise DecodingError(f"top-p must be in (0, 1], not {self.top_p!r}")

    def describe(self) -> str:
        extra = "".join(
            [f", top-k {self.top_k}" if self.top_k else "", f", top-p {self.top_p:g}" if self.top_p < 1 else ""]
        )
        return f"sampling (temperature {self.temperature:g}{extra}, seed {self.seed})"


@dataclass(frozen=True)
class BeamSearch:
    """Keep the ``width`` best partial translations. Beams are ranked by
    ``log P / lp``, ``lp = ((5 + n) / 6) ** length_penalty`` (GNMT; ``n`` generated tokens,
    EOS included; 0 ranks by plain log-probability). The search ends when the best-ranked
    beam has ended with EOS, or at the maximum length."""

    width: int = 4
    length_penalty: float = 0.6

    def __post_init__(self) -> None:
        if not isinstance(self.width, int) or self.width < 1:
            raise DecodingError(f"beam width must be a positive integer, not {self.width!r}")
        if not (isinstance(self.length_penalty, (int, float)) and self.length_penalty >= 0):
            raise DecodingError(f"length penalty must be >= 0, not {self.length_penalty!r}")

    def describe(self) -> str:
        return f"beam search (width {self.width}, length penalty {self.length_penalty:g})"


Strategy = Union[Greedy, Sampling, BeamSearch]


def parse_strategy(text: str, seed: int = 0) -> Strategy:
    """``"greedy"``, ``"beam"`` / ``"beam:K"``, ``"sample"`` / ``"sample:T"`` (temperature T)."""
    s = (text or "").strip().lower()
    name, _, arg = s.partition(":")
    try:
        if name == "greedy" and not arg:
            return Greedy()
        if name == "beam":
            return BeamSearch(width=int(arg) if arg else 4)
        if name in ("sample", "sampling"):
            return Sampling(temperature=float(arg) if arg else 1.0, seed=seed)
    except ValueError as exc:
        if isinstance(exc, DecodingError):
            raise
        raise DecodingError(f"bad strategy {text!r}: {arg!r} is not a number") from None
    raise DecodingError(f"unknown strategy {text!r} (expected greedy, beam:K or sample:T)")


# -- results ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Beam:
    """One hypothesis of a beam search (greedy and sampling have one)."""

    token_ids: tuple[int, ...]  # SOS first; ends with EOS when finished
    pieces: tuple[str, ...]  # labels of token_ids (SOS/EOS/UNK by name)
    score: float  # ranking score: log_prob / length penalty (= log_prob for greedy/sampling)
    finished: bool  # ended with EOS
    log_prob: float = float("nan")  # sum of log-probabilities of the generated tokens


@dataclass(frozen=True)
class DecodeStep:
    """One decoding step: the token it appended and everything about how it was chosen."""

    index: int  # 0-based: this step fed tgt_ids[index] and appended tgt_ids[index + 1]
    token_id: int
    piece: str  # label of token_id (SOS/EOS/PAD/UNK by name)
    topk: tuple[tuple[str, int, float], ...]  # (piece, id, probability), most likely first
    entropy: float  # of the model's next-token distribution, in nats
    forced: bool  # chosen by the user (force), not by the strategy
    is_eos: bool
    beams: tuple[Beam, ...]  # the beams after this step, best first (greedy/sampling: one)
    trace: Trace  # decoder names only; query length 1, keys = positions 0..index
    prob: float = float("nan")  # probability the model gave token_id


@dataclass(frozen=True)
class PreparedSource:
    """A source sentence as the encoder sees it."""

    text: str
    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    notices: tuple[str, ...]


def prepare_source(tokenizer: Tokenizer, text: str, max_len: int) -> PreparedSource:
    """Tokenize ``text`` for the encoder (no SOS/EOS, as in training): an empty source is a
    ``DecodingError``; a longer one than ``max_len`` is truncated; unknown characters become UNK.
    Each of the last two adds a one-line notice."""
    if not isinstance(text, str) or not text.strip():
        raise DecodingError("the source sentence is empty")
    text = text.strip()
    ids = tokenizer.encode(text)
    if not ids:
        raise DecodingError("the source sentence has no tokens")
    notices = []
    unknown = tokenizer.unknown_characters(text)
    if unknown:
        notices.append(f"unknown character(s) {' '.join(unknown)} shown as UNK")
    if len(ids) > max_len:
        notices.append(f"source truncated to the model's maximum length: {max_len} of {len(ids)} tokens kept")
        ids = ids[:max_len]
    return PreparedSource(text, tuple(ids), tuple(tokenizer.pieces(ids)), tuple(notices))


def _topk(probs: torch.Tensor, k: int, tokenizer: Tokenizer) -> tuple[tuple[str, int, float], ...]:
    k = min(k, probs.numel())
    if k <= 0:
        return ()
    vals, idx = torch.topk(probs, k)
    return tuple((tokenizer.piece(int(i)), int(i), float(v)) for v, i in zip(vals, idx))


def _entropy(logits: torch.Tensor) -> float:
    p = torch.softmax(logits.double(), -1)
    return float(torch.special.entr(p).sum())


def _model_device(model: Transformer) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def _row_trace(trace: Trace, row: int) -> Trace:
    """One batch element of a trace recorded with ``batch_index=None``."""
    return Trace((k, trace[k] if _BATCHLESS.search(k) else trace[k][row]) for k in trace)


def _check_model(model: Transformer) -> None:
    if model.training:
        raise DecodingError("the model is in training mode (dropout would change every step); call model.eval() first")


# -- internal state -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Hyp:
    tokens: tuple[int, ...]  # SOS first
    log_prob: float
    finished: bool
    origin: tuple[tuple[int, bool], ...]  # per step: (row of that step's batch, forced)

    def extend(self, token: int, logp: float, row: int, forced: bool) -> "_Hyp":
        return _Hyp(self.tokens + (token,), self.log_prob + logp, token == EOS_ID, self.origin + ((row, forced),))


@dataclass(frozen=True)
class _State:
    live: tuple[_Hyp, ...]  # unfinished hypotheses; the cache's batch rows follow this order
    finished: tuple[_Hyp, ...]
    ranked: tuple[_Hyp, ...]  # live + finished, best first; ranked[0] is the session's hypothesis
    cache: DecoderCache | None
    rng_state: torch.Tensor | None
    done: bool
    notice: str | None = None


@dataclass
class _Record:
    """What one model call produced (batch = the live hypotheses it was fed)."""

    trace: Trace
    batched: bool  # trace keeps a batch dimension (beam search with several rows)
    logits: torch.Tensor  # [n, V]
    probs: torch.Tensor  # [n, V] float32 softmax (= generator.probs)
    rows: dict[int, Trace] = field(default_factory=dict)

    def row_trace(self, row: int) -> Trace:
        if not self.batched:
            return self.trace
        if row not in self.rows:
            self.rows[row] = _row_trace(self.trace, row)
        return self.rows[row]


class DecodingSession:
    """The whole state of decoding one source sentence with one model. Not thread-safe: use it
    from one thread at a time (the app's decoding worker)."""

    def __init__(
        self,
        model: Transformer,
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer,
        source: str,
        strategy: Strategy | None = None,
        max_len: int | None = None,
        top_k: int = 10,
        capture: bool | Iterable[str] = True,
    ):
        """``max_len``: most target tokens to generate (default ``min(model max_len, 2 x source
        tokens + 10)``; never more than the model's ``max_len``). ``top_k``: how many entries each
        step's top-k list has. ``capture``: record every trace name (True), none (False: faster,
        empty traces) or the names matching the given glob patterns."""
        _check_model(model)
        self.model = model
        self.config = model.config
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.top_k = int(top_k)
        self._names = None if capture is True else (() if capture is False else tuple(capture))
        self._capture = capture is not False
        self._device = _model_device(model)
        self.source = prepare_source(src_tokenizer, source, self.config.max_len)
        default = min(self.config.max_len, 2 * len(self.source.ids) + 10)
        if max_len is not None and (not isinstance(max_len, int) or max_len < 1):
            raise DecodingError(f"maximum length must be a positive integer, not {max_len!r}")
        self.max_len = default if max_len is None else min(max_len, self.config.max_len)
        self._schema = {n: s for n, s, _ in trace_schema(self.config, encoder=False)}
        src = torch.tensor([self.source.ids], dtype=torch.long, device=self._device)
        with torch.inference_mode():
            rec = Recorder(self._names) if self._capture else None
            self._encoded = model.encode(src, rec)
            self._start_cache = model.start_decoding(self._encoded)
        self.encoder_trace: Trace = rec.trace() if rec is not None else Trace()
        self._strategy: Strategy = strategy if strategy is not None else Greedy()
        self.reset()

    @classmethod
    def from_bundle(cls, bundle: "Bundle", source: str, **kw) -> "DecodingSession":
        return cls(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, source, **kw)

    # -- state --------------------------------------------------------------------------------
    @property
    def strategy(self) -> Strategy:
        return self._strategy

    @property
    def src_ids(self) -> tuple[int, ...]:
        return self.source.ids

    @property
    def src_pieces(self) -> tuple[str, ...]:
        return self.source.pieces

    @property
    def _state(self) -> _State:
        return self._states[-1]

    @property
    def _hyp(self) -> _Hyp:
        return self._state.ranked[0]

    @property
    def tgt_ids(self) -> tuple[int, ...]:
        """The current hypothesis, SOS first (``len(steps) + 1`` tokens)."""
        return self._hyp.tokens

    @property
    def tgt_pieces(self) -> tuple[str, ...]:
        return tuple(self.tgt_tokenizer.pieces(self.tgt_ids))

    @property
    def input_pieces(self) -> tuple[str, ...]:
        """The tokens fed to the decoder so far: the rows (and decoder-self columns) of the accumulated matrices."""
        return self.tgt_pieces[: len(self.tgt_ids) - 1]

    @property
    def output_pieces(self) -> tuple[str, ...]:
        """The tokens produced so far: row i of an accumulated matrix chose output_pieces[i]."""
        return self.tgt_pieces[1:]

    @property
    def finished(self) -> bool:
        """EOS was chosen (by the best beam) or the maximum length was reached."""
        return self._state.done

    @property
    def can_step(self) -> bool:
        return not self._state.done

    @property
    def can_back(self) -> bool:
        return len(self._states) > 1

    @property
    def n_steps(self) -> int:
        """Number of step()/force() calls kept (``back()`` undoes one); ``len(steps)`` can be
        smaller in beam search when the best beam ended earlier."""
        return len(self._records)

    @property
    def notices(self) -> list[str]:
        """One-line notes for the user: source truncation, unknown characters, maximum length reached."""
        out = list(self.source.notices)
        if self._state.notice:
            out.append(self._state.notice)
        return out

    @property
    def steps(self) -> tuple[DecodeStep, ...]:
        """The steps of the current hypothesis, in order."""
        hyp = self._hyp
        key = (id(hyp), len(self._states))
        if self._steps_cache is not None and self._steps_cache[0] == key:
            return self._steps_cache[1]
        out = tuple(self._decode_step(i, row, hyp.tokens[i + 1], forced) for i, (row, forced) in enumerate(hyp.origin))
        self._steps_cache = (key, out)
        return out

    def translation(self) -> str:
        """The current hypothesis as text (SOS/EOS dropped; UNK shows as ⁇)."""
        return self.tgt_tokenizer.decode(self.tgt_ids)

    def beams(self) -> tuple[Beam, ...]:
        """The beams of the current state, best first."""
        return self._beams(len(self._states) - 1)

    # -- actions ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to SOS (the encoder result is kept)."""
        rng = None
        if isinstance(self._strategy, Sampling):
            rng = torch.Generator().manual_seed(int(self._strategy.seed)).get_state()
        root = _Hyp((BOS_ID,), 0.0, False, ())
        self._states: list[_State] = [_State((root,), (), (root,), self._start_cache, rng, self.max_len <= 0)]
        self._records: list[_Record] = []
        self._step_objects: dict[tuple[int, int, int, bool], DecodeStep] = {}
        self._beam_objects: dict[int, tuple[Beam, ...]] = {}
        self._steps_cache: tuple | None = None
        self._acc: dict[tuple, np.ndarray] = {}

    def set_strategy(self, strategy: Strategy, keep_tokens: bool = False) -> None:
        """Use ``strategy`` from now on. The session restarts from SOS; with ``keep_tokens`` the
        current hypothesis's tokens (EOS excepted) are replayed as forced steps first."""
        if not isinstance(strategy, (Greedy, Sampling, BeamSearch)):
            raise DecodingError(f"not a decoding strategy: {strategy!r}")
        tokens = [t for t in self.tgt_ids[1:] if t != EOS_ID] if keep_tokens else []
        self._strategy = strategy
        self.reset()
        for t in tokens:
            if self.finished:
                break
            self.force(t)

    def step(self) -> DecodeStep:
        """Append one token chosen by the strategy; returns the new step of the current hypothesis."""
        st = self._state
        self._check_can_extend()
        rec_obj, logits, cache = self._run_model(st.live, st.cache)
        logp = torch.log_softmax(logits.double(), -1)  # [n, V]
        logp[:, PAD_ID] = -math.inf
        logp[:, BOS_ID] = -math.inf
        n_steps = len(self._records) + 1
        s = self._strategy
        rng_state = st.rng_state
        if isinstance(s, BeamSearch):
            new_live, new_fin = self._beam_candidates(st, logp, s)
        else:
            if isinstance(s, Sampling):
                gen = torch.Generator()
                gen.set_state(st.rng_state)
                token = self._sample(logits[0], s, gen)
                rng_state = gen.get_state()
            else:
                token = int(torch.argmax(logp[0]))
            hyp = st.live[0].extend(token, float(logp[0, token]), 0, False)
            new_live, new_fin = ((), (hyp,)) if hyp.finished else ((hyp,), ())
        self._push(rec_obj, cache, new_live, new_fin, rng_state, n_steps)
        return self._last_step()

    def force(self, token: str | int) -> DecodeStep:
        """Append ``token`` (a piece, e.g. from a top-k list, or an id) instead of the strategy's
        choice. In a beam search, the leading beam continues alone."""
        st = self._state
        self._check_can_extend()
        token_id = self.token_id(token)
        hyp = st.ranked[0]
        row = st.live.index(hyp)
        cache = st.cache
        if len(st.live) > 1:
            cache = cache.select(torch.tensor([row], device=self._device))
        rec_obj, logits, cache = self._run_model((hyp,), cache)
        logp = torch.log_softmax(logits.double(), -1)
        new = hyp.extend(token_id, float(logp[0, token_id]), 0, True)
        new_live, new_fin = ((), (new,)) if new.finished else ((new,), ())
        self._push(rec_obj, cache, new_live, new_fin, st.rng_state, len(self._records) + 1)
        return self._last_step()

    def _last_step(self) -> DecodeStep:
        hyp = self._hyp
        row, forced = hyp.origin[-1]
        return self._decode_step(len(hyp.origin) - 1, row, hyp.tokens[-1], forced)

    def back(self) -> None:
        """Undo the last ``step``/``force``: the session is exactly as it was before it."""
        if len(self._states) <= 1:
            raise DecodingError("nothing to undo: no token has been decoded yet")
        self._states.pop()
        self._records.pop()
        n = len(self._records)
        self._step_objects = {k: v for k, v in self._step_objects.items() if k[0] < n}
        self._beam_objects.pop(n + 1, None)
        self._steps_cache = None
        self._acc.clear()

    def run(self) -> tuple[DecodeStep, ...]:
        """Step until EOS or the maximum length; returns all steps of the final hypothesis."""
        while not self.finished:
            self.step()
        return self.steps

    def token_id(self, token: str | int) -> int:
        """The target id of a piece (also ``SOS``/``EOS``/``UNK`` by name; a piece typed without its
        word-start mark ``▁`` is found too) or of an id; ``DecodingError`` if there is none."""
        tok = self.tgt_tokenizer
        if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
            token_id = int(token)
            if not 0 <= token_id < tok.vocab_size:
                raise DecodingError(f"token id {token_id} is outside the target vocabulary (0..{tok.vocab_size - 1})")
        elif isinstance(token, str) and token:
            token_id = tok.piece_to_id(token)
            if token_id == UNK_ID and token not in ("UNK", "<unk>"):
                alt = tok.piece_to_id("\u2581" + token)
                if alt == UNK_ID:
                    raise DecodingError(f"{token!r} is not a piece of the target vocabulary")
                token_id = alt
        else:
            raise DecodingError(f"cannot force {token!r}: give a piece or a token id")
        if token_id in (PAD_ID, BOS_ID):
            raise DecodingError(f"cannot force {tok.piece(token_id)}: only a real token or EOS can follow")
        return token_id

    # -- matrices ---------------------------------------------------------------------------------
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

    # -- internals --------------------------------------------------------------------------------
    def _check_can_extend(self) -> None:
        if self._state.done:
            why = "EOS was chosen" if self._hyp.finished else f"the maximum length ({self.max_len} tokens) was reached"
            raise DecodingError(f"decoding is finished ({why}); use back() or reset() to continue")

    def _run_model(self, live: Sequence[_Hyp], cache: DecoderCache) -> tuple[_Record, torch.Tensor, DecoderCache]:
        n = len(live)
        tokens = torch.tensor([h.tokens[-1] for h in live], dtype=torch.long, device=self._device)
        rec = Recorder(self._names, batch_index=0 if n == 1 else None) if self._capture else None
        with torch.inference_mode():
            logits, new_cache = self.model.decode_step(tokens, cache, rec)
            logits = logits.float()
            probs = torch.softmax(logits, -1)
        record = _Record(rec.trace() if rec is not None else Trace(), rec is not None and n > 1, logits.cpu(), probs.cpu())
        return record, record.logits, new_cache

    def _sample(self, logits: torch.Tensor, s: Sampling, gen: torch.Generator) -> int:
        x = logits.double() / s.temperature
        x[PAD_ID] = -math.inf
        x[BOS_ID] = -math.inf
        probs = torch.softmax(x, -1)
        if s.top_k and s.top_k < probs.numel():
            kth = torch.topk(probs, s.top_k).values[-1]
            probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
        if s.top_p < 1.0:
            sorted_p, order = torch.sort(probs, descending=True)
            cum = torch.cumsum(sorted_p, 0) / sorted_p.sum()
            keep = (cum - sorted_p / sorted_p.sum()) < s.top_p  # the smallest prefix reaching top_p
            mask = torch.zeros_like(probs, dtype=torch.bool)
            mask[order[keep]] = True
            probs = torch.where(mask, probs, torch.zeros_like(probs))
        return int(torch.multinomial(probs / probs.sum(), 1, generator=gen))

    def _rank_key(self, h: _Hyp) -> float:
        s = self._strategy
        if isinstance(s, BeamSearch) and s.length_penalty:
            return h.log_prob / (((5.0 + len(h.tokens) - 1) / 6.0) ** s.length_penalty)
        return h.log_prob

    def _beam_candidates(self, st: _State, logp: torch.Tensor, s: BeamSearch) -> tuple[tuple[_Hyp, ...], tuple[_Hyp, ...]]:
        n, v = logp.shape
        scores = torch.tensor([h.log_prob for h in st.live], dtype=torch.float64)[:, None] + logp  # [n, V]
        k2 = min(2 * s.width, n * v)
        top = torch.topk(scores.view(-1), k2)
        live: list[_Hyp] = []
        fin = list(st.finished)
        for rank, (sc, idx) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
            if sc == -math.inf:
                break
            row, token = divmod(idx, v)
            hyp = st.live[row].extend(token, float(logp[row, token]), row, False)
            if token == EOS_ID:
                if rank < s.width:
                    fin.append(hyp)
            else:
                live.append(hyp)
                if len(live) == s.width:
                    break
        fin.sort(key=self._rank_key, reverse=True)
        return tuple(live), tuple(fin[: s.width])

    def _push(self, record: _Record, cache: DecoderCache, live: tuple[_Hyp, ...], fin: tuple[_Hyp, ...], rng_state, n_steps: int) -> None:
        """Make the state after a model call current. ``cache`` has one row per hypothesis fed;
        it is reordered to follow ``live`` (beam search)."""
        ranked = tuple(sorted(live + fin, key=self._rank_key, reverse=True))
        done = not live or ranked[0].finished or n_steps >= self.max_len
        notice = None
        if done and not ranked[0].finished:
            notice = f"stopped at the maximum length ({self.max_len} tokens) before EOS"
        if done:
            cache = None
        elif len(live) and [h.origin[-1][0] for h in live] != list(range(cache.encoded.memory.shape[0])):
            cache = cache.select(torch.tensor([h.origin[-1][0] for h in live], device=self._device))
        self._records.append(record)
        self._states.append(_State(live, fin, ranked, cache, rng_state, done, notice))
        self._steps_cache = None
        self._acc.clear()

    def _beams(self, state_index: int) -> tuple[Beam, ...]:
        hit = self._beam_objects.get(state_index)
        if hit is None:
            st = self._states[state_index]
            tok = self.tgt_tokenizer
            hit = tuple(Beam(h.tokens, tuple(tok.pieces(h.tokens)), float(self._rank_key(h)), h.finished, float(h.log_prob)) for h in st.ranked)
            self._beam_objects[state_index] = hit
        return hit

    def _decode_step(self, index: int, row: int, token: int, forced: bool) -> DecodeStep:
        key = (index, row, token, forced)
        hit = self._step_objects.get(key)
        if hit is None:
            rec = self._records[index]
            tok = self.tgt_tokenizer
            hit = DecodeStep(
                index=index,
                token_id=token,
                piece=tok.piece(token),
                topk=_topk(rec.probs[row], self.top_k, tok),
                entropy=_entropy(rec.logits[row]),
                forced=forced,
                is_eos=token == EOS_ID,
                beams=self._beams(index + 1),
                trace=rec.row_trace(row),
                prob=float(rec.probs[row, token]),
            )
            self._step_objects[key] = hit
        return hit


# -- teacher forcing ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ForcedPosition:
    """One target position of a teacher-forced pass: ``input`` fed, ``target`` expected."""

    index: int
    input_id: int  # SOS, y1, ..., yn
    input_piece: str
    target_id: int  # y1, ..., yn, EOS
    target_piece: str
    predicted_id: int  # argmax of the distribution
    predicted_piece: str
    match: bool  # predicted_id == target_id
    target_prob: float  # P(target)
    loss: float  # -log P(target), nats
    entropy: float  # nats
    topk: tuple[tuple[str, int, float], ...]  # (piece, id, probability), most likely first


@dataclass(frozen=True)
class TeacherForced:
    """"SOS + y in, y + EOS out": one pass over a typed target, every position at once."""

    source: PreparedSource
    target: str
    input_ids: tuple[int, ...]  # SOS + y
    input_pieces: tuple[str, ...]
    label_ids: tuple[int, ...]  # y + EOS
    label_pieces: tuple[str, ...]
    positions: tuple[ForcedPosition, ...]
    trace: Trace  # the full pass (encoder and decoder names); query axis = positions
    notices: tuple[str, ...]

    @property
    def src_ids(self) -> tuple[int, ...]:
        return self.source.ids

    @property
    def src_pieces(self) -> tuple[str, ...]:
        return self.source.pieces

    @property
    def loss(self) -> float:
        """Mean per-token loss (nats)."""
        return float(np.mean([p.loss for p in self.positions]))

    @property
    def accuracy(self) -> float:
        return float(np.mean([p.match for p in self.positions]))

    @property
    def predicted_ids(self) -> tuple[int, ...]:
        return tuple(p.predicted_id for p in self.positions)

    def attention(self, kind: str, layer: int) -> np.ndarray:
        """``[head, query, key]`` as ``DecodingSession.attention`` (queries = the fed tokens)."""
        if kind not in KINDS:
            raise ValueError(f"attention kind must be one of {KINDS}, not {kind!r}")
        return self.trace[_ATTN[kind].format(layer) + ".weights"]

    def all_attention(self, kind: str) -> np.ndarray:
        """``[layer, head, query, key]``."""
        out = []
        while _ATTN[kind].format(len(out)) + ".weights" in self.trace:
            out.append(self.attention(kind, len(out)))
        return np.stack(out)

    def accumulated(self, name: str) -> np.ndarray:
        return self.trace[name]


def teacher_forced(
    model: Transformer,
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    source: str,
    target: str,
    top_k: int = 10,
    names: Iterable[str] | None = None,
) -> TeacherForced:
    """Run the model once on ``source`` with the typed ``target`` (teacher forcing). An empty
    target is allowed (SOS in, EOS out). A target longer than ``max_len - 1`` tokens is
    truncated, unknown target characters become UNK; each with a notice."""
    _check_model(model)
    cfg = model.config
    src = prepare_source(src_tokenizer, source, cfg.max_len)
    target = (target or "").strip()
    y = tgt_tokenizer.encode(target) if target else []
    notices = list(src.notices)
    unknown = tgt_tokenizer.unknown_characters(target) if target else []
    if unknown:
        notices.append(f"unknown target character(s) {' '.join(unknown)} shown as UNK")
    if len(y) + 1 > cfg.max_len:
        notices.append(f"target truncated to the model's maximum length: {cfg.max_len - 1} of {len(y)} tokens kept")
        y = y[: cfg.max_len - 1]
    inputs = (BOS_ID, *y)
    labels = (*y, EOS_ID)
    device = _model_device(model)
    with torch.inference_mode():
        logits, trace = model.run_with_trace(
            torch.tensor([src.ids], device=device), torch.tensor([inputs], device=device), names=names
        )
        logits = logits[0].float().cpu()  # [Lt, V]
        probs = torch.softmax(logits, -1)
        logp = torch.log_softmax(logits.double(), -1)
    tok = tgt_tokenizer
    positions = []
    for i, (inp, lab) in enumerate(zip(inputs, labels)):
        pred = int(torch.argmax(logits[i]))
        positions.append(
            ForcedPosition(
                index=i,
                input_id=inp,
                input_piece=tok.piece(inp),
                target_id=lab,
                target_piece=tok.piece(lab),
                predicted_id=pred,
                predicted_piece=tok.piece(pred),
                match=pred == lab,
                target_prob=float(probs[i, lab]),
                loss=float(-logp[i, lab]),
                entropy=_entropy(logits[i]),
                topk=_topk(probs[i], top_k, tok),
            )
        )
    return TeacherForced(src, target, inputs, tuple(tok.pieces(inputs)), labels, tuple(tok.pieces(labels)), tuple(positions), trace, tuple(notices))


def teacher_forced_from_bundle(bundle: "Bundle", source: str, target: str, **kw) -> TeacherForced:
    return teacher_forced(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, source, target, **kw)


def translate(bundle: "Bundle", text: str, strategy: Strategy | None = None, max_len: int | None = None) -> tuple[str, tuple[DecodeStep, ...]]:
    """Decode ``text`` to the end without capturing traces: (translation, steps)."""
    session = DecodingSession.from_bundle(bundle, text, strategy=strategy, max_len=max_len, capture=False)
    session.run()
    return session.translation(), session.steps
