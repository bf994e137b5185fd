"""Interventions: head importance (every head ablated alone) batched into one pass, against one
pass per head measured in the same run; the default model and a random BASE-sized one."""

from __future__ import annotations

import warnings

import smoke
import torch
from bench_core import SIZES, build, timeit

from attnviz.core.analysis.head_importance import ablated_log_probs
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.teacher_forcing import log_prob_of
from attnviz.core.model.interventions import ZeroHeads
from attnviz.core.model.sites import attention_sites
from attnviz.paths import default_model


def _one_pass_per_head(model, src, tgt, sites) -> None:
    for site in sites:
        for h in range(model.config.n_heads):
            log_prob_of(model, src, tgt, [ZeroHeads(site, (h,))])


def _measure(report, label: str, model, src, tgt, target: str) -> None:
    sites = attention_sites(model.config)
    n = len(sites) * model.config.n_heads
    t_batched = timeit(lambda: ablated_log_probs(model, src, tgt, sites), repeat=5)
    t_single = timeit(lambda: _one_pass_per_head(model, src, tgt, sites), repeat=3, warmup=1)
    report(f"-- {label}: {n} heads, source {len(src)} tokens, target {len(tgt)} tokens")
    report(f"one pass per head (reference)          {t_single * 1e3:8.1f} ms   1.00x")
    report(f"batched (head importance)              {t_batched * 1e3:8.1f} ms   {t_batched / t_single:.2f}x  ({target})")


def run(report=print, threads: int = 1) -> None:
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    report(f"== interventions (torch {torch.__version__}, {threads} thread{'s' if threads > 1 else ''}) ==")
    bundle = load_bundle(default_model())
    src = bundle.src_tokenizer.encode("我昨天在学校看见了我的老师和他的朋友。")[:11] + [bundle.config.eos_id]
    tgt = bundle.tgt_tokenizer.encode("Yesterday I saw my teacher and his friend at school.")[:11] + [bundle.config.eos_id]
    _measure(report, f"default model {bundle.name}", bundle.model, src, tgt, "target <= 1 s on one thread")
    if smoke.on():
        return  # the default model is the smallest size
    size = SIZES["BASE"]
    model = build(size)[-1]
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, size["src_vocab"], (12,), generator=g).tolist()
    tgt = torch.randint(4, size["tgt_vocab"], (12,), generator=g).tolist()
    _measure(report, "BASE (d_model 512, 8 heads, 6+6 layers, random weights)", model, src, tgt, "reported")
