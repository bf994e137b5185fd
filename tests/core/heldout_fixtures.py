"""A bundle's training data rebuilt from its meta.json, and the held-out sentences no training
pair may equal or come one edit near (HSK valid/test, the everyday set, 猫吃鱼。/鱼吃猫。): shared
by the Tatoeba tests and the bundled-model tests."""

from __future__ import annotations

from pathlib import Path

from attnviz.core.data import heldout as H
from attnviz.core.data.augment import augment_as
from attnviz.core.data.corpora import Dataset, load_hsk, load_tsv
from attnviz.core.data.sources import load_data

EVERYDAY = Path(__file__).resolve().parents[1] / "data" / "everyday-zh-en.tsv"


def held_out_sources() -> list[str]:
    hsk, everyday = load_hsk(), load_tsv(EVERYDAY)
    return ([p.src for p in hsk.valid + hsk.test] + H.everyday_sources()
            + [p.src for p in everyday.train + everyday.valid + everyday.test] + list(H.word_order_sources()))


def rebuilt_from_meta(spec: dict) -> Dataset:
    """The data a meta.json ``spec`` describes, augmented as it says: the exact training data."""
    return augment_as(load_data(spec), spec)


def trained_near_held_out(data: Dataset) -> list[str]:
    """Training sources whose normalised form equals, or is one edit from, a held-out source's."""
    near = H.NearSet(H.normalise(s) for s in held_out_sources())
    return [p.src for p in data.train if near.near(H.normalise(p.src))]


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, written out: the tests' own reference for "one edit from"."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            row.append(min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = row
    return previous[-1]
