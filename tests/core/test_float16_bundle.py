"""Bundles store their weights as float16 and give float32 back; float32 bundles (the shipped ones
among them) still open as they are."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from attnviz.core.bundle import WEIGHTS, load_bundle, round_as_stored, save_bundle, state_for_saving, stored_tensor
from attnviz.core.data.tokenizer import Tokenizer
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.transformer import Transformer
from attnviz.paths import models_dir


@pytest.fixture(scope="module")
def toks():
    zh = Tokenizer.train(["我喜欢吃鱼", "猫吃鱼", "鱼吃猫", "老师，您好！"] * 5, 40, add_dummy_prefix=False)
    en = Tokenizer.train(["I like fish", "cats eat fish", "fish eat cats", "Hello, teacher!"] * 5, 40)
    return zh, en


def _model(toks, norm: str = "layer") -> Transformer:
    torch.manual_seed(1)
    cfg = TransformerConfig(src_vocab_size=toks[0].vocab_size, tgt_vocab_size=toks[1].vocab_size, d_model=16, n_heads=2,
                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, norm=norm)
    model = Transformer(cfg)
    if norm == "batch":  # running statistics that are not round numbers
        model.train()
        model(torch.randint(4, toks[0].vocab_size, (3, 5)), torch.randint(4, toks[1].vocab_size, (3, 4)))
    return model.eval()


@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_saved_weights_are_float16_on_disk_and_float32_rounded_when_loaded(tmp_path, toks, norm):
    model = _model(toks, norm)
    path = save_bundle(tmp_path / "b", model, *toks)
    on_disk = st_load((path / WEIGHTS).read_bytes())
    original = state_for_saving(model)
    assert {k for k, v in original.items() if v.dtype == torch.float32} == {k for k, v in on_disk.items() if v.dtype == torch.float16}
    assert all(on_disk[k].dtype == v.dtype for k, v in original.items() if v.dtype != torch.float32)  # e.g. BatchNorm's batch count
    loaded = load_bundle(path).model.state_dict()
    for name, value in model.state_dict().items():
        assert loaded[name].dtype == value.dtype
        assert torch.equal(loaded[name], value.half().to(value.dtype) if value.dtype == torch.float32 else value), name
    nbytes = lambda state: sum(v.numel() * v.element_size() for v in state.values())
    assert (path / WEIGHTS).stat().st_size < len(st_save(original)) - 0.45 * nbytes(original)  # about half the tensor bytes


def test_round_as_stored_gives_the_loaded_weights(tmp_path, toks):
    model = _model(toks)
    path = save_bundle(tmp_path / "b", model, *toks)
    round_as_stored(model)
    loaded = load_bundle(path).model.state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in model.state_dict().items())


def test_a_tensor_float16_cannot_hold_stays_float32():
    big = torch.tensor([1.0, 1e6])
    assert stored_tensor(big).dtype == torch.float32 and stored_tensor(torch.tensor([1.0, 2.5])).dtype == torch.float16


def test_an_old_float32_bundle_loads_unchanged(tmp_path, toks):
    model = _model(toks)
    path = save_bundle(tmp_path / "b", model, *toks)
    (path / WEIGHTS).write_bytes(st_save(state_for_saving(model)))  # as bundles were written before float16
    loaded = load_bundle(path).model.state_dict()
    assert all(loaded[k].dtype == torch.float32 and torch.equal(loaded[k], v) for k, v in model.state_dict().items())


def test_the_shipped_float32_bundles_still_open():
    for folder in sorted(p for p in models_dir().iterdir() if (p / WEIGHTS).is_file()):
        stored = {v.dtype for v in st_load((folder / WEIGHTS).read_bytes()).values()}
        bundle = load_bundle(folder)
        assert all(v.dtype in (torch.float32, torch.int64) for v in bundle.model.state_dict().values()), folder.name
        assert stored <= {torch.float32, torch.float16, torch.int64}, folder.name
