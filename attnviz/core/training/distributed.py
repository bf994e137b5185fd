"""Training on several processes, on one machine or several: torch.distributed with
DistributedDataParallel (gloo on the CPU, NCCL on CUDA), under ``torchrun``. No Qt.

``torchrun --nproc-per-node N -m attnviz train …`` starts N processes with ``RANK``,
``WORLD_SIZE`` and ``LOCAL_RANK`` in their environment (``environment``); ``attnviz train --nproc N``
starts torchrun itself (``launch``: ``--standalone``, a free port on this machine). Each process
builds the same run (data, tokenizers: both deterministic, and compared across the processes by a
digest), joins the process group (``process_group``) and wraps its model in DDP (``Ranks.wrap``),
whose construction copies rank 0's weights to every process. CUDA: each process takes the GPU of
its ``LOCAL_RANK`` (``claim_gpu``).

How a step is shared. Every process builds the epoch's same global batches from ``(seed, epoch)``
(``corpora.make_batches``; a streamed corpus pool by pool) and takes every ``world``-th row of each
(``Ranks.shard``). That is what a ``DistributedSampler`` with ``set_epoch(epoch)`` does in a
DataLoader pipeline (a new order each epoch, the same on every process), done on the trainer's own
batches: a sampler shards *examples*, so each process would cut a different number of
token-bucketed batches (and DDP would hang at the epoch's end) and no step would be the
one-process run's. Each process's loss is its rows' token sum divided by the global batch's tokens,
times ``world`` (DDP averages gradients over the processes), so the averaged gradient is that of
the one-process loss of the whole batch: ``--batch-tokens`` is the global batch, and N processes
take the steps one process takes, up to the order of floating-point sums. A process left without a
row (a batch of fewer rows than processes) takes part with a stand-in row of weight 0. A stop
(Ctrl-C, or SIGTERM under torchrun) is agreed on before each step (``Ranks.any``), so every process
stops after the same one.

BatchNorm: each process normalises with its own rows' batch statistics (plain DDP; DDP copies
rank 0's running statistics to every process at each forward). SyncBatchNorm is not used: it does
not run on the CPU.

Files: only rank 0 holds the folder lock and writes the bundle, the checkpoints and the progress;
the other processes read the checkpoint when resuming and never create a file in the output
folder. At each checkpoint the processes compare SHA-256 digests of their parameters
(``weights_digest``); meta.json's ``distributed`` records them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

import torch
import torch.distributed as dist

from attnviz.errors import AttnvizError

T = TypeVar("T")
TIMEOUT = timedelta(hours=2)  # a collective waits this long (rank 0 evaluates while the others wait for the next step)


class DistributedError(AttnvizError, RuntimeError):
    """Processes that cannot train together (one-line message)."""


@dataclass(frozen=True)
class Environment:
    """What torchrun tells a process about its place."""

    rank: int  # 0 .. world - 1 over every machine
    world: int  # processes in all
    local_rank: int  # 0 .. local_world - 1 on this machine
    local_world: int  # processes on this machine


@dataclass(frozen=True)
class Ranks:
    """This process among the processes of a run; ``Ranks()`` is a run of one process."""

    rank: int = 0
    world: int = 1
    backend: str = ""  # "gloo" or "nccl"; "" for one process

    @property
    def main(self) -> bool:
        """Rank 0: the process that writes and reports."""
        return self.rank == 0

    def shard(self, rows: Sequence[T]) -> tuple[list[T], bool]:
        """This process's rows of a global batch, and ``False`` when it has none and takes the
        first row as a stand-in of weight 0 instead."""
        mine = list(rows[self.rank :: self.world])
        return (mine, True) if mine else (list(rows[:1]), False)

    def total(self, *values: float) -> list[float]:
        """Each value summed over the processes (float64)."""
        if self.world == 1:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self._device())
        dist.all_reduce(t)
        return t.tolist()

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is set in any process (all of them learn it at the same step)."""
        return flag if self.world == 1 else self.total(float(flag))[0] > 0

    def gather(self, digest: bytes) -> list[bytes]:
        """Every process's ``digest`` (same length everywhere), in rank order."""
        if self.world == 1:
            return [digest]
        mine = torch.tensor(list(digest), dtype=torch.uint8, device=self._device())
        parts = [torch.empty_like(mine) for _ in range(self.world)]
        dist.all_gather(parts, mine)
        return [bytes(p.cpu().tolist()) for p in parts]

    def check_same(self, digest: bytes, what: str) -> None:
        """``DistributedError`` unless every process has the same ``digest`` of ``what``."""
        digests = self.gather(digest)
        differ = [r for r, d in enumerate(digests) if d != digests[0]]
        if differ:
            raise DistributedError(f"the processes differ in {what} (rank 0 and rank {differ[0]}); give every process the same files")

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """The module to train: ``model`` in DDP (which copies rank 0's weights to every process),
        or ``model`` itself in a run of one process."""
        if self.world == 1:
            return model
        from torch.nn.parallel import DistributedDataParallel

        ids = [torch.cuda.current_device()] if self.backend == "nccl" else None
        return DistributedDataParallel(model, device_ids=ids)

    def _device(self) -> torch.device:
        return torch.device("cuda", torch.cuda.current_device()) if self.backend == "nccl" else torch.device("cpu")


def weights_digest(weights: Mapping[str, torch.Tensor]) -> bytes:
    """SHA-256 over ``weights`` sorted by name: each name, then its values as contiguous float32."""
    h = hashlib.sha256()
    for name in sorted(weights):
        h.update(name.encode())
        h.update(weights[name].detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return h.digest()


# -- joining and leaving --------------------------------------------------------------------
def environment() -> Environment | None:
    """torchrun's ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``LOCAL_WORLD_SIZE``, or ``None`` outside torchrun."""
    env = os.environ
    if "WORLD_SIZE" not in env:
        return None
    try:
        world, rank = int(env["WORLD_SIZE"]), int(env.get("RANK", "0"))
        local, local_world = int(env.get("LOCAL_RANK", rank)), int(env.get("LOCAL_WORLD_SIZE", world))
    except ValueError:
        names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
        raise DistributedError(f"torchrun's environment is not numbers: {', '.join(f'{n}={env.get(n)}' for n in names)}"[:200]) from None
    if not (0 <= rank < world and 0 <= local < local_world <= world):
        raise DistributedError(f"torchrun's environment does not add up: RANK {rank}, WORLD_SIZE {world}, LOCAL_RANK {local}")
    return Environment(rank, world, local, local_world)


def claim_gpu(env: Environment | None) -> None:
    """Make the GPU of this process's ``LOCAL_RANK`` the current one (before any model reaches CUDA)."""
    if env is not None and torch.cuda.is_available():
        if env.local_rank >= torch.cuda.device_count():
            raise DistributedError(f"LOCAL_RANK {env.local_rank} but this machine has {torch.cuda.device_count()} GPU(s); start fewer processes per node")
        torch.cuda.set_device(env.local_rank)


@contextmanager
def process_group(env: Environment | None, device: torch.device) -> Iterator[Ranks]:
    """This process's ``Ranks`` (``Ranks()`` outside torchrun or for one process), the process group
    joined for the block: NCCL when ``device`` is CUDA, gloo otherwise."""
    if env is None or env.world == 1:
        yield Ranks()
        return
    if device.type not in ("cpu", "cuda"):
        raise DistributedError(f"several processes train on the CPU (gloo) or CUDA (NCCL), not on {device.type}")
    if device.type == "cuda" and device.index is not None and device.index != torch.cuda.current_device():
        raise DistributedError(f"--device {device} would put every process on one GPU; use --device cuda (each process takes the GPU of its LOCAL_RANK)")
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, timeout=TIMEOUT)
    try:
        yield Ranks(env.rank, env.world, backend)
    finally:
        dist.destroy_process_group()


def launch(nproc: int, argv: Sequence[str], env_extra: Mapping[str, str] | None = None) -> int:
    """Run ``attnviz ARGV`` as ``nproc`` processes on this machine under torchrun (``--standalone``:
    its own rendezvous on a free port; ``env_extra`` added to their environment) and wait for it;
    its exit status, or 130 when a Ctrl-C
    stopped it. Ctrl-C reaches torchrun, which passes it to the processes (they save and stop);
    this one only waits."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", "-m", "attnviz", *argv]
    env = {**os.environ, **(env_extra or {})}
    env.setdefault("OMP_NUM_THREADS", "1")  # --threads sets torch's own; this silences torchrun's notice
    proc = subprocess.Popen(cmd, env=env, preexec_fn=functools.partial(_stop_with_parent, os.getpid()))
    interrupted: list[int] = []

    def on_signal(signum, frame) -> None:
        interrupted.append(signum)
        if signum == signal.SIGTERM:  # Ctrl-C reaches torchrun through the terminal; a SIGTERM is passed on
            proc.send_signal(signal.SIGTERM)

    try:
        old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        old = {}
    try:
        code = proc.wait()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    return 130 if interrupted and code != 0 else code


def _stop_with_parent(launcher: int) -> None:
    """In torchrun's process, before it starts: ask Linux to send it SIGTERM when this launcher
    dies (killed with SIGKILL too), so torchrun stops its processes (they save and stop) rather
    than training on to the end with no one waiting. Elsewhere nothing is asked."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM))
    except (OSError, AttributeError):
        return
    if os.getppid() != launcher:  # the launcher died before the request: stop now
        os.kill(os.getpid(), signal.SIGTERM)
