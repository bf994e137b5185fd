"""Checks every Hugging Face family's test runs against ``transformers`` (the Marian tests' checks,
for any family): logits and every attention weight equal, greedy and beam decoding equal
``generate()``, a cached step equal to a full pass, the import's bundle the same model, and the
trace holding exactly the names its schema documents."""

from __future__ import annotations

import numpy as np
import torch

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, Greedy
from attnviz.core.model.sites import attention_sites
from attnviz.core.model.trace import trace_names


def padded(rows: list[list[int]], pad: int) -> torch.Tensor:
    n = max(len(r) for r in rows)
    return torch.tensor([r + [pad] * (n - len(r)) for r in rows])


def check_logits_and_attention(ours, theirs, sources: list[str]) -> None:
    """Two sources (the second padded), a fed target: logits within 1e-5, every attention weight within 1e-5."""
    cfg = ours.model.config
    src = padded([ours.src_tokenizer.encode(s) for s in sources[:2]], cfg.pad_id)  # [2, Ls]
    tgt = torch.tensor([[cfg.bos_id, 5, 9, 12, 3, 7], [cfg.bos_id, 7, 7, 4, 6, 4]])
    with torch.no_grad():
        out = theirs(input_ids=src, attention_mask=(src != cfg.pad_id).long(), decoder_input_ids=tgt, output_attentions=True)
        for row in range(2):
            logits, trace = ours.model.run_with_trace(src, tgt, names=["*.weights"], batch_index=row)
            assert torch.allclose(logits[row], out.logits[row], atol=1e-5, rtol=0)
            their_weights = {"encoder": out.encoder_attentions, "decoder": out.decoder_attentions, "cross": out.cross_attentions}
            for site in attention_sites(cfg):
                theirs_site = their_weights[site.kind][site.layer][row].numpy()
                keys = theirs_site.shape[-1] if site.kind == "decoder" else int((src[row] != cfg.pad_id).sum())
                queries = keys if site.kind == "encoder" else theirs_site.shape[-2]
                got = trace[site.name("weights")][..., :queries, :keys]
                assert np.allclose(got, theirs_site[..., :queries, :keys], atol=1e-5, rtol=0), site.path


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


def check_cached_steps(ours, source: str) -> None:
    model, cfg = ours.model, ours.model.config
    src = torch.tensor([ours.src_tokenizer.encode(source)])
    tgt = torch.tensor([[cfg.bos_id, 4, 9, 11, 5]])
    with torch.no_grad():
        full = model(src, tgt)[0]  # [Lt, V]
        cache = model.start_decoding(model.encode(src))
        for t in range(tgt.shape[1]):
            step, cache = model.decode_step(tgt[:, t], cache)
            assert torch.allclose(step[0], full[t], atol=1e-5, rtol=0)


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
