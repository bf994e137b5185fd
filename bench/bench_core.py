"""Core benchmarks: forward with/without capture vs torch.nn.Transformer, and KV-cached decoding.

Every figure is printed next to a reference measured in the same run, as a ratio.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings

import smoke
import torch
from torch import nn

from attnviz.core import Recorder, import_torch_transformer, sinusoidal_encoding

SIZES = {
    "SMALL": dict(d_model=128, nhead=4, layers=3, d_ff=512, src_vocab=3000, tgt_vocab=2000),
    "BASE": dict(d_model=512, nhead=8, layers=6, d_ff=2048, src_vocab=8000, tgt_vocab=8000),
}


def timeit(fn, repeat: int = 7, number: int = 1, warmup: int = 2) -> float:
    """Median seconds per call (smoke mode: one call)."""
    if smoke.on():
        repeat, number, warmup = 1, 1, 0
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def build(size: dict):
    torch.manual_seed(0)
    tr = nn.Transformer(d_model=size["d_model"], nhead=size["nhead"], num_encoder_layers=size["layers"],
                        num_decoder_layers=size["layers"], dim_feedforward=size["d_ff"], batch_first=True, norm_first=True).eval()
    es = nn.Embedding(size["src_vocab"], size["d_model"])
    et = nn.Embedding(size["tgt_vocab"], size["d_model"])
    gen = nn.Linear(size["d_model"], size["tgt_vocab"])
    model = import_torch_transformer(tr, es, et, gen, max_len=256).eval()
    return tr, es, et, gen, model


def reference_forward(tr, es, et, gen, src, tgt, pe):
    d = es.embedding_dim
    causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
    out = tr(es(src) * math.sqrt(d) + pe[: src.shape[1]], et(tgt) * math.sqrt(d) + pe[: tgt.shape[1]], tgt_mask=causal, tgt_is_causal=True)
    return gen(out)


def floor_step(model) -> float:
    """The bare chain of matrix-vector products one cached decoder step must do, weights read once."""
    mats = []
    for layer in model.decoder.layers:
        sa, ca = layer.self_attn, layer.cross_attn
        mats += [sa.w_q.weight, sa.w_k.weight, sa.w_v.weight, sa.w_o.weight, ca.w_q.weight, ca.w_o.weight,
                 layer.ffn.linear1.weight, layer.ffn.linear2.weight]
    mats.append(model.generator.weight)
    mats = [m.detach().contiguous() for m in mats]
    vecs = [torch.randn(m.shape[1]) for m in mats]

    def chain():
        for m, v in zip(mats, vecs):
            torch.mv(m, v)

    return timeit(chain, repeat=15, number=5)


def run(report=print, threads: int = 1) -> dict:
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    results = {}
    report(f"== core (torch {torch.__version__}, {threads} thread{'s' if threads > 1 else ''}) ==")
    for name, size in smoke.first(SIZES).items():
        tr, es, et, gen, model = build(size)
        pe = sinusoidal_encoding(256, size["d_model"])
        g = torch.Generator().manual_seed(1)
        b, ls, lt = (8, 16, 16) if name == "SMALL" else (4, 16, 16)
        src = torch.randint(4, size["src_vocab"], (b, ls), generator=g)
        tgt = torch.randint(4, size["tgt_vocab"], (b, lt), generator=g)
        with torch.inference_mode():
            t_ref = timeit(lambda: reference_forward(tr, es, et, gen, src, tgt, pe))
            t_off = timeit(lambda: model(src, tgt))
            t_full = timeit(lambda: model(src, tgt, Recorder(batch_index=None)))
            # decoding 20 target tokens of one sentence
            s1 = src[:1]
            steps = smoke.pick(20, 2)
            toks = torch.randint(4, size["tgt_vocab"], (1, steps), generator=g)
            toks[0, 0] = model.config.bos_id

            cache0 = model.start_decoding(model.encode(s1))  # caches are immutable: every run starts here

            def cached(capture: bool):
                cache = cache0
                for t in range(steps):
                    rec = Recorder() if capture else None
                    _, cache = model.decode_step(toks[:, t], cache, rec)
                    if capture:
                        rec.trace()["decoder.layers.0.cross_attn.weights"]  # a view reads at least one array


            enc0 = model.encode(s1)

            def recompute_ours():
                enc = enc0
                for t in range(steps):
                    model.project(model.decode(toks[:, : t + 1], enc)[:, -1:])

            def recompute_torch():
                d = size["d_model"]
                for t in range(steps):
                    x = et(toks[:, : t + 1]) * math.sqrt(d) + pe[: t + 1]
                    causal = nn.Transformer.generate_square_subsequent_mask(t + 1)
                    gen(tr.decoder(x, mem, tgt_mask=causal, tgt_is_causal=True)[:, -1:])

            rep = 5 if name == "SMALL" else 3
            mem = tr.encoder(es(s1) * math.sqrt(size["d_model"]) + pe[: s1.shape[1]])
            t_step_off = timeit(lambda: cached(False), repeat=rep) / steps
            t_step_full = timeit(lambda: cached(True), repeat=rep) / steps
            t_step_recomp = timeit(recompute_ours, repeat=rep) / steps
            t_step_torch = timeit(recompute_torch, repeat=rep) / steps
            t_floor = floor_step(model)
        results[name] = dict(ref=t_ref, off=t_off, full=t_full, step_off=t_step_off, step_full=t_step_full,
                             step_recompute=t_step_recomp, step_torch=t_step_torch, floor=t_floor)
        ms = lambda s: f"{s * 1e3:7.2f} ms"  # noqa: E731
        report(f"-- {name}: d_model {size['d_model']}, {size['nhead']} heads, {size['layers']}+{size['layers']} layers; "
               f"forward batch {b}x{ls}->{lt}")
        report(f"forward nn.Transformer (reference)     {ms(t_ref)}   1.00x")
        report(f"forward ours, capture off              {ms(t_off)}   {t_off / t_ref:.2f}x  (target <= 1.10x)")
        report(f"forward ours, full capture             {ms(t_full)}   {t_full / t_ref:.2f}x  (target <= 2x)")
        report(f"decode step floor (bare mat-vec chain) {ms(t_floor)}   1.00x")
        target = "1.25x" if name == "BASE" else "5x"
        report(f"decode step, KV cache, full capture    {ms(t_step_full)}   {t_step_full / t_floor:.2f}x floor  (target <= {target})")
        report(f"decode step, KV cache, capture off     {ms(t_step_off)}   {t_step_off / t_floor:.2f}x floor")
        report(f"decode step, ours recomputing prefix   {ms(t_step_recomp)}   {t_step_recomp / t_floor:.2f}x floor")
        report(f"decode step, nn.Transformer recompute  {ms(t_step_torch)}   {t_step_torch / t_floor:.2f}x floor"
               f"  (cache speed-up vs it: {t_step_torch / t_step_full:.1f}x)")
    return results


if __name__ == "__main__":
    run()
