"""The everyday development set (tests/data/everyday-zh-en.tsv) stays out of the training data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz.core.data.augment import augment_dataset
from attnviz.core.data.corpora import load_hsk, load_tsv

EVERYDAY = Path(__file__).resolve().parents[1] / "data" / "everyday-zh-en.tsv"
WORD_ORDER = ("猫吃鱼。", "鱼吃猫。")


def _core(text: str) -> str:
    """The text without punctuation and spaces: two sentences with the same core are near copies."""
    return re.sub(r"[\W_]+", "", text)


@pytest.fixture(scope="module")
def everyday():
    return load_tsv(EVERYDAY)


def test_the_everyday_set_has_40_pairs(everyday):
    pairs = everyday.train + everyday.valid + everyday.test
    assert len(pairs) == 40 and everyday.report.skipped == 0
    assert {p.src for p in pairs} >= set(WORD_ORDER)


def test_no_everyday_sentence_is_in_the_corpus_or_its_augmentation(everyday):
    hsk = load_hsk()
    augmented = augment_dataset(hsk, ("substitution", "cedict"), seed=0)
    seen = {_core(p.src) for p in augmented.train + augmented.valid + augmented.test}
    everyday_cores = {_core(p.src) for p in everyday.train + everyday.valid + everyday.test}
    assert not everyday_cores & seen
    assert not {_core(s) for s in WORD_ORDER} & seen
