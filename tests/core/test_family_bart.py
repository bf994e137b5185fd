"""BART and mBART folders from Hugging Face: tiny random models saved by ``transformers`` (no
network) open as our ``Transformer`` (learned positions, ``layernorm_embedding``, GELU; post-norm
BART, pre-norm mBART) with the same logits, attention weights and greedy/beam outputs; the
byte-level BPE tokenizer gives ``BartTokenizer``'s ids; hostile folders give one line."""

from __future__ import annotations

import warnings

import family_checks as fc
import pytest
import torch
from safetensors.torch import load_file

from attnviz.core.data.bpe_tokenizer import BPETokenizer
from attnviz.core.model.hf_import import read_hf_folder

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import SOURCES, build_bart  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # tiny transformers models built and compared: make test runs them, the fast loop does not

KINDS = {"bart": transformers.BartForConditionalGeneration, "mbart": transformers.MBartForConditionalGeneration}


@pytest.fixture(scope="module", params=sorted(KINDS))
def family(request, tmp_path_factory):
    """(kind, folder, ours, theirs) of a tiny BART or mBART."""
    folder = build_bart(tmp_path_factory.mktemp("hf") / f"tiny-{request.param}", mbart=request.param == "mbart")
    return request.param, folder, read_hf_folder(folder), fc.load_theirs(KINDS[request.param], folder)


def test_config_records_the_choices(family):
    kind, _, ours, _ = family
    cfg = ours.model.config
    assert (cfg.positional, cfg.layernorm_embedding, cfg.activation, cfg.bias) == ("learned", True, "gelu", True)
    assert (cfg.norm_placement, cfg.final_norm, cfg.scale_embedding) == (("pre", True, True) if kind == "mbart" else ("post", False, False))
    assert cfg.bos_id == cfg.eos_id == 2 and cfg.pad_id == 1 and cfg.unk_id == 3
    assert ours.meta["family"] == "BART"


def test_learned_positions_drop_barts_offset_of_two(family):
    _, folder, ours, _ = family
    stored = load_file(folder / "model.safetensors")["model.encoder.embed_positions.weight"]  # [max_len + 2, d]
    assert torch.equal(ours.model.encoder.embed.pe.detach(), stored[2:])


# logits and every attention weight, greedy and beam decoding, cached steps and trace names: family_checks.py's
test_logits_and_every_attention_equal_transformers, test_greedy_and_beam_equal_generate, test_cached_steps_and_trace_names = (
    fc.encoder_decoder_parity_tests(SOURCES))


def test_tokenizer_equals_bart_tokenizer(family):
    _, folder, ours, _ = family
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.BartTokenizer.from_pretrained(folder)  # from its vocab.json and merges.txt
    for text in SOURCES + ["the zebra 猫 sat!", "  two  spaces", "it's 42"]:
        assert ours.src_tokenizer.encode(text) == theirs(text)["input_ids"], text
        assert ours.tgt_tokenizer.encode(text) == theirs(text)["input_ids"][:-1]  # no EOS: the model adds it
        assert ours.tgt_tokenizer.decode(ours.tgt_tokenizer.encode(text)) == text
    assert ours.src_tokenizer.unknown_characters("the zebra 猫") == []  # every byte has a piece
    assert isinstance(ours.src_tokenizer, BPETokenizer)


def test_import_hf_writes_a_bundle_of_the_same_model(family, tmp_path):
    _, folder, ours, _ = family
    fc.check_bundle_round_trip(ours, folder, tmp_path / "bundle", SOURCES[0])


# -- hostile folders ------------------------------------------------------------------------------
FILES = ("config.json", "vocab.json", "merges.txt")  # beside the weights


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(family, tmp_path, capsys):
    _, folder, _, _ = family
    fc.check_pickle_runs_nothing(folder, tmp_path, capsys, FILES, "model.shared.weight")


def test_truncated_weights_wrong_shapes_and_foreign_configs_are_refused(family, tmp_path, capsys):
    _, folder, _, _ = family
    fc.check_hostile_weights_and_configs(
        folder, tmp_path, capsys, FILES,
        weights=[({"model.encoder.embed_positions.weight": torch.zeros(10, 16)}, "has shape (10, 16), config.json implies (66, 16)")],
        configs=[({"encoder_ffn_dim": 48, "decoder_ffn_dim": 48}, "has shape"),
                 ({"architectures": ["XLNetLMHeadModel"]},
                  "architecture 'XLNetLMHeadModel' is not supported (attnviz opens MarianMTModel, BartForConditionalGeneration")],
    )
