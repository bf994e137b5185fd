"""LayerNorm and BatchNorm side by side: the open bundle and another one on the same sentence,
each in the batch of :mod:`attnviz.core.analysis.norm_batch` (the norm-batch view's data).

The other bundle is by default the other of the two bundled models trained alike (``zh-en-small``,
LayerNorm, and ``zh-en-small-batchnorm``, BatchNorm: the same data, recipe and tokenizers), or any
bundle folder.
A BatchNorm side's batch comes from a training-mode pass (every BatchNorm uses its batch's
statistics; :class:`~attnviz.core.analysis.norm_batch.TrainingPassBuilder`). Where the two
bundles' tokenizers differ, the other one reads the sentence's text through its own. No Qt.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from attnviz.core.analysis.norm_batch import AccuracyGap, NormBatch, measure_accuracy, norm_batch_builder
from attnviz.core.bundle import folder_stamp, load_bundle
from attnviz.core.decoding.result import model_device
from attnviz.errors import AttnvizError
from attnviz.paths import models_dir

OTHER_BUNDLES = {"layer": "zh-en-small-batchnorm", "batch": "zh-en-small"}  # the bundled model beside one of each norm


class NormPairError(AttnvizError):
    """The folder of the bundle beside the open one cannot be used (one line)."""


def default_other_name(norm: str) -> str:
    """The bundled model shown beside a model normalizing with ``norm``: the LayerNorm one beside a
    BatchNorm model, the BatchNorm one beside any other."""
    return OTHER_BUNDLES.get(norm, OTHER_BUNDLES["layer"])


def default_other(config) -> Path:
    """The folder of :func:`default_other_name` for a model of ``config``."""
    return models_dir() / default_other_name(config.norm)


def folder_key(path: str) -> tuple:
    """What tells a folder saved again since from the one loaded (``folder_stamp``; ``()`` for a
    name no folder can have)."""
    return () if "\x00" in path else folder_stamp(Path(path).expanduser())


@dataclass(frozen=True, eq=False)
class NormSide:
    """One bundle's batch: ``name`` is its folder's, ``opened`` says it is the open model's."""

    name: str
    batch: NormBatch
    opened: bool


@dataclass(frozen=True, eq=False)
class NormBatchFrame:
    """What the norm-batch view draws: the open model's batch, then (where it could run) the other
    bundle's on the same sentence; how to measure the BatchNorm model's accuracy gap (``None``:
    no BatchNorm model, or its training data unknown) and that model (another one drops the
    measured numbers); ``problem``: why no bundle is beside the open one (one line, "" when one is)."""

    sides: tuple[NormSide, ...]
    measure: Callable[..., AccuracyGap | None] | None
    model: object
    problem: str = ""


@functools.lru_cache(maxsize=2)
def _loaded(path: str, stamp: tuple, device: object):
    """The bundle in ``path`` as saved at ``stamp``, loaded once (a model nobody changes: every
    pass over it leaves it as it was)."""
    return load_bundle(path, device=device)


def shares_tokenizers(a, b) -> bool:
    """``a`` and ``b`` split text into the same ids (the same tokenizer files)."""
    return all(type(x) is type(y) and x.to_bytes() == y.to_bytes()
               for x, y in ((a.src_tokenizer, b.src_tokenizer), (a.tgt_tokenizer, b.tgt_tokenizer)))


class OtherBundle:
    """The bundle beside the open one ``bundle``: loaded from its folder on first use and again when
    the folder (or what it holds) changes; its builder is kept from step to step."""

    def __init__(self, bundle):
        self.bundle = bundle
        self._lock = threading.Lock()
        self._kept: tuple[tuple[str, tuple], object, bool] | None = None  # (path, stamp), builder, shares the tokenizers

    def builder(self, path: str, stamp: tuple = ()) -> tuple[object, bool]:
        """(the builder of the bundle in ``path``, whether it shares the open bundle's tokenizers);
        an ``AttnvizError`` (one line) when ``path`` holds no bundle."""
        if "\x00" in path:
            raise NormPairError("a folder name cannot hold a NUL character")
        with self._lock:
            if self._kept is None or self._kept[0] != (path, stamp):
                other = _loaded(path, stamp, model_device(self.bundle.model))
                self._kept = ((path, stamp), norm_batch_builder(other), shares_tokenizers(self.bundle, other))
            return self._kept[1], self._kept[2]


def ids_for(a, b, source_text: str, src_ids: Sequence[int], tgt_ids: Sequence[int], shared: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The sentence ``a`` reads as ``src_ids``/``tgt_ids`` (SOS + target), in ``b``'s ids: the same
    ids where the bundles share their tokenizers, else the source and the target's text through ``b``'s."""
    if shared:
        return tuple(src_ids), tuple(tgt_ids)
    ca, cb = a.config, b.config
    text = a.tgt_tokenizer.decode([i for i in tgt_ids if i not in (ca.bos_id, ca.eos_id, ca.pad_id)])
    src = tuple(b.src_tokenizer.encode(source_text))[: cb.max_len]
    if not src:
        raise NormPairError(f"{b.name}'s tokenizer reads no token in the source")
    return src, (cb.bos_id, *b.tgt_tokenizer.encode(text))[: cb.max_len]


def norm_pair_frame(builder, other: OtherBundle, source_text: str, src_ids: tuple[int, ...], tgt_ids: tuple[int, ...],
                    path: str, stamp: tuple = ()) -> NormBatchFrame:
    """The open bundle's batch (``builder``'s) and beside it the batch of the bundle in ``path``
    on the same sentence (``stamp``: :func:`folder_key`, not read; a folder saved again since is
    another piece of work). A folder that holds no bundle leaves the open side alone, and says why."""
    sides, bundles, problem = [NormSide(builder.bundle.name, builder.build(src_ids, tgt_ids), True)], [builder.bundle], ""
    try:
        found, shared = other.builder(path, stamp)
        src, tgt = ids_for(builder.bundle, found.bundle, source_text, src_ids, tgt_ids, shared)
        sides.append(NormSide(found.bundle.name, found.build(src, tgt), False))
        bundles.append(found.bundle)
    except AttnvizError as exc:
        problem = " ".join(str(exc).split())
    bn = next((b for b in bundles if b.config.norm == "batch"), None)
    measure = functools.partial(measure_accuracy, bn) if bn is not None and bn.meta.get("data") else None
    return NormBatchFrame(tuple(sides), measure, (bn or builder.bundle).model, problem)
