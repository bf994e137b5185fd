"""The everyday development set (tests/data/everyday-zh-en.tsv) stays out of the training data,
and so do the tutorial's word-order sentences 猫吃鱼。/ 鱼吃猫。, nor any near copy of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from heldout_fixtures import edit_distance

from attnviz.core.bundle import load_bundle
from attnviz.core.data.corpora import load_tsv
from attnviz.paths import default_model

EVERYDAY = Path(__file__).resolve().parents[1] / "data" / "everyday-zh-en.tsv"
WORD_ORDER = ("猫吃鱼。", "鱼吃猫。")


def _core(text: str) -> str:
    """The text without punctuation and spaces: two sentences with the same core are copies."""
    return re.sub(r"[\W_]+", "", text)


def _within_one_edit(a: str, b: str) -> bool:
    """True when ``a`` becomes ``b`` by at most one insertion, deletion or substitution."""
    return abs(len(a) - len(b)) <= 1 and edit_distance(a, b) <= 1


@pytest.fixture(scope="module")
def everyday():
    return load_tsv(EVERYDAY)


@pytest.fixture(scope="module")
def default_data(augmented):
    """The default bundle's data exactly as it was trained on it (its meta.json's corpora and
    augmentation settings; the training-data hash proves it)."""
    meta = load_bundle(default_model()).meta
    data = augmented(meta["data"]["spec"])
    assert data.train_hash == meta["data"]["train_hash"]
    return data


def test_the_everyday_set_has_40_pairs(everyday):
    pairs = everyday.train + everyday.valid + everyday.test
    assert len(pairs) == 40 and everyday.report.skipped == 0
    assert {p.src for p in pairs} >= set(WORD_ORDER)


def test_no_everyday_sentence_is_in_the_training_data_or_its_augmentation(everyday, default_data):
    assert default_data.spec["augment"]["added"]["substitution"] > 0 and default_data.spec["augment"]["added"]["cedict"] > 0
    seen = {_core(p.src) for p in default_data.train}
    everyday_cores = {_core(p.src) for p in everyday.train + everyday.valid + everyday.test}
    assert not everyday_cores & seen


def test_word_order_sentences_have_no_near_copy_in_the_training_data(default_data):
    cores = [_core(s) for s in WORD_ORDER]
    near = [p.src for p in default_data.train if any(_within_one_edit(_core(p.src), c) for c in cores)]
    assert near == []


def test_within_one_edit():
    assert _within_one_edit("猫吃鱼", "猫吃鱼") and _within_one_edit("猫吃鱼", "狗吃鱼") and _within_one_edit("猫吃鱼", "猫吃")
    assert _within_one_edit("猫吃鱼", "猫爱吃鱼") and not _within_one_edit("猫吃鱼", "鱼吃猫") and not _within_one_edit("猫吃鱼", "我吃米饭")
