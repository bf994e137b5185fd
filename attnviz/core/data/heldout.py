"""What keeps held-out figures honest: a normalised form of a Chinese source, and a set of held-out
sources that answers "is this training source equal to one of them, or one edit away?".

``normalise`` converts traditional characters to simplified (``opencc``'s ``t2s``), folds
full-width forms (NFKC) and case, and strips punctuation, symbols and spaces: "我們試試看！" and
"我们试试看" have the same key. Splits of the Tatoeba data are made by this key, and training
sources are checked against the held-out sets by it.

``NearSet`` finds sources within one insertion, deletion or substitution of any of its members in
time proportional to the source's length (deletion neighbourhoods), so 60,000 training sources are
checked against hundreds of held-out ones in well under a second.

``word_order_sources`` and ``everyday_sources`` are the sentences no training split may hold: the
tutorial's 猫吃鱼。/ 鱼吃猫。 and the everyday development set (``resources/everyday-zh.txt``, the
sources of ``tests/data/everyday-zh-en.tsv``; a test keeps the two in step).
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from collections.abc import Iterable

from attnviz.core.data.corpora import DataError
from attnviz.paths import resource

WORD_ORDER = ("猫吃鱼。", "鱼吃猫。")
EVERYDAY_FILE = "everyday-zh.txt"


@functools.lru_cache(maxsize=1)
def _t2s():
    try:
        import opencc
    except ImportError:
        raise DataError("the Tatoeba data needs the package opencc to convert traditional characters (pip install opencc)") from None
    return opencc.OpenCC("t2s")


def simplified(text: str) -> str:
    """``text`` with traditional characters converted to simplified ones ("我們" → "我们")."""
    return _t2s().convert(text)


def normalise(text: str) -> str:
    """The key two sources share when they are the same sentence: simplified, NFKC, lowercase,
    without punctuation, symbols or spaces."""
    text = unicodedata.normalize("NFKC", simplified(text)).lower()
    return "".join(ch for ch in text if not ch.isspace() and unicodedata.category(ch)[0] not in "PZS")


def _deletions(text: str) -> Iterable[tuple[int, str]]:
    for i in range(len(text)):
        yield i, text[:i] + text[i + 1 :]


class NearSet:
    """Normalised keys, and whether a key is one of them or one edit (Levenshtein distance 1) away."""

    def __init__(self, keys: Iterable[str] = ()):
        self.keys: set[str] = set()
        self._shorter: set[str] = set()  # a member less one character: a key one shorter than a member
        self._substituted: set[tuple[int, str]] = set()  # (position, member less that character)
        for key in keys:
            self.add(key)

    def add(self, key: str) -> None:
        if not key:
            return
        self.keys.add(key)
        for i, rest in _deletions(key):
            self._shorter.add(rest)
            self._substituted.add((i, rest))

    def near(self, key: str) -> bool:
        """True when ``key`` equals a member or is within one insertion, deletion or substitution of one."""
        if not key:
            return False
        if key in self.keys or key in self._shorter:
            return True
        return any(rest in self.keys or (i, rest) in self._substituted for i, rest in _deletions(key))

    def __len__(self) -> int:
        return len(self.keys)


def word_order_sources() -> tuple[str, ...]:
    return WORD_ORDER


def everyday_sources() -> list[str]:
    """The everyday development set's Chinese sentences (one a line in ``resources/everyday-zh.txt``)."""
    path = resource(EVERYDAY_FILE)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the everyday sentences kept out of training ({exc.strerror or exc})") from None
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def fingerprint(texts: Iterable[str]) -> str:
    """SHA-256 (hex, first 16 digits) of the sorted texts: which sentences a held-out set held."""
    return hashlib.sha256("\n".join(sorted(texts)).encode("utf-8")).hexdigest()[:16]
