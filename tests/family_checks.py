"""Checks every Hugging Face family's test runs against ``transformers`` (the Marian tests' checks,
for any family): logits and every attention weight equal, greedy and beam decoding equal
``generate()``, a cached step equal to a full pass, the import's bundle the same model, the
trace holding exactly the names its schema documents, and hostile folders (a pickle that would run
code, cut or misshapen weights, foreign configs) refused in one line."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, Greedy
from attnviz.core.model.sites import attention_sites
from attnviz.core.model.trace import trace_names


def load_theirs(cls, folder: Path):
    """``transformers``' model ``cls`` from ``folder``, in eval mode, its attention computed eagerly (so it returns the weights)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls.from_pretrained(folder, attn_implementation="eager").eval()


def padded(rows: list[list[int]], pad: int) -> torch.Tensor:
    n = max(len(r) for r in rows)
    return torch.tensor([r + [pad] * (n - len(r)) for r in rows])


def check_logits_and_attention(ours, theirs, sources: list[str], fed=((5, 9, 12, 3, 7), (7, 7, 4, 6, 4)), weights_atol: float = 1e-5,
                               padded_queries: bool = False) -> None:
    """Two sources (the second padded), a fed target (BOS, then a row of ``fed``): logits within 1e-5, every attention weight
    within ``weights_atol`` (the encoder's queries at padding left out, unless ``padded_queries``)."""
    cfg = ours.model.config
    src = padded([ours.src_tokenizer.encode(s) for s in sources[:2]], cfg.pad_id)  # [2, Ls]
    tgt = torch.tensor([[cfg.bos_id, *row] for row in fed])
    with torch.no_grad():
        out = theirs(input_ids=src, attention_mask=(src != cfg.pad_id).long(), decoder_input_ids=tgt, output_attentions=True)
        for row in range(2):
            logits, trace = ours.model.run_with_trace(src, tgt, names=["*.weights"], batch_index=row)
            assert torch.allclose(logits[row], out.logits[row], atol=1e-5, rtol=0)
            their_weights = {"encoder": out.encoder_attentions, "decoder": out.decoder_attentions, "cross": out.cross_attentions}
            for site in attention_sites(cfg):
                theirs_site = their_weights[site.kind][site.layer][row].numpy()
                keys = theirs_site.shape[-1] if site.kind == "decoder" else int((src[row] != cfg.pad_id).sum())
                queries = keys if site.kind == "encoder" and not padded_queries else theirs_site.shape[-2]
                got = trace[site.name("weights")][..., :queries, :keys]
                assert np.allclose(got, theirs_site[..., :queries, :keys], atol=weights_atol, rtol=0), site.path


def their_generate(theirs, ids: list[int], pad: int, max_new: int, beams: int) -> list[int]:
    with torch.no_grad():
        out = theirs.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long), num_beams=beams, do_sample=False,
            length_penalty=0.0, early_stopping=False, max_new_tokens=max_new, min_length=0, bad_words_ids=[[pad]],
            forced_eos_token_id=None, forced_bos_token_id=None, no_repeat_ngram_size=0, repetition_penalty=1.0, num_return_sequences=1,
        )
    return out[0].tolist()


def check_generate(ours, theirs, sources: list[str], beams: int) -> None:
    """Our greedy (``beams`` 1) or beam search gives ``generate()``'s tokens for every source; they end at different lengths."""
    lengths = set()
    for text in sources:
        strategy = Greedy() if beams == 1 else BeamSearch(width=beams, length_penalty=0.0)
        session = DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, text, strategy=strategy, capture=False)
        session.run()
        expected = their_generate(theirs, list(session.source.ids), ours.model.config.pad_id, session.max_len, beams)
        assert list(session.tgt_ids) == expected, text
        lengths.add(len(expected))
    assert len(lengths) > 1


def check_cached_steps(ours, source: str, fed=(4, 9, 11, 5)) -> None:
    """Each cached decoder step over BOS and ``fed`` gives the full pass's logits within 1e-5."""
    model, cfg = ours.model, ours.model.config
    src = torch.tensor([ours.src_tokenizer.encode(source)])
    tgt = torch.tensor([[cfg.bos_id, *fed]])
    with torch.no_grad():
        full = model(src, tgt)[0]  # [Lt, V]
        cache = model.start_decoding(model.encode(src))
        for t in range(tgt.shape[1]):
            step, cache = model.decode_step(tgt[:, t], cache)
            assert torch.allclose(step[0], full[t], atol=1e-5, rtol=0)


def encoder_decoder_parity_tests(sources: list[str]):
    """The parity tests every encoder-decoder family's file runs on its ``family`` fixture ((kind, folder, ours, theirs)):
    ``test_logits_..., test_greedy_..., test_cached_... = encoder_decoder_parity_tests(SOURCES)`` there collects them under
    these names, for each of its kinds."""

    def test_logits_and_every_attention_equal_transformers(family):
        _, _, ours, theirs = family
        check_logits_and_attention(ours, theirs, sources)

    @pytest.mark.slow  # about 3 s each
    @pytest.mark.parametrize("beams", [1, 3])
    def test_greedy_and_beam_equal_generate(family, beams):
        _, _, ours, theirs = family
        check_generate(ours, theirs, sources, beams)

    def test_cached_steps_and_trace_names(family):
        _, _, ours, _ = family
        check_cached_steps(ours, sources[1])  # T5: the bias B of a step at position t is its row t
        check_trace_names(ours, sources[0])

    return test_logits_and_every_attention_equal_transformers, test_greedy_and_beam_equal_generate, test_cached_steps_and_trace_names


def check_trace_names(ours, source: str) -> None:
    cfg = ours.model.config
    src = torch.tensor([ours.src_tokenizer.encode(source)])
    with torch.no_grad():
        _, trace = ours.model.run_with_trace(src, torch.tensor([[cfg.bos_id, 4, 9]]))
    assert list(trace) == trace_names(cfg)


def check_bundle_round_trip(ours, folder, out, source: str) -> None:
    """``attnviz import-hf`` writes a bundle that opens as the same model (its float32 weights kept
exactly, as the checkpoint holds them) and tokenizers."""
    assert main(["import-hf", str(folder), "--out", str(out)]) == 0
    bundle = load_bundle(out)
    assert bundle.config == ours.model.config and bundle.meta["weights_precision"] == "float32"
    for name, tensor in ours.model.state_dict().items():
        assert torch.equal(bundle.model.state_dict()[name], tensor), name
    assert bundle.src_tokenizer.to_bytes() == ours.src_tokenizer.to_bytes()
    assert bundle.src_tokenizer.encode(source) == ours.src_tokenizer.encode(source)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``attnviz ARGV``; stderr is at most one line and never a traceback."""
    capsys.readouterr()  # not what the fixtures printed
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert err.count("\n") <= 1 and "Traceback" not in err, err
    return code, out, err


def refused_cli(capsys, *argv) -> tuple[int, str]:
    """(exit code, stderr) of ``attnviz ARGV``, which must refuse in one line and print nothing else."""
    code, out, err = run_cli(capsys, *argv)
    assert code != 0 and err.startswith("attnviz: error: ") and err.endswith("\n") and not out, (code, err)
    return code, err


def refused_on_tiny(capsys, tmp_path: Path, family: str, command: str, *args) -> str:
    """stderr of ``attnviz COMMAND --model FOLDER ARGS``, refused as ``refused_cli`` says; FOLDER a tiny random ``family``
    ("bert" or "gpt2") saved by ``transformers`` (the test skipped where it is not installed)."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")
    import tiny_families

    build = {"bert": tiny_families.build_bert, "gpt2": tiny_families.build_gpt2}[family]
    return refused_cli(capsys, command, "--model", build(tmp_path / family), *args)[1]


# -- hostile folders ------------------------------------------------------------------------------
class RunsCode:
    """A pickled object whose unpickling would run ``touch MARKER``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def copy_folder(folder: Path, to: Path, files: tuple[str, ...], weights: bool = True) -> Path:
    """``files`` of a Hugging Face folder (and its ``model.safetensors`` unless ``weights`` is false) copied to ``to``."""
    to.mkdir()
    for name in files + (("model.safetensors",) if weights else ()):
        (to / name).write_bytes((folder / name).read_bytes())
    return to


def refused_import(folder: Path, tmp_path: Path, capsys, message: str) -> str:
    """``attnviz import-hf FOLDER`` exits 1 with ``message`` in one line of stderr, no traceback, and writes no bundle; its stderr."""
    assert main(["import-hf", str(folder), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err and not (tmp_path / "out").exists(), err
    return err


def check_pickle_runs_nothing(folder: Path, tmp_path: Path, capsys, files: tuple[str, ...], weight: str) -> str:
    """A ``pytorch_model.bin`` (beside ``files``) holding tensor ``weight`` and a pickle that would run code is refused and runs nothing."""
    hostile = copy_folder(folder, tmp_path / "hostile", files, weights=False)
    marker = tmp_path / "ran"
    torch.save({weight: torch.zeros(2), "payload": RunsCode(marker)}, hostile / "pytorch_model.bin")
    err = refused_import(hostile, tmp_path, capsys, "pytorch_model.bin: refused")
    assert not marker.exists()
    return err


def check_hostile_weights_and_configs(folder: Path, tmp_path: Path, capsys, files: tuple[str, ...], weights=(), configs=()) -> Path:
    """Refused in one line each: ``model.safetensors`` cut in half; the checkpoint with each of ``weights``' (tensors, message)
    put in (one at a time); ``config.json`` with each of ``configs``' (fields, message) changed. The last folder: its config changed."""
    cut = copy_folder(folder, tmp_path / "cut", files)
    data = (cut / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(data[: len(data) // 2])
    refused_import(cut, tmp_path, capsys, "not a valid safetensors file")
    shapes = copy_folder(folder, tmp_path / "shapes", files)
    state = load_file(shapes / "model.safetensors")
    for tensors, message in weights:
        save_file({**state, **tensors}, shapes / "model.safetensors")
        refused_import(shapes, tmp_path, capsys, message)
    odd = copy_folder(folder, tmp_path / "odd", files)
    config = json.loads((odd / "config.json").read_text())
    for fields, message in configs:
        (odd / "config.json").write_text(json.dumps({**config, **fields}))
        refused_import(odd, tmp_path, capsys, message)
    return odd
