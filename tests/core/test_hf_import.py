"""Marian (opus-mt) folders from Hugging Face: a tiny random ``MarianMTModel`` saved by
``transformers`` in a temporary folder (no network) opens as our ``Transformer`` with the same
logits, attention weights, tokens and greedy/beam outputs; hostile folders give one line."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
import torch
from family_checks import check_cached_steps, check_generate, check_logits_and_attention, check_pickle_runs_nothing, copy_folder, load_theirs
from safetensors.torch import load_file

from attnviz.cli import main
from attnviz.core.bundle import stored_tensor
from attnviz.core.data.hf_tokenizer import VocabTokenizer, load_tokenizer
from attnviz.core.decoding.strategies import BeamSearch
from attnviz.core.model.hf_import import HFImportError, is_hf_folder, read_hf_folder

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_marian import SOURCES, build_marian  # noqa: E402  (needs transformers)


@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory) -> Path:
    return build_marian(tmp_path_factory.mktemp("hf") / "tiny-marian")


@pytest.fixture(scope="module")
def theirs(marian_dir):
    return load_theirs(transformers.MarianMTModel, marian_dir)


@pytest.fixture(scope="module")
def hf_tokenizer(marian_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.MarianTokenizer.from_pretrained(marian_dir)


@pytest.fixture(scope="module")
def ours(marian_dir):
    return read_hf_folder(marian_dir)


def test_logits_and_every_attention_equal_transformers(ours, theirs):
    check_logits_and_attention(ours, theirs, SOURCES, fed=((5, 9, 12, 3, 0), (7, 7, 2, 0, 4)), weights_atol=1e-6, padded_queries=True)


def test_config_records_marians_choices(ours, marian_dir):
    cfg, hf = ours.model.config, json.loads((marian_dir / "config.json").read_text())
    assert (cfg.activation, cfg.positional_layout, cfg.norm_placement, cfg.final_norm) == ("silu", "halves", "post", False)
    assert cfg.bos_id == cfg.pad_id == hf["decoder_start_token_id"] and cfg.eos_id == hf["eos_token_id"] and cfg.max_len == 64
    assert cfg.tie_embeddings and ours.model.generator.weight is ours.model.decoder.embed.table.weight
    assert ours.meta["architecture"] == "MarianMTModel"


def test_tokenizer_equals_marian_tokenizer(ours, hf_tokenizer):
    for text in SOURCES + ["the zebra 猫 sat"]:
        assert ours.src_tokenizer.encode(text) == hf_tokenizer(text)["input_ids"]
        assert ours.tgt_tokenizer.encode(text) == hf_tokenizer(text_target=text)["input_ids"][:-1]  # no EOS: the model adds it
    for text in SOURCES:
        ids = ours.tgt_tokenizer.encode(text)
        assert ours.tgt_tokenizer.decode(ids) == hf_tokenizer.decode(ids, skip_special_tokens=True) == text
    assert "\u2047" in ours.tgt_tokenizer.decode(ours.tgt_tokenizer.encode("the 猫"))  # UNK shows as ⁇, as in our own tokenizers
    tok = ours.src_tokenizer
    assert tok.unknown_characters("the zebra 猫") == ["猫"]
    assert tok.pieces([tok.bos_id, tok.eos_id, tok.unk_id]) == ["SOS", "EOS", "UNK"]
    assert tok.piece_to_id("EOS") == tok.eos_id and tok.vocab_size == ours.model.config.src_vocab_size


@pytest.mark.parametrize("beams", [1, 3])
def test_greedy_and_beam_equal_generate(ours, theirs, beams):
    check_generate(ours, theirs, SOURCES, beams)  # the inputs end at different lengths


def test_cached_step_equals_full_pass(ours):
    check_cached_steps(ours, SOURCES[1], fed=(4, 9, 11))


FILES = ("config.json", "vocab.json", "source.spm", "target.spm")  # beside the weights


def test_pickled_weights_load_without_running_code(ours, marian_dir, tmp_path):
    folder = copy_folder(marian_dir, tmp_path / "bin", FILES, weights=False)
    torch.save(load_file(marian_dir / "model.safetensors"), folder / "pytorch_model.bin")
    again = read_hf_folder(folder)
    for name, tensor in ours.model.state_dict().items():
        assert torch.equal(again.model.state_dict()[name], tensor), name


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(marian_dir, tmp_path, capsys):
    err = check_pickle_runs_nothing(marian_dir, tmp_path, capsys, FILES, "model.shared.weight")
    assert err.startswith("attnviz: error: ")


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(encoder_ffn_dim=48, decoder_ffn_dim=48), "has shape"),
        (dict(architectures=["XLNetLMHeadModel"], model_type="xlnet"), "architecture 'XLNetLMHeadModel' is not supported"),
        (dict(activation_function="tanh"), "activation 'tanh' is not supported"),
        (dict(encoder_attention_heads=2), "differ"),
    ],
)
def test_hostile_or_foreign_config_gives_one_line(marian_dir, tmp_path, capsys, change, message):
    folder = copy_folder(marian_dir, tmp_path / "foreign", FILES)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(HFImportError, match=message):
        read_hf_folder(folder)
    assert main(["import-hf", str(folder), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_import_hf_writes_a_bundle_with_the_same_model(ours, marian_dir, tmp_path, capsys):
    out = tmp_path / "models" / "tiny-marian"
    assert main(["import-hf", str(marian_dir), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"saved {out} (MarianMTModel")
    assert json.loads((out / "config.json").read_text())["positional_layout"] == "halves"
    weights = load_file(out / "model.safetensors")
    for name, tensor in weights.items():  # a float32 checkpoint stays float32: the numbers of the real model
        assert tensor.dtype == torch.float32 and torch.equal(tensor, ours.model.state_dict()[name]), name
    assert json.loads((out / "meta.json").read_text())["weights_precision"] == "float32"
    for file, tok in (("src.model", ours.src_tokenizer), ("tgt.model", ours.tgt_tokenizer)):
        back = load_tokenizer(out / file)
        assert isinstance(back, VocabTokenizer) and back.to_bytes() == tok.to_bytes()
        assert back.encode(SOURCES[0]) == tok.encode(SOURCES[0])
    assert is_hf_folder(marian_dir) and not is_hf_folder(out)


def test_import_hf_refuses_to_overwrite_a_folder_that_is_not_a_bundle(marian_dir, tmp_path, capsys):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("keep me")
    assert main(["import-hf", str(marian_dir), "--out", str(keep)]) == 2
    assert "not an attnviz model bundle" in capsys.readouterr().err and (keep / "notes.txt").read_text() == "keep me"


def test_a_corrupt_pytorch_file_is_refused_in_one_line(marian_dir, tmp_path, capsys):
    folder = copy_folder(marian_dir, tmp_path / "corrupt", FILES, weights=False)
    (folder / "pytorch_model.bin").write_bytes(b"not a pickle at all" * 8)
    assert main(["import-hf", str(folder), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "refused: not a readable PyTorch file of tensors" in err and err.count("\n") == 1


def test_config_fields_for_marian_are_checked():
    from attnviz.core.model.config import ConfigError, TransformerConfig

    base = dict(src_vocab_size=50, tgt_vocab_size=50, d_model=16, n_heads=4, d_ff=32)
    marian = TransformerConfig(**base, pad_id=49, unk_id=1, bos_id=49, eos_id=0, activation="silu", positional_layout="halves")
    assert TransformerConfig.from_dict(marian.to_dict()) == marian  # a bundle's config.json round trip
    with pytest.raises(ConfigError, match="activation"):
        TransformerConfig(**base, activation="tanh")
    with pytest.raises(ConfigError, match="positional_layout"):
        TransformerConfig(**base, positional_layout="rotary")
    with pytest.raises(ConfigError, match="distinct"):
        TransformerConfig(**base, pad_id=49, unk_id=0, bos_id=49, eos_id=0)  # a decoder may start from PAD (Marian) or EOS (BART); UNK is never EOS
    assert TransformerConfig(**base, pad_id=1, unk_id=3, bos_id=2, eos_id=2).bos_id == 2  # BART's decoder starts from EOS


def test_load_bundle_opens_the_folder_and_the_converted_bundle(ours, marian_dir, tmp_path):
    from attnviz.core.bundle import load_bundle
    from attnviz.core.decoding.session import translate

    out = tmp_path / "tiny-marian"
    assert main(["import-hf", str(marian_dir), "--out", str(out)]) == 0
    expected = translate(load_bundle(marian_dir), SOURCES[1], strategy=BeamSearch(width=3, length_penalty=0.0))
    for path in (marian_dir, out):
        bundle = load_bundle(path)
        assert bundle.config == ours.model.config and bundle.name == path.name
        assert isinstance(bundle.src_tokenizer, VocabTokenizer) and bundle.src_tokenizer.encode(SOURCES[1]) == ours.src_tokenizer.encode(SOURCES[1])
        for name, tensor in ours.model.state_dict().items():
            assert torch.equal(bundle.model.state_dict()[name], tensor), name  # imported as it was: float32
        assert translate(bundle, SOURCES[1], strategy=BeamSearch(width=3, length_penalty=0.0))[0] == expected[0]


def test_a_float16_checkpoint_is_imported_as_float16_and_said_so(ours, theirs, marian_dir, tmp_path, capsys):
    from safetensors.torch import save_file

    from attnviz.core.bundle import load_bundle

    half = tmp_path / "half"
    shutil.copytree(marian_dir, half)
    weights = load_file(half / "model.safetensors")
    save_file({k: v.half() if v.is_floating_point() else v for k, v in weights.items()}, half / "model.safetensors")
    out = tmp_path / "half-bundle"
    assert main(["import-hf", str(half), "--out", str(out)]) == 0
    stored = load_file(out / "model.safetensors")
    assert {t.dtype for t in stored.values()} == {torch.float16}
    assert json.loads((out / "meta.json").read_text())["weights_precision"] == "float16"
    bundle = load_bundle(out)
    for name, tensor in ours.model.state_dict().items():  # the checkpoint's float16 values, no further rounding
        assert torch.equal(bundle.model.state_dict()[name], stored_tensor(tensor).float()), name
    capsys.readouterr()


def test_an_imported_bundle_computes_what_transformers_computes(theirs, marian_dir, tmp_path):
    from attnviz.core.bundle import load_bundle

    out = tmp_path / "bundle"
    assert main(["import-hf", str(marian_dir), "--out", str(out)]) == 0
    bundle = load_bundle(out)
    src = torch.tensor([bundle.src_tokenizer.encode(SOURCES[0])])
    tgt = torch.tensor([[bundle.config.bos_id, 5, 9, 7]])
    with torch.inference_mode():
        logits = bundle.model(src, tgt)
        want = theirs(input_ids=src, decoder_input_ids=tgt).logits
    assert torch.allclose(logits, want, atol=1e-5, rtol=0)  # float16 storage gave differences of ~3e-4
