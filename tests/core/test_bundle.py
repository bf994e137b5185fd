"""Model bundles: bit-exact round trip, atomic saves, and one clear error for every bad bundle."""

import json
import os
import pickle
import re

import pytest
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from attnviz.core import Transformer, TransformerConfig
from attnviz.core.bundle import BUNDLE_FILES, BundleError, load_bundle, previous_path, rename_old_tensors, round_as_stored, save_bundle
from attnviz.core.data.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def toks():
    zh = Tokenizer.train(["我喜欢吃鱼", "猫吃鱼", "鱼吃猫", "老师，您好！"] * 5, 40, add_dummy_prefix=False)
    en = Tokenizer.train(["I like fish", "cats eat fish", "fish eat cats", "Hello, teacher!"] * 5, 40)
    return zh, en


def make_model(toks, norm="layer", tie=False, seed=0):
    torch.manual_seed(seed)
    zh, en = toks
    cfg = TransformerConfig(src_vocab_size=zh.vocab_size, tgt_vocab_size=en.vocab_size, d_model=16, n_heads=2,
                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, norm=norm, tie_embeddings=tie)
    m = Transformer(cfg)
    if norm == "batch":
        m.train()
        m(torch.randint(4, zh.vocab_size, (3, 5)), torch.randint(4, en.vocab_size, (3, 4)))
    return m.eval()


def check_same_model(m, b, toks, tie: bool, rows: int) -> None:
    """Bundle ``b`` holds exactly ``m``'s tensors (its output layer the target embedding if ``tie``) and gives exactly
    ``m``'s logits on ``rows`` random sentences."""
    s1, s2 = m.state_dict(), b.model.state_dict()
    assert s1.keys() == s2.keys()
    assert all(torch.equal(s1[k], s2[k]) for k in s1)
    if tie:
        assert b.model.generator.weight is b.model.decoder.embed.table.weight
    src = torch.randint(4, toks[0].vocab_size, (rows, 5))
    tgt = torch.randint(4, toks[1].vocab_size, (rows, 4))
    with torch.no_grad():
        assert torch.equal(m(src, tgt), b.model(src, tgt))


@pytest.mark.parametrize("norm,tie", [("layer", False), ("batch", False), ("layer", True)])
def test_round_trip_is_bit_exact(tmp_path, toks, norm, tie):
    """Bit-exact for the weights as stored (float16; tests/core/test_float16_bundle.py)."""
    m = make_model(toks, norm, tie)
    round_as_stored(m)
    save_bundle(tmp_path / "b", m, *toks, {"history": [1, 2]})
    b = load_bundle(tmp_path / "b")
    assert b.config == m.config and b.meta["history"] == [1, 2]
    assert b.src_tokenizer.to_bytes() == toks[0].to_bytes()
    check_same_model(m, b, toks, tie, rows=1)


def test_chinese_round_trips_through_a_saved_tokenizer(tmp_path, toks):
    save_bundle(tmp_path / "b", make_model(toks), *toks)
    zh = load_bundle(tmp_path / "b").src_tokenizer
    assert zh.decode(zh.encode("老师，您好！")) == "老师，您好！"
    assert "，" in zh.pieces(zh.encode("老师，您好！"))


def saved(tmp_path, toks):
    path = tmp_path / "b"
    save_bundle(path, make_model(toks), *toks)
    return path


def expect_error(path, file, words):
    with pytest.raises(BundleError) as info:
        load_bundle(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert file in msg, msg
    assert any(w in msg for w in words), msg
    return msg


def test_truncated_weights(tmp_path, toks):
    path = saved(tmp_path, toks)
    data = (path / "model.safetensors").read_bytes()
    (path / "model.safetensors").write_bytes(data[: len(data) // 2])
    expect_error(path, "model.safetensors", ["not a valid safetensors"])


def test_corrupted_weights_header(tmp_path, toks):
    path = saved(tmp_path, toks)
    data = bytearray((path / "model.safetensors").read_bytes())
    data[10:30] = b"\xff" * 20
    (path / "model.safetensors").write_bytes(bytes(data))
    expect_error(path, "model.safetensors", ["not a valid safetensors"])


def test_corrupted_config_and_tokenizer(tmp_path, toks):
    path = saved(tmp_path, toks)
    (path / "config.json").write_text("{not json")
    expect_error(path, "config.json", ["not valid JSON"])
    path = saved(tmp_path / "2", toks)
    (path / "tgt.model").write_bytes(b"garbage" * 10)
    expect_error(path, "tgt.model", ["sentencepiece"])


def test_foreign_bundles(tmp_path, toks):
    empty = tmp_path / "foreign"
    empty.mkdir()
    (empty / "pytorch_model.bin").write_bytes(b"x")
    expect_error(empty, "config.json", ["not an attnviz model bundle"])
    path = saved(tmp_path, toks)
    meta = json.loads((path / "meta.json").read_text())
    del meta["format"]
    (path / "meta.json").write_text(json.dumps(meta))
    expect_error(path, "meta.json", ["not an attnviz model bundle"])
    # weights of another architecture
    path2 = saved(tmp_path / "2", toks)
    other = TransformerConfig(src_vocab_size=toks[0].vocab_size, tgt_vocab_size=toks[1].vocab_size, d_model=32,
                              n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32)
    (path2 / "config.json").write_text(other.to_json())
    expect_error(path2, "model.safetensors", ["shape"])
    file = tmp_path / "file.bin"
    file.write_bytes(b"x")
    expect_error(file, "file.bin", ["folder"])
    expect_error(tmp_path / "nope", "nope", ["no such"])


# Tensor names as bundles saved them before the module tree followed the trace names.
def old_name(key: str) -> str:
    key = re.sub(r"^encoder\.embed\.table\.", "src_embed.", key)
    key = re.sub(r"^decoder\.embed\.table\.", "tgt_embed.", key)
    key = re.sub(r"^(encoder|decoder)\.layers\.(\d+)\.norm(\d)\.", r"\1_layers.\2.sub\3.norm.", key)
    key = re.sub(r"^(encoder|decoder)\.layers\.", r"\1_layers.", key)
    return re.sub(r"^(encoder|decoder)\.final_norm\.", r"\1_norm.", key)


def test_old_tensor_names_are_renamed():
    old = ["src_embed.weight", "tgt_embed.weight", "encoder_layers.0.self_attn.w_q.weight", "encoder_layers.1.sub2.norm.bias",
           "decoder_layers.0.cross_attn.w_o.bias", "decoder_layers.0.sub3.norm.running_var", "decoder_layers.2.ffn.linear1.weight",
           "encoder_norm.weight", "decoder_norm.running_mean", "generator.bias"]
    tensors = {k: torch.full((1,), float(i)) for i, k in enumerate(old)}
    new = rename_old_tensors(tensors)
    assert list(new) == ["encoder.embed.table.weight", "decoder.embed.table.weight", "encoder.layers.0.self_attn.w_q.weight",
                         "encoder.layers.1.norm2.bias", "decoder.layers.0.cross_attn.w_o.bias", "decoder.layers.0.norm3.running_var",
                         "decoder.layers.2.ffn.linear1.weight", "encoder.final_norm.weight", "decoder.final_norm.running_mean", "generator.bias"]
    assert all(new[n] is tensors[o] for o, n in zip(old, new))  # nothing lost, nothing copied
    assert rename_old_tensors(new) == new  # today's names stay
    with pytest.raises(ValueError, match="same name"):
        rename_old_tensors({"encoder_norm.weight": torch.ones(1), "encoder.final_norm.weight": torch.ones(1)})


@pytest.mark.parametrize("norm,tie,final", [("layer", False, True), ("batch", False, None), ("layer", True, None)])
def test_a_bundle_with_old_tensor_names_still_opens(tmp_path, toks, norm, tie, final):
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=toks[0].vocab_size, tgt_vocab_size=toks[1].vocab_size, d_model=16, n_heads=2,
                            n_encoder_layers=2, n_decoder_layers=2, d_ff=32, norm=norm, tie_embeddings=tie, final_norm=final)
    m = Transformer(cfg).eval()
    round_as_stored(m)
    path = save_bundle(tmp_path / "b", m, *toks)
    state = st_load((path / "model.safetensors").read_bytes())
    (path / "model.safetensors").write_bytes(st_save({old_name(k): v for k, v in state.items()}))
    check_same_model(m, load_bundle(path), toks, tie, rows=2)
    (path / "model.safetensors").write_bytes(st_save({**state, old_name("encoder.layers.0.norm1.weight"): state["encoder.layers.0.norm1.weight"].clone()}))
    expect_error(path, "model.safetensors", ["same name"])


def test_version_mismatch(tmp_path, toks):
    path = saved(tmp_path, toks)
    meta = json.loads((path / "meta.json").read_text())
    meta["format_version"] = 99
    (path / "meta.json").write_text(json.dumps(meta))
    msg = expect_error(path, "meta.json", ["version"])
    assert "99" in msg


def test_missing_file_is_named(tmp_path, toks):
    path = saved(tmp_path, toks)
    os.remove(path / "src.model")
    expect_error(path, "src.model", ["missing"])


class _Payload:
    """Unpickling this would write a file."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_pickle_renamed_to_safetensors_is_refused_without_executing(tmp_path, toks):
    path = saved(tmp_path, toks)
    marker = tmp_path / "pwned.txt"
    payload = pickle.dumps({"model": _Payload(str(marker))})
    # sanity: the payload really would write the file when unpickled
    probe = tmp_path / "probe.txt"
    pickle.loads(pickle.dumps(_Payload(str(probe))))
    assert probe.exists()
    (path / "model.safetensors").write_bytes(payload)
    expect_error(path, "model.safetensors", ["not a valid safetensors"])
    assert not marker.exists()
    # a torch.save zip renamed the same way is refused too
    torch.save({"x": torch.zeros(2)}, path / "model.safetensors")
    expect_error(path, "model.safetensors", ["not a valid safetensors"])


def test_nan_weights_are_refused(tmp_path, toks):
    m = make_model(toks)
    with torch.no_grad():
        m.generator.bias[0] = float("nan")
    save_bundle(tmp_path / "b", m, *toks)
    expect_error(tmp_path / "b", "model.safetensors", ["NaN"])


def test_save_over_existing_keeps_one_bundle_and_no_temporaries(tmp_path, toks):
    path = tmp_path / "b"
    save_bundle(path, make_model(toks, seed=1), *toks, {"v": 1})
    save_bundle(path, make_model(toks, seed=2), *toks, {"v": 2})
    assert load_bundle(path).meta["v"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert sorted(p.name for p in path.iterdir()) == sorted(BUNDLE_FILES)


def test_save_interrupted_between_renames_leaves_previous_loadable(tmp_path, toks, monkeypatch):
    path = tmp_path / "b"
    save_bundle(path, make_model(toks, seed=1), *toks, {"v": 1})
    real_replace = os.replace
    calls = []

    def dying_replace(a, b):
        calls.append((a, b))
        if len(calls) == 2:  # the rename that would put the new bundle in place
            raise KeyboardInterrupt  # like a kill at that moment
        return real_replace(a, b)

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        save_bundle(path, make_model(toks, seed=2), *toks, {"v": 2})
    monkeypatch.setattr(os, "replace", real_replace)
    assert not path.exists() and previous_path(path).exists()
    assert load_bundle(path).meta["v"] == 1  # the previous bundle is still loadable
    save_bundle(path, make_model(toks, seed=3), *toks, {"v": 3})  # and the next save cleans up
    assert load_bundle(path).meta["v"] == 3
    assert not previous_path(path).exists()


def test_save_killed_while_writing_leaves_previous_intact(tmp_path, toks, monkeypatch):
    path = tmp_path / "b"
    save_bundle(path, make_model(toks, seed=1), *toks, {"v": 1})
    import attnviz.core.bundle as bundle_mod

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bundle_mod, "st_save", boom)
    with pytest.raises(BundleError, match="No space left"):
        save_bundle(path, make_model(toks, seed=2), *toks, {"v": 2})
    assert load_bundle(path).meta["v"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_unwritable_destination(tmp_path, toks):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BundleError):
        save_bundle(blocker / "b", make_model(toks), *toks)


def test_vocab_size_mismatch(tmp_path, toks):
    path = saved(tmp_path, toks)
    other = Tokenizer.train(["a b c d e f g h", "i j k l m n o p"] * 3, 24)
    assert other.vocab_size != toks[1].vocab_size
    other.save(path / "tgt.model")
    expect_error(path, "config.json", ["vocabulary sizes"])
