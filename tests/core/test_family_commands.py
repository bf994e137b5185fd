"""The commands on the families that are not encoder-decoder, through ``attnviz.cli.main``: a tiny random
GPT-2 (decoder-only) and BERT (encoder-only) saved by ``transformers`` (no network). Each run ends
with its exit code and at most one line on stderr, never a traceback; the numbers are checked
against ``transformers`` on the same folder: ``translate`` continues each prompt as ``generate()``
does, ``patch`` (a layer output, the map) and ``attribute`` read the prompt in the decoder as the
model does, ``trace --names`` lists what ``trace`` writes (BERT: its masked-token pass), and an
encoder-only model is refused by ``translate`` and ``evaluate`` in one line."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from family_checks import load_theirs, refused_cli, run_cli

from attnviz.cli import main
from attnviz.core.model.hf_import import FAMILIES

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import SOURCES, build_bert, build_gpt2  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # tiny transformers models built and compared: make test runs them, the fast loop does not

PROMPTS = [*SOURCES, "park we", "park sun", "sun we"]  # the last three of one length: decoded in one batch
CLEAN, OTHER = "the cat sat", "the dog sat"  # prompts of the same number of tokens, one token apart


def _gpt2(folder, end_boost: float = 1.0):
    """(folder, theirs, their tokenizer) of a tiny GPT-2; ``end_boost`` scales the embedding of
    ``<|endoftext|>`` (tied to the output layer) and saves the model again."""
    theirs = load_theirs(transformers.GPT2LMHeadModel, build_gpt2(folder))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = transformers.GPT2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
        if end_boost != 1.0:
            with torch.no_grad():
                theirs.transformer.wte.weight[tok.eos_token_id] *= end_boost
            theirs.save_pretrained(folder)
    return folder, theirs, tok


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return _gpt2(tmp_path_factory.mktemp("hf") / "tiny-gpt2")


@pytest.fixture(scope="module")
def gpt2_ending(tmp_path_factory):
    """A tiny GPT-2 that ends some continuations (with ``<|endoftext|>``) and not others."""
    return _gpt2(tmp_path_factory.mktemp("hf") / "tiny-gpt2-ending", end_boost=1.5)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """(folder, theirs, their tokenizer) of a tiny BERT."""
    folder = build_bert(tmp_path_factory.mktemp("hf") / "tiny-bert")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = transformers.BertTokenizer(str(folder / "vocab.txt"))
    return folder, load_theirs(transformers.BertForMaskedLM, folder), tok


def _prompt(tok, text: str) -> list[int]:
    """``<|endoftext|>`` and the prompt's ids, by ``transformers``' tokenizer."""
    return [tok.eos_token_id, *tok(text)["input_ids"]]


def _generate(theirs, ids: list[int], max_new: int) -> list[int]:
    with torch.no_grad():
        out = theirs.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long), do_sample=False, num_beams=1,
            max_new_tokens=max_new, min_length=0, pad_token_id=ids[0], no_repeat_ngram_size=0, repetition_penalty=1.0,
        )
    return out[0].tolist()


def _log_probs(theirs, fed: list[int]) -> torch.Tensor:
    """``[position, vocab]`` log P of ``transformers``' pass over ``fed``, float64."""
    with torch.no_grad():
        return torch.log_softmax(theirs(torch.tensor([fed])).logits[0].double(), -1)


def _scored(theirs, prompt: list[int], target: list[int]) -> np.ndarray:
    """log P of each target token after ``prompt`` (SOS + prompt + target[:-1] fed)."""
    logp = _log_probs(theirs, prompt + target[:-1])
    return np.array([float(logp[len(prompt) - 1 + t, y]) for t, y in enumerate(target)])


# -- 1. translate continues the prompt ---------------------------------------------------------------
@pytest.mark.parametrize(("model", "max_new"), [("gpt2", None), ("gpt2", 12), ("gpt2_ending", None)])
def test_greedy_translate_continues_every_prompt_as_generate(request, capsys, model, max_new):
    folder, theirs, tok = request.getfixturevalue(model)
    limit = [] if max_new is None else ["--max-len", str(max_new)]
    code, out, _ = run_cli(capsys, "translate", "--model", str(folder), "--json", *limit, *PROMPTS)
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == len(PROMPTS)
    ends = set()
    for text, row in zip(PROMPTS, rows):
        prompt = _prompt(tok, text)
        n = len(prompt) - 1
        new = max_new if max_new is not None else min(theirs.config.n_positions, 2 * n + 10) - n  # the session's default: 2 x prompt + 10 in all
        expected = _generate(theirs, prompt, new)
        assert row["source_ids"] == prompt[1:] and row["ids"] == expected[1:], text
        assert row["translation"] == tok.decode(expected[1:], skip_special_tokens=True), text
        assert row["finished"] == (expected[-1] == tok.eos_token_id) and len(row["steps"]) == len(expected) - 1
        ends.add((row["finished"], len(expected) - len(prompt)))
    if max_new is None:
        assert len({length for _, length in ends}) > 1  # continuations of different lengths
    if model == "gpt2_ending":
        assert {finished for finished, _ in ends} == {True, False}  # some end with <|endoftext|>, in one batch too


def test_greedy_translate_prints_what_beam_one_and_the_window_print(gpt2, capsys):
    folder, _, _ = gpt2
    code, greedy, _ = run_cli(capsys, "translate", "--model", str(folder), *PROMPTS)
    assert code == 0
    code, beam, _ = run_cli(capsys, "translate", "--model", str(folder), "--beam", "1", *PROMPTS)
    assert code == 0 and greedy == beam and len(greedy.splitlines()) == len(PROMPTS)
    assert all(line.startswith(text) for line, text in zip(greedy.splitlines(), PROMPTS))  # the prompt, then its continuation


def test_a_prompt_of_the_positions_after_sos_is_continued_and_a_longer_one_refused(gpt2, capsys):
    folder, theirs, tok = gpt2
    most = theirs.config.n_positions - 1  # SOS takes a position
    text = "x" * most
    prompt = _prompt(tok, text)
    assert len(prompt) == most + 1
    code, out, _ = run_cli(capsys, "translate", "--model", str(folder), "--json", text)
    assert code == 0 and json.loads(out)["ids"] == _generate(theirs, prompt, 1)[1:]  # room for one token
    _, err = refused_cli(capsys, "translate", "--model", str(folder), text + "x")
    assert f"input 1 is {most + 1} tokens long; this model reads at most {most} after SOS" in err


# -- 2. translate refuses an encoder-only model ------------------------------------------------------
@pytest.mark.parametrize("options", [[], ["--beam", "3"], ["--sample"], ["--json"]])
def test_translate_refuses_an_encoder_only_model_in_one_line(bert, capsys, options):
    folder, _, _ = bert
    code, err = refused_cli(capsys, "translate", "--model", str(folder), *options, "the cat sat")
    assert code == 1 and "an encoder-only model" in err and "does not decode" in err


def test_evaluate_on_files_refuses_an_encoder_only_model_in_one_line(bert, capsys, tmp_path):
    folder, _, _ = bert
    (tmp_path / "pairs.tsv").write_text("the cat\tthe cat sat\n", encoding="utf-8")
    code, err = refused_cli(capsys, "evaluate", "--model", str(folder), "--tsv", str(tmp_path / "pairs.tsv"), "--splits", "")
    assert code == 1 and "an encoder-only model" in err and "does not decode" in err


# -- 3. trace --names lists what trace writes ------------------------------------------------------
def _names(capsys, folder) -> list[str]:
    code, out, _ = run_cli(capsys, "trace", "--model", str(folder), "--names")
    assert code == 0
    return [line.split()[0] for line in out.splitlines()]


def _trace_names(arrays) -> set[str]:
    return {k for k in arrays.files if not k.startswith(("tokens.", "steps.", "beams.", "analysis."))}


def test_bert_trace_writes_every_name_it_lists_from_its_masked_token_pass(bert, capsys, tmp_path):
    folder, theirs, tok = bert
    names = _names(capsys, folder)
    assert "generator.logits" in names and not [n for n in names if n.startswith("decoder.")]
    text = "the cat [MASK] on the mat"
    code, out, _ = run_cli(capsys, "trace", "--model", str(folder), "--src", text, "--out", str(tmp_path / "t.npz"), "--json")
    assert code == 0
    arrays, summary = np.load(tmp_path / "t.npz"), json.loads(out)
    assert _trace_names(arrays) == set(names)
    ids = tok(text)["input_ids"]
    with torch.no_grad():
        logits = theirs(torch.tensor([ids])).logits[0]
    assert list(arrays["tokens.src_ids"]) == ids
    assert np.allclose(arrays["generator.logits"], logits.numpy(), atol=1e-5, rtol=0)
    (masked,) = summary["masked"]
    assert masked["index"] == ids.index(tok.mask_token_id) and masked["topk"][0][1] == int(logits[masked["index"]].argmax())


@pytest.mark.parametrize("options", [["--tgt", "the cat"], ["--strategy", "beam:2"], ["--max-len", "3"]])
def test_bert_trace_refuses_what_only_decoding_has_in_one_line(bert, capsys, options):
    folder, _, _ = bert
    code, err = refused_cli(capsys, "trace", "--model", str(folder), "--src", "the [MASK] sat", "--json", *options)
    assert code == 2 and options[0] in err and "encoder-only" in err


def test_gpt2_trace_writes_every_name_it_lists(gpt2, capsys, tmp_path):
    folder, _, _ = gpt2
    names = _names(capsys, folder)
    code, _, _ = run_cli(capsys, "trace", "--model", str(folder), "--src", CLEAN, "--max-len", "3", "--out", str(tmp_path / "t.npz"))
    assert code == 0 and _trace_names(np.load(tmp_path / "t.npz")) == set(names)


# -- 4. import-hf --help names every family ----------------------------------------------------------
def test_import_hf_help_names_every_family_and_its_files(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no line breaks inside a name
    with pytest.raises(SystemExit) as stop:
        main(["import-hf", "--help"])
    out, err = capsys.readouterr()
    assert stop.value.code == 0 and not err
    for family in FAMILIES:
        assert family.name in out, family.name
        assert all(name in out for name in family.files), family.name


# -- 5. patch and attribute read a decoder-only model's prompt ---------------------------------------
def _continuation(theirs, tok, text: str) -> list[int]:
    """The greedy continuation of ``text`` (its default length) by ``generate()``."""
    prompt = _prompt(tok, text)
    n = len(prompt) - 1
    return _generate(theirs, prompt, min(theirs.config.n_positions, 2 * n + 10) - n)[len(prompt):]


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_patching_a_layer_output_of_gpt2_gives_the_other_prompts_run(gpt2, capsys, layer):
    folder, theirs, tok = gpt2
    code, out, _ = run_cli(capsys, "patch", "--model", str(folder), "--src", CLEAN, "--other", OTHER, "--site", f"decoder:{layer}", "--json")
    assert code == 0
    report = json.loads(out)
    clean, other = _prompt(tok, CLEAN), _prompt(tok, OTHER)
    target = _continuation(theirs, tok, CLEAN)
    assert report["target_ids"] == target and report["source_pieces"] == tok.convert_ids_to_tokens(clean[1:])
    want_clean, want_other = _scored(theirs, clean, target), _scored(theirs, other, target)
    assert np.allclose(report["log_prob_clean"], want_clean, atol=1e-5, rtol=0)
    assert np.allclose(report["log_prob_other"], want_other, atol=1e-5, rtol=0)
    assert np.abs(want_clean - want_other).max() > 1e-3  # the prompts make a difference
    # the whole residual stream after the layer (the embeddings: layer 0) taken from the other run is that run
    assert np.allclose(report["log_prob_patched"], want_other, atol=1e-5, rtol=0)
    assert report["patched_ids"] == clean[1:] + _continuation(theirs, tok, OTHER)


def _hooked_log_prob(theirs, fed: list[int], module, values: torch.Tensor, position: int, row: int, token: int) -> float:
    """log P(token) at fed row ``row`` with ``module``'s output at ``position`` replaced by ``values[position]``."""
    def patch(_, __, output):
        hidden = output[0] if isinstance(output, tuple) else output
        hidden = hidden.clone()
        hidden[0, position] = values[position]
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

    handle = module.register_forward_hook(patch)
    try:
        return float(_log_probs(theirs, fed)[row, token])
    finally:
        handle.remove()


def _outputs(theirs, fed: list[int], modules) -> list[torch.Tensor]:
    """Each of ``modules``' output ``[position, d]`` in ``transformers``' pass over ``fed``."""
    got = []
    handles = [m.register_forward_hook(lambda _, __, out: got.append((out[0] if isinstance(out, tuple) else out)[0].clone())) for m in modules]
    try:
        _log_probs(theirs, fed)
    finally:
        for h in handles:
            h.remove()
    return got


def test_the_patching_map_of_gpt2_equals_patching_transformers(gpt2, capsys, tmp_path):
    folder, theirs, tok = gpt2
    code, out, _ = run_cli(capsys, "patch", "--model", str(folder), "--src", CLEAN, "--other", OTHER, "--map", "--json")
    assert code == 0
    result = json.loads(out)
    clean, other = _prompt(tok, CLEAN), _prompt(tok, OTHER)
    target = result["target_ids"]
    assert target == _continuation(theirs, tok, CLEAN) and result["encoder"]["log_prob"] == []
    modules = [theirs.transformer.drop, *theirs.transformer.h]  # the embeddings (wte + wpe), then each block's output
    assert result["decoder"]["layers"] == ["decoder embeddings", *(f"decoder {i}" for i in range(1, len(modules)))]
    t = result["target_position"] - 1
    row, token = len(clean) - 1 + t, target[t]
    clean_values = _outputs(theirs, clean + target[:-1], modules)
    got = np.array(result["decoder"]["log_prob"])
    assert got.shape == (len(modules), len(clean) - 1 + len(target))
    for layer, module in enumerate(modules):
        want = [_hooked_log_prob(theirs, other + target[:-1], module, clean_values[layer], p, row, token) for p in range(got.shape[1])]
        assert np.allclose(got[layer], want, atol=1e-5, rtol=0), layer
    assert abs(result["log_prob_corrupt"] - _scored(theirs, other, target)[t]) < 1e-5
    changed = clean.index(next(a for a, b in zip(clean, other) if a != b))  # the fed position whose token differs
    assert abs(got[0, changed] - result["log_prob_clean"]) < 1e-5  # its embedding alone restores the clean run
    code, _, _ = run_cli(capsys, "patch", "--model", str(folder), "--src", CLEAN, "--other", OTHER, "--map", "--out", str(tmp_path / "m.csv"))
    assert code == 0 and "decoder embeddings" in (tmp_path / "m.csv").read_text()


@pytest.mark.parametrize(("argv", "why"), [
    (["--site", "encoder:1"], "a decoder-only model has no encoder"),
    (["--site", "encoder.output"], "a site is"),
    (["--site", "decoder:3"], "no decoder layer 3: the model has 2"),
    (["--site", "decoder:1", "--other", "a cat"], "prompts of the same number of tokens: 4 and 2"),
    (["--map", "--other", "a cat"], "the same number of tokens: 4 and 2"),
])
def test_patch_refuses_what_a_decoder_only_model_has_not_in_one_line(gpt2, capsys, argv, why):
    folder, _, _ = gpt2
    other = [] if "--other" in argv else ["--other", OTHER]
    code, err = refused_cli(capsys, "patch", "--model", str(folder), "--src", CLEAN, *other, *argv)
    assert code == 2 and why in err, err


def test_attribution_of_gpt2_is_over_the_prompt_as_transformers_gradients_and_occlusion_give(gpt2, capsys, tmp_path):
    folder, theirs, tok = gpt2
    code, _, _ = run_cli(capsys, "attribute", "--model", str(folder), "--src", CLEAN, "--method", "all", "--out", str(tmp_path / "a.npz"))
    assert code == 0
    got = np.load(tmp_path / "a.npz")
    prompt, target = _prompt(tok, CLEAN), _continuation(theirs, tok, CLEAN)
    t = int(got["position"]) - 1
    assert list(got["source_ids"]) == prompt[1:] and list(got["target_ids"]) == target and t == len(target) - 1 - (target[-1] == tok.eos_token_id)
    fed, row, n = prompt + target[:-1], len(prompt) - 1 + t, len(prompt) - 1
    embeddings = theirs.transformer.wte(torch.tensor([fed])).detach().requires_grad_(True)
    f = torch.log_softmax(theirs(inputs_embeds=embeddings).logits[0, row].double(), -1)[target[t]]
    (grad,) = torch.autograd.grad(f, embeddings)
    value = float(f.detach())
    assert abs(float(got["grad_value"]) - value) < 1e-5
    assert np.allclose(got["grad"], (grad[0] * embeddings[0]).sum(-1).detach().numpy()[1:1 + n], atol=1e-5, rtol=0)
    left_out = [float(_log_probs(theirs, prompt[:1 + i] + prompt[2 + i:] + target[:-1])[row - 1, target[t]]) for i in range(n)]
    assert np.allclose(got["occlusion"], value - np.array(left_out), atol=1e-5, rtol=0)
    with torch.no_grad():
        zero = embeddings.detach().clone()
        zero[0, 1:1 + n] = 0.0  # integrated gradients' baseline: the prompt's embeddings zero, positions kept
        baseline = float(torch.log_softmax(theirs(inputs_embeds=zero).logits[0, row].double(), -1)[target[t]])
    assert abs(float(got["ig_baseline"]) - baseline) < 1e-5
    assert abs(got["ig"].sum() - (value - baseline)) <= 0.01 * abs(value - baseline) + 1e-6  # completeness
