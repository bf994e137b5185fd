"""``make readme-numbers``: every figure README.md quotes of the default model, measured again on it.

Usage: python bench/readme_numbers.py [--model DIR] [--only SECTION,...] [--slow] [--json OUT] [--list]

The project's rule: whatever README.md quotes of the default model is measured on it, never pinned
by hand. Each section of this script measures the figures of one README passage with the project's
own code (``attnviz.core`` and the commands of ``attnviz.cli``, run in this process) and prints them
as ``section · what · value`` lines, the sections in the README's order, rounded as the README
rounds them (a minus sign as ``−``). When the default model changes, run ``make readme-numbers
ARGS=--slow`` and put what it prints into the README.

The sections marked slow (the head importance over 40 HSK test sentences, the head roles over 200
pairs, the neighbours index, the web page with the whole tour, the evaluation over the splits, the
training data) run with ``--slow``, or when ``--only`` names them. ``--model`` measures another
bundle (sections that need what it lacks say so in an ``error`` line; the exit status is then 1).
Nothing is written in the repository: the files the commands write, the neighbours index and Qt's
settings go to a temporary folder, removed at the end. ``--json OUT`` also writes the lines as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
MINUS = "\u2212"
CAT_FISH, FISH_CAT = "猫吃鱼。", "鱼吃猫。"
TUTORIAL = "尽管今天下了雨，但我因为拿到了梦寐以求的工作offer而感到非常开心和兴奋。"
TUTORIAL_REFERENCE = "Although it rained today, I felt very happy and excited because I got my dream job offer."
EVERYDAY = ROOT / "tests" / "data" / "everyday-zh-en.tsv"

Row = tuple[str, str]


# -- formatting, as the README writes numbers --------------------------------------------------------
def num(x: float, digits: int = 2, sign: bool = False) -> str:
    """``x`` rounded to ``digits`` decimals, ``−`` for the minus sign (``sign``: ``+`` too)."""
    x = 0.0 if round(x, digits) == 0 else x  # no "−0"
    text = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    return text.replace("-", MINUS)


def span(values: Iterable[float], digits: int = 2, scale: float = 1.0, unit: str = "") -> str:
    """``low–high`` of ``values`` (times ``scale``), each rounded to ``digits`` (``low to high`` when low is negative)."""
    values = [v * scale for v in values]
    dash = " to " if min(values) < 0 else "–"
    return f"{num(min(values), digits)}{dash}{num(max(values), digits)}{unit}"


def sci(x: float) -> str:
    """``5e-7``: one significant digit, the exponent without its leading zero."""
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}".replace("-", MINUS, 1) if x < 0 else f"{mantissa}e{int(exponent)}"


def doctest(x: float, digits: int = 2) -> str:
    """``-1.27...``: ``x`` as Python prints it, cut after ``digits`` decimals (the README's console example)."""
    whole, _, decimals = f"{x:.12f}".partition(".")
    return f"{whole}.{decimals[:digits]}..."


def head_name(kind: str, layer: int, head: int) -> str:
    """``cross:3:3`` of a 0-based layer and head, as the commands take it."""
    return f"{kind}:{layer + 1}:{head + 1}"


def pieces(items: Iterable[str]) -> str:
    return " / ".join(items)


# -- the sections ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Section:
    name: str
    slow: bool
    measure: Callable[[Context], Iterator[Row]]
    readme: str  # where in README.md its figures stand


SECTIONS: dict[str, Section] = {}


def section(name: str, readme: str, slow: bool = False):
    def register(measure: Callable[[Context], Iterator[Row]]):
        SECTIONS[name] = Section(name, slow, measure, readme)
        return measure
    return register


class Context:
    """The model measured, a temporary folder, and what several sections share (loaded or decoded once)."""

    def __init__(self, model: Path, tmp: Path):
        self.model, self.tmp = model, tmp

    @functools.cached_property
    def bundle(self):
        from attnviz.core.bundle import load_bundle

        return load_bundle(self.model)

    def other(self, name: str):
        """A bundled model beside the one measured (``models/NAME``)."""
        from attnviz.core.bundle import load_bundle
        from attnviz.paths import models_dir

        return load_bundle(models_dir() / name)

    @functools.cache  # noqa: B019 - one context per run
    def greedy(self, source: str):
        """``source`` decoded greedily to the end, every trace name captured (as the window decodes it)."""
        from attnviz.core.decoding.session import DecodingSession

        run = DecodingSession.from_bundle(self.bundle, source)
        run.run()
        return run

    def forced(self, source: str, target: str, interventions=()):
        from attnviz.core.decoding.teacher_forcing import teacher_forced_from_bundle

        return teacher_forced_from_bundle(self.bundle, source, target, interventions=interventions)

    def command(self, name: str, *argv: str) -> str:
        """What ``attnviz NAME --model MODEL ARGV…`` prints, run in this process."""
        from attnviz.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([name, "--model", str(self.model), *argv])
        if code:
            raise RuntimeError(f"attnviz {name} exited with {code}: {err.getvalue().strip()}")
        return out.getvalue()

    def json_command(self, name: str, *argv: str) -> dict:
        return json.loads(self.command(name, *argv, "--json"))

    @functools.cached_property
    def alignment(self) -> dict:
        """``attnviz trace --hsk-alignment`` on the HSK test split."""
        return self.json_command("trace", "--hsk-alignment")


@section("screenshot", "the picture under the install notes: the training sentence 医生救了他的生命。, cross L3 H3")
def screenshot(ctx: Context) -> Iterator[Row]:
    run = ctx.greedy("医生救了他的生命。")
    yield "translation of 医生救了他的生命。", run.translation()
    weights = run.all_attention("cross")[2, 2]  # layer 3, head 3: [row, source]
    rows = [i for i, fed in enumerate(run.input_pieces) if i and fed.startswith("▁")]  # the rows fed a word
    yield "cross L3 H3: the rows fed", ", ".join(run.input_pieces[i].lstrip("▁") for i in rows)
    yield "… weigh most the pieces", pieces(run.src_pieces[int(weights[i].argmax())] for i in rows)
    yield "… with weights", ", ".join(num(weights[i].max()) for i in rows)


@section("compare", "The story views: Word order (compare)")
def compare(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.compare import compare_both, swap_ends

    b = ctx.bundle
    frame = compare_both(b.model, b.src_tokenizer, CAT_FISH, swap_ends(CAT_FISH), True, b.tgt_tokenizer)
    with_pe, without = frame.result, frame.contrast
    yield f"pieces of {CAT_FISH} / {swap_ends(CAT_FISH)}", f"{pieces(with_pe.a.pieces)} | {pieces(with_pe.b.pieces)}"
    yield "without PE: outputs a permutation, max deviation", f"{without.is_permutation}, {sci(without.max_deviation)}"
    yield "with PE: max deviation", num(with_pe.max_deviation)
    yield f"with PE: cosine of {with_pe.a.pieces[0]}'s two vectors", num(float(with_pe.cosine[0]))
    for (label, pe), text in frame.translations.items():
        yield f"translation of {CAT_FISH if label == 'A' else swap_ends(CAT_FISH)} {'with' if pe else 'without'} PE", text


@section("scaling", "The story views: Why ÷√d_k (scaling)")
def scaling(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.scaling import OVER_DK, SCALED, UNSCALED, LayerScaling, RowScaling, random_scaling, result_scaling

    rnd = random_scaling()
    yield "random q, k: Var(q·k) at d_k = 512", num(rnd.var[UNSCALED, -1], 0)
    yield "without ÷√d_k: mean largest weight at d_k = 4, 512", f"{num(rnd.max_weight[UNSCALED, 0])}, {num(rnd.max_weight[UNSCALED, -1])}"
    yield "with ÷√d_k: Var, mean largest weight over d_k", f"{span(rnd.var[SCALED])}, {span(rnd.max_weight[SCALED])}"
    run = ctx.greedy(CAT_FISH)
    sites = result_scaling(run)
    enc = LayerScaling.of(sites["encoder"])
    yield f"{CAT_FISH} encoder L1 largest weight, ÷√d_k → ÷1", f"{num(enc.max_weight[SCALED, 0])} → {num(enc.max_weight[UNSCALED, 0])}"
    yield f"{CAT_FISH} encoder L1 entropy (nats), ÷√d_k → ÷1", f"{num(enc.entropy[SCALED, 0])} → {num(enc.entropy[UNSCALED, 0])}"
    row = RowScaling.of(sites["cross"][0], 0, len(run.input_ids) - 1)
    yield "cross L1 H1 last row: ‖J‖_F ÷1 against ÷√d_k", f"{num(row.jacobian[UNSCALED], 4)} against {num(row.jacobian[SCALED])}"
    yield "cross L1 H1 last row: entropy ÷d_k of at most ln n", f"{num(row.entropy[OVER_DK])} of ln {row.allowed} = {num(math.log(row.allowed))}"


TEACHER_PAIRS = (("我每天早上喝一杯咖啡。", "I drink a cup of coffee every morning."), ("我每天跑步。", "I run every day."),
                 ("老师，您好！", "Hello, teacher!"))


@section("teacher-vs-free", "The story views: Teacher forcing vs free running")
def teacher_vs_free(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.teacher_free import teacher_vs_free as both_runs

    b = ctx.bundle
    for source, target in TEACHER_PAIRS:
        forced = ctx.forced(source, target)
        runs = both_runs(b.model, b.src_tokenizer, b.tgt_tokenizer, forced)
        d = runs.departure
        yield f"{source} greedy", ctx.greedy(source).translation()
        yield f"{source} departs", "never" if d is None else (
            f"at position {d + 1} (ŷ = {runs.free.predicted_pieces[d]} where y = {runs.reference_pieces[d]})")
        yield f"{source} teacher forcing right", f"{sum(p.match for p in forced.steps)} of {len(forced.steps)}"


@section("ffn", "The story views: FFN")
def ffn(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.ffn import ALL, ffn_data_for, ffn_removal

    b = ctx.bundle
    data = ffn_data_for(ctx.greedy("我喜欢吃鱼。"), b.config)
    enc, dec = data.off_shares("encoder"), data.off_shares("decoder")
    yield "我喜欢吃鱼。 pieces", pieces(ctx.greedy("我喜欢吃鱼。").src_pieces)
    yield "exact zeros, every layer / encoder / decoder", f"{span([*enc, *dec], 0, 100, '%')} / {span(enc, 0, 100, '%')} / {span(dec, 0, 100, '%')}"
    run = ctx.greedy(CAT_FISH)
    removal = ffn_removal(run, b.model, b.src_tokenizer, b.tgt_tokenizer, 0)
    yield f"{CAT_FISH} intact", removal.translation
    for key, text in removal.translations.items():
        stack, _, layer = key.partition(":")
        what = "every FFN" if key == ALL else f"the FFN of {stack} layer {int(layer) + 1}"
        yield f"{CAT_FISH} without {what}", text
    limit = min(b.config.max_len, 2 * len(run.src_ids) + 10)
    yield f"{CAT_FISH} without every FFN: tokens, limit", f"{len(b.tgt_tokenizer.encode(removal.translations[ALL]))}, {limit}"


@section("residual", "The story views: Residual stream")
def residual(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.residual import residual_data_for

    for stack in residual_data_for(ctx.greedy("我爱你。"), ctx.bundle.config):
        stream = stack.mean_stream()
        yield f"我爱你。 {stack.stack}: mean token norm, embedding → last sublayer", f"{num(stream[0], 1)} → {num(stream[-1], 1)}"


@functools.lru_cache(maxsize=4)
def _importance(ctx: Context, source: str):
    from attnviz.core.analysis.head_importance import head_importance

    return head_importance(ctx.bundle, source)


def _by_delta(report) -> list[tuple[str, float]]:
    """Every head as ``kind:layer:head`` with its Δ log P, the most negative first."""
    return sorted(((head_name(k, layer, h), d) for k, layer, h, d in report.ranked()), key=lambda r: r[1])


@section("head-importance", "Changing the model: Head importance (猫吃鱼。)")
def head_importance_one(ctx: Context) -> Iterator[Row]:
    report = _importance(ctx, CAT_FISH)
    yield f"log P of {ctx.greedy(CAT_FISH).translation()!r}", f"{num(report.log_prob)} nats"
    heads = _by_delta(report)
    yield "the 3 heads whose loss lowers it most", ", ".join(f"{h} {num(d, sign=True)}" for h, d in heads[:3])
    yield "the head whose loss raises it most", f"{heads[-1][0]} {num(heads[-1][1], sign=True)}"
    yield "heads", str(len(heads))


def _aligned_head(ctx: Context) -> tuple[int, int]:
    best = ctx.alignment["predicting"]["best"]
    return best["layer"], best["head"]


@section("head-importance-hsk", "Changing the model: Head importance (the best-aligned head over 40 HSK test sentences)", slow=True)
def head_importance_hsk(ctx: Context) -> Iterator[Row]:
    import numpy as np

    from attnviz.core.analysis.alignment import hsk_records
    from attnviz.core.analysis.head_importance import head_importance
    from attnviz.core.model.sites import KINDS

    aligned = head_name("cross", *_aligned_head(ctx))
    yield "the head the HSK alignment ranks first", aligned
    for reference in (False, True):
        changes = []
        for record in hsk_records("test")[:40]:
            report = head_importance(ctx.bundle, record["chinese"], record["translation"]["en"] if reference else None)
            kinds = [k for k in KINDS if k in report.delta]
            changes.append(np.concatenate([np.abs(report.delta[k]).ravel() for k in kinds]))
        heads = [head_name(k, layer, h) for k in kinds for layer, h in np.ndindex(report.delta[k].shape)]
        mean = np.mean(changes, axis=0)
        aligned_mean = mean[heads.index(aligned)]
        on = "the reference translations" if reference else "the greedy output"
        yield f"mean |Δ log P| on {on}: it, median head, its rank", (
            f"{num(aligned_mean)}, {num(np.median(mean))}, {int((mean > aligned_mean).sum()) + 1} of {len(mean)}")


@section("patching", "Changing the model: Activation patching")
def patching(ctx: Context) -> Iterator[Row]:
    m = ctx.json_command("patch", "--src", FISH_CAT, "--other", CAT_FISH, "--map")
    t = m["target_position"] - 1
    yield "token scored", f"{m['target_pieces'][t]} of {m['clean_translation']!r}"
    yield "its log P here, there", f"{num(m['log_prob_corrupt'])}, {num(m['log_prob_clean'])}"
    rec = m["encoder"]["recovery"]  # [layer: embeddings, 1, 2, 3][source position]
    yield "encoder position 3: recovery from the embeddings, after each layer", f"{num(rec[0][2])}, {span(r[2] for r in rec[1:])}"
    yield "encoder position 1: recovery from the embeddings, after each layer", f"{num(rec[0][0])}, {span(r[0] for r in rec[1:])}"
    yield "encoder positions 2 and 4: largest |recovery|", num(max(abs(r[p]) for r in rec for p in (1, 3)))
    dec = m["decoder"]
    yield f"decoder, row predicting {dec['pieces'][t]} (fed {m['target_pieces'][t - 1]}): after each layer", ", ".join(num(r[t]) for r in dec["recovery"])
    for positions in ("3", "1,3"):
        p = ctx.json_command("patch", "--src", FISH_CAT, "--other", CAT_FISH, "--site", "encoder:0", "--positions", positions)
        yield f"patch --site encoder:0 --positions {positions}", f"{p['clean']!r} → {p['patched']!r}"


@section("circuit", "Changing the model: Circuit")
def circuit(ctx: Context) -> Iterator[Row]:
    c = ctx.json_command("circuit", "--src", CAT_FISH, "--corrupt", FISH_CAT, "--top", "5")
    yield "decision", f"{c['clean_token']} against {c['corrupt_token']}: {num(c['metric_clean'], sign=True)} here, {num(c['metric_corrupt'], sign=True)} there"
    yield "top edges", ", ".join(e["edge"] for e in c["edges"][:5])
    curve = {f["k"]: f["recovered"] for f in c["faithfulness"]}
    wanted = [k for k in (5, 10, 20, 50, 100, c["n_edges"]) if k in curve]
    yield "recovered by the top k edges", ", ".join(f"{k}: {num(100 * curve[k], 0)}%" for k in wanted)
    yield "edges", str(c["n_edges"])


@section("logit-attribution", "Changing the model: Logit attribution")
def logit_attribution(ctx: Context) -> Iterator[Row]:
    a = ctx.json_command("logit-attribution", "--src", CAT_FISH, "--position", "2", "--contrast", "▁dog", "--top", "3")
    yield a["attributed"], num(a["logit"])
    yield "largest terms", ", ".join(f"{t['term']} {num(t['value'], sign=True)}" for t in a["terms"][:3])
    yield "|sum of terms − (logit − output bias)|", sci(abs(a["gap"]))


@section("contributions", "Changing the model: Source vs target (ALTI+)")
def contributions(ctx: Context) -> Iterator[Row]:
    for target in ("I love you.", "banana the ran purple"):
        c = ctx.json_command("contributions", "--src", "我爱你。", "--tgt", target)
        yield f"我爱你。 «{target}»: mean source share", num(c["mean_source_share"], 3)


@section("head-roles", "Changing the model: Head roles (attnviz heads, 200 held-out pairs)", slow=True)
def head_roles(ctx: Context) -> Iterator[Row]:
    import numpy as np

    h = ctx.json_command("heads")
    yield "pairs, seconds", f"{h['sentences']}, {num(h['seconds'], 1)}"
    yield "decoder mass on SOS per head", span(np.ravel(h["kinds"]["decoder"]["start"]))
    importance = {head_name(k, layer, i): v for k, m in h["kinds"].items()
                  for layer, row in enumerate(m["importance"]) for i, v in enumerate(row) if v is not None}
    yield "mean importance per head (nats)", f"{num(min(importance.values()), 3)} to {num(max(importance.values()), 3, sign=True)}"
    largest = sorted(importance, key=lambda k: -abs(importance[k]))[:2]
    yield "the largest |importance|", ", ".join(f"{k} {num(importance[k], 3)}" for k in largest)


@section("neighbours", "Changing the model: Nearest training sentences", slow=True)
def neighbours(ctx: Context) -> Iterator[Row]:
    cache = ctx.tmp / "neighbours"
    n = ctx.json_command("neighbours", "--src", CAT_FISH, "--position", "2", "--cache-dir", str(cache))
    index = n["index"]
    size = sum(f.stat().st_size for f in cache.iterdir()) / 2**20
    yield "index: pairs, positions", f"{index['pairs']:,}, {index['states']:,}"
    yield "index: seconds to build, MB", f"{num(index['seconds'], 1)} s, {num(size, 1)} MB"
    yield f"step 2 of {CAT_FISH} ({n['step']}): next", n["next"]
    for near in n["neighbours"]:
        yield f"nearest ({num(near['similarity'], 3)})", f"{near['source']} «{near['target']}»"
    yield "of them about cats", str(sum("cat" in near["target"].lower() for near in n["neighbours"]))


@functools.lru_cache(maxsize=1)
def _tutorial_importance(ctx: Context):
    from attnviz.core.analysis.attention_vs_attribution import importance_for

    forced = ctx.forced(TUTORIAL, TUTORIAL_REFERENCE)
    return forced, importance_for(forced, 8, ctx.bundle.model, ctx.bundle.tgt_tokenizer)  # output 9


def _rank(result, measure: str, piece: str) -> int:
    return result.ranking(measure).index(result.source_pieces.index(piece)) + 1


@section("attribution", "Changing the model: Attention vs attribution (the tutorial's sentence, output 9)")
def attribution(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.attention_vs_attribution import ATTENTION_MEASURES, ATTRIBUTION_MEASURES

    forced, r = _tutorial_importance(ctx)
    src = r.source_pieces
    yield "token, source pieces", f"{r.question.token_piece} (output {r.question.position + 1}), {len(src)} ({pieces(src)})"
    focus = [p for p in ("开心", "兴", "奋") if p in src]
    for measure, label in (("cross attention", "cross-attention"), ("ig", "integrated gradients"), ("occlusion", "occlusion")):
        yield f"ranks of {' '.join(focus)} by {label}", ", ".join(str(_rank(r, measure, p)) for p in focus)
    for measure, label in (("cross attention", "cross-attention"), ("ig", "integrated gradients")):
        yield f"{label} puts first", " ".join(src[i] for i in r.ranking(measure)[:3])
    if "开心" in src:
        yield "开心's rank by attention received, rollout, flow", ", ".join(str(_rank(r, m, "开心")) for m in ATTENTION_MEASURES[1:])
    yield "mean ρ attention–attribution, attribution–attribution", (
        f"{num(r.mean_rho(ATTENTION_MEASURES, ATTRIBUTION_MEASURES))}, {num(r.mean_rho(ATTRIBUTION_MEASURES, ATTRIBUTION_MEASURES))}")
    right = sum(p.match for p in forced.steps)
    yield "teacher-forced: tokens predicted right", f"{right} of {len(forced.steps)} ({num(100 * right / len(forced.steps), 0)}%)"


@section("checkpoints", "Changing the model: Compare checkpoints (beside hsk-only-zh-en)")
def checkpoints(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.checkpoints import compare_checkpoints

    c = compare_checkpoints(ctx.bundle, ctx.other("hsk-only-zh-en"), CAT_FISH)
    yield f"{c.name_a} / {c.name_b} on {CAT_FISH}", f"{c.translation_a!r} / {c.translation_b!r}"
    yield "log P of each (nats)", f"{num(c.attention_a.log_prob)} / {num(c.attention_b.log_prob)}"
    yield "ΔA", "yes" if c.delta_available else f"none ({c.why_no_delta})"


@section("model-info", "Changing the model: Model info (parameters per part)")
def model_info(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.model_info import parameters_per_part

    parts = parameters_per_part(ctx.bundle.model)
    yield "parameters", f"{sum(parts.values()):,}"
    for part, n in parts.items():
        yield part, f"{n:,}"


@section("console", "Scripting the window: the console example")
def console(ctx: Context) -> Iterator[Row]:
    from attnviz.core.model.interventions import ablation, parse_heads

    for heads in ("", "cross:3:3"):
        plan = [ablation(site, h) for site, h in parse_heads(heads).items()] if heads else []
        forced = ctx.forced(CAT_FISH, "The cat eats fish.", plan)
        probs = [p.prob for p in forced.steps]
        label = f"ablate({heads!r})" if heads else "teacher-forced «The cat eats fish.»"
        yield f"{label}: probabilities", "[" + ", ".join(f"{round(p, 3)}" for p in probs) + "]"
        yield f"{label}: log P", doctest(sum(math.log(p) for p in probs))


@section("page", "Command line: attnviz page sizes")
def page(ctx: Context) -> Iterator[Row]:
    for source in (CAT_FISH, TUTORIAL):
        data, size = _page(ctx, source)
        matrices = len(json.dumps([s["attention"] for s in data["steps"]], ensure_ascii=False, separators=(",", ":")).encode())
        yield f"page of {source[:8]}…: MB, steps, MB of matrices", f"{num(size / 1e6)}, {len(data['steps'])}, {num(matrices / 1e6)}"


def _page(ctx: Context, source: str, *argv: str) -> tuple[dict, int]:
    from attnviz.qt.publish.web_page import page_data

    out = Path(tempfile.mkdtemp(dir=ctx.tmp))
    ctx.command("page", "--src", source, *argv, "--out", str(out))
    text = (out / "index.html").read_text(encoding="utf-8")
    return page_data(text), (out / "index.html").stat().st_size


@section("page-tour", "Command line: attnviz page with the whole tour", slow=True)
def page_tour(ctx: Context) -> Iterator[Row]:
    from attnviz.core.tour_data import load_tour

    data, size = _page(ctx, TUTORIAL, "--tour", ",".join(load_tour("en").ids()))
    exercises = sum(e is not None for e in data["exercises"])
    yield "page of the tutorial's sentence with the whole tour: MB, exercises", f"{num(size / 1e6)}, {exercises}"


@section("animate", "Command line: attnviz animate (decoding.gif)")
def animate(ctx: Context) -> Iterator[Row]:
    run = ctx.greedy(CAT_FISH)
    yield f"{CAT_FISH} decoded", f"{run.translation()!r}, {len(run.steps)} steps"


def _median_ms(work: Callable[[], object], repeats: int = 15) -> float:
    work()  # warm up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


@section("timings", "Layout: a typed target's teacher-forced pass, one decoding step (one thread; the machine's load moves them)")
def timings(ctx: Context) -> Iterator[Row]:
    from attnviz.core.decoding.session import DecodingSession

    for target in (TUTORIAL_REFERENCE, ctx.greedy(TUTORIAL).translation()):
        n = len(ctx.forced(TUTORIAL, target).steps)
        yield f"teacher-forced pass of the tutorial's sentence, {n} target tokens (median ms)", num(_median_ms(lambda: ctx.forced(TUTORIAL, target)), 0)
    steps = []
    for _ in range(3):
        run = DecodingSession.from_bundle(ctx.bundle, TUTORIAL)
        while run.can_step:
            t0 = time.perf_counter()
            run.step()
            steps.append(time.perf_counter() - t0)
    yield f"decoding step of the tutorial's sentence, full capture ({len(steps)} steps; median ms)", num(1000 * statistics.median(steps), 1)


@section("trace", "The model and its trace: patching the encoder output, attnviz ablate")
def trace(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.ablation import ablate
    from attnviz.core.model.interventions import parse_heads

    p = ctx.json_command("patch", "--src", FISH_CAT, "--other", CAT_FISH, "--site", "encoder.output")
    yield f"{FISH_CAT} with {CAT_FISH}'s encoder output", repr(p["patched"])
    heads = _by_delta(_importance(ctx, CAT_FISH))
    sets = {"the README's example": "cross:3:2,encoder:1:1", "the two that raise it most": ",".join(h for h, _ in heads[:-3:-1]),
            "the two that lower it most": ",".join(h for h, _ in heads[:2]), "the four that lower it most": ",".join(h for h, _ in heads[:4])}
    for what, text in sets.items():
        r = ablate(ctx.bundle, CAT_FISH, parse_heads(text))
        yield f"ablate {what} ({text})", f"{r.after!r}, log P {num(r.log_prob_before)} → {num(r.log_prob_after)}"


@section("bundled", "Bundled models: the zh-en row (from the bundle itself)")
def bundled(ctx: Context) -> Iterator[Row]:
    from attnviz.core.analysis.model_info import parameters_per_part

    meta, path = ctx.bundle.meta or {}, ctx.bundle.path or ctx.model
    yield "parameters (M)", num(sum(parameters_per_part(ctx.bundle.model).values()) / 1e6)
    yield "size (MB)", num(sum(f.stat().st_size for f in Path(path).iterdir() if f.is_file()) / 2**20, 1)
    if "training_time_s" in meta:
        yield "training minutes (wall clock)", num(meta["training_time_s"] / 60, 1)
    if "epochs" in meta:
        processes = meta.get("distributed", {}).get("processes", 1)
        yield "epochs, mean of the last, processes", f"{meta['epochs']}, {meta.get('averaged_epochs', 1)}, {processes}"
    data = meta.get("data", {})
    yield "training pairs", f"{data.get('sizes', {}).get('train', 0):,}"
    added = data.get("spec", {}).get("augment", {}).get("added", {})
    yield "pairs added by augmentation", ", ".join(f"{k} {v:,}" for k, v in added.items()) or "none"


@section("evaluate", "Bundled models: the zh-en row and 'Why the default changed' (attnviz evaluate)", slow=True)
def evaluate(ctx: Context) -> Iterator[Row]:
    scores = ctx.json_command("evaluate", "--splits", "train,valid,test", "--tsv", str(EVERYDAY))["scores"]
    for key in ("test:hsk-zh-en", "test:tatoeba-zh-en", "valid:hsk-zh-en", "test", "valid"):
        if key in scores:
            label = key if ":" in key else f"{key} (every corpus)"
            yield f"{label} BLEU / chrF", f"{num(scores[key]['bleu'], 1)} / {num(scores[key]['chrf'], 1)}"
    everyday = scores[f"file:{EVERYDAY.name}"]
    yield "everyday chrF (exact)", f"{num(everyday['chrf'], 1)} ({everyday['exact']} of {everyday['sources']} exact)"
    train = scores["train"]
    yield f"train token accuracy ({train.get('sampled', '?')} sampled pairs)", f"{num(100 * train['token_accuracy'], 1)}%"


FIRST_SENTENCES = ("我爱你。", "你叫什么名字？", "现在几点了？", CAT_FISH, FISH_CAT, "老师，您好！", "我是学生。", "我的妈妈是医生。")


@section("default-model", "The default: HSK + Tatoeba (shape, pieces, translations)")
def default_model(ctx: Context) -> Iterator[Row]:
    from attnviz.core.training.evaluation import greedy_translate

    b, cfg = ctx.bundle, ctx.bundle.config
    yield "d_model, heads, layers, d_ff", f"{cfg.d_model}, {cfg.n_heads}, {cfg.n_encoder_layers}+{cfg.n_decoder_layers}, {cfg.d_ff:,}"
    yield "vocabularies (source, target)", f"{cfg.src_vocab_size:,}, {cfg.tgt_vocab_size:,}"
    yield "我喜欢吃鱼。 pieces", pieces(b.src_tokenizer.pieces(b.src_tokenizer.encode("我喜欢吃鱼。")))
    for source, text in zip(FIRST_SENTENCES, greedy_translate(b.model, b.src_tokenizer, b.tgt_tokenizer, list(FIRST_SENTENCES))):
        yield f"greedy {source}", text


@section("data", "The default: HSK + Tatoeba (its training data, rebuilt from meta.json)", slow=True)
def data(ctx: Context) -> Iterator[Row]:
    from collections import Counter

    from attnviz.core.data.augment import augment_as
    from attnviz.core.data.examples import data_spec
    from attnviz.core.data.sources import load_data

    spec = data_spec(ctx.bundle.meta)
    plain = load_data(spec)
    corpora = Counter(p.extra.get("corpus", "?") for p in plain.train)
    yield "training pairs per corpus, before augmentation", ", ".join(f"{k} {v:,}" for k, v in corpora.items())
    train = augment_as(plain, spec)
    yield "training pairs, augmented", f"{len(train.train):,}"
    yield "distinct source characters", f"{len({c for t in train.train_texts('src') for c in t if not c.isspace()}):,}"


@section("alignment", "What the default model learned about alignment (attnviz trace --hsk-alignment)")
def alignment(ctx: Context) -> Iterator[Row]:
    a = ctx.alignment
    p = a["predicting"]
    yield "records, sentences with a pair, pairs", f"{a['records']}, {a['sentences']}, {p['pairs']}"
    for layer, row in enumerate(p["per_head"]):
        yield f"layer {layer + 1}, heads 1–{len(row)}", " | ".join(f"{v:.3f}" for v in row)
    best = p["best"]
    yield "best head", f"layer {best['layer'] + 1} head {best['head'] + 1}: {best['accuracy']:.3f}"
    yield "mean of the heads' weights, decoder rollout", f"{p['mean']:.3f}, {p['rollout']:.3f}"
    yield "chance, diagonal", f"{p['chance']:.3f}, {p['diagonal']:.3f}"


# -- running -----------------------------------------------------------------------------------------
def chosen(only: str | None, slow: bool) -> list[Section]:
    if not only:
        return [s for s in SECTIONS.values() if slow or not s.slow]
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise SystemExit(f"readme_numbers: no section {unknown[0]!r} (one of {', '.join(SECTIONS)})")
    return [s for s in SECTIONS.values() if s.name in names]


def run_section(ctx: Context, s: Section) -> dict:
    """One section's rows (an ``error`` row when it fails) and its seconds."""
    t0 = time.perf_counter()
    rows, ok = [], True
    try:
        for what, value in s.measure(ctx):
            rows.append((what, value))
            print(f"{s.name} · {what} · {value}", flush=True)
    except Exception as exc:  # a model without what the section needs: say so, go on with the others
        ok = False
        rows.append(("error", f"{type(exc).__name__}: {exc}"))
        print(f"{s.name} · error · {type(exc).__name__}: {exc}", flush=True)
    seconds = time.perf_counter() - t0
    print(f"{s.name} · seconds · {seconds:.1f}\n", flush=True)
    return {"readme": s.readme, "slow": s.slow, "ok": ok, "seconds": round(seconds, 2), "rows": [list(r) for r in rows]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="model bundle folder (default: the bundled default, models/zh-en)")
    p.add_argument("--only", metavar="SECTION,...", help="only these sections (slow ones too)")
    p.add_argument("--slow", action="store_true", help="also the slow sections")
    p.add_argument("--json", metavar="OUT", help="also write the results to OUT as JSON")
    p.add_argument("--list", action="store_true", help="list the sections and exit")
    args = p.parse_args(argv)
    if args.list:
        for s in SECTIONS.values():
            print(f"{s.name:20} {'slow' if s.slow else '    '}  {s.readme}")
        return 0
    sections = chosen(args.only, args.slow)
    with tempfile.TemporaryDirectory(prefix="readme-numbers-") as tmp:
        results = measure_all(Path(args.model) if args.model else None, Path(tmp), sections)
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0 if all(r["ok"] for r in results["sections"].values()) else 1


def measure_all(model: Path | None, tmp: Path, sections: list[Section]) -> dict:
    """Every section of ``sections`` on ``model`` (``None``: the default), headless, one torch thread,
    the user's cache and settings folders inside ``tmp``."""
    import torch

    from attnviz.paths import default_model as bundled_default

    folders = {name: str(tmp / name.lower()) for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    threads = torch.get_num_threads()
    with mock.patch.dict(os.environ, {"QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"), **folders}):
        torch.set_num_threads(1)
        ctx = Context(model or bundled_default(), tmp)
        print(f"readme numbers of {ctx.model}\n", flush=True)
        t0 = time.perf_counter()
        try:
            results = {s.name: run_section(ctx, s) for s in sections}
        finally:
            torch.set_num_threads(threads)
        print(f"all · seconds · {time.perf_counter() - t0:.1f}", flush=True)
    return {"model": str(ctx.model), "sections": results}


if __name__ == "__main__":
    sys.exit(main())
