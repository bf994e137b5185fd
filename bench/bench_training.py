"""Training throughput: target tokens per second of ``attnviz train``'s step (teacher-forced
loss with label smoothing, backward, clipping, Adam) against a plain ``torch.nn.Transformer``
training loop of the same size on the same batches, in the same process and thread count.
The ratio is what counts (target ≥ 0.8×); the machine's speed cancels out.

The precision case: the same step under ``precision="bf16"`` (bfloat16 autocast around the forward
pass and loss) against float32, on copies of the same weights and the same batches, timed in
alternating rounds so a load that comes and goes falls on both. bf16 is worth adopting at ≥ 1.3×
(and a valid loss within 1 % after 2 epochs, which this timing does not measure).

``python bench/bench_training.py [throughput] [precision]`` runs the cases named (default both)."""

from __future__ import annotations

import copy
import math
import statistics
import sys
import time

import smoke
import torch
import torch.nn.functional as F
from torch import nn

from attnviz.core.data import corpora as D
from attnviz.core.data.sources import load_data
from attnviz.core.model.modules import sinusoidal_encoding
from attnviz.core.training.trainer import Trainer, TrainOptions

TARGET_RATIO = 0.8
BF16_TARGET = 1.3  # bf16 step speed-up over float32 worth adopting
CASES = ("throughput", "precision")
CONFIG = dict(d_model=128, n_heads=4, d_ff=512, n_encoder_layers=3, n_decoder_layers=3, norm_placement="pre", final_norm=True)


class Reference(nn.Module):
    """The same network written with torch.nn.Transformer (pre-norm, final norms, sinusoidal PE)."""

    def __init__(self, src_vocab: int, tgt_vocab: int, pad_id: int):
        super().__init__()
        d = CONFIG["d_model"]
        self.pad_id = pad_id
        self.src_embed, self.tgt_embed = nn.Embedding(src_vocab, d), nn.Embedding(tgt_vocab, d)
        self.core = nn.Transformer(d, CONFIG["n_heads"], CONFIG["n_encoder_layers"], CONFIG["n_decoder_layers"], CONFIG["d_ff"],
                                   dropout=0.1, batch_first=True, norm_first=True)
        self.generator = nn.Linear(d, tgt_vocab)
        self.register_buffer("pe", sinusoidal_encoding(256, d))

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        scale = math.sqrt(self.src_embed.embedding_dim)
        x = self.src_embed(src) * scale + self.pe[: src.shape[1]]
        y = self.tgt_embed(tgt) * scale + self.pe[: tgt.shape[1]]
        causal = torch.triu(torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool), 1)  # True: masked, like the padding masks
        src_pad, tgt_pad = src == self.pad_id, tgt == self.pad_id
        out = self.core(x, y, tgt_mask=causal, tgt_is_causal=True, src_key_padding_mask=src_pad,
                        tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return self.generator(out)


def _reference_step(model: Reference, optimizer: torch.optim.Optimizer, batch: D.Batch, options: TrainOptions) -> None:
    logits = model(batch.src, batch.tgt_in)
    loss = F.cross_entropy(logits.transpose(1, 2), batch.labels, ignore_index=model.pad_id, label_smoothing=options.label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), options.clip)
    optimizer.step()


def _ours_step(trainer: Trainer, batch: D.Batch) -> None:
    trainer.steps.optimise(trainer.steps.loss(batch)[0])  # the trainer's own step, as fit() runs it


def _tokens_per_s(step, batches: list[D.Batch], rounds: int = 3) -> float:
    step(batches[0])  # warm-up
    rates = []
    for _ in range(smoke.pick(rounds, 1)):
        t0 = time.perf_counter()
        for b in batches:
            step(b)
        rates.append(sum(b.n_tokens for b in batches) / (time.perf_counter() - t0))
    return statistics.median(rates)


def _setup(n_batches: int = 12) -> tuple[Trainer, list[D.Batch]]:
    """A float32 trainer of the default's size on HSK (batches of ~2,000 target tokens) and the
    first ``n_batches`` batches of its first epoch."""
    options = TrainOptions(batch_tokens=2000, seed=0)
    trainer = Trainer.create(load_data("hsk-zh-en"), CONFIG, options, src_vocab=1800, tgt_vocab=2000)
    trainer.model.train()
    cfg = trainer.model.config
    order = D.make_batches(trainer.train_examples, options.batch_tokens, 0, 0)[: smoke.pick(n_batches, 1)]
    return trainer, [D.collate([trainer.train_examples[i] for i in ix], cfg.pad_id, cfg.bos_id, cfg.eos_id) for ix in order]


def run(report=print, threads: int = 1, cases: tuple[str, ...] = CASES) -> dict:
    torch.set_num_threads(threads)
    trainer, batches = _setup()
    results = {}
    if "throughput" in cases:
        results.update(_throughput(report, threads, trainer, batches))
    if "precision" in cases:
        results["precision"] = _precision(report, threads, trainer, batches[:4])
    return results


def _throughput(report, threads: int, trainer: Trainer, batches: list[D.Batch]) -> dict:
    """The trainer's step against the ``nn.Transformer`` reference loop."""
    options, cfg = trainer.options, trainer.model.config
    torch.manual_seed(0)
    ref = Reference(cfg.src_vocab_size, cfg.tgt_vocab_size, cfg.pad_id).train()
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    ours_rate = _tokens_per_s(lambda b: _ours_step(trainer, b), batches)
    ref_rate = _tokens_per_s(lambda b: _reference_step(ref, ref_opt, b, options), batches)
    ours_rate = max(ours_rate, _tokens_per_s(lambda b: _ours_step(trainer, b), batches))  # measured around the reference: noise
    n_ours = sum(p.numel() for p in trainer.model.parameters())
    n_ref = sum(p.numel() for p in ref.parameters())
    report(f"Training throughput ({len(batches)} batches of ~{options.batch_tokens} tokens, d_model {CONFIG['d_model']}, "
           f"3+3 layers, {threads} thread(s); parameters ours {n_ours:,} / reference {n_ref:,})")
    report(f"  nn.Transformer loop (reference): {ref_rate:8.0f} target tokens/s   1.00×")
    report(f"  attnviz train step:              {ours_rate:8.0f} target tokens/s   {ours_rate / ref_rate:.2f}× (target ≥ {TARGET_RATIO}×)")
    return {"ours": ours_rate, "reference": ref_rate, "ratio": ours_rate / ref_rate}


def _precision(report, threads: int, trainer: Trainer, batches: list[D.Batch], rounds: int = 3) -> dict:
    """Milliseconds per training step, float32 and bf16, each on its own copy of ``trainer``'s
    weights, in alternating rounds over ``batches``; the median round of each."""
    rounds = smoke.pick(rounds, 1)
    bf16_options = TrainOptions(**{**trainer.options.to_dict(), "precision": "bf16"})
    steppers = {}
    for name, options in (("float32", trainer.options), ("bf16", bf16_options)):
        t = Trainer(copy.deepcopy(trainer.model), trainer.src_tok, trainer.tgt_tok, trainer.dataset, options)
        t.model.train()
        steppers[name] = lambda b, t=t: _ours_step(t, b)
        steppers[name](batches[0])  # warm-up
    ms: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(rounds):
        for name, step in steppers.items():
            t0 = time.perf_counter()
            for b in batches:
                step(b)
            ms[name].append((time.perf_counter() - t0) * 1000 / len(batches))
    f32, bf16 = statistics.median(ms["float32"]), statistics.median(ms["bf16"])
    tokens = sum(b.n_tokens for b in batches) / len(batches)
    report(f"Training step precision ({len(batches)} batches of ~{tokens:.0f} target tokens x {rounds} rounds, d_model {CONFIG['d_model']}, "
           f"3+3 layers, {threads} thread(s); bf16 = bfloat16 autocast around forward + loss; CPU kernels {torch.backends.cpu.get_cpu_capability()})")
    report(f"  float32: {f32:7.1f} ms/step   1.00×")
    report(f"  bf16:    {bf16:7.1f} ms/step   {f32 / bf16:.2f}× (worth adopting at ≥ {BF16_TARGET}×)")
    return {"float32_ms": f32, "bf16_ms": bf16, "ratio": f32 / bf16}


if __name__ == "__main__":
    run(cases=tuple(sys.argv[1:]) or CASES)
