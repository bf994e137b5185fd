"""Interventions: head importance (every head ablated alone) batched into one pass, against one
pass per head measured in the same run; the default model and a random BASE-sized one. And the
research views' analyses (logit attribution, source vs target, circuit, queries and keys, head
roles over a corpus, the neighbours' index) on the default model, against a greedy decode."""

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


TWELVE = ("小猫在桌子上吃鱼，小狗在地上睡觉。", "小狗在桌子上吃鱼，小猫在地上睡觉。")  # a 12-token pair, cat and dog swapped


def _research(report, bundle) -> None:
    """The research views' analyses on the default model, each against one greedy decode of the
    same sentence (the reference, measured here); their data read once, outside the timings."""
    from attnviz.core.analysis.circuit import circuit
    from attnviz.core.analysis.contributions import contributions
    from attnviz.core.analysis.head_roles import head_roles, held_out_pairs
    from attnviz.core.analysis.logit_attribution import logit_attribution
    from attnviz.core.analysis.neighbours import build_index, training_pairs
    from attnviz.core.analysis.qk_space import qk_space
    from attnviz.core.data.examples import data_spec
    from attnviz.core.decoding.session import DecodingSession

    def decode(text: str) -> DecodingSession:
        d = DecodingSession.from_bundle(bundle, text)
        d.run()
        return d

    n_corpus = smoke.pick(200, 20)
    spec = data_spec(bundle.meta)
    held, train = held_out_pairs(spec, n_corpus), training_pairs(spec, smoke.pick(2000, 50))
    ref = timeit(lambda: decode(TWELVE[0]), repeat=3)
    result = decode(TWELVE[0])
    rows = [("logit attribution, one token", lambda: logit_attribution(bundle, TWELVE[0]), "reported"),
            ("source vs target (ALTI+), every token", lambda: contributions(bundle, TWELVE[0]), "reported"),
            ("circuit, 猫吃鱼。 against 鱼吃猫。", lambda: circuit(bundle, "猫吃鱼。", "鱼吃猫。"), "target <= 10 s"),
            ("circuit, a 12-token pair", lambda: circuit(bundle, *TWELVE), "target <= 10 s"),
            ("circuit, 12 tokens, EAP-IG 20 steps", lambda: circuit(bundle, *TWELVE, ig_steps=20), "reported"),
            ("queries and keys, 20 held-out pairs", lambda: qk_space(bundle.model, result, "cross", 0, 0, held[:20],
                                                                     (bundle.src_tokenizer, bundle.tgt_tokenizer)), "reported")]
    report(f"-- research views on {bundle.name}: against one greedy decode of a 12-token sentence")
    report(f"greedy decode (reference)                   {ref * 1e3:8.1f} ms   1.00x")
    for label, fn, target in rows:
        t = timeit(fn, repeat=3)
        report(f"{label:<44}{t * 1e3:8.1f} ms   {t / ref:.2f}x  ({target})")
    for label, fn, target in ((f"head roles over {len(held)} held-out pairs", lambda: head_roles(bundle.model, bundle.src_tokenizer,
                               bundle.tgt_tokenizer, held), "target <= 60 s"),
                              (f"neighbours index of {len(train)} training pairs", lambda: build_index(bundle.model, bundle.src_tokenizer,
                               bundle.tgt_tokenizer, train), "reported")):
        t = timeit(fn, repeat=1, warmup=0)
        report(f"{label:<44}{t * 1e3:8.1f} ms   {t / ref:.2f}x  ({target})")


def run(report=print, threads: int = 1) -> None:
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore")
    report(f"== interventions (torch {torch.__version__}, {threads} thread{'s' if threads > 1 else ''}) ==")
    bundle = load_bundle(default_model())
    src = bundle.src_tokenizer.encode("我昨天在学校看见了我的老师和他的朋友。")[:11] + [bundle.config.eos_id]
    tgt = bundle.tgt_tokenizer.encode("Yesterday I saw my teacher and his friend at school.")[:11] + [bundle.config.eos_id]
    _measure(report, f"default model {bundle.name}", bundle.model, src, tgt, "target <= 1 s on one thread")
    _research(report, bundle)
    if smoke.on():
        return  # the default model is the smallest size
    size = SIZES["BASE"]
    model = build(size)[-1]
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, size["src_vocab"], (12,), generator=g).tolist()
    tgt = torch.randint(4, size["tgt_vocab"], (12,), generator=g).tolist()
    _measure(report, "BASE (d_model 512, 8 heads, 6+6 layers, random weights)", model, src, tgt, "reported")
