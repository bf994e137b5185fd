"""Nearest training sentences (as in Seq2Seq-Vis, Strobelt et al. 2018): for one decoder step, the
training pairs whose decoder state at some target position is nearest (cosine) to this step's,
each with that position and the token it went on to (``attnviz neighbours``). No Qt.

A decoder state is the last decoder layer's output before the output layer (trace name
``decoder.output``, after the final norm where the model has one) at one row of a
teacher-forced pass: row t has read SOS y_1 .. y_t (a decoder-only model: SOS, its prompt, then
the target) and its next token is y_{t+1} (EOS after the last).

The index (``NeighbourIndex``) holds the states of every row of up to ``DEFAULT_PAIRS`` training
pairs of the model's data (an evenly spaced sample of its training split, before augmentation),
unit length, as float16, with each row's pair, position and next token, and the pairs' ids and
texts. It is built once per model and kept in the user's cache folder (``cache_folder()``,
``<model hash>.npz``), read back with ``np.load(allow_pickle=False)``; a damaged file, another
model's or one of another size is built again (``cached_index`` says so in one line).
"""

from __future__ import annotations

import io
import os
import re
import sys
import threading
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from attnviz.core.analysis.head_roles import evenly_spaced
from attnviz.core.data.corpora import Pair
from attnviz.core.data.pieces import SP_WORD_START
from attnviz.core.decoding.result import model_device
from attnviz.core.limits import INDEX_PAIRS, NEIGHBOURS
from attnviz.errors import AttnvizError

if TYPE_CHECKING:
    from attnviz.core.data.tokenizer import Tokenizer
    from attnviz.core.model.config import TransformerConfig
    from attnviz.core.model.transformer import Transformer

FORMAT = "attnviz-neighbours-1"  # what an index file says it is (a file saying anything else is built again)
DEFAULT_PAIRS = INDEX_PAIRS
DEFAULT_K = NEIGHBOURS
BATCH_ROWS = 64  # pairs in one model pass
ARRAYS = ("format", "model_hash", "asked", "states", "pair", "position", "next_token", "pair_ids", "sources", "targets")
_HASH = re.compile(r"[0-9a-f]{16,128}")
MARK = ("\u27e6", "\u27e7")  # ⟦ ⟧ around the token a neighbour's target is at: plain text, never markup
UNAVAILABLE = {  # why the analysis does not apply, by key
    "no-decoder": "an encoder-only model (BERT) has no decoder: it has no decoder states to compare",
    "no-data": "the model names no training data: there are no training sentences to search",
}


class NeighboursError(AttnvizError, ValueError):
    """An index that cannot be read, or a request that cannot be answered; one line."""


def unavailable(config: TransformerConfig, spec: Mapping[str, Any] | None) -> str | None:
    """The key of ``UNAVAILABLE`` that says why a model cannot be searched, or ``None`` when it can."""
    if config.kind == "encoder-only":
        return "no-decoder"
    return "no-data" if spec is None else None


def training_pairs(spec: Mapping[str, Any], n: int = DEFAULT_PAIRS) -> list[Pair]:
    """``n`` evenly spaced pairs of the training split of the data ``spec`` (a meta.json's) names."""
    from attnviz.core.data.sources import load_data

    return evenly_spaced(load_data(dict(spec)).train, n)


# -- the rows of a pair --------------------------------------------------------------------------
@dataclass(frozen=True)
class Fed:
    """A pair as its teacher-forced pass reads it: ``src`` for the encoder, ``fed`` for the decoder,
    ``next`` the token each decoder row goes on to, ``pieces`` the fed tokens' pieces."""

    src: tuple[int, ...]
    fed: tuple[int, ...]
    next: tuple[int, ...]
    pieces: tuple[str, ...]


def fed_rows(config: TransformerConfig, src_tok: Tokenizer, tgt_tok: Tokenizer, source: str, target: str) -> Fed | None:
    """``source``/``target`` as the decoder reads them, or ``None`` when they do not fit (empty, too long, unreadable)."""
    try:
        s, t = src_tok.encode(source), tgt_tok.encode(target)
    except ValueError:
        return None
    if config.kind == "decoder-only":
        fed, pieces = (config.bos_id, *s, *t), (tgt_tok.piece(config.bos_id), *src_tok.pieces(s), *tgt_tok.pieces(t))
        return Fed((), fed, (*s, *t, config.eos_id), tuple(pieces)) if s and len(fed) <= config.max_len else None
    if not s or len(s) > config.max_len or len(t) + 1 > config.max_len:
        return None
    fed = (config.bos_id, *t)
    return Fed(tuple(s), fed, (*t, config.eos_id), tuple(tgt_tok.pieces(fed)))


def decoder_states(model: Transformer, rows: Sequence[Fed]) -> list[np.ndarray]:
    """``[len(fed), d_model]`` decoder states of each of ``rows``, in one padded pass."""
    cfg, device = model.config, model_device(model)
    src = torch.full((len(rows), max(len(r.src) for r in rows)), cfg.pad_id, dtype=torch.long)
    fed = torch.full((len(rows), max(len(r.fed) for r in rows)), cfg.pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        src[i, : len(r.src)] = torch.tensor(r.src, dtype=torch.long)
        fed[i, : len(r.fed)] = torch.tensor(r.fed, dtype=torch.long)
    with torch.inference_mode():  # the decoder's output, before the output layer (``decoder.output``): no logits computed
        out = model.decode(fed.to(device), model.encode(src.to(device))).float().cpu().numpy()  # [B, Lt, d]
    return [out[i, : len(r.fed)] for i, r in enumerate(rows)]


def unit(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` scaled to length 1 (a zero row stays zero), float32."""
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


# -- the index -----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class NeighbourIndex:
    """Decoder states of training pairs: ``states`` ``[n, d_model]`` float16 (unit length), and per
    state its ``pair`` (an index into ``pair_ids``/``sources``/``targets``), ``position`` (the
    decoder row) and ``next_token``; ``model_hash`` the model's, ``asked`` the pairs asked for."""

    states: np.ndarray
    pair: np.ndarray
    position: np.ndarray
    next_token: np.ndarray
    pair_ids: np.ndarray
    sources: np.ndarray
    targets: np.ndarray
    model_hash: str
    asked: int

    @cached_property
    def _unit32(self) -> np.ndarray:
        return unit(self.states)  # float16 rounding leaves a stored row a little off length 1

    def similarities(self, state: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``state`` ``[d_model]`` to every state of the index ``[n]``."""
        return self._unit32 @ unit(state)

    def nearest(self, state: np.ndarray, k: int = DEFAULT_K) -> list[tuple[int, float]]:
        """The ``k`` states most similar to ``state``: (state index, cosine similarity), most similar first."""
        sims = self.similarities(state)
        k = min(k, sims.size)
        if k <= 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.lexsort((top, -sims[top]))]  # most similar first; ties by index
        return [(int(i), float(sims[i])) for i in top]

    def to_bytes(self) -> bytes:
        """The index as an ``.npz`` file's bytes (plain arrays: no object, nothing pickled)."""
        buf = io.BytesIO()
        np.savez(buf, format=np.array(FORMAT), model_hash=np.array(self.model_hash), asked=np.array(self.asked),
                 states=self.states, pair=self.pair, position=self.position, next_token=self.next_token,
                 pair_ids=self.pair_ids, sources=self.sources, targets=self.targets)
        return buf.getvalue()


def build_index(model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, pairs: Sequence[Pair], model_hash: str = "",
                asked: int | None = None, batch_rows: int = BATCH_ROWS) -> NeighbourIndex:
    """The states of every decoder row of ``pairs`` (pairs that do not fit left out), ``batch_rows`` pairs a pass."""
    kept = [(p, f) for p in pairs if (f := fed_rows(model.config, src_tok, tgt_tok, p.src, p.tgt)) is not None]
    order = sorted(range(len(kept)), key=lambda i: (len(kept[i][1].fed), len(kept[i][1].src)))  # batches of like lengths: little padding
    states, pair, position, next_token = [], [], [], []
    for start in range(0, len(order), batch_rows):
        part = order[start:start + batch_rows]
        for i, rows in zip(part, decoder_states(model, [kept[i][1] for i in part])):
            f = kept[i][1]
            states.append(unit(rows).astype(np.float16))
            pair.append(np.full(len(f.fed), i, np.int32))
            position.append(np.arange(len(f.fed), dtype=np.int32))
            next_token.append(np.asarray(f.next, np.int32))
    d = model.config.d_model
    return NeighbourIndex(np.concatenate(states) if states else np.zeros((0, d), np.float16), _joined(pair), _joined(position), _joined(next_token),
                          np.array([p.id for p, _ in kept], dtype=str), np.array([p.src for p, _ in kept], dtype=str),
                          np.array([p.tgt for p, _ in kept], dtype=str), model_hash, len(pairs) if asked is None else asked)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


def read_index(path: str | os.PathLike, model_hash: str, asked: int, d_model: int) -> NeighbourIndex:
    """The index stored at ``path`` (``np.load(allow_pickle=False)``); ``NeighboursError`` for a
    damaged file, or one of another format, model, size or width."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in ARRAYS}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise NeighboursError(f"damaged ({type(exc).__name__})") from None
    if str(arrays["format"]) != FORMAT or str(arrays["model_hash"]) != model_hash:
        raise NeighboursError("another model's or another format's")
    if int(arrays["asked"]) != asked:
        raise NeighboursError(f"built from {int(arrays['asked'])} pairs, not {asked}")
    index = NeighbourIndex(**{k: arrays[k] for k in ARRAYS[3:]}, model_hash=model_hash, asked=asked)
    _check_shapes(index, d_model)
    return index


def _check_shapes(index: NeighbourIndex, d_model: int) -> None:
    n, pairs = len(index.states), len(index.pair_ids)
    ok = (index.states.dtype == np.float16 and index.states.ndim == 2 and index.states.shape[1] == d_model
          and all(a.ndim == 1 and len(a) == n and a.dtype.kind == "i" for a in (index.pair, index.position, index.next_token))
          and all(a.ndim == 1 and len(a) == pairs and a.dtype.kind == "U" for a in (index.pair_ids, index.sources, index.targets))
          and (n == 0 or (0 <= index.pair.min() and index.pair.max() < pairs and index.position.min() >= 0)))
    if not ok:
        raise NeighboursError("damaged (arrays of the wrong shape or type)")


# -- the cache folder ----------------------------------------------------------------------------
def cache_folder() -> Path:
    """Where indexes are kept: the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``;
    ``~/Library/Caches`` on macOS; ``%LOCALAPPDATA%`` on Windows) + ``attnviz/neighbours``."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "attnviz" / "neighbours"


def index_path(folder: str | os.PathLike, model_hash: str) -> Path:
    if not _HASH.fullmatch(model_hash):
        raise NeighboursError(f"not a model hash: {model_hash[:40]!r}")
    return Path(folder) / f"{model_hash}.npz"


def cached_index(folder: str | os.PathLike | None, model_hash: str | None, asked: int, d_model: int,
                 build: Callable[[], NeighbourIndex], rebuild: bool = False) -> tuple[NeighbourIndex, str]:
    """The index kept in ``folder`` for ``model_hash``, else ``build()`` (then kept there), and one
    line saying what happened. No hash (a model with no files): built, not kept."""
    from attnviz.core.atomic import atomic_write_bytes

    if model_hash is None or folder is None:
        return build(), "index built (not kept: the model has no files to name it by)"
    path = index_path(folder, model_hash)
    why = "asked to build it again" if rebuild else "none kept yet"
    if not rebuild and path.is_file():
        try:
            return read_index(path, model_hash, asked, d_model), f"index read from {path}"
        except NeighboursError as exc:
            why = f"the kept one was {exc}"
    index = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, index.to_bytes())
    except OSError as exc:
        return index, f"index built ({why}); could not keep it in {path}: {exc.strerror or exc}"
    return index, f"index built ({why}) and kept in {path}"


class SharedIndex:
    """One model's index, read or built once however many threads ask for it (the first builds, the others wait)."""

    def __init__(self, folder: str | os.PathLike | None, model_hash: str | None, spec: Mapping[str, Any], asked: int = DEFAULT_PAIRS):
        self.folder, self.model_hash, self.spec, self.asked = folder, model_hash, dict(spec), asked
        self._lock = threading.Lock()
        self._built: tuple[NeighbourIndex, str] | None = None

    def get(self, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer) -> tuple[NeighbourIndex, str]:
        with self._lock:
            if self._built is None:
                def build() -> NeighbourIndex:
                    return build_index(model, src_tok, tgt_tok, training_pairs(self.spec, self.asked), self.model_hash or "", self.asked)
                self._built = cached_index(self.folder, self.model_hash, self.asked, model.config.d_model, build)
            return self._built


# -- the answer ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Neighbour:
    """One training pair's decoder row near the step: its text, the row's position and the token it went on to."""

    pair_id: str
    source: str
    target: str
    pieces: tuple[str, ...]  # the fed tokens: SOS + target (a decoder-only model: SOS, source, target)
    position: int  # the row: it has read pieces[:position + 1]
    next_piece: str
    similarity: float

    def marked(self) -> str:
        """The fed tokens as plain text, the one at ``position`` between ⟦ ⟧."""
        return marked_text(self.pieces, self.position)


@dataclass(frozen=True)
class Neighbours:
    """The ``k`` nearest training rows of one step, most similar first."""

    position: int  # the step's row (0-based)
    pieces: tuple[str, ...]  # the step's fed tokens
    next_piece: str  # what the model went on to at that row
    neighbours: tuple[Neighbour, ...]
    states: int  # rows in the index
    pairs: int  # pairs in the index
    notice: str  # how the index was had (read, built, kept)

    def marked(self) -> str:
        return marked_text(self.pieces, self.position)


def marked_text(pieces: Sequence[str], position: int) -> str:
    """``pieces`` as plain text (the word-start mark as a space), piece ``position`` between ⟦ ⟧."""
    out = []
    for i, piece in enumerate(pieces):
        text = piece.replace(SP_WORD_START, " ").replace("\u0120", " ")
        if i == position:
            core = text.lstrip(" ")
            text = f"{text[: len(text) - len(core)]}{MARK[0]}{core}{MARK[1]}"
        out.append(text)
    return "".join(out).strip()


def step_state(model: Transformer, src_ids: Sequence[int], fed_ids: Sequence[int], row: int) -> np.ndarray:
    """The decoder state of row ``row`` of a pass feeding ``fed_ids`` after ``src_ids`` ``[d_model]``."""
    if not 0 <= row < len(fed_ids):
        raise NeighboursError(f"no decoder row {row + 1}: {len(fed_ids)} token{'s' * (len(fed_ids) != 1)} were fed (1 to {len(fed_ids)})")
    return decoder_states(model, [Fed(tuple(src_ids), tuple(fed_ids), (), ())])[0][row]


def neighbours_of(index: NeighbourIndex, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, src_ids: Sequence[int],
                  fed_ids: Sequence[int], next_ids: Sequence[int], row: int, k: int = DEFAULT_K, notice: str = "") -> Neighbours:
    """The ``k`` training rows nearest to row ``row`` of a pass feeding ``fed_ids`` after ``src_ids``
    (``next_ids``: the token each row went on to)."""
    found = []
    for i, sim in index.nearest(step_state(model, src_ids, fed_ids, row), k):
        p = int(index.pair[i])
        f = fed_rows(model.config, src_tok, tgt_tok, str(index.sources[p]), str(index.targets[p]))
        pieces = f.pieces if f is not None else ()
        found.append(Neighbour(str(index.pair_ids[p]), str(index.sources[p]), str(index.targets[p]), pieces, int(index.position[i]),
                               tgt_tok.piece(int(index.next_token[i])), sim))
    nxt = tgt_tok.piece(int(next_ids[row])) if row < len(next_ids) else ""
    return Neighbours(row, tuple(tgt_tok.pieces(fed_ids)), nxt, tuple(found), len(index.states), len(index.pair_ids), notice)


def neighbours_for(shared: SharedIndex, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, src_ids: Sequence[int],
                   fed_ids: Sequence[int], next_ids: Sequence[int], row: int, k: int = DEFAULT_K) -> Neighbours:
    """``neighbours_of`` with the model's shared index (read or built on first use): the window's view."""
    index, notice = shared.get(model, src_tok, tgt_tok)
    return neighbours_of(index, model, src_tok, tgt_tok, src_ids, fed_ids, next_ids, row, k, notice)
