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
* ``peek()`` gives the distribution the next ``step()`` reports (top-k and entropy) without
  changing the session; the model call it makes is kept for that step.
* ``accumulated(name)`` assembles any decoder trace name over all steps so far from the
  cached per-step rows (no recompute, see ``history.StepHistory``); the result has the shape a
  full teacher-forced pass over the same prefix would give (``attention("decoder", i)`` is
  lower-triangular ``[head, steps, steps]``, ``attention("cross", i)`` is ``[head, steps, src]``).

Rows and columns. After ``n`` steps the decoder has been fed ``n`` tokens, ``tgt_ids[:n]``
(SOS first), and has produced ``n`` tokens, ``tgt_ids[1:]``. Row ``i`` of every accumulated
matrix is the query of the fed token ``tgt_ids[i]`` (``input_pieces[i]``), the row whose
distribution chose ``tgt_ids[i + 1]`` (``output_pieces[i]``).

Documented behaviours (never a traceback; ``DecodingError`` carries a one-line message):

* an empty (or all-whitespace) source: ``DecodingError``;
* a source longer than the model's ``max_len`` tokens: truncated to ``max_len``, with a notice that
  says where the limit comes from (``TransformerConfig.length_limit``);
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

Around the session: ``result`` (``DecodingResult``, the questions a session and a teacher-forced
pass both answer; the prepared source), ``strategies`` (the strategies and their mechanics,
``parse_strategy``, ``DecodingError``), ``history`` (``StepHistory``: the model calls and the
accumulated arrays) and ``teacher_forcing`` (``teacher_forced``: a typed target in one pass).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.decoding.history import ModelCall, StepHistory, calls_of_pass
from attnviz.core.decoding.result import (
    DecodingResult,
    PreparedSource,
    TopK,
    check_eval_mode,
    check_finite,
    checked_interventions,
    entropy_nats,
    model_device,
    prepare_source,
    topk_list,
)
from attnviz.core.decoding.strategies import (
    BeamSearch,
    DecodingError,
    Greedy,
    Hypothesis,
    Sampling,
    Strategy,
    beam_candidates,
    rank_score,
    sample_token,
)
from attnviz.core.model.trace import Change, Recorder, Trace
from attnviz.core.model.transformer import DecoderCache, Transformer

if TYPE_CHECKING:
    from attnviz.core.bundle import Bundle
    from attnviz.core.model.config import TransformerConfig


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
    topk: TopK  # (piece, id, probability), most likely first
    entropy: float  # of the model's next-token distribution, in nats
    forced: bool  # chosen by the user (force), not by the strategy
    is_eos: bool
    beams: tuple[Beam, ...]  # the beams after this step, best first (greedy/sampling: one)
    trace: Trace  # decoder names only; query length 1, keys = positions 0..index
    prob: float = float("nan")  # probability the model gave token_id


@dataclass(frozen=True)
class NextToken:
    """The distribution the next step reports (``DecodingSession.peek``)."""

    topk: TopK  # (piece, id, probability), most likely first
    entropy: float  # nats


@dataclass(frozen=True)
class _State:
    live: tuple[Hypothesis, ...]  # unfinished hypotheses; the cache's batch rows follow this order
    finished: tuple[Hypothesis, ...]
    ranked: tuple[Hypothesis, ...]  # live + finished, best first; ranked[0] is the session's hypothesis
    cache: DecoderCache | None
    rng_state: torch.Tensor | None
    done: bool
    notice: str | None = None


def forced_first_of(tgt_tokenizer) -> int | None:
    """The token a target tokenizer asks decoding to start with (mBART's language code), if any."""
    return getattr(tgt_tokenizer, "forced_first_token", None)


class DecodingSession(DecodingResult):
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
        interventions: Iterable[Change] = (),
        forced_first_token: int | None = None,
    ):
        """``max_len``: most target tokens to generate (default ``min(model max_len, 2 x source
        tokens + 10)``; never more than the model's ``max_len``). A decoder-only model (GPT-2) has
        no encoder: ``source`` is its prompt, fed to the decoder after SOS as forced steps that
        ``back()`` and ``reset()`` keep (made in one decoder pass: later steps cost one position
        each), and ``max_len`` counts the tokens after it. ``top_k``: how many entries each
        step's top-k list has. ``capture``: record every trace name (True), none (False: faster,
        empty traces) or the names matching the given glob patterns. ``interventions``
        (``model/interventions.py``) change the encoder pass (hence the memory every step reads)
        and every decoder step where they act. ``forced_first_token``: a token the first step always
        appends (mBART's target-language code; ``transformers``' ``forced_bos_token_id``), a forced
        step that ``back()`` and ``reset()`` keep, counted in ``max_len``; ``None`` (the default): none."""
        check_eval_mode(model)
        self.model = model
        self.config = model.config
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.top_k = int(top_k)
        self._names = None if capture is True else (() if capture is False else tuple(capture))
        self._capture = capture is not False
        self.interventions = checked_interventions(interventions, model.config)
        self._device = model_device(model)
        prompted = self.config.kind == "decoder-only"  # the source is a prompt fed after SOS, as forced steps
        self.source = prepare_source(src_tokenizer, source, self.config, reserved=1 if prompted else 0)
        self._prompt = self.source.ids if prompted else ()
        self._forced_first = () if forced_first_token is None else (forced_first_token,)
        self._first: tuple[Strategy, FrozenDecoding] | None = None  # the row at step 0 (first_row), with its strategy
        default = min(self.config.max_len, 2 * len(self.source.ids) + 10)
        if max_len is not None and (not isinstance(max_len, int) or max_len < 1):
            raise DecodingError(f"maximum length must be a positive integer, not {max_len!r}")
        self.max_len = default if max_len is None else min(len(self._prompt) + max_len, self.config.max_len)
        self._banned = tuple(t for t in (self.config.pad_id, self.config.bos_id) if t != self.config.eos_id)  # never generated (EOS always may be)
        src = torch.tensor([self.source.ids], dtype=torch.long, device=self._device)
        with torch.inference_mode():
            rec = self._recorder(0)
            self._encoded = model.encode(src, rec)
            self._start_cache = model.start_decoding(self._encoded)
        self.encoder_trace: Trace = rec.trace() if rec is not None else Trace()
        self._strategy: Strategy = strategy if strategy is not None else Greedy()
        self._history = StepHistory(self.config)
        self._prompt_pass: tuple[list[ModelCall], DecoderCache] | None = None  # made once, kept by reset()
        self._pieces_of: tuple[tuple[int, ...], tuple[str, ...]] = ((), ())  # tgt_pieces' last ids and their pieces
        self.reset()

    @classmethod
    def from_bundle(cls, bundle: Bundle, source: str, **kw) -> DecodingSession:
        """A session of ``bundle``'s model, forcing the first token its target tokenizer asks for (mBART's language code)."""
        kw.setdefault("forced_first_token", forced_first_of(bundle.tgt_tokenizer))
        return cls(bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer, source, **kw)

    # -- state --------------------------------------------------------------------------------
    @property
    def strategy(self) -> Strategy:
        return self._strategy

    @property
    def _state(self) -> _State:
        return self._states[-1]

    @property
    def _hyp(self) -> Hypothesis:
        return self._state.ranked[0]

    @property
    def tgt_ids(self) -> tuple[int, ...]:
        """The current hypothesis, SOS first (``len(steps) + 1`` tokens)."""
        return self._hyp.tokens

    @property
    def tgt_pieces(self) -> tuple[str, ...]:
        """The current hypothesis's pieces; the last ones asked for are kept, and a longer
        hypothesis that starts with them looks up only its new tokens (a step reads them several times)."""
        ids = self.tgt_ids
        known_ids, known = self._pieces_of
        if ids != known_ids:
            common = len(known_ids) if ids[: len(known_ids)] == known_ids else 0
            known = known[:common] + tuple(self.tgt_tokenizer.pieces(ids[common:]))
            self._pieces_of = (ids, known)
        return known

    @property
    def input_ids(self) -> tuple[int, ...]:
        """The tokens fed to the decoder so far (SOS first): the rows of the accumulated matrices."""
        return self.tgt_ids[:-1]

    @property
    def input_pieces(self) -> tuple[str, ...]:
        """The tokens fed to the decoder so far: the rows (and decoder-self columns) of the accumulated matrices."""
        return self.tgt_pieces[: len(self.tgt_ids) - 1]

    @property
    def output_ids(self) -> tuple[int, ...]:
        """The tokens produced so far: row i of an accumulated matrix chose output_ids[i]."""
        return self.tgt_ids[1:]

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
        return len(self._states) > self._floor

    @property
    def n_steps(self) -> int:
        """Number of step()/force() calls kept (``back()`` undoes one); ``len(steps)`` can be
        smaller in beam search when the best beam ended earlier."""
        return len(self._history)

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

    def frozen(self) -> FrozenDecoding:
        """The result as it stands now, unchanged by later steps (see :meth:`prefix`)."""
        return self.prefix(len(self._history))

    def prefix(self, n_steps: int) -> FrozenDecoding:
        """The result after the first ``n_steps`` kept ``step``/``force`` calls, frozen: later
        steps, ``back`` and ``reset`` leave it as it is, so another thread may read it while
        this session steps on."""
        if not 0 <= n_steps <= len(self._history):
            raise DecodingError(f"no prefix of {n_steps} steps: {len(self._history)} are kept")
        state = self._states[n_steps]
        hyp = state.ranked[0]
        steps = tuple(self._decode_step(i, row, hyp.tokens[i + 1], forced) for i, (row, forced) in enumerate(hyp.origin))
        pieces = tuple(self.tgt_tokenizer.pieces(hyp.tokens))
        notices = (*self.source.notices, *((state.notice,) if state.notice else ()))
        return FrozenDecoding(
            config=self.config, source=self.source, input_ids=hyp.tokens[:-1], input_pieces=pieces[:-1],
            output_ids=hyp.tokens[1:], output_pieces=pieces[1:], steps=steps, notices=notices,
            encoder_trace=self.encoder_trace, history=self._history.snapshot(n_steps), origin=tuple(hyp.origin),
        )

    def accumulated(self, name: str) -> np.ndarray:
        """Trace array ``name`` over the whole current hypothesis, with the shape a full pass over
        the fed tokens gives (see ``trace_schema``): encoder names come from ``encoder_trace``;
        decoder names are assembled from the steps' cached rows (``StepHistory.accumulated``)."""
        if name in self.encoder_trace:
            return self.encoder_trace[name]
        return self._history.accumulated(name, self._hyp.origin)

    def accumulated_stack(self, names: Sequence[str]) -> np.ndarray:
        if not names or names[0] in self.encoder_trace:
            return super().accumulated_stack(names)
        return self._history.stacked(tuple(names), self._hyp.origin)

    # -- actions ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to SOS (the encoder result is kept), or to the end of a decoder-only model's prompt
        and the forced first token."""
        rng = None
        if isinstance(self._strategy, Sampling):
            rng = torch.Generator().manual_seed(int(self._strategy.seed)).get_state()
        root = Hypothesis((self.config.bos_id,), 0.0, False, ())
        self._states: list[_State] = [_State((root,), (), (root,), self._start_cache, rng, self.max_len <= 0)]
        self._history.clear()
        self._step_objects: dict[tuple[int, int, int, bool], DecodeStep] = {}
        self._beam_objects: dict[int, tuple[Beam, ...]] = {}
        self._steps_cache: tuple | None = None
        self._peeked: tuple[_State, ModelCall, DecoderCache] | None = None
        self._feed_prompt()
        for token in self._forced_first:
            if self.finished:
                break
            self.force(token)
        self._floor = len(self._states)  # the states back() never pops: SOS, the prompt and the forced first token

    def set_strategy(self, strategy: Strategy, keep_tokens: bool = False) -> tuple[DecodeStep, ...]:
        """Use ``strategy`` from now on. The session restarts from SOS; with ``keep_tokens`` the
        current hypothesis's tokens (EOS excepted) are replayed as forced steps first. Returns the
        steps forced with ``force`` that the restart dropped (none with ``keep_tokens``; the prompt
        and the forced first token are fed again)."""
        if not isinstance(strategy, (Greedy, Sampling, BeamSearch)):
            raise DecodingError(f"not a decoding strategy: {strategy!r}")
        tokens = [t for t in self.tgt_ids[self._floor :] if t != self.config.eos_id] if keep_tokens else []
        dropped = () if keep_tokens else tuple(s for s in self.steps[self._floor - 1 :] if s.forced)
        self._strategy = strategy
        self.reset()
        for t in tokens:
            if self.finished:
                break
            self.force(t)
        return dropped

    def step(self) -> DecodeStep:
        """Append one token chosen by the strategy; returns the new step of the current hypothesis."""
        self._check_can_extend()
        call, cache = self._next_call()
        live, fin, rng_state = self._choose(call)
        self._push(call, cache, live, fin, rng_state)
        return self._last_step()

    def peek(self) -> NextToken:
        """The distribution the next ``step()`` reports (its top-k and entropy), the session left
        exactly as it is. The model call is kept, so that ``step()`` (and ``force()`` with one live
        hypothesis) does not run it again."""
        self._check_can_extend()
        call, _ = self._next_call()
        live, fin, _ = self._choose(call)
        best = self._ranked(live, fin)[0]
        index, (row, _) = len(best.origin) - 1, best.origin[-1]
        made = call if index == len(self._history) else self._history[index]
        return NextToken(topk_list(made.probs[row], self.top_k, self.tgt_tokenizer), entropy_nats(made.logits[row]))

    def first_row(self) -> FrozenDecoding:
        """What step 0 shows: the row SOS is fed in, one step on, frozen, with the session left at
        step 0 (a sampled token is drawn again the same, as ``back`` restores the generator); kept
        while the strategy is the same."""
        if self._first is None or self._first[0] != self._strategy:
            self.step()
            row = self.prefix(1)
            self.back()
            self._first = (self._strategy, row)
        return self._first[1]

    def force(self, token: str | int) -> DecodeStep:
        """Append ``token`` (a piece, e.g. from a top-k list, or an id) instead of the strategy's
        choice. In a beam search, the leading beam continues alone."""
        st = self._state
        self._check_can_extend()
        token_id = self.token_id(token)
        hyp = st.ranked[0]
        if len(st.live) == 1:  # the call a step() would make
            call, cache = self._next_call()
        else:
            cache = st.cache.select(torch.tensor([st.live.index(hyp)], device=self._device))
            call, cache = self._run_model((hyp,), cache)
        logp = torch.log_softmax(call.logits.double(), -1)
        new = hyp.extend(token_id, float(logp[0, token_id]), 0, True, self.config.eos_id)
        live, fin = ((), (new,)) if new.finished else ((new,), ())
        self._push(call, cache, live, fin, st.rng_state)
        return self._last_step()

    def back(self) -> None:
        """Undo the last ``step``/``force``: the session is exactly as it was before it."""
        if len(self._states) <= self._floor:
            raise DecodingError("nothing to undo: no token has been decoded yet")
        self._states.pop()
        self._history.pop()
        n = len(self._history)
        self._step_objects = {k: v for k, v in self._step_objects.items() if k[0] < n}
        self._beam_objects.pop(n + 1, None)
        self._steps_cache = None
        self._peeked = None

    def run(self) -> tuple[DecodeStep, ...]:
        """Step until EOS or the maximum length; returns all steps of the final hypothesis."""
        while not self.finished:
            self.step()
        return self.steps

    def go_to(self, n_steps: int | None) -> None:
        """From SOS again, ``n_steps`` steps of the strategy (``None``: to EOS or the maximum
        length; fewer where decoding finishes first)."""
        self.reset()
        while self.can_step and (n_steps is None or len(self.steps) < n_steps):
            self.step()

    def replay(self, tokens: Sequence[int], forced: Iterable[int] = ()) -> None:
        """Step through ``tokens``: those at the indices in ``forced`` are forced again; a free step
        takes the strategy's choice, forced to the given token where it differs (a changed model)."""
        forced = set(forced)
        for i, token in enumerate(tokens):
            if self.finished:
                break
            if i in forced:
                self.force(token)
                continue
            self.step()
            if self.tgt_ids[-1] != token:
                self.back()
                self.force(token)

    def token_id(self, token: str | int) -> int:
        """The target id of a piece (also ``SOS``/``EOS``/``UNK`` by name; a piece typed without its
        word-start mark ``▁`` is found too) or of an id; ``DecodingError`` if there is none."""
        tok, unk = self.tgt_tokenizer, self.config.unk_id
        if isinstance(token, (int, np.integer)) and not isinstance(token, bool):
            token_id = int(token)
            if not 0 <= token_id < tok.vocab_size:
                raise DecodingError(f"token id {token_id} is outside the target vocabulary (0..{tok.vocab_size - 1})")
        elif isinstance(token, str) and token:
            token_id = tok.piece_to_id(token)
            if token_id == unk and token not in ("UNK", "<unk>"):
                token_id = tok.piece_to_id("\u2581" + token)
                if token_id == unk:
                    raise DecodingError(f"{token!r} is not a piece of the target vocabulary")
        else:
            raise DecodingError(f"cannot force {token!r}: give a piece or a token id")
        if token_id in self._banned:
            raise DecodingError(f"cannot force {tok.piece(token_id)}: only a real token or EOS can follow")
        return token_id

    # -- internals --------------------------------------------------------------------------------
    def _feed_prompt(self) -> None:
        """A decoder-only model's prompt as the forced steps that feeding it token by token makes,
        from one decoder pass over SOS and the prompt (made once per session); a model with BatchNorm
        is fed step by step (a cached step's batch statistics are over its one token)."""
        tokens = self._prompt_tokens()
        if not tokens or self.config.norm == "batch":
            for token in tokens:
                self.force(token)
            return
        calls, cache = self._prompt_calls(tokens)
        hyp = self._hyp
        for i, (call, token) in enumerate(zip(calls, tokens)):
            logp = torch.log_softmax(call.logits.double(), -1)  # as force() scores its token
            hyp = hyp.extend(token, float(logp[0, token]), 0, True, self.config.eos_id)
            live, fin = ((), (hyp,)) if hyp.finished else ((hyp,), ())
            self._push(call, cache if i == len(tokens) - 1 else None, live, fin, self._state.rng_state)  # back() never returns to the others

    def _prompt_tokens(self) -> tuple[int, ...]:
        """The prompt's tokens that forced steps append: each checked as ``force`` checks it, up to
        the first EOS or the maximum length (either ends the decoding)."""
        tokens = []
        for token in self._prompt[: max(self.max_len, 0)]:
            tokens.append(self.token_id(token))
            if tokens[-1] == self.config.eos_id:
                break
        return tuple(tokens)

    def _prompt_calls(self, tokens: tuple[int, ...]) -> tuple[list[ModelCall], DecoderCache]:
        """The model calls of the prompt's forced steps and the cache after them, from one
        ``Transformer.prefill`` over the tokens they feed (SOS and the prompt but its last token)."""
        if self._prompt_pass is None:
            fed = torch.tensor([[self.config.bos_id, *tokens[:-1]]], dtype=torch.long, device=self._device)
            rec = self._recorder(0)
            with torch.inference_mode():
                logits, cache = self.model.prefill(fed, self._start_cache, rec)
                logits = logits[0].float().cpu()  # [n, V]
            check_finite(logits, "over the prompt")
            self._prompt_pass = (calls_of_pass(self.config, rec.trace() if rec is not None else Trace(), logits), cache)
        return self._prompt_pass

    def _check_can_extend(self) -> None:
        if self._state.done:
            why = "EOS was chosen" if self._hyp.finished else f"the maximum length ({self.max_len} tokens) was reached"
            raise DecodingError(f"decoding is finished ({why}); use back() or reset() to continue")

    def _next_call(self) -> tuple[ModelCall, DecoderCache]:
        """The model call on the live hypotheses of the current state: made once, kept until the state changes."""
        st = self._state
        if self._peeked is None or self._peeked[0] is not st:
            call, cache = self._run_model(st.live, st.cache)
            self._peeked = (st, call, cache)
        return self._peeked[1], self._peeked[2]

    def _run_model(self, live: Sequence[Hypothesis], cache: DecoderCache) -> tuple[ModelCall, DecoderCache]:
        n = len(live)
        tokens = torch.tensor([h.tokens[-1] for h in live], dtype=torch.long, device=self._device)
        rec = self._recorder(0 if n == 1 else None)
        with torch.inference_mode():
            logits, new_cache = self.model.decode_step(tokens, cache, rec)
            logits = logits.float()
            probs = torch.softmax(logits, -1)
        check_finite(logits, f"at step {len(self._history) + 1}")
        call = ModelCall(rec.trace() if rec is not None else Trace(), self._capture and n > 1, logits.cpu(), probs.cpu())
        return call, new_cache

    def _recorder(self, batch_index: int | None) -> Recorder | None:
        """The per-call recorder: what to capture and the interventions (None when there is neither)."""
        if not self._capture and not self.interventions:
            return None
        return Recorder(self._names if self._capture else (), batch_index, self.interventions)

    def _choose(self, call: ModelCall) -> tuple[tuple[Hypothesis, ...], tuple[Hypothesis, ...], torch.Tensor | None]:
        """What the strategy makes of ``call`` from the current state: (live, finished, random state). No state changes."""
        st, s, eos = self._state, self._strategy, self.config.eos_id
        logp = torch.log_softmax(call.logits.double(), -1)  # [n, V]
        logp[:, list(self._banned)] = -math.inf
        if isinstance(s, BeamSearch):
            return (*beam_candidates(st.live, st.finished, logp, s, eos), st.rng_state)
        rng_state = st.rng_state
        if isinstance(s, Sampling):
            gen = torch.Generator()
            gen.set_state(st.rng_state)
            token = sample_token(call.logits[0], s, gen, self._banned)
            rng_state = gen.get_state()
        else:
            token = int(torch.argmax(logp[0]))
        hyp = st.live[0].extend(token, float(logp[0, token]), 0, False, eos)
        return ((), (hyp,), rng_state) if hyp.finished else ((hyp,), (), rng_state)

    def _ranked(self, live: tuple[Hypothesis, ...], fin: tuple[Hypothesis, ...]) -> tuple[Hypothesis, ...]:
        return tuple(sorted(live + fin, key=lambda h: rank_score(h, self._strategy), reverse=True))

    def _push(self, call: ModelCall, cache: DecoderCache, live: tuple[Hypothesis, ...], fin: tuple[Hypothesis, ...], rng_state) -> None:
        """Make the state after a model call current. ``cache`` has one row per hypothesis fed;
        it is reordered to follow ``live`` (beam search)."""
        ranked = self._ranked(live, fin)
        done = not live or ranked[0].finished or len(self._history) + 1 >= self.max_len
        notice = None
        if done and not ranked[0].finished:
            notice = f"stopped at the maximum length ({self.max_len} tokens) before EOS"
        if done:
            cache = None
        elif cache is not None and len(live) and [h.origin[-1][0] for h in live] != list(range(cache.encoded.memory.shape[0])):
            cache = cache.select(torch.tensor([h.origin[-1][0] for h in live], device=self._device))
        self._history.push(call)
        self._states.append(_State(live, fin, ranked, cache, rng_state, done, notice))
        self._steps_cache = None
        self._peeked = None

    def _last_step(self) -> DecodeStep:
        hyp = self._hyp
        row, forced = hyp.origin[-1]
        return self._decode_step(len(hyp.origin) - 1, row, hyp.tokens[-1], forced)

    def _beams(self, state_index: int) -> tuple[Beam, ...]:
        hit = self._beam_objects.get(state_index)
        if hit is None:
            st = self._states[state_index]
            tok = self.tgt_tokenizer
            hit = tuple(
                Beam(h.tokens, tuple(tok.pieces(h.tokens)), float(rank_score(h, self._strategy)), h.finished, float(h.log_prob))
                for h in st.ranked
            )
            self._beam_objects[state_index] = hit
        return hit

    def _decode_step(self, index: int, row: int, token: int, forced: bool) -> DecodeStep:
        key = (index, row, token, forced)
        hit = self._step_objects.get(key)
        if hit is None:
            call = self._history[index]
            tok = self.tgt_tokenizer
            hit = DecodeStep(
                index=index,
                token_id=token,
                piece=tok.piece(token),
                topk=topk_list(call.probs[row], self.top_k, tok),
                entropy=entropy_nats(call.logits[row]),
                forced=forced,
                is_eos=token == self.config.eos_id,
                beams=self._beams(index + 1),
                trace=call.row_trace(row),
                prob=float(call.probs[row, token]),
            )
            self._step_objects[key] = hit
        return hit


@dataclass(frozen=True, eq=False)
class FrozenDecoding(DecodingResult):
    """A decoding session's result at one step (:meth:`DecodingSession.prefix`): the same
    answers as the session gave then, whatever it does next."""

    config: TransformerConfig
    source: PreparedSource
    input_ids: tuple[int, ...]
    input_pieces: tuple[str, ...]
    output_ids: tuple[int, ...]
    output_pieces: tuple[str, ...]
    steps: tuple[DecodeStep, ...]
    notices: tuple[str, ...]
    encoder_trace: Trace
    history: StepHistory  # a snapshot of the session's model calls up to this step
    origin: tuple[tuple[int, bool], ...]  # per step of the hypothesis: (row of its model call, forced)

    def frozen(self) -> FrozenDecoding:
        return self

    def accumulated(self, name: str) -> np.ndarray:
        if name in self.encoder_trace:
            return self.encoder_trace[name]
        return self.history.accumulated(name, self.origin)

    def accumulated_stack(self, names: Sequence[str]) -> np.ndarray:
        if not names or names[0] in self.encoder_trace:
            return super().accumulated_stack(names)
        return self.history.stacked(tuple(names), self.origin)


def translate(bundle: Bundle, text: str, strategy: Strategy | None = None, max_len: int | None = None) -> tuple[str, tuple[DecodeStep, ...]]:
    """Decode ``text`` to the end without capturing traces: (translation, steps)."""
    session = DecodingSession.from_bundle(bundle, text, strategy=strategy, max_len=max_len, capture=False)
    session.run()
    return session.translation(), session.steps
