"""The model map's blocks come from the config: a block per embedding, positions, sublayer, add and
norm in the order the norm placement gives, every attention layer of every kind once, the output
layer last; a model of one stack draws that stack alone; placed, no two blocks overlap."""

from __future__ import annotations

import json
import warnings
from collections import Counter

import pytest

from attnviz.core.analysis.model_diagram import (
    BLOCK_KINDS,
    MAX_COMPACT_ROWS,
    STATES,
    Diagram,
    figure_data,
    map_frame,
    model_diagram,
    place,
    shape_values,
)
from attnviz.core.model.config import NORM_NAMES, TransformerConfig
from attnviz.core.model.sites import attention_sites
from attnviz.paths import default_model, models_dir


def bundled_config(name: str) -> TransformerConfig:
    return TransformerConfig.from_dict(json.loads((models_dir() / name / "config.json").read_text(encoding="utf-8")))


def kinds_of_layer(diagram: Diagram, stack: str, layer: int) -> list[str]:
    """The kinds of the blocks drawn one by one for ``layer`` (the first layer's rows)."""
    column = diagram.column(stack)
    return [b.kind for r in column.rows if r.in_layer for b in r.blocks if b.layers == (layer,)]


def attention_layers(diagram: Diagram) -> list[tuple[str, int]]:
    """(kind, layer) of every attention layer the map stands for, one entry per layer a block stands for."""
    return sorted((b.site, i) for b in diagram.blocks() if b.kind == "attention" for i in b.layers)


def test_default_model_has_every_block_its_config_gives():
    cfg = TransformerConfig.from_dict(json.loads((default_model() / "config.json").read_text(encoding="utf-8")))
    d = model_diagram(cfg)
    assert [c.stack for c in d.columns] == ["encoder", "decoder"]
    assert [c.n_layers for c in d.columns] == [cfg.n_encoder_layers, cfg.n_decoder_layers]
    assert attention_layers(d) == sorted((s.kind, s.layer) for s in attention_sites(cfg))
    assert {b.kind for b in d.blocks()} <= set(BLOCK_KINDS)
    assert len({b.key for b in d.blocks()}) == len(d.blocks())
    assert cfg.norm_placement == "pre"  # the norm before each sublayer, the add after it
    assert kinds_of_layer(d, "encoder", 0) == ["norm", "attention", "add", "norm", "ffn", "add"]
    assert kinds_of_layer(d, "decoder", 0) == ["norm", "mask", "attention", "add", "norm", "attention", "add", "norm", "ffn", "add"]
    assert [b.site for b in d.blocks() if b.kind == "attention" and b.layers == (0,) and b.stack == "decoder"] == ["decoder", "cross"]
    counts = Counter(b.kind for b in d.blocks())
    assert counts["embedding"] == 2 and counts["positional"] == 2 and counts["mask"] == 1
    assert counts["ffn"] == cfg.n_encoder_layers + cfg.n_decoder_layers  # a block in each first layer, a chip in each other layer
    finals = [b for b in d.blocks() if b.key.endswith("final_norm")]
    assert len(finals) == 2 * cfg.final_norm
    assert [b.kind for b in d.column("decoder").rows[-1].blocks + d.column("decoder").rows[-2].blocks] == ["softmax", "linear"]
    assert [len(r.layers) for c in d.columns for r in c.rows if r.layers] == [1] * (cfg.n_encoder_layers - 1 + cfg.n_decoder_layers - 1)


def test_post_norm_draws_add_and_norm_after_each_sublayer():
    cfg = bundled_config("zh-en-small-postnorm")
    d = model_diagram(cfg)
    assert (cfg.norm_placement, cfg.final_norm) == ("post", False)
    assert kinds_of_layer(d, "encoder", 0) == ["attention", "add_norm", "ffn", "add_norm"]
    assert kinds_of_layer(d, "decoder", 0) == ["mask", "attention", "add_norm", "attention", "add_norm", "ffn", "add_norm"]
    assert not any(b.key.endswith("final_norm") for b in d.blocks()) and not any(b.kind == "add" for b in d.blocks())


def test_batchnorm_model_names_its_norm():
    cfg = bundled_config("zh-en-small-batchnorm")
    d = model_diagram(cfg)
    assert (d.norm, d.norm_name, d.norm_symbol) == ("batch", NORM_NAMES["batch"], "BN")
    first_layers, compact_rows, finals = 2 + 3, (cfg.n_encoder_layers - 1) + (cfg.n_decoder_layers - 1), 2  # a norm per sublayer; a chip per row
    assert sum(b.kind == "norm" for b in d.blocks()) == first_layers + compact_rows + finals


@pytest.mark.parametrize("n", [MAX_COMPACT_ROWS + 1, 12])
def test_a_large_stack_draws_its_first_layer_whole_and_the_rest_compact(n):
    cfg = TransformerConfig(n_encoder_layers=n, n_decoder_layers=n, d_model=32, n_heads=4, d_ff=64, src_vocab_size=50, tgt_vocab_size=50)
    d = model_diagram(cfg)
    compact = [r.layers for r in d.column("encoder").rows if r.layers]
    assert compact == ([tuple(range(1, n))] if n - 1 > MAX_COMPACT_ROWS else [(i,) for i in range(1, n)])
    assert attention_layers(d) == sorted((s.kind, s.layer) for s in attention_sites(cfg))


def test_shapes_are_filled_from_the_config_and_the_sentence():
    cfg = bundled_config("zh-en")
    d = model_diagram(cfg)
    cross = d.block("decoder.layers.0.cross_attn")
    values = shape_values(d, cross, src_len=7, tgt_len=3)
    assert (values["heads"], values["q"], values["k"], values["d_k"]) == (cfg.n_heads, 3, 7, cfg.d_model // cfg.n_heads)
    assert cross.shape.format(**values) == f"[heads × queries × keys] = [{cfg.n_heads} × 3 × 7], d_k = {cfg.d_k}"
    assert shape_values(d, d.block("encoder.layers.0.self_attn"), 7, 3)["k"] == 7
    assert shape_values(d, d.block("generator"), 7, 3)["vocab"] == cfg.tgt_vocab_size


def test_the_current_step_lights_the_decoder_and_marks_ablated_layers():
    cfg = bundled_config("zh-en")
    d = model_diagram(cfg)
    frame = map_frame(d, position=2, src_len=6, tgt_len=3, ablated=frozenset({("cross", 0, 1), ("encoder", 2, 0)}))
    decoder = [b.key for r in d.column("decoder").rows for b in r.blocks]
    assert frame.lit() == tuple(decoder)
    assert {frame.states[b.key] for r in d.column("encoder").rows for b in r.blocks} == {"once"}
    assert frame.ablated == {"decoder.layers.0.cross_attn", "encoder.layers.2.self_attn"}
    assert set(map_frame(d, position=None, src_len=6, tgt_len=0).states.values()) == {"idle"}
    data = figure_data(frame)
    assert data.shape == (len(d.blocks()),) and int(data.values["ablated"].sum()) == 2
    assert int((data.values["state"] == STATES.index("active")).sum()) == len(decoder)


@pytest.mark.parametrize("name", ["zh-en", "zh-en-small-postnorm"])
@pytest.mark.parametrize("size", [(1024, 640), (1366, 700), (520, 600), (300, 200)])
def test_placed_blocks_never_overlap_and_fit_the_size_it_says(name, size):
    d = model_diagram(bundled_config(name))
    p = place(d, *size)
    boxes = list(p.blocks.values()) + [box for _, box in p.labels] + list(p.headers.values())
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
    assert all(0 <= b.x and b.right <= p.width and 0 <= b.y and b.bottom <= p.height for b in boxes)
    assert p.width >= size[0] and p.height >= size[1]
    assert len(p.arrows["memory"]) == d.column("decoder").n_layers  # the encoder's output into every cross-attention


# -- the tiny families -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """name → the config of a tiny random Hugging Face model (``tests/tiny_families.py``)."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    from tiny_families import build_bert, build_gpt2, build_t5

    from attnviz.core.model.hf_import import read_hf_folder

    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, build in (("gpt2", build_gpt2), ("bert", build_bert), ("t5", build_t5)):
            out[name] = read_hf_folder(build(tmp_path_factory.mktemp(name) / name)).model.config
    return out


def test_gpt2_has_no_encoder_and_no_cross_attention(families):
    cfg = families["gpt2"]
    d = model_diagram(cfg)
    assert [c.stack for c in d.columns] == ["decoder"]
    assert not [b for b in d.blocks() if b.stack == "encoder" or b.site in ("cross", "encoder")]
    assert attention_layers(d) == [("decoder", i) for i in range(cfg.n_decoder_layers)]
    assert kinds_of_layer(d, "decoder", 0) == ["norm", "mask", "attention", "add", "norm", "ffn", "add"]
    assert [b.kind for r in d.columns[0].rows[-2:] for b in r.blocks] == ["linear", "softmax"]
    assert "memory" not in place(d, 1024, 640).arrows


def test_bert_has_no_decoder_and_ends_with_its_masked_token_head(families):
    cfg = families["bert"]
    d = model_diagram(cfg)
    assert [c.stack for c in d.columns] == ["encoder"]
    assert not [b for b in d.blocks() if b.stack == "decoder" or b.kind == "mask" or b.site in ("cross", "decoder")]
    assert [b.kind for r in d.columns[0].rows[-3:] for b in r.blocks] == ["head", "linear", "softmax"]
    assert [b.key for b in d.blocks() if b.kind == "norm" and b.layer is None] == ["encoder.embed.norm"]  # LayerNorm on the embeddings, no final norm
    assert shape_values(d, d.block("generator"), 5, 0)["vocab"] == cfg.src_vocab_size
    frame = map_frame(d, position=None, src_len=5, tgt_len=0)
    assert frame.lit() == tuple(b.key for b in d.blocks())  # the whole sentence runs through the encoder


def test_t5_has_a_relative_position_bias_and_rms_norms(families):
    cfg = families["t5"]
    d = model_diagram(cfg)
    assert (cfg.positional, d.norm, d.norm_symbol) == ("relative", "rms", "RMS")
    positional = [b for b in d.blocks() if b.kind == "positional"]
    assert [b.stack for b in positional] == ["encoder", "decoder"]
    assert all(shape_values(d, b, 5, 2)["buckets"] == cfg.relative_buckets for b in positional)
    assert attention_layers(d) == sorted((s.kind, s.layer) for s in attention_sites(cfg))
