"""Long inputs stay interactive: a step and the refresh of the views on screen, at 512 source tokens
beside 20, and the size of 512-token figures' files.

A BASE model (d_model 512, 8 heads, 6+6 layers, random weights, a position table of 1024) decodes
a source of 20 and one of 512 tokens in the app's :class:`~attnviz.qt.session.Session`, the window's
default views on screen (the attention grid and the head detail, both on cross-attention, as the
window opens). A step is ``Session.force`` of a fixed token (a random model would often choose EOS)
with the refreshes it causes, timed until the event loop has painted them, on the UI thread: the
model's step (measured alone on the core ``DecodingSession``), then building the frame's attention
data and drawing. Each figure is the median over ``--steps`` steps, early in the decoding and after
``DEEP`` steps (the cross-attention then has that many rows), in wall time and in this process's
CPU time (which other load on a shared machine does not inflate). Target: ≤ 50 ms per step at 512
tokens; the ratio to the 20-token figure of the same run is printed beside it.

A BASE-size random decoder-only model (GPT-2's choices: learned positions, pre-norm, no encoder) then
continues a prompt of 20 and one of 512 tokens the same way (its views show the decoder
self-attention, the prompt's rows first): the prompt's feed (``Session.set_bundle``, on the UI
thread: one decoder pass over SOS and the prompt), beside feeding the 512-token prompt one cached
step per token as the session did before, and the step + refresh figures after it.

Then the grid, the head detail and the lines of the 512-token source's encoder self-attention
(512×512) are exported as PNG, SVG and PDF: the file sizes, and how many texts the SVG holds as
text (its labels stay text, never outlines).

    python bench/bench_long_inputs.py [--steps N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import smoke  # noqa: E402

TARGET_MS = 50.0
LENGTHS = smoke.pick((20, 512), (20,))
DEEP = smoke.pick(200, 3)  # steps decoded before the "deep" figure
SIZES = {"grid": (760, 560), "head": (640, 560)}  # the window's default: the grid beside the head detail


DECODER_ONLY = dict(kind="decoder-only", n_encoder_layers=0, positional="learned", norm_placement="pre", final_norm=True,
                    activation="gelu_tanh", tie_embeddings=True)  # GPT-2's choices


def base_bundle(tok=None, **choices):
    """A BASE-size random model whose position table holds 1024 positions (``choices``: config
    fields, e.g. ``DECODER_ONLY``), and a BPE tokenizer of its vocabulary (``tok``, or one trained here)."""
    import torch
    from bench_decoding import _base_tokenizers

    from attnviz.core import Transformer, TransformerConfig
    from attnviz.core.bundle import Bundle

    tok = tok if tok is not None else _base_tokenizers(8000)[0]
    torch.manual_seed(0)
    cfg = TransformerConfig(**{**dict(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=512, n_heads=8,
                                      n_encoder_layers=6, n_decoder_layers=6, d_ff=2048, dropout=0.0, max_len=1024), **choices})
    return Bundle(Transformer(cfg).eval(), tok, tok)


def source_of(tok, n: int) -> str:
    """Text of exactly ``n`` source tokens."""
    import random

    rng = random.Random(n)
    words: list[str] = []
    while len(tok.encode(" ".join(words))) < n:
        words.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))))
    ids = tok.encode(" ".join(words))[:n]
    text = tok.decode(ids)
    assert len(tok.encode(text)) == n, "the source does not re-encode to its length"
    return text


def _median_ms(fn, count: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``fn(i)`` and the events (paints) it causes."""
    app = _app()
    wall, cpu = [], []
    for i in range(count):
        t0, c0 = time.perf_counter(), time.process_time()
        fn(i)
        app.processEvents()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def _app():
    from PySide6 import QtWidgets

    return QtWidgets.QApplication.instance()


def _tokens(bundle, count: int) -> list[int]:
    """Tokens to force: ordinary pieces of the target vocabulary (never PAD, UNK, SOS or EOS)."""
    cfg = bundle.config
    specials = {cfg.pad_id, cfg.unk_id, cfg.bos_id, cfg.eos_id}
    ordinary = [i for i in range(10, cfg.tgt_vocab_size) if i not in specials]
    return [ordinary[(7 * i) % len(ordinary)] for i in range(count)]


def measure(bundle, n: int, steps: int) -> dict[str, object]:
    """(wall, CPU) milliseconds per step (median) at source length ``n``: the core step alone, and
    the app's step with its refreshes, early and after up to ``DEEP`` steps; and of opening the
    sentence (``open``: encoding it, or feeding a decoder-only model's prompt) and drawing it first."""
    from attnviz.qt.session import Session
    from attnviz.qt.views.registry import ViewSet

    session = Session()
    session.decode_as_you_type = False
    source = source_of(bundle.src_tokenizer, n)
    t0, c0 = time.perf_counter(), time.process_time()
    session.set_bundle(bundle, source=source)  # a decoder-only model's prompt is fed here, on the UI thread
    opened = ((time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000)
    assert len(session.decoding.src_ids) == n
    t0, c0 = time.perf_counter(), time.process_time()
    views = ViewSet(session, only=tuple(SIZES))
    for name, size in SIZES.items():
        views.frames[name].resize(*size)
        views.frames[name].show()
    _app().processEvents()
    drawn = ((time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000)
    room = session.decoding.max_len - session.decoding.n_steps  # a decoder-only model's prompt steps count in max_len
    deep = min(DEEP, room - steps - 1)  # a short source's decoding ends sooner
    tokens = _tokens(bundle, deep + steps)
    out = {"open": opened, "first_draw": drawn, "early": _median_ms(lambda i: session.force(tokens[i]), steps), "deep_steps": deep}
    for t in tokens[steps:deep]:  # on to ``deep`` steps without drawing (the core session, no signal)
        session.decoding.force(t)
    out["deep"] = _median_ms(lambda i: session.force(tokens[deep + i]), steps)
    core = session.decoding
    core.reset()
    out["core"] = _median_ms(lambda i: core.force(tokens[i]), steps)
    for frame in views.frames.values():
        frame.close()
    session.deleteLater()
    return out


def feed_token_by_token(bundle, n: int) -> tuple[float, float]:
    """(wall, CPU) ms of feeding an ``n``-token prompt one cached step per token, as the session did
    before its one pass: a session of a one-token prompt, then ``force`` of ``n - 1`` more tokens."""
    from attnviz.core.decoding.session import DecodingSession

    session = DecodingSession.from_bundle(bundle, source_of(bundle.src_tokenizer, 1), max_len=n)
    tokens = _tokens(bundle, n - 1)
    t0, c0 = time.perf_counter(), time.process_time()
    for t in tokens:
        session.force(t)
    return (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000


EXPORTED = ("grid", "head", "lines")  # the attention views, on the encoder self-attention of the long source


def export_sizes(bundle, n: int) -> dict[str, dict[str, int]]:
    """Per view of ``EXPORTED``: bytes of its PNG, SVG and PDF for an ``n``-token encoder
    self-attention (as on screen, at the window's default size), and whether the SVG holds text."""
    from attnviz.qt.export.files import render_view_to_bytes
    from attnviz.qt.selection import ViewChoice
    from attnviz.qt.session import Session
    from attnviz.qt.views.registry import build_view, feed_now, view_spec

    session = Session()
    session.decode_as_you_type = False
    session.set_bundle(bundle, source=source_of(bundle.src_tokenizer, n))
    out = {}
    for name in EXPORTED:
        spec = view_spec(name)
        view = build_view(spec)
        view.resize(*SIZES.get(name, SIZES["head"]))
        feed_now(spec, view, session, ViewChoice(kind="encoder", layer=0, head=0, mode="head" if name == "head" else None))
        view.show()
        _app().processEvents()
        files = {fmt: render_view_to_bytes(view, fmt) for fmt in ("png", "svg", "pdf")}
        out[name] = {fmt: len(data) for fmt, data in files.items()} | {"svg_text": files["svg"].count(b"<text")}
        view.close()
    session.deleteLater()
    return out


def run(report=print) -> dict:
    import torch

    from attnviz.qt.app import make_app

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=smoke.pick(12, 1))
    args = parser.parse_args(sys.argv[1:] if __name__ == "__main__" else [])
    torch.set_num_threads(1)
    make_app()
    bundle = base_bundle()
    report(f"== long inputs: {bundle.config.describe()}; grid + head detail on screen, on cross-attention ==")
    results = {n: measure(bundle, n, args.steps) for n in LENGTHS}
    _report_steps(report, results, "source tokens")
    gpt = base_bundle(bundle.src_tokenizer, **DECODER_ONLY)
    report(f"== long prompts: {gpt.config.describe()}; grid + head detail on screen, on decoder self-attention ==")
    prompts = {n: measure(gpt, n, args.steps) for n in LENGTHS}
    by_token = feed_token_by_token(gpt, LENGTHS[-1])
    for n, r in prompts.items():
        (wall, cpu), first = r["open"], r["first_draw"]
        before = f";  token by token {by_token[0]:8.1f} ms (CPU {by_token[1]:8.1f} ms): ×{by_token[0] / wall:5.1f}" if n == LENGTHS[-1] else ""
        report(f"{n:4d}-token prompt fed in one pass {wall:7.1f} ms (CPU {cpu:7.1f} ms)"
               f"  ×{wall / prompts[LENGTHS[0]]['open'][0]:5.2f} the {LENGTHS[0]}-token figure{before};"
               f"  first draw of the views {first[0]:7.1f} ms (CPU {first[1]:7.1f} ms)")
    _report_steps(report, prompts, "prompt tokens")
    sizes = export_sizes(bundle, LENGTHS[-1])
    report(f"figures of the {LENGTHS[-1]}-token source's encoder self-attention, exported as on screen:")
    for name, size in sizes.items():
        report(f"  {name:<6} PNG {size['png'] / 1024:6.0f} KiB   SVG {size['svg'] / 1024:6.0f} KiB"
               f" ({size['svg_text']} texts as text)   PDF {size['pdf'] / 1024:6.0f} KiB")
    return {"steps": results, "prompts": prompts, "prompt_token_by_token": by_token, "export": sizes}


def _report_steps(report, results: dict, what_tokens: str) -> None:
    """One line per input length and depth: step + refresh, its ratio to the shortest input's, the model's share."""
    short = results[LENGTHS[0]]
    for n, r in results.items():
        for what in ("early", "deep"):
            (wall, cpu), model = r[what], r["core"][1]
            verdict = "ok" if wall <= TARGET_MS else ("ok in CPU time" if cpu <= TARGET_MS else "over target")
            where = "first steps" if what == "early" else f"after {r['deep_steps']} steps"
            report(f"{n:4d} {what_tokens}, {where:<16} step + refresh {wall:7.2f} ms (CPU {cpu:6.2f} ms)"
                   f"  ×{wall / short[what][0]:5.2f} the {LENGTHS[0]}-token figure;  model step alone CPU {model:6.2f} ms,"
                   f" the views CPU {cpu - model:6.2f} ms   (target ≤ {TARGET_MS:.0f} ms: {verdict})")


if __name__ == "__main__":
    run()
