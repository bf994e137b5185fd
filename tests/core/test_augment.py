"""Data augmentation: CC-CEDICT word pairs and aligned word substitution (training split only)."""

from __future__ import annotations

import pytest

from attnviz.core.data.augment import (
    Sense,
    Slot,
    augment_dataset,
    cedict_pairs,
    clean_sense,
    context_forms,
    context_kind,
    gloss_senses,
    inflect,
    parse_kinds,
    slots,
    substitution_pairs,
    swap,
)
from attnviz.core.data.corpora import DataError, DataReport, Dataset, Pair


def _pair(src: str, tgt: str, tokens: list[tuple[str, str]], pid: str = "p") -> Pair:
    return Pair(src, tgt, pid, {"tokens": [{"word": w, "gloss_en": g} for w, g in tokens]})


STUDENT = _pair("我是学生。", "I am a student.", [("我", "I; me; my"), ("是", "to be"), ("学生", "student; schoolchild")], "s1")
TEACHER = _pair("他是老师。", "He is a teacher.", [("他", "he"), ("是", "to be"), ("老师", "teacher")], "s2")
ENGINEER = _pair("她是工程师。", "She is an engineer.", [("她", "she"), ("是", "to be"), ("工程师", "engineer")], "s3")
EAT = _pair("我想吃苹果。", "I want to eat an apple.", [("我", "I"), ("想", "to want"), ("吃", "to eat"), ("苹果", "apple")], "s4")
DRINK = _pair("你们喝茶。", "You drink the tea.", [("你们", "you"), ("喝", "to drink"), ("茶", "tea")], "s5")


@pytest.mark.parametrize(("text", "expected"), [
    ("to eat", Sense("eat", "verb")),
    ("student", Sense("student", "noun")),
    ("apple (fruit)", Sense("apple", "noun")),
    ("(bound form) to demand", None),
    ("surname Du", None),
    ("variant of 人[ren2]", None),
    ("used in 自个儿", None),
    ("CL:个[ge4]", None),
    ("to look after", None),  # more than one word
    ("the", None),  # a function word
])
def test_clean_sense(text, expected):
    assert clean_sense(text) == expected


def test_gloss_senses_keep_order_and_drop_repeats():
    assert gloss_senses("to eat; to consume; to eat") == (Sense("eat", "verb"), Sense("consume", "verb"))


def test_context_decides_the_kind():
    assert context_kind("student", "I am a student.") == "noun"
    assert context_kind("eat", "I want to eat an apple.") == "verb"
    assert context_kind("happy", "She is very happy.") is None


def test_context_gives_the_form():
    assert context_forms("apples", "I like these apples.") == {"plural"}
    assert context_forms("drinks", "He drinks tea.") == {"third-person"}
    assert context_forms("big", "This is a big apple.") == frozenset()  # no noun: the phrase goes on
    assert context_forms("allergic", "Hello, allergic!") == frozenset()


@pytest.mark.parametrize(("word", "form", "expected"), [
    ("apple", "plural", "apples"), ("box", "plural", "boxes"), ("city", "plural", "cities"), ("day", "plural", "days"),
    ("go", "third-person", "goes"), ("drink", "third-person", "drinks"), ("drink", "base", "drink"), ("cat", "singular", "cat"),
])
def test_inflect(word, form, expected):
    assert inflect(word, form) == expected


HELLO = _pair("你好！", "Hello!", [("你好", "hello; hi")], "s6")
ALLERGIC = _pair("我过敏。", "I am allergic.", [("我", "I"), ("过敏", "allergic; allergy")], "s7")
BIG = _pair("这是一个大苹果。", "This is a big apple.", [("这", "this"), ("是", "to be"), ("大", "big; large"), ("苹果", "apple")], "s8")
APPLES = _pair("我喜欢这些苹果。", "I like these apples.", [("我", "I"), ("喜欢", "to like"), ("这些", "these"), ("苹果", "apple")], "s9")
HE_DRINKS = _pair("他喝茶。", "He drinks tea.", [("他", "he"), ("喝", "to drink"), ("茶", "tea")], "s10")


def test_a_bad_substitution_is_refused():
    # Only same-kind words are swapped: no greeting, no adjective, no modifier in a noun's place.
    assert slots(HELLO) == [] and slots(ALLERGIC) == []
    assert slots(BIG) == []  # "big" is followed by its noun; "apple" follows an adjective, not a determiner
    made = substitution_pairs([HELLO, ALLERGIC, BIG, STUDENT, TEACHER], per_pair=5, seed=0)
    assert {(p.src, p.tgt) for p in made} == {
        ("我是老师。", "I am a teacher."), ("他是学生。", "He is a student.")}


def test_substitution_keeps_number_and_verb_form():
    (plural,) = slots(APPLES)[-1:]
    assert plural == Slot("苹果", Sense("apple", "noun"), "plural")
    new = swap(APPLES, plural, slots(STUDENT)[0], 0)
    assert (new.src, new.tgt) == ("我喜欢这些学生。", "I like these students.")
    verb = next(s for s in slots(HE_DRINKS) if s.word == "喝")
    assert verb.form == "third-person"
    eat = next(s for s in slots(EAT) if s.word == "吃")
    assert swap(HE_DRINKS, verb, eat, 0).tgt == "He eats tea."


def test_slots_are_the_aligned_words_in_a_matching_context():
    assert slots(STUDENT) == [Slot("学生", Sense("student", "noun"))]
    assert {s.word for s in slots(EAT)} == {"想", "吃", "苹果"}  # want: a verb after "I"


def test_swap_changes_both_sides_and_makes_the_article_agree():
    new = swap(STUDENT, slots(STUDENT)[0], slots(ENGINEER)[0], 0)
    assert (new.src, new.tgt) == ("我是工程师。", "I am an engineer.")
    back = swap(ENGINEER, slots(ENGINEER)[0], slots(TEACHER)[0], 1)
    assert (back.src, back.tgt) == ("她是老师。", "She is a teacher.")
    assert new.id == "s1+sub0" and new.extra["from"] == "s1"


def test_substitution_pairs_swap_like_for_like_deterministically():
    pairs = [STUDENT, TEACHER, ENGINEER, EAT, DRINK]
    made = substitution_pairs(pairs, per_pair=2, seed=3)
    assert made == substitution_pairs(pairs, per_pair=2, seed=3)
    assert made and all(p.src not in {q.src for q in pairs} for p in made)
    for p in made:
        old, new = p.extra["swap"]
        assert old not in p.src and p.src.count(new) == 1
    verbs = [p for p in made if p.extra["swap"][0] in ("吃", "喝")]
    assert {(p.src, p.tgt) for p in verbs} <= {
        ("我想喝苹果。", "I want to drink an apple."), ("你们吃茶。", "You eat the tea."), ("你们想茶。", "You want the tea.")}


def test_substitution_never_makes_an_excluded_source():
    made = substitution_pairs([STUDENT, TEACHER, ENGINEER], per_pair=5, seed=0, exclude={"我是老师。"})
    assert "我是老师。" not in {p.src for p in made}


def test_cedict_pairs_from_entries():
    entries = [
        {"simplified": "学生", "pinyin": "xue2 sheng5", "definitions": ["student", "schoolchild"]},
        {"simplified": "吃", "pinyin": "chi1", "definitions": ["(bound form) to suffer", "to eat"]},
        {"simplified": "北京", "pinyin": "Bei3 jing1", "definitions": ["Beijing"]},  # a proper noun
        {"simplified": "猫", "pinyin": "mao1", "definitions": ["cat"]},  # not asked for
    ]
    got = {(p.src, p.tgt) for p in cedict_pairs({"学生", "吃", "北京"}, entries)}
    assert got == {("学生", "student"), ("吃", "eat")}


def test_cedict_pairs_from_the_installed_dictionary():
    got = {p.src: p.tgt for p in cedict_pairs({"学生", "苹果", "老师"})}
    assert got == {"学生": "student", "苹果": "apple", "老师": "teacher"}


def test_augmentation_touches_only_the_training_split():
    data = Dataset("toy", [STUDENT, TEACHER, EAT, DRINK], [ENGINEER], [], DataReport("toy"), spec={"kind": "toy"})
    out = augment_dataset(data, ("substitution",), seed=1, per_pair=3)
    assert out.valid == data.valid and out.test == data.test
    assert len(out.train) > len(data.train) and out.train[: len(data.train)] == data.train
    assert "她是工程师。" not in {p.src for p in out.train}  # a held-out source is never made
    assert out.spec["augment"] == {"kinds": ["substitution"], "seed": 1, "per_pair": 3, "pronouns": False, "added": {"substitution": len(out.train) - 4}}
    assert out.split_hash != data.split_hash and out.train_hash != data.train_hash
    assert out.describe()["train_hash"] == out.train_hash


def test_augmentation_needs_glosses():
    plain = Dataset("toy", [Pair("我是学生。", "I am a student.", "p", {})], [], [], DataReport("toy"))
    with pytest.raises(DataError, match="glosses"):
        augment_dataset(plain, ("substitution",))


def test_parse_kinds():
    assert parse_kinds("cedict, substitution") == ("cedict", "substitution")
    for bad in ("", "cedict,nope"):
        with pytest.raises(DataError, match="augmentation"):
            parse_kinds(bad)


CAT = _pair("他吃鱼。", "He eats fish.", [("他", "he"), ("吃", "to eat"), ("鱼", "fish")], "s11")
DOCTOR = _pair("医生喝咖啡。", "The doctor drinks coffee.", [("医生", "doctor"), ("喝", "to drink"), ("咖啡", "coffee")], "s12")
BOOKS = _pair("她喜欢书。", "She likes books.", [("她", "she"), ("喜欢", "to like"), ("书", "book")], "s13")
HIS = _pair("他爱他的妈妈。", "He loves his mother.", [("他", "he"), ("爱", "to love"), ("妈妈", "mother")], "s14")


def test_a_subject_pronoun_is_a_slot_for_a_person_or_an_animal_when_asked():
    pronoun = slots(CAT, pronouns=True)[-1]
    assert pronoun == Slot("他", Sense("he", "pronoun"), "subject") and pronoun.takes == "noun"
    doctor = next(s for s in slots(DOCTOR) if s.word == "医生")
    assert (swap(CAT, pronoun, doctor, 0).src, swap(CAT, pronoun, doctor, 0).tgt) == ("医生吃鱼。", "The doctor eats fish.")
    assert all(s.sense.kind != "pronoun" for s in slots(HIS, pronouns=True))  # "his" refers back to "he": no swap
    made = substitution_pairs([CAT, DOCTOR, APPLES], per_pair=10, seed=0, pronouns=True)
    pronoun_swaps = {p.extra["swap"][1] for p in made if p.extra["swap"][0] == "他"}
    assert pronoun_swaps == {"医生"}  # never 苹果 (an apple) for "he"


def test_subject_pronouns_stay_by_default():
    assert all(s.sense.kind != "pronoun" for s in slots(CAT))
    made = substitution_pairs([CAT, DOCTOR, APPLES], per_pair=10, seed=0)
    assert made and all(p.extra["swap"][0] != "他" for p in made)


def test_a_swapped_pair_carries_its_swapped_glosses():
    fish = next(s for s in slots(CAT) if s.word == "鱼")
    coffee = next(s for s in slots(DOCTOR) if s.word == "咖啡")
    new = swap(CAT, fish, coffee, 0)
    assert (new.src, new.tgt) == ("他吃咖啡。", "He eats coffee.")
    assert new.extra["tokens"] == [{"word": "他", "gloss_en": "he"}, {"word": "吃", "gloss_en": "to eat"}, {"word": "咖啡", "gloss_en": "coffee"}]
    assert CAT.extra["tokens"][2] == {"word": "鱼", "gloss_en": "fish"}  # the original is left as it was


def test_a_subject_noun_before_its_verb_and_a_bare_object_are_slots():
    found = {s.word: s.form for s in slots(DOCTOR)}
    assert found == {"医生": "singular", "咖啡": "mass"}  # a verb after a noun is left alone
    assert {s.word: s.form for s in slots(BOOKS)}["书"] == "plural"
    tea = next(s for s in slots(HE_DRINKS) if s.word == "茶")
    fish = next(s for s in slots(CAT) if s.word == "鱼")
    assert tea.form == fish.form == "mass" and tea.pool == "mass"
    assert swap(HE_DRINKS, tea, fish, 0).tgt == "He drinks fish."


def test_a_mass_noun_stands_only_for_a_mass_noun():
    made = substitution_pairs([CAT, DOCTOR, STUDENT, TEACHER], per_pair=10, seed=0)
    for p in made:
        if p.extra["swap"][0] in ("鱼", "咖啡"):
            assert p.extra["swap"][1] in ("鱼", "咖啡"), p


def test_per_pair_is_not_capped_by_the_number_of_slots():
    pairs = [STUDENT, TEACHER, ENGINEER, DOCTOR, _pair("我是工人。", "I am a worker.", [("我", "I"), ("工人", "worker")], "s15")]
    made = [p for p in substitution_pairs(pairs, per_pair=3, seed=0) if p.extra["from"] == "s1"]
    assert len(made) == 3 and len({p.src for p in made}) == 3  # one slot (学生), three different swaps
