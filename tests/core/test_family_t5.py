"""T5 (v1.0: ReLU, tied output read x d_model^-0.5; v1.1: gated GELU) and mT5 (heads narrower than
d_model / h) folders from Hugging Face: tiny random models saved by ``transformers`` (no network)
open as our ``Transformer`` (relative position bias B, RMSNorm, no ÷sqrt(d_k), no biases) with the
same logits, attention weights and greedy/beam outputs; ``spiece.model`` gives ``T5Tokenizer``'s
ids; a v1.1 checkpoint with its own ``lm_head`` (as Google's are saved) reads it unscaled; hostile
folders give one line."""

from __future__ import annotations

import json

import family_checks as fc
import numpy as np
import pytest
import sentencepiece as spm
import torch
from safetensors.torch import load_file, save_file

from attnviz.core.model.hf_import import read_hf_folder
from attnviz.core.model.interventions import InterventionError, NoPositional, NoScaling

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import SOURCES, build_t5  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # tiny transformers models built and compared: make test runs them, the fast loop does not

KINDS = {
    "t5-v1.0": (dict(), transformers.T5ForConditionalGeneration),
    "t5-v1.1": (dict(v1_1=True, seed=1), transformers.T5ForConditionalGeneration),  # seed 1: its outputs end at different lengths
    "mt5": (dict(v1_1=True, mt5=True), transformers.MT5ForConditionalGeneration),
}


@pytest.fixture(scope="module", params=sorted(KINDS))
def family(request, tmp_path_factory):
    """(kind, folder, ours, theirs) of a tiny T5 or mT5."""
    kw, cls = KINDS[request.param]
    folder = build_t5(tmp_path_factory.mktemp("hf") / f"tiny-{request.param}", **kw)
    return request.param, folder, read_hf_folder(folder), fc.load_theirs(cls, folder)


def test_config_records_the_choices(family):
    kind, _, ours, _ = family
    cfg = ours.model.config
    assert (cfg.positional, cfg.norm, cfg.norm_placement, cfg.final_norm) == ("relative", "rms", "pre", True)
    assert (cfg.scale_scores, cfg.bias, cfg.scale_embedding, cfg.relative_buckets, cfg.relative_max_distance) == (False, False, False, 8, 20)
    assert (cfg.ffn, cfg.activation) == (("plain", "relu") if kind == "t5-v1.0" else ("gated", "gelu_tanh"))
    assert cfg.scale_output == (kind == "t5-v1.0") and cfg.d_k == (3 if kind == "mt5" else 4)
    assert cfg.bos_id == cfg.pad_id == 0 and cfg.eos_id == 1 and ours.meta["family"] == "T5"


# logits and every attention weight, greedy and beam decoding, cached steps and trace names: family_checks.py's
test_logits_and_every_attention_equal_transformers, test_greedy_and_beam_equal_generate, test_cached_steps_and_trace_names = (
    fc.encoder_decoder_parity_tests(SOURCES))


def test_the_position_bias_is_traced_and_shared_by_the_stack(family):
    """masked_scores = scaled_scores + B + M, with B from the stack's one table: T5's bucketed distances."""
    _, _, ours, _ = family
    model, cfg = ours.model, ours.model.config
    src = torch.tensor([ours.src_tokenizer.encode(SOURCES[1])])
    with torch.no_grad():
        _, trace = model.run_with_trace(src, torch.tensor([[cfg.bos_id, 4, 9]]))
    for stack in ("encoder", "decoder"):
        b = [trace[f"{stack}.layers.{i}.self_attn.position_bias"] for i in range(2)]  # [head, query, key]
        assert np.array_equal(b[0], b[1])
        a = f"{stack}.layers.1.self_attn"
        assert np.array_equal(trace[f"{a}.masked_scores"], trace[f"{a}.scaled_scores"] + b[1] + trace[f"{a}.mask"][None])
    assert np.array_equal(trace["encoder.layers.0.self_attn.scaled_scores"], trace["encoder.layers.0.self_attn.scores"])  # no ÷sqrt(d_k)
    table = model.encoder.position_bias.table.weight.detach().numpy()  # [bucket, head]
    b = trace["encoder.layers.0.self_attn.position_bias"]
    assert np.array_equal(b[:, 3, 3], table[0]) and np.array_equal(b[:, 3, 4], table[4 + 1])  # distance 0; +1 (keys after: buckets from 8 / 2)
    assert "decoder.layers.0.cross_attn.position_bias" not in trace
    with pytest.raises(InterventionError, match="bias B"):
        model.run_with_trace(src, torch.tensor([[cfg.bos_id]]), interventions=[NoPositional()])
    with pytest.raises(InterventionError, match="does not divide"):
        model.run_with_trace(src, torch.tensor([[cfg.bos_id]]), interventions=[NoScaling.for_config(cfg)])


def test_tokenizer_gives_the_sentencepiece_ids_then_eos(family):
    """T5's ids are spiece.model's own, then EOS (what ``T5Tokenizer`` writes; transformers 5 reads
    spiece.model only with protobuf installed, so the reference is sentencepiece itself)."""
    _, folder, ours, _ = family
    sp = spm.SentencePieceProcessor(model_file=str(folder / "spiece.model"))
    for text in SOURCES + ["the zebra sat"]:
        assert ours.src_tokenizer.encode(text) == sp.encode(text) + [1], text
        assert ours.tgt_tokenizer.encode(text) == sp.encode(text)
    for text in SOURCES:
        assert ours.tgt_tokenizer.decode(ours.tgt_tokenizer.encode(text)) == text
    vocab = ours.src_tokenizer.vocab_size
    assert ours.src_tokenizer.piece(vocab - 1) == "<extra_id_0>" and ours.src_tokenizer.piece(vocab - 8) == "<extra_id_7>"


def test_import_hf_writes_a_bundle_of_the_same_model(family, tmp_path):
    _, folder, ours, _ = family
    fc.check_bundle_round_trip(ours, folder, tmp_path / "bundle", SOURCES[0])


def test_a_v1_1_checkpoint_with_its_own_lm_head_reads_it_unscaled(tmp_path):
    """Google's v1.1 and mT5 checkpoints say ``tie_word_embeddings: false`` and hold ``lm_head.weight``."""
    folder = build_t5(tmp_path / "untied", v1_1=True)
    state = load_file(folder / "model.safetensors")
    head = torch.randn_like(state["shared.weight"])
    save_file({**state, "lm_head.weight": head}, folder / "model.safetensors")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "scale_decoder_outputs"} | {"tie_word_embeddings": False}))
    ours = read_hf_folder(folder)
    assert not ours.model.config.tie_embeddings and not ours.model.config.scale_output
    theirs = fc.load_theirs(transformers.T5ForConditionalGeneration, build_t5(tmp_path / "tied", v1_1=True))
    src = torch.tensor([ours.src_tokenizer.encode(SOURCES[0])])
    tgt = torch.tensor([[0, 5, 9]])
    with torch.no_grad():
        out = theirs(input_ids=src, decoder_input_ids=tgt, output_hidden_states=True)
        expected = out.decoder_hidden_states[-1] @ head.T  # [1, Lt, V]: the same weights, the checkpoint's own output layer
        assert torch.allclose(ours.model(src, tgt), expected, atol=1e-5, rtol=0)


# -- hostile folders ------------------------------------------------------------------------------
FILES = ("config.json", "spiece.model")  # beside the weights


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(family, tmp_path, capsys):
    _, folder, _, _ = family
    fc.check_pickle_runs_nothing(folder, tmp_path, capsys, FILES, "shared.weight")


def test_truncated_weights_wrong_shapes_and_foreign_configs_are_refused(family, tmp_path, capsys):
    _, folder, _, _ = family
    bias = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    fc.check_hostile_weights_and_configs(
        folder, tmp_path, capsys, FILES,
        weights=[({bias: torch.zeros(9, 4)}, "tensor 'encoder.position_bias.table.weight' has shape (9, 4), config.json implies (8, 4)")],
        configs=[({"feed_forward_proj": "gated-tanh"}, "activation 'tanh' is not supported"),
                 ({"feed_forward_proj": "double-relu"}, "feed_forward_proj 'double-relu' is not supported")],
    )
