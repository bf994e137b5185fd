"""What a model offers to type: its example sentences (each marked as seen in training, held out
or new), the input's placeholder, and where any typed sentence sits in the model's corpus.

Each model brings its own (``hints_for(meta, folder)``):

* a bundle folder with an ``examples.json`` (``BUNDLE_EXAMPLES``) uses it;
* a model trained on the HSK sentences, the Tatoeba pairs or both uses ``resources/examples.json``
  (HSK ids a corpus lacks are left out);
* a model trained on a synthetic task (copy, reverse, sort) or a TSV corpus takes a few sentences of
  its own corpus (training and held-out), written as it was trained on them ("3 1 4 1 5");
* an imported Marian/Hugging Face folder gets generic everyday sentences in its source language.

``where_seen(spec, text)`` says whether a typed sentence is a training sentence, a held-out one or
new, by a normalised lookup (``normalise``) in the corpus the bundle's ``meta.json`` names.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from attnviz.paths import models_dir, resource

BUNDLE_EXAMPLES = "examples.json"  # a bundle's own examples, beside its meta.json
EXAMPLES_LIMIT = 256 * 1024  # bytes read of an examples file
SPLITS = ("train", "valid", "test")
ZH_EN_KINDS = ("hsk-zh-en", "tatoeba-zh-en", "mix")  # corpora whose models offer resources/examples.json
N_CORPUS_EXAMPLES = (5, 4)  # training / held-out sentences offered for a model trained on its own corpus

# Everyday sentences for an imported model, by source language (the first two letters of its name's code).
GENERIC_EXAMPLES: dict[str, tuple[str, ...]] = {
    "zh": ("猫吃鱼。", "鱼吃猫。", "我爱你。", "他每天早上喝咖啡。", "我的妈妈是医生。", "今天天气很好。"),
    "en": ("The cat eats the fish.", "The fish eats the cat.", "I love you.", "He drinks coffee every morning.",
           "My mother is a doctor.", "The weather is nice today."),
    "de": ("Die Katze frisst den Fisch.", "Ich liebe dich.", "Er trinkt jeden Morgen Kaffee.", "Meine Mutter ist Ärztin."),
    "fr": ("Le chat mange le poisson.", "Je t'aime.", "Il boit du café tous les matins.", "Ma mère est médecin."),
    "es": ("El gato come pescado.", "Te quiero.", "Él bebe café cada mañana.", "Mi madre es médica."),
}
_LANGUAGE_NAMES = {"zh": "中文", "en": "English", "de": "Deutsch", "fr": "français", "es": "español"}


@dataclass(frozen=True)
class ExampleSentence:
    source: str
    reference: str  # the data set's translation ('' for our own sentences)
    id: str  # data set id ('' for our own sentences)
    split: str  # "train" | "valid" | "test" | "none" (not in the data set) | "" (a model whose corpus is unknown)
    note: str = ""

    @property
    def label(self) -> str:
        where = {"train": "seen in training", "valid": "held out (valid)", "test": "held out (test)",
                 "": "everyday sentence"}.get(self.split, "new sentence")
        return f"{self.source}  —  {where}"


@dataclass(frozen=True)
class InputHints:
    """What the input bar offers for one model."""

    examples: tuple[ExampleSentence, ...]
    placeholder: str  # the source line's placeholder text
    # what the placeholder names, for an interface that words it in its own language: ("sentence",
    # the language's name in itself or ""), ("symbols", the alphabet or ""), or ("own", "") for a
    # bundle's own placeholder (shown as written)
    subject: tuple[str, str] = ("sentence", "")


# -- the corpus lookup ---------------------------------------------------------------------------
def normalise(text: str) -> str:
    """The lookup key of a sentence: NFKC, case-folded, spaces collapsed, sentence-final
    punctuation dropped ("我爱你。" and "我爱你" meet; "3 1 4" and "3  1 4 " too)."""
    text = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return re.sub(r"[\s.!?。！？…]+$", "", text)


@dataclass(frozen=True)
class CorpusIndex:
    """Normalised source → split (and the pair) of a corpus."""

    splits: Mapping[str, str]
    pairs: Mapping[str, Any]  # normalised source → its Pair
    by_id: Mapping[str, tuple[Any, str]]  # pair id → (Pair, split)

    def where(self, text: str) -> str:
        """ "train", "valid", "test", or "new" for a sentence not in the corpus."""
        return self.splits.get(normalise(text), "new")


def _spec_key(spec: Mapping[str, Any]) -> str:
    return json.dumps(dict(spec), sort_keys=True, ensure_ascii=False)


@lru_cache(maxsize=4)
def _index_of(spec_key: str) -> CorpusIndex:
    from attnviz.core.data.augment import augment_as
    from attnviz.core.data.sources import load_data

    spec = json.loads(spec_key)
    data = augment_as(load_data(spec), spec)  # augmented pairs were training pairs too
    splits: dict[str, str] = {}
    pairs: dict[str, Any] = {}
    by_id: dict[str, tuple[Any, str]] = {}
    for split in reversed(SPLITS):  # a source in two splits counts as seen in training
        for p in data.split(split):
            key = normalise(p.src)
            splits[key], pairs[key] = split, p
            by_id[p.id] = (p, split)
    return CorpusIndex(splits, pairs, by_id)


def corpus_index(spec: Mapping[str, Any]) -> CorpusIndex:
    """The lookup of the corpus ``spec`` names (a ``Dataset.spec``, as meta.json stores it); cached.
    Raises what loading the corpus raises (``DataError``, ``OSError``)."""
    return _index_of(_spec_key(spec))


def data_spec(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The corpus spec a bundle's meta.json names, or None (an imported model)."""
    data = meta.get("data")
    spec = data.get("spec") if isinstance(data, Mapping) else None
    return dict(spec) if isinstance(spec, Mapping) and isinstance(spec.get("kind"), str) else None


SCORE_SPLITS = ("test:hsk-zh-en", "test")  # what zh→en bundles are compared on: the HSK test pairs, which every one is scored on


def meta_score(meta: Mapping[str, Any]) -> float | None:
    """chrF on the HSK test pairs that a zh→en bundle's meta.json recorded when its training
    finished (its ``final``), or ``None`` (another language pair, or no such score)."""
    spec, final = data_spec(meta), meta.get("final")
    if spec is None or spec.get("kind") not in ZH_EN_KINDS or not isinstance(final, Mapping):
        return None
    try:
        return float(next(final[split]["chrf"] for split in SCORE_SPLITS if split in final))
    except (KeyError, TypeError, ValueError, StopIteration):
        return None


@lru_cache(maxsize=64)
def _stored_score(meta_file: str, _mtime_ns: int) -> float | None:
    try:
        return meta_score(json.loads(Path(meta_file).read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):
        return None


def bundled_score(folder: Path) -> float | None:
    """:func:`meta_score` of the bundle in ``folder``, read once while its meta.json is unchanged."""
    meta_file = folder / "meta.json"
    try:
        return _stored_score(str(meta_file), meta_file.stat().st_mtime_ns)
    except OSError:
        return None


def better_bundled(meta: Mapping[str, Any], folder: str | Path | None) -> Path | None:
    """The bundled model to try first when the model in ``folder`` (with ``meta``) is unsure: the
    bundled zh→en model that scores best on the HSK test pairs (:func:`meta_score`; models/README.md
    measures each on every held-out set), when ``folder`` is another bundled model of that language
    pair and scores below it; else ``None``."""
    home = models_dir().resolve()
    spec = data_spec(meta)
    if folder is None or Path(folder).resolve().parent != home or spec is None or spec.get("kind") not in ZH_EN_KINDS:
        return None
    here = Path(folder).resolve()
    scores = {p.name: score for p in sorted(home.iterdir()) if p != here and (score := bundled_score(p)) is not None}
    best = max(scores, key=scores.__getitem__, default=None)
    own = meta_score(meta)
    return models_dir() / best if best is not None and (own is None or scores[best] > own) else None


def where_seen(meta: Mapping[str, Any], text: str) -> str:
    """Where the corpus of the model with ``meta`` has ``text``: "train", "valid", "test", "new",
    or "" when the model names no corpus or it cannot be read."""
    spec = data_spec(meta)
    if spec is None or not text.strip():
        return ""
    try:
        return corpus_index(spec).where(text)
    except Exception:  # noqa: BLE001 - a corpus that cannot be read (moved file, no data package): say so, never fail
        return ""


# -- examples --------------------------------------------------------------------------------------
def _read_entries(path: Path) -> tuple[list, str]:
    """The ``examples`` list and ``placeholder`` of an examples file ([] and '' when unreadable)."""
    try:
        if path.stat().st_size > EXAMPLES_LIMIT:
            return [], ""
        doc = json.loads(path.read_text(encoding="utf-8"))
        entries, placeholder = doc["examples"], doc.get("placeholder", "")
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return [], ""
    return (entries if isinstance(entries, list) else []), (placeholder if isinstance(placeholder, str) else "")


def _resolve(entries: list, index: CorpusIndex | None) -> list[ExampleSentence]:
    """Entries ``{"id": ...}`` (a corpus record) or ``{"text": ...}`` as examples; ids the corpus
    lacks are left out (the list is a convenience, never an error)."""
    out = []
    for e in entries:
        if not isinstance(e, dict):
            continue
        note = e.get("note", "") if isinstance(e.get("note", ""), str) else ""
        if "id" in e:
            hit = index.by_id.get(e["id"]) if index is not None else None
            if hit is not None:
                pair = hit[0]
                out.append(ExampleSentence(pair.src, pair.tgt, pair.id, index.where(pair.src), note))
        elif isinstance(e.get("text"), str) and e["text"].strip():
            text = e["text"].strip()
            split = index.where(text) if index is not None else "none"
            ref = e.get("reference", "") if isinstance(e.get("reference", ""), str) else ""
            out.append(ExampleSentence(text, ref, "", "none" if split == "new" else split, note))
    return out


@lru_cache(maxsize=1)
def _accepted_table() -> dict[str, tuple[str, ...]]:
    """Normalised example text → the translations the examples file accepts for it."""
    entries, _ = _read_entries(resource("examples.json"))
    out = {}
    for e in entries:
        if isinstance(e, dict) and isinstance(e.get("text"), str):
            accept = e.get("accept") if isinstance(e.get("accept"), list) else []
            ok = tuple(t for t in [e.get("reference"), *accept] if isinstance(t, str) and t.strip())
            if ok:
                out[normalise(e["text"])] = ok
    return out


def accepted_translations(text: str) -> tuple[str, ...]:
    """The translations ``resources/examples.json`` accepts for ``text`` (its reference first, then
    its ``accept`` list), or ``()`` when it knows none."""
    return _accepted_table().get(normalise(text), ())


def is_accepted(text: str, translation: str) -> bool | None:
    """Whether ``translation`` is one the examples accept for ``text`` (up to case, spaces and final
    punctuation); ``None`` when they know no translation of it."""
    ok = accepted_translations(text)
    return None if not ok else normalise(translation) in {normalise(t) for t in ok}


def _index_or_none(spec: Mapping[str, Any] | None) -> CorpusIndex | None:
    if spec is None:
        return None
    try:
        return corpus_index(spec)
    except Exception:  # noqa: BLE001 - without the corpus, keep the examples that need none
        return None


def load_examples(path: str | Path | None = None, spec: Mapping[str, Any] | None = None) -> list[ExampleSentence]:
    """The examples of an examples file (``resources/examples.json`` by default: the HSK model's);
    ids and splits are resolved in the corpus ``spec`` names (the HSK sentences by default)."""
    entries, _ = _read_entries(Path(path) if path else resource("examples.json"))
    return _resolve(entries, _index_or_none(spec if spec is not None else {"kind": "hsk-zh-en"}))


def _corpus_examples(index: CorpusIndex, seed: str) -> list[ExampleSentence]:
    """A few training and held-out sentences of the corpus (held out: not in the training split
    under any id), shortest-first within each group."""
    rng = random.Random(seed)
    groups: dict[str, list] = {"train": [], "held": []}
    for pair, _ in index.by_id.values():
        split = index.where(pair.src)  # a held-out source that also occurs in training counts as seen
        groups["train" if split == "train" else "held"].append((pair, split))
    out = []
    for group, n in zip(("train", "held"), N_CORPUS_EXAMPLES):
        chosen = rng.sample(groups[group], min(n, len(groups[group])))
        out += [ExampleSentence(p.src, p.tgt, p.id, split) for p, split in sorted(chosen, key=lambda ps: len(ps[0].src))]
    return out


def _language(meta: Mapping[str, Any], folder: Path | None) -> str:
    """The source language of an imported model: from its folder name ("opus-mt-zh-en") or ''."""
    name = folder.name if folder is not None else str(meta.get("imported_from", ""))
    m = re.search(r"(?:^|[-_])([a-z]{2,3})[-_]([a-z]{2,3})$", name.lower())
    return m.group(1)[:2] if m else ""


def _placeholder(examples: list[ExampleSentence], what: str = "Source sentence") -> str:
    return f"{what}, e.g. {examples[0].source}" if examples else what


def hints_for(meta: Mapping[str, Any], folder: str | Path | None = None) -> InputHints:
    """The examples and placeholder of the model with ``meta`` (its bundle folder ``folder``)."""
    folder = Path(folder) if folder is not None else None
    spec = data_spec(meta)
    index = _index_or_none(spec)
    own = folder / BUNDLE_EXAMPLES if folder is not None else None
    if own is not None and own.is_file():
        entries, placeholder = _read_entries(own)
        examples = _resolve(entries, index)
        if examples:
            return InputHints(tuple(examples), placeholder or _placeholder(examples), ("own", "") if placeholder else ("sentence", ""))
    kind = spec.get("kind") if spec else None
    if kind in ZH_EN_KINDS:
        examples = load_examples(spec=spec)
        return InputHints(tuple(examples), _placeholder(examples, "Source sentence (中文)"), ("sentence", "中文"))
    if index is not None:
        examples = _corpus_examples(index, _spec_key(spec))
        if kind in ("copy", "reverse", "sort"):
            alphabet = str(spec.get("alphabet", ""))[:20]
            what = f"Symbols ({alphabet}) separated by spaces" if alphabet else "Symbols separated by spaces"
            return InputHints(tuple(examples), _placeholder(examples, what), ("symbols", alphabet))
        return InputHints(tuple(examples), _placeholder(examples))
    lang = _language(meta, folder)
    texts = GENERIC_EXAMPLES.get(lang) or GENERIC_EXAMPLES["en"] + GENERIC_EXAMPLES["zh"]
    examples = [ExampleSentence(t, "", "", "", "an everyday sentence") for t in texts]
    what = f"Source sentence ({_LANGUAGE_NAMES[lang]})" if lang in _LANGUAGE_NAMES else "Source sentence"
    return InputHints(tuple(examples), _placeholder(examples, what), ("sentence", _LANGUAGE_NAMES.get(lang, "")))
