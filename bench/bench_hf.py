"""A Marian (opus-mt) model: one KV-cached decoder step with full capture, ours vs ``transformers``'
cached step with ``output_attentions=True`` on the same weights (BASE size: 6+6 layers, 8 heads,
d_model 512, d_ff 2048, opus-mt's 65,001-piece shared vocabulary). Needs ``pip install 'attnviz[hf]'``."""

from __future__ import annotations

import copy
import statistics
import time
import warnings
from pathlib import Path

import smoke
import torch
from bench_core import floor_step

from attnviz.core import Recorder
from attnviz.core.model.families.marian import config_from_hf, hf_state_dict
from attnviz.core.model.transformer import Transformer

BASE = dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
            encoder_ffn_dim=2048, decoder_ffn_dim=2048, vocab_size=65001, max_position_embeddings=512)
PREFIX, STEPS, REPEAT = smoke.pick((8, 16, 5), (2, 2, 1))  # target positions already decoded; steps timed per run; runs (median)


def build():
    """A random MarianMTModel of opus-mt's shape and ours with its weights."""
    import transformers

    v = BASE["vocab_size"]
    hf_config = transformers.MarianConfig(**BASE, decoder_vocab_size=v, activation_function="swish", scale_embedding=True,
                                          pad_token_id=v - 1, eos_token_id=0, decoder_start_token_id=v - 1, forced_eos_token_id=None)
    torch.manual_seed(0)
    hf_config._attn_implementation = "eager"  # the implementation that returns attention weights
    theirs = transformers.MarianMTModel(hf_config).eval()
    config = config_from_hf(hf_config.to_dict(), Path("config.json"), unk_id=1)
    ours = Transformer(config)
    ours.load_state_dict(hf_state_dict(theirs.state_dict(), config, Path("model")), strict=False)
    return theirs, ours.eval()


def per_step(run_once) -> float:
    """Median seconds per step of ``run_once() -> seconds for STEPS steps``."""
    run_once()  # warm-up
    return statistics.median(run_once() for _ in range(REPEAT)) / STEPS


def time_ours(model: Transformer, src: torch.Tensor, tokens: torch.Tensor, read: str) -> float:
    """Our cached steps with full capture; ``read``: "one" array (what a view reads) or "all" arrays as numpy."""
    cache0 = model.start_decoding(model.encode(src))
    for t in range(PREFIX):
        _, cache0 = model.decode_step(tokens[:, t], cache0)

    def run_once() -> float:
        cache = cache0  # caches are immutable: every run starts here
        t0 = time.perf_counter()
        for t in range(PREFIX, PREFIX + STEPS):
            rec = Recorder()
            _, cache = model.decode_step(tokens[:, t], cache, rec)
            trace = rec.trace()
            for name in list(trace) if read == "all" else ("decoder.layers.0.cross_attn.weights",):
                trace[name]
        return time.perf_counter() - t0

    return per_step(run_once)


def time_theirs(model, src: torch.Tensor, tokens: torch.Tensor) -> float:
    """transformers' cached steps with ``output_attentions=True``; the cache (mutated in place) is copied untimed."""
    enc = model.get_encoder()(input_ids=src)
    prefilled = model(encoder_outputs=enc, decoder_input_ids=tokens[:, :PREFIX], use_cache=True).cache

    def run_once() -> float:
        cache = copy.deepcopy(prefilled)
        t0 = time.perf_counter()
        for t in range(PREFIX, PREFIX + STEPS):
            step = model(encoder_outputs=enc, decoder_input_ids=tokens[:, t : t + 1], cache=cache, use_cache=True, output_attentions=True)
            assert step.cross_attentions is not None
            cache = step.cache
        return time.perf_counter() - t0

    return per_step(run_once)


def run(report=print, threads: int = 1) -> dict:
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    try:
        import transformers
    except ImportError:
        report("== hf: skipped: transformers is not installed (pip install 'attnviz[hf]') ==")
        return {}
    report(f"== hf (transformers {transformers.__version__}, torch {torch.__version__}, {threads} thread{'s' if threads > 1 else ''}) ==")
    theirs, ours = build()
    g = torch.Generator().manual_seed(1)
    src = torch.randint(2, BASE["vocab_size"] - 1, (1, 16), generator=g)
    tokens = torch.randint(2, BASE["vocab_size"] - 1, (1, PREFIX + STEPS), generator=g)
    tokens[0, 0] = ours.config.bos_id
    with torch.inference_mode():
        t_theirs = time_theirs(theirs, src, tokens)
        t_one = time_ours(ours, src, tokens, "one")
        t_all = time_ours(ours, src, tokens, "all")
        t_floor = floor_step(ours)
    ms = lambda s: f"{s * 1e3:7.2f} ms"  # noqa: E731
    report("-- BASE Marian: d_model 512, 8 heads, 6+6 layers, d_ff 2048, vocab 65001; one step at positions "
           f"{PREFIX}..{PREFIX + STEPS - 1}, source 16")
    report(f"step, transformers, output_attentions        {ms(t_theirs)}   1.00x")
    report(f"step, ours, full capture (a view reads one)  {ms(t_one)}   {t_one / t_theirs:.2f}x  (target <= 0.80x)")
    report(f"step, ours, full capture, every array numpy  {ms(t_all)}   {t_all / t_theirs:.2f}x")
    report(f"step floor (bare mat-vec chain, same weights) {ms(t_floor)}   {t_floor / t_theirs:.2f}x  (no implementation of this arithmetic is faster)")
    return dict(theirs=t_theirs, ours=t_one, ours_all=t_all, floor=t_floor)


if __name__ == "__main__":
    run()
