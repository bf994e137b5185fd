"""BERT folders from Hugging Face: a tiny random ``BertForMaskedLM`` saved by ``transformers`` (no
network) opens as an encoder-only ``Transformer`` (no decoder; token type 0 folded into the
positions; the masked-token head as its output layer) whose ``predict_masked`` gives the same
logits and attention weights; the WordPiece tokenizer gives ``BertTokenizer``'s ids; decoding is
refused in one line; hostile folders give one line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from family_checks import check_bundle_round_trip, check_hostile_weights_and_configs, check_pickle_runs_nothing, load_theirs, padded, refused_import
from safetensors.torch import load_file

from attnviz.core.data.wordpiece_tokenizer import WordPieceTokenizer
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import DecodingError
from attnviz.core.model.hf_import import read_hf_folder
from attnviz.core.model.sites import attention_sites
from attnviz.core.model.trace import trace_names

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import build_bert  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # tiny transformers models built and compared: make test runs them, the fast loop does not

TEXTS = ["The cats [MASK] on the mat!", "a dog runs in the park", "Sat, ran: the DOGS' mat.", "猫 sitting"]


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """(folder, ours, theirs) of a tiny BERT."""
    folder = build_bert(tmp_path_factory.mktemp("hf") / "tiny-bert")
    return folder, read_hf_folder(folder), load_theirs(transformers.BertForMaskedLM, folder)


def test_config_is_encoder_only(family):
    _, ours, _ = family
    cfg, model = ours.model.config, ours.model
    assert (cfg.kind, cfg.n_decoder_layers, cfg.cross_attention) == ("encoder-only", 0, False)
    assert (cfg.positional, cfg.layernorm_embedding, cfg.norm_placement, cfg.activation, cfg.norm_eps) == ("learned", True, "post", "gelu", 1e-12)
    assert (cfg.pad_id, cfg.unk_id, cfg.bos_id, cfg.eos_id) == (0, 2, 3, 4)  # [PAD] [UNK] [CLS] [SEP]
    assert model.decoder is None and model.generator.weight is model.encoder.embed.table.weight
    assert "encoder-only: no decoder" in cfg.describe() and ours.meta["family"] == "BERT"


def test_token_type_zero_is_folded_into_the_positions(family):
    folder, ours, _ = family
    stored = load_file(folder / "model.safetensors")
    want = stored["bert.embeddings.position_embeddings.weight"] + stored["bert.embeddings.token_type_embeddings.weight"][0]
    assert torch.equal(ours.model.encoder.embed.pe.detach(), want)


def test_masked_logits_and_every_attention_equal_transformers(family):
    _, ours, theirs = family
    cfg = ours.model.config
    ids = padded([ours.src_tokenizer.encode(t) for t in TEXTS[:2]], cfg.pad_id)  # the second padded
    with torch.no_grad():
        out = theirs(input_ids=ids, attention_mask=(ids != cfg.pad_id).long(), output_attentions=True)
        for row in range(2):
            n = int((ids[row] != cfg.pad_id).sum())
            logits, trace = ours.model.run_with_trace(ids, None, names=["*.weights"], batch_index=row)
            assert torch.allclose(logits[row, :n], out.logits[row, :n], atol=1e-5, rtol=0)
            assert torch.allclose(ours.model.predict_masked(ids)[row, :n], out.logits[row, :n], atol=1e-5, rtol=0)
            sites = attention_sites(cfg)
            assert [s.kind for s in sites] == ["encoder", "encoder"]
            for site in sites:
                got, want = trace[site.name("weights")], out.attentions[site.layer][row].numpy()
                assert np.allclose(got[:, :n, :n], want[:, :n, :n], atol=1e-5, rtol=0), site.path


def test_trace_names_have_no_decoder_and_end_with_the_masked_token_head(family):
    _, ours, _ = family
    with torch.no_grad():
        _, trace = ours.model.run_with_trace(torch.tensor([ours.src_tokenizer.encode(TEXTS[0])]), None)
    assert list(trace) == trace_names(ours.model.config)
    assert not [n for n in trace if n.startswith(("decoder.", "masks.tgt", "masks.look_ahead"))]
    assert list(trace)[-7:] == ["generator.transform", "generator.norm.input", "generator.norm.mean", "generator.norm.var", "generator.norm.output",
                                "generator.logits", "generator.probs"]


def test_decoding_an_encoder_only_model_is_refused_in_one_line(family):
    _, ours, _ = family
    with pytest.raises(DecodingError, match="encoder-only model .* does not decode"):
        DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, "the cat")
    with pytest.raises(ValueError, match="no decoder"):
        ours.model(torch.tensor([[3, 4]]), torch.tensor([[3]]))


def test_tokenizer_equals_bert_tokenizer(family):
    folder, ours, _ = family
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.BertTokenizer(str(folder / "vocab.txt"))
    tok = ours.src_tokenizer
    for text in TEXTS + ["  two  spaces\tand\na tab", "Café résumé", "x" * 120, "the zebra", "[MASK][MASK] sat"]:
        assert tok.encode(text) == theirs(text)["input_ids"], text
    assert isinstance(tok, WordPieceTokenizer) and tok.mask_id == 5
    assert tok.pieces(tok.encode("The cats sat")) == ["SOS", "the", "cat", "##s", "sat", "EOS"]
    assert tok.decode(tok.encode("The cats sat!")) == "the cats sat !"
    assert tok.unknown_characters("the ☃ sat") == ["U+2603"] and tok.encode("the ☃") == [3, 6, 2, 4]


def test_import_hf_writes_a_bundle_of_the_same_model(family, tmp_path):
    folder, ours, _ = family
    check_bundle_round_trip(ours, folder, tmp_path / "bundle", TEXTS[0])


# -- hostile folders ------------------------------------------------------------------------------
FILES = ("config.json", "vocab.txt")  # beside the weights


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(family, tmp_path, capsys):
    folder, _, _ = family
    check_pickle_runs_nothing(folder, tmp_path, capsys, FILES, "bert.embeddings.word_embeddings.weight")


def test_truncated_weights_wrong_shapes_and_foreign_choices_are_refused(family, tmp_path, capsys):
    folder, _, _ = family
    odd = check_hostile_weights_and_configs(
        folder, tmp_path, capsys, FILES,
        weights=[({"bert.embeddings.position_embeddings.weight": torch.zeros(10, 16)}, "has shape (10, 16), config.json implies (40, 16)"),
                 ({"bert.encoder.layer.1.intermediate.dense.weight": torch.zeros(16, 16)}, "'encoder.layers.1.ffn.linear1.weight' has shape (16, 16)")],
        configs=[({"position_embedding_type": "relative_key"}, "position_embedding_type 'relative_key' is not supported")],
    )
    (odd / "vocab.txt").write_text("the\ncat\n")
    (odd / "config.json").write_bytes((folder / "config.json").read_bytes())  # the config valid again
    refused_import(odd, tmp_path, capsys, "vocab.txt: has no [UNK] piece")
