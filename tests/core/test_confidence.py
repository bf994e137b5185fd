"""The confidence cue's numbers, the source → pieces map and where a typed sentence sits in the
model's corpus (no Qt)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attnviz.core.analysis.confidence import LOW_MEAN_LOG_PROB, assess, mean_log_prob
from attnviz.core.bundle import load_bundle
from attnviz.core.data import corpora as D
from attnviz.core.data import sources
from attnviz.core.data.examples import corpus_index, hints_for, normalise, where_seen
from attnviz.core.data.source_map import char_label, map_source, shown_text
from attnviz.core.decoding.session import DecodingSession
from attnviz.paths import models_dir


@pytest.fixture(scope="module")
def reverse():
    return load_bundle(models_dir() / "reverse")


@pytest.fixture(scope="module")
def hsk():
    return load_bundle(models_dir() / "hsk-only-zh-en")  # its corpus: the HSK pairs


def test_mean_log_prob_is_the_mean_of_the_decoded_tokens_log_probabilities(hsk):
    with torch.inference_mode():
        d = DecodingSession.from_bundle(hsk, "我爱你。")
        d.run()
        # an independent computation: one teacher-forced pass over what was decoded
        src = torch.tensor([d.src_ids])
        fed = torch.tensor([list(d.input_ids)])
        logp = torch.log_softmax(hsk.model(src, fed)[0].double(), -1)  # [rows, vocab]
    expected = float(np.mean([logp[i, t].item() for i, t in enumerate(d.output_ids)]))
    conf = assess([st.prob for st in d.steps], 0.0, False, "new")
    assert conf.n_tokens == len(d.output_ids)
    assert conf.mean_log_prob == pytest.approx(expected, abs=1e-4)
    assert conf.mean_prob == pytest.approx(np.exp(expected), rel=1e-4)


def test_mean_log_prob_edges():
    assert mean_log_prob([]) is None
    assert mean_log_prob([1.0, 1.0]) == 0.0
    assert mean_log_prob([0.5, 0.25]) == pytest.approx((np.log(0.5) + np.log(0.25)) / 2)
    assert np.isfinite(mean_log_prob([0.0]))  # a forced token the model gave P = 0


def test_when_the_model_is_unsure():
    assert not assess([0.95, 0.9], 0.0, False, "train").unsure
    assert not assess([0.7, 0.7], 0.0, False, "train").unsure  # a training sentence at fair odds
    assert assess([0.7, 0.7], 0.0, False, "new").unsure  # the same odds on a new sentence
    low = assess([0.3, 0.4], 0.0, False, "train")
    assert low.unsure and low.mean_log_prob < LOW_MEAN_LOG_PROB
    unk = assess([0.99], 1.0, True, "train")
    assert unk.unsure and "100% of the source is UNK" in unk.reasons()[0]
    assert not assess([0.7], 0.0, False, "pending").unsure  # no verdict while the corpus is read
    assert "a training sentence" in assess([0.9], 0.0, False, "train").summary()
    assert "mean log P 0.00/token" in assess([0.9999], 0.0, False, "train").summary()


def test_the_reasons_come_as_codes_for_the_interface_to_word():
    assert assess([0.99], 0.5, True, "train").reason_codes() == (("unk", 0.5),)
    (code, p), = assess([0.3, 0.4], 0.0, False, "train").reason_codes()
    assert code == "low" and p == pytest.approx(np.sqrt(0.3 * 0.4))  # the geometric mean of the tokens' P
    (code, p), = assess([0.7, 0.7], 0.0, False, "new").reason_codes()
    assert code == "new" and p == pytest.approx(0.7)
    assert assess([0.95], 0.0, False, "train").reason_codes() == ()


def test_unk_comes_from_the_models_tokenizer_not_per_character(reverse):
    whole = map_source(reverse.src_tokenizer, "3141592")
    assert (whole.n_tokens, whole.n_unknown, whole.mostly_unknown) == (1, 1, True)
    assert whole.unknown_runs() == ("3141592",)
    assert whole.describe() == "3141592 → UNK"
    spaced = map_source(reverse.src_tokenizer, "3 1 4 1 5 9 2")
    assert (spaced.n_tokens, spaced.n_unknown, spaced.mostly_unknown) == (7, 0, False)
    assert [p.text for p in spaced.pieces] == list("3141592")
    assert [p.token_id for p in spaced.pieces] == reverse.src_tokenizer.encode("3 1 4 1 5 9 2")


def test_a_merged_run_of_unknown_characters_is_one_unk_with_its_characters(hsk):
    m = map_source(hsk.src_tokenizer, "猫吃鱼。😀😀x")
    assert [p.text for p in m.pieces] == ["猫", "吃", "鱼", "。", "😀😀x"]
    assert m.n_unknown == 1 and m.unk_share == pytest.approx(1 / 5)
    assert m.unknown_char_share == pytest.approx(3 / 7)
    assert "U+1F600×2 x → UNK" in m.describe() and "猫 → 猫" in m.describe()
    assert char_label("😀") == "U+1F600" and char_label("猫") == "猫" and char_label("<") == "<"
    assert shown_text("a😀b") == "a U+1F600 b" and shown_text("猫😀😀") == "猫 U+1F600×2"
    assert shown_text("猫😀😀", renderable=lambda ch: True) == "猫😀😀 (U+1F600)"  # the font has it: both


def test_normalised_lookup_in_the_corpus_the_bundle_names(hsk, reverse):
    data = D.load_hsk()
    train, test = data.train[0].src, data.test[0].src
    assert where_seen(hsk.meta, train) == "train"
    assert where_seen(hsk.meta, " " + test.rstrip("。？！.?!") + " ") == "test"
    assert where_seen(hsk.meta, "猫吃鱼。") == "new"
    rev = sources.load_data(reverse.meta["data"]["spec"])
    assert where_seen(reverse.meta, rev.valid[0].src.replace(" ", "  ")) == "valid"
    assert where_seen({"imported_from": "x"}, "猫吃鱼。") == ""  # no corpus named
    assert where_seen({"data": {"spec": {"kind": "tsv", "path": "/no/such/file.tsv"}}}, "x") == ""
    assert normalise("我爱你。") == normalise("我爱你") and normalise("A  b!") == "a b"
    assert corpus_index(hsk.meta["data"]["spec"]) is corpus_index(dict(hsk.meta["data"]["spec"]))  # cached


def test_each_model_brings_its_own_examples(hsk, reverse):
    rev = hints_for(reverse.meta, reverse.path)
    assert all(set(e.source) <= set("0123456789 ") for e in rev.examples)
    assert {e.split for e in rev.examples} >= {"train", "test"} or {e.split for e in rev.examples} >= {"train", "valid"}
    for e in rev.examples:
        assert where_seen(reverse.meta, e.source) == e.split
    assert rev.subject == ("symbols", "0123456789") and "(0123456789)" in rev.placeholder
    zh = hints_for(hsk.meta, hsk.path)
    assert "中文" in zh.placeholder and any(e.source == "猫吃鱼。" and e.split == "none" for e in zh.examples)
    assert zh.subject == ("sentence", "中文")


def test_a_bundle_may_bring_its_examples_file(tmp_path, reverse):
    (tmp_path / "examples.json").write_text(json.dumps({
        "placeholder": "Digits with spaces, e.g. 1 2 3",
        "examples": [{"text": "1 2 3", "note": "short"}, {"id": "no-such-id"}, 5, {"text": ""}],
    }), encoding="utf-8")
    hints = hints_for(reverse.meta, tmp_path)
    assert [e.source for e in hints.examples] == ["1 2 3"] and hints.placeholder.startswith("Digits")
    assert hints.subject == ("own", "")  # the bundle's own words, shown as written
    (tmp_path / "examples.json").write_text("{not json", encoding="utf-8")
    assert hints_for(reverse.meta, tmp_path).examples  # an unreadable file falls back to the corpus


def test_decoding_notices_name_the_unknown_runs_the_model_reads_as_unk(reverse, hsk):
    """The notice comes from the model's tokenizer: a word-level model reads "3141592" as one UNK
    (each digit alone is known); an emoji is named by its code point, not drawn."""
    assert any("3141592" in n for n in DecodingSession.from_bundle(reverse, "3141592").notices)
    assert not any("UNK" in n for n in DecodingSession.from_bundle(reverse, "3 1 4 1 5 9 2").notices)
    notes = " ".join(DecodingSession.from_bundle(hsk, "我爱犇犇😀。").notices)
    assert "犇犇" in notes and "U+1F600" in notes and "😀" not in notes
