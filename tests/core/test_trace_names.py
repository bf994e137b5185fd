"""The trace-name contract: the model produces exactly the documented names, with the documented shapes."""

import re
import sys

import pytest
import torch

from attnviz.core import Recorder, Transformer, TransformerConfig, schema_table, trace_names, trace_schema
from attnviz.core.model.modules import Generator, InputEmbedding, LayerNorm, MaskedBatchNorm, MultiHeadAttention
from attnviz.core.model.sites import attention_sites
from attnviz.core.model.trace import ATTENTION_FIELDS

# The golden list for a 1+1 layer post-LN model (any change here is a change of the public contract).
GOLDEN_1x1_POST = """
masks.src_padding encoder.embed.tokens encoder.embed.positional encoder.embed.sum
encoder.layers.0.self_attn.input encoder.layers.0.self_attn.q encoder.layers.0.self_attn.k encoder.layers.0.self_attn.v
encoder.layers.0.self_attn.scores encoder.layers.0.self_attn.scaled_scores encoder.layers.0.self_attn.mask
encoder.layers.0.self_attn.masked_scores encoder.layers.0.self_attn.weights encoder.layers.0.self_attn.z
encoder.layers.0.self_attn.concat encoder.layers.0.self_attn.output encoder.layers.0.residual1
encoder.layers.0.norm1.input encoder.layers.0.norm1.mean encoder.layers.0.norm1.var encoder.layers.0.norm1.output
encoder.layers.0.ffn.hidden encoder.layers.0.ffn.output encoder.layers.0.residual2
encoder.layers.0.norm2.input encoder.layers.0.norm2.mean encoder.layers.0.norm2.var encoder.layers.0.norm2.output
encoder.output
masks.tgt_padding masks.look_ahead decoder.embed.tokens decoder.embed.positional decoder.embed.sum
decoder.layers.0.self_attn.input decoder.layers.0.self_attn.q decoder.layers.0.self_attn.k decoder.layers.0.self_attn.v
decoder.layers.0.self_attn.scores decoder.layers.0.self_attn.scaled_scores decoder.layers.0.self_attn.mask
decoder.layers.0.self_attn.masked_scores decoder.layers.0.self_attn.weights decoder.layers.0.self_attn.z
decoder.layers.0.self_attn.concat decoder.layers.0.self_attn.output decoder.layers.0.residual1
decoder.layers.0.norm1.input decoder.layers.0.norm1.mean decoder.layers.0.norm1.var decoder.layers.0.norm1.output
decoder.layers.0.cross_attn.input decoder.layers.0.cross_attn.memory decoder.layers.0.cross_attn.q
decoder.layers.0.cross_attn.k decoder.layers.0.cross_attn.v decoder.layers.0.cross_attn.scores
decoder.layers.0.cross_attn.scaled_scores decoder.layers.0.cross_attn.mask decoder.layers.0.cross_attn.masked_scores
decoder.layers.0.cross_attn.weights decoder.layers.0.cross_attn.z decoder.layers.0.cross_attn.concat
decoder.layers.0.cross_attn.output decoder.layers.0.residual2
decoder.layers.0.norm2.input decoder.layers.0.norm2.mean decoder.layers.0.norm2.var decoder.layers.0.norm2.output
decoder.layers.0.ffn.hidden decoder.layers.0.ffn.output decoder.layers.0.residual3
decoder.layers.0.norm3.input decoder.layers.0.norm3.mean decoder.layers.0.norm3.var decoder.layers.0.norm3.output
decoder.output generator.logits generator.probs
""".split()

VARIANTS = [
    dict(norm="layer", norm_placement="post"),
    dict(norm="layer", norm_placement="pre"),
    dict(norm="batch", norm_placement="post"),
    dict(norm="batch", norm_placement="pre", final_norm=True),
    dict(norm="layer", norm_placement="post", final_norm=True),
]
LS, LT = 6, 5


def cfg(**kw):
    return TransformerConfig(src_vocab_size=30, tgt_vocab_size=20, d_model=16, n_heads=2, n_encoder_layers=2,
                             n_decoder_layers=2, d_ff=24, max_len=32, **kw)


def test_golden_names_1x1_post():
    c = TransformerConfig(src_vocab_size=30, tgt_vocab_size=20, d_model=16, n_heads=2, n_encoder_layers=1,
                          n_decoder_layers=1, d_ff=24, max_len=32)
    assert trace_names(c) == GOLDEN_1x1_POST


def expected_shape(spec, c, query, key, src, tgt):
    dims = {"src": src, "tgt": tgt, "head": c.n_heads, "d_k": c.d_k, "d_model": c.d_model, "d_ff": c.d_ff,
            "vocab": c.tgt_vocab_size, "query": query, "key": key, "pos": query}
    return tuple(dims[d.strip()] for d in spec.strip("[]").split(","))


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda k: "-".join(str(v) for v in k.values()))
def test_model_produces_exactly_the_documented_names_and_shapes(kw):
    c = cfg(**kw)
    torch.manual_seed(0)
    model = Transformer(c).eval()
    with torch.no_grad():
        _, tr = model.run_with_trace(torch.randint(4, 30, (2, LS)), torch.randint(4, 20, (2, LT)))
    assert list(tr) == trace_names(c)
    for name, spec, _ in trace_schema(c):
        if name.startswith(("encoder", "masks.src")):
            q = k = LS
        elif ".cross_attn." in name:
            q, k = LT, LS
        else:
            q = k = LT
        if name == "masks.look_ahead":
            k = LT
        assert tr[name].shape == expected_shape(spec, c, q, k, LS, LT), name
        assert tr[name].dtype.name == "float32"


def test_decoder_step_trace_names_are_the_decoder_part():
    c = cfg()
    model = Transformer(c).eval()
    with torch.no_grad():
        cache = model.start_decoding(model.encode(torch.randint(4, 30, (1, LS))))
        rec = Recorder()
        model.decode_step(torch.tensor([c.bos_id]), cache, rec)
    assert list(rec.trace()) == trace_names(c, encoder=False)


def test_name_filter_and_table():
    c = cfg()
    model = Transformer(c).eval()
    with torch.no_grad():
        _, tr = model.run_with_trace(torch.randint(4, 30, (1, LS)), torch.randint(4, 20, (1, LT)), names=["decoder.layers.1.cross_attn.*"])
    assert set(tr) == {n for n in trace_names(c) if n.startswith("decoder.layers.1.cross_attn.")}
    table = schema_table(c)
    assert "decoder.layers.1.cross_attn.weights" in table and re.search(r"softmax", table)


class _WhoRecords(Recorder):
    """A recorder that notes, for every name, the module whose code recorded it."""

    def __init__(self):
        super().__init__()
        self.by: dict[str, torch.nn.Module] = {}

    def _note(self, name: str) -> None:
        frame = sys._getframe(2)
        while not isinstance(frame.f_locals.get("self"), torch.nn.Module):
            frame = frame.f_back
        self.by[name] = frame.f_locals["self"]

    def put(self, name, tensor, batched=None):
        self._note(name)
        super().put(name, tensor, batched)

    def put_lazy(self, name, compute, batched=None):
        self._note(name)
        super().put_lazy(name, compute, batched)


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda k: "-".join(str(v) for v in k.values()))
def test_the_module_at_a_trace_prefix_records_its_names(kw):
    """Attribute paths are trace names: ``name``'s recorder sits at its prefix (or at ``name`` itself: ``residual{j}``)."""
    c = cfg(**kw)
    model = Transformer(c).eval()
    rec = _WhoRecords()
    with torch.no_grad():
        model(torch.randint(4, 30, (2, LS)), torch.randint(4, 20, (2, LT)), rec)
    assert list(rec.by) == trace_names(c)
    paths = {id(m): path for path, m in model.named_modules()}
    for name, module in rec.by.items():
        assert paths[id(module)] in (name.rsplit(".", 1)[0], name), name
    assert isinstance(model.get_submodule("decoder.layers.1.cross_attn"), MultiHeadAttention)
    assert isinstance(model.get_submodule("encoder.layers.0.norm1"), LayerNorm if c.norm == "layer" else MaskedBatchNorm)
    assert isinstance(model.encoder.embed, InputEmbedding) and isinstance(model.decoder.embed, InputEmbedding)
    assert isinstance(model.generator, Generator)
    assert (model.encoder.final_norm is not None) == bool(c.final_norm)


@pytest.mark.parametrize("kw", VARIANTS[:2], ids=lambda k: "-".join(str(v) for v in k.values()))
def test_every_attention_site_is_a_module_recording_exactly_its_fields(kw):
    c = cfg(**kw)
    model = Transformer(c).eval()
    with torch.no_grad():
        _, tr = model.run_with_trace(torch.randint(4, 30, (1, LS)), torch.randint(4, 20, (1, LT)))
    sites = attention_sites(c)
    assert len(sites) == c.n_encoder_layers + 2 * c.n_decoder_layers
    for site in sites:
        assert isinstance(site.module(model), MultiHeadAttention), site
        assert model.get_submodule(site.path) is site.module(model)
        fields = [f for f, _, _ in ATTENTION_FIELDS if f != "memory" or site.kind == "cross"]
        assert [n for n in tr if n.startswith(site.path + ".")] == [site.name(f) for f in fields]
