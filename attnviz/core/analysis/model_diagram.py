"""The map of a model: which blocks a model of a :class:`TransformerConfig` has, in the order its
data flows through them, and where each is drawn. No Qt; the window's model-map view renders a
:class:`MapFrame` and places it with :func:`place`.

A model is one or two columns (:class:`Column`), the encoder's and the decoder's, each a list of
rows from the input down: the embedding and its positions, the first layer drawn block by block
(a sublayer, its residual add and its norm in the order ``norm_placement`` gives: pre-norm
``Norm → Sublayer → Add``, post-norm ``Sublayer → Add & Norm``), every further layer as one
compact row of chips (or, past :data:`MAX_COMPACT_ROWS`, one row standing for all of them,
"× N"), the final norm, and the output layer. Labels and shapes are English templates the window
translates and fills (``{norm}``: the norm's name, ``{symbol}``: its symbol; shapes from
:func:`shape_values`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from attnviz.core.analysis.figure_data import FigureData
from attnviz.core.model.config import NORM_NAMES, NORM_SYMBOLS, TransformerConfig
from attnviz.core.model.sites import n_layers, stack_kinds

BLOCK_KINDS = ("embedding", "positional", "norm", "attention", "mask", "add", "add_norm", "ffn", "head", "linear", "softmax")
STATES = ("idle", "active", "once")  # a block the current step does not pass, passes, or whose result it reuses (the encoder)
MAX_COMPACT_ROWS = 5  # layers after the first drawn one row each up to this many (a 6-layer stack); more (a 12-layer one): one "× N" row

# row heights, in units of a big block's height
TALL, THIN, COMPACT, GAP, COMPACT_GAP = 1.0, 0.72, 0.8, 0.38, 0.2  # COMPACT_GAP: between two compact rows
MASK_SPAN = 0.3  # the mask chip's width, of its row's attention block
MIN_UNIT, MAX_UNIT = 22.0, 46.0  # px: a big block's least and greatest height
MIN_COLUMN, MAX_COLUMN = 150.0, 320.0  # px: a column's least and greatest width

_ATTENTION_LABELS = {"encoder": "Multi-head self-attention", "decoder": "Masked multi-head self-attention", "cross": "Multi-head cross-attention"}
_CHIP_LABELS = {"encoder": "self-attn", "decoder": "self-attn", "cross": "cross-attn"}  # a compact row's (its tooltip names the block in full)
_POSITIONAL_LABELS = {"sinusoidal": "Positional encoding (sin/cos)", "learned": "Learned positions", "relative": "Relative position bias"}
_POSITIONAL_SHAPES = {"sinusoidal": "PE [positions × d_model] = [{n} × {d_model}]", "learned": "P [positions × d_model] = [{n} × {d_model}]",
                      "relative": "B [heads × queries × keys] = [{heads} × {n} × {n}], {buckets} buckets"}
TOKENS = "[tokens × d_model] = [{n} × {d_model}]"
WEIGHTS = "[heads × queries × keys] = [{heads} × {q} × {k}], d_k = {d_k}"


@dataclass(frozen=True)
class Block:
    """One block of the map. ``key``: its name, unique in the map (the model's module path where it
    has one, ``decoder.layers.0.cross_attn``); ``kind``: of :data:`BLOCK_KINDS`; ``stack``: the
    column it sits in; ``layers``: the layers it stands for (0-based; several for a "× N" row's
    chip, none outside the layers); ``site``: the attention kind of an attention or mask block;
    ``label``/``shape``: English templates (``name``: the block's full name where ``label`` is a
    compact row's short one); ``span``: its width relative to the others of its row."""

    key: str
    kind: str
    stack: str
    label: str
    shape: str = TOKENS
    layers: tuple[int, ...] = ()
    site: str | None = None
    span: float = 1.0
    name: str = ""

    @property
    def title(self) -> str:
        """The block's full name (a template, as ``label``)."""
        return self.name or self.label

    @property
    def layer(self) -> int | None:
        """The (first) layer it stands for; ``None`` outside the layers."""
        return self.layers[0] if self.layers else None


@dataclass(frozen=True)
class Row:
    """Blocks side by side. ``height`` in units; ``layers``: the layers a compact row stands for
    (``()``: a row of the input, the first layer or the output); ``in_layer``: the first layer's rows
    (drawn framed)."""

    blocks: tuple[Block, ...]
    height: float = TALL
    layers: tuple[int, ...] = ()
    in_layer: bool = False


@dataclass(frozen=True)
class Column:
    stack: str  # "encoder" or "decoder"
    n_layers: int
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Diagram:
    """The blocks of a model, one :class:`Column` per stack, the encoder's first. ``sizes``: what
    the shapes are filled with (heads, d_model, d_k, d_ff, vocab, buckets)."""

    columns: tuple[Column, ...]
    norm: str  # config.norm
    placement: str  # config.norm_placement
    kind: str  # config.kind
    sizes: Mapping[str, int]

    def blocks(self) -> tuple[Block, ...]:
        return tuple(b for c in self.columns for r in c.rows for b in r.blocks)

    def block(self, key: str) -> Block:
        return next(b for b in self.blocks() if b.key == key)

    def column(self, stack: str) -> Column | None:
        return next((c for c in self.columns if c.stack == stack), None)

    @property
    def norm_name(self) -> str:
        return NORM_NAMES[self.norm]

    @property
    def norm_symbol(self) -> str:
        return NORM_SYMBOLS[self.norm]


# -- the blocks -----------------------------------------------------------------------------------
def model_diagram(config: TransformerConfig) -> Diagram:
    """The map of a model of ``config``."""
    stacks = [s for s in ("encoder", "decoder") if _has_stack(config, s)]
    columns = tuple(Column(s, n_layers(config, s), _stack_rows(config, s, s == stacks[-1])) for s in stacks)
    sizes = {"heads": config.n_heads, "d_model": config.d_model, "d_k": config.d_k, "d_ff": config.d_ff,
             "vocab": config.src_vocab_size if config.kind == "encoder-only" else config.tgt_vocab_size, "buckets": config.relative_buckets}
    return Diagram(columns, config.norm, config.norm_placement, config.kind, sizes)


def _has_stack(config: TransformerConfig, stack: str) -> bool:
    return config.kind != ("decoder-only" if stack == "encoder" else "encoder-only")


def _stack_rows(config: TransformerConfig, stack: str, last: bool) -> tuple[Row, ...]:
    """A column's rows: input, the first layer block by block, the others compact, final norm, output."""
    rows = list(_input_rows(config, stack))
    n = n_layers(config, stack)
    if n:
        rows += _layer_rows(config, stack, 0)
    rest = tuple(range(1, n))
    if len(rest) > MAX_COMPACT_ROWS:
        rows.append(_compact_row(config, stack, rest))
    else:
        rows += [_compact_row(config, stack, (i,)) for i in rest]
    if config.final_norm:
        rows.append(Row((Block(f"{stack}.final_norm", "norm", stack, "Final {norm}", layers=()),), THIN))
    if last:
        rows += _output_rows(config, stack)
    return tuple(rows)


def _input_rows(config: TransformerConfig, stack: str) -> list[Row]:
    if config.kind != "encoder-decoder":
        label = "Token embedding"
    else:
        label = "Source embedding" if stack == "encoder" else "Target embedding"
    rows = [Row((Block(f"{stack}.embed.tokens", "embedding", stack, label, "E [tokens × d_model] = [{n} × {d_model}]"),))]
    pe = config.positional
    if pe in _POSITIONAL_LABELS:
        rows.append(Row((Block(f"{stack}.embed.positional", "positional", stack, _POSITIONAL_LABELS[pe], _POSITIONAL_SHAPES[pe]),), THIN))
    if config.layernorm_embedding:
        rows.append(Row((Block(f"{stack}.embed.norm", "norm", stack, "LayerNorm (embeddings)"),), THIN))
    return rows


def _sublayers(config: TransformerConfig, stack: str) -> list[str]:
    """A layer's sublayers in order: its attention kinds the model has, then ``ffn``."""
    return [k for k in stack_kinds(stack) if n_layers(config, k)] + ["ffn"]


def _sublayer_block(config: TransformerConfig, stack: str, layer: int, sub: str) -> Block:
    path = f"{stack}.layers.{layer}"
    if sub == "ffn":
        return Block(f"{path}.ffn", "ffn", stack, "Gated feed-forward (FFN)" if config.ffn == "gated" else "Feed-forward (FFN)",
                     "[tokens × d_model] → [tokens × d_ff] → [tokens × d_model], d_ff = {d_ff}", (layer,))
    attn = "cross_attn" if sub == "cross" else "self_attn"
    return Block(f"{path}.{attn}", "attention", stack, _ATTENTION_LABELS[sub], WEIGHTS, (layer,), sub)


def _layer_rows(config: TransformerConfig, stack: str, layer: int) -> list[Row]:
    """One layer block by block, each sublayer with its residual add and norm where the placement puts them."""
    path, rows = f"{stack}.layers.{layer}", []
    for j, sub in enumerate(_sublayers(config, stack), start=1):
        block = _sublayer_block(config, stack, layer, sub)
        main = Row((block,), in_layer=True)
        if sub == "decoder":  # the look-ahead mask goes into the masked self-attention's scores
            mask = Block(f"{path}.self_attn.mask", "mask", stack, "Mask", "M [queries × keys] = [{q} × {k}]", (layer,), "decoder", MASK_SPAN)
            main = Row((mask, block), in_layer=True)
        if config.norm_placement == "pre":
            rows += [Row((Block(f"{path}.norm{j}", "norm", stack, "{norm}", layers=(layer,)),), THIN, in_layer=True), main,
                     Row((Block(f"{path}.residual{j}", "add", stack, "Add (residual)", layers=(layer,)),), THIN, in_layer=True)]
        else:
            rows += [main, Row((Block(f"{path}.norm{j}", "add_norm", stack, "Add & {norm}", layers=(layer,)),), THIN, in_layer=True)]
    return rows


def _compact_row(config: TransformerConfig, stack: str, layers: tuple[int, ...]) -> Row:
    """Layers ``layers`` as one row of chips: each attention, the FFN and the norms."""
    name = f"{stack}.layers.{layers[0]}" if len(layers) == 1 else f"{stack}.layers.{layers[0]}-{layers[-1]}"
    chips = []
    for sub in _sublayers(config, stack):
        full = _sublayer_block(config, stack, layers[0], sub)
        label = "FFN" if sub == "ffn" else _CHIP_LABELS[sub]
        chips.append(Block(full.key.replace(f"{stack}.layers.{layers[0]}", name), full.kind, stack, label, full.shape, layers, full.site,
                           name=full.label))
    chips.append(Block(f"{name}.norms", "norm", stack, "{symbol}", TOKENS, layers, span=0.55, name="{norm}"))
    return Row(tuple(chips), COMPACT if len(layers) == 1 else TALL, layers)


def _output_rows(config: TransformerConfig, stack: str) -> list[Row]:
    rows = []
    if config.kind == "encoder-only":
        rows.append(Row((Block("generator.transform", "head", stack, "Masked-token head (dense, LayerNorm)"),)))
    rows += [Row((Block("generator", "linear", stack, "Linear", "W [d_model × vocabulary] = [{d_model} × {vocab}]"),)),
             Row((Block("generator.softmax", "softmax", stack, "Softmax", "p [vocabulary] = [{vocab}]"),))]
    return rows


def shape_values(diagram: Diagram, block: Block, src_len: int, tgt_len: int) -> dict[str, int]:
    """What ``block.shape`` is filled with: the model's sizes and, for the sentence, ``n`` (its
    stack's tokens), ``q`` (queries) and ``k`` (keys: the source's for cross-attention)."""
    n = src_len if block.stack == "encoder" else tgt_len
    return {**diagram.sizes, "n": n, "q": n, "k": src_len if block.site == "cross" else n}


# -- the current frame ------------------------------------------------------------------------------
@dataclass(frozen=True)
class MapFrame:
    """The map at the current frame: ``states`` (block key → one of :data:`STATES`), ``ablated``
    (the attention blocks with an ablated head), ``position`` (0-based target position of the
    current decoder step; ``None``: none), and the sentence's lengths."""

    diagram: Diagram
    states: Mapping[str, str]
    ablated: frozenset[str]
    position: int | None
    src_len: int
    tgt_len: int
    pieces: tuple[str, str] = ("", "")  # the piece fed at the step and the one it produced

    def lit(self) -> tuple[str, ...]:
        """The blocks the current step passes through, in map order."""
        return tuple(b.key for b in self.diagram.blocks() if self.states.get(b.key) == "active")


def map_frame(diagram: Diagram, *, position: int | None, src_len: int, tgt_len: int,
              ablated: frozenset[tuple[str, int, int]] = frozenset(), pieces: tuple[str, str] = ("", "")) -> MapFrame:
    """The path of the current step: with a decoder step (``position``), the decoder's blocks are
    active and the encoder's ran once for the sentence; an encoder-only model runs its encoder over
    the whole sentence. ``ablated``: heads ``(kind, layer, head)``; their layers' attention blocks are marked."""
    decoder = diagram.column("decoder")
    states: dict[str, str] = {}
    for column in diagram.columns:
        if decoder is not None and position is None:
            state = "idle"
        elif column.stack == "encoder" and decoder is not None:
            state = "once"
        else:
            state = "active" if (src_len if column.stack == "encoder" else tgt_len) else "idle"
        states.update((b.key, state) for r in column.rows for b in r.blocks)
    sites = {(kind, layer) for kind, layer, _ in ablated}
    marked = frozenset(b.key for b in diagram.blocks() if b.kind == "attention" and any((b.site, i) in sites for i in b.layers))
    return MapFrame(diagram, states, marked, position, src_len, tgt_len, pieces)


def figure_data(frame: MapFrame) -> FigureData:
    """One row per block: its layer (−1: none), its state's index in :data:`STATES` and whether it is ablated."""
    blocks = frame.diagram.blocks()
    return FigureData("model map", ("block",), {
        "layer": np.array([b.layer if b.layer is not None else -1 for b in blocks], dtype=np.int64),
        "state": np.array([STATES.index(frame.states.get(b.key, "idle")) for b in blocks], dtype=np.int64),
        "ablated": np.array([b.key in frame.ablated for b in blocks], dtype=np.int64),
    }, {"block": tuple(b.key for b in blocks)}, {"kind": np.array([b.kind for b in blocks])})


# -- where each block is drawn -------------------------------------------------------------------------
@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    def overlaps(self, other: Box) -> bool:
        return self.x < other.right and other.x < self.right and self.y < other.bottom and other.y < self.bottom


Point = tuple[float, float]


@dataclass(frozen=True)
class Placement:
    """Where the map is drawn, in px: ``blocks`` (key → box), ``labels`` (compact rows' layer
    labels: (layers, box)), ``headers`` (stack → its title's box), ``frames`` (stack → the first
    layer's frame, its tag in its top ``tag`` px), ``arrows`` (stack → polylines, each ending in
    an arrowhead: the flow, the residual skips; ``"memory"``: the encoder's output to each
    cross-attention) and the ``width``/``height`` the map needs (at least the size given)."""

    width: float
    height: float
    unit: float
    blocks: Mapping[str, Box]
    labels: tuple[tuple[tuple[int, ...], Box], ...]
    headers: Mapping[str, Box]
    frames: Mapping[str, Box]
    tag: float
    arrows: Mapping[str, tuple[tuple[Point, ...], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Metrics:
    side: float
    gap: float
    col_w: float
    top: float
    unit: float
    text_h: float
    label_w: float


def place(diagram: Diagram, width: float, height: float, *, text_h: float = 14.0, label_w: float = 60.0) -> Placement:
    """Place ``diagram`` in ``width`` × ``height`` px: columns side by side, rows top down, a big
    block's height between :data:`MIN_UNIT` and :data:`MAX_UNIT` (taller than ``height`` holds:
    the placement's ``height`` says how tall). ``text_h``: a line of text; ``label_w``: a compact
    row's layer label."""
    m = _metrics(diagram, width, height, text_h, label_w)
    boxes: dict[str, Box] = {}
    labels: list[tuple[tuple[int, ...], Box]] = []
    headers, frames, arrows, bottom = {}, {}, {}, 0.0
    for i, column in enumerate(diagram.columns):
        x = m.side + i * (m.col_w + m.gap)
        headers[column.stack] = Box(x, 4.0, m.col_w, 2 * text_h + 2)
        y, flow, frame = _place_rows(column, x, m, boxes, labels)
        if frame is not None:
            frames[column.stack] = frame
        arrows[column.stack] = tuple(flow) + _skips(column, diagram.placement, x + m.col_w, m, boxes)
        bottom = max(bottom, y)
    if diagram.column("encoder") is not None and diagram.column("decoder") is not None:
        arrows["memory"] = _memory(diagram, m, boxes)
        bottom = max([bottom, *(p[1] for line in arrows["memory"] for p in line)])  # no line: a decoder without cross-attention layers
    need_w = 2 * m.side + len(diagram.columns) * m.col_w + (len(diagram.columns) - 1) * m.gap
    return Placement(max(width, need_w), max(height, bottom + 10), m.unit, boxes, tuple(labels), headers, frames, text_h + 4, arrows)


def _metrics(diagram: Diagram, width: float, height: float, text_h: float, label_w: float) -> _Metrics:
    n = len(diagram.columns)
    gap = min(max(width * 0.1, 48.0), 110.0) if n > 1 else 0.0
    side = 20.0
    col_w = min(max((width - 2 * side - (n - 1) * gap) / n, MIN_COLUMN), MAX_COLUMN)
    side = max(side, (width - n * col_w - (n - 1) * gap) / 2)  # the columns centred
    top = 2 * text_h + 14
    fixed = text_h + 4 + 8 + 16  # the frame's tag and its bottom, the bottom margin
    units = max(sum(r.height for r in c.rows) + sum(_gap(a, b) for a, b in zip(c.rows, c.rows[1:])) for c in diagram.columns)
    unit = min(max((height - top - fixed) / units, MIN_UNIT), MAX_UNIT)
    return _Metrics(side, gap, col_w, top, unit, text_h, min(label_w, col_w * 0.3))


def _place_rows(column: Column, x: float, m: _Metrics, boxes: dict[str, Box], labels: list) -> tuple[float, list, Box | None]:
    """Place a column's rows from the top; (its bottom, its flow arrows, the first layer's frame)."""
    y, prev, flow = m.top, None, []
    frame_top = frame_bottom = None
    for row, nxt in zip(column.rows, column.rows[1:] + (None,)):
        if row.in_layer and frame_top is None:
            frame_top, y = y, y + m.text_h + 4
        if not row.in_layer and frame_top is not None and frame_bottom is None:
            frame_bottom = prev + 5
            y = frame_bottom + GAP * m.unit
        h = row.height * m.unit
        _place_row(row, x, y, h, m, boxes, labels)
        if prev is not None:
            flow.append(((x + m.col_w / 2, prev), (x + m.col_w / 2, y)))
        mask = next((b for b in row.blocks if b.kind == "mask"), None)
        if mask is not None:
            box = boxes[mask.key]
            flow.append(((box.right, box.cy), (boxes[row.blocks[1].key].x, box.cy)))
        prev, y = y + h, y + h + _gap(row, nxt) * m.unit
    if frame_top is not None and frame_bottom is None:
        frame_bottom = prev + 5
    frame = None if frame_top is None else Box(x - 8, frame_top, m.col_w + 24, frame_bottom - frame_top)
    return prev or y, flow, frame


def _gap(row: Row, below: Row | None) -> float:
    """The gap under ``row``, in units: narrower between two compact rows."""
    return COMPACT_GAP if below is not None and row.layers and below.layers else GAP


def _place_row(row: Row, x: float, y: float, h: float, m: _Metrics, boxes: dict[str, Box], labels: list) -> None:
    """A row's blocks side by side (a compact row after its layer label), 6 px apart."""
    if row.layers:
        labels.append((row.layers, Box(x, y, m.label_w, h)))
        x, w = x + m.label_w + 4, m.col_w - m.label_w - 4
    else:
        w = m.col_w
    spans = sum(b.span for b in row.blocks)
    free = w - 6 * (len(row.blocks) - 1)
    for b in row.blocks:
        bw = free * b.span / spans
        boxes[b.key] = Box(x, y, bw, h)
        x += bw + 6


def _skips(column: Column, placement: str, right: float, m: _Metrics, boxes: dict[str, Box]) -> tuple:
    """The residual connections of the first layer: from above each sublayer (its norm, pre-norm)
    round the right of the column into its add."""
    rows = [r for r in column.rows if r.in_layer]
    out = []
    for i, row in enumerate(rows):
        add = next((b for b in row.blocks if b.kind in ("add", "add_norm")), None)
        if add is None:
            continue
        start = rows[i - (1 if placement == "post" else 2)]  # the sublayer (post-norm) or the norm before it (pre-norm)
        y0 = boxes[start.blocks[-1].key].y - GAP * m.unit / 2
        box = boxes[add.key]
        out.append(((right - m.col_w / 2, y0), (right + 9, y0), (right + 9, box.cy), (box.right, box.cy)))
    return tuple(out)


def _memory(diagram: Diagram, m: _Metrics, boxes: dict[str, Box]) -> tuple:
    """The encoder's output to every cross-attention of the decoder: down from the encoder's last
    block, along the gap between the columns, into each row holding a cross-attention."""
    enc, dec = diagram.column("encoder"), diagram.column("decoder")
    centre, bottom = m.side + m.col_w / 2, boxes[enc.rows[-1].blocks[-1].key].bottom
    bus = m.side + m.col_w + m.gap / 2
    below = bottom + GAP * m.unit
    out = []
    for row in dec.rows:
        cross = next((b for b in row.blocks if b.site == "cross"), None)
        if cross is None:
            continue
        target = boxes[row.blocks[0].key]
        end_x = target.x - (m.label_w + 8 if row.layers else 0)
        y = boxes[cross.key].cy
        out.append(((centre, bottom), (centre, below), (bus, below), (bus, y), (end_x, y)))
    return tuple(out)
