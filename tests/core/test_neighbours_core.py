"""Nearest training sentences: a training pair's own step finds itself first (similarity ~1), the k
found are the k most similar by a cosine computed here with numpy, in that order; the index is
kept in the cache folder and read back without pickle, and a damaged or foreign file is built
again with one line; the command answers in JSON and refuses an encoder-only model in one line."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from attnviz.cli import main
from attnviz.core.analysis.neighbours import (
    build_index,
    cached_index,
    fed_rows,
    index_path,
    marked_text,
    neighbours_of,
    step_state,
)
from attnviz.core.bundle import load_bundle, save_bundle
from attnviz.core.data.corpora import Pair

from tiny_models import EN, ZH, random_model, tokenizers

PAIRS = [Pair(z, e, f"p{i}") for i, (z, e) in enumerate(zip(ZH, EN))]
HASH = "ab" * 32


@pytest.fixture(scope="module")
def model():
    return random_model()


@pytest.fixture(scope="module")
def index(model):
    src, tgt = tokenizers()
    return build_index(model, src, tgt, PAIRS, HASH, batch_rows=3)  # batches of 3: padded rows


def test_a_training_step_finds_itself_first(model, index):
    src, tgt = tokenizers()
    pair, row = PAIRS[4], 3
    fed = fed_rows(model.config, src, tgt, pair.src, pair.tgt)
    found = neighbours_of(index, model, src, tgt, fed.src, fed.fed, fed.next, row, k=5)
    first = found.neighbours[0]
    assert (first.pair_id, first.position) == ("p4", row)
    assert first.similarity == pytest.approx(1.0, abs=2e-3)  # float16 states: distance ~0
    assert first.next_piece == tgt.piece(fed.next[row]) and found.next_piece == first.next_piece
    assert first.marked() == marked_text(fed.pieces, row) and "\u27e6" in first.marked()


def test_a_state_is_the_decoder_output_before_the_output_layer(model):
    import torch

    src, tgt = tokenizers()
    fed = fed_rows(model.config, src, tgt, ZH[1], EN[1])
    with torch.inference_mode():
        _, trace = model.run_with_trace(torch.tensor([fed.src]), torch.tensor([fed.fed]), names=["decoder.output"])
    np.testing.assert_allclose(step_state(model, fed.src, fed.fed, 2), trace["decoder.output"][2], atol=1e-6)


def test_the_k_found_are_the_most_similar_in_order(model, index):
    src, tgt = tokenizers()
    fed = fed_rows(model.config, src, tgt, "我喜欢他。", "I like him.")  # not a training pair
    state = step_state(model, fed.src, fed.fed, 2)
    states = index.states.astype(np.float64)
    cosine = states @ state / (np.linalg.norm(states, axis=1) * np.linalg.norm(state))
    want = np.argsort(-cosine, kind="stable")[:5]
    found = index.nearest(state, 5)
    assert [i for i, _ in found] == list(want)
    sims = [s for _, s in found]
    assert sims == sorted(sims, reverse=True)
    np.testing.assert_allclose(sims, cosine[want], atol=1e-5)
    assert len(index.states) == sum(len(tgt.encode(p.tgt)) + 1 for p in PAIRS)  # every decoder row of every pair


def test_the_index_is_kept_and_read_back_and_a_bad_file_is_built_again(tmp_path, model, index):
    built = []

    def build():
        built.append(1)
        return index

    d = model.config.d_model
    got, notice = cached_index(tmp_path, HASH, index.asked, d, build)
    path = index_path(tmp_path, HASH)
    assert path.is_file() and "built" in notice and len(built) == 1
    got, notice = cached_index(tmp_path, HASH, index.asked, d, build)
    assert "read" in notice and len(built) == 1
    np.testing.assert_array_equal(got.states, index.states)
    assert list(got.pair_ids) == [p.id for p in PAIRS] and list(got.sources) == ZH
    for bad, word in ((b"not a zip file", "damaged"), (_pickled_npz(index), "damaged (ValueError)"), (_foreign(index), "another model")):
        path.write_bytes(bad)
        got, notice = cached_index(tmp_path, HASH, index.asked, d, build)
        assert word in notice and "\n" not in notice and got is index
    assert len(built) == 4
    assert "built" in cached_index(tmp_path, HASH, index.asked + 1, d, build)[1]  # another size


def _pickled_npz(index) -> bytes:
    """The index's file with its states as Python objects (loading them would unpickle): never loaded."""
    with np.load(io.BytesIO(index.to_bytes())) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["states"] = np.array([object()] * len(index.states), dtype=object)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _foreign(index) -> bytes:
    from dataclasses import replace

    return replace(index, model_hash="cd" * 32).to_bytes()


def test_the_command_finds_a_training_sentence_itself(tmp_path, capsys, model):
    src, tgt = tokenizers()
    tsv = tmp_path / "train.tsv"
    tsv.write_text("".join(f"{p.src}\t{p.tgt}\n" for p in PAIRS), encoding="utf-8")
    folder = save_bundle(tmp_path / "tiny", model, src, tgt, {"name": "tiny", "data": {"spec": {"kind": "tsv", "path": str(tsv)}}})
    from attnviz.core.data.corpora import load_tsv

    train = load_tsv(tsv).train[0]
    cache = tmp_path / "cache"
    args = ["neighbours", "--model", str(folder), "--src", train.src, "--tgt", train.tgt, "--position", "3", "--cache-dir", str(cache), "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "index built" in captured.err and captured.err.count("\n") == 1 and list(cache.glob("*.npz"))
    first = out["neighbours"][0]
    assert (first["source"], first["position"]) == (train.src, 3) and first["similarity"] == pytest.approx(1.0, abs=2e-3)
    sims = [n["similarity"] for n in out["neighbours"]]
    assert len(sims) == 5 and sims == sorted(sims, reverse=True)
    assert main(args) == 0 and "index read" in capsys.readouterr().err
    saved = load_bundle(folder)
    fed = fed_rows(saved.config, saved.src_tokenizer, saved.tgt_tokenizer, train.src, train.tgt)
    assert out["next"] == saved.tgt_tokenizer.piece(fed.next[2])


@pytest.mark.slow
def test_an_encoder_only_model_is_refused_in_one_line(tmp_path, capsys):
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    from tiny_families import build_bert

    folder = build_bert(tmp_path / "bert")
    capsys.readouterr()
    assert main(["neighbours", "--model", str(folder), "--src", "the cat runs", "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnviz: error: ") and err.count("\n") == 1 and "no decoder" in err
    assert not (tmp_path / "c").exists()
