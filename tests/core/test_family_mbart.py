"""Real mBART folders (``sentencepiece.bpe.model``, fairseq's ids, language codes): a tiny random
mBART-50 saved by ``transformers`` (no network) opens with ``MBart50Tokenizer``'s ids, the same logits
and attention weights, and greedy/beam decoding that forces the target-language code first equals
``generate(forced_bos_token_id=...)``; ``import-hf --src-lang/--tgt-lang`` stores the languages.

``MBart50Tokenizer.from_pretrained`` would read the sentencepiece file through ``protobuf``, which is
not installed: the test builds it from the model's pieces and scores, as ``transformers``' own
converter does. That converter reads every model as a unigram one, as mBART's is; the BPE model
the test also trains is checked against ids written out by hand."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import pytest
import sentencepiece as spm
import torch
from family_checks import check_logits_and_attention, load_theirs

from attnviz.cli import main
from attnviz.core.bundle import load_bundle
from attnviz.core.data.fairseq_tokenizer import LANGUAGE_CODES, FairseqTokenizer
from attnviz.core.decoding.session import DecodingSession
from attnviz.core.decoding.strategies import BeamSearch, Greedy
from attnviz.core.model.hf_import import read_hf_folder

pytestmark = pytest.mark.slow  # tiny transformers models built and compared: make test runs them, the fast loop does not

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install 'attnviz[hf]')")

LINES = ["the cat sat on the mat", "a dog runs in the park", "i like green tea", "we read books at night", "猫 坐 在 垫子 上", "我 喜欢 绿茶"]
SOURCES = ["the cat runs", "we like the park at night", "猫 喜欢 垫子", "green sun"]


def _spm(model_type: str) -> bytes:
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES * 3), model_writer=buf, vocab_size=60, model_type=model_type, hard_vocab_limit=False,
        minloglevel=2, num_threads=1, character_coverage=1.0,  # fairseq's layout: <unk> 0, <s> 1, </s> 2, as mBART's model
    )
    return buf.getvalue()


def _pieces(proto: bytes) -> list[tuple[str, float]]:
    sp = spm.SentencePieceProcessor(model_proto=proto)
    return [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]


def build_mbart50(folder: Path, model_type: str = "unigram", seed: int = 1, eos_boost: float = 1.0) -> Path:
    """A tiny random MBartForConditionalGeneration with mBART-50's vocabulary layout and tokenizer files."""
    folder.mkdir(parents=True)
    proto = _spm(model_type)
    (folder / "sentencepiece.bpe.model").write_bytes(proto)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "MBart50Tokenizer", "src_lang": "zh_CN", "tgt_lang": "en_XX"}))
    vocab = len(_pieces(proto)) + 1 + len(LANGUAGE_CODES) + 1  # pieces, fairseq's offset, the codes, <mask>
    config = transformers.MBartConfig(
        vocab_size=vocab, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64, activation_function="gelu", scale_embedding=True,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None, forced_bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = transformers.MBartForConditionalGeneration(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(1.0 if "norm" in name and name.endswith("weight") else 0.0, 0.3 if p.dim() > 1 else 0.1)  # norms' gains near 1
        model.final_logits_bias.normal_(0.0, 0.3)
        model.final_logits_bias[0, 2] += eos_boost  # EOS: outputs end at different lengths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def mbart(tmp_path_factory):
    """(folder, ours, theirs) of a tiny mBART-50 whose sentencepiece model is a unigram one (as mBART's)."""
    folder = build_mbart50(tmp_path_factory.mktemp("hf") / "tiny-mbart50")
    return folder, read_hf_folder(folder), load_theirs(transformers.MBartForConditionalGeneration, folder)


def _their_tokenizer(folder: Path, **kw):
    pieces = _pieces((folder / "sentencepiece.bpe.model").read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.MBart50Tokenizer(vocab=pieces, **kw)


def test_token_ids_equal_mbart50_tokenizer(mbart):
    folder, ours, _ = mbart
    theirs = _their_tokenizer(folder, src_lang="zh_CN", tgt_lang="en_XX")
    assert ours.model.config.src_vocab_size == ours.src_tokenizer.vocab_size == len(theirs)
    for text in SOURCES + ["the zebra 猫 sat!", "two  spaces here"]:
        assert ours.src_tokenizer.encode(text) == theirs(text)["input_ids"], text  # [zh_CN] pieces </s>
        assert ours.tgt_tokenizer.encode(text) == theirs(text_target=text)["input_ids"][:-1], text  # [en_XX] pieces: the model adds </s>
        assert ours.tgt_tokenizer.decode(ours.tgt_tokenizer.encode(text)) == theirs.decode(theirs(text_target=text)["input_ids"], skip_special_tokens=True)
    assert ours.src_tokenizer.pieces(ours.src_tokenizer.encode("the cat"))[0] == "zh_CN"
    assert ours.tgt_tokenizer.forced_first_token == theirs.convert_tokens_to_ids("en_XX") and ours.src_tokenizer.forced_first_token is None
    assert ours.src_tokenizer.piece_to_id("<mask>") == theirs.convert_tokens_to_ids("<mask>") == len(theirs) - 1
    assert ours.src_tokenizer.unknown_characters("the 猫 zebra") == ["z"]


def test_cc25_layout_equals_mbart_tokenizer(mbart):
    """mBART-cc25's layout (``MBartTokenizer``): 25 codes, the source's code after ``</s>``."""
    folder, _, _ = mbart
    proto = (folder / "sentencepiece.bpe.model").read_bytes()
    ours = FairseqTokenizer(proto, n_codes=25, language="ro_RO", side="source", layout="mbart")
    pieces = _pieces(proto)
    fairseq = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), *pieces[3:], *((c, 0.0) for c in LANGUAGE_CODES[:25]), ("<mask>", 0.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = transformers.MBartTokenizer(vocab=fairseq, src_lang="ro_RO")
    for text in SOURCES:
        assert ours.encode(text) == theirs(text)["input_ids"], text  # pieces </s> [ro_RO]
    assert ours.vocab_size == len(theirs) and ours.language_id == theirs.convert_tokens_to_ids("ro_RO")


def test_a_bpe_sentencepiece_model_gives_fairseqs_ids(tmp_path):
    """Ids written out by hand: sentencepiece's id + 1, the code first, ``</s>`` last."""
    folder = build_mbart50(tmp_path / "bpe", model_type="bpe")
    ours = read_hf_folder(folder)
    sp = spm.SentencePieceProcessor(model_file=str(folder / "sentencepiece.bpe.model"))
    zh_cn = sp.get_piece_size() + 1 + LANGUAGE_CODES.index("zh_CN")
    for text in SOURCES:
        expected = [zh_cn, *(i + 1 if i else 3 for i in sp.encode(text)), 2]
        assert ours.src_tokenizer.encode(text) == expected, text
    assert ours.src_tokenizer.pieces([0, 1, 2, 3, 4, zh_cn, zh_cn + len(LANGUAGE_CODES) - LANGUAGE_CODES.index("zh_CN")]) == [
        "<s>", "PAD", "EOS", "UNK", sp.id_to_piece(3), "zh_CN", "<mask>"]


def test_logits_and_every_attention_equal_transformers(mbart):
    _, ours, theirs = mbart
    cfg = ours.model.config
    assert (cfg.norm_placement, cfg.final_norm, cfg.bos_id, cfg.eos_id, cfg.pad_id, cfg.unk_id) == ("pre", True, 2, 2, 1, 3)
    check_logits_and_attention(ours, theirs, SOURCES)


def _their_generate(theirs, ids: list[int], forced: int, max_new: int, beams: int) -> list[int]:
    with torch.no_grad():
        out = theirs.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long), num_beams=beams, do_sample=False,
            length_penalty=0.0, early_stopping=False, max_new_tokens=max_new, min_length=0, bad_words_ids=[[1]],
            forced_eos_token_id=None, forced_bos_token_id=forced, no_repeat_ngram_size=0, repetition_penalty=1.0, num_return_sequences=1,
        )
    return out[0].tolist()


@pytest.mark.parametrize("beams", [1, 3])
def test_greedy_and_beam_force_the_target_language_as_generate_does(mbart, beams):
    _, ours, theirs = mbart
    forced, lengths = ours.tgt_tokenizer.forced_first_token, set()
    for text in SOURCES:
        strategy = Greedy() if beams == 1 else BeamSearch(width=beams, length_penalty=0.0)
        session = DecodingSession.from_bundle(ours, text, strategy=strategy, capture=False)
        session.run()
        expected = _their_generate(theirs, list(session.source.ids), forced, session.max_len, beams)
        assert list(session.tgt_ids) == expected, text
        assert session.tgt_ids[:2] == (2, forced) and session.steps[0].forced
        lengths.add(len(expected))
    assert len(lengths) > 1


def test_forced_first_token_is_off_by_default_and_kept_by_back_and_reset(mbart):
    _, ours, _ = mbart
    plain = DecodingSession(ours.model, ours.src_tokenizer, ours.tgt_tokenizer, SOURCES[0], capture=False)
    assert plain.n_steps == 0 and plain.tgt_ids == (2,)
    forced = DecodingSession.from_bundle(ours, SOURCES[0], capture=False)
    assert forced.tgt_ids == (2, ours.tgt_tokenizer.language_id) and forced.steps[0].forced and not forced.can_back
    forced.step()
    forced.back()
    forced.reset()
    assert forced.tgt_pieces == ("EOS", "en_XX")


def test_import_hf_stores_the_languages_chosen(mbart, tmp_path, capsys):
    folder, ours, _ = mbart
    out = tmp_path / "bundle"
    assert main(["import-hf", str(folder), "--out", str(out), "--src-lang", "en_XX", "--tgt-lang", "zh_CN"]) == 0
    bundle = load_bundle(out)
    assert (bundle.src_tokenizer.language, bundle.tgt_tokenizer.language) == ("en_XX", "zh_CN")
    assert bundle.src_tokenizer.encode("the cat")[1:] == ours.src_tokenizer.encode("the cat")[1:]
    session = DecodingSession.from_bundle(bundle, SOURCES[0], capture=False)
    assert session.source.pieces[0] == "en_XX" and session.tgt_pieces[:2] == ("EOS", "zh_CN")
    capsys.readouterr()
    assert main(["import-hf", str(folder), "--out", str(tmp_path / "bad"), "--tgt-lang", "xx_YY"]) == 1
    err = capsys.readouterr().err
    assert "--tgt-lang: unknown language code 'xx_YY'" in err and err.count("\n") == 1 and "Traceback" not in err
