"""BART and mBART folders from Hugging Face: tiny random models saved by ``transformers`` (no
network) open as our ``Transformer`` (learned positions, ``layernorm_embedding``, GELU; post-norm
BART, pre-norm mBART) with the same logits, attention weights and greedy/beam outputs; the
byte-level BPE tokenizer gives ``BartTokenizer``'s ids; hostile folders give one line."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
import torch
from family_checks import check_bundle_round_trip, check_cached_steps, check_generate, check_logits_and_attention, check_trace_names
from safetensors.torch import load_file, save_file

from attnviz.cli import main
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = KINDS[request.param].from_pretrained(folder, attn_implementation="eager").eval()
    return request.param, folder, read_hf_folder(folder), theirs


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


def test_logits_and_every_attention_equal_transformers(family):
    _, _, ours, theirs = family
    check_logits_and_attention(ours, theirs, SOURCES)


@pytest.mark.slow  # about 3 s each
@pytest.mark.parametrize("beams", [1, 3])
def test_greedy_and_beam_equal_generate(family, beams):
    _, _, ours, theirs = family
    check_generate(ours, theirs, SOURCES, beams)


def test_cached_steps_and_trace_names(family):
    _, _, ours, _ = family
    check_cached_steps(ours, SOURCES[1])
    check_trace_names(ours, SOURCES[0])


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
    check_bundle_round_trip(ours, folder, tmp_path / "bundle", SOURCES[0])


# -- hostile folders ------------------------------------------------------------------------------
class _RunsCode:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _copy(folder: Path, to: Path, weights: bool = True) -> Path:
    to.mkdir()
    for name in ("config.json", "vocab.json", "merges.txt") + (("model.safetensors",) if weights else ()):
        (to / name).write_bytes((folder / name).read_bytes())
    return to


def _refused(folder: Path, tmp_path: Path, capsys, message: str) -> None:
    assert main(["import-hf", str(folder), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err and not (tmp_path / "out").exists(), err


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(family, tmp_path, capsys):
    _, folder, _, _ = family
    hostile = _copy(folder, tmp_path / "hostile", weights=False)
    marker = tmp_path / "ran"
    torch.save({"model.shared.weight": torch.zeros(2), "payload": _RunsCode(marker)}, hostile / "pytorch_model.bin")
    _refused(hostile, tmp_path, capsys, "pytorch_model.bin: refused")
    assert not marker.exists()


def test_truncated_weights_wrong_shapes_and_foreign_configs_are_refused(family, tmp_path, capsys):
    _, folder, _, _ = family
    cut = _copy(folder, tmp_path / "cut")
    data = (cut / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(data[: len(data) // 2])
    _refused(cut, tmp_path, capsys, "not a valid safetensors file")
    shapes = _copy(folder, tmp_path / "shapes")
    state = load_file(shapes / "model.safetensors")
    save_file({**state, "model.encoder.embed_positions.weight": torch.zeros(10, 16)}, shapes / "model.safetensors")
    _refused(shapes, tmp_path, capsys, "has shape (10, 16), config.json implies (66, 16)")
    narrow = _copy(folder, tmp_path / "narrow")
    config = json.loads((narrow / "config.json").read_text())
    (narrow / "config.json").write_text(json.dumps({**config, "encoder_ffn_dim": 48, "decoder_ffn_dim": 48}))
    _refused(narrow, tmp_path, capsys, "has shape")
    (narrow / "config.json").write_text(json.dumps({**config, "architectures": ["XLNetLMHeadModel"]}))
    _refused(narrow, tmp_path, capsys, "architecture 'XLNetLMHeadModel' is not supported (attnviz opens MarianMTModel, BartForConditionalGeneration")
