"""GPT-2 folders from Hugging Face: a tiny random ``GPT2LMHeadModel`` saved by ``transformers`` (no
network) opens as a decoder-only ``Transformer`` (no encoder, no cross-attention; Conv1D weights
transposed, Q/K/V split) with the same logits and attention weights; a decoding session continues
a prompt as ``generate()`` does (greedy and beam), its prompt fed in one decoder pass that equals
feeding it a step per token (traces, logits, continuations, with interventions); the byte-level BPE gives ``GPT2Tokenizer``'s ids;
hostile folders give one line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from family_checks import check_bundle_round_trip, check_hostile_weights_and_configs, check_pickle_runs_nothing, load_theirs
from safetensors.torch import load_file

from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, DecodingError, Greedy
from attnviz.core.decoding.teacher_forcing import teacher_forced
from attnviz.core.model.config import TransformerConfig
from attnviz.core.model.hf_import import read_hf_folder
from attnviz.core.model.interventions import Patch, ZeroHeads
from attnviz.core.model.sites import AttentionSite, attention_sites
from attnviz.core.model.trace import Recorder, trace_names
from attnviz.core.model.transformer import Transformer

from tiny_models import tokenizers

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

from tiny_families import SOURCES, build_gpt2  # noqa: E402  (needs transformers)

pytestmark = pytest.mark.slow  # tiny transformers models built and compared: make test runs them, the fast loop does not


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """(folder, ours, theirs) of a tiny GPT-2."""
    folder = build_gpt2(tmp_path_factory.mktemp("hf") / "tiny-gpt2")
    return folder, read_hf_folder(folder), load_theirs(transformers.GPT2LMHeadModel, folder)


def _prompt(ours, text: str) -> list[int]:
    return [ours.model.config.bos_id, *ours.src_tokenizer.encode(text)]


def test_config_is_decoder_only(family):
    _, ours, _ = family
    cfg, model = ours.model.config, ours.model
    assert (cfg.kind, cfg.n_encoder_layers, cfg.cross_attention) == ("decoder-only", 0, False)
    assert (cfg.positional, cfg.norm_placement, cfg.final_norm, cfg.activation, cfg.scale_embedding) == ("learned", "pre", True, "gelu_tanh", False)
    assert cfg.pad_id == cfg.unk_id == cfg.bos_id == cfg.eos_id == cfg.tgt_vocab_size - 1  # <|endoftext|>
    assert model.encoder is None and all(layer.cross_attn is None for layer in model.decoder.layers)
    assert model.generator.weight is model.decoder.embed.table.weight
    assert "decoder-only: no encoder, no cross-attention" in cfg.describe() and ours.meta["family"] == "GPT-2"


def test_conv1d_weights_are_transposed_and_qkv_split(family):
    folder, ours, _ = family
    stored = load_file(folder / "model.safetensors")
    c_attn = stored["transformer.h.1.attn.c_attn.weight"]  # [d, 3d]: x W
    attn = ours.model.decoder.layers[1].self_attn
    for part, lin in zip(c_attn.split(16, dim=1), (attn.w_q, attn.w_k, attn.w_v)):
        assert torch.equal(lin.weight.detach(), part.t())
    assert torch.equal(ours.model.decoder.embed.pe.detach(), stored["transformer.wpe.weight"])


def test_logits_and_every_attention_equal_transformers(family):
    _, ours, theirs = family
    ids = torch.tensor([_prompt(ours, "the cat sat on the mat")[:8], _prompt(ours, "we read the park at night")[:8]])
    empty = torch.zeros(2, 0, dtype=torch.long)  # a decoder-only model reads no source
    with torch.no_grad():
        out = theirs(ids, output_attentions=True)
        for row in range(2):
            logits, trace = ours.model.run_with_trace(empty, ids, names=["*.weights"], batch_index=row)
            assert torch.allclose(logits[row], out.logits[row], atol=1e-5, rtol=0)
            sites = attention_sites(ours.model.config)
            assert [s.kind for s in sites] == ["decoder", "decoder"]
            for site in sites:
                assert np.allclose(trace[site.name("weights")], out.attentions[site.layer][row].numpy(), atol=1e-5, rtol=0), site.path


def test_trace_names_have_no_encoder_and_no_cross_attention(family):
    _, ours, _ = family
    cfg = ours.model.config
    with torch.no_grad():
        _, trace = ours.model.run_with_trace(torch.zeros(1, 0, dtype=torch.long), torch.tensor([_prompt(ours, "the cat")]))
    assert list(trace) == trace_names(cfg)
    assert not [n for n in trace if n.startswith(("encoder.", "masks.src")) or "cross_attn" in n]
    assert "decoder.layers.0.residual2" in trace and "decoder.layers.0.norm3.input" not in trace  # the FFN is sublayer 2


def _generate(theirs, ids: list[int], max_new: int, beams: int) -> list[int]:
    with torch.no_grad():
        out = theirs.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long), num_beams=beams, do_sample=False, length_penalty=0.0,
            early_stopping=False, max_new_tokens=max_new, min_length=0, pad_token_id=ids[0], no_repeat_ngram_size=0, repetition_penalty=1.0,
        )
    return out[0].tolist()


@pytest.mark.slow  # about 3 s each
@pytest.mark.parametrize("beams", [1, 3])
def test_greedy_and_beam_continue_a_prompt_as_generate(family, beams):
    _, ours, theirs = family
    lengths = set()
    for text in SOURCES:
        strategy = Greedy() if beams == 1 else BeamSearch(width=beams, length_penalty=0.0)
        session = DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, text, strategy=strategy, capture=False)
        session.run()
        prompt = _prompt(ours, text)
        expected = _generate(theirs, prompt, session.max_len - (len(prompt) - 1), beams)
        assert list(session.tgt_ids) == expected, text
        lengths.add(len(expected) - len(prompt))
    assert len(lengths) > 1


def test_the_prompt_is_fed_first_and_kept_by_back_and_reset(family):
    _, ours, _ = family
    session = DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, "the cat sat", max_len=3)
    prompt = _prompt(ours, "the cat sat")
    assert list(session.tgt_ids) == prompt and session.n_steps == len(prompt) - 1 and not session.can_back
    assert len(session.encoder_trace) == 0  # no encoder ran
    with pytest.raises(DecodingError, match="nothing to undo"):
        session.back()
    session.step()
    weights = session.attention("decoder", 1)  # [head, rows, rows]: SOS, the prompt, the first continuation
    assert weights.shape == (4, len(prompt), len(prompt)) and np.allclose(np.triu(weights[0], 1), 0)
    session.back()
    assert list(session.tgt_ids) == prompt
    session.run()
    assert len(session.tgt_ids) - len(prompt) <= 3  # max_len counts the continuation
    session.reset()
    assert list(session.tgt_ids) == prompt


def test_teacher_forcing_feeds_the_prompt_then_the_target(family):
    _, ours, theirs = family
    forced = teacher_forced(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, "the cat", "sat on")
    ids = _prompt(ours, "the cat") + ours.tgt_tokenizer.encode("sat on")
    assert forced.input_ids == tuple(ids)
    with torch.no_grad():
        logits = theirs(torch.tensor([ids])).logits[0]
    assert abs(forced.steps[-2].prob - float(torch.softmax(logits[-2], -1)[ids[-1]])) < 1e-5


def test_tokenizer_equals_gpt2_tokenizer(family):
    folder, ours, _ = family
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.GPT2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    for text in SOURCES + ["the zebra 猫 sat!", "  two  spaces", "it's 42"]:
        assert ours.src_tokenizer.encode(text) == theirs(text)["input_ids"], text
        assert ours.tgt_tokenizer.decode(ours.tgt_tokenizer.encode(text)) == text


def test_import_hf_writes_a_bundle_of_the_same_model(family, tmp_path):
    folder, ours, _ = family
    check_bundle_round_trip(ours, folder, tmp_path / "bundle", SOURCES[0])


# -- a long prompt in one pass ----------------------------------------------------------------------
LONG_PROMPT = "the cat sat on the mat and the dog runs in the park at night"


def _same(a, b) -> bool:
    """Equal within 1e-5, infinities in the same places."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    inf = np.isinf(a)
    return a.shape == b.shape and np.array_equal(inf, np.isinf(b)) and np.array_equal(a[inf], b[inf]) and np.allclose(a[~inf], b[~inf], atol=1e-5, rtol=0)


def _steps_one_by_one(model, fed: list[int], interventions=()) -> list:
    """(trace, logits) of each cached decoder step over ``fed``, one position at a time: how the prompt used to be fed."""
    cache = model.start_decoding(model.encode(torch.zeros(1, 0, dtype=torch.long)))
    out = []
    with torch.no_grad():
        for token in fed:
            rec = Recorder(None, 0, interventions)
            logits, cache = model.decode_step(torch.tensor([token]), cache, rec)
            out.append((rec.trace(), logits[0]))
    return out


def _fed_token_by_token(ours, prompt: list[int], max_len: int, **kw) -> DecodingSession:
    """A session whose prompt (but its first token) is fed by ``force``, one step per token."""
    first = ours.src_tokenizer.decode(prompt[1:2])
    assert ours.src_tokenizer.encode(first) == prompt[1:2]
    session = DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, first, max_len=max_len + len(prompt) - 2, **kw)
    for token in prompt[2:]:
        session.force(token)
    return session


def _patch_of_a_longer_run(ours) -> Patch:
    """Layer 0's self-attention Z_i from a full pass over 40 other positions."""
    other = _prompt(ours, "we read books at night " * 8)[:40]
    with torch.no_grad():
        trace = ours.model.run_with_trace(torch.zeros(1, 0, dtype=torch.long), torch.tensor([other]), names=["*.z"])[1]
    return Patch.from_trace(trace, "decoder.layers.0.self_attn.z")[0]


@pytest.mark.parametrize("change", ["none", "zero heads", "patch"])
def test_a_long_prompt_in_one_pass_equals_feeding_it_step_by_step(family, change):
    _, ours, theirs = family
    prompt = _prompt(ours, LONG_PROMPT)
    assert 25 <= len(prompt) <= 35
    changes = {"none": (), "zero heads": (ZeroHeads(AttentionSite("decoder", 1), (0, 2)),), "patch": (_patch_of_a_longer_run(ours),)}[change]
    session = DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, LONG_PROMPT, max_len=8, interventions=changes)
    reference = _steps_one_by_one(ours.model, prompt[:-1], changes)
    assert session.n_steps == len(reference) == len(prompt) - 1 and [s.forced for s in session.steps] == [True] * len(reference)
    for step, (trace, logits) in zip(session.steps, reference):
        assert list(step.trace) == list(trace) == trace_names(ours.model.config, encoder=False)
        for name in trace:
            assert _same(step.trace[name], trace[name]), (step.index, name)
        assert abs(step.prob - float(torch.softmax(logits, -1)[step.token_id])) < 1e-5
    old = _fed_token_by_token(ours, prompt, 8, interventions=changes)
    session.run()
    old.run()
    assert session.tgt_ids == old.tgt_ids
    for name in trace_names(ours.model.config, encoder=False):
        assert _same(session.accumulated(name), old.accumulated(name)), name
    if not changes:
        assert list(session.tgt_ids) == _generate(theirs, prompt, session.max_len - (len(prompt) - 1), 1)


def test_a_beam_search_after_a_long_prompt_equals_feeding_it_step_by_step_and_generate(family):
    _, ours, theirs = family
    prompt = _prompt(ours, LONG_PROMPT)
    beam = BeamSearch(width=3, length_penalty=0.0)
    session = DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, LONG_PROMPT, max_len=8, strategy=beam)
    old = _fed_token_by_token(ours, prompt, 8, strategy=beam)
    session.run()
    old.run()
    assert session.tgt_ids == old.tgt_ids and [b.token_ids for b in session.beams()] == [b.token_ids for b in old.beams()]
    assert np.allclose([b.score for b in session.beams()], [b.score for b in old.beams()], atol=1e-5, rtol=0)
    assert _same(session.all_attention("decoder"), old.all_attention("decoder"))
    assert list(session.tgt_ids) == _generate(theirs, prompt, session.max_len - (len(prompt) - 1), 3)


def test_a_long_prompt_costs_one_decoder_pass_and_back_and_reset_stop_at_its_end(family, monkeypatch):
    _, ours, _ = family
    decoder, passes = ours.model.decoder, []
    forward = decoder.forward

    def counted(tgt, *args, **kw):
        passes.append(tgt.shape[1])  # positions fed
        return forward(tgt, *args, **kw)

    monkeypatch.setattr(decoder, "forward", counted)
    prompt = _prompt(ours, LONG_PROMPT)
    session = DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, LONG_PROMPT, max_len=4)
    assert passes == [len(prompt) - 1]  # SOS and the prompt but its last token, which the first step feeds
    assert list(session.tgt_ids) == prompt and not session.can_back and session.attention("decoder", 0).shape[1] == len(prompt) - 1
    with pytest.raises(DecodingError, match="nothing to undo"):
        session.back()
    session.step()
    session.step()
    assert passes[1:] == [1, 1]  # each later step feeds one position
    session.back()
    session.back()
    assert list(session.tgt_ids) == prompt and not session.can_back
    session.run()
    session.reset()
    session.set_strategy(BeamSearch(width=2))
    assert list(session.tgt_ids) == prompt and session.n_steps == len(prompt) - 1 and not session.can_back
    assert passes[0] == len(prompt) - 1 and passes[1:] == [1] * (len(passes) - 1)  # reset() and a new strategy keep the prompt's pass


def test_a_decoder_only_model_with_batchnorm_feeds_its_prompt_step_by_step(monkeypatch):
    src, _ = tokenizers()
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=src.vocab_size, tgt_vocab_size=src.vocab_size, d_model=16, n_heads=2, n_encoder_layers=0,
                            n_decoder_layers=2, d_ff=32, dropout=0.0, max_len=40, kind="decoder-only", norm="batch")
    model, passes = Transformer(cfg).eval(), []
    forward = model.decoder.forward
    monkeypatch.setattr(model.decoder, "forward", lambda tgt, *a, **kw: passes.append(tgt.shape[1]) or forward(tgt, *a, **kw))
    session = DecodingSession(model, src, src, "我是学生。")
    assert passes == [1] * session.n_steps and session.n_steps == len(session.src_ids) > 1  # a step's batch statistics are over its one token


# -- hostile folders ------------------------------------------------------------------------------
FILES = ("config.json", "vocab.json", "merges.txt")  # beside the weights


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(family, tmp_path, capsys):
    folder, _, _ = family
    check_pickle_runs_nothing(folder, tmp_path, capsys, FILES, "transformer.wte.weight")


def test_truncated_weights_wrong_shapes_and_foreign_choices_are_refused(family, tmp_path, capsys):
    folder, _, _ = family
    check_hostile_weights_and_configs(
        folder, tmp_path, capsys, FILES,
        weights=[({"transformer.h.0.attn.c_attn.weight": torch.zeros(48, 16)}, "'h.0.attn.c_attn.weight' has shape (48, 16), config.json implies (16, 48)"),
                 ({"transformer.h.0.attn.bias": torch.ones(1, 1, 48, 48)}, "is not the causal mask of 48 positions")],
        configs=[({"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx True is not supported"),
                 ({"n_inner": 40}, "has shape")],
    )
