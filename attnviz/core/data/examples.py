"""Example sentences for the app, each marked as seen in training or held out."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from attnviz.paths import resource


@dataclass(frozen=True)
class ExampleSentence:
    source: str
    reference: str  # the data set's translation ('' for our own sentences)
    id: str  # data set id ('' for our own sentences)
    split: str  # "train" | "valid" | "test" | "none" (not in the data set)
    note: str = ""

    @property
    def label(self) -> str:
        where = {"train": "seen in training", "valid": "held out (valid)", "test": "held out (test)"}.get(self.split, "new sentence")
        return f"{self.source}  —  {where}"


@lru_cache(maxsize=1)
def _hsk_index() -> tuple[dict, set]:
    from attnviz.core.data.corpora import load_hsk

    ds = load_hsk()
    by_id = {}
    for split in ("train", "valid", "test"):
        for p in ds.split(split):
            by_id[p.id] = (p, split)
    return by_id, {p.src for p in ds.train}


def load_examples(path: str | Path | None = None) -> list[ExampleSentence]:
    """Read ``resources/examples.json``; HSK ids are resolved through the installed data package.
    Entries that cannot be resolved are left out (the list is a convenience, never an error)."""
    path = Path(path) if path else resource("examples.json")
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["examples"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    try:
        by_id, train_sources = _hsk_index()
    except Exception:  # noqa: BLE001 - without the data package, keep only our own sentences
        by_id, train_sources = {}, set()
    out = []
    for e in entries:
        if not isinstance(e, dict):
            continue
        if "id" in e:
            hit = by_id.get(e["id"])
            if hit is None:
                continue
            pair, split = hit
            out.append(ExampleSentence(pair.src, pair.tgt, pair.id, split, e.get("note", "")))
        elif isinstance(e.get("text"), str) and e["text"].strip():
            text = e["text"].strip()
            split = "train" if text in train_sources else "none"
            out.append(ExampleSentence(text, e.get("reference", ""), "", split, e.get("note", "")))
    return out
