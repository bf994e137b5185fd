"""Decoding-session benchmarks: the cost of one ``DecodingSession.step()`` with full capture.

For the bundled default model (when present) and for a BASE model (d_model 512, 8 heads, 6+6
layers, vocab 8000, random weights), per-step latency averaged over a decoding of ``STEPS``
tokens, next to references measured in the same run:

* our model's bare KV-cached ``decode_step`` without capture (the floor a session adds to),
* ``torch.nn.Transformer`` recomputing the whole prefix at every step (no cache): for BASE the
  very model ours was imported from; for the default, one of the same sizes.

"session step" is ``step()`` alone (the trace stays lazy); "+ read trace" also converts every
array of the step's trace to numpy (what a view that shows everything pays); "+ matrices" then
assembles all accumulated decoder and cross-attention matrices (what the attention grid reads).
"""

from __future__ import annotations

import math
import statistics
import time
import warnings

import smoke
import torch
from torch import nn

from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import Greedy

STEPS = smoke.pick(24, 3)


def _per_step(fns: dict, steps: int, rounds: int) -> dict:
    """Median seconds per step of each function (one call decodes ``steps`` tokens). The functions
    run interleaved, round after round, so a load change on a shared machine hits all of them."""
    for fn in fns.values():
        fn()  # warm-up
    times: dict = {k: [] for k in fns}
    for _ in range(smoke.pick(rounds, 1)):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append((time.perf_counter() - t0) / steps)
    return {k: statistics.median(v) for k, v in times.items()}


def _measure(report, label: str, model, src_tok, tgt_tok, source: str, torch_ref=None, repeat: int = 3) -> dict:
    model.eval()
    session = DecodingSession(model, src_tok, tgt_tok, source, strategy=Greedy(), max_len=STEPS)
    session.run()
    tokens = list(session.tgt_ids[1:])  # every method decodes these tokens (the session replays them with force())
    steps = len(tokens)

    def session_steps(read: bool = False, matrices: bool = False):
        session.reset()
        for t in tokens:
            d = session.force(t)
            if read:
                for k in d.trace:
                    d.trace[k]
            if matrices:
                session.all_attention("decoder"), session.all_attention("cross")

    src = torch.tensor([session.src_ids])
    fed = torch.tensor([session.tgt_ids[:1] + tuple(tokens[:-1])])
    with torch.inference_mode():
        cache0 = model.start_decoding(model.encode(src))

        def bare():
            cache = cache0
            for t in range(steps):
                _, cache = model.decode_step(fed[:, t], cache)

        fns = {
            "bare": bare,
            "session": session_steps,
            "read": lambda: session_steps(read=True),
            "matrices": lambda: session_steps(read=True, matrices=True),
        }
        if torch_ref is not None:
            fns["torch"] = lambda: torch_ref(src, fed)
        t = _per_step(fns, steps, repeat)
    t_bare, t_session, t_read, t_mats, t_torch = t["bare"], t["session"], t["read"], t["matrices"], t.get("torch")
    ms = lambda s: f"{s * 1e3:7.2f} ms"  # noqa: E731
    report(f"-- {label}: {model.config.describe()}; {steps} steps, source of {len(session.src_ids)} tokens")
    report(f"decode_step, KV cache, no capture (reference)  {ms(t_bare)}   1.00x")
    report(f"session step, full capture                     {ms(t_session)}   {t_session / t_bare:.2f}x")
    report(f"session step + read its whole trace            {ms(t_read)}   {t_read / t_bare:.2f}x")
    report(f"session step + trace + all accumulated matrices{ms(t_mats)}   {t_mats / t_bare:.2f}x")
    if t_torch is not None:
        report(f"nn.Transformer recomputing the prefix          {ms(t_torch)}   {t_torch / t_bare:.2f}x"
               f"   (session step speed-up vs it: {t_torch / t_session:.1f}x)")
    return dict(bare=t_bare, session=t_session, read=t_read, matrices=t_mats, torch_recompute=t_torch, steps=steps)


def _torch_like(config):
    """A ``torch.nn.Transformer`` of the same sizes as ``config`` (random weights: only its time is used)."""
    torch.manual_seed(0)
    tr = nn.Transformer(d_model=config.d_model, nhead=config.n_heads, num_encoder_layers=config.n_encoder_layers,
                        num_decoder_layers=config.n_decoder_layers, dim_feedforward=config.d_ff, dropout=0.0, batch_first=True,
                        norm_first=config.norm_placement == "pre").eval()
    es, et = nn.Embedding(config.src_vocab_size, config.d_model), nn.Embedding(config.tgt_vocab_size, config.d_model)
    return _torch_reference(tr, es, et, nn.Linear(config.d_model, config.tgt_vocab_size), config.d_model)


def _torch_reference(tr, es, et, gen, d_model: int):
    from attnviz.core import sinusoidal_encoding

    pe = sinusoidal_encoding(512, d_model)

    def recompute(src, fed):
        mem = tr.encoder(es(src) * math.sqrt(d_model) + pe[: src.shape[1]])
        for t in range(fed.shape[1]):
            x = et(fed[:, : t + 1]) * math.sqrt(d_model) + pe[: t + 1]
            causal = nn.Transformer.generate_square_subsequent_mask(t + 1)
            gen(tr.decoder(x, mem, tgt_mask=causal, tgt_is_causal=True)[:, -1:])

    return recompute


def _base_tokenizers(vocab: int):
    """Tokenizers whose vocabulary sizes match a random BASE model (pieces are only labels here)."""
    import random

    from attnviz.core.data.tokenizer import Tokenizer

    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(20000)]
    lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(4000)]
    tok = Tokenizer.train(lines, vocab_size=vocab, model_type="bpe")
    return tok, lines[0]


def run(report=print, threads: int = 1) -> dict:
    import bench_core  # the same BASE model the core benchmark uses (imported from torch.nn.Transformer)

    from attnviz.core import Transformer, TransformerConfig
    from attnviz.core.bundle import BundleError, load_bundle
    from attnviz.paths import default_model

    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    report(f"== decoding (torch {torch.__version__}, {threads} thread{'s' if threads > 1 else ''}) ==")
    results = {}
    try:
        bundle = load_bundle(default_model())
    except BundleError as exc:
        report(f"-- bundled default: not available ({exc})")
    else:
        results["default"] = _measure(report, f"bundled default ({bundle.name})", bundle.model, bundle.src_tokenizer, bundle.tgt_tokenizer,
                                      "我们一起去图书馆看书吧。", torch_ref=_torch_like(bundle.config), repeat=15)
    if smoke.on() and results:
        return results  # the bundled default is the smallest size
    size = dict(bench_core.SIZES["BASE"])
    tok, line = _base_tokenizers(size["tgt_vocab"])
    size["src_vocab"] = size["tgt_vocab"] = tok.vocab_size
    tr, es, et, gen, model = bench_core.build(size)
    ref = _torch_reference(tr.eval(), es, et, gen, size["d_model"])
    assert isinstance(model, Transformer) and isinstance(model.config, TransformerConfig)
    results["BASE"] = _measure(report, "BASE (random weights)", model, tok, tok, " ".join(line.split()[:12]), torch_ref=ref, repeat=5)
    return results


if __name__ == "__main__":
    run()
