"""Hostile model folders and imports, through the command line: ``import-hf --out`` replaces only
what ``folder_kind`` calls a bundle (cases 1-3), owns the folder while it writes (case 4), and
every file of a model folder is read through the capped reader: regular files only, refused
before they are opened, a size budget per kind, a safetensors header checked against the file
and the config before any tensor is read (cases 5-7). Each refusal is one line, and every file
that was there before is still there, byte for byte."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest
import torch
from alarms import fails_after
from safetensors.torch import load_file, save_file

from attnviz.cli import main
from attnviz.core.bundle import BundleError, load_bundle
from attnviz.core.folder_lock import output_lock

pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_marian import build_marian  # noqa: E402  (needs transformers)


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root`` (and ``root`` itself): a file's bytes, a link's target, a folder's mark."""
    out: dict[str, object] = {}
    for p in [root, *sorted(root.rglob("*"))] if root.is_dir() and not root.is_symlink() else [root]:
        key = str(p.relative_to(root.parent))
        out[key] = ("link", os.readlink(p)) if p.is_symlink() else _contents(p) if p.is_file() else "folder"
    return out


def _contents(file: Path) -> object:
    st = file.stat()
    return file.read_bytes() if st.st_size < 2**24 else ("large", st.st_size, st.st_mtime_ns)  # a sparse 6 GiB file is not read


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnviz: error: ") and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def marian(tmp_path_factory) -> Path:
    return build_marian(tmp_path_factory.mktemp("hf") / "tiny-marian")


@pytest.fixture(scope="module")
def bundle(marian, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("b") / "bundle"
    assert main(["import-hf", str(marian), "--out", str(out)]) == 0
    return out


@pytest.fixture(autouse=True)
def never_block():
    """A read that blocks (a FIFO) fails the test after 20 s instead of hanging the suite."""
    with fails_after(20, "blocked on a read"):
        yield


def refused(capsys, src: Path, out: Path, watch: Path, code: int = 2, *extra: str) -> str:
    """Run import-hf with and without --force; each refuses in one line and ``watch`` is unchanged."""
    before = snapshot(watch)
    messages = []
    for force in ([], ["--force"]):
        assert main(["import-hf", str(src), "--out", str(out), *force, *extra]) == code
        messages.append(one_line(capsys))
        assert snapshot(watch) == before
    return messages[0]


# -- 1-3: what --out may be -----------------------------------------------------------------------
def test_import_hf_keeps_a_folder_of_user_files(marian, tmp_path, capsys):  # case 1
    out = tmp_path / "thesis"
    (out / "photos").mkdir(parents=True)
    (out / "meta.json").write_text("{}")
    (out / "thesis.tex").write_text("\\documentclass{article}")
    (out / "photos" / "cat.jpg").write_bytes(b"\xff\xd8\xff")
    assert "not an attnviz model bundle" in refused(capsys, marian, out, out)


def test_import_hf_refuses_a_bundle_a_user_added_files_to(marian, bundle, tmp_path, capsys):  # case 2
    out = tmp_path / "w"
    shutil.copytree(bundle, out)
    (out / "notes.txt").write_text("my notes")
    assert "not an attnviz model bundle" in refused(capsys, marian, out, out)


def test_import_hf_refuses_an_out_folder_holding_the_source(marian, bundle, tmp_path, capsys):  # case 2
    out = tmp_path / "w"
    shutil.copytree(bundle, out)
    shutil.copytree(marian, out / "hf")
    assert "not an attnviz model bundle" in refused(capsys, out / "hf", out, out)
    assert "not an attnviz model bundle" in refused(capsys, out / "hf", out / "hf", out)  # --out the source itself


def test_import_hf_refuses_a_link_or_a_folder_under_a_bundle_files_name(marian, bundle, tmp_path, capsys):
    out = tmp_path / "w"
    shutil.copytree(bundle, out)
    mine = tmp_path / "mine.txt"
    mine.write_text("mine")
    (out / "src.model").unlink()
    (out / "src.model").symlink_to(mine)
    assert "not an attnviz model bundle" in refused(capsys, marian, out, tmp_path)


def test_import_hf_replaces_a_bundle_only_with_force(marian, bundle, tmp_path, capsys):
    out = tmp_path / "w"
    shutil.copytree(bundle, out)
    assert main(["import-hf", str(marian), "--out", str(out)]) == 2
    assert "already holds a model bundle; use --force" in one_line(capsys)
    assert main(["import-hf", str(marian), "--out", str(out), "--force"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w"]  # no .w.previous, no .w.lock left
    assert load_bundle(out).config == load_bundle(bundle).config


def test_import_hf_refuses_a_symbolic_link_out_folder(marian, bundle, tmp_path, capsys):  # case 3
    real = tmp_path / "real"
    shutil.copytree(bundle, real)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert "is a symbolic link" in refused(capsys, marian, link, tmp_path)
    assert link.is_symlink() and not (tmp_path / ".link.previous").exists()
    assert main(["import-hf", str(marian), "--out", str(real), "--force"]) == 0  # the next import there works
    capsys.readouterr()


def test_import_hf_into_a_folder_another_run_owns_refuses(marian, bundle, tmp_path, capsys):  # case 4
    out = tmp_path / "w"
    shutil.copytree(bundle, out)
    with output_lock(out, "train"):
        assert "in use by another attnviz train" in refused(capsys, marian, out, out, 1)


# -- 5-7: files that are not what they say --------------------------------------------------------
def hostile_copy(marian: Path, tmp_path: Path, name: str, make) -> Path:
    folder = tmp_path / "hostile"
    shutil.copytree(marian, folder)
    (folder / name).unlink()
    make(folder / name)
    return folder


def to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("name", ["config.json", "vocab.json", "source.spm", "target.spm", "model.safetensors"])
def test_a_link_to_dev_zero_is_refused_before_it_is_read(marian, tmp_path, capsys, name):  # case 5
    folder = hostile_copy(marian, tmp_path, name, to_dev_zero)
    assert f"{name}: is a device (through a symbolic link), not a regular file" in refused(capsys, folder, tmp_path / "out", folder, 1)
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("name", ["config.json", "vocab.json", "source.spm", "target.spm", "model.safetensors"])
def test_a_fifo_is_refused_without_blocking(marian, tmp_path, capsys, name):  # case 6
    folder = hostile_copy(marian, tmp_path, name, os.mkfifo)
    assert f"{name}: is a named pipe (FIFO), not a regular file" in refused(capsys, folder, tmp_path / "out", folder, 1)


@pytest.mark.parametrize("name", ["source.spm", "vocab.json"])
def test_a_folder_in_place_of_a_file_is_one_line(marian, tmp_path, capsys, name):  # case 9 (source.spm a folder)
    folder = hostile_copy(marian, tmp_path, name, Path.mkdir)
    assert f"{name}: is a folder, not a regular file" in refused(capsys, folder, tmp_path / "out", folder, 1)


def test_a_fifo_in_a_bundle_is_refused_by_load_bundle(bundle, tmp_path):
    folder = tmp_path / "b"
    shutil.copytree(bundle, folder)
    (folder / "meta.json").unlink()
    os.mkfifo(folder / "meta.json")
    with pytest.raises(BundleError, match="meta.json: (is a named pipe|missing)"):
        load_bundle(folder)


def safetensors_bytes(header: dict) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text


def test_a_huge_sparse_weights_file_is_refused_by_its_size(marian, tmp_path, capsys):  # case 7
    def huge(path: Path) -> None:
        n = 6 * 2**30 // 4
        head = safetensors_bytes({"model.shared.weight": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}})
        with open(path, "wb") as fh:
            fh.write(head)
            fh.truncate(len(head) + 4 * n)  # sparse: no disk used

    folder = hostile_copy(marian, tmp_path, "model.safetensors", huge)
    assert "more than the" in refused(capsys, folder, tmp_path / "out", folder, 1)


@pytest.mark.parametrize("entry, size, message", [
    ({"dtype": "F32", "shape": [1000], "data_offsets": [0, 4000]}, 40, "tensors hold 4,000 bytes, the file 40"),
    ({"dtype": "F32", "shape": [10], "data_offsets": [0, 4]}, 4, "declares 4 bytes"),
    ({"dtype": "F32", "shape": [10], "data_offsets": [0, "x"]}, 40, "no valid dtype, shape and offsets"),
    ({"dtype": "Q4", "shape": [10], "data_offsets": [0, 40]}, 40, "no valid dtype, shape and offsets"),
])
def test_a_safetensors_header_is_checked_against_the_file(marian, tmp_path, capsys, entry, size, message):  # case 7
    def lying(path: Path) -> None:
        path.write_bytes(safetensors_bytes({"model.shared.weight": entry}) + b"\0" * size)

    folder = hostile_copy(marian, tmp_path, "model.safetensors", lying)
    assert message in refused(capsys, folder, tmp_path / "out", folder, 1)


# -- 8: weights the config does not explain, or that overflow --------------------------------------
def with_weights(marian: Path, tmp_path: Path, change, config_change=None, pickled: bool = False) -> Path:
    """A copy of ``marian`` whose weights are ``change(state)`` (as model.safetensors or pytorch_model.bin)."""
    folder = tmp_path / "changed"
    shutil.copytree(marian, folder)
    state = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    state = change(state)
    if pickled:
        torch.save(state, folder / "pytorch_model.bin")
    else:
        save_file(state, folder / "model.safetensors")
    if config_change is not None:
        hf = json.loads((folder / "config.json").read_text())
        config_change(hf)
        (folder / "config.json").write_text(json.dumps(hf))
    return folder


def test_a_layer_the_config_does_not_explain_is_named(marian, tmp_path, capsys):
    folder = with_weights(marian, tmp_path, dict, lambda hf: hf.update(encoder_layers=1))
    err = refused(capsys, folder, tmp_path / "out", folder, 1)
    assert "does not explain, e.g. 'encoder.layers.1." in err


def test_finite_weights_that_overflow_are_refused_on_import(marian, tmp_path, capsys):
    def huge(state):
        state["model.shared.weight"] = torch.full_like(state["model.shared.weight"], 3e38)
        return state

    folder = with_weights(marian, tmp_path, huge)
    assert "the weights overflow" in refused(capsys, folder, tmp_path / "out", folder, 1)


@pytest.mark.parametrize("shift, accepted", [(0.0, True), (0.5, False)])
def test_stored_sinusoidal_positions_are_compared_with_ours(marian, tmp_path, capsys, shift, accepted):
    from attnviz.core.model.modules import sinusoidal_encoding

    def with_positions(state):
        table = sinusoidal_encoding(64, 16, layout="halves")  # the tiny model's max_position_embeddings x d_model
        state["model.encoder.embed_positions.weight"] = table + shift
        state["model.decoder.embed_positions.weight"] = table.clone()
        return state

    folder = with_weights(marian, tmp_path, with_positions)
    if accepted:
        assert main(["import-hf", str(folder), "--out", str(tmp_path / "out")]) == 0
        capsys.readouterr()
    else:
        assert "differs from the sinusoidal positions" in refused(capsys, folder, tmp_path / "out", folder, 1)


# -- 9: tracebacks that become one line ------------------------------------------------------------
def test_an_activation_given_as_a_list_is_one_line(marian, tmp_path, capsys):
    folder = with_weights(marian, tmp_path, dict, lambda hf: hf.update(activation_function=["swish"]))
    assert "activation ['swish'] is not supported" in refused(capsys, folder, tmp_path / "out", folder, 1)


@pytest.mark.parametrize("make, message", [
    (lambda t: t.to_sparse(), "is a sparse tensor"),
    (lambda t: t.to(torch.float8_e4m3fn), "holds torch.float8_e4m3fn"),
    (lambda t: torch.empty(t.shape, device="meta"), "not a PyTorch file of tensors|holds no values"),
])
def test_a_pickled_tensor_that_is_not_dense_numbers_is_one_line(marian, tmp_path, capsys, make, message):
    def change(state):
        state["model.shared.weight"] = make(state["model.shared.weight"])
        return state

    folder = with_weights(marian, tmp_path, change, pickled=True)
    err = refused(capsys, folder, tmp_path / "out", folder, 1)
    assert any(m in err for m in message.split("|")), err


def test_an_unreadable_source_spm_is_one_line(marian, tmp_path, capsys, monkeypatch):
    real_open = os.open

    def guarded(file, *args, **kw):
        if Path(os.fsdecode(file)).name == "source.spm":
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kw)

    monkeypatch.setattr(os, "open", guarded)
    assert "source.spm: permission denied" in refused(capsys, marian, tmp_path / "out", marian, 1)


def test_trace_write_meta_on_a_marian_folder_is_one_line(marian, capsys):
    before = snapshot(marian)
    assert main(["trace", "--model", str(marian), "--hsk-alignment", "--write-meta", "--limit", "2"]) == 2
    assert "is a Hugging Face folder, not an attnviz bundle" in one_line(capsys) and snapshot(marian) == before
